/* The database-free parts of `lantern kernels`: emit_nvtx marker parsing, dtype and Tensor
 * Core detection over real kernel names, the FLOP/byte models against hand-computed values,
 * theoretical occupancy against the CUDA occupancy calculator's rules, and the hints. */
#include "harness.h"
#include "model/kernels_model.h"

#include <errno.h>
#include <math.h>

static int name_is(const struct kernels_marker *m, const char *name)
{
    return m->name_len == strlen(name) && strncmp(m->name, name, m->name_len) == 0;
}

static void test_marker_with_every_field(void)
{
    struct kernels_marker m;
    kernels_marker_parse("aten::addmm, seq = 12, op_id = 3, sizes = [[128], [64, 256], [256, "
                         "128], [], []], input_op_ids = [(1,0), (2,0)]",
                         &m);
    ASSERT_EQ(m.kind, KERNELS_RANGE_OP);
    ASSERT(name_is(&m, "aten::addmm"));
    ASSERT_EQ(m.seq, 12);
    ASSERT_EQ(m.op_id, 3);
    ASSERT(m.sizes != NULL);
    ASSERT_EQ(m.sizes_len, strlen("[[128], [64, 256], [256, 128], [], []]"));
    ASSERT(strncmp(m.sizes, "[[128], [64, 256], [256, 128], [], []]", m.sizes_len) == 0);
}

static void test_marker_kinds(void)
{
    struct kernels_marker m;
    kernels_marker_parse("AddmmBackward0, seq = 12, op_id = 40", &m);
    ASSERT_EQ(m.kind, KERNELS_RANGE_BACKWARD);
    ASSERT(name_is(&m, "AddmmBackward0"));
    ASSERT_EQ(m.seq, 12);
    kernels_marker_parse("autograd::engine::evaluate_function: AddmmBackward0", &m);
    ASSERT_EQ(m.kind, KERNELS_RANGE_ENGINE);
    ASSERT(name_is(&m, "AddmmBackward0"));
    /* PyTorch 2.11 adds the op id (seen on an H200 run) */
    kernels_marker_parse("autograd::engine::evaluate_function: ViewBackward0, op_id = 307", &m);
    ASSERT_EQ(m.kind, KERNELS_RANGE_ENGINE);
    ASSERT(name_is(&m, "ViewBackward0"));
    ASSERT_EQ(m.op_id, 307);
    kernels_marker_parse("torch::autograd::AccumulateGrad", &m);
    ASSERT_EQ(m.kind, KERNELS_RANGE_BACKWARD);
    ASSERT_EQ(m.seq, -1);
    kernels_marker_parse("aten::empty", &m); /* seq -1: the name alone */
    ASSERT_EQ(m.kind, KERNELS_RANGE_OP);
    ASSERT_EQ(m.seq, -1);
    ASSERT(m.sizes == NULL);
    kernels_marker_parse("aten::relu, seq = 5", &m); /* record_shapes=False */
    ASSERT_EQ(m.kind, KERNELS_RANGE_OP);
    ASSERT_EQ(m.seq, 5);
    ASSERT(m.sizes == NULL);
    kernels_marker_parse("aten::mm, sizes = [[64, 128], [128, 32]]", &m); /* no seq */
    ASSERT_EQ(m.kind, KERNELS_RANGE_OP);
    ASSERT_EQ(m.seq, -1);
    ASSERT_EQ(m.sizes_len, strlen("[[64, 128], [128, 32]]"));
    kernels_marker_parse("Optimizer.step#AdamW.step", &m);
    ASSERT_EQ(m.kind, KERNELS_RANGE_OPTIMIZER);
    kernels_marker_parse("layer:conv1", &m);
    ASSERT_EQ(m.kind, KERNELS_RANGE_USER);
    ASSERT(name_is(&m, "conv1"));
    /* user ranges that merely look like PyTorch's stay user ranges */
    kernels_marker_parse("MyBackward", &m);
    ASSERT_EQ(m.kind, KERNELS_RANGE_USER);
    kernels_marker_parse("Solver::step", &m);
    ASSERT_EQ(m.kind, KERNELS_RANGE_USER);
    ASSERT(name_is(&m, "Solver::step"));
}

