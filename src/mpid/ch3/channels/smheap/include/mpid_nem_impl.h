/*
 * ch3:smheap -- compatibility header for ch3:nemesis's shared-memory window code.
 *
 * src/mpid/ch3/channels/nemesis/src/ch3_win_fns.c is written against nemesis's
 * header of this name but needs only the window plumbing declared in our
 * mpidi_ch3_impl.h and one question to the network module: whether active-message
 * flushes arrive in order.  Our rings deliver each pair's packets in order, so the
 * answer is yes.
 */

#ifndef MPID_NEM_IMPL_H_INCLUDED
#define MPID_NEM_IMPL_H_INCLUDED

#include "mpidi_ch3_impl.h"

typedef struct MPIDI_CH3I_Smheap_netmod_ordering {
    int (*get_ordering) (int *ordering);
} MPIDI_CH3I_Smheap_netmod_ordering_t;

extern const MPIDI_CH3I_Smheap_netmod_ordering_t MPIDI_CH3I_Smheap_ordered_netmod;

#define MPID_nem_netmod_func (&MPIDI_CH3I_Smheap_ordered_netmod)

#endif /* MPID_NEM_IMPL_H_INCLUDED */
