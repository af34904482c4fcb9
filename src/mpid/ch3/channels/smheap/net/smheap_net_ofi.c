/*
 * ch3:smheap -- the ranks of our job on other nodes over libfabric: ch3 packets as
 * messages of a reliable-datagram endpoint, and large data read by the receiver straight
 * from the sender's memory with RDMA.
 *
 * Every rank registers its node's shared heap with the provider once, at MPI_Init, so a
 * message whose data lies in the heap (everything malloc gave) is ready for RDMA as it is:
 * the sender names where the data lies and the receiver reads it into the receive buffer,
 * one read per contiguous piece, with no registration per message.  Data outside the heap
 * (static arrays, stacks, memory from before MPI_Init) is registered for the one message
 * and released when the receiver says it has read it (smheap_net_registrations counts
 * these).
 *
 * Each libfabric message starts with a hdr_t naming the sender's rank and the kind:
 *   DATA: bytes of ch3's stream (a packet header and its data, or more data of the message
 *         being received), as a ring cell carries them; small messages are copied into a
 *         send buffer, so the request completes at once;
 *   READ: a packet header (or none: more of the message in progress) and where the data
 *         lies in the sender's memory; the receiver reads it into the request's iov;
 *   ACK:  the receiver has read what a READ named: the sender may complete or reload its
 *         request.  Nothing else goes to that peer until the ACK, so ch3's order holds
 *         (and a reload may reuse its buffer), and the receiver holds back what arrives
 *         from that peer while it reads.
 * A sequence number per pair puts the messages back in the order they were sent: a
 * provider may complete a large message after the small ones behind it.
 */

#include "smheap_net_impl.h"
#include "smheap_packet.h"
#include "smheap_mpit.h"
#include "smheap.h"
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <poll.h>
#include <signal.h>

#define OFI_API FI_VERSION(1, 10)

/* libfabric's own memory (its providers' buffer pools and connections, about 100 MiB with
 * tcp;ofi_rxm) comes from glibc: it is not the application's and would only take room in
 * the shared heap.  Around every call that may allocate. */
#define PRIVATELY(stmt_) do { smheap_private_begin(); stmt_; smheap_private_end(); } while (0)
#define BUF_BYTES (64 * 1024)           /* a message's bytes: largest DATA, any READ */
#define RECV_BUFS 32                    /* receives kept posted */
#define SEND_BUFS_PER_SLAB 16
#define NAME_MAX_BYTES 256              /* an endpoint's address */
#define CQ_BATCH 16

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

static struct {
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
    int mr_local, mr_virt, mr_prov_key, mr_endpoint;
    uint64_t next_key;
    size_t max_msg;
    struct fid_mr *heap_mr;     /* the node's shared heap */
    uintptr_t heap_base;
    size_t heap_size;
    buf_t *free_bufs;
    struct fid_mr **slab_mrs;   /* registrations of send-buffer slabs (FI_MR_LOCAL) */
    void **slabs;
    int nslabs;
    buf_t *recv_bufs;
    read_op_t *free_ops;
    smheap_ofi_peer_t *stalled_peers;
    int stalled_reads;
    int reading_peers;
    int sends_out;              /* send buffers with the provider */
    int polling;
} ofi = {.wait_fd = -1 };

static int deliver(MPIDI_VC_t * vc);
static int read_more(MPIDI_VC_t * vc);

/* A lost peer: a provider may report nothing until we send to it (rxm over TCP does not),
 * so a rank that only waits for it would wait forever.  Hydra, when it does not end the
 * job itself (-disable-auto-cleanup), sends the other ranks SIGUSR1 and lists the dead in
 * the PMI key ch3 reads, as ch3:nemesis relies on. */
static volatile sig_atomic_t deaths_signalled;
static int deaths_seen;
static struct sigaction sigusr1_before;

static void on_sigusr1(int sig)
{
    deaths_signalled++;
    if (sigusr1_before.sa_handler != SIG_DFL && sigusr1_before.sa_handler != SIG_IGN &&
        !(sigusr1_before.sa_flags & SA_SIGINFO))
        sigusr1_before.sa_handler(sig);
}

static void watch_for_deaths(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_sigusr1;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, &sigusr1_before);
}

/* ------------------------------------------------------------------------------------ */
/* Choosing a provider                                                                  */

/* A provider that carries messages over TCP or UDP in software, or stays on the node. */
static int is_emulation(const char *prov_name)
{
    static const char *const soft[] = { "tcp", "udp", "sockets", "net", "shm" };
    size_t n = strcspn(prov_name, ";");
    int i;

    for (i = 0; i < (int) (sizeof(soft) / sizeof(soft[0])); i++)
        if (strlen(soft[i]) == n && strncmp(prov_name, soft[i], n) == 0)
            return 1;
    return 0;
}

static struct fi_info *make_hints(void)
{
    struct fi_info *hints = fi_allocinfo();

    if (hints == NULL)
        return NULL;
    hints->caps = FI_MSG | FI_RMA | FI_READ | FI_REMOTE_READ;
    hints->mode = FI_CONTEXT;
    hints->ep_attr->type = FI_EP_RDM;
    hints->tx_attr->msg_order = FI_ORDER_SAS;
    hints->rx_attr->msg_order = FI_ORDER_SAS;
    hints->domain_attr->threading = FI_THREAD_DOMAIN;
    hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
        FI_MR_PROV_KEY | FI_MR_ENDPOINT;
    return hints;
}

/* The first provider that suits: any when the user named one (FI_PROVIDER filters the
 * list) or `required`, else one that is not an emulation.  *why: what was found instead. */
static struct fi_info *choose_provider(struct fi_info *list, int required, char *why,
                                       size_t why_len)
{
    const char *named = getenv("FI_PROVIDER");
    struct fi_info *p;
    size_t used;

    snprintf(why, why_len, "only emulations over the kernel's sockets:");
    used = strlen(why);
    for (p = list; p != NULL; p = p->next) {
        const char *prov = p->fabric_attr->prov_name;

        if (strncmp(prov, "shm", 3) == 0)
            continue;   /* on-node only: the heap does that */
        if ((named != NULL && *named != '\0') || required || !is_emulation(prov))
            return p;
        if (strstr(why, prov) == NULL && used + strlen(prov) + 2 < why_len) {
            snprintf(why + used, why_len - used, " %s", prov);
            used = strlen(why);
        }
    }
    if (list == NULL)
        snprintf(why, why_len, "none with reliable datagrams, messages and RDMA read");
    return NULL;
}

/* ------------------------------------------------------------------------------------ */
/* Registration                                                                         */

static int mr_register(void *base, size_t len, uint64_t access, struct fid_mr **mr)
{
    int ret;

    smheap_private_begin();
    ret = fi_mr_reg(ofi.domain, base, len, access, 0, ofi.next_key++, 0, mr, NULL);
    if (ret == 0 && ofi.mr_endpoint) {
        ret = fi_mr_bind(*mr, &ofi.ep->fid, 0);
        if (ret == 0)
            ret = fi_mr_enable(*mr);
        if (ret != 0)
            fi_close(&(*mr)->fid);
    }
    smheap_private_end();
    return ret;
}

