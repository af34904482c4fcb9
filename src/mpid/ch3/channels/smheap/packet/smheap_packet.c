/*
 * ch3:smheap -- ch3's packets into a VC, whichever transport carried them: the handler
 * table, and received bytes handed to ch3's handlers and receive requests; and what every
 * transport's wait needs (waking a sleeping thread, releasing MPICH's global lock).
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

/* MPICH's global lock may be held recursively; release it for the duration of fn(arg), as
 * MPIDU_Thread_yield does around its yield, so the application's other threads can use MPI
 * meanwhile (and ring us). */
int MPIDI_CH3I_Without_global_lock(int (*fn) (void *), void *arg)
{
#if defined(MPICH_IS_THREADED) && MPICH_THREAD_GRANULARITY == MPICH_THREAD_GRANULARITY__GLOBAL
    if (MPIR_ThreadInfo.isThreaded) {
        MPID_Thread_mutex_t *m = &MPIR_THREAD_GLOBAL_ALLFUNC_MUTEX;
        int count = m->count, lock_err = 0, ret;
        MPL_thread_id_t owner = m->owner;

        m->count = 0;
        m->owner = 0;
        MPIDU_Thread_mutex_unlock(m, &lock_err);
        MPIR_Assert(lock_err == 0);
        ret = fn(arg);
        MPIDU_Thread_mutex_lock(m, &lock_err, MPL_THREAD_PRIO_LOW);
        MPIR_Assert(lock_err == 0 && m->count == 0);
        m->count = count;
        m->owner = owner;
        return ret;
    }
#endif
    return fn(arg);
}