static void test_shapes_parse(void)
{
    struct kernels_shapes s;
    const char *text = "[[128], [64, 256], [256, 128], [], []]";
    ASSERT_EQ(kernels_shapes_parse(text, strlen(text), &s), 0);
    ASSERT_EQ(s.count, 5);
    ASSERT_EQ(s.ndims[0], 1);
    ASSERT_EQ(s.dims[0][0], 128);
    ASSERT_EQ(s.ndims[1], 2);
    ASSERT_EQ(s.dims[1][0], 64);
    ASSERT_EQ(s.dims[1][1], 256);
    ASSERT_EQ(s.dims[2][1], 128);
    ASSERT_EQ(s.ndims[3], 0);
    ASSERT_EQ(s.ndims[4], 0);
    ASSERT_EQ(kernels_shapes_parse("[]", 2, &s), 0);
    ASSERT_EQ(s.count, 0);
    ASSERT_EQ(kernels_shapes_parse("[[1, 2]", 7, &s), -EINVAL);
    ASSERT_EQ(kernels_shapes_parse("[[1, x]]", 8, &s), -EINVAL);
}

/* Real kernel names (cuBLAS, cuDNN, CUTLASS, FlashAttention, PyTorch, Triton) as profilers
 * print them, with what their names say. */
static const struct {
    const char *name;
    enum kernels_tc tc;
    enum kernels_dtype dtype;
} named_kernels[] = {
    {"sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_"
     "segment_k_off_kernel__5x_cublas",
     KERNELS_TC_YES, KERNELS_DTYPE_TF32},
    {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64_warpgroupsize1x1x1_execute_"
     "segment_k_off_kernel__5x_cublas",
     KERNELS_TC_YES, KERNELS_DTYPE_BF16},
    {"sm90_xmma_gemm_f64f64_f64f64_f64_nn_n_tilesize64x128x16_stage3_warpsize2x2x1_tensor16x8x8_"
     "execute_kernel__5x_cublas",
     KERNELS_TC_YES, KERNELS_DTYPE_FP64},
    {"nvjet_sm100_tst_16x64_64x16_4x1_v_bz_TNN", KERNELS_TC_YES, KERNELS_DTYPE_UNKNOWN},
    {"nvjet_sm120_tst_mma_64x64x128_3_32x32x128_tmaAB_alignCD4_bz_TNNN", KERNELS_TC_YES,
     KERNELS_DTYPE_UNKNOWN},
    {"ampere_bf16_s16816gemm_bf16_128x256_ldg8_f2f_stages_64x3_tn", KERNELS_TC_YES,
     KERNELS_DTYPE_BF16},
    {"ampere_fp16_s16816gemm_fp16_64x64_sliced1x2_ldg8_relu_f2f_stages_64x5_tn", KERNELS_TC_YES,
     KERNELS_DTYPE_FP16},
    {"volta_h884gemm_64x64_nt", KERNELS_TC_YES, KERNELS_DTYPE_FP16},
    {"volta_fp16_s884gemm_fp16_128x128_ldg8_f2f_nn", KERNELS_TC_YES, KERNELS_DTYPE_FP16},
    {"turing_fp16_s1688cudnn_fp16_128x128_ldg8_relu_f2f_exp_small_nhwc_tn_v1", KERNELS_TC_YES,
     KERNELS_DTYPE_FP16},
    {"void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8>"
     "(cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8::Params)",
     KERNELS_TC_YES, KERNELS_DTYPE_BF16},
    {"sm80_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x32_"
     "stage4_warpsize2x2x1_g1_tensor16x8x16_kernel",
     KERNELS_TC_YES, KERNELS_DTYPE_BF16},
    {"void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 64, 4, false, "
     "false, cutlass::bfloat16_t, Flash_kernel_traits<64, 128, 64, 4, cutlass::bfloat16_t> >, "
     "false, false, false, false, true, true, false, false>(pytorch_flash::Flash_fwd_params)",
     KERNELS_TC_YES, KERNELS_DTYPE_BF16},
    /* from a bf16 PyTorch 2.11 run on an H200: cuDNN's generated names say f16 for bf16 too */
    {"cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x64x64_4x1x1_"
     "kernel0_0",
     KERNELS_TC_YES, KERNELS_DTYPE_UNKNOWN},
    {"nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_bias_TNT", KERNELS_TC_YES, KERNELS_DTYPE_UNKNOWN},
    /* a CUTLASS conv kernel CUPTI left mangled (same run), cut short here */
    {"_ZN17cutlass__5x_cudnn6KernelINS_4conv6kernel23ImplicitGemmConvolutionINS1_11threadblock22"
     "ImplicitGemmMultistageINS_4gemm9GemmShapeILi64ELi64ELi64EEENS4_52Conv2dWgradOutputGradient"
     "TileAccessIteratorOptimizedINS_11MatrixShapeILi64ELi64EEENS_10bfloat16_tENS_9transform29"
     "PitchLinearWarpRakedThreadMapINS_16PitchLinearShapeILi64ELi64EEELi128ENSF_ILi8ELi4EEELi8EE"
     "ENS_12AlignedArrayISC_Li8ELi16EEEEENSD_11threadblock9MmaPolicyINS7_4warp11MmaTensorOpINS8_"
     "ILi32ELi32ELi64EEE",
     KERNELS_TC_YES, KERNELS_DTYPE_BF16},
    {"ampere_sgemm_128x64_tn", KERNELS_TC_NO, KERNELS_DTYPE_FP32},
    {"volta_sgemm_128x64_nn", KERNELS_TC_NO, KERNELS_DTYPE_FP32},
    {"cutlass_80_simt_sgemm_128x128_8x4_nn_align1", KERNELS_TC_NO, KERNELS_DTYPE_FP32},
    {"cutlass_80_splitKreduce_kernel", KERNELS_TC_NO, KERNELS_DTYPE_UNKNOWN},
    {"void implicit_convolve_sgemm<float, float, 1024, 5, 5, 3, 3, 3, 1, false, false, true>(int,"
     " int, int, float const*, int, float*, float const*, kernel_conv_params, unsigned long long,"
     " int, float, float, int, float const*, float const*, bool, int, int)",
     KERNELS_TC_NO, KERNELS_DTYPE_FP32},
    {"void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::"
     "BFloat16>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, "
     "std::array<char*, 3ul>)",
     KERNELS_TC_NO, KERNELS_DTYPE_BF16},
    {"void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<"
     "float, float, float, float>, unsigned int, float, 4> >(at::native::ReduceOp<float, "
     "at::native::MeanOps<float, float, float, float>, unsigned int, float, 4>)",
     KERNELS_TC_NO, KERNELS_DTYPE_FP32},
    {"gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 4, 4, false, false, "
     "cublasGemvParams<cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStrided"
     "Batched<float const>, cublasGemvTensorStridedBatched<float>, float> >",
     KERNELS_TC_NO, KERNELS_DTYPE_FP32},
    {"cudnn::detail::bn_bw_1C11_kernel", KERNELS_TC_NO, KERNELS_DTYPE_UNKNOWN},
    {"void cudnn::ops::nchwToNhwcKernel<__half, __half, float, false, true, "
     "(cudnnKernelDataType_t)0>(cudnn::ops::nchw2nhwc_params_t<float>, __half const*, __half*)",
     KERNELS_TC_NO, KERNELS_DTYPE_FP16},
    {"triton_poi_fused_add_0", KERNELS_TC_NO, KERNELS_DTYPE_UNKNOWN},
    /* names that do not say: unknown, not a guess */
    {"triton_tem_fused_mm_0", KERNELS_TC_UNKNOWN, KERNELS_DTYPE_UNKNOWN},
    {"fmha_cutlassF_f32_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<float, "
     "cutlass::arch::Sm80, true, 64, 64, 64, true, true>::Params)",
     KERNELS_TC_UNKNOWN, KERNELS_DTYPE_FP32},
    {"volta_gcgemm_32x32_nt", KERNELS_TC_UNKNOWN, KERNELS_DTYPE_UNKNOWN},
    {"_Z10my_kernelPfi", KERNELS_TC_UNKNOWN, KERNELS_DTYPE_UNKNOWN},
};

