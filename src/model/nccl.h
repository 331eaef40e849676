/* What the nccl_sum report knows of NCCL (nccl_collectives.c): its collectives (the NVTX range
 * NCCL names each call by, the kernel names it launches, nccl-tests' size and bus-bandwidth
 * conventions) and the parsing of its kernel names. nccl_sum.c uses them through SQL
 * functions; lantern analyze's timeline (src/analyze/timeline_ranks.c) and the unit tests call
 * them directly. */
#ifndef LANTERN_MODEL_NCCL_H
#define LANTERN_MODEL_NCCL_H

#include <sqlite3.h>
#include <stddef.h>

/* How nccl-tests turns algorithm bandwidth into bus bandwidth (its doc/PERFORMANCE.md), for n
 * ranks: the share of the data each rank's link carries. */
enum nccl_busbw {
    NCCL_BUSBW_UNKNOWN,          /* no formula (a kernel that ran several collectives at once) */
    NCCL_BUSBW_ALLREDUCE,        /* 2(n-1)/n */
    NCCL_BUSBW_N_MINUS_1_OVER_N, /* (n-1)/n: AllGather, ReduceScatter, AllToAll */
    NCCL_BUSBW_ONE,              /* 1: Broadcast, Reduce, Send/Recv */
};

struct nccl_collective {
    const char *name;   /* the report's and nccl-tests' name: "AllReduce" */
    const char *api;    /* the NVTX range NCCL names a call by: "ncclAllReduce"; NULL: none */
    const char *kernel; /* the collective of the kernels its calls run in ("SendRecv" for Send) */
    enum nccl_busbw busbw;
    /* NCCL's payload gives one rank's part ("Message size [bytes]" of ncclAllGather is the
     * send count's); nccl-tests' size is the whole: n times it. */
    int size_is_per_rank;
};

/* The collectives, ended by a row of NULLs. */
extern const struct nccl_collective nccl_collectives[];

/* A collective by its name (NULL: none). */
const struct nccl_collective *nccl_collective_named(const char *name);

/* Bus bandwidth over algorithm bandwidth for n ranks; < 0 when unknown (no formula, n < 1). */
double nccl_busbw_factor(const struct nccl_collective *c, long n);

/* Whether a kernel of this collective (nccl_kernel.collective) can run calls of c: its own
 * collective, or "Generic", NCCL's kernel for several collectives at once. */
int nccl_kernel_runs(const struct nccl_collective *c, const char *kernel_collective);

/* An NCCL kernel's name, parsed. Fields are "" when the name does not say. */
struct nccl_kernel {
    char collective[32]; /* a collective's name, "SendRecv" or "Generic" */
    char algo[40];       /* RING, TREE, NVLS, COLLNET_DIRECT, ... (symmetric kernels: theirs) */
    char proto[16];      /* LL, LL128, SIMPLE */
    char redop[16];      /* Sum, Prod, MinMax, ... (symmetric kernels: sum, avg) */
    char type[24];       /* f32, bf16, ... (NCCL < 2.19: float, __nv_bfloat16, ...) */
};

/* Parses an NCCL kernel's name, plain, demangled ("ncclDevKernel_AllReduce_Sum_f32_RING_LL(...)",
 * "void ncclKernel_...(...)") or mangled ("_Z39ncclDevKernel_..."): ncclDevKernel_* (NCCL
 * 2.19+), ncclSymkDevKernel_* (symmetric kernels, 2.27+), ncclKernel_* (2.12-2.18). Returns 1
 * and fills *k for an NCCL kernel, 0 for any other name. The one definition of which kernels
 * are NCCL's: nccl_sum and the cross-rank rules of lantern analyze both ask it.
 * NCCL launches the kernel specialised for its call's collective and type with the RING or
 * TREE algorithm and the LL protocol (its generate.py's best_kernel): another algorithm,
 * protocol or reduction runs inside that kernel. So the name says the collective and the type;
 * the algorithm and protocol are the kernel's, not always those the call used. */
int nccl_parse_kernel(const char *name, struct nccl_kernel *k);

/* An SQL LIKE pattern that every name nccl_parse_kernel accepts matches (each of its prefixes
 * has "nccl", then "Kernel"): a cheap filter over names before it parses each,
 * `name LIKE " NCCL_KERNEL_LIKE "`. */
#define NCCL_KERNEL_LIKE "'%nccl%Kernel%'"

/* Registers on db: lantern_nccl_kernel(name, field) (field "collective", "algo", "proto",
 * "redop", "type" or "spec": "RING_LL f32"; NULL for a name that is no NCCL kernel),
 * lantern_nccl_busbw(collective, n), lantern_nccl_size(collective, bytes, n) (nccl-tests'
 * size of a call whose payload gave bytes) and lantern_nccl_runs(collective, kernel
 * collective) (nccl_kernel_runs). 0, or a negative SQLite code. */
int nccl_sql_register(sqlite3 *db);

#endif
