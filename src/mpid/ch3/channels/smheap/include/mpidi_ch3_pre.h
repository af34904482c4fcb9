/*
 * ch3:smheap -- channel-private parts of ch3's VC, request, progress state and window.
 * Included by ch3's mpidpre.h before the device types are complete.
 */

#ifndef MPIDI_CH3_PRE_H_INCLUDED
#define MPIDI_CH3_PRE_H_INCLUDED

#if defined(HAVE_PTHREAD_H)
#include <pthread.h>
#endif

#include "smheap_node.h"

#define MPIDI_DEV_IMPLEMENTS_KVS

typedef struct {
    /* the shared-heap collectives' state (src/coll/smheap_coll.h); NULL when the
     * communicator keeps MPICH's collectives */
    struct smheap_coll_comm *coll;
} MPIDI_CH3I_CH_comm_t;

/* Where a socket VC's connection stands (ch3's socket utilities, util/sock, set it). */
typedef enum MPIDI_CH3I_VC_state {
    MPIDI_CH3I_VC_STATE_UNCONNECTED,
    MPIDI_CH3I_VC_STATE_CONNECTING,
    MPIDI_CH3I_VC_STATE_CONNECTED,
    MPIDI_CH3I_VC_STATE_FAILED
} MPIDI_CH3I_VC_state_t;

typedef struct MPIDI_CH3I_VC {
    /* The VC's process among the ranks of our job on this node (the index of its rings,
     * doorbell and heap slice), or -1: a process on another node, reached through a
     * socket (net/smheap_net_sock.c), or of another job, reached through links. */
    int node_rank;

    /* Our ends of the two rings between this process and the VC's process: in the node
     * segment for a rank of our job, in link segments for a process of another job
     * (link/smheap_link.c).  A ring is NULL until it is there: always for the self VC (ch3
     * handles self messages itself), until the first message either way for a link. */
    smheap_ring_end_t out;
    smheap_ring_end_t in;
    int out_populated;          /* our mapping of `out` is faulted in (src/ch3_isend.c) */
    const smheap_ring_geometry_t *geom;
    struct smheap_doorbell *peer_bell;  /* rung when `out` gets a cell */
    struct smheap_link *out_link;       /* the link segments holding the rings, if any */
    struct smheap_link *in_link;

    /* Sends that did not fit in the ring, in order; sendq_head is the active one.
     * ch3 expects a field with this name in the channel part of the VC. */
    struct MPIR_Request *sendq_head;
    struct MPIR_Request *sendq_tail;
    struct MPIDI_VC *pending_next, *pending_prev;       /* on the list of VCs with queued sends */
    int on_pending_list;
    int terminate_when_drained;         /* Connection_terminate came with sends queued */
    int draining;                       /* MPIDI_CH3I_Send_progress_vc runs on this VC */

    /* The receive in progress: a message whose data continues in later cells. */
    struct MPIR_Request *recv_active;

    /* The kernel would not copy between us and the VC's process (src/ch3_rndv.c). */
    int cma_refused;
    /* Our rendezvous sends to it that it has not answered yet: it is busy receiving from
     * us, so do not ask it to help with our receives (src/ch3_rndv.c). */
    int rndv_unanswered;

    /* A process on another node (node_rank -1, same job or not): its socket connection,
     * under the names ch3's socket utilities (util/sock) use.  `sendq_head` above is its
     * send queue, the head being written. */
    int remote;
    MPIDI_CH3I_VC_state_t state;
    struct MPIDI_CH3I_Sock *sock;
    struct MPIDI_CH3I_Connection *conn;
    char *rbuf;                 /* bytes read ahead of their packets' handling */
    size_t rbuf_len;            /* a partial packet header kept at its start */
    int rbuf_posted;            /* the socket's posted read goes into rbuf */
    int recv_piece;             /* how the posted data read was cut (net/smheap_net_sock.c) */
    int send_piece;             /* how the posted data write was cut */
    /* A rank of our job on another node reached over libfabric instead: its address and
     * what is in flight with it (net/smheap_ofi.h); NULL for a socket VC. */
    struct smheap_ofi_peer *ofi;
} MPIDI_CH3I_VC;

