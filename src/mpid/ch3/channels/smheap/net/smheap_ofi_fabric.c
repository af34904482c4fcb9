/*
 * ch3:smheap -- libfabric's side of the transport: the provider, the endpoint, memory
 * registrations, the message buffers and the peers' addresses.
 *
 * Every rank registers its node's shared heap with the provider once, at MPI_Init, so a
 * message whose data lies in the heap (everything malloc gave) is ready for RDMA as it is,
 * with no registration per message.  Data outside the heap (static arrays, stacks, memory
 * from before MPI_Init) is registered for the one message (smheap_net_registrations counts
 * these): a registration costs 0.07-0.10 us with tcp and sockets, from 64 KiB to 16 MiB,
 * where copying into a registered bounce buffer would cost 0.5-540 us; providers that pin
 * (verbs, efa) keep a cache of registrations of their own, bounded, which their memory
 * monitor empties of what the process unmaps.
 *
 * A provider that pins registered memory (it asks for FI_MR_ALLOCATED) would pin, and so
 * back in /dev/shm, every page of every slice of the heap: with it, heap data is registered
 * per message as well, through that cache, and the heap keeps its pages until the job ends
 * (smheap_keep_pages), so that a cached registration never holds a page the heap gave back
 * -- in any slice of the node, which the memory monitor of this process would not see.
 */

/*
=== BEGIN_MPI_T_CVAR_INFO_BLOCK ===

cvars:
    - name        : MPIR_CVAR_CH3_SMHEAP_OFI_REGISTER
      category    : CH3
      type        : enum
      default     : auto
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_ALL_EQ
      description : |-
        ch3:smheap over libfabric: what each rank registers for its peers to read.
        auto    - heap, unless the provider pins registered memory (it asks for
                  FI_MR_ALLOCATED, as verbs does): then message
        heap    - the node's whole shared heap, once at MPI_Init: for providers that do
                  not pin, or pin on demand (verbs with FI_VERBS_USE_ODP=1)
        message - the data of each large message, through the provider's cache of
                  registrations; the heap then keeps its pages until the job ends, so
                  that no cached registration holds pages it gave back

=== END_MPI_T_CVAR_INFO_BLOCK ===
*/

#include "smheap_ofi.h"
#include "smheap_mpit.h"

#define OFI_API FI_VERSION(1, 10)
#define RECV_BUFS 32                    /* receives kept posted */
#define SEND_BUFS_PER_SLAB 16

smheap_ofi_t smheap_ofi = {.wait_fd = -1 };

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
    struct fi_info *hints = smheap_ofi_lib.dupinfo(NULL);     /* fi_allocinfo() */

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

/* The provider to use, as a copy for smheap_ofi_open (*info NULL when none suits: *why
 * then says what libfabric has).  Returns 0, or -FI_ENOMEM. */
int smheap_ofi_find_provider(int required, struct fi_info **info, char *why, size_t why_len)
{
    struct fi_info *hints = make_hints(), *list = NULL, *chosen;
    int ret;

    *info = NULL;
    if (hints == NULL)
        return -FI_ENOMEM;
    PRIVATELY(ret = smheap_ofi_lib.getinfo(OFI_API, NULL, NULL, 0, hints, &list));
    chosen = choose_provider(ret == 0 ? list : NULL, required, why, why_len);
    ret = 0;
    if (chosen != NULL) {
        PRIVATELY(*info = smheap_ofi_lib.dupinfo(chosen));
        if (*info == NULL)
            ret = -FI_ENOMEM;
    }
    smheap_ofi_lib.freeinfo(hints);
    if (list)
        smheap_ofi_lib.freeinfo(list);
    return ret;
}

/* ------------------------------------------------------------------------------------ */
/* Registration                                                                         */

int smheap_ofi_mr_register(void *base, size_t len, uint64_t access, struct fid_mr **mr)
{
    int ret;

    smheap_private_begin();
    ret = fi_mr_reg(smheap_ofi.domain, base, len, access, 0, smheap_ofi.next_key++, 0, mr, NULL);
    if (ret == 0 && smheap_ofi.mr_endpoint) {
        ret = fi_mr_bind(*mr, &smheap_ofi.ep->fid, 0);
        if (ret == 0)
            ret = fi_mr_enable(*mr);
        if (ret != 0)
            fi_close(&(*mr)->fid);
    }
    smheap_private_end();
    return ret;
}

/* The address a peer names to read [p, ...) through mr based at base. */
uint64_t smheap_ofi_remote_addr(const void *p, uintptr_t base)
{
    return smheap_ofi.mr_virt ? (uint64_t) (uintptr_t) p : (uint64_t) ((uintptr_t) p - base);
}

