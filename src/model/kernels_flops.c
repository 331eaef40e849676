/* FLOP and byte models of aten ops, forward and backward, from the input shapes PyTorch
 * records (emit_nvtx(record_shapes=True)). Bytes are the compulsory DRAM traffic: every input
 * read once, every output written once. docs/kernels.md lists each formula; the unit tests
 * check them against hand-computed values. Unknown figures are -1 (shown as "na"). */
#include "model/kernels_model.h"

#include <stdio.h>
#include <string.h>

/* Elements of input i; 0 for a missing input or one recorded as [] (scalars and non-tensor
 * arguments look the same in emit_nvtx's sizes, so they count as no traffic). */
static double elems(const struct kernels_shapes *s, int i)
{
    if (i >= s->count || s->ndims[i] == 0)
        return 0;
    double n = 1;
    for (int d = 0; d < s->ndims[i]; d++)
        n *= (double)s->dims[i][d];
    return n;
}

static int has_tensor(const struct kernels_shapes *s, int i)
{
    return i < s->count && s->ndims[i] > 0;
}

static int64_t dim(const struct kernels_shapes *s, int i, int d)
{
    return d < 0 ? s->dims[i][s->ndims[i] + d] : s->dims[i][d];
}

/* Elements of the broadcast of inputs first..last (numpy rules, aligned on the right). */
static double broadcast_elems(const struct kernels_shapes *s, int first, int last)
{
    int ndims = 0;
    for (int i = first; i <= last && i < s->count; i++)
        if (s->ndims[i] > ndims)
            ndims = s->ndims[i];
    if (ndims == 0)
        return 0;
    double n = 1;
    for (int d = 1; d <= ndims; d++) {
        int64_t size = 1;
        for (int i = first; i <= last && i < s->count; i++)
            if (s->ndims[i] >= d && s->dims[i][s->ndims[i] - d] != 1)
                size = s->dims[i][s->ndims[i] - d];
        n *= (double)size;
    }
    return n;
}

/* Appends label then the decimal value (no printf: the report models every op instance). */
static void params_append(struct kernels_op_model *m, const char *label, long long value)
{
    char digits[24];
    size_t used = strlen(m->params), label_len = strlen(label), n = 0;
    unsigned long long v = value < 0 ? 0ULL - (unsigned long long)value : (unsigned long long)value;
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    if (value < 0)
        digits[n++] = '-';
    if (used + label_len + n + 1 > sizeof m->params)
        return;
    memcpy(m->params + used, label, label_len);
    used += label_len;
    while (n)
        m->params[used++] = digits[--n];
    m->params[used] = '\0';
}

static void params_append_text(struct kernels_op_model *m, const char *text)
{
    size_t used = strlen(m->params), len = strlen(text);
    if (used + len + 1 > sizeof m->params)
        return;
    memcpy(m->params + used, text, len + 1);
}

/* " ,in=56x56": a label, then dims from index `from` joined by 'x'. */
static void params_dims(struct kernels_op_model *m, const char *label, const int64_t *dims,
                        int from, int ndims)
{
    params_append_text(m, label);
    for (int d = from; d < ndims; d++)
        params_append(m, d > from ? "x" : "", (long long)dims[d]);
}

/* "64x128,-,3" : every input's shape, dims joined by 'x', non-tensors as '-'. */
static void params_shapes(struct kernels_op_model *m, const struct kernels_shapes *s)
{
    m->params[0] = '\0';
    for (int i = 0; i < s->count; i++) {
        params_append_text(m, i ? "," : "");
        if (s->ndims[i] == 0)
            params_append_text(m, "-");
        params_dims(m, "", s->dims[i], 0, s->ndims[i]);
    }
}

static void set_total(struct kernels_op_model *m, double flops, double bytes)
{
    m->known = flops >= 0 || bytes >= 0;
    m->flops[KERNELS_PART_ALL] = flops;
    m->bytes[KERNELS_PART_ALL] = bytes;
}

/* ---- matrix multiplication ---------------------------------------------------------------- */

