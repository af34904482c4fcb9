/*
 * ch3:smheap -- partitioned requests with work in progress: the list the progress hook
 * walks, and the end of a round.
 */

#include "smheap_part_impl.h"

smheap_part_t *MPIDI_CH3I_Part_active;
int MPIDI_CH3I_Part_hook_id = -1;

int MPIDI_CH3I_Part_is_self(MPIDI_VC_t * vc)
{
    return vc->pg == MPIDI_Process.my_pg && vc->pg_rank == MPIDI_Process.my_pg_rank;
}

void MPIDI_CH3I_Part_activate(smheap_part_t * p)
{
    if (MPIDI_CH3I_Part_active == NULL)
        MPIR_Progress_hook_activate(MPIDI_CH3I_Part_hook_id);
    DL_APPEND_NP(MPIDI_CH3I_Part_active, p, active_next, active_prev);
}

void MPIDI_CH3I_Part_deactivate(smheap_part_t * p)
{
    DL_DELETE_NP(MPIDI_CH3I_Part_active, p, active_next, active_prev);
    p->active_prev = p->active_next = NULL;
    if (MPIDI_CH3I_Part_active == NULL)
        MPIR_Progress_hook_deactivate(MPIDI_CH3I_Part_hook_id);
}

int MPIDI_CH3I_Part_is_active(smheap_part_t * p)
{
    return p->active_prev != NULL;      /* utlist: the head's prev is the tail */
}

/* This round is over: MPI_Wait and MPI_Test see the request complete. */
void MPIDI_CH3I_Part_complete_round(smheap_part_t * p)
{
    if (MPIDI_CH3I_Part_is_active(p))
        MPIDI_CH3I_Part_deactivate(p);
    MPIR_cc_set(&p->req->cc, 0);
    MPIDI_CH3_Progress_signal_completion();
}