static void test_tensor_cores_and_dtype_from_real_names(void)
{
    for (size_t i = 0; i < sizeof named_kernels / sizeof named_kernels[0]; i++) {
        const char *name = named_kernels[i].name;
        if (kernels_name_tensor_cores(name) != named_kernels[i].tc ||
            kernels_name_dtype(name) != named_kernels[i].dtype) {
            fprintf(stderr, "\n%s: tc %d dtype %d, expected %d %d\n", name,
                    kernels_name_tensor_cores(name), kernels_name_dtype(name), named_kernels[i].tc,
                    named_kernels[i].dtype);
            ASSERT(0);
        }
    }
}

static void test_kernel_parts(void)
{
    ASSERT_EQ(kernels_name_part("sm80_xmma_dgrad_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_"
                                "nhwc_tilesize128x128x32"),
              KERNELS_PART_DGRAD);
    ASSERT_EQ(kernels_name_part("void cudnn::detail::wgrad_alg0_engine<float, 128, 6, 7, 3, 3, "
                                "5, false, 512>(int)"),
              KERNELS_PART_WGRAD);
    ASSERT_EQ(kernels_name_part("_ZN17cutlass__5x_cudnn6KernelINS_4conv6kernel23ImplicitGemm"
                                "ConvolutionINS_52Conv2dWgradOutputGradientTileAccessIterator"),
              KERNELS_PART_WGRAD);
    ASSERT_EQ(kernels_name_part("ampere_sgemm_128x64_tn"), KERNELS_PART_ALL);
}

