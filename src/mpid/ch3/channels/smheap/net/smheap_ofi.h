/*
 * ch3:smheap -- inside net/: the libfabric transport's own header, for its five files:
 *
 *   smheap_net_ofi.c      the entry points smheap_net.c calls (smheap_net_impl.h): set-up,
 *                         progress (completions, retries, sleeping), lost peers, tear-down;
 *   smheap_ofi_recv.c     messages received: handled in the order sent, READs served by
 *                         RDMA reads into the receive request;
 *   smheap_ofi_send.c     messages sent: ch3's iovs as DATA or READ messages, queued per
 *                         peer, ACKs and PINGs ahead of them;
 *   smheap_ofi_fabric.c   the provider, the endpoint, registrations, buffers, addresses;
 *   smheap_ofi_lib.c      libfabric itself, loaded at MPI_Init by jobs that span nodes.
 *
 * Each file calls only those below it.  The protocol (smheap_net_ofi.c says why):
 *   DATA: bytes of ch3's stream (a packet header and its data, or more data of the message
 *         being received), as a ring cell carries them; small messages are copied into a
 *         send buffer, so the request completes at once;
 *   READ: a packet header (or none: more of the message in progress) and where the data
 *         lies in the sender's memory; the receiver reads it into the request's iov;
 *   ACK:  the receiver has read what a READ named: the sender may complete or reload its
 *         request.  Nothing else goes to that peer until the ACK, so ch3's order holds
 *         (and a reload may reuse its buffer), and the receiver holds back what arrives
 *         from that peer while it reads;
 *   PING: nothing; sent by a sleeping rank to learn whether its peers live.
 * A sequence number per pair puts the messages back in the order they were sent: a
 * provider may complete a large message after the small ones behind it.
 */

#ifndef SMHEAP_OFI_H_INCLUDED
#define SMHEAP_OFI_H_INCLUDED

#include "smheap_net_impl.h"
#include "smheap.h"
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

/* libfabric's own memory (its providers' buffer pools and connections, about 100 MiB with
 * tcp;ofi_rxm) comes from glibc: it is not the application's and would only take room in
 * the shared heap.  Around every call that may allocate. */
#define PRIVATELY(stmt_) do { smheap_private_begin(); stmt_; smheap_private_end(); } while (0)
#define BUF_BYTES (64 * 1024)           /* a message's bytes: largest DATA, any READ */
#define NAME_MAX_BYTES 256              /* an endpoint's address */

enum msg_kind { MSG_DATA = 1, MSG_READ, MSG_ACK, MSG_PING };
enum op_kind { OP_SEND = 1, OP_RECV, OP_READ };

typedef struct hdr {
    uint32_t src;               /* the sender's rank in our job */
    uint16_t kind;              /* enum msg_kind */
    uint16_t pad;
    uint32_t seq;               /* the sender's count of messages to us */
    uint32_t pad2;
    uint64_t cookie;            /* READ and its ACK: the sender's request */
} hdr_t;

/* Where a READ's data lies: nseg of these follow the packet header (if any). */
typedef struct seg {
    uint64_t addr;              /* as the provider wants it: virtual, or offset in the MR */
    uint64_t len;
    uint64_t key;
} seg_t;

typedef struct read_desc {
    uint32_t has_pkt;
    uint32_t nseg;
} read_desc_t;

#define MAX_SEGS MPL_IOV_LIMIT

/* A send or receive buffer; fi_context first, as completions return its address. */
typedef struct buf {
    struct fi_context ctx;
    int op;
    struct buf *next;
    MPIDI_VC_t *vc;
    size_t len;
    /* a READ's request and its data's registrations outside the heap, the peer's to keep
     * from the READ's posting to its ACK */
    MPIR_Request *sreq;
    struct fid_mr *mrs[MAX_SEGS];
    int n_mrs;
    char data[BUF_BYTES] __attribute__ ((aligned(64)));
} buf_t;

/* An RDMA read in flight. */
typedef struct read_op {
    struct fi_context ctx;
    int op;
    struct read_op *next;
    MPIDI_VC_t *vc;
    struct fid_mr *mr;          /* a registration of the destination, if it needed one */
} read_op_t;

/* A completion's context is one of the two: its kind is found at the same place in both. */
MPL_static_assert(offsetof(buf_t, op) == offsetof(read_op_t, op) &&
                  offsetof(buf_t, op) == sizeof(struct fi_context), "op after fi_context");

