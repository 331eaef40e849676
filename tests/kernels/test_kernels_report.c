/* `lantern kernels` over a database this test builds from src/db/schema.sql: a PyTorch-like
 * training step (emit_nvtx markers with shapes, a forward linear/relu/conv in user layers,
 * their backward on the autograd thread, an optimizer step), a plain C++ kernel under user
 * ranges, a memcpy and a memset. Every column of every row is checked against values worked
 * out by hand in the comments. */
#include "harness.h"
#include "model/kernels.h"

#include <errno.h>
#include <sqlite3.h>

static sqlite3 *db;

static void exec(const char *sql)
{
    char *error = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &error) != SQLITE_OK) {
        fprintf(stderr, "SQL failed: %s\n%s\n", error, sql);
        exit(1);
    }
}

static void create_schema(void)
{
    FILE *f = fopen(LANTERN_SCHEMA_SQL, "r");
    ASSERT(f != NULL);
    static char sql[1 << 16];
    size_t n = fread(sql, 1, sizeof sql - 1, f);
    fclose(f);
    sql[n] = '\0';
    ASSERT_EQ(sqlite3_open(":memory:", &db), SQLITE_OK);
    exec(sql);
}

/* Strings, ranges and activities of the scenario (see the file comment). */
static void insert_training_step(void)
{
    exec("INSERT INTO processes(id, pid) VALUES (1, 4242);"
         "INSERT INTO threads(id, process_id, tid) VALUES (1, 1, 1000), (2, 1, 1001);"
         /* H100 SXM: 132 SMs; peaks in FLOP/s and B/s */
         "INSERT INTO gpus(id, uuid, name, cc_major, cc_minor, sm_count, max_threads_per_sm,"
         " max_regs_per_sm, max_smem_per_sm, max_blocks_per_sm, peak_fp32_flops,"
         " peak_fp16_flops, peak_bf16_flops, peak_tf32_flops, peak_fp64_flops,"
         " peak_dram_bytes_per_s) VALUES (1, 'GPU-1', 'H100', 9, 0, 132, 2048, 65536, 233472,"
         " 32, 60e12, 990e12, 990e12, 495e12, 67e12, 3.35e12);"
         "INSERT INTO strings(id, value) VALUES"
         " (1, 'layer1'),"
         " (2, 'aten::linear, seq = 10, op_id = 1, sizes = [[64, 128], [256, 128], [256]]'),"
         " (3, 'aten::t, seq = 10, op_id = 2, sizes = [[256, 128]]'),"
         " (4, 'aten::addmm, seq = 11, op_id = 3, sizes = [[256], [64, 128], [128, 256], [], []]'),"
         " (5, 'aten::relu, seq = 12, op_id = 4, sizes = [[64, 256]]'),"
         " (6, 'layer:layer2'),"
         " (7, 'aten::conv2d, seq = 13, sizes = [[8, 3, 32, 32], [16, 3, 3, 3], [16], [], [], [], "
         "[]]'),"
         " (8, 'aten::convolution, seq = 13, sizes = [[8, 3, 32, 32], [16, 3, 3, 3], [16], [], [], "
         "[], [], [], []]'),"
         " (9, 'aten::_convolution, seq = 14, sizes = [[8, 3, 32, 32], [16, 3, 3, 3], [16], [], "
         "[], [], [], [], [], [], [], [], []]'),"
         " (10, 'aten::cudnn_convolution, seq = 14, sizes = [[8, 3, 32, 32], [16, 3, 3, 3], [], "
         "[], [], [], [], []]'),"
         " (20, 'autograd::engine::evaluate_function: ConvolutionBackward0'),"
         " (21, 'ConvolutionBackward0, seq = 13, op_id = 50'),"
         " (22, 'aten::convolution_backward, seq = 100, sizes = [[8, 16, 30, 30], [8, 3, 32, 32], "
         "[16, 3, 3, 3], [], [], [], [], [], [], [], []]'),"
         " (23, 'autograd::engine::evaluate_function: AddmmBackward0'),"
         " (24, 'AddmmBackward0, seq = 11, op_id = 51'),"
         " (25, 'aten::mm, seq = 101, sizes = [[64, 256], [256, 128]]'),"
         " (26, 'aten::sum, seq = 102, sizes = [[64, 256], [], [], []]'),"
         " (27, 'autograd::engine::evaluate_function: SelectBackward0'),"
         " (28, 'SelectBackward0, seq = 16, op_id = 52'),"
         " (29, 'aten::copy_, seq = 200, sizes = [[8], [8], []]'),"
         " (30, 'Optimizer.step#SGD.step'),"
         " (31, 'aten::add_, seq = 15, sizes = [[256, 128], [256, 128], []]'),"
         " (40, 'solver'), (41, 'Solver::step'),"
         " (100, "
         "'sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64_warpgroupsize1x1x1_execute_"
         "segment_k_off_kernel__5x_cublas'),"
         " (101, 'void at::native::vectorized_elementwise_kernel<4, "
         "at::native::relu_functor<c10::BFloat16>, std::array<char*, 2ul> >(int, "
         "at::native::relu_functor<c10::BFloat16>, std::array<char*, 2ul>)'),"
         " (102, 'void cudnn::ops::nchwToNhwcKernel<__nv_bfloat16, __nv_bfloat16, float, false, "
         "true, (cudnnKernelDataType_t)2>(cudnn::ops::nchw2nhwc_params_t<float>, __nv_bfloat16 "
         "const*, __nv_bfloat16*)'),"
         " (103, "
         "'sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x64_"
         "warpgroupsize1x1x1_g1_execute_kernel__5x_cudnn'),"
         " (104, "
         "'sm90_xmma_dgrad_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x64_"
         "warpgroupsize1x1x1_g1_execute_kernel__5x_cudnn'),"
         " (105, "
         "'sm90_xmma_wgrad_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x64_"
         "warpgroupsize1x1x1_g1_execute_kernel__5x_cudnn'),"
         " (106, 'void at::native::reduce_kernel<512, 1, at::native::ReduceOp<c10::BFloat16, "
         "at::native::MeanOps<float, float, float, float>, unsigned int, c10::BFloat16, 4> "
         ">(at::native::ReduceOp<c10::BFloat16, at::native::MeanOps<float, float, float, float>, "
         "unsigned int, c10::BFloat16, 4>)'),"
         " (107, 'nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT'),"
         " (108, 'void at::native::vectorized_elementwise_kernel<4, "
         "at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >(int, "
         "at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)'),"
         " (109, '_Z10my_kernelPfi');"
         "INSERT INTO ranges(id, process_id, name_id, style, depth, parent_id, start_thread_id,"
         " start_ns, end_ns) VALUES"
         " (1, 1, 1, 0, 0, NULL, 1, 0, 4000), (2, 1, 2, 0, 1, 1, 1, 10, 3400),"
         " (3, 1, 3, 0, 2, 2, 1, 20, 30), (4, 1, 4, 0, 2, 2, 1, 40, 3300),"
         " (5, 1, 5, 0, 1, 1, 1, 3400, 3500), (6, 1, 6, 0, 0, NULL, 1, 3900, 6000),"
         " (7, 1, 7, 0, 1, 6, 1, 3910, 5900), (8, 1, 8, 0, 2, 7, 1, 3920, 5800),"
         " (9, 1, 9, 0, 3, 8, 1, 3930, 5700), (10, 1, 10, 0, 4, 9, 1, 3940, 5600),"
         " (20, 1, 20, 0, 0, NULL, 2, 5950, 8700), (21, 1, 21, 0, 1, 20, 2, 5960, 8690),"
         " (22, 1, 22, 0, 2, 21, 2, 5970, 8680), (23, 1, 23, 0, 0, NULL, 2, 8800, 10100),"
         " (24, 1, 24, 0, 1, 23, 2, 8810, 10090), (25, 1, 25, 0, 2, 24, 2, 8820, 10080),"
         " (26, 1, 26, 0, 1, 23, 2, 10085, 10088), (27, 1, 27, 0, 0, NULL, 2, 10090, 10300),"
         " (28, 1, 28, 0, 1, 27, 2, 10091, 10290), (29, 1, 29, 0, 2, 28, 2, 10092, 10280),"
         " (30, 1, 30, 0, 0, NULL, 1, 10900, 11600), (31, 1, 31, 0, 1, 30, 1, 10910, 11590),"
         " (40, 1, 40, 0, 0, NULL, 1, 11900, 12400), (41, 1, 41, 0, 1, 40, 1, 11910, 12390);"
         /* the launching calls: one per activity, on thread 1 (main) or 2 (autograd) */
         "INSERT INTO cuda_api(id, process_id, thread_id, api, start_ns, end_ns, correlation_id)"
         " VALUES (1, 1, 1, 0, 0, 1, 1), (2, 1, 2, 0, 0, 1, 2);"
         "INSERT INTO memcpys(process_id, gpu_id, device, stream, start_ns, end_ns, copy_kind,"
         " bytes, api_id) VALUES (1, 1, 0, 7, 500, 700, 'HtoD', 1048576, 1);"
         "INSERT INTO memsets(process_id, gpu_id, device, stream, start_ns, end_ns, bytes, api_id)"
         " VALUES (1, 1, 0, 7, 800, 900, 4096, 1);"
         "INSERT INTO kernels(process_id, gpu_id, device, stream, start_ns, end_ns, demangled_id,"
         " grid_x, grid_y, grid_z, block_x, block_y, block_z, regs_per_thread, static_smem,"
         " dynamic_smem, api_id, nvtx_range_id) VALUES"
         " (1, 1, 0, 7, 1000, 3000, 100, 4, 2, 1, 128, 1, 1, 168, 0, 49152, 1, 4),"
         " (1, 1, 0, 7, 3500, 3600, 101, 64, 1, 1, 128, 1, 1, 16, 0, 0, 1, 5),"
         " (1, 1, 0, 7, 4000, 4100, 102, 16, 1, 1, 256, 1, 1, 32, 0, 0, 1, 10),"
         " (1, 1, 0, 7, 4100, 5100, 103, 200, 1, 1, 384, 1, 1, 90, 0, 200000, 1, 10),"
         " (1, 1, 0, 7, 6000, 7000, 104, 300, 1, 1, 256, 1, 1, 128, 0, 0, 2, 22),"
         " (1, 1, 0, 7, 7000, 8500, 105, 300, 1, 1, 256, 1, 1, 128, 0, 0, 2, 22),"
         " (1, 1, 0, 7, 8500, 8600, 106, 1, 1, 1, 512, 1, 1, 32, 16, 0, 2, 22),"
         " (1, 1, 0, 7, 9000, 10000, 107, 2, 1, 1, 384, 1, 1, 168, 0, 100000, 2, 25),"
         " (1, 1, 0, 7, 10050, 10070, 106, 1, 1, 1, 512, 1, 1, 32, 16, 0, 2, 26),"
         " (1, 1, 0, 7, 10100, 10200, 108, 1, 1, 1, 128, 1, 1, 20, 0, 0, 2, 29),"
         " (1, 1, 0, 7, 11000, 11500, 108, 256, 1, 1, 128, 1, 1, 20, 0, 0, 1, 31),"
         " (1, 1, 0, 7, 12000, 12300, 109, 1000, 1, 1, 256, 1, 1, 24, 0, 0, 1, 41);");
}