static void gemm(struct kernels_op_model *m, double batch, int64_t M, int64_t N, int64_t K,
                 double extra_elems, int e)
{
    double flops = 2.0 * batch * (double)M * (double)N * (double)K;
    double bytes = (batch * ((double)M * K + (double)K * N + (double)M * N) + extra_elems) * e;
    set_total(m, flops, bytes);
    m->is_gemm_like = 1;
    m->gemm_mnk[0] = M;
    m->gemm_mnk[1] = N;
    m->gemm_mnk[2] = K;
    m->params[0] = '\0';
    if (batch != 1) {
        params_append(m, "B=", (long long)batch);
        params_append_text(m, ",");
    }
    params_append(m, "M=", M);
    params_append(m, ",N=", N);
    params_append(m, ",K=", K);
}

/* a: [.., M, K] (or [K]), b: [.., K, N] (or [K]); leading dims broadcast. */
static void model_matmul(struct kernels_op_model *m, const struct kernels_shapes *s, int a, int b,
                         double extra_elems, int e)
{
    if (!has_tensor(s, a) || !has_tensor(s, b))
        return;
    int na = s->ndims[a], nb = s->ndims[b];
    int64_t M = na >= 2 ? dim(s, a, -2) : 1, K = dim(s, a, -1);
    int64_t N = nb >= 2 ? dim(s, b, -1) : 1;
    double batch = 1;
    int batch_dims = (na > nb ? na : nb) - 2;
    for (int d = 1; d <= batch_dims; d++) {
        int64_t da = na - 2 - d >= 0 ? s->dims[a][na - 2 - d] : 1;
        int64_t db = nb - 2 - d >= 0 ? s->dims[b][nb - 2 - d] : 1;
        batch *= (double)(da != 1 ? da : db);
    }
    gemm(m, batch, M, N, K, extra_elems, e);
}

/* linear(input [.., K], weight [N, K], bias [N]) */
static void model_linear(struct kernels_op_model *m, const struct kernels_shapes *s, int e)
{
    if (!has_tensor(s, 0) || !has_tensor(s, 1) || s->ndims[1] != 2)
        return;
    double rows = elems(s, 0) / (double)dim(s, 0, -1);
    gemm(m, 1, (int64_t)rows, dim(s, 1, 0), dim(s, 1, 1), elems(s, 2), e);
}

/* ---- attention ---------------------------------------------------------------------------- */

/* q [B, H, L, E] (or [B, L, H, E] when heads_second is 0), k [.., S, ..], v [.., S, .., Ev]. */
static void model_attention(struct kernels_op_model *m, const struct kernels_shapes *s, int q,
                            int heads_second, int backward, int e)
{
    int k = q + 1, v = q + 2;
    if (!has_tensor(s, q) || !has_tensor(s, k) || !has_tensor(s, v) || s->ndims[q] != 4 ||
        s->ndims[k] != 4 || s->ndims[v] != 4)
        return;
    double B = (double)dim(s, q, 0), H = (double)dim(s, q, heads_second ? 1 : 2);
    double L = (double)dim(s, q, heads_second ? 2 : 1), S = (double)dim(s, k, heads_second ? 2 : 1);
    double E = (double)dim(s, q, 3), Ev = (double)dim(s, v, 3);
    double out = B * H * L * Ev;
    /* forward: S = QK^T and O = PV; backward: recomputed S, dV, dP, dQ, dK */
    double flops = backward ? 2 * B * H * L * S * (3 * E + 2 * Ev) : 2 * B * H * L * S * (E + Ev);
    double io = elems(s, q) + elems(s, k) + elems(s, v) + out;
    set_total(m, flops, (backward ? 2 * io : io) * e);
    m->is_gemm_like = 1;
    m->params[0] = '\0';
    params_append(m, "B=", (long long)B);
    params_append(m, ",H=", (long long)H);
    params_append(m, ",L=", (long long)L);
    params_append(m, ",S=", (long long)S);
    params_append(m, ",E=", (long long)E);
}

/* ---- convolution -------------------------------------------------------------------------- */

static double spatial(const int64_t *dims, int ndims)
{
    double n = 1;
    for (int d = 2; d < ndims; d++)
        n *= (double)dims[d];
    return n;
}

