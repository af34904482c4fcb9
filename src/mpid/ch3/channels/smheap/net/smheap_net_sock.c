/*
 * ch3:smheap -- processes on other nodes: ch3 packets over TCP, with MPICH's own socket
 * code.  The poll()-based socket layer is ch3:sock's (channels/sock/src/sock.c, compiled
 * with this channel) and the connections are made by ch3's socket utilities (util/sock:
 * business card, connect on the first send, the open/accept handshake with head-to-head
 * resolution).  This file does for a VC on another node what ch3:sock's channel files do
 * for every VC: queue sends behind the connection and turn socket events into ch3 packet
 * and request handling.
 *
 * The same path serves processes of other jobs on other nodes (spawned, connected,
 * joined): their VCs come here when the node identity in their business card is not ours
 * (link/smheap_link.c), and a port of ours names our listener as well as our link address.
 *
 * Every process listens, as under ch3:sock and nemesis, since a process of a later job may
 * have to reach it; but until a connection is made (sock_in_use unset) the
 * sockets cost a job on one node nothing: the listener is looked at only as often as the
 * links' one (MPIDI_CH3I_Netsock_poll_listener).  Once a connection is in use the progress
 * engine polls the sockets every SOCK_POLL_INTERVAL rounds and before it sleeps; an idle
 * rank then sleeps in poll() on the sockets and on a datagram socket named in its
 * doorbells, so that a local peer's ring (which sends that socket a byte when its owner
 * sleeps) and a remote packet both wake it.
 */

#include "smheap_net_impl.h"
#include "smheap_packet.h"
#include "smheap_mpit.h"
#include "ch3usock.h"
#include "mpidu_sock.h"
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

MPIDI_CH3I_Sock_set_t MPIDI_CH3I_sock_set;     /* util/sock connects through this set */
static int sock_in_use;          /* a connection is made (or the job spans nodes over TCP) */
static int sockpath_open;       /* the set, the listener and the wake socket are there */

static int wake_fd = -1;        /* our doorbells' datagram socket */
static MPIDI_CH3I_Sock_t wake_sock;
static char wake_name[SMHEAP_DOORBELL_NAME_LEN];
static char wake_byte;
static int handling;            /* an event handler re-entered progress */
static int data_reads;          /* connections in the middle of reading a message's data */

/* ------------------------------------------------------------------------------------ */
/* Set-up                                                                               */

/* A datagram socket in the abstract namespace (pid and clock make the name unique on the
 * node while we live), watched by the socket set like any connection. */