static char *run_report(const struct kernels_options *opt, int *rc)
{
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    ASSERT(out != NULL);
    *rc = kernels_write(db, opt, out);
    fclose(out);
    return text;
}

/* Compares line by line, printing the first difference. */
static void assert_lines(const char *got, const char *const *expected)
{
    const char *line = got;
    for (int i = 0; expected[i]; i++) {
        const char *end = strchr(line, '\n');
        ASSERT(end != NULL);
        size_t len = (size_t)(end - line);
        if (len != strlen(expected[i]) || strncmp(line, expected[i], len) != 0) {
            fprintf(stderr, "\nline %d:\n got: %.*s\nwant: %s\n", i, (int)len, line, expected[i]);
            ASSERT(0);
        }
        line = end + 1;
    }
    ASSERT_STR_EQ(line, "");
}

#define ALL_COLUMNS                                                                                \
    "idx,seq,altseq,tid,layer,dir,sub,mod,op,node,kernel,params,sil,tc,dtype,device,stream,"       \
    "grid,block,regs,smem,occupancy,flops,bytes,tflops,gbps,peak%,hints"

/* Worked out by hand:
 *  addmm [64,128]x[128,256] bf16: 2*64*256*128 = 4194304 FLOPs, (8192+32768+16384+256)*2 =
 *    115200 B in 2000 ns: 57.6 GB/s = 1.7% of 3.35 TB/s; 128 threads x 168 regs -> 3 blocks of
 *    4 warps = 18.75% occupancy; 8 blocks < 132 SMs.
 *  conv [8,3,32,32] * [16,3,3,3] -> [8,16,30,30] (output from the backward's grad_output):
 *    2*8*16*900*27 = 6220800 FLOPs on the longest kernel (fprop), (24576+432+115200)*2 = 280416 B;
 *    its nchwToNhwc kernel carries 0. Backward: dgrad and wgrad kernels one pass each.
 *  mm (backward of addmm) [64,256]x[256,128]: nvjet names no dtype -> assumed bf16, the dtype
 *    of the last earlier kernel that names one (the bf16 reduce): (16384+32768+8192)*2 =
 *    114688*, peak% against the bf16 Tensor Core peak; its layer is the forward addmm's (seq 11).
 *  sum under the engine's range but outside the node's: node and seq from the engine range.
 *  copy_ under SelectBackward0 (seq 16), whose forward launched nothing: the layer of the last
 *    forward launch before seq 16 (the conv, seq 14).
 *  add_ [256,128] fp32 in the optimizer: 32768 FLOPs, 3*32768*4 = 393216 B. */