int smheap_ofi_in_heap(const void *p, size_t len)
{
    return smheap_ofi.heap_mr != NULL && (uintptr_t) p >= smheap_ofi.heap_base &&
        (uintptr_t) p + len <= smheap_ofi.heap_base + smheap_ofi.heap_size;
}

/* The local descriptor for [p, p+len) when the provider wants one (FI_MR_LOCAL): the heap's,
 * or a registration made for the operation (*mr, counted). */
int smheap_ofi_local_desc(void *p, size_t len, uint64_t access, void **desc, struct fid_mr **mr)
{
    *desc = NULL;
    *mr = NULL;
    if (!smheap_ofi.mr_local)
        return 0;
    if (smheap_ofi_in_heap(p, len)) {
        *desc = fi_mr_desc(smheap_ofi.heap_mr);
        return 0;
    }
    MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_net_registrations, 1);
    if (smheap_ofi_mr_register(p, len, access, mr) != 0)
        return -1;
    *desc = fi_mr_desc(*mr);
    return 0;
}

/* ------------------------------------------------------------------------------------ */
/* Buffers                                                                              */

/* Keep `len` bytes at `mem` as a slab of buffers, registered for `access` when the
 * provider wants local registrations and the slab lies outside the heap (the buffers'
 * descriptors: smheap_ofi_buf_desc). */
static int keep_slab(void *mem, size_t len, uint64_t access)
{
    smheap_ofi_slab_t *slabs = MPL_realloc(smheap_ofi.slabs,
                                           (smheap_ofi.nslabs + 1) * sizeof(*slabs),
                                           MPL_MEM_BUFFER);
    smheap_ofi_slab_t *slab;

    if (slabs == NULL)
        return -FI_ENOMEM;
    smheap_ofi.slabs = slabs;
    slab = &slabs[smheap_ofi.nslabs];
    slab->base = mem;
    slab->len = len;
    slab->mr = NULL;
    if (smheap_ofi.mr_local && !smheap_ofi_in_heap(mem, len)) {
        int ret = smheap_ofi_mr_register(mem, len, access, &slab->mr);

        if (ret != 0)
            return ret;
    }
    smheap_ofi.nslabs++;
    return 0;
}

static int add_send_slab(void)
{
    buf_t *slab = MPL_malloc(SEND_BUFS_PER_SLAB * sizeof(buf_t), MPL_MEM_BUFFER);
    int i;

    if (slab == NULL || keep_slab(slab, SEND_BUFS_PER_SLAB * sizeof(buf_t), FI_SEND) != 0) {
        MPL_free(slab);
        return -1;
    }
    for (i = 0; i < SEND_BUFS_PER_SLAB; i++) {
        slab[i].next = smheap_ofi.free_bufs;
        smheap_ofi.free_bufs = &slab[i];
    }
    return 0;
}

buf_t *smheap_ofi_get_buf(void)
{
    buf_t *b;

    if (smheap_ofi.free_bufs == NULL && add_send_slab() != 0)
        return NULL;
    b = smheap_ofi.free_bufs;
    smheap_ofi.free_bufs = b->next;
    b->next = NULL;
    b->op = OP_SEND;
    return b;
}

void smheap_ofi_put_buf(buf_t * b)
{
    b->next = smheap_ofi.free_bufs;
    smheap_ofi.free_bufs = b;
}

/* A buffer's local descriptor: its slab's registration, or the heap's. */
void *smheap_ofi_buf_desc(buf_t * b)
{
    int i;

    if (!smheap_ofi.mr_local)
        return NULL;
    if (smheap_ofi_in_heap(b, sizeof(*b)))
        return fi_mr_desc(smheap_ofi.heap_mr);
    for (i = 0; i < smheap_ofi.nslabs; i++) {
        smheap_ofi_slab_t *slab = &smheap_ofi.slabs[i];

        if ((char *) b >= (char *) slab->base && (char *) b < (char *) slab->base + slab->len)
            return slab->mr ? fi_mr_desc(slab->mr) : NULL;
    }
    return NULL;
}

int smheap_ofi_post_recv(buf_t * b)
{
    int ret;

    b->op = OP_RECV;
    smheap_private_begin();
    do {
        ret = (int) fi_recv(smheap_ofi.ep, b->data, BUF_BYTES, smheap_ofi_buf_desc(b),
                            FI_ADDR_UNSPEC, &b->ctx);
    } while (ret == -FI_EAGAIN && fi_cq_read(smheap_ofi.cq, NULL, 0) >= -FI_EAGAIN);
    smheap_private_end();
    return ret;
}

