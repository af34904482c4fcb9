/*
 * ch3:smheap -- ch3's packets into a VC, whichever transport carried them: the handler
 * table, and received bytes handed to ch3's handlers and receive requests.
 */

#include "smheap_packet.h"

MPIDI_CH3_PktHandler_Fcn *MPIDI_CH3I_pkt_handlers[MPIDI_CH3I_PKTARRAY_SIZE];

MPL_atomic_int_t MPIDI_CH3I_progress_completion_count = MPL_ATOMIC_INT_T_INITIALIZER(0);

int MPIDI_CH3I_Packet_init(void)
{
    return MPIDI_CH3_PktHandler_Init(MPIDI_CH3I_pkt_handlers, MPIDI_CH3I_PKTARRAY_SIZE);
}

#ifdef MPICH_IS_THREADED
/* A request completed in a threaded process (MPIDI_CH3I_PROGRESS_WAKEUP tests that): a
 * thread of ours may be asleep on the doorbell waiting for exactly that. */
void MPIDI_CH3I_Progress_wakeup(void)
{
    if (smheap_queue.bells)
        MPIDI_CH3I_Smheap_wake(smheap_queue.my_rank);
}
#endif