/* The address a peer names to read [p, ...) through mr based at base. */
static uint64_t remote_addr(const void *p, uintptr_t base)
{
    return ofi.mr_virt ? (uint64_t) (uintptr_t) p : (uint64_t) ((uintptr_t) p - base);
}

static int in_heap(const void *p, size_t len)
{
    return ofi.heap_mr != NULL && (uintptr_t) p >= ofi.heap_base &&
        (uintptr_t) p + len <= ofi.heap_base + ofi.heap_size;
}

/* The local descriptor for [p, p+len) when the provider wants one (FI_MR_LOCAL): the heap's,
 * or a registration made for the operation (*mr, counted). */
static int local_desc(void *p, size_t len, uint64_t access, void **desc, struct fid_mr **mr)
{
    *desc = NULL;
    *mr = NULL;
    if (!ofi.mr_local)
        return 0;
    if (in_heap(p, len)) {
        *desc = fi_mr_desc(ofi.heap_mr);
        return 0;
    }
    MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_net_registrations, 1);
    if (mr_register(p, len, access, mr) != 0)
        return -1;
    *desc = fi_mr_desc(*mr);
    return 0;
}

/* ------------------------------------------------------------------------------------ */
/* Buffers                                                                              */

static int add_slab(void)
{
    buf_t *slab = MPL_malloc(SEND_BUFS_PER_SLAB * sizeof(buf_t), MPL_MEM_BUFFER);
    void **slabs = MPL_realloc(ofi.slabs, (ofi.nslabs + 1) * sizeof(void *), MPL_MEM_BUFFER);
    struct fid_mr **mrs = MPL_realloc(ofi.slab_mrs, (ofi.nslabs + 1) * sizeof(*mrs),
                                      MPL_MEM_BUFFER);
    int i;

    if (slabs)
        ofi.slabs = slabs;
    if (mrs)
        ofi.slab_mrs = mrs;
    if (slab == NULL || slabs == NULL || mrs == NULL) {
        MPL_free(slab);
        return -1;
    }
    mrs[ofi.nslabs] = NULL;
    if (ofi.mr_local && !in_heap(slab, SEND_BUFS_PER_SLAB * sizeof(buf_t)) &&
        mr_register(slab, SEND_BUFS_PER_SLAB * sizeof(buf_t), FI_SEND | FI_RECV,
                    &mrs[ofi.nslabs]) != 0) {
        MPL_free(slab);
        return -1;
    }
    slabs[ofi.nslabs++] = slab;
    for (i = 0; i < SEND_BUFS_PER_SLAB; i++) {
        slab[i].next = ofi.free_bufs;
        ofi.free_bufs = &slab[i];
    }
    return 0;
}

static buf_t *get_buf(void)
{
    buf_t *b;

    if (ofi.free_bufs == NULL && add_slab() != 0)
        return NULL;
    b = ofi.free_bufs;
    ofi.free_bufs = b->next;
    b->next = NULL;
    b->op = OP_SEND;
    return b;
}

static void put_buf(buf_t * b)
{
    b->next = ofi.free_bufs;
    ofi.free_bufs = b;
}

/* A buffer's local descriptor: its slab's registration, or the heap's. */
static void *buf_desc(buf_t * b)
{
    int i;

    if (!ofi.mr_local)
        return NULL;
    if (in_heap(b, sizeof(*b)))
        return fi_mr_desc(ofi.heap_mr);
    for (i = 0; i < ofi.nslabs; i++)
        if ((char *) b >= (char *) ofi.slabs[i] &&
            (char *) b < (char *) ofi.slabs[i] + SEND_BUFS_PER_SLAB * sizeof(buf_t))
            return ofi.slab_mrs[i] ? fi_mr_desc(ofi.slab_mrs[i]) : NULL;
    return NULL;
}

static int post_recv(buf_t * b)
{
    int ret;

    b->op = OP_RECV;
    smheap_private_begin();
    do {
        ret = (int) fi_recv(ofi.ep, b->data, BUF_BYTES, buf_desc(b), FI_ADDR_UNSPEC, &b->ctx);
    } while (ret == -FI_EAGAIN && fi_cq_read(ofi.cq, NULL, 0) >= -FI_EAGAIN);
    smheap_private_end();
    return ret;
}

/* ------------------------------------------------------------------------------------ */
/* Set-up                                                                               */

static int open_endpoint(void)
{
    struct fi_av_attr av_attr = {.type = FI_AV_TABLE };
    struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_MSG,.wait_obj = FI_WAIT_FD,.size = 0 };
    int ret;

    ret = fi_fabric(ofi.info->fabric_attr, &ofi.fabric, NULL);
    if (ret == 0)
        ret = fi_domain(ofi.fabric, ofi.info, &ofi.domain, NULL);
    if (ret == 0)
        ret = fi_av_open(ofi.domain, &av_attr, &ofi.av, NULL);
    if (ret == 0) {
        ret = fi_cq_open(ofi.domain, &cq_attr, &ofi.cq, NULL);
        if (ret != 0) {     /* a provider without wait objects: poll it */
            cq_attr.wait_obj = FI_WAIT_NONE;
            ret = fi_cq_open(ofi.domain, &cq_attr, &ofi.cq, NULL);
        } else if (fi_control(&ofi.cq->fid, FI_GETWAIT, &ofi.wait_fd) != 0)
            ofi.wait_fd = -1;
    }
    if (ret == 0)
        ret = fi_endpoint(ofi.domain, ofi.info, &ofi.ep, NULL);
    if (ret == 0)
        ret = fi_ep_bind(ofi.ep, &ofi.av->fid, 0);
    if (ret == 0)
        ret = fi_ep_bind(ofi.ep, &ofi.cq->fid, FI_TRANSMIT | FI_RECV);
    if (ret == 0)
        ret = fi_enable(ofi.ep);
    if (ret == 0) {
        ofi.namelen = sizeof(ofi.name);
        ret = fi_getname(&ofi.ep->fid, ofi.name, &ofi.namelen);
    }
    return ret;
}

/* Register the node's shared heap (every rank's slice: a rank may send what a neighbour
 * allocated) for peers to read, once. */
static int register_heap(void)
{
    const char *job_key;

    if (smheap_region_identity(&ofi.heap_base, &ofi.heap_size, &job_key) != 0)
        return 0;       /* the heap is off: every message's data is registered for it */
    MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_net_heap_registrations, 1);
    return mr_register((void *) ofi.heap_base, ofi.heap_size,
                       FI_REMOTE_READ | FI_READ | FI_SEND | FI_RECV, &ofi.heap_mr);
}

