/*
 * ch3:smheap -- the ranks of our job on other nodes over libfabric: ch3 packets as
 * messages of a reliable-datagram endpoint, and large data read by the receiver straight
 * from the sender's memory with RDMA (smheap_ofi.h: the protocol and the files).
 *
 * This file holds what smheap_net.c calls: opening the endpoint at MPI_Init, progress
 * (completions, what the provider refused for want of room, sleeping on the completion
 * queue), lost peers, and the close at MPI_Finalize.
 */

#include "smheap_ofi.h"
#include "smheap_packet.h"
#include "smheap_mpit.h"
#include <poll.h>

#define CQ_BATCH 16

int MPIDI_CH3I_Netofi_open(void)
{
    return smheap_ofi.open;
}

int MPIDI_CH3I_Netofi_init(int required)
{
    int mpi_errno = MPI_SUCCESS;
    struct fi_info *info;
    char why[320];
    const char *fi_provider = getenv("FI_PROVIDER");
    int ret;

    if (!required && (fi_provider == NULL || *fi_provider == '\0') &&
        !smheap_ofi_device_present()) {
        if (MPIR_CVAR_CH3_SMHEAP_NET_VERBOSE && MPIR_Process.rank == 0)
            fprintf(stderr, "ch3:smheap: between nodes over TCP sockets: no RDMA device in "
                    "/sys/class/infiniband or /sys/class/cxi, so libfabric would have only "
                    "emulations over the kernel's sockets (FI_PROVIDER=name takes one)\n");
        goto fn_exit;
    }
    if (smheap_ofi_lib_load(why, sizeof(why)) != 0) {
        if (MPIR_CVAR_CH3_SMHEAP_NET_VERBOSE && MPIR_Process.rank == 0)
            fprintf(stderr, "ch3:smheap: between nodes over TCP sockets: %s\n", why);
        MPIR_ERR_CHKANDJUMP1(required, mpi_errno, MPI_ERR_OTHER, "**smheap_ofi_lib",
                             "**smheap_ofi_lib %s", why);
        goto fn_exit;
    }
    ret = smheap_ofi_find_provider(required, &info, why, sizeof(why));
    MPIR_ERR_CHKANDJUMP(ret != 0, mpi_errno, MPI_ERR_OTHER, "**nomem");
    if (info == NULL) {
        if (MPIR_CVAR_CH3_SMHEAP_NET_VERBOSE && MPIR_Process.rank == 0)
            fprintf(stderr, "ch3:smheap: between nodes over TCP sockets: libfabric has %s%s%s\n",
                    why, fi_provider ? " with FI_PROVIDER=" : "", fi_provider ? fi_provider : "");
        MPIR_ERR_CHKANDJUMP2(required, mpi_errno, MPI_ERR_OTHER, "**smheap_ofi_provider",
                             "**smheap_ofi_provider %s %s",
                             fi_provider ? fi_provider : "(unset)", why);
        goto fn_exit;
    }
    ret = smheap_ofi_open(info);
    MPIR_ERR_CHKANDJUMP3(ret != 0, mpi_errno, MPI_ERR_OTHER, "**smheap_ofi_open",
                         "**smheap_ofi_open %s %s %s", info->fabric_attr->prov_name,
                         info->domain_attr->name, smheap_ofi_lib.strerror(-ret));
    smheap_ofi.open = 1;
    if (MPIR_CVAR_CH3_SMHEAP_NET_VERBOSE && MPIR_Process.rank == 0)
        fprintf(stderr, "ch3:smheap: between nodes over libfabric %u.%u, provider %s, domain %s"
                "%s; %s\n",
                FI_MAJOR(smheap_ofi_lib.version()), FI_MINOR(smheap_ofi_lib.version()),
                info->fabric_attr->prov_name, info->domain_attr->name,
                fi_provider ? " (FI_PROVIDER)" : "",
                smheap_ofi.per_message ? "each message's data registered, through the "
                "provider's cache, and the shared heap's pages kept (MPIR_CVAR_CH3_SMHEAP_OFI_"
                "REGISTER)" : smheap_ofi.heap_mr ? "the shared heap registered once" :
                "each message's data registered (the shared heap is off)");

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* ------------------------------------------------------------------------------------ */
/* Sending                                                                              */

int MPIDI_CH3I_Netofi_iSendv(MPIDI_VC_t * vc, MPIR_Request * sreq, struct iovec *iov, int n_iov)
{
    MPIR_Request *made = NULL;

    return smheap_ofi_send_iov(vc, sreq, iov, n_iov, &made);
}

int MPIDI_CH3I_Netofi_iStartMsgv(MPIDI_VC_t * vc, struct iovec *iov, int n_iov,
                                 MPIR_Request ** sreq_ptr)
{
    *sreq_ptr = NULL;
    return smheap_ofi_send_iov(vc, NULL, iov, n_iov, sreq_ptr);
}

/* ------------------------------------------------------------------------------------ */
/* Progress                                                                             */

static int completed(struct fi_cq_msg_entry *e)
{
    int mpi_errno = MPI_SUCCESS;
    int op = *(int *) ((char *) e->op_context + sizeof(struct fi_context));

    switch (op) {
        case OP_SEND:
            smheap_ofi.sends_out--;
            smheap_ofi_put_buf((buf_t *) e->op_context);
            break;
        case OP_RECV:
            mpi_errno = smheap_ofi_received((buf_t *) e->op_context, e->len);
            break;
        case OP_READ:{
                MPIDI_VC_t *vc = ((read_op_t *) e->op_context)->vc;

                smheap_ofi_put_op((read_op_t *) e->op_context);
                vc->ch.ofi->reads_out--;
                if (vc->ch.ofi->reads_out == 0)
                    mpi_errno = smheap_ofi_read_more(vc);
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

    PRIVATELY(got = fi_cq_readerr(smheap_ofi.cq, &err, 0));
    if (got != 1)
        return MPI_SUCCESS;
    if (err.err == FI_ECANCELED)
        return MPI_SUCCESS;
    op = *(int *) ((char *) err.op_context + sizeof(struct fi_context));
    if (op == OP_SEND) {
        smheap_ofi.sends_out--;
        vc = ((buf_t *) err.op_context)->vc;
        smheap_ofi_put_buf((buf_t *) err.op_context);
    } else if (op == OP_READ) {
        vc = ((read_op_t *) err.op_context)->vc;
        vc->ch.ofi->reads_out--;
        smheap_ofi_put_op((read_op_t *) err.op_context);
    }
    if (vc == NULL)
        return MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_FATAL, __func__, __LINE__,
                                    MPI_ERR_OTHER, "**smheap_ofi_recv", NULL);
    return smheap_ofi_peer_lost(vc, err.err);
}

/* Retry what the provider refused for want of room. */
static int retry_stalled(void)
{
    int mpi_errno = MPI_SUCCESS;
    smheap_ofi_peer_t *list = smheap_ofi.stalled_peers;

    smheap_ofi.stalled_peers = NULL;
    while (list != NULL && mpi_errno == MPI_SUCCESS) {
        smheap_ofi_peer_t *peer = list;
        MPIDI_VC_t *vc;

        list = peer->next_stalled;
        peer->out_stalled = 0;
        MPIDI_PG_Get_vc(MPIDI_Process.my_pg, peer->rank, &vc);
        mpi_errno = smheap_ofi_flush_out(vc);
    }
    if (smheap_ofi.stalled_reads > 0 && mpi_errno == MPI_SUCCESS) {
        int i;

        for (i = 0; i < MPIDI_Process.my_pg->size && mpi_errno == MPI_SUCCESS; i++) {
            MPIDI_VC_t *vc;

            MPIDI_PG_Get_vc(MPIDI_Process.my_pg, i, &vc);
            if (vc->ch.ofi && vc->ch.ofi->reads_stalled) {
                vc->ch.ofi->reads_stalled = 0;
                smheap_ofi.stalled_reads--;
                mpi_errno = smheap_ofi_read_more(vc);
            }
        }
    }
    return mpi_errno;
}

/* Hydra said a process died (smheap_net.c): a provider may report nothing of a lost peer
 * until we send to it (rxm over TCP does not), so a rank that only waits for it would wait
 * forever.  Let ch3 fail what waits for it (it completes the receives posted for it with
 * errors), and report the first of ours lost by name. */
int MPIDI_CH3I_Netofi_look_for_deaths(void)
{
    int mpi_errno = MPI_SUCCESS, i;

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
            int err = smheap_ofi_peer_lost_as(vc, "the launcher reported its death");

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

    if (smheap_ofi.polling)    /* a handler re-entered progress */
        return MPI_SUCCESS;
    smheap_ofi.polling = 1;
    PRIVATELY(n = fi_cq_read(smheap_ofi.cq, e, CQ_BATCH));
    if (n == -FI_EAVAIL) {
        mpi_errno = completed_with_error();
        *made_progress = TRUE;
    } else if (n > 0) {
        *made_progress = TRUE;
        for (i = 0; i < n && mpi_errno == MPI_SUCCESS; i++)
            mpi_errno = completed(&e[i]);
    }
    if (mpi_errno == MPI_SUCCESS &&
        (smheap_ofi.stalled_peers != NULL || smheap_ofi.stalled_reads > 0))
        mpi_errno = retry_stalled();
    smheap_ofi.polling = 0;
    return mpi_errno;
}

int MPIDI_CH3I_Netofi_reading_data(void)
{
    return smheap_ofi.reading_peers > 0;
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
        if (vc->ch.ofi == NULL || vc->ch.ofi->failed || smheap_ofi_peer_may_have_left(vc))
            continue;
        ping = smheap_ofi_new_msg(vc, MSG_PING, 0);
        if (ping == NULL)
            break;
        mpi_errno = smheap_ofi_send_control(vc, ping);
    }
    return mpi_errno;
}

int MPIDI_CH3I_Netofi_sleep(int wake_fd, int timeout_ms, int *made_progress, int *slept)
{
    struct fid *fids[1] = { &smheap_ofi.cq->fid };
    struct sleep_args a;
    int ret;

    *slept = 0;
    ret = ping_peers();
    if (ret != MPI_SUCCESS)
        return ret;
    if (smheap_ofi.wait_fd < 0)
        return MPI_SUCCESS;
    PRIVATELY(ret = fi_trywait(smheap_ofi.fabric, fids, 1));
    if (ret != FI_SUCCESS)
        return MPIDI_CH3I_Netofi_poll(made_progress);
    a.fds[0].fd = smheap_ofi.wait_fd;
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
 * endpoint closes only when nothing is left, in _finalize); the peer may leave. */
int MPIDI_CH3I_Netofi_terminate(MPIDI_VC_t * vc)
{
    vc->ch.ofi->closed = 1;
    return MPIDI_CH3U_Handle_connection(vc, MPIDI_VC_EVENT_TERMINATED);
}

#define FINALIZE_WAIT_S 10.0

int MPIDI_CH3I_Netofi_finalize(void)
{
    int mpi_errno = MPI_SUCCESS;
    MPL_time_t start, now;
    double waited;

    if (!smheap_ofi.open)
        return MPI_SUCCESS;
    /* let the last messages (ch3's close packets among them) go; a provider that keeps
     * retrying a dead peer (rxm does) gets FINALIZE_WAIT_S */
    MPL_wtime(&start);
    while (mpi_errno == MPI_SUCCESS &&
           (smheap_ofi.sends_out > 0 || smheap_ofi.stalled_peers != NULL)) {
        int progress = FALSE;

        mpi_errno = MPIDI_CH3I_Netofi_poll(&progress);
        MPL_wtime(&now);
        MPL_wtime_diff(&start, &now, &waited);
        if (waited > FINALIZE_WAIT_S)
            break;
    }
    smheap_ofi_close();
    return mpi_errno;
}