static void test_short_names(void)
{
    char out[512];
    ASSERT_STR_EQ(kernels_name_short("void at::native::vectorized_elementwise_kernel<4, at::"
                                     "native::CUDAFunctor_add<float>, std::array<char*, 3ul> >("
                                     "int, at::native::CUDAFunctor_add<float>, std::array<char*,"
                                     " 3ul>)",
                                     out, sizeof out),
                  "at::native::vectorized_elementwise_kernel<4,at::native::CUDAFunctor_add<"
                  "float>,std::array<char*,3ul>>");
    ASSERT_STR_EQ(kernels_name_short("void (anonymous namespace)::softmax_warp_forward<float, "
                                     "float, float, 10, false, false>(float*, float const*, int)",
                                     out, sizeof out),
                  "(anonymous_namespace)::softmax_warp_forward<float,float,float,10,false,false>");
    ASSERT_STR_EQ(kernels_name_short("gemv2T_kernel_val<int, unsigned int>(int)", out, sizeof out),
                  "gemv2T_kernel_val<int,unsigned_int>");
    ASSERT_STR_EQ(kernels_name_short("ampere_sgemm_128x64_tn", out, sizeof out),
                  "ampere_sgemm_128x64_tn");
    ASSERT_STR_EQ(kernels_name_short("_Z10my_kernelPfi", out, 6), "_Z10m");
}

/* Shapes from a marker's sizes text, for the model tests. */
static struct kernels_shapes shapes_of(const char *text)
{
    struct kernels_shapes s;
    ASSERT_EQ(kernels_shapes_parse(text, strlen(text), &s), 0);
    return s;
}

static struct kernels_op_model model_of(const char *op, const char *sizes, int elem_bytes,
                                        const struct kernels_conv_output *out)
{
    struct kernels_shapes s = shapes_of(sizes);
    struct kernels_op_model m;
    kernels_op_model(op, &s, elem_bytes, out, &m);
    return m;
}

#define ASSERT_FIGURES(m, fl, by)                                                                  \
    do {                                                                                           \
        ASSERT((m).known);                                                                         \
        ASSERT_EQ((long long)(m).flops[KERNELS_PART_ALL], (fl));                                   \
        ASSERT_EQ((long long)(m).bytes[KERNELS_PART_ALL], (by));                                   \
    } while (0)