static int post_receives(void)
{
    int i, ret = 0;

    ofi.recv_bufs = MPL_malloc(RECV_BUFS * sizeof(buf_t), MPL_MEM_BUFFER);
    if (ofi.recv_bufs == NULL)
        return -FI_ENOMEM;
    if (ofi.mr_local && !in_heap(ofi.recv_bufs, RECV_BUFS * sizeof(buf_t))) {
        /* kept as a slab without send buffers, so buf_desc finds its registration */
        void **slabs = MPL_realloc(ofi.slabs, (ofi.nslabs + 1) * sizeof(void *),
                                   MPL_MEM_BUFFER);
        struct fid_mr **mrs = MPL_realloc(ofi.slab_mrs, (ofi.nslabs + 1) * sizeof(*mrs),
                                          MPL_MEM_BUFFER);

        if (slabs == NULL || mrs == NULL)
            return -FI_ENOMEM;
        ofi.slabs = slabs;
        ofi.slab_mrs = mrs;
        ret = mr_register(ofi.recv_bufs, RECV_BUFS * sizeof(buf_t), FI_RECV,
                          &mrs[ofi.nslabs]);
        if (ret != 0)
            return ret;
        slabs[ofi.nslabs++] = ofi.recv_bufs;
    }
    for (i = 0; i < RECV_BUFS && ret == 0; i++)
        ret = post_recv(&ofi.recv_bufs[i]);
    return ret;
}

int MPIDI_CH3I_Netofi_open(void)
{
    return ofi.open;
}

int MPIDI_CH3I_Netofi_init(int required)
{
    int mpi_errno = MPI_SUCCESS;
    struct fi_info *hints = make_hints(), *list = NULL, *chosen;
    char why[160] = "none with reliable datagrams, messages and RDMA read";
    const char *fi_provider = getenv("FI_PROVIDER");
    int ret;

    MPIR_ERR_CHKANDJUMP(hints == NULL, mpi_errno, MPI_ERR_OTHER, "**nomem");
    PRIVATELY(ret = fi_getinfo(OFI_API, NULL, NULL, 0, hints, &list));
    chosen = choose_provider(ret == 0 ? list : NULL, required, why, sizeof(why));
    if (chosen == NULL) {
        if (MPIR_CVAR_CH3_SMHEAP_NET_VERBOSE && MPIR_Process.rank == 0)
            fprintf(stderr, "ch3:smheap: between nodes over TCP sockets: libfabric has %s%s%s\n",
                    why, fi_provider ? " with FI_PROVIDER=" : "", fi_provider ? fi_provider : "");
        MPIR_ERR_CHKANDJUMP2(required, mpi_errno, MPI_ERR_OTHER, "**smheap_ofi_provider",
                             "**smheap_ofi_provider %s %s",
                             fi_provider ? fi_provider : "(unset)", why);
        goto fn_exit;
    }
    PRIVATELY(ofi.info = fi_dupinfo(chosen));
    MPIR_ERR_CHKANDJUMP(ofi.info == NULL, mpi_errno, MPI_ERR_OTHER, "**nomem");
    ofi.mr_local = (ofi.info->domain_attr->mr_mode & FI_MR_LOCAL) != 0 ||
        (ofi.info->mode & FI_LOCAL_MR) != 0;
    /* without FI_MR_VIRT_ADDR a peer names an offset into the registration */
    ofi.mr_virt = (ofi.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) != 0 ||
        ofi.info->domain_attr->mr_mode == FI_MR_BASIC;
    ofi.mr_prov_key = (ofi.info->domain_attr->mr_mode & FI_MR_PROV_KEY) != 0;
    ofi.mr_endpoint = (ofi.info->domain_attr->mr_mode & FI_MR_ENDPOINT) != 0;
    ofi.max_msg = ofi.info->ep_attr->max_msg_size;
    ofi.next_key = 1;

    PRIVATELY(ret = open_endpoint());
    if (ret == 0)
        ret = register_heap();
    if (ret == 0)
        ret = post_receives();
    MPIR_ERR_CHKANDJUMP3(ret != 0, mpi_errno, MPI_ERR_OTHER, "**smheap_ofi_open",
                         "**smheap_ofi_open %s %s %s", ofi.info->fabric_attr->prov_name,
                         ofi.info->domain_attr->name, fi_strerror(-ret));
    ofi.open = 1;
    watch_for_deaths();
    if (MPIR_CVAR_CH3_SMHEAP_NET_VERBOSE && MPIR_Process.rank == 0)
        fprintf(stderr, "ch3:smheap: between nodes over libfabric %u.%u, provider %s, domain %s"
                "%s; the shared heap registered once (%zu MiB)\n",
                FI_MAJOR(fi_version()), FI_MINOR(fi_version()), ofi.info->fabric_attr->prov_name,
                ofi.info->domain_attr->name, fi_provider ? " (FI_PROVIDER)" : "",
                ofi.heap_size >> 20);

  fn_exit:
    if (hints)
        fi_freeinfo(hints);
    if (list)
        fi_freeinfo(list);
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* The provider and our address: a peer uses libfabric with us only if it has the same
 * provider. */
int MPIDI_CH3I_Netofi_add_card(char **card, int *room)
{
    int ret = MPL_str_add_string_arg(card, room, "ofi_prov", ofi.info->fabric_attr->prov_name);

    if (ret == MPL_SUCCESS)
        ret = MPL_str_add_binary_arg(card, room, "ofi_addr", ofi.name, (int) ofi.namelen);
    return ret == MPL_SUCCESS ? MPI_SUCCESS :
        MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_FATAL, __func__, __LINE__, MPI_ERR_OTHER,
                             "**buscard_len", NULL);
}

static int insert_address(const void *name, fi_addr_t * addr)
{
    int ret;

    PRIVATELY(ret = fi_av_insert(ofi.av, name, 1, addr, 0, NULL));
    return ret == 1;
}

int MPIDI_CH3I_Netofi_claim(MPIDI_VC_t * vc)
{
    char card[1024], prov[128], name[NAME_MAX_BYTES];
    int namelen = 0;
    smheap_ofi_peer_t *peer;
    fi_addr_t addr;

    if (vc->pg != MPIDI_Process.my_pg ||
        MPIDI_PG_GetConnString(vc->pg, vc->pg_rank, card, sizeof(card)) != MPI_SUCCESS ||
        MPL_str_get_string_arg(card, "ofi_prov", prov, sizeof(prov)) != MPL_SUCCESS ||
        strcmp(prov, ofi.info->fabric_attr->prov_name) != 0 ||
        MPL_str_get_binary_arg(card, "ofi_addr", name, sizeof(name), &namelen) != MPL_SUCCESS ||
        !insert_address(name, &addr))
        return 0;
    peer = MPL_calloc(1, sizeof(*peer), MPL_MEM_OTHER);
    if (peer == NULL)
        return 0;
    peer->addr = addr;
    peer->rank = vc->pg_rank;
    vc->ch.ofi = peer;
    vc->ch.state = MPIDI_CH3I_VC_STATE_CONNECTED;
    MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_remote_connects, 1);
    return 1;
}