static void test_every_column_of_a_training_step(void)
{
    static const char *const expected[] = {
        ALL_COLUMNS,
        "0,na,na,1000,na,na,na,na,na,na,memcpy_HtoD,na,200,no,na,0,7,na,na,na,na,na,0,1048576,"
        "0.000,5242.9,na,na",
        "1,na,na,1000,na,na,na,na,na,na,memset,na,100,no,na,0,7,na,na,na,na,na,0,4096,0.000,41.0,"
        "1.2,na",
        "2,11,10,1000,layer1,fwd,0,layer1,addmm,na,sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_"
        "tilesize64x64x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas,"
        "\"M=64,N=256,K=128,bf16\",2000,yes,bf16,0,7,4x2x1,128x1x1,168,49152,18.8,4194304,115200,"
        "2.097,57.6,1.7,small-grid",
        "3,12,na,1000,layer1,fwd,0,layer1,relu,na,\"at::native::vectorized_elementwise_kernel<4,"
        "at::native::relu_functor<c10::BFloat16>,std::array<char*,2ul>>\",\"64x256,bf16\",100,no,"
        "bf16,0,7,64x1x1,128x1x1,16,0,100.0,16384,65536,0.164,655.4,19.6,small-grid",
        "4,14,13,1000,layer2,fwd,0,layer2,cudnn_convolution,na,\"cudnn::ops::nchwToNhwcKernel<__nv_"
        "bfloat16,__nv_bfloat16,float,false,true,(cudnnKernelDataType_t)2>\",\"N=8,C=3,K=16,in="
        "32x32,"
        "k=3x3,out=30x30,bf16\",100,no,bf16,0,7,16x1x1,256x1x1,32,0,100.0,0,0,0.000,0.0,0.0,"
        "small-grid",
        "5,14,13,1000,layer2,fwd,1,layer2,cudnn_convolution,na,sm90_xmma_fprop_implicit_gemm_"
        "bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x64_warpgroupsize1x1x1_g1_execute_kernel"
        "__5x_cudnn,\"N=8,C=3,K=16,in=32x32,k=3x3,out=30x30,bf16\",1000,yes,bf16,0,7,200x1x1,"
        "384x1x1,90,200000,18.8,6220800,280416,6.221,280.4,8.4,na",
        "6,13,na,1001,layer2,bwd,0,layer2,convolution_backward,ConvolutionBackward0,sm90_xmma_"
        "dgrad_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x64_warpgroupsize"
        "1x1x1_g1_execute_kernel__5x_cudnn,\"N=8,C=3,K=16,in=32x32,k=3x3,out=30x30,bf16\",1000,yes,"
        "bf16,0,7,300x1x1,256x1x1,128,0,25.0,6220800,280416,6.221,280.4,8.4,na",
        "7,13,na,1001,layer2,bwd,1,layer2,convolution_backward,ConvolutionBackward0,sm90_xmma_"
        "wgrad_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x64_warpgroupsize"
        "1x1x1_g1_execute_kernel__5x_cudnn,\"N=8,C=3,K=16,in=32x32,k=3x3,out=30x30,bf16\",1500,yes,"
        "bf16,0,7,300x1x1,256x1x1,128,0,25.0,6220800,280416,4.147,186.9,5.6,na",
        "8,13,na,1001,layer2,bwd,2,layer2,convolution_backward,ConvolutionBackward0,\"at::native::"
        "reduce_kernel<512,1,at::native::ReduceOp<c10::BFloat16,at::native::MeanOps<float,float,"
        "float,float>,unsigned_int,c10::BFloat16,4>>\",\"N=8,C=3,K=16,in=32x32,k=3x3,out=30x30,"
        "bf16\",100,no,bf16,0,7,1x1x1,512x1x1,32,16,100.0,0,0,0.000,0.0,0.0,small-grid",
        "9,11,na,1001,layer1,bwd,0,layer1,mm,AddmmBackward0,nvjet_tst_128x256_64x4_1x2_h_bz_"
        "coopA_NNT,\"M=64,N=128,K=256,bf16*\",1000,yes,na,0,7,2x1x1,384x1x1,168,100000,18.8,"
        "4194304,114688*,4.194,114.7*,3.4*,small-grid",
        "10,11,na,1001,layer1,bwd,0,layer1,sum,AddmmBackward0,\"at::native::reduce_kernel<512,1,"
        "at::native::ReduceOp<c10::BFloat16,at::native::MeanOps<float,float,float,float>,"
        "unsigned_int,c10::BFloat16,4>>\",\"64x256,-,-,-,bf16\",20,no,bf16,0,7,1x1x1,512x1x1,32,"
        "16,100.0,16384,32768,0.819,1638.4,48.9,small-grid",
        "11,16,na,1001,layer2,bwd,0,layer2,copy_,SelectBackward0,\"at::native::vectorized_"
        "elementwise_kernel<4,at::native::CUDAFunctor_add<float>,std::array<char*,3ul>>\","
        "\"8,8,-,fp32\",100,no,fp32,0,7,1x1x1,128x1x1,20,0,100.0,0,64,0.000,0.6,0.0,small-grid",
        "12,15,na,1000,na,opt,0,na,add_,na,\"at::native::vectorized_elementwise_kernel<4,at::native"
        "::CUDAFunctor_add<float>,std::array<char*,3ul>>\",\"256x128,256x128,-,fp32\",500,no,fp32,"
        "0,"
        "7,256x1x1,128x1x1,20,0,100.0,32768,393216,0.066,786.4,23.5,na",
        "13,na,na,1000,solver/Solver::step,na,na,Solver::step,na,na,_Z10my_kernelPfi,na,300,na,na,"
        "0,7,1000x1x1,256x1x1,24,0,100.0,na,na,na,na,na,na",
        NULL,
    };
    struct kernels_options opt = {.columns = ALL_COLUMNS, .format = KERNELS_FORMAT_CSV};
    int rc;
    char *text = run_report(&opt, &rc);
    ASSERT_EQ(rc, 0);
    assert_lines(text, expected);
    free(text);
}