/* "N=32,C=3,K=64,in=224x224,k=7x7,out=112x112" (out only when known) */
static void conv_params(struct kernels_op_model *m, const struct kernels_shapes *s, int x, int w,
                        const int64_t *out, int out_ndims)
{
    m->params[0] = '\0';
    params_append(m, "N=", s->dims[x][0]);
    params_append(m, ",C=", s->dims[x][1]);
    params_append(m, ",K=", s->dims[w][0]);
    params_dims(m, ",in=", s->dims[x], 2, s->ndims[x]);
    params_dims(m, ",k=", s->dims[w], 2, s->ndims[w]);
    if (out)
        params_dims(m, ",out=", out, 2, out_ndims);
}

/* FLOPs of one pass (forward, dgrad or wgrad) of a convolution whose weight is
 * [W0, W1, k..]: each of the N * W0 * spatial(out) outputs of a direct convolution takes
 * W1 * prod(k) multiply-adds; for a transposed one the spatial extent is the input's. */
static double conv_pass_flops(const struct kernels_shapes *s, int w, double n, double sp)
{
    return 2.0 * n * (double)s->dims[w][0] * (double)s->dims[w][1] *
           spatial(s->dims[w], s->ndims[w]) * sp;
}

/* Forward: input x [N, C, in..], weight w [K, C/g, k..] (transposed: [C, K/g, k..]). The
 * output's shape is not among the inputs; it comes from the matching backward (out). */
static void model_conv(struct kernels_op_model *m, const struct kernels_shapes *s, int transposed,
                       const struct kernels_conv_output *out, int e)
{
    if (!has_tensor(s, 0) || !has_tensor(s, 1) || s->ndims[0] < 3 || s->ndims[1] != s->ndims[0])
        return;
    int known_out = out && out->ndims == s->ndims[0];
    if (known_out && !transposed) /* a direct convolution's output has K = W0 channels */
        transposed = out->dims[1] != s->dims[1][0] && s->dims[0][1] == s->dims[1][0];
    conv_params(m, s, 0, 1, known_out ? out->dims : NULL, known_out ? out->ndims : 0);
    m->is_gemm_like = 1;
    m->gemm_mnk[0] = s->dims[1][0];
    m->gemm_mnk[1] = s->dims[1][1];
    m->gemm_mnk[2] = 0;
    double n = (double)s->dims[0][0];
    double flops = -1, bytes = -1;
    if (transposed)
        flops = conv_pass_flops(s, 1, n, spatial(s->dims[0], s->ndims[0]));
    else if (known_out)
        flops = conv_pass_flops(s, 1, n, spatial(out->dims, out->ndims));
    if (known_out) {
        double out_elems = n * (double)out->dims[1] * spatial(out->dims, out->ndims);
        bytes = (elems(s, 0) + elems(s, 1) + elems(s, 2) + out_elems) * e;
    }
    set_total(m, flops, bytes);
}

/* convolution_backward(grad_output [N, K, out..], input [N, C, in..], weight [K, C/g, k..],
 * ...): dgrad and wgrad each cost one forward pass; grad_bias is not counted. */
static void model_conv_backward(struct kernels_op_model *m, const struct kernels_shapes *s, int e)
{
    if (!has_tensor(s, 0) || !has_tensor(s, 1) || !has_tensor(s, 2) || s->ndims[0] < 3 ||
        s->ndims[1] != s->ndims[0] || s->ndims[2] != s->ndims[0])
        return;
    int transposed = s->dims[0][1] != s->dims[2][0] && s->dims[1][1] == s->dims[2][0];
    double n = (double)s->dims[0][0];
    double sp = transposed ? spatial(s->dims[1], s->ndims[1]) : spatial(s->dims[0], s->ndims[0]);
    double pass = conv_pass_flops(s, 2, n, sp);
    double go = elems(s, 0), x = elems(s, 1), w = elems(s, 2);
    m->split = 1;
    m->flops[KERNELS_PART_DGRAD] = pass;
    m->bytes[KERNELS_PART_DGRAD] = (go + w + x) * e; /* reads dy, w; writes dx */
    m->flops[KERNELS_PART_WGRAD] = pass;
    m->bytes[KERNELS_PART_WGRAD] = (go + x + w) * e; /* reads dy, x; writes dw */
    set_total(m, 2 * pass, 2 * (go + x + w) * e);
    conv_params(m, s, 1, 2, s->dims[0], s->ndims[0]);
    m->is_gemm_like = 1;
    m->gemm_mnk[0] = s->dims[2][0];
    m->gemm_mnk[1] = s->dims[2][1];
    m->gemm_mnk[2] = 0;
}

