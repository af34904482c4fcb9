/*
 * ch3:smheap -- channel initialization: set up the node segment, give every VC of a rank
 * on this node its pair of rings, and open the sockets to the job's other nodes.
 */

#include "mpidi_ch3_impl.h"
#include "mpid_nem_impl.h"      /* the ordering answer for the window code */
#include "smheap_coll.h"

static int channel_initialized;

/* A "shared" split is a split by node, then by node topology (hwloc). */
static int split_type(MPIR_Comm * comm_ptr, int stype, int key, MPIR_Info * info_ptr,
                      MPIR_Comm ** newcomm_ptr)
{
    int mpi_errno = MPI_SUCCESS;
    MPIR_Comm *dup_ptr = NULL;

    mpi_errno = MPIR_Comm_split_impl(comm_ptr, stype == MPI_UNDEFINED ? MPI_UNDEFINED : 0,
                                     key, &dup_ptr);
    MPIR_ERR_CHECK(mpi_errno);
    if (stype == MPI_UNDEFINED) {
        *newcomm_ptr = NULL;
        goto fn_exit;
    }

    if (stype == MPI_COMM_TYPE_SHARED)
        mpi_errno = MPIR_Comm_split_type_node_topo(dup_ptr, key, info_ptr, newcomm_ptr);
    else if (stype == MPIX_COMM_TYPE_NEIGHBORHOOD)
        mpi_errno = MPIR_Comm_split_type_neighborhood(dup_ptr, stype, key, info_ptr,
                                                      newcomm_ptr);
    else
        mpi_errno = MPIR_Comm_split_type(dup_ptr, stype, key, info_ptr, newcomm_ptr);
    MPIR_ERR_CHECK(mpi_errno);

  fn_exit:
    if (dup_ptr)
        MPIR_Comm_free_impl(dup_ptr);
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

static MPIR_Commops comm_fns = {
    split_type
};

int MPIDI_CH3I_Shm_supported(void)
{
    return MPL_proc_mutex_enabled();
}

/* Each pair's packets travel through one FIFO ring, so they arrive in order. */
static int rings_are_ordered(int *ordering)
{
    *ordering = 1;
    return MPI_SUCCESS;
}

const MPIDI_CH3I_Smheap_netmod_ordering_t MPIDI_CH3I_Smheap_ordered_netmod = {
    rings_are_ordered
};

/* A rank of our job on this node: its rings and doorbell are in the node segment, and its
 * heap is ours, so large messages may go single-copy (src/ch3_rndv.c). */
static void attach_rings(MPIDI_VC_t * vc)
{
    int peer = vc->ch.node_rank, me = smheap_queue.my_rank;

    smheap_ring_end_init(&vc->ch.out, MPIDI_CH3I_Smheap_ring(peer, me));
    smheap_ring_end_init(&vc->ch.in, MPIDI_CH3I_Smheap_ring(me, peer));
    vc->ch.geom = &smheap_queue.geom;
    vc->ch.peer_bell = &smheap_queue.bells[peer];
    vc->rndvSend_fn = MPIDI_CH3I_Smheap_RndvSend;
    vc->rndvRecv_fn = MPIDI_CH3I_Smheap_RndvRecv;
    /* below ch3's own limit when heap data goes single-copy */
    vc->eager_max_msg_sz = MPIDI_CH3I_Smheap_eager_max_msg_sz();
}

/* Where each rank of our job is: its index among this node's ranks, or -1 on another
 * node (MPICH's node map, from the launcher). */
static int *node_rank_of;       /* [job size] */

static int map_node_ranks(int size)
{
    int mpi_errno = MPI_SUCCESS;

    node_rank_of = MPL_malloc(size * sizeof(int), MPL_MEM_ADDRESS);
    MPIR_ERR_CHKANDJUMP(node_rank_of == NULL, mpi_errno, MPI_ERR_OTHER, "**nomem");
    for (int r = 0; r < size; r++)
        node_rank_of[r] = -1;
    for (int i = 0; i < MPIR_Process.local_size; i++)
        node_rank_of[MPIR_Process.node_local_map[i]] = i;

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* MPIDI_CH3_Finalize: no VC of our job is made after this. */
void MPIDI_CH3I_Free_node_map(void)
{
    MPL_free(node_rank_of);
    node_rank_of = NULL;
    channel_initialized = 0;
}


/* Our business card: the links' address and our node (processes of other jobs on this
 * node), and the socket listener's (everybody else; ch3's socket utilities read it). */
static int format_card(int pg_rank, char *card, int room)
{
    int mpi_errno = MPIDI_CH3I_Link_add_card(&card, &room);

    if (mpi_errno == MPI_SUCCESS)
        mpi_errno = MPIDI_CH3I_Net_add_card(pg_rank, &card, &room);
    return mpi_errno;
}

int MPIDI_CH3_Get_business_card(int myRank, char *value, int length)
{
    MPIDI_CH3I_Link_active = 1;         /* a card handed out may bring connections */
    return format_card(myRank, value, length);
}

int MPIDI_CH3_Init(int has_parent, MPIDI_PG_t * pg_p, int pg_rank)
{
    int mpi_errno = MPI_SUCCESS;
    char card[512] = "";
    int i;

    MPIR_FUNC_ENTER;

    MPL_UNREFERENCED_ARG(has_parent);   /* ch3 connects a spawned job to its parent */

    MPIR_Comm_fns = &comm_fns;
    smheap_copy_init();
    smheap_reduce_init();
    MPIDI_CH3I_Smheap_mpit_init();
    MPIDI_CH3I_Win_heap_init();
    mpi_errno = map_node_ranks(pg_p->size);
    MPIR_ERR_CHECK(mpi_errno);

    mpi_errno = MPIDI_CH3I_Smheap_queue_init(MPIR_Process.local_size, MPIR_Process.local_rank);
    MPIR_ERR_CHECK(mpi_errno);
    mpi_errno = MPIDI_CH3I_Smheap_heap_init(MPIR_Process.local_size, MPIR_Process.local_rank);
    MPIR_ERR_CHECK(mpi_errno);
    mpi_errno = MPIDI_CH3I_Smheap_coll_init();
    MPIR_ERR_CHECK(mpi_errno);
    mpi_errno = MPIDI_CH3I_Link_init();
    MPIR_ERR_CHECK(mpi_errno);
    mpi_errno = MPIDI_CH3I_Net_init(MPIR_Process.num_nodes > 1);
    MPIR_ERR_CHECK(mpi_errno);
    mpi_errno = format_card(pg_rank, card, sizeof(card));
    MPIR_ERR_CHECK(mpi_errno);
    mpi_errno = MPIDI_PG_SetConnInfo(pg_rank, card);
    MPIR_ERR_CHECK(mpi_errno);
    channel_initialized = 1;

    /* ch3's packet handlers, then the channel's own */
    mpi_errno = MPIDI_CH3I_Packet_init();
    MPIR_ERR_CHECK(mpi_errno);
    mpi_errno = MPIDI_CH3I_Smheap_rndv_init(MPIDI_CH3I_pkt_handlers, MPIDI_CH3I_PKTARRAY_SIZE);
    MPIR_ERR_CHECK(mpi_errno);
    mpi_errno = MPIDI_CH3I_Smheap_part_init(MPIDI_CH3I_pkt_handlers, MPIDI_CH3I_PKTARRAY_SIZE);
    MPIR_ERR_CHECK(mpi_errno);
    mpi_errno = MPIDI_CH3I_Progress_init();
    MPIR_ERR_CHECK(mpi_errno);

    for (i = 0; i < pg_p->size; i++) {
        mpi_errno = MPIDI_CH3_VC_Init(&pg_p->vct[i]);
        MPIR_ERR_CHECK(mpi_errno);
    }

  fn_exit:
    MPIR_FUNC_EXIT;
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* Called by MPIDI_VC_Init for every VC: those of our job once from MPIDI_PG_Create before
 * MPIDI_CH3_Init (rings not there yet) and again from MPIDI_CH3_Init once they are (or
 * marked remote: a socket, net/smheap_net_sock.c); those of other jobs' groups and ch3's
 * temporary connect/accept VCs keep ch3's rendezvous and get their rings from links
 * (link/smheap_link.c). */
int MPIDI_CH3_VC_Init(MPIDI_VC_t * vc)
{
    vc->ch.out.ring = NULL;
    vc->ch.out_populated = FALSE;
    vc->ch.in.ring = NULL;
    vc->ch.geom = NULL;
    vc->ch.peer_bell = NULL;
    vc->ch.out_link = NULL;
    vc->ch.in_link = NULL;
    vc->ch.sendq_head = NULL;
    vc->ch.rbuf = NULL;
    vc->ch.rbuf_len = 0;
    vc->ch.rbuf_posted = FALSE;
    vc->ch.recv_piece = -1;
    vc->ch.send_piece = -1;
    vc->ch.sendq_tail = NULL;
    vc->ch.pending_next = vc->ch.pending_prev = NULL;
    vc->ch.on_pending_list = FALSE;
    vc->ch.terminate_when_drained = FALSE;
    vc->ch.draining = FALSE;
    vc->ch.recv_active = NULL;
    vc->ch.cma_refused = FALSE;
    vc->ch.rndv_unanswered = 0;
    vc->ch.node_rank = -1;
    vc->ch.remote = FALSE;
    MPIDI_CH3I_Net_vc_init(vc);

    if (channel_initialized && vc->pg == MPIDI_Process.my_pg) {
        vc->ch.node_rank = node_rank_of[vc->pg_rank];
        vc->ch.remote = vc->ch.node_rank < 0;
        if (!vc->ch.remote && vc->pg_rank != MPIDI_Process.my_pg_rank)
            attach_rings(vc);
    }
    return MPI_SUCCESS;
}

int MPIDI_CH3_VC_Destroy(MPIDI_VC_t * vc)
{
    MPIDI_CH3I_Link_retire(vc);
    MPL_free(vc->ch.rbuf);
    vc->ch.rbuf = NULL;
    return MPI_SUCCESS;
}

int MPIDI_CH3_PG_Init(MPIDI_PG_t * pg)
{
    if (channel_initialized && pg != MPIDI_Process.my_pg)
        MPIDI_CH3I_Link_group_added();  /* another job: links to it may come */
    return MPI_SUCCESS;
}

int MPIDI_CH3_PG_Destroy(MPIDI_PG_t * pg)
{
    MPL_UNREFERENCED_ARG(pg);
    return MPI_SUCCESS;
}

int MPIDI_CH3_InitCompleted(void)
{
    return MPI_SUCCESS;
}

/* The default port functions (ch3u_port.c) run over our links. */
int MPIDI_CH3_PortFnsInit(MPIDI_PortFns * portFns)
{
    MPL_UNREFERENCED_ARG(portFns);
    return MPI_SUCCESS;
}