static int open_wake_socket(void)
{
    int mpi_errno = MPI_SUCCESS;
    struct sockaddr_un sa;
    struct timespec ts;
    size_t n;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    snprintf(wake_name, sizeof(wake_name), "smheap-wake-%d-%llx", (int) getpid(),
             (unsigned long long) ts.tv_sec * 1000000000ULL + (unsigned long long) ts.tv_nsec);
    n = strlen(wake_name);
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    memcpy(sa.sun_path + 1, wake_name, n);
    wake_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    MPIR_ERR_CHKANDJUMP2(wake_fd < 0 ||
                         bind(wake_fd, (struct sockaddr *) &sa,
                              (socklen_t) (offsetof(struct sockaddr_un, sun_path) + 1 + n)) != 0,
                         mpi_errno, MPI_ERR_OTHER, "**smheap_wake_socket",
                         "**smheap_wake_socket %s %s", wake_name, strerror(errno));
    mpi_errno = MPIDI_CH3I_Sock_native_to_sock(MPIDI_CH3I_sock_set, wake_fd, &wake_fd,
                                               &wake_sock);
    MPIR_ERR_CHECK(mpi_errno);
    mpi_errno = MPIDI_CH3I_Sock_post_read(wake_sock, &wake_byte, 1, 1, NULL);
    MPIR_ERR_CHECK(mpi_errno);

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

void MPIDI_CH3I_Netsock_vc_init(MPIDI_VC_t * vc)
{
    vc->ch.state = MPIDI_CH3I_VC_STATE_UNCONNECTED;
    vc->ch.sock = MPIDI_CH3I_SOCK_INVALID_SOCK;
    vc->ch.conn = NULL;
}

/* in_use: ranks of our job on other nodes talk through sockets, which are in use at once. */
int MPIDI_CH3I_Netsock_init(int in_use)
{
    int mpi_errno = MPI_SUCCESS;

    MPIR_FUNC_ENTER;

    mpi_errno = MPIDI_CH3I_Sock_init();
    MPIR_ERR_CHECK(mpi_errno);
    mpi_errno = MPIDI_CH3I_Sock_create_set(&MPIDI_CH3I_sock_set);
    MPIR_ERR_CHECK(mpi_errno);
    mpi_errno = MPIDU_CH3I_SetupListener(MPIDI_CH3I_sock_set);
    MPIR_ERR_CHECK(mpi_errno);
    mpi_errno = open_wake_socket();
    MPIR_ERR_CHECK(mpi_errno);
    sockpath_open = 1;
    sock_in_use = in_use;

  fn_exit:
    MPIR_FUNC_EXIT;
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPIDI_CH3I_Netsock_in_use(void)
{
    return sock_in_use;
}

int MPIDI_CH3I_Netsock_wake_fd(void)
{
    return wake_fd;
}

/* Our listener's address, for the business card the job publishes. */
int MPIDI_CH3I_Netsock_add_card(int pg_rank, char **card, int *room)
{
    if (!sockpath_open)
        return MPI_SUCCESS;
    return MPIDI_CH3U_Get_business_card_sock(pg_rank, card, room);
}

/* A doorbell of ours: when it is rung while we sleep in poll(), the ringer also sends our
 * wake socket a byte. */
void MPIDI_CH3I_Netsock_listen_for_wakeups(smheap_doorbell_t * bell)
{
    if (bell->wake_socket[0] == '\0')
        smheap_doorbell_set_wake_socket(bell, wake_name);
}

int MPIDI_CH3I_Netsock_finalize(void)
{
    int mpi_errno = MPI_SUCCESS;
    MPIDI_CH3I_Connection_t *conn = NULL;

    MPIR_FUNC_ENTER;

    if (!sockpath_open)
        goto fn_exit;
    sock_in_use = 1;    /* the listener's close is an event to wait for */
    mpi_errno = MPIDU_CH3I_ShutdownListener();
    MPIR_ERR_CHECK(mpi_errno);
    /* the wake socket is closed with the others; it has no connection to close */
    MPIDI_CH3I_Sock_close_open_sockets(MPIDI_CH3I_sock_set, (void **) &conn);
    while (conn != NULL) {
        if ((void *) conn != (void *) &wake_fd) {
            conn->state = CONN_STATE_CLOSING;
            mpi_errno = MPIDI_CH3_Sockconn_handle_close_event(conn);
            MPIR_ERR_CHECK(mpi_errno);
        }
        MPIDI_CH3I_Sock_close_open_sockets(MPIDI_CH3I_sock_set, (void **) &conn);
    }
    MPIDI_CH3I_Sock_destroy_set(MPIDI_CH3I_sock_set);
    MPIDI_CH3I_Sock_finalize();
    wake_fd = -1;
    sockpath_open = 0;
    sock_in_use = 0;

  fn_exit:
    MPIR_FUNC_EXIT;
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* A VC of another job on another node (its card names another node): it sends through its
 * socket from now on, connecting at its first message. */
void MPIDI_CH3I_Netsock_adopt(MPIDI_VC_t * vc)
{
    vc->ch.remote = TRUE;
    sock_in_use = 1;
}

/* The temporary VC of MPI_Comm_connect to a port on another node: ch3's socket utilities
 * connect to the listener the port names and tell it which port. */
int MPIDI_CH3I_Netsock_connect_to_root(const char *port_name, MPIDI_VC_t ** new_vc)
{
    int mpi_errno = MPI_SUCCESS;

    MPIR_ERR_CHKANDJUMP1(!sockpath_open, mpi_errno, MPI_ERR_PORT, "**smheap_link_card",
                         "**smheap_link_card %s", port_name);
    mpi_errno = MPIDI_CH3I_Connect_to_root_sock(port_name, new_vc);
    MPIR_ERR_CHECK(mpi_errno);
    MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_remote_connects, 1);
    MPIDI_CH3I_Netsock_adopt(*new_vc);

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* ------------------------------------------------------------------------------------ */
/* Sending                                                                              */

/* The send queue holds a reference on each request, as ch3:sock's does: the request must
 * outlive its completion until it leaves the queue. */
static void sendq_enqueue(MPIDI_VC_t * vc, MPIR_Request * sreq)
{
    MPIR_Request_add_ref(sreq);
    MPIDI_CH3I_Sendq_append(vc, sreq);
}

static void sendq_dequeue(MPIDI_VC_t * vc)
{
    MPIR_Request_free(MPIDI_CH3I_Sendq_dequeue(vc));
}

/* Skip the first nb bytes of iov[0..*n): returns the index of the first entry not
 * written in full (that entry adjusted), or *n when all was. */
static int skip_written(struct iovec *iov, int n, size_t nb)
{
    int i;

    for (i = 0; i < n; i++) {
        if (iov[i].iov_len > nb) {
            iov[i].iov_base = (char *) iov[i].iov_base + nb;
            iov[i].iov_len -= nb;
            return i;
        }
        nb -= iov[i].iov_len;
    }
    return n;
}

/* Keep iov[first..n) in sreq; a header not yet written moves into the request (the
 * caller's may live on its stack). */
static void save_unwritten(MPIR_Request * sreq, struct iovec *iov, int n, int first,
                           const void *header)
{
    int i;

    for (i = first; i < n; i++)
        sreq->dev.iov[i - first] = iov[i];
    if (iov[first].iov_base >= header &&
        (char *) iov[first].iov_base < (const char *) header + sizeof(MPIDI_CH3_Pkt_t)) {
        size_t into = (char *) iov[first].iov_base - (const char *) header;

        sreq->dev.pending_pkt = *(const MPIDI_CH3_Pkt_t *) header;
        sreq->dev.iov[0].iov_base = (char *) &sreq->dev.pending_pkt + into;
    }
    sreq->dev.iov_offset = 0;
    sreq->dev.iov_count = n - first;
}

/* The request at the head of vc's queue has written its iov: complete it or let ch3
 * reload the iov. */
static int request_written(MPIDI_VC_t * vc, MPIR_Request * sreq, int *complete)
{
    int (*reqFn) (MPIDI_VC_t *, MPIR_Request *, int *) = sreq->dev.OnDataAvail;

    if (reqFn == NULL) {
        MPIR_Assert(MPIDI_Request_get_type(sreq) != MPIDI_REQUEST_TYPE_GET_RESP);
        *complete = TRUE;
        return MPID_Request_complete(sreq);
    }
    return reqFn(vc, sreq, complete);
}

/* A transfer is posted a piece at a time.  The socket layer reports a posted transfer only
 * once it is whole, so a big one would look to the progress engine like no progress at all:
 * the rank would go to sleep in the middle of it and each segment would have to wake it (a
 * receiver asleep costs its sender a wake-up per segment, which eats into the bandwidth;
 * figures: doc/p2p.md).  A piece is either the rest of an entry of at least PIECE_BYTES,
 * reported at every read or write that moves some of it (piece 0), or as many leading
 * entries as make less than PIECE_BYTES together, reported when all of them moved (piece =
 * their number).  -1: the transfer was posted whole (ch3's socket utilities post the first
 * write of a new connection themselves). */
#define PIECE_BYTES (64 * 1024)

static int next_piece(const struct iovec *iov, int n)
{
    size_t sum = 0;
    int k = 0;

    if (iov[0].iov_len >= PIECE_BYTES)
        return 0;
    while (k < n && sum + iov[k].iov_len < PIECE_BYTES)
        sum += iov[k++].iov_len;
    return k;
}

/* nb bytes of the posted piece moved: drop what is done from the front of iov[0..*n), and
 * say whether anything is left to post. */
static int piece_moved(struct iovec *iov, int *n, int *piece, size_t nb)
{
    int done = *piece;

    if (done == 0) {
        iov[0].iov_base = (char *) iov[0].iov_base + nb;
        iov[0].iov_len -= nb;
        done = iov[0].iov_len == 0;
    }
    memmove(iov, iov + done, (*n - done) * sizeof(*iov));
    *n -= done;
    *piece = -1;
    return *n > 0;
}

/* Post the write of the next piece of what sreq has left. */
static int post_send_data(MPIDI_CH3I_Connection_t * conn, MPIR_Request * sreq)
{
    struct iovec *iov = sreq->dev.iov;
    int piece = next_piece(iov, sreq->dev.iov_count);

    conn->send_active = sreq;
    conn->vc->ch.send_piece = piece;
    if (piece == 0)
        return MPIDI_CH3I_Sock_post_write(conn->sock, iov[0].iov_base, 1, iov[0].iov_len, NULL);
    return MPIDI_CH3I_Sock_post_writev(conn->sock, iov, piece, NULL);
}

/* Start writing the queue's head, if the connection is up and not already writing. */
static int post_head(MPIDI_VC_t * vc)
{
    MPIR_Request *sreq = vc->ch.sendq_head;

    if (sreq == NULL || vc->ch.state != MPIDI_CH3I_VC_STATE_CONNECTED || vc->ch.conn->send_active)
        return MPI_SUCCESS;
    return post_send_data(vc->ch.conn, sreq);
}

/* The connection broke while writing: the request fails, and so does the VC. */
static int write_failed(MPIDI_VC_t * vc, MPIR_Request * sreq, int rc)
{
    vc->ch.state = MPIDI_CH3I_VC_STATE_FAILED;
    MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_remote_failures, 1);
    sreq->status.MPI_ERROR = MPIR_Err_create_code(rc, MPIR_ERR_RECOVERABLE, __func__, __LINE__,
                                                  MPIX_ERR_PROC_FAILED, "**smheap_remote_lost",
                                                  "**smheap_remote_lost %d", vc->pg_rank);
    MPID_Request_complete(sreq);
    return sreq->status.MPI_ERROR;
}

/* Send iov on vc's socket, or queue it behind what is there.  sreq may be NULL (a
 * message without a request): one is made if anything must wait, and returned in
 * *queued.  The header always travels at the fixed size of the largest packet. */
static int send_or_queue(MPIDI_VC_t * vc, MPIR_Request * sreq, struct iovec *iov, int n_iov,
                         MPIR_Request ** queued)
{
    int mpi_errno = MPI_SUCCESS;
    const void *header = iov[0].iov_base;
    size_t written = 0, total = 0;
    int first = 0, i, complete;

    MPIR_Assert(n_iov <= MPL_IOV_LIMIT && iov[0].iov_len <= sizeof(MPIDI_CH3_Pkt_t));
    iov[0].iov_len = sizeof(MPIDI_CH3_Pkt_t);
    for (i = 0; i < n_iov; i++)
        total += iov[i].iov_len;
    MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_remote_msgs, 1);
    MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_remote_bytes, total - sizeof(MPIDI_CH3_Pkt_t));
    *queued = NULL;

    if (vc->ch.state == MPIDI_CH3I_VC_STATE_FAILED) {
        if (sreq == NULL) {
            sreq = MPIR_Request_create_complete(MPIR_REQUEST_KIND__SEND);
            MPIR_ERR_CHKANDJUMP(sreq == NULL, mpi_errno, MPI_ERR_OTHER, "**nomemreq");
            *queued = sreq;
        }
        MPIR_ERR_SET1(sreq->status.MPI_ERROR, MPIX_ERR_PROC_FAILED, "**smheap_remote_lost",
                      "**smheap_remote_lost %d", vc->pg_rank);
        if (*queued == NULL)
            mpi_errno = MPID_Request_complete(sreq);
        goto fn_exit;
    }

    if (vc->ch.state == MPIDI_CH3I_VC_STATE_CONNECTED && vc->ch.sendq_head == NULL) {
        int rc = MPIDI_CH3I_Sock_writev(vc->ch.sock, iov, n_iov, &written);

        if (rc != MPI_SUCCESS) {
            if (sreq == NULL) {
                sreq = MPIR_Request_create(MPIR_REQUEST_KIND__SEND);
                MPIR_ERR_CHKANDJUMP(sreq == NULL, mpi_errno, MPI_ERR_OTHER, "**nomemreq");
                MPIR_Object_set_ref(sreq, 2);
                *queued = sreq;
            }
            mpi_errno = write_failed(vc, sreq, rc);
            goto fn_exit;
        }
        first = skip_written(iov, n_iov, written);
        if (first == n_iov) {   /* all of it went */
            if (sreq == NULL)
                goto fn_exit;
            mpi_errno = request_written(vc, sreq, &complete);
            MPIR_ERR_CHECK(mpi_errno);
            if (complete)
                goto fn_exit;
            /* OnDataAvail loaded more of the message into the request's iov */
            sendq_enqueue(vc, sreq);
            mpi_errno = post_head(vc);
            goto fn_exit;
        }
    }

    if (sreq == NULL) {
        sreq = MPIR_Request_create(MPIR_REQUEST_KIND__SEND);
        MPIR_ERR_CHKANDJUMP(sreq == NULL, mpi_errno, MPI_ERR_OTHER, "**nomemreq");
        MPIR_Object_set_ref(sreq, 2);   /* the caller's and the completion's */
        sreq->dev.OnDataAvail = NULL;
        *queued = sreq;
    }
    save_unwritten(sreq, iov, n_iov, first, header);
    sendq_enqueue(vc, sreq);
    if (vc->ch.state == MPIDI_CH3I_VC_STATE_UNCONNECTED) {
        MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_remote_connects, 1);
        sock_in_use = 1;
        mpi_errno = MPIDI_CH3I_VC_post_sockconnect(vc);
    } else
        mpi_errno = post_head(vc);
    MPIR_ERR_CHECK(mpi_errno);

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPIDI_CH3I_Netsock_iSendv(MPIDI_VC_t * vc, MPIR_Request * sreq, struct iovec *iov,
                               int n_iov)
{
    MPIR_Request *queued;

    return send_or_queue(vc, sreq, iov, n_iov, &queued);
}