/* ---- element-wise, normalisation, losses, reductions --------------------------------------- */

enum shape_rule {
    RULE_UNARY,   /* out = input 0 */
    RULE_BINARY,  /* out = broadcast(input 0, input 1) */
    RULE_TERNARY, /* out = broadcast(inputs 0..2) */
    RULE_FILL,    /* writes input 0, reads nothing */
    RULE_COPY,    /* copy_(self, src): reads src, writes self */
    RULE_ROWS,    /* softmax-like: out = input 0, reads grad_output/output too (backward) */
    RULE_REDUCE,  /* reads input 0; the (smaller) output is not counted */
};

struct pointwise_model {
    const char *op;
    enum shape_rule rule;
    double flops_per_elem;
    int reads; /* for RULE_ROWS: tensors of input-0 size read (1 forward, 2 backward) */
};

/* Per-element FLOP counts (docs/kernels.md explains each). Unary math functions count one FLOP
 * per element whatever their hardware cost, as PyProf does. */
static const struct pointwise_model pointwise_models[] = {
    {"relu", RULE_UNARY, 1, 0},
    {"gelu", RULE_UNARY, 1, 0},
    {"silu", RULE_UNARY, 1, 0},
    {"sigmoid", RULE_UNARY, 1, 0},
    {"tanh", RULE_UNARY, 1, 0},
    {"exp", RULE_UNARY, 1, 0},
    {"log", RULE_UNARY, 1, 0},
    {"neg", RULE_UNARY, 1, 0},
    {"abs", RULE_UNARY, 1, 0},
    {"sqrt", RULE_UNARY, 1, 0},
    {"rsqrt", RULE_UNARY, 1, 0},
    {"reciprocal", RULE_UNARY, 1, 0},
    {"hardtanh", RULE_UNARY, 1, 0},
    {"leaky_relu", RULE_UNARY, 1, 0},
    {"elu", RULE_UNARY, 1, 0},
    {"clamp", RULE_UNARY, 1, 0},
    {"clamp_min", RULE_UNARY, 1, 0},
    {"clamp_max", RULE_UNARY, 1, 0},
    {"threshold", RULE_UNARY, 1, 0},
    {"hardswish", RULE_UNARY, 1, 0},
    {"hardsigmoid", RULE_UNARY, 1, 0},
    {"mish", RULE_UNARY, 1, 0},
    {"softplus", RULE_UNARY, 1, 0},
    {"erf", RULE_UNARY, 1, 0},
    {"sin", RULE_UNARY, 1, 0},
    {"cos", RULE_UNARY, 1, 0},
    {"square", RULE_UNARY, 1, 0},
    {"sign", RULE_UNARY, 1, 0},
    {"add", RULE_BINARY, 1, 0},
    {"sub", RULE_BINARY, 1, 0},
    {"rsub", RULE_BINARY, 1, 0},
    {"mul", RULE_BINARY, 1, 0},
    {"div", RULE_BINARY, 1, 0},
    {"pow", RULE_BINARY, 1, 0},
    {"maximum", RULE_BINARY, 1, 0},
    {"minimum", RULE_BINARY, 1, 0},
    {"eq", RULE_BINARY, 1, 0},
    {"ne", RULE_BINARY, 1, 0},
    {"lt", RULE_BINARY, 1, 0},
    {"le", RULE_BINARY, 1, 0},
    {"gt", RULE_BINARY, 1, 0},
    {"ge", RULE_BINARY, 1, 0},
    {"masked_fill", RULE_BINARY, 1, 0},
    {"threshold_backward", RULE_BINARY, 1, 0},
    {"gelu_backward", RULE_BINARY, 1, 0},
    {"silu_backward", RULE_BINARY, 1, 0},
    {"sigmoid_backward", RULE_BINARY, 1, 0},
    {"tanh_backward", RULE_BINARY, 1, 0},
    {"hardtanh_backward", RULE_BINARY, 1, 0},
    {"leaky_relu_backward", RULE_BINARY, 1, 0},
    {"elu_backward", RULE_BINARY, 1, 0},
    {"hardswish_backward", RULE_BINARY, 1, 0},
    {"mish_backward", RULE_BINARY, 1, 0},
    {"softplus_backward", RULE_BINARY, 1, 0},
    {"addcmul", RULE_TERNARY, 3, 0},
    {"addcdiv", RULE_TERNARY, 3, 0},
    {"lerp", RULE_TERNARY, 3, 0},
    {"where", RULE_TERNARY, 1, 0},
    {"copy", RULE_COPY, 0, 0},
    {"_to_copy", RULE_UNARY, 0, 0},
    {"clone", RULE_UNARY, 0, 0},
    {"contiguous", RULE_UNARY, 0, 0},
    {"fill", RULE_FILL, 0, 0},
    {"zero", RULE_FILL, 0, 0},
    {"_softmax", RULE_ROWS, 5, 1},
    {"softmax", RULE_ROWS, 5, 1},
    {"_log_softmax", RULE_ROWS, 5, 1},
    {"log_softmax", RULE_ROWS, 5, 1},
    {"_softmax_backward_data", RULE_ROWS, 4, 2},
    {"_log_softmax_backward_data", RULE_ROWS, 4, 2},
    {"native_layer_norm", RULE_ROWS, 8, 1},
    {"layer_norm", RULE_ROWS, 8, 1},
    {"native_batch_norm", RULE_ROWS, 8, 1},
    {"_native_batch_norm_legit", RULE_ROWS, 8, 1},
    {"cudnn_batch_norm", RULE_ROWS, 8, 1},
    {"batch_norm", RULE_ROWS, 8, 1},
    {"native_group_norm", RULE_ROWS, 8, 1},
    {"group_norm", RULE_ROWS, 8, 1},
    {"_fused_rms_norm", RULE_ROWS, 4, 1},
    {"rms_norm", RULE_ROWS, 4, 1},
    {"native_layer_norm_backward", RULE_ROWS, 13, 2},
    {"native_batch_norm_backward", RULE_ROWS, 13, 2},
    {"native_group_norm_backward", RULE_ROWS, 13, 2},
    {"mse_loss", RULE_REDUCE, 3, 0},
    {"sum", RULE_REDUCE, 1, 0},
    {"mean", RULE_REDUCE, 1, 0},
    {"prod", RULE_REDUCE, 1, 0},
    {"amax", RULE_REDUCE, 1, 0},
    {"amin", RULE_REDUCE, 1, 0},
    {"max", RULE_REDUCE, 1, 0},
    {"min", RULE_REDUCE, 1, 0},
    {"argmax", RULE_REDUCE, 1, 0},
    {"argmin", RULE_REDUCE, 1, 0},
    {"norm", RULE_REDUCE, 2, 0},
    {"linalg_vector_norm", RULE_REDUCE, 2, 0},
    {"var", RULE_REDUCE, 3, 0},
    {"std", RULE_REDUCE, 3, 0},
    {"var_mean", RULE_REDUCE, 3, 0},
    {"std_mean", RULE_REDUCE, 3, 0},
    {"logsumexp", RULE_REDUCE, 3, 0},
};

