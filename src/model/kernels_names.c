/* What a kernel's name tells: its data type, whether it runs on Tensor Cores, and a short
 * form for the kernel column. The rules follow the naming of cuBLAS (volta_h884gemm,
 * ampere_bf16_s16816gemm, sm90_xmma_gemm_bf16bf16_..., nvjet_*), cuDNN (xmma fprop/dgrad/wgrad,
 * scudnn, implicit_convolve_sgemm), CUTLASS (tensorop/wmma/simt), FlashAttention and PyTorch's
 * own kernels; a name no rule recognises is "unknown", never a guess (docs/kernels.md). And
 * what the measured Tensor Core activity says instead, where GPU metrics were recorded. */
#include "model/kernels_model.h"
#include "output/kernel_name.h"

#include <ctype.h>
#include <string.h>

static int contains(const char *s, const char *needle)
{
    return strstr(s, needle) != NULL;
}

static int contains_any(const char *s, const char *const *needles)
{
    for (; *needles; needles++)
        if (strstr(s, *needles))
            return 1;
    return 0;
}

const char *kernels_dtype_name(enum kernels_dtype dtype)
{
    switch (dtype) {
    case KERNELS_DTYPE_FP64:
        return "fp64";
    case KERNELS_DTYPE_FP32:
        return "fp32";
    case KERNELS_DTYPE_TF32:
        return "tf32";
    case KERNELS_DTYPE_FP16:
        return "fp16";
    case KERNELS_DTYPE_BF16:
        return "bf16";
    case KERNELS_DTYPE_FP8:
        return "fp8";
    case KERNELS_DTYPE_INT8:
        return "int8";
    case KERNELS_DTYPE_UNKNOWN:
        break;
    }
    return "na";
}

int kernels_dtype_bytes(enum kernels_dtype dtype)
{
    switch (dtype) {
    case KERNELS_DTYPE_FP64:
        return 8;
    case KERNELS_DTYPE_FP32:
    case KERNELS_DTYPE_TF32:
        return 4; /* tf32 is fp32 data through Tensor Cores */
    case KERNELS_DTYPE_FP16:
    case KERNELS_DTYPE_BF16:
        return 2;
    case KERNELS_DTYPE_FP8:
    case KERNELS_DTYPE_INT8:
        return 1;
    case KERNELS_DTYPE_UNKNOWN:
        break;
    }
    return 0;
}

/* The first family that matches wins, so narrower spellings come before the ones they
 * contain ("bf16" before "f16", "tf32" before "f32"). */
enum kernels_dtype kernels_name_dtype(const char *name)
{
    /* cuDNN's runtime-generated kernels say "f16" for both 16-bit types: a bf16 model on an
     * H200 ran cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_... */
    if (strncmp(name, "cudnn_generated_", 16) == 0)
        return KERNELS_DTYPE_UNKNOWN;
    static const char *const bf16[] = {"bf16", "bfloat16", "BFloat16", NULL};
    static const char *const fp8[] = {"e4m3", "e5m2", "fp8", "Float8", NULL};
    static const char *const tf32[] = {"tf32", NULL};
    static const char *const fp16[] = {"fp16",  "f16",    "Half",  "half",   "h884",
                                       "h1688", "h16816", "hgemm", "hcudnn", NULL};
    static const char *const int8[] = {"int8", "i8i8", "imma", NULL};
    static const char *const fp64[] = {"f64", "fp64", "double", "dgemm", "dmma", NULL};
    static const char *const fp32[] = {"f32", "fp32", "float", "sgemm", "scudnn", NULL};
    if (contains_any(name, bf16))
        return KERNELS_DTYPE_BF16;
    if (contains_any(name, fp8))
        return KERNELS_DTYPE_FP8;
    if (contains_any(name, tf32))
        return KERNELS_DTYPE_TF32;
    if (contains_any(name, fp16))
        return KERNELS_DTYPE_FP16;
    if (contains_any(name, int8))
        return KERNELS_DTYPE_INT8;
    if (contains_any(name, fp64))
        return KERNELS_DTYPE_FP64;
    if (contains_any(name, fp32))
        return KERNELS_DTYPE_FP32;
    return KERNELS_DTYPE_UNKNOWN;
}

/* cuBLAS/cuDNN encode the MMA instruction shape after the precision letter: h884 (Volta
 * HMMA.884), s1688/h1688 (Turing), s16816/h16816/i16832/d884 (Ampere and later). */
