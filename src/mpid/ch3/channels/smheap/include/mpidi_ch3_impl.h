/*
 * ch3:smheap -- the ch3 layer of the channel (src/): the entry points MPICH calls and what
 * its files share.  Below it, each through its one header: partitioned communication
 * (part/), one-sided communication (rma/), links to other jobs (link/), other nodes (net/),
 * ch3's packets (packet/), the node's rings and doorbells (node/), the copies (copy/), the
 * reduction kernels (reduce/) and the MPI_T counters (mpit/).
 */

#ifndef MPIDI_CH3_IMPL_H_INCLUDED
#define MPIDI_CH3_IMPL_H_INCLUDED

#include "mpidimpl.h"
#include "utlist.h"
#include "smheap_channel.h"
#include "smheap_part.h"
#include "smheap_rma.h"
#include "smheap_link.h"
#include "smheap_net.h"
#include "smheap_packet.h"
#include "smheap_node.h"
#include "smheap_copy.h"
#include "smheap_mpit.h"

/* Set-up (ch3_init.c) */
void MPIDI_CH3I_Smheap_mpit_init(void);    /* ch3_mpit.c: registers the MPI_T variables */
void MPIDI_CH3I_Free_node_map(void);

/* Progress engine (ch3_progress.c) */
int MPIDI_CH3I_Progress_init(void);
int MPIDI_CH3I_Progress_finalize(void);
size_t MPIDI_CH3I_Progress_spin_polls(void);
size_t MPIDI_CH3I_Progress_spin_usec(void);


/* Sending (ch3_isend.c) */
int MPIDI_CH3I_Send_progress_vc(MPIDI_VC_t * vc);
void MPIDI_CH3I_Sendq_mark_pending(MPIDI_VC_t * vc);
int MPIDI_CH3I_Send_pending(int *made_progress);
extern MPIDI_VC_t *MPIDI_CH3I_Pending_vcs;      /* VCs whose send queue is not empty */
/* The close protocol is over and everything sent: ch3 may now destroy the VC. */
int MPIDI_CH3I_Connection_closed(MPIDI_VC_t * vc);
int MPIDI_CH3I_Writev(MPIDI_VC_t * vc, struct iovec **iov, int *n_iov, int timed);
int MPIDI_CH3I_Send_pkt(MPIDI_VC_t * vc, void *pkt, intptr_t size);

/* The shared heap (src/ch3_heap.c): checked at MPI_Init; 1 if every local rank allocates
 * from the same shared region, so a peer's heap buffer can be read directly. */
int MPIDI_CH3I_Smheap_heap_init(int local_size, int local_rank);

/* Single-copy rendezvous (src/ch3_rndv.c): the VC's rndvSend_fn and rndvRecv_fn, and the
 * handlers of the channel's packets. */
int MPIDI_CH3I_Smheap_RndvSend(MPIR_Request ** sreq_p, const void *buf, MPI_Aint count,
                               MPI_Datatype datatype, int dt_contig, intptr_t data_sz,
                               MPI_Aint dt_true_lb, int rank, int tag, MPIR_Comm * comm,
                               int context_offset);
int MPIDI_CH3I_Smheap_RndvRecv(MPIDI_VC_t * vc, MPIR_Request * rreq);
int MPIDI_CH3I_Smheap_rndv_init(MPIDI_CH3_PktHandler_Fcn * pktArray[], int arraySize);
int MPIDI_CH3I_Smheap_eager_max_msg_sz(void);
extern int MPIDI_CH3I_Smheap_cma_ready;  /* 1 if this rank copies through the kernel */

/* A ring VC's queue: the progress engine pushes what is on it. */
static inline void MPIDI_CH3I_Sendq_enqueue(MPIDI_VC_t * vc, MPIR_Request * sreq)
{
    MPIDI_CH3I_Sendq_append(vc, sreq);
    MPIDI_CH3I_Sendq_mark_pending(vc);
}