#define MPIDI_CH3_VC_DECL struct MPIDI_CH3I_VC ch;

struct MPIDI_CH3I_Request {
    struct MPIDI_VC *vc;
    /* A single-copy rendezvous receive: where the sender's data lies in the shared heap
     * (NULL for ch3's own rendezvous). */
    const void *peer_buf;
    int peer_pid;               /* 0: peer_buf is in the heap; else the sender's pid, for
                                 * reaching it through the kernel (smheap_cma.h) */
    /* The counters through which sender and receiver share a single copy (src/ch3_rndv.c):
     * owned by the send request, borrowed by the receive request.  NULL: no sharing. */
    struct smheap_copy_job *copy_job;
    int unanswered;             /* counted in its VC's rndv_unanswered */
    int pace_timed;             /* its copies into a ring may be timed (smheap_pace.h) */
    /* A partitioned request's state (part/smheap_part.c); for a PART_DATA packet's receive,
     * where its data goes in the message. */
    struct smheap_part *part;
    intptr_t part_offset;
};

#define MPIDI_CH3_REQUEST_DECL struct MPIDI_CH3I_Request ch;
#define MPIDI_CH3_REQUEST_INIT(req_) \
    ((req_)->ch.peer_buf = NULL, (req_)->ch.copy_job = NULL, (req_)->ch.unanswered = 0, \
     (req_)->ch.pace_timed = 0, (req_)->ch.part = NULL)

/* The channel's packets: single-copy rendezvous (src/ch3_rndv.c), partitioned
 * communication (part/smheap_part.c), and the socket connection set-up of ch3's socket
 * utilities (util/sock). */
#define MPIDI_CH3_PKT_ENUM \
    MPIDI_CH3I_SMHEAP_PKT_RTS, MPIDI_CH3I_SMHEAP_PKT_HELP, MPIDI_CH3I_SMHEAP_PKT_DONE, \
    MPIDI_CH3I_SMHEAP_PKT_PART_INIT, MPIDI_CH3I_SMHEAP_PKT_PART_CTS, \
    MPIDI_CH3I_SMHEAP_PKT_PART_DATA, \
    MPIDI_CH3I_PKT_SC_OPEN_REQ, MPIDI_CH3I_PKT_SC_CONN_ACCEPT, MPIDI_CH3I_PKT_SC_OPEN_RESP, \
    MPIDI_CH3I_PKT_SC_CLOSE

/* MPI-4 partitioned communication is the channel's (part/smheap_part.c): ch3 calls
 * MPIDI_CH3_Part_start from MPID_Startall and MPIDI_CH3_Part_request_free_hook as
 * MPID_Part_request_free_hook (maint/patches/0004). */
#define MPIDI_CH3_HAS_PARTITIONED 1

typedef struct MPIDI_CH3I_Progress_state {
    int completion_count;
} MPIDI_CH3I_Progress_state;

#define MPIDI_CH3_PROGRESS_STATE_DECL MPIDI_CH3I_Progress_state ch;

extern MPL_atomic_int_t MPIDI_CH3I_progress_completion_count;

/* A locked add is a full barrier: it waits until this thread's stores (the cell of the
 * message just sent) have left for the reader's core, and ch3 signals completion twice for
 * every request.  Only threads of this process read the count, so with one thread in MPI
 * at a time (not MPI_THREAD_MULTIPLE; the channel starts no threads) a plain add will do. */
#if defined(MPICH_IS_THREADED)
#define MPIDI_CH3I_INCR_PROGRESS_COMPLETION_COUNT                                       \
    do {                                                                                \
        if (MPIR_ThreadInfo.thread_provided == MPI_THREAD_MULTIPLE)                     \
            MPL_atomic_fetch_add_int(&MPIDI_CH3I_progress_completion_count, 1);         \
        else                                                                            \
            MPL_atomic_relaxed_store_int(&MPIDI_CH3I_progress_completion_count,         \
                MPL_atomic_relaxed_load_int(&MPIDI_CH3I_progress_completion_count) + 1); \
    } while (0)
#else
#define MPIDI_CH3I_INCR_PROGRESS_COMPLETION_COUNT                                       \
    MPL_atomic_relaxed_store_int(&MPIDI_CH3I_progress_completion_count,                 \
        MPL_atomic_relaxed_load_int(&MPIDI_CH3I_progress_completion_count) + 1)