static void test_no_memops_and_hints_only(void)
{
    static const char *const kernels_only[] = {
        "idx,kernel,hints",
        "2,sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64_warpgroupsize1x1x1_execute_"
        "segment_k_off_kernel__5x_cublas,small-grid",
        "3,\"at::native::vectorized_elementwise_kernel<4,at::native::relu_functor<c10::BFloat16>,"
        "std::array<char*,2ul>>\",small-grid",
        "4,\"cudnn::ops::nchwToNhwcKernel<__nv_bfloat16,__nv_bfloat16,float,false,true,(cudnnKernel"
        "DataType_t)2>\",small-grid",
        "8,\"at::native::reduce_kernel<512,1,at::native::ReduceOp<c10::BFloat16,at::native::MeanOps"
        "<float,float,float,float>,unsigned_int,c10::BFloat16,4>>\",small-grid",
        "9,nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT,small-grid",
        "10,\"at::native::reduce_kernel<512,1,at::native::ReduceOp<c10::BFloat16,at::native::"
        "MeanOps"
        "<float,float,float,float>,unsigned_int,c10::BFloat16,4>>\",small-grid",
        "11,\"at::native::vectorized_elementwise_kernel<4,at::native::CUDAFunctor_add<float>,std::"
        "array<char*,3ul>>\",small-grid",
        NULL,
    };
    /* without memops the rows renumber: the first kernel is idx 0 */
    struct kernels_options opt = {
        .columns = "idx,kernel", .format = KERNELS_FORMAT_CSV, .no_memops = 1, .hints_only = 1};
    int rc;
    char *text = run_report(&opt, &rc);
    ASSERT_EQ(rc, 0);
    ASSERT(strncmp(text, "idx,kernel,hints\n0,", 19) == 0);
    free(text);
    opt.no_memops = 0;
    text = run_report(&opt, &rc);
    ASSERT_EQ(rc, 0);
    assert_lines(text, kernels_only);
    free(text);
}

