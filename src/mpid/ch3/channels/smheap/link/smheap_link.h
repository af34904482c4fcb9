/*
 * ch3:smheap -- links: ch3 packets to and from processes of other jobs on this node
 * (spawned, connected), through memfd segments of rings and doorbells handed over a UNIX
 * socket; all that the rest of the channel may use of link/.  Their processes on other
 * nodes are reached through net/.
 */

#ifndef SMHEAP_LINK_H_INCLUDED
#define SMHEAP_LINK_H_INCLUDED

#include "mpidimpl.h"
#include "smheap_node.h"        /* doorbells */

int MPIDI_CH3I_Link_init(void);
int MPIDI_CH3I_Link_add_card(char **card, int *room);
int MPIDI_CH3I_Link_finalize(void);
int MPIDI_CH3I_Link_reaches(const char *card);
int MPIDI_CH3I_Link_open_outbox(MPIDI_VC_t * vc);
int MPIDI_CH3I_Link_poll(int *made_progress);
int MPIDI_CH3I_Link_poll_listener(int now, int *looked);
void MPIDI_CH3I_Link_group_added(void);
void MPIDI_CH3I_Link_retire(MPIDI_VC_t * vc);
void MPIDI_CH3I_Link_reap(void);
int MPIDI_CH3I_Link_bells(smheap_doorbell_t ** bells, int max);
extern int MPIDI_CH3I_Link_active;      /* links exist or may come: poll for them */
extern int MPIDI_CH3I_Link_sleepers;    /* threads asleep, maybe on link doorbells */

#endif /* SMHEAP_LINK_H_INCLUDED */