static void test_gemm_models(void)
{
    /* mm: 2*M*N*K; bytes (MK + KN + MN) * elem */
    struct kernels_op_model m = model_of("mm", "[[64, 128], [128, 32]]", 2, NULL);
    ASSERT_FIGURES(m, 2LL * 64 * 32 * 128, (64 * 128 + 128 * 32 + 64 * 32) * 2);
    ASSERT_STR_EQ(m.params, "M=64,N=32,K=128");
    ASSERT(m.is_gemm_like);
    ASSERT_EQ(m.gemm_mnk[0], 64);
    ASSERT_EQ(m.gemm_mnk[1], 32);
    ASSERT_EQ(m.gemm_mnk[2], 128);
    /* addmm(bias, mat1, mat2, beta, alpha): bias read too, beta/alpha are [] */
    m = model_of("addmm", "[[32], [64, 128], [128, 32], [], []]", 4, NULL);
    ASSERT_FIGURES(m, 2LL * 64 * 32 * 128, (64 * 128 + 128 * 32 + 64 * 32 + 32) * 4);
    m = model_of("bmm", "[[8, 64, 128], [8, 128, 32]]", 2, NULL);
    ASSERT_FIGURES(m, 2LL * 8 * 64 * 32 * 128, 8 * (64 * 128 + 128 * 32 + 64 * 32) * 2);
    ASSERT_STR_EQ(m.params, "B=8,M=64,N=32,K=128");
    m = model_of("baddbmm", "[[8, 64, 32], [8, 64, 128], [8, 128, 32], [], []]", 2, NULL);
    ASSERT_FIGURES(m, 2LL * 8 * 64 * 32 * 128,
                   (8 * (64 * 128 + 128 * 32 + 64 * 32) + 8 * 64 * 32) * 2);
    /* matmul broadcasts the leading dims: batch 4*8 */
    m = model_of("matmul", "[[4, 8, 64, 128], [128, 32]]", 2, NULL);
    ASSERT_EQ((long long)m.flops[KERNELS_PART_ALL], 2LL * 32 * 64 * 32 * 128);
    /* linear(input [2, 16, 128], weight [32, 128], bias [32]): M = 32 rows */
    m = model_of("linear", "[[2, 16, 128], [32, 128], [32]]", 2, NULL);
    ASSERT_FIGURES(m, 2LL * 32 * 32 * 128, (32 * 128 + 32 * 128 + 32 * 32 + 32) * 2);
    ASSERT_STR_EQ(m.params, "M=32,N=32,K=128");
}

static void test_attention_models(void)
{
    /* q [B=2, H=4, L=128, E=64], k/v [2, 4, S=256, 64]: 2*B*H*L*S*(E + Ev) */
    struct kernels_op_model m = model_of("_scaled_dot_product_flash_attention",
                                         "[[2, 4, 128, 64], [2, 4, 256, 64], [2, 4, 256, 64], [], "
                                         "[], []]",
                                         2, NULL);
    ASSERT_FIGURES(m, 2LL * 2 * 4 * 128 * 256 * 128, (65536 + 131072 + 131072 + 65536) * 2);
    /* backward: recomputed QK^T, dV, dP, dQ, dK = 2*B*H*L*S*(3E + 2Ev) */
    m = model_of("_scaled_dot_product_flash_attention_backward",
                 "[[2, 4, 128, 64], [2, 4, 128, 64], [2, 4, 256, 64], [2, 4, 256, 64], [2, 4, 128,"
                 " 64], [2, 4, 128]]",
                 2, NULL);
    ASSERT_EQ((long long)m.flops[KERNELS_PART_ALL], 2LL * 2 * 4 * 128 * 256 * (3 * 64 + 2 * 64));
    /* cuDNN attention (PyTorch's SDPA on Hopper) takes [B, H, L, E] like SDPA */
    m = model_of("_cudnn_attention_forward",
                 "[[8, 16, 512, 64], [8, 16, 512, 64], [8, 16, 512, 64], [], [], []]", 2, NULL);
    ASSERT_EQ((long long)m.flops[KERNELS_PART_ALL], 2LL * 8 * 16 * 512 * 512 * 128);
    m = model_of("_cudnn_attention_backward",
                 "[[8, 16, 512, 64], [8, 16, 512, 64], [8, 16, 512, 64], [8, 16, 512, 64], [8, 16,"
                 " 512, 64], [8, 16, 512, 1], []]",
                 2, NULL);
    ASSERT_EQ((long long)m.flops[KERNELS_PART_ALL], 2LL * 8 * 16 * 512 * 512 * (3 * 64 + 2 * 64));
    /* _flash_attention_forward takes [B, L, H, E] */
    m = model_of("_flash_attention_forward", "[[2, 128, 4, 64], [2, 256, 4, 64], [2, 256, 4, 64]]",
                 2, NULL);
    ASSERT_EQ((long long)m.flops[KERNELS_PART_ALL], 2LL * 2 * 4 * 128 * 256 * 128);
}