static void test_text_is_space_separated_and_fits_width(void)
{
    struct kernels_options opt = {.columns = "idx,layer,kernel,sil", .width = 40};
    int rc;
    char *text = run_report(&opt, &rc);
    ASSERT_EQ(rc, 0);
    int lines = 0;
    for (char *line = text; *line; lines++) {
        char *end = strchr(line, '\n');
        ASSERT(end != NULL);
        ASSERT((end - line) <= 40);
        int fields = 0;
        for (char *p = line; p < end; fields++) { /* exactly 4 fields, none empty */
            while (p < end && *p == ' ')
                p++;
            ASSERT(p < end);
            while (p < end && *p != ' ')
                p++;
        }
        ASSERT_EQ(fields, 4);
        line = end + 1;
    }
    ASSERT_EQ(lines, 15);
    /* the long kernel names are cut with a '~' */
    ASSERT(strstr(text, "~") != NULL);
    ASSERT(strstr(text, "layer1") != NULL);
    free(text);
}

static void test_json_uses_numbers_and_null(void)
{
    struct kernels_options opt = {
        .columns = "idx,op,flops,bytes,peak%", .format = KERNELS_FORMAT_JSON, .no_memops = 1};
    int rc;
    char *text = run_report(&opt, &rc);
    ASSERT_EQ(rc, 0);
    ASSERT(strstr(text, "{\"idx\":0,\"op\":\"addmm\",\"flops\":4194304,\"bytes\":115200,"
                        "\"peak%\":1.7,\"dtype_assumed\":false}") != NULL);
    ASSERT(strstr(text, "{\"idx\":7,\"op\":\"mm\",\"flops\":4194304,\"bytes\":114688,"
                        "\"peak%\":3.4,\"dtype_assumed\":true}") != NULL);
    ASSERT(strstr(text, "{\"idx\":11,\"op\":null,\"flops\":null,\"bytes\":null,\"peak%\":null,"
                        "\"dtype_assumed\":false}") != NULL);
    ASSERT(text[0] == '[');
    free(text);
}