int MPIDI_CH3I_Netsock_iStartMsgv(MPIDI_VC_t * vc, struct iovec *iov, int n_iov,
                                   MPIR_Request ** sreq_ptr)
{
    return send_or_queue(vc, NULL, iov, n_iov, sreq_ptr);
}

/* ch3 is done with a VC on another node (the close protocol is over). */
int MPIDI_CH3I_Netsock_terminate(MPIDI_VC_t * vc)
{
    MPIDI_CH3I_Connection_t *conn = vc->ch.conn;

    if (conn == NULL || vc->ch.state != MPIDI_CH3I_VC_STATE_CONNECTED)
        return MPIDI_CH3U_Handle_connection(vc, MPIDI_VC_EVENT_TERMINATED);
    conn->state = CONN_STATE_CLOSING;
    return MPIDI_CH3I_Sock_post_close(vc->ch.sock);
}

/* ------------------------------------------------------------------------------------ */
/* Socket events                                                                        */

/* Bytes a connection reads at once when it looks for the next packet. */
#define READ_AHEAD 16384

/* Post the read of the next packet: at least its header, and up to READ_AHEAD bytes into
 * the VC's buffer, so that a small message's header and data, and the packets behind them,
 * come with one read (as nemesis's tcp module reads).  Without a buffer, the header alone. */
