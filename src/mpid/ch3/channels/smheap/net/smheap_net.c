/*
 * ch3:smheap -- between nodes: which transport carries a VC's packets.  The sockets are
 * always open (processes of other jobs come through them); libfabric carries the ranks of
 * our own job on other nodes when MPIR_CVAR_CH3_SMHEAP_NET chose it at MPI_Init and the
 * peer's card names the same provider.  Both ends of a VC decide from the same two cards,
 * so they always agree.
 */

/*
=== BEGIN_MPI_T_CVAR_INFO_BLOCK ===

cvars:
    - name        : MPIR_CVAR_CH3_SMHEAP_NET
      category    : CH3
      type        : enum
      default     : auto
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_ALL_EQ
      description : |-
        ch3:smheap: how the ranks of a job that spans nodes reach each other.
        auto - libfabric if a provider offers reliable datagram endpoints, messages and
               RDMA read and is not an emulation over TCP or UDP (tcp, udp, sockets,
               net), or is the one FI_PROVIDER names; else TCP sockets.  Without
               FI_PROVIDER, libfabric is not even loaded on a node with no RDMA device
               (/sys/class/infiniband, /sys/class/cxi)
        ofi  - libfabric with the provider FI_PROVIDER names, or the first that offers
               those; MPI_Init fails, naming why, if there is none
        sock - TCP sockets (ch3's socket utilities)

    - name        : MPIR_CVAR_CH3_SMHEAP_NET_VERBOSE
      category    : CH3
      type        : boolean
      default     : false
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        ch3:smheap: rank 0 prints, at MPI_Init, which transport and which libfabric
        provider carry messages between nodes, and why.

=== END_MPI_T_CVAR_INFO_BLOCK ===
*/

#include "smheap_net_impl.h"
#include <signal.h>

int MPIDI_CH3I_Net_active;

/* Hydra, when it does not end the job itself (-disable-auto-cleanup), sends the other
 * ranks SIGUSR1 and lists the dead in the PMI key that ch3 reads
 * (MPIDI_CH3U_Check_for_failed_procs), as ch3:nemesis relies on.  Unhandled, the signal
 * would end the survivors, often before they saw the dead peer's socket close.  Over
 * libfabric the notice is how a rank learns of a lost peer (smheap_net_ofi.c); over
 * sockets the dead peer's connection closes, which names it, and the notice is only
 * counted: ch3's failed-process check run from the sockets' poll could meet that
 * connection mid-close ("received packet of unknown type", 2 runs in 35). */
static volatile sig_atomic_t deaths_signalled;
static unsigned deaths_seen;
static struct sigaction sigusr1_before;
static int watching_deaths;

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
    watching_deaths = 1;
}

/* A death signalled since we last looked? */
static int death_news(void)
{
    if (deaths_seen == (unsigned) deaths_signalled)
        return FALSE;
    deaths_seen = (unsigned) deaths_signalled;
    return TRUE;
}

/* The sockets came into use (a connection, or the close of the listener): poll them. */
static void note_sockets(void)
{
    if (MPIDI_CH3I_Netsock_in_use())
        MPIDI_CH3I_Net_active = 1;
}

size_t MPIDI_CH3I_Net_uses_ofi(void)
{
    return (size_t) MPIDI_CH3I_Netofi_open();
}