/* The context of an RDMA read. */
read_op_t *smheap_ofi_get_op(void)
{
    read_op_t *op = smheap_ofi.free_ops;

    if (op == NULL)
        op = MPL_malloc(sizeof(*op), MPL_MEM_OTHER);
    else
        smheap_ofi.free_ops = op->next;
    if (op != NULL)
        op->op = OP_READ;
    return op;
}

/* Done with a read: release its destination's registration, if it needed one. */
void smheap_ofi_put_op(read_op_t * op)
{
    if (op->mr)
        fi_close(&op->mr->fid);
    op->next = smheap_ofi.free_ops;
    smheap_ofi.free_ops = op;
}

/* ------------------------------------------------------------------------------------ */
/* Set-up                                                                               */

static int open_endpoint(void)
{
    struct fi_av_attr av_attr = {.type = FI_AV_TABLE };
    struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_MSG,.wait_obj = FI_WAIT_FD,.size = 0 };
    int ret;

    ret = smheap_ofi_lib.fabric(smheap_ofi.info->fabric_attr, &smheap_ofi.fabric, NULL);
    if (ret == 0)
        ret = fi_domain(smheap_ofi.fabric, smheap_ofi.info, &smheap_ofi.domain, NULL);
    if (ret == 0)
        ret = fi_av_open(smheap_ofi.domain, &av_attr, &smheap_ofi.av, NULL);
    if (ret == 0) {
        ret = fi_cq_open(smheap_ofi.domain, &cq_attr, &smheap_ofi.cq, NULL);
        if (ret != 0) {     /* a provider without wait objects: poll it */
            cq_attr.wait_obj = FI_WAIT_NONE;
            ret = fi_cq_open(smheap_ofi.domain, &cq_attr, &smheap_ofi.cq, NULL);
        } else if (fi_control(&smheap_ofi.cq->fid, FI_GETWAIT, &smheap_ofi.wait_fd) != 0)
            smheap_ofi.wait_fd = -1;
    }
    if (ret == 0)
        ret = fi_endpoint(smheap_ofi.domain, smheap_ofi.info, &smheap_ofi.ep, NULL);
    if (ret == 0)
        ret = fi_ep_bind(smheap_ofi.ep, &smheap_ofi.av->fid, 0);
    if (ret == 0)
        ret = fi_ep_bind(smheap_ofi.ep, &smheap_ofi.cq->fid, FI_TRANSMIT | FI_RECV);
    if (ret == 0)
        ret = fi_enable(smheap_ofi.ep);
    if (ret == 0) {
        smheap_ofi.namelen = sizeof(smheap_ofi.name);
        ret = fi_getname(&smheap_ofi.ep->fid, smheap_ofi.name, &smheap_ofi.namelen);
    }
    return ret;
}

/* Register the node's shared heap (every rank's slice: a rank may send what a neighbour
 * allocated) for peers to read, once. */
static int register_heap(void)
{
    const char *job_key;

    if (smheap_region_identity(&smheap_ofi.heap_base, &smheap_ofi.heap_size, &job_key) != 0)
        return 0;       /* the heap is off: every message's data is registered for it */
    MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_net_heap_registrations, 1);
    return smheap_ofi_mr_register((void *) smheap_ofi.heap_base, smheap_ofi.heap_size,
                                  FI_REMOTE_READ | FI_READ | FI_SEND | FI_RECV,
                                  &smheap_ofi.heap_mr);
}

static int post_receives(void)
{
    int i, ret;

    smheap_ofi.recv_bufs = MPL_malloc(RECV_BUFS * sizeof(buf_t), MPL_MEM_BUFFER);
    if (smheap_ofi.recv_bufs == NULL)
        return -FI_ENOMEM;
    ret = keep_slab(smheap_ofi.recv_bufs, RECV_BUFS * sizeof(buf_t), FI_RECV);
    for (i = 0; i < RECV_BUFS && ret == 0; i++)
        ret = smheap_ofi_post_recv(&smheap_ofi.recv_bufs[i]);
    return ret;
}

/* The largest message the provider sends eagerly, where it says: rxm (the RDM layer over
 * tcp and verbs) its eager limit, FI_OFI_RXM_EAGER_LIMIT, 16 KiB unless set; a larger one
 * takes rxm's segmentation or rendezvous, dearer than a few eager messages.  Others: a
 * buffer. */
static size_t eager_limit(const struct fi_info *info)
{
    const char *limit = getenv("FI_OFI_RXM_EAGER_LIMIT");
    size_t bytes = BUF_BYTES;

    if (strstr(info->fabric_attr->prov_name, "ofi_rxm") != NULL)
        bytes = limit != NULL && atol(limit) > 0 ? (size_t) atol(limit) : 16384;
    return MPL_MAX(MPL_MIN(bytes, BUF_BYTES), sizeof(hdr_t) + sizeof(MPIDI_CH3_Pkt_t));
}