/* ------------------------------------------------------------------------------------ */
/* Sending                                                                              */

/* The peer is gone: `how` we learnt it. */
static int peer_lost_as(MPIDI_VC_t * vc, const char *how)
{
    vc->ch.ofi->failed = 1;
    vc->ch.state = MPIDI_CH3I_VC_STATE_FAILED;
    MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_remote_failures, 1);
    return MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__, __LINE__,
                                MPIX_ERR_PROC_FAILED, "**smheap_ofi_lost",
                                "**smheap_ofi_lost %d %s", vc->pg_rank, how);
}

/* An operation with the peer failed with libfabric's error ret. */
static int peer_lost(MPIDI_VC_t * vc, int ret)
{
    return peer_lost_as(vc, fi_strerror(ret));
}

/* Hand one message to the provider: 0, or -FI_EAGAIN (then poll tries again), or the
 * error that lost the peer. */
static int post_send(MPIDI_VC_t * vc, buf_t * b)
{
    smheap_ofi_peer_t *peer = vc->ch.ofi;
    hdr_t *h = (hdr_t *) b->data;
    ssize_t ret;

    h->seq = peer->send_seq;
    PRIVATELY(ret = fi_send(ofi.ep, b->data, b->len, buf_desc(b), peer->addr, &b->ctx));
    if (ret == -FI_EAGAIN && !peer->out_stalled) {
        peer->out_stalled = 1;
        peer->next_stalled = ofi.stalled_peers;
        ofi.stalled_peers = peer;
    }
    if (ret == 0) {
        ofi.sends_out++;
        peer->send_seq++;
    }
    return (int) ret;
}

/* Hand the peer's queued messages to the provider: ACKs first (they are not part of ch3's
 * stream, and a peer waiting for ours may be what we wait for), then ch3's, up to a READ
 * (then wait for its ACK). */
static int flush_out(MPIDI_VC_t * vc)
{
    smheap_ofi_peer_t *peer = vc->ch.ofi;
    int ret = 0;

    while (peer->ctl_head != NULL && (ret = post_send(vc, peer->ctl_head)) == 0)
        peer->ctl_head = peer->ctl_head->next;
    while (ret == 0 && peer->ctl_head == NULL && peer->out_head != NULL && !peer->awaiting_ack) {
        buf_t *b = peer->out_head;

        ret = post_send(vc, b);
        if (ret != 0)
            break;
        peer->out_head = b->next;
        if (peer->out_head == NULL)
            peer->out_tail = NULL;
        if (((hdr_t *) b->data)->kind == MSG_READ) {
            peer->awaiting_ack = 1;
            peer->read_sreq = b->sreq;
            memcpy(peer->read_mrs, b->mrs, b->n_mrs * sizeof(b->mrs[0]));
            peer->n_read_mrs = b->n_mrs;
        }
    }
    if (ret != 0 && ret != -FI_EAGAIN)
        return peer_lost(vc, -ret);
    return MPI_SUCCESS;
}

/* An ACK or a PING: behind the peer's other control messages, ahead of ch3's. */
static int send_control(MPIDI_VC_t * vc, buf_t * b)
{
    buf_t **at;

    for (at = &vc->ch.ofi->ctl_head; *at != NULL; at = &(*at)->next)
        continue;
    b->next = NULL;
    *at = b;
    return flush_out(vc);
}

static buf_t *new_msg(MPIDI_VC_t * vc, int kind, uint64_t cookie)
{
    buf_t *b = get_buf();
    hdr_t *h;

    if (b == NULL)
        return NULL;
    h = (hdr_t *) b->data;
    h->src = (uint32_t) MPIDI_Process.my_pg_rank;
    h->kind = (uint32_t) kind;
    h->cookie = cookie;
    b->vc = vc;
    b->len = sizeof(hdr_t);
    b->sreq = NULL;
    b->n_mrs = 0;
    return b;
}

static size_t iov_bytes(const struct iovec *iov, int n)
{
    size_t total = 0;
    int i;

    for (i = 0; i < n; i++)
        total += iov[i].iov_len;
    return total;
}

/* Copy iov[0..n) into one DATA message. */
static buf_t *data_msg(MPIDI_VC_t * vc, const struct iovec *iov, int n)
{
    buf_t *b = new_msg(vc, MSG_DATA, 0);
    int i;

    if (b == NULL)
        return NULL;
    for (i = 0; i < n; i++) {
        memcpy(b->data + b->len, iov[i].iov_base, iov[i].iov_len);
        b->len += iov[i].iov_len;
    }
    MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_net_ofi_data_msgs, 1);
    return b;
}

/* A READ for sreq's iov[0..n) (iov[0] a packet header if has_pkt): name where each piece
 * lies, registering the pieces outside the heap. */
static buf_t *read_msg(MPIDI_VC_t * vc, MPIR_Request * sreq, const struct iovec *iov, int n,
                       int has_pkt)
{
    buf_t *b = new_msg(vc, MSG_READ, (uint64_t) (uintptr_t) sreq);
    read_desc_t *d;
    seg_t *segs;
    int i, first = has_pkt ? 1 : 0;

    if (b == NULL)
        return NULL;
    d = (read_desc_t *) (b->data + b->len);
    d->has_pkt = has_pkt;
    d->nseg = 0;
    b->len += sizeof(*d);
    if (has_pkt) {
        memcpy(b->data + b->len, iov[0].iov_base, sizeof(MPIDI_CH3_Pkt_t));
        b->len += sizeof(MPIDI_CH3_Pkt_t);
    }
    segs = (seg_t *) (b->data + b->len);
    for (i = first; i < n; i++) {
        seg_t *s = &segs[d->nseg];

        if (iov[i].iov_len == 0)
            continue;
        s->len = iov[i].iov_len;
        if (in_heap(iov[i].iov_base, iov[i].iov_len)) {
            s->addr = remote_addr(iov[i].iov_base, ofi.heap_base);
            s->key = fi_mr_key(ofi.heap_mr);
        } else {
            struct fid_mr *mr;

            MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_net_registrations, 1);
            if (mr_register(iov[i].iov_base, iov[i].iov_len, FI_REMOTE_READ, &mr) != 0)
                goto fail;
            b->mrs[b->n_mrs++] = mr;
            s->addr = remote_addr(iov[i].iov_base, (uintptr_t) iov[i].iov_base);
            s->key = fi_mr_key(mr);
        }
        d->nseg++;
    }
    b->len += d->nseg * sizeof(seg_t);
    b->sreq = sreq;
    MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_net_ofi_read_msgs, 1);
    return b;

  fail:
    while (b->n_mrs > 0)
        fi_close(&b->mrs[--b->n_mrs]->fid);
    put_buf(b);
    return NULL;
}