int MPIDI_CH3I_Net_init(int spans_nodes)
{
    int mpi_errno = MPI_SUCCESS;
    int want_ofi = spans_nodes && MPIR_CVAR_CH3_SMHEAP_NET != MPIR_CVAR_CH3_SMHEAP_NET_sock;

    if (want_ofi) {
        mpi_errno = MPIDI_CH3I_Netofi_init(MPIR_CVAR_CH3_SMHEAP_NET ==
                                           MPIR_CVAR_CH3_SMHEAP_NET_ofi);
        MPIR_ERR_CHECK(mpi_errno);
    }
    mpi_errno = MPIDI_CH3I_Netsock_init(spans_nodes && !MPIDI_CH3I_Netofi_open());
    MPIR_ERR_CHECK(mpi_errno);
    if (MPIDI_CH3I_Netofi_open())
        MPIDI_CH3I_Net_active = 1;
    if (spans_nodes)
        watch_for_deaths();
    note_sockets();

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPIDI_CH3I_Net_finalize(void)
{
    int mpi_errno;

    if (watching_deaths) {
        sigaction(SIGUSR1, &sigusr1_before, NULL);
        watching_deaths = 0;
    }
    mpi_errno = MPIDI_CH3I_Netofi_finalize();
    MPIDI_CH3I_Net_active = 1;  /* the listener's close is an event to wait for */
    if (mpi_errno == MPI_SUCCESS)
        mpi_errno = MPIDI_CH3I_Netsock_finalize();
    MPIDI_CH3I_Net_active = 0;
    return mpi_errno;
}

void MPIDI_CH3I_Net_vc_init(MPIDI_VC_t * vc)
{
    MPIDI_CH3I_Netsock_vc_init(vc);
    vc->ch.ofi = NULL;
}

int MPIDI_CH3I_Net_add_card(int pg_rank, char **card, int *room)
{
    int mpi_errno = MPIDI_CH3I_Netsock_add_card(pg_rank, card, room);

    if (mpi_errno == MPI_SUCCESS && MPIDI_CH3I_Netofi_open())
        mpi_errno = MPIDI_CH3I_Netofi_add_card(card, room);
    return mpi_errno;
}

/* Does vc go over libfabric?  Decided at its first message either way. */
static int over_ofi(MPIDI_VC_t * vc)
{
    if (vc->ch.ofi != NULL)
        return 1;
    if (!MPIDI_CH3I_Netofi_open() || vc->ch.state != MPIDI_CH3I_VC_STATE_UNCONNECTED)
        return 0;
    return MPIDI_CH3I_Netofi_claim(vc);
}

int MPIDI_CH3I_Net_iStartMsgv(MPIDI_VC_t * vc, struct iovec *iov, int n_iov,
                              MPIR_Request ** sreq_ptr)
{
    int mpi_errno;

    if (over_ofi(vc))
        return MPIDI_CH3I_Netofi_iStartMsgv(vc, iov, n_iov, sreq_ptr);
    mpi_errno = MPIDI_CH3I_Netsock_iStartMsgv(vc, iov, n_iov, sreq_ptr);
    note_sockets();
    return mpi_errno;
}

int MPIDI_CH3I_Net_iSendv(MPIDI_VC_t * vc, MPIR_Request * sreq, struct iovec *iov, int n_iov)
{
    int mpi_errno;

    if (over_ofi(vc))
        return MPIDI_CH3I_Netofi_iSendv(vc, sreq, iov, n_iov);
    mpi_errno = MPIDI_CH3I_Netsock_iSendv(vc, sreq, iov, n_iov);
    note_sockets();
    return mpi_errno;
}

void MPIDI_CH3I_Net_adopt(MPIDI_VC_t * vc)
{
    MPIDI_CH3I_Netsock_adopt(vc);
    note_sockets();
}

int MPIDI_CH3I_Net_connect_to_root(const char *port_name, MPIDI_VC_t ** new_vc)
{
    int mpi_errno = MPIDI_CH3I_Netsock_connect_to_root(port_name, new_vc);

    note_sockets();
    return mpi_errno;
}

int MPIDI_CH3I_Net_terminate(MPIDI_VC_t * vc)
{
    if (vc->ch.ofi != NULL)
        return MPIDI_CH3I_Netofi_terminate(vc);
    return MPIDI_CH3I_Netsock_terminate(vc);
}

/* While only libfabric is in use, the socket listener is looked at every LISTENER_EVERY
 * polls: a rank whose card names another provider, or none, connects there. */
#define LISTENER_EVERY 64

int MPIDI_CH3I_Net_poll(int *made_progress)
{
    static int ticks;
    int mpi_errno = MPI_SUCCESS;

    if (MPIDI_CH3I_Netofi_open()) {
        if (death_news()) {
            *made_progress = TRUE;
            return MPIDI_CH3I_Netofi_look_for_deaths();
        }
        mpi_errno = MPIDI_CH3I_Netofi_poll(made_progress);
    }
    if (mpi_errno != MPI_SUCCESS)
        return mpi_errno;
    if (MPIDI_CH3I_Netsock_in_use() || !MPIDI_CH3I_Netofi_open()) {
        mpi_errno = MPIDI_CH3I_Netsock_poll(made_progress);
        note_sockets();
    } else if (++ticks >= LISTENER_EVERY) {
        ticks = 0;
        mpi_errno = MPIDI_CH3I_Netsock_poll_listener();
        note_sockets();
    }
    return mpi_errno;
}

int MPIDI_CH3I_Net_reading_data(void)
{
    return MPIDI_CH3I_Netsock_reading_data() || MPIDI_CH3I_Netofi_reading_data();
}

int MPIDI_CH3I_Net_poll_listener(void)
{
    int mpi_errno = MPIDI_CH3I_Netsock_poll_listener();

    note_sockets();
    return mpi_errno;
}

/* A rank that uses only libfabric sleeps on its completion queue and its wake socket.
 * With sockets in use too, it sleeps in the socket layer in slices of SLICE_MS, looking
 * at libfabric between them. */
#define SLICE_MS 1

int MPIDI_CH3I_Net_sleep(int timeout_ms, int *made_progress)
{
    int mpi_errno = MPI_SUCCESS;
    int slept = 0;

    if (!MPIDI_CH3I_Netofi_open()) {
        mpi_errno = MPIDI_CH3I_Netsock_sleep(timeout_ms, made_progress);
        goto fn_exit;
    }
    if (!MPIDI_CH3I_Netsock_in_use()) {
        mpi_errno = MPIDI_CH3I_Netofi_sleep(MPIDI_CH3I_Netsock_wake_fd(), timeout_ms,
                                            made_progress, &slept);
        MPIR_ERR_CHECK(mpi_errno);
        if (slept || *made_progress) {
            /* the wake socket's byte is the socket layer's to read */
            mpi_errno = MPIDI_CH3I_Netsock_poll(made_progress);
            goto fn_exit;
        }
    }
    mpi_errno = MPIDI_CH3I_Netsock_sleep(MPL_MIN(timeout_ms, SLICE_MS), made_progress);
    MPIR_ERR_CHECK(mpi_errno);
    mpi_errno = MPIDI_CH3I_Netofi_poll(made_progress);

  fn_exit:
    note_sockets();
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* A rank that may sleep in poll() (on sockets or libfabric) has its doorbells write to
 * the wake socket too. */
void MPIDI_CH3I_Net_listen_for_wakeups(smheap_doorbell_t * bell)
{
    if (MPIDI_CH3I_Net_active)
        MPIDI_CH3I_Netsock_listen_for_wakeups(bell);
}
