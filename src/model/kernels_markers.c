/* Parsing of the NVTX ranges PyTorch pushes under torch.autograd.profiler.emit_nvtx().
 * Their format comes from torch/csrc/profiler/util.cpp getNvtxStr(): the op name, then
 * ", seq = N" (autograd sequence number, when >= 0), ", op_id = N", ", sizes = [[..], ..]"
 * (with record_shapes=True) and ", input_op_ids = [(id,nr), ..]", each optional, in that order. */
#include "model/kernels_model.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *const field_seq = ", seq = ";
static const char *const field_op_id = ", op_id = ";
static const char *const field_sizes = ", sizes = ";
static const char *const field_input_op_ids = ", input_op_ids = ";

static int starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* End of a bracketed list starting at s ('['), or NULL when unbalanced. */
static const char *skip_brackets(const char *s)
{
    int depth = 0;
    for (; *s; s++) {
        if (*s == '[')
            depth++;
        else if (*s == ']' && --depth == 0)
            return s + 1;
    }
    return NULL;
}

/* The first emit_nvtx field in text, or the end of text. */
static const char *first_field(const char *text)
{
    const char *fields[] = {field_seq, field_op_id, field_sizes, field_input_op_ids};
    const char *first = text + strlen(text);
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        const char *at = strstr(text, fields[i]);
        if (at && at < first)
            first = at;
    }
    return first;
}

/* Parses the fields after the name; stops at the first unrecognised text. Returns whether
 * at least one field was found. */
static int parse_fields(const char *s, struct kernels_marker *out)
{
    int found = 0;
    for (;;) {
        char *end;
        if (starts_with(s, field_seq)) {
            out->seq = strtoll(s + strlen(field_seq), &end, 10);
        } else if (starts_with(s, field_op_id)) {
            out->op_id = strtoll(s + strlen(field_op_id), &end, 10);
        } else if (starts_with(s, field_sizes) || starts_with(s, field_input_op_ids)) {
            const char *list = strchr(s + 2, '[');
            const char *list_end = list ? skip_brackets(list) : NULL;
            if (!list_end)
                return found;
            if (starts_with(s, field_sizes)) {
                out->sizes = list;
                out->sizes_len = (size_t)(list_end - list);
            }
            end = (char *)list_end;
        } else {
            return found;
        }
        found = 1;
        s = end;
    }
}

/* "AddmmBackward0", "MulBackward1", "CudnnConvolutionBackward": autograd node names. */
static int is_backward_node_name(const char *name, size_t len)
{
    while (len > 0 && isdigit((unsigned char)name[len - 1]))
        len--;
    const size_t suffix = strlen("Backward");
    return len > suffix && memcmp(name + len - suffix, "Backward", suffix) == 0;
}

/* Operator namespaces PyTorch uses; a plain name in one of them is an op even without fields
 * (emit_nvtx omits ", seq" for ops outside autograd, e.g. in no_grad or inference). */
static int is_op_namespace(const char *name)
{
    static const char *const namespaces[] = {
        "aten::", "prim::",     "torchvision::", "c10d::", "_c10d_functional::",
        "cuda::", "quantized::"};
    for (size_t i = 0; i < sizeof namespaces / sizeof namespaces[0]; i++)
        if (starts_with(name, namespaces[i]))
            return 1;
    return 0;
}

void kernels_marker_parse(const char *text, struct kernels_marker *out)
{
    static const char engine_prefix[] = "autograd::engine::evaluate_function: ";
    memset(out, 0, sizeof *out);
    out->seq = -1;
    out->op_id = -1;
    out->name = text;
    out->name_len = strlen(text);
    if (starts_with(text, engine_prefix)) { /* newer PyTorch adds ", op_id = N" */
        out->kind = KERNELS_RANGE_ENGINE;
        out->name = text + strlen(engine_prefix);
        out->name_len = (size_t)(first_field(out->name) - out->name);
        parse_fields(out->name + out->name_len, out);
        return;
    }
    if (starts_with(text, "Optimizer.")) {
        out->kind = KERNELS_RANGE_OPTIMIZER;
        return;
    }
    const char *fields = first_field(text);
    out->name_len = (size_t)(fields - text);
    int has_fields = parse_fields(fields, out);
    if (has_fields && is_backward_node_name(text, out->name_len))
        out->kind = KERNELS_RANGE_BACKWARD;
    else if (starts_with(text, "torch::autograd::")) /* AccumulateGrad and friends */
        out->kind = KERNELS_RANGE_BACKWARD;
    else if (has_fields || is_op_namespace(text))
        out->kind = KERNELS_RANGE_OP;
    else
        out->kind = KERNELS_RANGE_USER;
    if (out->kind == KERNELS_RANGE_USER && starts_with(text, "layer:")) {
        /* PyProf's convention for layer ranges: "layer:conv1" */
        out->name += strlen("layer:");
        out->name_len -= strlen("layer:");
    }
}

static const char *skip_spaces(const char *s, const char *end)
{
    while (s < end && (*s == ' ' || *s == ','))
        s++;
    return s;
}

/* One "[64, 128]" shape at *s; advances *s past it. */
static int parse_shape(const char **s, const char *end, int *ndims, int64_t *dims)
{
    const char *p = *s;
    if (p >= end || *p != '[')
        return -EINVAL;
    p++;
    *ndims = 0;
    for (;;) {
        p = skip_spaces(p, end);
        if (p >= end)
            return -EINVAL;
        if (*p == ']')
            break;
        if (*p == '[') /* a nested list (flattened tensor lists): not a plain shape */
            return -EINVAL;
        if (*ndims == KERNELS_MAX_DIMS)
            return -EINVAL;
        char *num_end;
        long long v = strtoll(p, &num_end, 10);
        if (num_end == p || num_end > end)
            return -EINVAL;
        dims[(*ndims)++] = v;
        p = num_end;
    }
    *s = p + 1;
    return 0;
}

int kernels_shapes_parse(const char *text, size_t len, struct kernels_shapes *out)
{
    const char *s = text, *end = text + len;
    out->count = 0;
    if (len < 2 || *s != '[')
        return -EINVAL;
    s++;
    for (;;) {
        s = skip_spaces(s, end);
        if (s >= end)
            return -EINVAL;
        if (*s == ']')
            return 0;
        if (out->count == KERNELS_MAX_TENSORS)
            return -EINVAL;
        int i = out->count;
        if (parse_shape(&s, end, &out->ndims[i], out->dims[i]) < 0)
            return -EINVAL;
        out->count++;
    }
}