static int has_mma_shape(const char *name)
{
    static const char *const shapes[] = {"884", "1688", "16816", "16832", "8816", "161616"};
    for (const char *p = name; *p; p++) {
        if (!strchr("hsid", *p))
            continue;
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
            size_t n = strlen(shapes[i]);
            if (strncmp(p + 1, shapes[i], n) == 0 && !isdigit((unsigned char)p[1 + n]))
                return 1;
        }
    }
    return 0;
}

static int is_reduced_precision(enum kernels_dtype dtype)
{
    return dtype == KERNELS_DTYPE_FP16 || dtype == KERNELS_DTYPE_BF16 ||
           dtype == KERNELS_DTYPE_TF32 || dtype == KERNELS_DTYPE_FP8 || dtype == KERNELS_DTYPE_INT8;
}

enum kernels_tc kernels_name_tensor_cores(const char *name)
{
    /* Instruction or library names that only exist for Tensor Core code. */
    /* (MmaTensorOp, OpClassTensorOp: CUTLASS templates in names CUPTI could not demangle) */
    static const char *const tc_markers[] = {
        "hmma",     "imma",    "dmma",  "wmma",        "gmma",
        "tensorop", "tcgen05", "nvjet", "MmaTensorOp", "OpClassTensorOp",
        NULL};
    /* CUDA-core (SIMT) GEMMs and kernels that do no matrix math at all. */
    static const char *const simt_markers[] = {
        "simt",         "Simt",   "sgemm",        "dgemm",       "scudnn",        "gemv",
        "gemmk1",       "gemmSN", "splitKreduce", "triton_poi_", "triton_red_",   "triton_per_",
        "at::native::", "bn_fw_", "bn_bw_",       "elementwise", "reduce_kernel", "nchwToNhwc",
        "nhwcToNchw",   "cunn_",  "winograd",     NULL};
    enum kernels_dtype dtype = kernels_name_dtype(name);
    if (contains_any(name, tc_markers) || has_mma_shape(name))
        return KERNELS_TC_YES;
    if (contains_any(name, simt_markers))
        return KERNELS_TC_NO;
    /* xmma (cuBLAS/cuDNN) kernels come in both flavours: the reduced precisions and the ones
     * naming their MMA shape ("_tensor16x8x8", fp64 DMMA) are Tensor Core ones for sure. */
    if (contains(name, "xmma"))
        return is_reduced_precision(dtype) || contains(name, "_tensor") ? KERNELS_TC_YES
                                                                        : KERNELS_TC_UNKNOWN;
    /* FlashAttention and CUTLASS fmha use MMA for fp16/bf16 only; fp32 variants are SIMT. */
    if (contains(name, "flash") || contains(name, "fmha"))
        return is_reduced_precision(dtype) ? KERNELS_TC_YES : KERNELS_TC_UNKNOWN;
    return KERNELS_TC_UNKNOWN;
}

enum kernels_part kernels_name_part(const char *name)
{
    /* cuDNN: sm90_xmma_dgrad_..., wgrad_alg0_engine; CUTLASS: Conv2dWgradOutputGradient... */
    if (contains(name, "dgrad") || contains(name, "Dgrad"))
        return KERNELS_PART_DGRAD;
    if (contains(name, "wgrad") || contains(name, "Wgrad"))
        return KERNELS_PART_WGRAD;
    return KERNELS_PART_ALL;
}

static int is_word_char(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

char *kernels_name_short(const char *name, char *out, size_t size)
{
    if (size == 0)
        return out;
    /* the parameter list repeats the template's types */
    const char *p = kernel_name_start(name), *end = kernel_name_parameters(p);
    size_t n = 0;
    for (; p < end && n + 1 < size; p++) {
        if (*p == ' ') {
            /* "unsigned int" -> "unsigned_int"; "a, b" -> "a,b" */
            if (n > 0 && is_word_char(out[n - 1]) && is_word_char(p[1]))
                out[n++] = '_';
            continue;
        }
        out[n++] = *p;
    }
    out[n] = '\0';
    return out;
}

enum kernels_tc kernels_measured_tensor_cores(double tensor_percent, double overlapped,
                                              double filled)
{
    if (tensor_percent < KERNELS_TENSOR_IDLE_PERCENT)
        return KERNELS_TC_NO;
    if (tensor_percent >= KERNELS_TENSOR_BUSY_PERCENT && overlapped < KERNELS_MEASURED_OWN_SHARE &&
        (filled < 0 || filled >= KERNELS_MEASURED_OWN_SHARE))
        return KERNELS_TC_YES;
    return KERNELS_TC_UNKNOWN;
}
