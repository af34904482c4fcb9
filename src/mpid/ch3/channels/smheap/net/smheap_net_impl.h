/*
 * ch3:smheap -- inside net/: the two transports behind smheap_net.h.  smheap_net.c chooses
 * between them per VC; nothing outside net/ includes this header.
 *
 * - sockets (smheap_net_sock.c): ch3's socket utilities over TCP.  Always open: they
 *   reach processes of other jobs (dynamic processes), and every rank of a job when the
 *   job does not use libfabric.
 * - libfabric (smheap_net_ofi.c, smheap_ofi.h): the ranks of our own job on other nodes, when
 *   MPIR_CVAR_CH3_SMHEAP_NET chose it and both ends have the same provider.
 */

#ifndef SMHEAP_NET_IMPL_H_INCLUDED
#define SMHEAP_NET_IMPL_H_INCLUDED

#include "smheap_net.h"

/* ch3 packets that may cross nodes: ch3's own and the channel's partitioned ones (the
 * single-copy packets name heap addresses, which mean nothing on another node). */
static inline int MPIDI_CH3I_Net_packet_travels(int type)
{
    return (type >= 0 && type < MPIDI_CH3_PKT_END_CH3) ||
        type == MPIDI_CH3I_SMHEAP_PKT_PART_INIT || type == MPIDI_CH3I_SMHEAP_PKT_PART_CTS ||
        type == MPIDI_CH3I_SMHEAP_PKT_PART_DATA;
}

/* Sockets: as the functions of smheap_net.h. */
int MPIDI_CH3I_Netsock_init(int in_use);
int MPIDI_CH3I_Netsock_finalize(void);
void MPIDI_CH3I_Netsock_vc_init(MPIDI_VC_t * vc);
int MPIDI_CH3I_Netsock_add_card(int pg_rank, char **card, int *room);
int MPIDI_CH3I_Netsock_iStartMsgv(MPIDI_VC_t * vc, struct iovec *iov, int n_iov,
                                  MPIR_Request ** sreq_ptr);
int MPIDI_CH3I_Netsock_iSendv(MPIDI_VC_t * vc, MPIR_Request * sreq, struct iovec *iov,
                              int n_iov);
void MPIDI_CH3I_Netsock_adopt(MPIDI_VC_t * vc);
int MPIDI_CH3I_Netsock_connect_to_root(const char *port_name, MPIDI_VC_t ** new_vc);
int MPIDI_CH3I_Netsock_terminate(MPIDI_VC_t * vc);
int MPIDI_CH3I_Netsock_poll(int *made_progress);
int MPIDI_CH3I_Netsock_reading_data(void);
int MPIDI_CH3I_Netsock_poll_listener(void);
int MPIDI_CH3I_Netsock_sleep(int timeout_ms, int *made_progress);
void MPIDI_CH3I_Netsock_listen_for_wakeups(smheap_doorbell_t * bell);
int MPIDI_CH3I_Netsock_in_use(void);    /* a socket connection is (or will be) in use */
int MPIDI_CH3I_Netsock_wake_fd(void);   /* the datagram socket our doorbells write to */

/* libfabric.  _init opens the endpoint if a provider suits (required: fail, naming why,
 * when none does); _open says whether it did.  _claim: vc is a rank of our job whose card
 * names the same provider: it goes over libfabric from now on (1), else 0. */
int MPIDI_CH3I_Netofi_init(int required);
int MPIDI_CH3I_Netofi_open(void);
int MPIDI_CH3I_Netofi_finalize(void);
int MPIDI_CH3I_Netofi_add_card(char **card, int *room);
int MPIDI_CH3I_Netofi_claim(MPIDI_VC_t * vc);
int MPIDI_CH3I_Netofi_iStartMsgv(MPIDI_VC_t * vc, struct iovec *iov, int n_iov,
                                 MPIR_Request ** sreq_ptr);
int MPIDI_CH3I_Netofi_iSendv(MPIDI_VC_t * vc, MPIR_Request * sreq, struct iovec *iov,
                             int n_iov);
int MPIDI_CH3I_Netofi_terminate(MPIDI_VC_t * vc);
int MPIDI_CH3I_Netofi_poll(int *made_progress);
int MPIDI_CH3I_Netofi_look_for_deaths(void);    /* the launcher signalled a death */
int MPIDI_CH3I_Netofi_reading_data(void);
/* Sleep until a completion comes or the wake socket (wake_fd) gets a byte; 0 if it cannot
 * wait on the provider (then the caller sleeps in short slices). */
int MPIDI_CH3I_Netofi_sleep(int wake_fd, int timeout_ms, int *made_progress, int *slept);

#endif /* SMHEAP_NET_IMPL_H_INCLUDED */