static void test_unknown_column_is_rejected(void)
{
    const char *bad;
    ASSERT_EQ(kernels_columns_check("idx,nope,sil", &bad), -EINVAL);
    ASSERT_STR_EQ(bad, "nope");
    ASSERT_EQ(kernels_columns_check(NULL, &bad), 0);
    struct kernels_options opt = {.columns = "idx,nope"};
    int rc;
    free(run_report(&opt, &rc));
    ASSERT_EQ(rc, -EINVAL);
}

static void test_empty_database_prints_the_header_only(void)
{
    sqlite3 *saved = db;
    create_schema();
    struct kernels_options opt = {.columns = "idx,op,flops", .format = KERNELS_FORMAT_CSV};
    int rc;
    char *text = run_report(&opt, &rc);
    ASSERT_EQ(rc, 0);
    ASSERT_STR_EQ(text, "idx,op,flops\n");
    free(text);
    opt.format = KERNELS_FORMAT_JSON;
    text = run_report(&opt, &rc);
    ASSERT_EQ(rc, 0);
    ASSERT_STR_EQ(text, "[]\n");
    free(text);
    sqlite3_close(db);
    db = saved;
}

static void test_database_without_tables_is_an_error(void)
{
    sqlite3 *saved = db;
    ASSERT_EQ(sqlite3_open(":memory:", &db), SQLITE_OK);
    struct kernels_options opt = {0};
    int rc;
    free(run_report(&opt, &rc));
    ASSERT_EQ(rc, -EIO);
    sqlite3_close(db);
    db = saved;
}

