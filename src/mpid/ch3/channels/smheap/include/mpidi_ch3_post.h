/*
 * ch3:smheap -- definitions ch3 needs once its own types are complete.
 */

#ifndef MPIDI_CH3_POST_H_INCLUDED
#define MPIDI_CH3_POST_H_INCLUDED

#define MPIDI_CH3_Progress_start(progress_state_) \
    ((progress_state_)->ch.completion_count =     \
     MPL_atomic_relaxed_load_int(&MPIDI_CH3I_progress_completion_count))
#define MPIDI_CH3_Progress_end(progress_state_)

int MPIDI_CH3I_Progress(MPID_Progress_state * progress_state, int blocking);
#define MPIDI_CH3_Progress_test() MPIDI_CH3I_Progress(NULL, FALSE)
#define MPIDI_CH3_Progress_wait(progress_state) MPIDI_CH3I_Progress(progress_state, TRUE)
#define MPIDI_CH3_Progress_poke() MPIDI_CH3I_Progress(NULL, FALSE)

/* Partitioned communication (part/smheap_part.c). */
int MPIDI_CH3_Part_start(MPIR_Request * req);
void MPIDI_CH3_Part_request_free_hook(MPIR_Request * req);

/* One-sided operations done in place (maint/patches/0010): a contiguous predefined type
 * on both sides is one bulk copy of the channel, and predefined operations on predefined
 * types use the vector kernels. */
#include "smheap_copy.h"
#include "smheap_reduce.h"

static inline int MPIDI_CH3I_Rma_copy(const void *src, MPI_Aint scount, MPI_Datatype stype,
                                      void *dest, MPI_Aint dcount, MPI_Datatype dtype)
{
    MPI_Aint bytes;

    /* builtin datatypes are contiguous, their size in their handle */
    if (!HANDLE_IS_BUILTIN(stype) || !HANDLE_IS_BUILTIN(dtype))
        return FALSE;
    bytes = scount * MPIR_Datatype_get_basic_size(stype);
    if (bytes <= 0 || bytes != dcount * MPIR_Datatype_get_basic_size(dtype))
        return FALSE;   /* ch3's copy reports a mismatch */
    smheap_copy_solo(dest, src, bytes);
    return TRUE;
}

#define MPIDI_CH3_RMA_SHM_COPY(src, scount, stype, dest, dcount, dtype) \
    MPIDI_CH3I_Rma_copy(src, scount, stype, dest, dcount, dtype)
#define MPIDI_CH3_RMA_OP_FUNCTION(op, datatype) smheap_reduce_function(op, datatype)

#endif /* MPIDI_CH3_POST_H_INCLUDED */