static int post_recv_pkt(MPIDI_CH3I_Connection_t * conn)
{
    MPIDI_VC_t *vc = conn->vc;

    if (vc->ch.rbuf == NULL)
        vc->ch.rbuf = MPL_malloc(READ_AHEAD, MPL_MEM_BUFFER);
    if (vc->ch.rbuf == NULL)
        return MPIDI_CH3I_Sock_post_read(conn->sock, &conn->pkt, sizeof(conn->pkt),
                                         sizeof(conn->pkt), NULL);
    vc->ch.rbuf_posted = TRUE;
    return MPIDI_CH3I_Sock_post_read(conn->sock, vc->ch.rbuf + vc->ch.rbuf_len,
                                     sizeof(conn->pkt) - vc->ch.rbuf_len,
                                     READ_AHEAD - vc->ch.rbuf_len, NULL);
}

/* Copy what buf holds of rreq's data into its iov, dropping the entries it fills and
 * adjusting a partly filled one (so that the iov is what remains); returns the bytes taken. */
static size_t take_buffered(MPIR_Request * rreq, const char *buf, size_t len)
{
    struct iovec *iov = rreq->dev.iov;
    int n = rreq->dev.iov_count, first = 0;
    size_t taken = 0;

    while (first < n && taken < len) {
        size_t k = MPL_MIN(iov[first].iov_len, len - taken);

        if (!rreq->dev.drop_data)
            memcpy(iov[first].iov_base, buf + taken, k);
        taken += k;
        iov[first].iov_base = (char *) iov[first].iov_base + k;
        iov[first].iov_len -= k;
        if (iov[first].iov_len == 0)
            first++;
    }
    while (first < n && iov[first].iov_len == 0)
        first++;
    memmove(iov, iov + first, (n - first) * sizeof(*iov));
    rreq->dev.iov_count = n - first;
    return taken;
}