static int model_pointwise(struct kernels_op_model *m, const char *op,
                           const struct kernels_shapes *s, int e)
{
    /* in-place (add_) and out= variants share the functional op's model */
    char base[64];
    size_t len = strlen(op);
    if (len >= sizeof base)
        return 0;
    memcpy(base, op, len + 1);
    if (len > 1 && base[len - 1] == '_')
        base[len - 1] = '\0';
    for (size_t i = 0; i < sizeof pointwise_models / sizeof pointwise_models[0]; i++) {
        const struct pointwise_model *p = &pointwise_models[i];
        if (strcmp(p->op, base) != 0)
            continue;
        if (!has_tensor(s, 0))
            return 1;
        double in0 = elems(s, 0), n;
        switch (p->rule) {
        case RULE_UNARY:
            set_total(m, p->flops_per_elem * in0, 2 * in0 * e);
            break;
        case RULE_BINARY:
            n = broadcast_elems(s, 0, 1);
            set_total(m, p->flops_per_elem * n, (in0 + elems(s, 1) + n) * e);
            break;
        case RULE_TERNARY:
            n = broadcast_elems(s, 0, 2);
            set_total(m, p->flops_per_elem * n, (in0 + elems(s, 1) + elems(s, 2) + n) * e);
            break;
        case RULE_FILL:
            set_total(m, 0, in0 * e);
            break;
        case RULE_COPY:
            set_total(m, 0, (in0 + elems(s, 1)) * e);
            break;
        case RULE_ROWS: {
            /* other inputs of input-0 size are already in `reads`; small ones (weight,
             * bias, mean, rstd) are read once */
            double small = 0;
            for (int t = 1; t < s->count; t++)
                if (elems(s, t) < in0)
                    small += elems(s, t);
            set_total(m, p->flops_per_elem * in0, ((p->reads + 1) * in0 + small) * e);
            break;
        }
        case RULE_REDUCE:
            set_total(m, p->flops_per_elem * in0, (in0 + elems(s, 1)) * e);
            break;
        }
        return 1;
    }
    return 0;
}