static void test_conv_models(void)
{
    /* input [8, 3, 32, 32], weight [16, 3, 3, 3], output [8, 16, 30, 30]:
     * 2 * N * K * P * Q * C * R * S */
    struct kernels_conv_output out = {4, {8, 16, 30, 30}};
    struct kernels_op_model m = model_of(
        "cudnn_convolution", "[[8, 3, 32, 32], [16, 3, 3, 3], [], [], [], [], [], []]", 2, &out);
    ASSERT_FIGURES(m, 2LL * 8 * 16 * 30 * 30 * 3 * 3 * 3,
                   (8 * 3 * 32 * 32 + 16 * 27 + 8 * 16 * 900) * 2);
    ASSERT_STR_EQ(m.params, "N=8,C=3,K=16,in=32x32,k=3x3,out=30x30");
    ASSERT_EQ(m.gemm_mnk[0], 16);
    ASSERT_EQ(m.gemm_mnk[1], 3);
    /* without the output shape the FLOPs are unknown, not guessed */
    m = model_of("cudnn_convolution", "[[8, 3, 32, 32], [16, 3, 3, 3]]", 2, NULL);
    ASSERT(!m.known);
    ASSERT_STR_EQ(m.params, "N=8,C=3,K=16,in=32x32,k=3x3");
    /* groups = 4: weight [8, 8/4, 3, 3] */
    struct kernels_conv_output grouped = {4, {2, 8, 8, 8}};
    m = model_of("convolution", "[[2, 8, 10, 10], [8, 2, 3, 3], [8]]", 4, &grouped);
    ASSERT_EQ((long long)m.flops[KERNELS_PART_ALL], 2LL * 2 * 8 * 64 * 2 * 9);
    /* conv1d */
    struct kernels_conv_output out1d = {3, {4, 32, 98}};
    m = model_of("conv1d", "[[4, 16, 100], [32, 16, 3], [32]]", 2, &out1d);
    ASSERT_EQ((long long)m.flops[KERNELS_PART_ALL], 2LL * 4 * 32 * 98 * 16 * 3);
    /* transposed: input [1, 4, 5, 5], weight [Cin=4, Cout=2, 3, 3]: 2*N*Cin*H*W*Cout*R*S */
    m = model_of("cudnn_convolution_transpose", "[[1, 4, 5, 5], [4, 2, 3, 3]]", 2, NULL);
    ASSERT(m.known);
    ASSERT_EQ((long long)m.flops[KERNELS_PART_ALL], 2LL * 4 * 25 * 2 * 9);
    ASSERT_EQ((long long)m.bytes[KERNELS_PART_ALL], -1);
}

static void test_conv_backward_model(void)
{
    /* grad_output [8, 16, 30, 30], input [8, 3, 32, 32], weight [16, 3, 3, 3] */
    struct kernels_op_model m =
        model_of("convolution_backward",
                 "[[8, 16, 30, 30], [8, 3, 32, 32], [16, 3, 3, 3], [], [], [], [], [], [], [], []]",
                 2, NULL);
    long long pass = 2LL * 8 * 16 * 900 * 27;
    ASSERT(m.split);
    ASSERT_EQ((long long)m.flops[KERNELS_PART_DGRAD], pass);
    ASSERT_EQ((long long)m.flops[KERNELS_PART_WGRAD], pass);
    ASSERT_EQ((long long)m.bytes[KERNELS_PART_DGRAD], (115200 + 432 + 24576) * 2);
    ASSERT_FIGURES(m, 2 * pass, 2 * (115200 + 432 + 24576) * 2);
    ASSERT_STR_EQ(m.params, "N=8,C=3,K=16,in=32x32,k=3x3,out=30x30");
}

static void test_elementwise_models(void)
{
    struct kernels_op_model m = model_of("relu", "[[1000]]", 4, NULL);
    ASSERT_FIGURES(m, 1000, 8000);
    /* broadcast add: out [64, 128] */
    m = model_of("add", "[[64, 128], [128], []]", 2, NULL);
    ASSERT_FIGURES(m, 8192, (8192 + 128 + 8192) * 2);
    /* in-place variant shares the model */
    m = model_of("add_", "[[64, 128], [64, 128], []]", 2, NULL);
    ASSERT_FIGURES(m, 8192, 3 * 8192 * 2);
    m = model_of("addcdiv_", "[[10], [10], [10], []]", 4, NULL);
    ASSERT_FIGURES(m, 30, 40 * 4);
    m = model_of("threshold_backward", "[[256], [256], []]", 2, NULL);
    ASSERT_FIGURES(m, 256, 3 * 256 * 2);
    m = model_of("copy_", "[[100], [100], []]", 2, NULL);
    ASSERT_FIGURES(m, 0, 400);
    m = model_of("fill_", "[[100], []]", 4, NULL);
    ASSERT_FIGURES(m, 0, 400);
    m = model_of("native_dropout", "[[100], [], []]", 2, NULL);
    ASSERT_FIGURES(m, 200, 2 * 100 * 2 + 100);
}