/* A packet's header is in conn->pkt: call its handler with the len bytes after it in buf;
 * *used: how many of them it took, *rreq: a request for data still to come. */
static int call_handler(MPIDI_CH3I_Connection_t * conn, char *buf, size_t len, size_t *used,
                        MPIR_Request ** rreq)
{
    int mpi_errno = MPI_SUCCESS;
    intptr_t buflen = (intptr_t) len;

    MPIR_ERR_CHKANDJUMP1(!MPIDI_CH3I_Net_packet_travels(conn->pkt.type), mpi_errno, MPI_ERR_INTERN,
                         "**ch3|sock|badpacket", "**ch3|sock|badpacket %d", conn->pkt.type);
    *rreq = NULL;
    mpi_errno = MPIDI_CH3I_pkt_handlers[conn->pkt.type] (conn->vc, &conn->pkt,
                                                          len ? buf : NULL, &buflen, rreq);
    MPIR_ERR_CHECK(mpi_errno);
    *used = (size_t) buflen;

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* Post the read of the next piece of rreq's data (see post_send_data). */
static int post_recv_data(MPIDI_CH3I_Connection_t * conn, MPIR_Request * rreq)
{
    struct iovec *iov = rreq->dev.iov;
    int piece = next_piece(iov, rreq->dev.iov_count);

    if (conn->recv_active == NULL)
        data_reads++;
    conn->recv_active = rreq;
    conn->vc->ch.recv_piece = piece;
    if (piece == 0)
        return MPIDI_CH3I_Sock_post_read(conn->sock, iov[0].iov_base, 1, iov[0].iov_len, NULL);
    return MPIDI_CH3I_Sock_post_readv(conn->sock, iov, piece, NULL);
}

static void end_data_read(MPIDI_CH3I_Connection_t * conn)
{
    if (conn->recv_active != NULL)
        data_reads--;
    conn->recv_active = NULL;
}

/* Is a message's data partly read?  Its next piece comes as the socket fills, and looking
 * less often lets more of it come with each read. */
int MPIDI_CH3I_Netsock_reading_data(void)
{
    return data_reads > 0;
}

/* Read what the socket holds of rreq's iov; complete the request (or let ch3 reload the
 * iov) as it fills, and post a read for the rest. */
static int read_more_data(MPIDI_CH3I_Connection_t * conn, MPIR_Request * rreq)
{
    int mpi_errno = MPI_SUCCESS;

    for (;;) {
        struct iovec *iov = rreq->dev.iov;
        size_t nb;
        int first, complete;

        mpi_errno = MPIDI_CH3I_Sock_readv(conn->sock, iov, rreq->dev.iov_count, &nb);
        MPIR_ERR_CHECK(mpi_errno);
        first = skip_written(iov, rreq->dev.iov_count, nb);
        if (first < rreq->dev.iov_count) {
            memmove(iov, iov + first, (rreq->dev.iov_count - first) * sizeof(*iov));
            rreq->dev.iov_count -= first;
            mpi_errno = post_recv_data(conn, rreq);
            goto fn_exit;
        }
        mpi_errno = request_written(conn->vc, rreq, &complete);
        MPIR_ERR_CHECK(mpi_errno);
        if (complete) {
            end_data_read(conn);
            mpi_errno = post_recv_pkt(conn);
            goto fn_exit;
        }
    }

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* A packet header alone arrived in conn->pkt (the first after the connection opened, read
 * there by ch3's socket utilities, or any when there is no read-ahead buffer). */
static int handle_packet(MPIDI_CH3I_Connection_t * conn)
{
    int mpi_errno = MPI_SUCCESS;
    MPIR_Request *rreq = NULL;
    size_t used;

    conn->vc->ch.rbuf_len = 0;  /* nothing read ahead on a new connection */
    mpi_errno = call_handler(conn, NULL, 0, &used, &rreq);
    MPIR_ERR_CHECK(mpi_errno);
    if (rreq != NULL)
        mpi_errno = read_more_data(conn, rreq);
    else if (conn->state != CONN_STATE_CLOSING)
        mpi_errno = post_recv_pkt(conn);

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* nread more bytes arrived in the read-ahead buffer: handle every whole packet there and
 * the data that follows each; data that goes on past the buffer is read straight into its
 * request's iov; a partial header stays at the buffer's start for the next read. */
static int handle_buffered(MPIDI_CH3I_Connection_t * conn, size_t nread)
{
    int mpi_errno = MPI_SUCCESS;
    MPIDI_VC_t *vc = conn->vc;
    char *buf = vc->ch.rbuf;
    size_t len = vc->ch.rbuf_len + nread, used;
    MPIR_Request *rreq = NULL;
    int complete;

    vc->ch.rbuf_posted = FALSE;
    vc->ch.rbuf_len = 0;
    for (;;) {
        if (rreq != NULL) {
            used = take_buffered(rreq, buf, len);
            buf += used;
            len -= used;
            if (rreq->dev.iov_count > 0) {      /* the buffer is empty: read the rest */
                mpi_errno = read_more_data(conn, rreq);
                goto fn_exit;
            }
            mpi_errno = request_written(vc, rreq, &complete);
            MPIR_ERR_CHECK(mpi_errno);
            if (complete)
                rreq = NULL;
            continue;   /* else ch3 loaded the iov with more of the message */
        }
        if (conn->state == CONN_STATE_CLOSING || len < sizeof(conn->pkt))
            break;
        memcpy(&conn->pkt, buf, sizeof(conn->pkt));
        buf += sizeof(conn->pkt);
        len -= sizeof(conn->pkt);
        mpi_errno = call_handler(conn, buf, len, &used, &rreq);
        MPIR_ERR_CHECK(mpi_errno);
        buf += used;
        len -= used;
    }
    if (conn->state == CONN_STATE_CLOSING)
        goto fn_exit;
    memmove(vc->ch.rbuf, buf, len);
    vc->ch.rbuf_len = len;
    mpi_errno = post_recv_pkt(conn);

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* nb bytes of the active receive's data arrived: the iov is full, or its rest is posted
 * again. */
static int handle_data(MPIDI_CH3I_Connection_t * conn, size_t nb)
{
    int mpi_errno = MPI_SUCCESS;
    MPIR_Request *rreq = conn->recv_active;
    int complete;

    if (conn->vc->ch.recv_piece >= 0 &&
        piece_moved(rreq->dev.iov, &rreq->dev.iov_count, &conn->vc->ch.recv_piece, nb))
        return post_recv_data(conn, rreq);
    conn->vc->ch.recv_piece = -1;
    mpi_errno = request_written(conn->vc, rreq, &complete);
    MPIR_ERR_CHECK(mpi_errno);
    if (complete) {
        end_data_read(conn);
        mpi_errno = post_recv_pkt(conn);
    } else
        mpi_errno = read_more_data(conn, rreq);

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* The peer's socket closed or failed.  Once the VC is in ch3's close protocol that is
 * the peer finishing first (ch3 closes our end next); before, its process is gone. */
static int connection_lost(MPIDI_CH3I_Connection_t * conn, int error)
{
    MPIDI_VC_t *vc = conn->vc;

    if (vc == NULL || conn->state == CONN_STATE_CLOSING)
        return MPIDI_CH3_Sockconn_handle_close_event(conn);
    if (vc->state != MPIDI_VC_STATE_ACTIVE && vc->state != MPIDI_VC_STATE_INACTIVE)
        return MPI_SUCCESS;
    vc->ch.state = MPIDI_CH3I_VC_STATE_FAILED;
    MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_remote_failures, 1);
    return MPIR_Err_create_code(error, MPIR_ERR_RECOVERABLE, __func__, __LINE__,
                                MPIX_ERR_PROC_FAILED, "**smheap_remote_lost",
                                "**smheap_remote_lost %d", vc->pg_rank);
}

/* The socket wrote nb bytes of the head of the queue: all of its iov, or a piece. */
static int handle_written(MPIDI_CH3I_Connection_t * conn, size_t nb)
{
    int mpi_errno = MPI_SUCCESS;
    MPIDI_VC_t *vc = conn->vc;
    MPIR_Request *sreq = conn->send_active;
    int complete;

    if (sreq == NULL)   /* a connection set-up packet */
        return MPIDI_CH3_Sockconn_handle_connwrite(conn);
    if (vc->ch.send_piece >= 0 &&
        piece_moved(sreq->dev.iov, &sreq->dev.iov_count, &vc->ch.send_piece, nb))
        return post_send_data(conn, sreq);
    vc->ch.send_piece = -1;
    mpi_errno = request_written(vc, sreq, &complete);
    MPIR_ERR_CHECK(mpi_errno);
    conn->send_active = NULL;
    if (complete)
        sendq_dequeue(vc);
    /* the next request, or the rest of this one that OnDataAvail loaded */
    mpi_errno = post_head(vc);

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* A byte on the wake socket: a local peer rang one of our doorbells.  Empty the socket
 * (one poll is enough for any number of rings) and listen again. */
static int handle_wakeup(void)
{
    char bytes[64];

    while (recv(wake_fd, bytes, sizeof(bytes), MSG_DONTWAIT) > 0)
        continue;
    MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_remote_wakeups, 1);
    return MPIDI_CH3I_Sock_post_read(wake_sock, &wake_byte, 1, 1, NULL);
}

/* A packet of the connection set-up.  A VC the connection is given to (a process of our
 * job or another one that connected to us, a temporary VC of a port) is remote from now on,
 * whether or not it has sent anything itself. */
static int handle_connection_setup(MPIDI_CH3I_Connection_t * conn)
{
    int mpi_errno;

    if (conn->state == CONN_STATE_OPEN_LRECV_DATA)
        mpi_errno = MPIDI_CH3_Sockconn_handle_connopen_event(conn);
    else
        mpi_errno = MPIDI_CH3_Sockconn_handle_conn_event(conn);
    if (mpi_errno == MPI_SUCCESS && conn->vc && conn->vc->ch.conn == conn)
        conn->vc->ch.remote = TRUE;
    return mpi_errno;
}

static int handle_read(MPIDI_CH3I_Sock_event_t * event)
{
    MPIDI_CH3I_Connection_t *conn = event->user_ptr;

    if (event->user_ptr == &wake_fd)
        return handle_wakeup();
    if (conn->state == CONN_STATE_DISCARD)      /* the loser of a head-to-head connect */
        return MPIDI_CH3_Sockconn_handle_close_event(conn);
    if (event->error != MPI_SUCCESS)
        return connection_lost(conn, event->error);
    if (conn->state == CONN_STATE_CONNECTED) {
        if (conn->recv_active)
            return handle_data(conn, event->num_bytes);
        if (conn->vc->ch.rbuf_posted)
            return handle_buffered(conn, event->num_bytes);
        return handle_packet(conn);
    }
    return handle_connection_setup(conn);
}

static int handle_event(MPIDI_CH3I_Sock_event_t * event)
{
    int mpi_errno = MPI_SUCCESS;

    switch (event->op_type) {
        case MPIDI_CH3I_SOCK_OP_READ:
            mpi_errno = handle_read(event);
            break;
        case MPIDI_CH3I_SOCK_OP_WRITE:
            if (event->error != MPI_SUCCESS)
                mpi_errno = connection_lost(event->user_ptr, event->error);
            else
                mpi_errno = handle_written(event->user_ptr, event->num_bytes);
            break;
        case MPIDI_CH3I_SOCK_OP_ACCEPT:
            mpi_errno = MPIDI_CH3_Sockconn_handle_accept_event();
            break;
        case MPIDI_CH3I_SOCK_OP_CONNECT:
            mpi_errno = MPIDI_CH3_Sockconn_handle_connect_event(event->user_ptr, event->error);
            break;
        case MPIDI_CH3I_SOCK_OP_CLOSE:
            mpi_errno = MPIDI_CH3_Sockconn_handle_close_event(event->user_ptr);
            break;
        case MPIDI_CH3I_SOCK_OP_WAKEUP:
            MPIDI_CH3_Progress_signal_completion();
            break;
    }
    return mpi_errno;
}

/* Handle one event of the socket set, waiting up to timeout_ms for it.  One: after the
 * first, asking for another costs a poll() even when there is none (the socket layer
 * cannot say whether it holds more), and on a message's path that is as much as the
 * read; the progress engine asks again at its next poll instead. */
static int handle_event_within(int timeout_ms, int *made_progress)
{
    int mpi_errno = MPI_SUCCESS;
    MPIDI_CH3I_Sock_event_t event;

    if (handling)
        return MPI_SUCCESS;
    handling = 1;
    mpi_errno = MPIDI_CH3I_Sock_wait(MPIDI_CH3I_sock_set, timeout_ms, &event);
    if (mpi_errno != MPI_SUCCESS) {
        if (MPIR_ERR_GET_CLASS(mpi_errno) == MPIDI_CH3I_SOCK_ERR_TIMEOUT)
            mpi_errno = MPI_SUCCESS;
        else
            MPIR_ERR_SET(mpi_errno, MPI_ERR_OTHER, "**progress_sock_wait");
        goto fn_exit;
    }
    mpi_errno = handle_event(&event);
    MPIR_ERR_CHECK(mpi_errno);
    if (event.user_ptr != &wake_fd) {
        *made_progress = TRUE;
        sock_in_use = 1;        /* a connection came: the sockets are in use */
    }

  fn_exit:
    handling = 0;
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPIDI_CH3I_Netsock_poll(int *made_progress)
{
    return handle_event_within(0, made_progress);
}

/* While no socket is in use: has a process of another node connected to our listener? */
int MPIDI_CH3I_Netsock_poll_listener(void)
{
    int made_progress = FALSE;

    if (!sockpath_open || sock_in_use)
        return MPI_SUCCESS;
    return handle_event_within(0, &made_progress);
}

/* Sleep until a socket has something or a doorbell of ours is rung (at most timeout_ms).
 * The socket layer releases MPICH's global lock while it waits. */
int MPIDI_CH3I_Netsock_sleep(int timeout_ms, int *made_progress)
{
    return handle_event_within(timeout_ms, made_progress);
}