/* native_dropout(input, p, train) -> (output, mask); native_dropout_backward(grad, mask, scale).
 * The mask is one byte per element. */
static void model_dropout(struct kernels_op_model *m, const struct kernels_shapes *s, int e)
{
    if (!has_tensor(s, 0))
        return;
    double n = elems(s, 0);
    set_total(m, 2 * n, 2 * n * e + n);
}

/* embedding(weight [V, D], indices [..]): gathers one D-row per index (int64 indices).
 * embedding_dense_backward(grad [.., D], indices, ..): adds one D-row per index. */
static void model_embedding(struct kernels_op_model *m, const struct kernels_shapes *s,
                            int backward, int e)
{
    int w = 0, idx = 1; /* weight [V, D] or grad [.., D]: D is the last dim either way */
    if (!has_tensor(s, w) || !has_tensor(s, idx))
        return;
    double n = elems(s, idx), d = (double)dim(s, w, -1);
    set_total(m, backward ? n * d : 0, n * 8 + 2 * n * d * e);
}

/* nll_loss_forward(self [N, C], target [N], ..): picks N values; nll_loss_backward(grad,
 * self [N, C], target, ..): writes grad_input [N, C]. */
static void model_nll_loss(struct kernels_op_model *m, const struct kernels_shapes *s, int backward,
                           int e)
{
    int x = backward ? 1 : 0, t = backward ? 2 : 1;
    if (!has_tensor(s, x))
        return;
    double rows = has_tensor(s, t) ? elems(s, t) : (double)dim(s, x, 0);
    set_total(m, rows, (backward ? elems(s, x) : rows) * e + rows * 8);
}

/* mse_loss_backward(grad_output, self, target, reduction): 3 FLOPs per element. */
static void model_mse_backward(struct kernels_op_model *m, const struct kernels_shapes *s, int e)
{
    if (!has_tensor(s, 1))
        return;
    double n = elems(s, 1);
    set_total(m, 3 * n, 3 * n * e);
}

/* ---- dispatch ---------------------------------------------------------------------------- */

static int op_is(const char *op, const char *const *names)
{
    for (; *names; names++)
        if (strcmp(op, *names) == 0)
            return 1;
    return 0;
}