/* libfabric's side of a VC. */
typedef struct smheap_ofi_peer {
    fi_addr_t addr;
    int rank;
    int failed;
    int closed;                 /* ch3's close protocol with it is over */
    /* sending: messages not handed to the provider yet, in order */
    buf_t *out_head, *out_tail;
    buf_t *ctl_head;            /* ACKs, which go before ch3's messages */
    int out_stalled;            /* the provider said EAGAIN: on stalled_peers */
    struct smheap_ofi_peer *next_stalled;
    uint32_t send_seq;
    int awaiting_ack;           /* a READ went: nothing more until its ACK */
    MPIR_Request *read_sreq;    /* its request and registrations */
    struct fid_mr *read_mrs[MAX_SEGS];
    int n_read_mrs;
    /* receiving: a READ being served */
    int reading;
    uint64_t read_cookie;
    seg_t segs[MAX_SEGS];
    int nseg, seg_i;
    uint64_t seg_off;
    int reads_out;
    int reads_stalled;          /* a read was refused with EAGAIN: retried by poll */
    /* received, not handled yet: out of order (a provider completes a large message after
     * the small ones behind it), or behind the READ being served; sorted by seq */
    buf_t *pending;
    uint32_t recv_seq;          /* the next to handle */
} smheap_ofi_peer_t;

/* Memory holding buffers, with its registration if the provider wants one (FI_MR_LOCAL)
 * and the memory lies outside the heap. */
typedef struct smheap_ofi_slab {
    void *base;
    size_t len;
    struct fid_mr *mr;
} smheap_ofi_slab_t;

/* The endpoint and what goes with it: one per process. */
typedef struct smheap_ofi {
    int open;
    struct fi_info *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_av *av;
    struct fid_cq *cq;
    struct fid_ep *ep;
    int wait_fd;                /* the CQ's, or -1 */
    char name[NAME_MAX_BYTES];
    size_t namelen;
    int mr_local, mr_virt, mr_endpoint;     /* what the provider wants of registrations */
    int per_message;            /* heap data registered per message, not the heap once */
    uint64_t next_key;
    size_t max_msg;
    size_t data_max;            /* the largest DATA message: what the provider sends eagerly */
    size_t copy_max;            /* larger data goes by READ */
    struct fid_mr *heap_mr;     /* the node's shared heap */
    uintptr_t heap_base;
    size_t heap_size;
    buf_t *free_bufs;
    smheap_ofi_slab_t *slabs;   /* the memory of the send and receive buffers */
    int nslabs;
    buf_t *recv_bufs;
    read_op_t *free_ops;
    smheap_ofi_peer_t *stalled_peers;
    int stalled_reads;
    int reading_peers;
    int sends_out;              /* send buffers with the provider */
    int polling;
} smheap_ofi_t;

extern smheap_ofi_t smheap_ofi;

/* smheap_ofi_lib.c: the functions of libfabric's that its objects do not reach (the rest
 * of its API is inline), from the library it loads at the first call */
typedef struct smheap_ofi_lib {
    int (*getinfo) (uint32_t version, const char *node, const char *service, uint64_t flags,
                    const struct fi_info * hints, struct fi_info ** info);
    void (*freeinfo) (struct fi_info * info);
    struct fi_info *(*dupinfo) (const struct fi_info * info);
    int (*fabric) (struct fi_fabric_attr * attr, struct fid_fabric ** fabric, void *context);
    const char *(*strerror) (int errnum);
    uint32_t(*version) (void);
} smheap_ofi_lib_t;

extern smheap_ofi_lib_t smheap_ofi_lib;
int smheap_ofi_lib_load(char *why, size_t why_len);
int smheap_ofi_device_present(void);

/* smheap_ofi_fabric.c */
int smheap_ofi_find_provider(int required, struct fi_info **info, char *why, size_t why_len);
int smheap_ofi_open(struct fi_info *info);
void smheap_ofi_close(void);
int smheap_ofi_mr_register(void *base, size_t len, uint64_t access, struct fid_mr **mr);
int smheap_ofi_in_heap(const void *p, size_t len);
uint64_t smheap_ofi_remote_addr(const void *p, uintptr_t base);
int smheap_ofi_local_desc(void *p, size_t len, uint64_t access, void **desc,
                          struct fid_mr **mr);
buf_t *smheap_ofi_get_buf(void);
void smheap_ofi_put_buf(buf_t * b);
void *smheap_ofi_buf_desc(buf_t * b);
int smheap_ofi_post_recv(buf_t * b);
read_op_t *smheap_ofi_get_op(void);
void smheap_ofi_put_op(read_op_t * op);

/* smheap_ofi_send.c */
int smheap_ofi_peer_may_have_left(MPIDI_VC_t * vc);
int smheap_ofi_peer_lost(MPIDI_VC_t * vc, int ret);
int smheap_ofi_peer_lost_as(MPIDI_VC_t * vc, const char *how);
buf_t *smheap_ofi_new_msg(MPIDI_VC_t * vc, int kind, uint64_t cookie);
int smheap_ofi_flush_out(MPIDI_VC_t * vc);
int smheap_ofi_send_control(MPIDI_VC_t * vc, buf_t * b);
int smheap_ofi_send_iov(MPIDI_VC_t * vc, MPIR_Request * sreq, struct iovec *iov, int n_iov,
                        MPIR_Request ** made);
int smheap_ofi_handle_ack(MPIDI_VC_t * vc, uint64_t cookie);

/* smheap_ofi_recv.c */
int smheap_ofi_received(buf_t * b, size_t len);
int smheap_ofi_read_more(MPIDI_VC_t * vc);

#endif /* SMHEAP_OFI_H_INCLUDED */