/* A user range named with a quote, a control character, an invalid UTF-8 byte, a comma and a
 * CR: JSON escapes it like every JSON Lantern writes (\u0001, U+FFFD for the bad byte), CSV
 * quotes it (RFC 4180), text shows each control as '_' and keeps the other bytes. */
static void names_are_escaped_by_the_shared_writers(void)
{
    sqlite3 *saved = db;
    create_schema();
    exec("INSERT INTO processes(id, pid) VALUES (1, 1);"
         "INSERT INTO threads(id, process_id, tid) VALUES (1, 1, 7);"
         "INSERT INTO strings(id, value) VALUES (1, CAST(X'6122620163FF642C650D' AS TEXT)),"
         " (2, 'k');"
         "INSERT INTO ranges(id, process_id, name_id, style, depth, start_thread_id, start_ns,"
         " end_ns) VALUES (1, 1, 1, 0, 0, 1, 0, 100);"
         "INSERT INTO cuda_api(id, process_id, thread_id, api, start_ns, end_ns, correlation_id)"
         " VALUES (1, 1, 1, 0, 0, 1, 1);"
         "INSERT INTO kernels(process_id, start_ns, end_ns, demangled_id, api_id, nvtx_range_id)"
         " VALUES (1, 10, 20, 2, 1, 1);");
    struct kernels_options opt = {.columns = "idx,layer,kernel", .format = KERNELS_FORMAT_JSON};
    int rc;
    char *text = run_report(&opt, &rc);
    ASSERT_EQ(rc, 0);
    ASSERT_STR_EQ(text, "[\n{\"idx\":0,\"layer\":\"a\\\"b\\u0001c\xEF\xBF\xBD"
                        "d,e\\r\",\"kernel\":\"k\",\"dtype_assumed\":false}\n]\n");
    free(text);
    opt.format = KERNELS_FORMAT_CSV;
    text = run_report(&opt, &rc);
    ASSERT_EQ(rc, 0);
    ASSERT_STR_EQ(text, "idx,layer,kernel\n0,\"a\"\"b\x01"
                        "c\xFF"
                        "d,e\r\",k\n");
    free(text);
    opt.format = KERNELS_FORMAT_TEXT;
    text = run_report(&opt, &rc);
    ASSERT_EQ(rc, 0);
    ASSERT_STR_EQ(text, "  idx layer      kernel\n    0 a\"b_c\xFF"
                        "d,e_ k\n");
    free(text);
    sqlite3_close(db);
    db = saved;
}

int main(int argc, char **argv)
{
    static const struct test_case tests[] = {
        {"every_column_of_a_training_step", test_every_column_of_a_training_step},
        {"no_memops_and_hints_only", test_no_memops_and_hints_only},
        {"text_is_space_separated_and_fits_width", test_text_is_space_separated_and_fits_width},
        {"json_uses_numbers_and_null", test_json_uses_numbers_and_null},
        {"unknown_column_is_rejected", test_unknown_column_is_rejected},
        {"empty_database_prints_the_header_only", test_empty_database_prints_the_header_only},
        {"database_without_tables_is_an_error", test_database_without_tables_is_an_error},
        {"names_are_escaped_by_the_shared_writers", names_are_escaped_by_the_shared_writers},
        {NULL, NULL},
    };
    create_schema();
    insert_training_step();
    int rc = test_main(tests, argc, argv);
    sqlite3_close(db);
    return rc;
}