/* Open the endpoint of `info` (ours from now on), register the heap (or keep its pages),
 * post the receives: 0 or libfabric's error. */
int smheap_ofi_open(struct fi_info *info)
{
    uint64_t mr_mode = info->domain_attr->mr_mode;
    int ret;

    smheap_ofi.info = info;
    smheap_ofi.mr_local = (mr_mode & FI_MR_LOCAL) != 0 || (info->mode & FI_LOCAL_MR) != 0;
    /* without FI_MR_VIRT_ADDR a peer names an offset into the registration */
    smheap_ofi.mr_virt = (mr_mode & FI_MR_VIRT_ADDR) != 0 || mr_mode == FI_MR_BASIC;
    smheap_ofi.mr_endpoint = (mr_mode & FI_MR_ENDPOINT) != 0;
    smheap_ofi.max_msg = info->ep_attr->max_msg_size;
    smheap_ofi.data_max = eager_limit(info);
    smheap_ofi.copy_max = BUF_BYTES - sizeof(hdr_t);
    smheap_ofi.next_key = 1;
    smheap_ofi.per_message =
        MPIR_CVAR_CH3_SMHEAP_OFI_REGISTER == MPIR_CVAR_CH3_SMHEAP_OFI_REGISTER_message ||
        (MPIR_CVAR_CH3_SMHEAP_OFI_REGISTER == MPIR_CVAR_CH3_SMHEAP_OFI_REGISTER_auto &&
         (mr_mode & FI_MR_ALLOCATED) != 0);
    if (smheap_ofi.per_message)
        smheap_keep_pages();    /* before any registration */
    PRIVATELY(ret = open_endpoint());
    if (ret == 0 && !smheap_ofi.per_message)
        ret = register_heap();
    if (ret == 0)
        ret = post_receives();
    return ret;
}

/* ------------------------------------------------------------------------------------ */
/* Addresses                                                                            */

/* The provider and our address: a peer uses libfabric with us only if it has the same
 * provider. */
int MPIDI_CH3I_Netofi_add_card(char **card, int *room)
{
    int ret = MPL_str_add_string_arg(card, room, "ofi_prov",
                                     smheap_ofi.info->fabric_attr->prov_name);

    if (ret == MPL_SUCCESS)
        ret = MPL_str_add_binary_arg(card, room, "ofi_addr", smheap_ofi.name,
                                     (int) smheap_ofi.namelen);
    return ret == MPL_SUCCESS ? MPI_SUCCESS :
        MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_FATAL, __func__, __LINE__, MPI_ERR_OTHER,
                             "**buscard_len", NULL);
}

static int insert_address(const void *name, fi_addr_t * addr)
{
    int ret;

    PRIVATELY(ret = fi_av_insert(smheap_ofi.av, name, 1, addr, 0, NULL));
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
        strcmp(prov, smheap_ofi.info->fabric_attr->prov_name) != 0 ||
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
/* Tear-down                                                                            */

static void close_fid(struct fid *f)
{
    if (f != NULL)
        PRIVATELY(fi_close(f));
}

/* Close everything smheap_ofi_open opened, free the peers and the buffers. */
void smheap_ofi_close(void)
{
    int i;

    for (i = 0; i < MPIDI_Process.my_pg->size; i++) {
        MPIDI_VC_t *vc;

        MPIDI_PG_Get_vc(MPIDI_Process.my_pg, i, &vc);
        MPL_free(vc->ch.ofi);
        vc->ch.ofi = NULL;
    }
    close_fid(&smheap_ofi.ep->fid);
    close_fid(smheap_ofi.heap_mr ? &smheap_ofi.heap_mr->fid : NULL);
    for (i = 0; i < smheap_ofi.nslabs; i++) {
        close_fid(smheap_ofi.slabs[i].mr ? &smheap_ofi.slabs[i].mr->fid : NULL);
        if (smheap_ofi.slabs[i].base != smheap_ofi.recv_bufs)
            MPL_free(smheap_ofi.slabs[i].base);
    }
    MPL_free(smheap_ofi.recv_bufs);
    MPL_free(smheap_ofi.slabs);
    while (smheap_ofi.free_ops) {
        read_op_t *op = smheap_ofi.free_ops;

        smheap_ofi.free_ops = op->next;
        MPL_free(op);
    }
    close_fid(&smheap_ofi.cq->fid);
    close_fid(&smheap_ofi.av->fid);
    close_fid(&smheap_ofi.domain->fid);
    close_fid(&smheap_ofi.fabric->fid);
    smheap_ofi_lib.freeinfo(smheap_ofi.info);
    memset(&smheap_ofi, 0, sizeof(smheap_ofi));
    smheap_ofi.wait_fd = -1;
}