void kernels_op_model(const char *op, const struct kernels_shapes *s, int e,
                      const struct kernels_conv_output *conv_output, struct kernels_op_model *m)
{
    static const char *const conv_fwd[] = {"convolution",
                                           "_convolution",
                                           "cudnn_convolution",
                                           "conv1d",
                                           "conv2d",
                                           "conv3d",
                                           "_slow_conv2d_forward",
                                           "_conv_depthwise2d",
                                           "conv_depthwise3d",
                                           "slow_conv3d_forward",
                                           "cudnn_convolution_relu",
                                           "cudnn_convolution_add_relu",
                                           "_nnpack_spatial_convolution",
                                           NULL};
    static const char *const conv_transposed[] = {"cudnn_convolution_transpose",
                                                  "conv_transpose1d",
                                                  "conv_transpose2d",
                                                  "conv_transpose3d",
                                                  "slow_conv_transpose2d",
                                                  "slow_conv_transpose3d",
                                                  NULL};
    static const char *const conv_bwd[] = {"convolution_backward",
                                           "convolution_backward_overrideable", NULL};
    static const char *const attn_bhle[] = {"_scaled_dot_product_flash_attention",
                                            "_scaled_dot_product_efficient_attention",
                                            "_scaled_dot_product_cudnn_attention",
                                            "scaled_dot_product_attention",
                                            "_cudnn_attention_forward",
                                            NULL};
    static const char *const attn_blhe[] = {"_flash_attention_forward",
                                            "_efficient_attention_forward", NULL};

    memset(m, 0, sizeof *m);
    for (int p = 0; p < KERNELS_PARTS; p++)
        m->flops[p] = m->bytes[p] = -1;
    m->gemm_mnk[0] = m->gemm_mnk[1] = m->gemm_mnk[2] = -1;
    params_shapes(m, s);

    if (strcmp(op, "mm") == 0 || strcmp(op, "bmm") == 0 || strcmp(op, "matmul") == 0 ||
        strcmp(op, "_scaled_mm") == 0 || strcmp(op, "mv") == 0 || strcmp(op, "dot") == 0)
        model_matmul(m, s, 0, 1, 0, e);
    else if (strcmp(op, "addmm") == 0 || strcmp(op, "_addmm_activation") == 0 ||
             strcmp(op, "baddbmm") == 0 || strcmp(op, "addmv") == 0 || strcmp(op, "addbmm") == 0)
        model_matmul(m, s, 1, 2, elems(s, 0), e);
    else if (strcmp(op, "linear") == 0)
        model_linear(m, s, e);
    else if (op_is(op, attn_bhle))
        model_attention(m, s, 0, 1, 0, e);
    else if (op_is(op, attn_blhe))
        model_attention(m, s, 0, 0, 0, e);
    else if (strcmp(op, "_scaled_dot_product_flash_attention_backward") == 0 ||
             strcmp(op, "_scaled_dot_product_efficient_attention_backward") == 0 ||
             strcmp(op, "_scaled_dot_product_cudnn_attention_backward") == 0 ||
             strcmp(op, "_cudnn_attention_backward") == 0)
        model_attention(m, s, 1, 1, 1, e);
    else if (strcmp(op, "_flash_attention_backward") == 0 ||
             strcmp(op, "_efficient_attention_backward") == 0)
        model_attention(m, s, 1, 0, 1, e);
    else if (op_is(op, conv_fwd))
        model_conv(m, s, 0, conv_output, e);
    else if (op_is(op, conv_transposed))
        model_conv(m, s, 1, conv_output, e);
    else if (op_is(op, conv_bwd))
        model_conv_backward(m, s, e);
    else if (strcmp(op, "native_dropout") == 0 || strcmp(op, "native_dropout_backward") == 0)
        model_dropout(m, s, e);
    else if (strcmp(op, "embedding") == 0)
        model_embedding(m, s, 0, e);
    else if (strcmp(op, "embedding_dense_backward") == 0)
        model_embedding(m, s, 1, e);
    else if (strcmp(op, "nll_loss_forward") == 0 || strcmp(op, "nll_loss") == 0)
        model_nll_loss(m, s, 0, e);
    else if (strcmp(op, "nll_loss_backward") == 0)
        model_nll_loss(m, s, 1, e);
    else if (strcmp(op, "mse_loss_backward") == 0)
        model_mse_backward(m, s, e);
    else
        model_pointwise(m, op, s, e);
}