static void test_row_models(void)
{
    struct kernels_op_model m = model_of("_softmax", "[[32, 1000], [], []]", 2, NULL);
    ASSERT_FIGURES(m, 5 * 32000, 2 * 32000 * 2);
    m = model_of("_softmax_backward_data", "[[32, 1000], [32, 1000], [], []]", 2, NULL);
    ASSERT_FIGURES(m, 4 * 32000, 3 * 32000 * 2);
    m = model_of("native_layer_norm", "[[8, 512], [], [512], [512], []]", 2, NULL);
    ASSERT_FIGURES(m, 8 * 4096, (2 * 4096 + 512 + 512) * 2);
    m = model_of("native_layer_norm_backward",
                 "[[8, 512], [8, 512], [], [8, 1], [8, 1], [512], [512], []]", 2, NULL);
    ASSERT_FIGURES(m, 13 * 4096, (3 * 4096 + 8 + 8 + 512 + 512) * 2);
    m = model_of("embedding", "[[1000, 64], [4, 16], [], [], []]", 4, NULL);
    ASSERT_FIGURES(m, 0, 64 * 8 + 2 * 64 * 64 * 4);
    m = model_of("embedding_dense_backward", "[[4, 16, 64], [4, 16], [], [], []]", 4, NULL);
    ASSERT_FIGURES(m, 64 * 64, 64 * 8 + 2 * 64 * 64 * 4);
    m = model_of("nll_loss_forward", "[[32, 10], [32], [], [], []]", 4, NULL);
    ASSERT_FIGURES(m, 32, 32 * 4 + 32 * 8);
    m = model_of("nll_loss_backward", "[[], [32, 10], [32], [], [], [], []]", 4, NULL);
    ASSERT_FIGURES(m, 32, 320 * 4 + 32 * 8);
    m = model_of("sum", "[[64, 128], [], [], []]", 4, NULL);
    ASSERT_FIGURES(m, 8192, 8192 * 4);
    m = model_of("mse_loss", "[[100], [100], []]", 4, NULL);
    ASSERT_FIGURES(m, 300, 200 * 4);
}

static void test_unknown_ops_have_no_figures(void)
{
    struct kernels_op_model m = model_of("my_custom_op", "[[64, 128], []]", 2, NULL);
    ASSERT(!m.known);
    ASSERT_STR_EQ(m.params, "64x128,-");
    /* tensor lists are recorded as [] by emit_nvtx: _foreach ops have no shapes */
    m = model_of("_foreach_add_", "[[], [], []]", 2, NULL);
    ASSERT(!m.known);
    m = model_of("mm", "[[], []]", 2, NULL);
    ASSERT(!m.known);
}

static const struct kernels_sm_limits h100 = {9, 2048, 65536, 233472, 32};

static void test_occupancy(void)
{
    ASSERT(fabs(kernels_occupancy(&h100, 256, 32, 0) - 1.0) < 1e-9);
    ASSERT(fabs(kernels_occupancy(&h100, 256, 64, 0) - 0.5) < 1e-9);
    /* 255 regs -> 8192 per warp -> 2 warps per sub-partition -> 8 warps = 2 blocks of 4 */
    ASSERT(fabs(kernels_occupancy(&h100, 128, 255, 0) - 0.125) < 1e-9);
    /* 48 KiB + 1 KiB reserved per block -> 4 blocks of 4 warps */
    ASSERT(fabs(kernels_occupancy(&h100, 128, 32, 49152) - 0.25) < 1e-9);
    ASSERT(fabs(kernels_occupancy(&h100, 1024, 0, 0) - 1.0) < 1e-9);
    /* 3-warp blocks, 40 regs: 1280 per warp -> 12 warps per sub-partition -> 16 blocks */
    ASSERT(fabs(kernels_occupancy(&h100, 96, 40, 0) - 0.75) < 1e-9);
    /* 32-thread blocks hit the 32 blocks per SM limit: 32 of 64 warps */
    ASSERT(fabs(kernels_occupancy(&h100, 32, 16, 0) - 0.5) < 1e-9);
    struct kernels_sm_limits unknown = {9, 0, 65536, 233472, 32};
    ASSERT(kernels_occupancy(&unknown, 256, 32, 0) < 0);
    ASSERT(kernels_occupancy(&h100, 256, 32, 300000) < 0); /* cannot fit */
}

