/*
 * ch3:smheap -- between nodes: ch3 packets to and from processes on other nodes (ranks of
 * this job there, or processes of another job), all that the rest of the channel may use
 * of net/.  The ch3 layer sends through it and its progress engine polls it; received
 * packets go to ch3 through packet/.  Two transports behind these functions: ch3's socket
 * utilities over TCP (smheap_net_sock.c), and libfabric (smheap_net_ofi.c and the
 * smheap_ofi_*.c files below it), chosen by MPIR_CVAR_CH3_SMHEAP_NET (smheap_net.c).
 */

#ifndef SMHEAP_NET_H_INCLUDED
#define SMHEAP_NET_H_INCLUDED

#include "mpidimpl.h"
#include "smheap_node.h"        /* doorbells */

/* Set-up and tear-down; spans_nodes: this job has ranks on other nodes. */
int MPIDI_CH3I_Net_init(int spans_nodes);
int MPIDI_CH3I_Net_finalize(void);
/* A new VC: not connected. */
void MPIDI_CH3I_Net_vc_init(MPIDI_VC_t * vc);
/* Adds how to reach this process from another node to its business card. */
int MPIDI_CH3I_Net_add_card(int pg_rank, char **card, int *room);

/* Sending, as MPIDI_CH3_iStartMsgv and MPIDI_CH3_iSendv. */
int MPIDI_CH3I_Net_iStartMsgv(MPIDI_VC_t * vc, struct iovec *iov, int n_iov,
                              MPIR_Request ** sreq_ptr);
int MPIDI_CH3I_Net_iSendv(MPIDI_VC_t * vc, MPIR_Request * sreq, struct iovec *iov, int n_iov);

/* Connections: a VC of another job's process found to be remote, a port on another node,
 * and the close of a VC. */
void MPIDI_CH3I_Net_adopt(MPIDI_VC_t * vc);
int MPIDI_CH3I_Net_connect_to_root(const char *port_name, MPIDI_VC_t ** new_vc);
int MPIDI_CH3I_Net_terminate(MPIDI_VC_t * vc);

/* For the progress engine: poll, look for new connections, and sleep until a packet comes
 * or one of this node's peers rings `bell` (named to the sockets by listen_for_wakeups). */
int MPIDI_CH3I_Net_poll(int *made_progress);
int MPIDI_CH3I_Net_reading_data(void);  /* a message's data is partly read */
int MPIDI_CH3I_Net_poll_listener(void);
int MPIDI_CH3I_Net_sleep(int timeout_ms, int *made_progress);
void MPIDI_CH3I_Net_listen_for_wakeups(smheap_doorbell_t * bell);
/* 1 if the ranks of our job on other nodes are reached over libfabric (for MPI_T). */
size_t MPIDI_CH3I_Net_uses_ofi(void);
extern int MPIDI_CH3I_Net_active;       /* in use (the job spans nodes, or another job's
                                         * process is remote): poll it */

#endif /* SMHEAP_NET_H_INCLUDED */