/* The request's iov went (copied, or read by the peer): complete it or let ch3 reload. */
static int request_sent(MPIDI_VC_t * vc, MPIR_Request * sreq, int *complete)
{
    int (*reqFn) (MPIDI_VC_t *, MPIR_Request *, int *) = sreq->dev.OnDataAvail;

    if (reqFn == NULL) {
        *complete = TRUE;
        return MPID_Request_complete(sreq);
    }
    return reqFn(vc, sreq, complete);
}

/* Queue the messages that send iov[0..n) of sreq (NULL: a message without a request; one
 * is made if its data must be read) onto `list`, in order.  DATA messages complete the
 * request as they copy; a READ leaves it to the ACK. */
static int describe(MPIDI_VC_t * vc, MPIR_Request * sreq, struct iovec *iov, int n, int has_pkt,
                    MPIR_Request ** made, buf_t ** head, buf_t ** tail)
{
    int mpi_errno = MPI_SUCCESS;

    for (;;) {
        size_t bytes = iov_bytes(iov, n);
        buf_t *b;
        int complete;

        MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_remote_bytes,
                                bytes - (has_pkt ? sizeof(MPIDI_CH3_Pkt_t) : 0));
        if (sizeof(hdr_t) + bytes <= BUF_BYTES) {
            b = data_msg(vc, iov, n);
            MPIR_ERR_CHKANDJUMP(b == NULL, mpi_errno, MPI_ERR_OTHER, "**nomem");
        } else {
            if (sreq == NULL) {
                sreq = MPIR_Request_create(MPIR_REQUEST_KIND__SEND);
                MPIR_ERR_CHKANDJUMP(sreq == NULL, mpi_errno, MPI_ERR_OTHER, "**nomemreq");
                MPIR_Object_set_ref(sreq, 2);   /* the caller's and the completion's */
                sreq->dev.OnDataAvail = NULL;
                *made = sreq;
            }
            b = read_msg(vc, sreq, iov, n, has_pkt);
            MPIR_ERR_CHKANDJUMP1(b == NULL, mpi_errno, MPI_ERR_OTHER, "**smheap_ofi_reg",
                                 "**smheap_ofi_reg %d", vc->pg_rank);
        }
        b->next = NULL;
        if (*tail)
            (*tail)->next = b;
        else
            *head = b;
        *tail = b;
        if (((hdr_t *) b->data)->kind == MSG_READ || sreq == NULL)
            break;
        mpi_errno = request_sent(vc, sreq, &complete);
        MPIR_ERR_CHECK(mpi_errno);
        if (complete)
            break;
        /* OnDataAvail loaded the next part of the message */
        iov = sreq->dev.iov;
        n = sreq->dev.iov_count;
        has_pkt = 0;
    }

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

static int send_iov(MPIDI_VC_t * vc, MPIR_Request * sreq, struct iovec *iov, int n_iov,
                    MPIR_Request ** made)
{
    int mpi_errno = MPI_SUCCESS;
    smheap_ofi_peer_t *peer = vc->ch.ofi;
    buf_t *head = NULL, *tail = NULL;

    MPIR_Assert(n_iov <= MPL_IOV_LIMIT && iov[0].iov_len <= sizeof(MPIDI_CH3_Pkt_t));
    iov[0].iov_len = sizeof(MPIDI_CH3_Pkt_t);   /* the receiver takes whole headers */
    MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_remote_msgs, 1);
    if (peer->failed) {
        MPIR_Request *req = sreq;

        if (req == NULL) {
            req = MPIR_Request_create_complete(MPIR_REQUEST_KIND__SEND);
            MPIR_ERR_CHKANDJUMP(req == NULL, mpi_errno, MPI_ERR_OTHER, "**nomemreq");
            *made = req;
        }
        MPIR_ERR_SET2(req->status.MPI_ERROR, MPIX_ERR_PROC_FAILED, "**smheap_ofi_lost",
                      "**smheap_ofi_lost %d %s", vc->pg_rank, "found earlier");
        if (sreq != NULL)
            mpi_errno = MPID_Request_complete(sreq);
        goto fn_exit;
    }
    mpi_errno = describe(vc, sreq, iov, n_iov, 1, made, &head, &tail);
    MPIR_ERR_CHECK(mpi_errno);
    if (peer->out_tail)
        peer->out_tail->next = head;
    else
        peer->out_head = head;
    peer->out_tail = tail;
    mpi_errno = flush_out(vc);

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPIDI_CH3I_Netofi_iSendv(MPIDI_VC_t * vc, MPIR_Request * sreq, struct iovec *iov, int n_iov)
{
    MPIR_Request *made = NULL;

    return send_iov(vc, sreq, iov, n_iov, &made);
}

int MPIDI_CH3I_Netofi_iStartMsgv(MPIDI_VC_t * vc, struct iovec *iov, int n_iov,
                                 MPIR_Request ** sreq_ptr)
{
    *sreq_ptr = NULL;
    return send_iov(vc, NULL, iov, n_iov, sreq_ptr);
}

/* The peer read what our READ named: release its registrations, then finish the request
 * or send the next part of it ahead of everything queued behind. */
