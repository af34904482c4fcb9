/*
 * ch3:smheap -- reduction kernels the processor's vector unit runs.
 *
 * MPICH's predefined operations (MPIR_SUM, MPIR_MAX, ...) are plain loops that its -O2
 * build leaves scalar: one element per instruction, where the same loop vectorized for AVX2
 * or AVX-512 runs several at once, much faster (figures: doc/rma.md).  One-sided
 * accumulates done in place and the shared-heap collectives reduce whole vectors in the
 * caller's time, so they use these kernels instead where one exists for the operation and
 * datatype: the same operation element by element, in the same order, so results are bit
 * for bit MPICH's, and compiled once per vector width with the widest the processor has
 * chosen at load time.
 */

#ifndef SMHEAP_REDUCE_H_INCLUDED
#define SMHEAP_REDUCE_H_INCLUDED

#include "mpiimpl.h"

/* Filled by smheap_reduce_init: the vector kernel of each builtin operation and builtin
 * datatype (indexed by their handles' low bits), or NULL where MPICH's function is used. */
extern MPIR_op_function *smheap_reduce_kernels[MPIR_OP_N_BUILTIN][MPIR_DATATYPE_N_BUILTIN];
extern unsigned long long PVAR_COUNTER_smheap_vector_reductions;

void smheap_reduce_init(void);

/* The vector kernel for op on datatype, or NULL. */
static inline MPIR_op_function *smheap_reduce_kernel(MPI_Op op, MPI_Datatype datatype)
{
    if (!HANDLE_IS_BUILTIN(op) || !HANDLE_IS_BUILTIN(datatype) ||
        (op & 0xff) >= MPIR_OP_N_BUILTIN || (datatype & 0xff) >= MPIR_DATATYPE_N_BUILTIN)
        return NULL;
    return smheap_reduce_kernels[op & 0xff][datatype & 0xff];
}

/* The function that applies op to datatype: the vector kernel or MPICH's own (op and
 * datatype already checked to go together). */
static inline MPIR_op_function *smheap_reduce_function(MPI_Op op, MPI_Datatype datatype)
{
    MPIR_op_function *kernel = smheap_reduce_kernel(op, datatype);

    if (kernel == NULL)
        return MPIR_OP_HDL_TO_FN(op);
    PVAR_COUNTER_smheap_vector_reductions++;
    return kernel;
}

/* MPIR_Reduce_local (inout = in op inout, count elements), with the vector kernel where
 * there is one. */
static inline int smheap_reduce_local(const void *in, void *inout, MPI_Aint count,
                                      MPI_Datatype datatype, MPI_Op op)
{
    MPIR_op_function *kernel = smheap_reduce_kernel(op, datatype);

    if (kernel == NULL)
        return MPIR_Reduce_local(in, inout, count, datatype, op);
    PVAR_COUNTER_smheap_vector_reductions++;
    kernel((void *) in, inout, &count, &datatype);
    return MPI_SUCCESS;
}

#endif /* SMHEAP_REDUCE_H_INCLUDED */