#endif

#if defined(MPICH_IS_THREADED)
/* A thread that completes a request may have to wake another thread of this
 * process that sleeps on our doorbell with the global lock released.  (Tested inline: ch3
 * signals completion twice for every request, and most processes have one thread.) */
void MPIDI_CH3I_Progress_wakeup(void);
#define MPIDI_CH3I_PROGRESS_WAKEUP \
    do { if (MPIR_ThreadInfo.isThreaded) MPIDI_CH3I_Progress_wakeup(); } while (0)
#endif

/* Shared-memory windows (the implementation is ch3:nemesis's, see Makefile.mk). */
typedef pthread_mutex_t MPIDI_CH3I_SHM_MUTEX;

#define MPIDI_CH3_WIN_DECL                                                              \
    void *shm_base_addr;        /* base address of shared memory region */              \
    MPI_Aint shm_segment_len;   /* size of shared memory region */                      \
    MPL_shm_hnd_t shm_segment_handle; /* handle to shared memory region */              \
    MPIDI_CH3I_SHM_MUTEX *shm_mutex;    /* lock for accumulate/atomic operations */     \
    MPL_shm_hnd_t shm_mutex_segment_handle; /* handle to interprocess mutex memory */   \
    void *info_shm_base_addr;   /* base address of shared memory for window info */     \
    MPI_Aint info_shm_segment_len; /* size of shared memory for window info */          \
    MPL_shm_hnd_t info_shm_segment_handle; /* handle to shared memory for window info */ \
    struct MPIDI_CH3I_Win_heap *smheap; /* what the shared heap adds (rma/) */          \
    unsigned char *smheap_in_place; /* by rank: its memory is in the heap (NULL: all) */ \
    int smheap_set_up;          /* the heap's part is in place: ch3 may grant locks */

/* Where ch3's RMA operations went (MPI_T smheap_rma_ops_in_place, smheap_rma_ops_queued). */
extern unsigned long long PVAR_COUNTER_smheap_rma_ops_in_place;
extern unsigned long long PVAR_COUNTER_smheap_rma_ops_queued;
#define MPIDI_CH3_RMA_OP_IN_PLACE(win_ptr) (PVAR_COUNTER_smheap_rma_ops_in_place++)
#define MPIDI_CH3_RMA_OP_QUEUED(win_ptr) (PVAR_COUNTER_smheap_rma_ops_queued++)

/* A window of ranks that share the heap may be a shared-memory window whose memory is only
 * partly in the heap: a dynamic window (the target bytes checked operation by operation),
 * or one of MPI_Win_create where some ranks gave memory outside it
 * (rma/smheap_rma_window.c).  Only what lies in the heap is reached in place. */
int MPIDI_CH3I_Win_dynamic_in_place(MPI_Aint disp, MPI_Aint count, MPI_Datatype datatype);
#define MPIDI_CH3_RMA_TARGET_IN_PLACE(win_ptr, target_rank, disp, count, datatype)          \
    ((win_ptr)->create_flavor == MPI_WIN_FLAVOR_DYNAMIC ?                                   \
     MPIDI_CH3I_Win_dynamic_in_place(disp, count, datatype) :                               \
     (win_ptr)->smheap_in_place == NULL || (win_ptr)->smheap_in_place[target_rank])

/* Where a window spans nodes, the node's origins take the locks of its targets in the
 * heap, and a target grants ch3's lock packets only while it holds its own lock word for
 * them (rma/smheap_rma_hold.c, maint/patches/0016). */
struct MPIR_Win;
int MPIDI_CH3I_Win_lock_grant(struct MPIR_Win *win, int lock_type);
void MPIDI_CH3I_Win_lock_released(struct MPIR_Win *win);
#define MPIDI_CH3_WIN_LOCK_GRANT(win_ptr, lock_type) \
    MPIDI_CH3I_Win_lock_grant(win_ptr, lock_type)
#define MPIDI_CH3_WIN_LOCK_RELEASED(win_ptr) MPIDI_CH3I_Win_lock_released(win_ptr)

#endif /* MPIDI_CH3_PRE_H_INCLUDED */