/* True when the channel has a VC to this rank (every rank of MPI_COMM_WORLD but us). */
int MPIDI_CH3I_Shm_supported(void);

/* Shared-memory windows: ch3:nemesis's implementation (compiled with this channel)
 * needs these. */
int MPIDI_CH3_SHM_Win_shared_query(MPIR_Win * win_ptr, int target_rank, MPI_Aint * size,
                                   int *disp_unit, void *baseptr);
int MPIDI_CH3_SHM_Win_free(MPIR_Win ** win_ptr);

#define MPIDI_CH3I_SHM_MUTEX_LOCK(win_ptr)                                              \
    do {                                                                                \
        MPIR_AssertDeclValue(int pt_err, 0);                                            \
        pt_err = pthread_mutex_lock((win_ptr)->shm_mutex);                              \
        MPIR_Assert(pt_err == 0);                                                       \
    } while (0)

#define MPIDI_CH3I_SHM_MUTEX_UNLOCK(win_ptr)                                            \
    do {                                                                                \
        MPIR_AssertDeclValue(int pt_err, 0);                                            \
        pt_err = pthread_mutex_unlock((win_ptr)->shm_mutex);                            \
        MPIR_Assert(pt_err == 0);                                                       \
    } while (0)

#define MPIDI_CH3I_SHM_MUTEX_INIT(win_ptr)                                              \
    do {                                                                                \
        int pt_err;                                                                     \
        MPL_proc_mutex_create((win_ptr)->shm_mutex, &pt_err);                           \
        MPIR_ERR_CHECK(pt_err);                                                         \
    } while (0);

#define MPIDI_CH3I_SHM_MUTEX_DESTROY(win_ptr)                                           \
    do {                                                                                \
        int pt_err = pthread_mutex_destroy((win_ptr)->shm_mutex);                       \
        MPIR_ERR_CHKANDJUMP1(pt_err, mpi_errno, MPI_ERR_OTHER, "**pthread_mutex",       \
                             "**pthread_mutex %s", strerror(pt_err));                   \
    } while (0);

typedef struct MPIDI_SHM_Win {
    struct MPIDI_SHM_Win *prev;
    struct MPIDI_SHM_Win *next;
    MPIR_Win *win;
} MPIDI_SHM_Win_t;

typedef MPIDI_SHM_Win_t *MPIDI_SHM_Wins_list_t;

extern MPIDI_SHM_Wins_list_t shm_wins_list;

#define MPIDI_SHM_Wins_next_and_continue(elem) {elem = elem->next; continue;}

static inline int MPIDI_CH3I_SHM_Wins_append(MPIDI_SHM_Wins_list_t * list, MPIR_Win * win)
{
    int mpi_errno = MPI_SUCCESS;
    MPIDI_SHM_Win_t *tmp_ptr;
    MPIR_CHKPMEM_DECL(1);

    MPIR_CHKPMEM_MALLOC(tmp_ptr, MPIDI_SHM_Win_t *, sizeof(MPIDI_SHM_Win_t),
                        mpi_errno, "SHM window entry", MPL_MEM_SHM);
    tmp_ptr->next = NULL;
    tmp_ptr->win = win;
    DL_APPEND(*list, tmp_ptr);

  fn_exit:
    MPIR_CHKPMEM_COMMIT();
    return mpi_errno;
  fn_fail:
    MPIR_CHKPMEM_REAP();
    goto fn_exit;
}

static inline void MPIDI_CH3I_SHM_Wins_unlink(MPIDI_SHM_Wins_list_t * list, MPIR_Win * shm_win)
{
    MPIDI_SHM_Win_t *elem = NULL;
    MPIDI_SHM_Win_t *tmp_elem = NULL;

    LL_SEARCH_SCALAR(*list, elem, win, shm_win);
    if (elem != NULL) {
        tmp_elem = elem;
        DL_DELETE(*list, elem);
        MPL_free(tmp_elem);
    }
}

#endif /* MPIDI_CH3_IMPL_H_INCLUDED */
