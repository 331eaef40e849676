/* The parts of a demangled kernel name that views show: where the function's name starts
 * (after its return type), and its base name as Nsight Systems shows it, without namespaces,
 * template arguments, ABI tags and parameters (`void at::native::elementwise_kernel<128, 4,
 * ...>(int, ...)` -> `elementwise_kernel`; Numba's `kernels::divide_by[abi:v3][abi:cw51c...](
 * Array<float, 1, C, mutable, aligned>, ...)` -> `divide_by`). */
#ifndef LANTERN_OUTPUT_KERNEL_NAME_H
#define LANTERN_OUTPUT_KERNEL_NAME_H

#include <stddef.h>

/* Start of the function name in a demangled name: after the last space outside template
 * or square brackets that comes before the parameter list ("void f<a b>(int)" -> "f<a b>(int)"). */
const char *kernel_name_start(const char *name);

/* The parameter list's '(' in a name from kernel_name_start (its end when it has none). */
const char *kernel_name_parameters(const char *start);

/* The base name of name into out (at most size bytes, NUL-terminated); the name as given
 * when it has no C++ structure to strip (`volta_sgemm_128x64_nn`, `[CUDA memcpy
 * Host-to-Device]`). Returns out. */
char *kernel_name_base(const char *name, char *out, size_t size);

#endif
