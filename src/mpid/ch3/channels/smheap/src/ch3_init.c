/*
 * ch3:smheap -- channel initialization: check that the job fits on one node, set up the
 * node segment and give every VC its pair of rings.
 */

#include "mpidi_ch3_impl.h"
#include <unistd.h>
#include "mpid_nem_impl.h"      /* the ordering answer for the window code */
#include "smheap_coll.h"

static int channel_initialized;

/* Every rank of the job shares this node, so a "shared" split is a split by node
 * topology (hwloc) of the whole communicator. */
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

/* A rank of our job: its rings and doorbell are in the node segment, and its heap is ours,
 * so large messages may go single-copy (src/ch3_rndv.c). */
static void attach_rings(MPIDI_VC_t * vc, int my_rank)
{
    int peer = vc->pg_rank;

    vc->ch.out.ring = MPIDI_CH3I_Smheap_ring(peer, my_rank);
    vc->ch.out.pos = vc->ch.out.head_seen = 0;
    vc->ch.in.ring = MPIDI_CH3I_Smheap_ring(my_rank, peer);
    vc->ch.in.pos = vc->ch.in.head_seen = 0;
    vc->ch.geom = &smheap_queue.geom;
    vc->ch.peer_bell = &smheap_queue.bells[peer];
    vc->rndvSend_fn = MPIDI_CH3I_Smheap_RndvSend;
    vc->rndvRecv_fn = MPIDI_CH3I_Smheap_RndvRecv;
    /* below ch3's own limit when heap data goes single-copy */
    vc->eager_max_msg_sz = MPIDI_CH3I_Smheap_eager_max_msg_sz();
}

/* The error stack reaches the user through MPICH's fatal-error print, but Hydra's mpiexec
 * exits as soon as the first rank calls PMI_Abort, and stderr its proxies have not yet
 * forwarded is lost.  So the first rank of each node says why itself, and every rank gives
 * the launcher a moment to forward it before MPI_Init fails. */
static void announce_refusal(int mpi_errno)
{
    if (MPIR_Process.local_rank == 0) {
        char msg[MPI_MAX_ERROR_STRING];

        MPIR_Err_get_string(mpi_errno, msg, sizeof(msg), NULL);
        fprintf(stderr, "%s\n", msg);
        fflush(stderr);
    }
    sleep(1);
}

int MPIDI_CH3_Init(int has_parent, MPIDI_PG_t * pg_p, int pg_rank)
{
    int mpi_errno = MPI_SUCCESS;
    int i;

    MPIR_FUNC_ENTER;

    /* The rings and the shared heap only reach ranks on this node. */
    if (MPIR_Process.num_nodes > 1) {
        MPIR_ERR_SET1(mpi_errno, MPI_ERR_OTHER, "**smheap_multinode", "**smheap_multinode %d",
                      MPIR_Process.num_nodes);
        announce_refusal(mpi_errno);
        goto fn_fail;
    }
    MPL_UNREFERENCED_ARG(has_parent);   /* ch3 connects a spawned job to its parent */
    MPIR_Assert(MPIR_Process.local_size == pg_p->size && MPIR_Process.local_rank == pg_rank);

    MPIR_Comm_fns = &comm_fns;
    smheap_copy_init();
    MPIDI_CH3I_Smheap_mpit_init();

    mpi_errno = MPIDI_CH3I_Smheap_queue_init(pg_p->size, pg_rank);
    MPIR_ERR_CHECK(mpi_errno);
    mpi_errno = MPIDI_CH3I_Smheap_heap_init(pg_p->size, pg_rank);
    MPIR_ERR_CHECK(mpi_errno);
    mpi_errno = MPIDI_CH3I_Smheap_coll_init();
    MPIR_ERR_CHECK(mpi_errno);
    mpi_errno = MPIDI_CH3I_Link_init(pg_rank);
    MPIR_ERR_CHECK(mpi_errno);
    channel_initialized = 1;

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
 * MPIDI_CH3_Init (rings not there yet) and again from MPIDI_CH3_Init once they are; those
 * of other jobs' groups and ch3's temporary connect/accept VCs keep ch3's rendezvous and
 * get their rings from links (src/ch3_link.c). */
int MPIDI_CH3_VC_Init(MPIDI_VC_t * vc)
{
    vc->ch.out.ring = NULL;
    vc->ch.in.ring = NULL;
    vc->ch.geom = NULL;
    vc->ch.peer_bell = NULL;
    vc->ch.out_link = NULL;
    vc->ch.in_link = NULL;
    vc->ch.sendq_head = NULL;
    vc->ch.sendq_tail = NULL;
    vc->ch.pending_next = vc->ch.pending_prev = NULL;
    vc->ch.on_pending_list = FALSE;
    vc->ch.terminate_when_drained = FALSE;
    vc->ch.draining = FALSE;
    vc->ch.recv_active = NULL;

    if (channel_initialized && vc->pg == MPIDI_Process.my_pg &&
        vc->pg_rank != smheap_queue.my_rank)
        attach_rings(vc, smheap_queue.my_rank);
    return MPI_SUCCESS;
}

int MPIDI_CH3_VC_Destroy(MPIDI_VC_t * vc)
{
    MPIDI_CH3I_Link_retire(vc);
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