static int handle_ack(MPIDI_VC_t * vc, uint64_t cookie)
{
    int mpi_errno = MPI_SUCCESS;
    smheap_ofi_peer_t *peer = vc->ch.ofi;
    MPIR_Request *sreq = peer->read_sreq;
    buf_t *head = NULL, *tail = NULL;
    int complete;

    MPIR_Assert(peer->awaiting_ack && (uint64_t) (uintptr_t) sreq == cookie);
    while (peer->n_read_mrs > 0)
        fi_close(&peer->read_mrs[--peer->n_read_mrs]->fid);
    peer->awaiting_ack = 0;
    peer->read_sreq = NULL;
    mpi_errno = request_sent(vc, sreq, &complete);
    MPIR_ERR_CHECK(mpi_errno);
    if (!complete) {
        mpi_errno = describe(vc, sreq, sreq->dev.iov, sreq->dev.iov_count, 0, NULL, &head,
                             &tail);
        MPIR_ERR_CHECK(mpi_errno);
        tail->next = peer->out_head;
        peer->out_head = head;
        if (peer->out_tail == NULL)
            peer->out_tail = tail;
    }
    mpi_errno = flush_out(vc);

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* ------------------------------------------------------------------------------------ */
/* Receiving                                                                            */

/* The READ is served: tell the sender, then handle what arrived from it meanwhile. */
static int end_read(MPIDI_VC_t * vc)
{
    int mpi_errno = MPI_SUCCESS;
    smheap_ofi_peer_t *peer = vc->ch.ofi;
    buf_t *ack = new_msg(vc, MSG_ACK, peer->read_cookie);

    MPIR_ERR_CHKANDJUMP(ack == NULL, mpi_errno, MPI_ERR_OTHER, "**nomem");
    peer->reading = 0;
    ofi.reading_peers--;
    mpi_errno = send_control(vc, ack);
    MPIR_ERR_CHECK(mpi_errno);
    mpi_errno = deliver(vc);
    MPIR_ERR_CHECK(mpi_errno);

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* The request's iov is full: complete it, or let ch3 reload it. */
static int iov_filled(MPIDI_VC_t * vc, MPIR_Request * rreq)
{
    int mpi_errno, complete = FALSE;

    if (rreq->dev.OnDataAvail == NULL) {
        mpi_errno = MPID_Request_complete(rreq);
        complete = TRUE;
    } else {
        mpi_errno = rreq->dev.OnDataAvail(vc, rreq, &complete);
    }
    if (complete)
        vc->ch.recv_active = NULL;
    else
        rreq->dev.iov_offset = 0;
    return mpi_errno;
}

/* Post reads of the sender's pieces into the receive request's iov, as far as the iov
 * goes; when the reads posted so far land, fill (or reload) and go on; the READ is served
 * when its pieces are all read, or when the request is complete (the rest is dropped, as a
 * truncated message's is). */
static int read_more(MPIDI_VC_t * vc)
{
    int mpi_errno = MPI_SUCCESS;
    smheap_ofi_peer_t *peer = vc->ch.ofi;

    for (;;) {
        MPIR_Request *rreq = vc->ch.recv_active;

        while (rreq != NULL && peer->seg_i < peer->nseg && rreq->dev.iov_count > 0) {
            struct iovec *iov = &rreq->dev.iov[rreq->dev.iov_offset];
            seg_t *s = &peer->segs[peer->seg_i];
            size_t n = MPL_MIN(iov->iov_len, s->len - peer->seg_off);

            n = MPL_MIN(n, ofi.max_msg);
            if (n > 0 && !rreq->dev.drop_data) {
                read_op_t *op = ofi.free_ops;
                void *desc;
                ssize_t ret;

                if (op == NULL) {
                    op = MPL_malloc(sizeof(*op), MPL_MEM_OTHER);
                    MPIR_ERR_CHKANDJUMP(op == NULL, mpi_errno, MPI_ERR_OTHER, "**nomem");
                } else
                    ofi.free_ops = op->next;
                op->op = OP_READ;
                op->vc = vc;
                if (local_desc(iov->iov_base, n, FI_READ, &desc, &op->mr) != 0) {
                    op->next = ofi.free_ops;
                    ofi.free_ops = op;
                    MPIR_ERR_SETANDJUMP1(mpi_errno, MPI_ERR_OTHER, "**smheap_ofi_reg",
                                         "**smheap_ofi_reg %d", vc->pg_rank);
                }
                PRIVATELY(ret = fi_read(ofi.ep, iov->iov_base, n, desc, peer->addr,
                                        s->addr + peer->seg_off, s->key, &op->ctx));
                if (ret != 0) {
                    if (op->mr)
                        fi_close(&op->mr->fid);
                    op->next = ofi.free_ops;
                    ofi.free_ops = op;
                    if (ret != -FI_EAGAIN) {
                        mpi_errno = peer_lost(vc, (int) -ret);
                        goto fn_fail;
                    }
                    if (!peer->reads_stalled) {
                        peer->reads_stalled = 1;
                        ofi.stalled_reads++;
                    }
                    goto fn_exit;       /* poll posts it again */
                }
                peer->reads_out++;
                MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_net_ofi_reads, 1);
                MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_net_ofi_read_bytes, n);
            }
            iov->iov_base = (char *) iov->iov_base + n;
            iov->iov_len -= n;
            if (iov->iov_len == 0) {
                rreq->dev.iov_offset++;
                rreq->dev.iov_count--;
            }
            peer->seg_off += n;
            if (peer->seg_off == s->len) {
                peer->seg_i++;
                peer->seg_off = 0;
            }
        }
        if (peer->reads_out > 0)
            break;      /* the next step needs these to land */
        if (rreq != NULL && rreq->dev.iov_count == 0) {
            mpi_errno = iov_filled(vc, rreq);
            MPIR_ERR_CHECK(mpi_errno);
            if (vc->ch.recv_active != NULL && peer->seg_i < peer->nseg)
                continue;
        }
        if (vc->ch.recv_active == NULL || peer->seg_i == peer->nseg)
            mpi_errno = end_read(vc);
        break;
    }

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* A READ: its packet (if any) to ch3, then its pieces into the receive request. */
static int start_read(MPIDI_VC_t * vc, buf_t * b)
{
    int mpi_errno = MPI_SUCCESS;
    smheap_ofi_peer_t *peer = vc->ch.ofi;
    const hdr_t *h = (const hdr_t *) b->data;
    read_desc_t *d = (read_desc_t *) (b->data + sizeof(hdr_t));
    char *p = (char *) (d + 1);

    MPIR_Assert(d->nseg <= MAX_SEGS);
    if (d->has_pkt) {
        MPIDI_CH3_Pkt_t *pkt = (MPIDI_CH3_Pkt_t *) p;

        MPIR_ERR_CHKANDJUMP1(vc->ch.recv_active != NULL ||
                             !MPIDI_CH3I_Net_packet_travels(pkt->type), mpi_errno,
                             MPI_ERR_INTERN, "**ch3|sock|badpacket",
                             "**ch3|sock|badpacket %d", pkt->type);
        mpi_errno = MPIDI_CH3I_Handle_cell(vc, p, sizeof(MPIDI_CH3_Pkt_t));
        MPIR_ERR_CHECK(mpi_errno);
        p += sizeof(MPIDI_CH3_Pkt_t);
    }
    memcpy(peer->segs, p, d->nseg * sizeof(seg_t));
    peer->nseg = (int) d->nseg;
    peer->seg_i = 0;
    peer->seg_off = 0;
    peer->read_cookie = h->cookie;
    peer->reading = 1;
    ofi.reading_peers++;
    mpi_errno = read_more(vc);

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* A received message, in order: b goes back to the provider once handled. */
static int handle_msg(MPIDI_VC_t * vc, buf_t * b)
{
    int mpi_errno = MPI_SUCCESS;
    const hdr_t *h = (const hdr_t *) b->data;

    switch (h->kind) {
        case MSG_DATA:
            if (vc->ch.recv_active == NULL) {
                const MPIDI_CH3_Pkt_t *pkt = (const MPIDI_CH3_Pkt_t *) (h + 1);

                MPIR_ERR_CHKANDJUMP1(!MPIDI_CH3I_Net_packet_travels(pkt->type), mpi_errno,
                                     MPI_ERR_INTERN, "**ch3|sock|badpacket",
                                     "**ch3|sock|badpacket %d", pkt->type);
            }
            mpi_errno = MPIDI_CH3I_Handle_cell(vc, b->data + sizeof(hdr_t),
                                               (intptr_t) (b->len - sizeof(hdr_t)));
            break;
        case MSG_READ:
            mpi_errno = start_read(vc, b);
            break;
        case MSG_ACK:
            mpi_errno = handle_ack(vc, h->cookie);
            break;
        case MSG_PING:
            break;
        default:
            MPIR_ERR_SET1(mpi_errno, MPI_ERR_INTERN, "**ch3|sock|badpacket",
                          "**ch3|sock|badpacket %d", (int) h->kind);
    }
    MPIR_ERR_CHECK(mpi_errno);
    if (post_recv(b) != 0)
        MPIR_ERR_SETANDJUMP(mpi_errno, MPI_ERR_OTHER, "**smheap_ofi_recv");

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* Handle the peer's received messages in the order it sent them, while no READ of its is
 * being served. */
static int deliver(MPIDI_VC_t * vc)
{
    int mpi_errno = MPI_SUCCESS;
    smheap_ofi_peer_t *peer = vc->ch.ofi;

    while (!peer->reading && peer->pending != NULL &&
           ((hdr_t *) peer->pending->data)->seq == peer->recv_seq) {
        buf_t *b = peer->pending;

        peer->pending = b->next;
        peer->recv_seq++;
        mpi_errno = handle_msg(vc, b);
        MPIR_ERR_CHECK(mpi_errno);
    }

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

static int received(buf_t * b, size_t len)
{
    const hdr_t *h = (const hdr_t *) b->data;
    MPIDI_VC_t *vc;
    smheap_ofi_peer_t *peer;
    buf_t **at;

    b->len = len;
    if (len < sizeof(hdr_t) || h->src >= (uint32_t) MPIDI_Process.my_pg->size)
        return MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_FATAL, __func__, __LINE__,
                                    MPI_ERR_INTERN, "**smheap_ofi_recv", NULL);
    MPIDI_PG_Get_vc_set_active(MPIDI_Process.my_pg, (int) h->src, &vc);
    if (vc->ch.ofi == NULL && !MPIDI_CH3I_Netofi_claim(vc))
        return MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_FATAL, __func__, __LINE__,
                                    MPI_ERR_INTERN, "**smheap_ofi_recv", NULL);
    peer = vc->ch.ofi;
    /* sequence numbers wrap: compare by difference */
    for (at = &peer->pending; *at != NULL &&
         (int32_t) (((hdr_t *) (*at)->data)->seq - h->seq) < 0; at = &(*at)->next)
        continue;
    b->next = *at;
    *at = b;
    return deliver(vc);
}

/* ------------------------------------------------------------------------------------ */
/* Progress                                                                             */

static int completed(struct fi_cq_msg_entry *e)
{
    int mpi_errno = MPI_SUCCESS;
    int op = *(int *) ((char *) e->op_context + sizeof(struct fi_context));

    switch (op) {
        case OP_SEND:
            ofi.sends_out--;
            put_buf((buf_t *) e->op_context);
            break;
        case OP_RECV:
            mpi_errno = received((buf_t *) e->op_context, e->len);
            break;
        case OP_READ:{
                read_op_t *r = (read_op_t *) e->op_context;
                MPIDI_VC_t *vc = r->vc;

                if (r->mr)
                    fi_close(&r->mr->fid);
                r->next = ofi.free_ops;
                ofi.free_ops = r;
                vc->ch.ofi->reads_out--;
                if (vc->ch.ofi->reads_out == 0)
                    mpi_errno = read_more(vc);
                break;
            }
    }
    return mpi_errno;
}

/* A failed operation: its peer is lost (a failed receive is ours: report it as such). */
static int completed_with_error(void)
{
    struct fi_cq_err_entry err = { 0 };
    int op;
    MPIDI_VC_t *vc = NULL;

    ssize_t got;

    PRIVATELY(got = fi_cq_readerr(ofi.cq, &err, 0));
    if (got != 1)
        return MPI_SUCCESS;
    if (err.err == FI_ECANCELED)
        return MPI_SUCCESS;
    op = *(int *) ((char *) err.op_context + sizeof(struct fi_context));
    if (op == OP_SEND) {
        ofi.sends_out--;
        vc = ((buf_t *) err.op_context)->vc;
        put_buf((buf_t *) err.op_context);
    } else if (op == OP_READ) {
        read_op_t *r = (read_op_t *) err.op_context;

        vc = r->vc;
        vc->ch.ofi->reads_out--;
        if (r->mr)
            fi_close(&r->mr->fid);
        r->next = ofi.free_ops;
        ofi.free_ops = r;
    }
    if (vc == NULL)
        return MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_FATAL, __func__, __LINE__,
                                    MPI_ERR_OTHER, "**smheap_ofi_recv", NULL);
    return peer_lost(vc, err.err);
}

/* Retry what the provider refused for want of room. */
static int retry_stalled(void)
{
    int mpi_errno = MPI_SUCCESS;
    smheap_ofi_peer_t *list = ofi.stalled_peers;

    ofi.stalled_peers = NULL;
    while (list != NULL && mpi_errno == MPI_SUCCESS) {
        smheap_ofi_peer_t *peer = list;
        MPIDI_VC_t *vc;

        list = peer->next_stalled;
        peer->out_stalled = 0;
        MPIDI_PG_Get_vc(MPIDI_Process.my_pg, peer->rank, &vc);
        mpi_errno = flush_out(vc);
    }
    if (ofi.stalled_reads > 0 && mpi_errno == MPI_SUCCESS) {
        int i;

        for (i = 0; i < MPIDI_Process.my_pg->size && mpi_errno == MPI_SUCCESS; i++) {
            MPIDI_VC_t *vc;

            MPIDI_PG_Get_vc(MPIDI_Process.my_pg, i, &vc);
            if (vc->ch.ofi && vc->ch.ofi->reads_stalled) {
                vc->ch.ofi->reads_stalled = 0;
                ofi.stalled_reads--;
                mpi_errno = read_more(vc);
            }
        }
    }
    return mpi_errno;
}

/* Hydra said a process died: let ch3 fail what waits for it (it completes the receives
 * posted for it with errors), and report the first of ours lost by name. */
static int look_for_deaths(void)
{
    int mpi_errno = MPI_SUCCESS, i;

    deaths_seen = deaths_signalled;
    mpi_errno = MPIDI_CH3U_Check_for_failed_procs();
    if (mpi_errno != MPI_SUCCESS)
        return mpi_errno;
    for (i = 0; i < MPIDI_Failed_procs_group->size; i++) {
        MPIDI_VC_t *vc;
        int rank = MPIDI_Failed_procs_group->lrank_to_lpid[i].lpid;

        if (rank < 0 || rank >= MPIDI_Process.my_pg->size)
            continue;
        MPIDI_PG_Get_vc(MPIDI_Process.my_pg, rank, &vc);
        if (vc->ch.ofi != NULL && !vc->ch.ofi->failed) {
            int err = peer_lost_as(vc, "the launcher reported its death");

            if (mpi_errno == MPI_SUCCESS)
                mpi_errno = err;
        }
    }
    return mpi_errno;
}

int MPIDI_CH3I_Netofi_poll(int *made_progress)
{
    int mpi_errno = MPI_SUCCESS;
    struct fi_cq_msg_entry e[CQ_BATCH];
    ssize_t n;
    int i;

    if (ofi.polling)    /* a handler re-entered progress */
        return MPI_SUCCESS;
    if (deaths_signalled != deaths_seen) {
        *made_progress = TRUE;
        return look_for_deaths();
    }
    ofi.polling = 1;
    PRIVATELY(n = fi_cq_read(ofi.cq, e, CQ_BATCH));
    if (n == -FI_EAVAIL) {
        mpi_errno = completed_with_error();
        *made_progress = TRUE;
    } else if (n > 0) {
        *made_progress = TRUE;
        for (i = 0; i < n && mpi_errno == MPI_SUCCESS; i++)
            mpi_errno = completed(&e[i]);
    }
    if (mpi_errno == MPI_SUCCESS && (ofi.stalled_peers != NULL || ofi.stalled_reads > 0))
        mpi_errno = retry_stalled();
    ofi.polling = 0;
    return mpi_errno;
}

int MPIDI_CH3I_Netofi_reading_data(void)
{
    return ofi.reading_peers > 0;
}

/* Sleep on the completion queue's file descriptor and the wake socket, releasing MPICH's
 * global lock, unless the provider has something already (fi_trywait). */
struct sleep_args {
    struct pollfd fds[2];
    int timeout_ms;
};

static int sleep_in_poll(void *arg)
{
    struct sleep_args *a = arg;

    return poll(a->fds, 2, a->timeout_ms);
}

/* A rank that sleeps sends each peer it talks to a PING every PING_EVERY_NS: a dead peer's
 * PING fails, which is how a provider that reports nothing else tells us (rxm over TCP),
 * whether or not the launcher says so. */
#define PING_EVERY_NS 1000000000LL

static int ping_peers(void)
{
    static MPL_time_t last;
    static int started;
    MPL_time_t now;
    double since;
    int mpi_errno = MPI_SUCCESS, i;

    MPL_wtime(&now);
    if (started) {
        MPL_wtime_diff(&last, &now, &since);
        if (since * 1e9 < PING_EVERY_NS)
            return MPI_SUCCESS;
    }
    started = 1;
    last = now;
    for (i = 0; i < MPIDI_Process.my_pg->size && mpi_errno == MPI_SUCCESS; i++) {
        MPIDI_VC_t *vc;
        buf_t *ping;

        MPIDI_PG_Get_vc(MPIDI_Process.my_pg, i, &vc);
        if (vc->ch.ofi == NULL || vc->ch.ofi->failed)
            continue;
        ping = new_msg(vc, MSG_PING, 0);
        if (ping == NULL)
            break;
        mpi_errno = send_control(vc, ping);
    }
    return mpi_errno;
}

int MPIDI_CH3I_Netofi_sleep(int wake_fd, int timeout_ms, int *made_progress, int *slept)
{
    struct fid *fids[1] = { &ofi.cq->fid };
    struct sleep_args a;
    int ret;

    *slept = 0;
    ret = ping_peers();
    if (ret != MPI_SUCCESS)
        return ret;
    if (ofi.wait_fd < 0)
        return MPI_SUCCESS;
    PRIVATELY(ret = fi_trywait(ofi.fabric, fids, 1));
    if (ret != FI_SUCCESS)
        return MPIDI_CH3I_Netofi_poll(made_progress);
    a.fds[0].fd = ofi.wait_fd;
    a.fds[0].events = POLLIN;
    a.fds[1].fd = wake_fd;
    a.fds[1].events = POLLIN;
    a.timeout_ms = timeout_ms;
    MPIDI_CH3I_Without_global_lock(sleep_in_poll, &a);
    *slept = 1;
    return MPIDI_CH3I_Netofi_poll(made_progress);
}

/* ------------------------------------------------------------------------------------ */
/* Tear-down                                                                            */

/* ch3's close protocol with the VC is over: what we queued for it still goes (the
 * endpoint closes only when nothing is left, in _finalize). */
int MPIDI_CH3I_Netofi_terminate(MPIDI_VC_t * vc)
{
    return MPIDI_CH3U_Handle_connection(vc, MPIDI_VC_EVENT_TERMINATED);
}

static void close_fid(struct fid *f)
{
    if (f != NULL)
        PRIVATELY(fi_close(f));
}

#define FINALIZE_WAIT_S 10.0

int MPIDI_CH3I_Netofi_finalize(void)
{
    int mpi_errno = MPI_SUCCESS;
    MPL_time_t start, now;
    double waited;
    int i;

    if (!ofi.open)
        return MPI_SUCCESS;
    sigaction(SIGUSR1, &sigusr1_before, NULL);
    /* let the last messages (ch3's close packets among them) go; a provider that keeps
     * retrying a dead peer (rxm does) gets FINALIZE_WAIT_S */
    MPL_wtime(&start);
    while (mpi_errno == MPI_SUCCESS && (ofi.sends_out > 0 || ofi.stalled_peers != NULL)) {
        int progress = FALSE;

        mpi_errno = MPIDI_CH3I_Netofi_poll(&progress);
        MPL_wtime(&now);
        MPL_wtime_diff(&start, &now, &waited);
        if (waited > FINALIZE_WAIT_S)
            break;
    }
    for (i = 0; i < MPIDI_Process.my_pg->size; i++) {
        MPIDI_VC_t *vc;

        MPIDI_PG_Get_vc(MPIDI_Process.my_pg, i, &vc);
        MPL_free(vc->ch.ofi);
        vc->ch.ofi = NULL;
    }
    close_fid(&ofi.ep->fid);
    close_fid(ofi.heap_mr ? &ofi.heap_mr->fid : NULL);
    for (i = 0; i < ofi.nslabs; i++) {
        close_fid(ofi.slab_mrs[i] ? &ofi.slab_mrs[i]->fid : NULL);
        if (ofi.slabs[i] != ofi.recv_bufs)
            MPL_free(ofi.slabs[i]);
    }
    MPL_free(ofi.recv_bufs);
    MPL_free(ofi.slabs);
    MPL_free(ofi.slab_mrs);
    while (ofi.free_ops) {
        read_op_t *op = ofi.free_ops;

        ofi.free_ops = op->next;
        MPL_free(op);
    }
    close_fid(&ofi.cq->fid);
    close_fid(&ofi.av->fid);
    close_fid(&ofi.domain->fid);
    close_fid(&ofi.fabric->fid);
    fi_freeinfo(ofi.info);
    memset(&ofi, 0, sizeof(ofi));
    ofi.wait_fd = -1;
    return mpi_errno;
}