static void test_hints(void)
{
    struct kernels_hint_input in = {1, {64, 30, 128}, KERNELS_DTYPE_BF16, KERNELS_TC_NO, 200, 132};
    ASSERT_EQ(kernels_hints(&in), KERNELS_HINT_NO_TC_ALIGN8);
    in.gemm_mnk[1] = 32;
    ASSERT_EQ(kernels_hints(&in), KERNELS_HINT_NO_TC);
    in.tc = KERNELS_TC_YES;
    ASSERT_EQ(kernels_hints(&in), 0);
    in.tc = KERNELS_TC_UNKNOWN; /* no hint on a guess */
    ASSERT_EQ(kernels_hints(&in), 0);
    in.tc = KERNELS_TC_NO;
    in.dtype = KERNELS_DTYPE_FP32;
    ASSERT_EQ(kernels_hints(&in), 0);
    in.blocks = 10;
    ASSERT_EQ(kernels_hints(&in), KERNELS_HINT_SMALL_GRID);
    in.sm_count = -1;
    ASSERT_EQ(kernels_hints(&in), 0);
    char text[64];
    ASSERT_STR_EQ(kernels_hints_format(KERNELS_HINT_NO_TC_ALIGN8 | KERNELS_HINT_SMALL_GRID, text,
                                       sizeof text),
                  "no-tc-align8,small-grid");
    ASSERT_STR_EQ(kernels_hints_format(0, text, sizeof text), "");
}

/* Measured Tensor Core use: the H200 figures of docs/gpu-metrics.md (a bf16 GEMM loop reads
 * 93.2 %, an fp32 axpy 0), a one-block HMMA kernel's 0.7 %, and activity that may be others'. */
static void test_measured_tensor_cores(void)
{
    ASSERT_EQ(kernels_measured_tensor_cores(93.2, 0, 1), KERNELS_TC_YES);
    ASSERT_EQ(kernels_measured_tensor_cores(0, 0, 1), KERNELS_TC_NO);
    ASSERT_EQ(kernels_measured_tensor_cores(0.05, 0.9, 0.01), KERNELS_TC_NO); /* none, whoever */
    /* between idle and busy the name decides: a one-block HMMA kernel (~0.7 % on 132 SMs), or
     * a randn kernel at the edge of samples it shares with a GEMM (1.0-1.4 % on an H200) */
    ASSERT_EQ(kernels_measured_tensor_cores(0.7, 0, 0.9), KERNELS_TC_UNKNOWN);
    ASSERT_EQ(kernels_measured_tensor_cores(5.0, 0, 0.9), KERNELS_TC_YES);
    ASSERT_EQ(kernels_measured_tensor_cores(40, 0.5, 1), KERNELS_TC_UNKNOWN); /* beside others */
    ASSERT_EQ(kernels_measured_tensor_cores(40, 0, 0.2),
              KERNELS_TC_UNKNOWN);                                         /* a fifth of a sample */
    ASSERT_EQ(kernels_measured_tensor_cores(40, 0.1, -1), KERNELS_TC_YES); /* a name's */
}

int main(int argc, char **argv)
{
    static const struct test_case tests[] = {
        {"marker_with_every_field", test_marker_with_every_field},
        {"marker_kinds", test_marker_kinds},
        {"shapes_parse", test_shapes_parse},
        {"tensor_cores_and_dtype_from_real_names", test_tensor_cores_and_dtype_from_real_names},
        {"kernel_parts", test_kernel_parts},
        {"short_names", test_short_names},
        {"gemm_models", test_gemm_models},
        {"attention_models", test_attention_models},
        {"conv_models", test_conv_models},
        {"conv_backward_model", test_conv_backward_model},
        {"elementwise_models", test_elementwise_models},
        {"row_models", test_row_models},
        {"unknown_ops_have_no_figures", test_unknown_ops_have_no_figures},
        {"occupancy", test_occupancy},
        {"hints", test_hints},
        {"measured_tensor_cores", test_measured_tensor_cores},
        {NULL, NULL},
    };
    return test_main(tests, argc, argv);
}
