/*
 * ch3:smheap -- links: connections to processes of other jobs (spawned, connecting or
 * accepting ones) on this node.
 *
 * Those processes map neither our node segment nor our heap, so messages to them travel
 * through rings in a segment made for the connection: a memfd that the process opening
 * the connection creates and hands to the other over a UNIX socket (SCM_RIGHTS).  Every
 * process listens on an abstract socket, named in its business card, and accepts
 * connections from its progress engine.  Nothing is written to /dev/shm; a segment goes
 * when both processes have unmapped it.  Data always moves by copy over links: a heap
 * pointer means nothing in another job, so ch3's own rendezvous runs on these VCs.
 *
 * A link needs the other process on our node: the same kernel and network namespace (for
 * the abstract socket), and the same host name (what launchers and MPICH's node map call
 * a node; simulated nodes on one machine each have their own).  The business card carries
 * a node identity made of those three; a process of another job with a different one is
 * reached through its socket instead (net/smheap_net_sock.c), as a rank of our job on
 * another node is.
 *
 * Two kinds of segment:
 *  - a port link (MPIDI_CH3_Connect_to_root): two rings, one each way, for the temporary
 *    VC over which ch3 runs its connect/accept protocol;
 *  - an outbox (the first send on a VC of another process group): one ring, from the
 *    sender to the VC's process.  Each side of a VC sends through an outbox it made
 *    itself, so two processes that start talking at once never race to set up one
 *    connection.
 *
 * Each segment also holds a doorbell per side.  A process asleep waits on its node
 * doorbell and on its doorbell in every segment it maps (futex_waitv), so a process of
 * another job wakes it exactly as a local rank does.  A connection request cannot ring
 * anybody: the listener is looked at every LISTEN_POLL_INTERVAL polls and whenever the
 * process is about to sleep, and sleeps are bounded (ch3_progress.c), so it is picked up
 * within milliseconds.
 *
 * A VC can go away inside a packet handler (ch3 destroys a process group when its last
 * VC closes).  So a link is retired by clearing its `vc`, and only unmapped at a point
 * where no ring of it is being read and no thread sleeps on its doorbell.
 */

#include "smheap_link.h"
#include "smheap_net.h"
#include "smheap_packet.h"
#include "smheap_mpit.h"

#include <errno.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define LINK_MAGIC 0x736d6870686c6e6bULL   /* "smhphlnk" */
#define LINK_CELLS 32
#define LINK_CELL_PAYLOAD (32 * 1024)
#define LINK_HEADER_BYTES 4096
#define LINK_BC_KEY "smheap_link"
#define NODE_BC_KEY "smheap_node"
#define LISTEN_POLL_INTERVAL 1024

enum { HELLO_PORT = 1, HELLO_OUTBOX = 2 };

/* The start of a link segment; the rings follow at LINK_HEADER_BYTES. */
typedef struct smheap_link_segment {
    uint64_t magic;
    uint32_t nrings;            /* 2: a port link; 1: an outbox */
    uint32_t cells;
    uint64_t cell_size;
    smheap_doorbell_t bell[2];  /* [0] the creator's, [1] the acceptor's */
} smheap_link_segment_t;

/* What the creator sends with the segment's file descriptor. */
typedef struct smheap_link_hello {
    uint64_t magic;
    int32_t kind;
    int32_t port_tag;           /* HELLO_PORT: which of the acceptor's ports */
    int32_t pg_rank;            /* HELLO_OUTBOX: the creator's rank in its group... */
    char pg_id[256];            /* ...and the group */
    uint64_t seg_len;
} smheap_link_hello_t;

typedef struct smheap_link {
    struct smheap_link *next, *prev;    /* on the live list or the pending one */
    MPIDI_VC_t *vc;             /* NULL: retired (or, while pending, not attached yet) */
    smheap_link_segment_t *seg;
    size_t len;
    int side;                   /* 0: we created the segment; 1: we accepted it */
    int reads;                  /* one of its rings comes to us: poll it */
    smheap_ring_geometry_t geom;
    smheap_link_hello_t hello;  /* an outbox waiting for its VC (the group not known yet) */
} smheap_link_t;

static int listen_fd = -1;
static char my_addr[96];        /* abstract socket name, without the leading NUL */
static char my_node[96];        /* node identity, see node_identity() */
static smheap_link_t *links;    /* every mapped link, live or retired */
static smheap_link_t *pending;  /* accepted outboxes whose VC we cannot name yet */
static int retired;             /* links waiting to be unmapped */
static int listen_ticks;

int MPIDI_CH3I_Link_active;     /* links exist, or may come: look at the listener */
int MPIDI_CH3I_Link_sleepers;   /* threads of ours asleep, maybe on link doorbells */


static const smheap_ring_geometry_t link_geom = {
    LINK_CELLS, LINK_CELL_PAYLOAD + SMHEAP_CACHELINE
};

static size_t segment_len(int nrings)
{
    return LINK_HEADER_BYTES + (size_t) nrings * smheap_ring_size(&link_geom);
}

static smheap_ring_t *segment_ring(smheap_link_t * l, int i)
{
    return (smheap_ring_t *) ((char *) l->seg + LINK_HEADER_BYTES +
                              (size_t) i * smheap_ring_size(&l->geom));
}

static void set_abstract_addr(struct sockaddr_un *sa, socklen_t * len, const char *name)
{
    size_t n = strlen(name);

    memset(sa, 0, sizeof(*sa));
    sa->sun_family = AF_UNIX;
    memcpy(sa->sun_path + 1, name, n);  /* sun_path[0] == 0: the abstract namespace */
    *len = (socklen_t) (offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

/* ------------------------------------------------------------------------------------ */
/* Set-up                                                                               */

/* Our address and node, for the business card ch3 hands to the processes we connect or
 * accept. */
int MPIDI_CH3I_Link_add_card(char **card, int *room)
{
    int mpi_errno = MPI_SUCCESS;

    MPIR_ERR_CHKANDJUMP(MPL_str_add_string_arg(card, room, LINK_BC_KEY, my_addr) !=
                        MPL_SUCCESS ||
                        MPL_str_add_string_arg(card, room, NODE_BC_KEY, my_node) != MPL_SUCCESS,
                        mpi_errno, MPI_ERR_OTHER, "**buscard_len");
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *c = p;

    for (size_t i = 0; i < n; i++)
        h = (h ^ c[i]) * 0x100000001b3ULL;
    return h;
}

/* What two processes must share for a link: the kernel (its boot id), the network
 * namespace (abstract sockets belong to one) and the host name.  When a part cannot be
 * read, the identity is ours alone (sockets then reach everybody). */
static void node_identity(char *id, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    char boot_id[64] = "", host[256] = "";
    struct stat net;
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");

    if (f) {
        if (fgets(boot_id, sizeof(boot_id), f) == NULL)
            boot_id[0] = '\0';
        fclose(f);
    }
    if (boot_id[0] == '\0' || gethostname(host, sizeof(host) - 1) != 0 ||
        stat("/proc/self/ns/net", &net) != 0) {
        snprintf(id, len, "%s", my_addr);     /* pid and clock: nobody else's */
        return;
    }
    h = fnv1a(h, boot_id, strlen(boot_id));
    h = fnv1a(h, host, strlen(host));
    h = fnv1a(h, &net.st_dev, sizeof(net.st_dev));
    h = fnv1a(h, &net.st_ino, sizeof(net.st_ino));
    snprintf(id, len, "%016llx", (unsigned long long) h);
}

/* A business card or port name of a process we can link to: one on our node. */
int MPIDI_CH3I_Link_reaches(const char *card)
{
    char node[sizeof(my_node)];

    return MPL_str_get_string_arg(card, NODE_BC_KEY, node, sizeof(node)) == MPL_SUCCESS &&
        strcmp(node, my_node) == 0;
}

/* Listen on an abstract socket named after us (our business card names it). */
int MPIDI_CH3I_Link_init(void)
{
    int mpi_errno = MPI_SUCCESS;
    struct sockaddr_un sa;
    socklen_t sa_len;
    struct timespec ts;

    listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    MPIR_ERR_CHKANDJUMP2(listen_fd < 0, mpi_errno, MPI_ERR_OTHER, "**smheap_link",
                         "**smheap_link %s %s", "socket", strerror(errno));
    /* pid and clock: unique on the node while we live (the name goes with the socket) */
    clock_gettime(CLOCK_MONOTONIC, &ts);
    snprintf(my_addr, sizeof(my_addr), "smheap-link-%u-%d-%lld%09ld", (unsigned) geteuid(),
             (int) getpid(), (long long) ts.tv_sec, ts.tv_nsec);
    node_identity(my_node, sizeof(my_node));
    set_abstract_addr(&sa, &sa_len, my_addr);
    MPIR_ERR_CHKANDJUMP2(bind(listen_fd, (struct sockaddr *) &sa, sa_len) != 0 ||
                         listen(listen_fd, SOMAXCONN) != 0, mpi_errno, MPI_ERR_OTHER,
                         "**smheap_link", "**smheap_link %s %s", my_addr, strerror(errno));

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

static void unmap_link(smheap_link_t * l)
{
    munmap(l->seg, l->len);
    MPL_free(l);
}

int MPIDI_CH3I_Link_finalize(void)
{
    smheap_link_t *l, *tmp;

    if (listen_fd >= 0)
        close(listen_fd);
    listen_fd = -1;
    /* ch3 destroys the remaining process groups after us: leave their VCs nothing */
    DL_FOREACH_SAFE(links, l, tmp) {
        DL_DELETE(links, l);
        if (l->vc)
            MPIDI_CH3I_Link_retire(l->vc);
        unmap_link(l);
    }
    DL_FOREACH_SAFE(pending, l, tmp) {
        DL_DELETE(pending, l);
        unmap_link(l);
    }
    retired = 0;
    MPIDI_CH3I_Link_active = 0;
    return MPI_SUCCESS;
}

/* ------------------------------------------------------------------------------------ */
/* Segments                                                                             */

static int create_segment(int nrings, smheap_link_t ** lp, int *fdp)
{
    int mpi_errno = MPI_SUCCESS;
    size_t len = segment_len(nrings);
    smheap_link_t *l = NULL;
    int fd;

    fd = memfd_create("smheap-link", MFD_CLOEXEC);
    MPIR_ERR_CHKANDJUMP2(fd < 0, mpi_errno, MPI_ERR_OTHER, "**smheap_link",
                         "**smheap_link %s %s", "memfd_create", strerror(errno));
    l = MPL_calloc(1, sizeof(*l), MPL_MEM_SHM);
    MPIR_ERR_CHKANDJUMP(l == NULL, mpi_errno, MPI_ERR_OTHER, "**nomem");
    if (ftruncate(fd, (off_t) len) != 0 ||
        (l->seg = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
        l->seg = NULL;
        MPIR_ERR_SETANDJUMP2(mpi_errno, MPI_ERR_OTHER, "**smheap_link", "**smheap_link %s %s",
                             "segment", strerror(errno));
    }
    /* a new memfd reads as zeroes: rings empty, doorbells quiet */
    l->seg->magic = LINK_MAGIC;
    l->seg->nrings = nrings;
    l->seg->cells = link_geom.cells;
    l->seg->cell_size = link_geom.cell_size;
    l->len = len;
    l->geom = link_geom;
    l->side = 0;
    *lp = l;
    *fdp = fd;

  fn_exit:
    return mpi_errno;
  fn_fail:
    if (fd >= 0)
        close(fd);
    MPL_free(l);
    goto fn_exit;
}

/* Map a segment another process created and check it is one. */
static int map_segment(int fd, const smheap_link_hello_t * hello, smheap_link_t ** lp)
{
    int nrings = hello->kind == HELLO_PORT ? 2 : 1;
    struct stat st;
    smheap_link_t *l;
    void *p;

    if (hello->seg_len != segment_len(nrings) || fstat(fd, &st) != 0 ||
        (uint64_t) st.st_size != hello->seg_len)
        return EINVAL;
    p = mmap(NULL, hello->seg_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
        return errno;
    l = MPL_calloc(1, sizeof(*l), MPL_MEM_SHM);
    if (l == NULL) {
        munmap(p, hello->seg_len);
        return ENOMEM;
    }
    l->seg = p;
    l->len = hello->seg_len;
    l->side = 1;
    l->reads = 1;
    l->geom.cells = l->seg->cells;
    l->geom.cell_size = l->seg->cell_size;
    l->hello = *hello;
    if (l->seg->magic != LINK_MAGIC || (int) l->seg->nrings != nrings ||
        l->geom.cells != link_geom.cells || l->geom.cell_size != link_geom.cell_size) {
        unmap_link(l);
        return EPROTO;
    }
    *lp = l;
    return 0;
}

static void attach_out(MPIDI_VC_t * vc, smheap_link_t * l, int ring)
{
    smheap_ring_end_init(&vc->ch.out, segment_ring(l, ring));
    vc->ch.out_populated = FALSE;
    vc->ch.geom = &l->geom;
    vc->ch.peer_bell = &l->seg->bell[1 - l->side];
    vc->ch.out_link = l;
    l->vc = vc;
}

static void attach_in(MPIDI_VC_t * vc, smheap_link_t * l, int ring)
{
    smheap_ring_end_init(&vc->ch.in, segment_ring(l, ring));
    vc->ch.in_link = l;
    l->vc = vc;
    l->reads = 1;
}

static void add_link(smheap_link_t * l)
{
    DL_PREPEND(links, l);
    MPIDI_CH3I_Link_active = 1;
}

/* A hello on the socket, with room for the descriptor that travels with it. */
typedef struct hello_msg {
    struct msghdr msg;
    struct iovec iov;
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int))];
    } ctl;
} hello_msg_t;

static void hello_msg_init(hello_msg_t * m, const smheap_link_hello_t * hello)
{
    memset(m, 0, sizeof(*m));
    m->iov.iov_base = (void *) hello;
    m->iov.iov_len = sizeof(*hello);
    m->msg.msg_iov = &m->iov;
    m->msg.msg_iovlen = 1;
    m->msg.msg_control = m->ctl.buf;
    m->msg.msg_controllen = sizeof(m->ctl.buf);
}

/* Connect to the process listening at addr and hand it the segment. */
static int send_hello(const char *addr, const smheap_link_hello_t * hello, int seg_fd)
{
    int mpi_errno = MPI_SUCCESS;
    struct sockaddr_un sa;
    socklen_t sa_len;
    hello_msg_t m;
    struct cmsghdr *cmsg;
    int fd, rc;

    fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    MPIR_ERR_CHKANDJUMP2(fd < 0, mpi_errno, MPI_ERR_OTHER, "**smheap_link",
                         "**smheap_link %s %s", "socket", strerror(errno));
    set_abstract_addr(&sa, &sa_len, addr);
    do {
        rc = connect(fd, (struct sockaddr *) &sa, sa_len);
    } while (rc != 0 && errno == EINTR);
    /* nobody listens there: the process is gone, or the port name is not one of ours */
    MPIR_ERR_CHKANDJUMP2(rc != 0, mpi_errno, MPI_ERR_PORT, "**smheap_link_connect",
                         "**smheap_link_connect %s %s", addr, strerror(errno));

    hello_msg_init(&m, hello);
    cmsg = CMSG_FIRSTHDR(&m.msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cmsg), &seg_fd, sizeof(int));
    do {
        rc = (int) sendmsg(fd, &m.msg, MSG_NOSIGNAL);
    } while (rc < 0 && errno == EINTR);
    /* the message (and the descriptor in it) stays queued for the listener after we
     * close our end */
    MPIR_ERR_CHKANDJUMP2(rc != (int) sizeof(*hello), mpi_errno, MPI_ERR_PORT,
                         "**smheap_link_connect", "**smheap_link_connect %s %s", addr,
                         rc < 0 ? strerror(errno) : "short message");

  fn_exit:
    if (fd >= 0)
        close(fd);
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* ------------------------------------------------------------------------------------ */
/* Opening links                                                                        */

static int addr_from_card(const char *card, char *addr, int len)
{
    int mpi_errno = MPI_SUCCESS;

    MPIR_ERR_CHKANDJUMP1(MPL_str_get_string_arg(card, LINK_BC_KEY, addr, len) != MPL_SUCCESS,
                         mpi_errno, MPI_ERR_PORT, "**smheap_link_card",
                         "**smheap_link_card %s", card);
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

static int open_link(const char *addr, smheap_link_hello_t * hello, int nrings,
                     smheap_link_t ** lp)
{
    int mpi_errno = MPI_SUCCESS;
    smheap_link_t *l = NULL;
    int fd = -1;

    mpi_errno = create_segment(nrings, &l, &fd);
    MPIR_ERR_CHECK(mpi_errno);
    hello->magic = LINK_MAGIC;
    hello->seg_len = l->len;
    mpi_errno = send_hello(addr, hello, fd);
    MPIR_ERR_CHECK(mpi_errno);
    MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_links_opened, 1);
    add_link(l);
    *lp = l;

  fn_exit:
    if (fd >= 0)
        close(fd);      /* the mapping keeps the segment */
    return mpi_errno;
  fn_fail:
    if (l)
        unmap_link(l);
    goto fn_exit;
}

/* The temporary VC of MPI_Comm_connect: a port link to the process that opened the port
 * if it is on our node, else a socket connection to it.  ch3 then runs its connect/accept
 * handshake over it (and times it out). */
int MPIDI_CH3_Connect_to_root(const char *port_name, MPIDI_VC_t ** new_vc)
{
    int mpi_errno = MPI_SUCCESS;
    smheap_link_hello_t hello = { 0 };
    char addr[sizeof(my_addr)];
    smheap_link_t *l;
    MPIDI_VC_t *vc = NULL;

    MPIR_FUNC_ENTER;

    *new_vc = NULL;
    if (!MPIDI_CH3I_Link_reaches(port_name)) {
        mpi_errno = MPIDI_CH3I_Net_connect_to_root(port_name, new_vc);
        goto fn_exit;
    }
    mpi_errno = addr_from_card(port_name, addr, sizeof(addr));
    MPIR_ERR_CHECK(mpi_errno);
    hello.kind = HELLO_PORT;
    mpi_errno = MPIDI_GetTagFromPort(port_name, &hello.port_tag);
    MPIR_ERR_CHECK(mpi_errno);

    vc = MPL_malloc(sizeof(*vc), MPL_MEM_ADDRESS);
    MPIR_ERR_CHKANDJUMP(vc == NULL, mpi_errno, MPI_ERR_OTHER, "**nomem");
    MPIDI_VC_Init(vc, NULL, 0);
    mpi_errno = open_link(addr, &hello, 2, &l);
    MPIR_ERR_CHECK(mpi_errno);
    attach_out(vc, l, 0);
    attach_in(vc, l, 1);
    MPIDI_CHANGE_VC_STATE(vc, ACTIVE);
    *new_vc = vc;

  fn_exit:
    MPIR_FUNC_EXIT;
    return mpi_errno;
  fn_fail:
    MPL_free(vc);
    goto fn_exit;
}

/* The first message to a process of another job on this VC: make our outbox to it if it
 * is on our node, else send through its socket. */
int MPIDI_CH3I_Link_open_outbox(MPIDI_VC_t * vc)
{
    int mpi_errno = MPI_SUCCESS;
    smheap_link_hello_t hello = { 0 };
    char card[1024], addr[sizeof(my_addr)];
    const char *my_id = (const char *) MPIDI_Process.my_pg->id;
    smheap_link_t *l;

    MPIR_FUNC_ENTER;

    /* only VCs of other process groups lack rings; a temporary VC has both from the start */
    MPIR_Assert(vc->pg != NULL && vc->pg != MPIDI_Process.my_pg);
    mpi_errno = MPIDI_PG_GetConnString(vc->pg, vc->pg_rank, card, sizeof(card));
    MPIR_ERR_CHECK(mpi_errno);
    if (!MPIDI_CH3I_Link_reaches(card)) {
        MPIDI_CH3I_Net_adopt(vc);
        goto fn_exit;
    }
    mpi_errno = addr_from_card(card, addr, sizeof(addr));
    MPIR_ERR_CHECK(mpi_errno);

    hello.kind = HELLO_OUTBOX;
    hello.pg_rank = MPIDI_Process.my_pg_rank;
    MPIR_ERR_CHKANDJUMP1(strlen(my_id) >= sizeof(hello.pg_id), mpi_errno, MPI_ERR_OTHER,
                         "**smheap_link_card", "**smheap_link_card %s", my_id);
    strcpy(hello.pg_id, my_id);
    mpi_errno = open_link(addr, &hello, 1, &l);
    MPIR_ERR_CHECK(mpi_errno);
    attach_out(vc, l, 0);

  fn_exit:
    MPIR_FUNC_EXIT;
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* ------------------------------------------------------------------------------------ */
/* Accepting links                                                                      */

/* Take one hello (and its descriptor) from an accepted connection. */
static int receive_hello(int conn, smheap_link_hello_t * hello, int *seg_fd)
{
    hello_msg_t m;
    struct cmsghdr *cmsg;
    struct ucred cred;
    socklen_t cred_len = sizeof(cred);
    struct timeval tv = { 1, 0 };       /* the peer sends right after connecting */
    ssize_t n;

    *seg_fd = -1;
    /* the abstract namespace has no permissions: take segments from our own user only */
    if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &cred_len) != 0 ||
        cred.uid != geteuid())
        return EACCES;
    setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    hello_msg_init(&m, hello);
    do {
        n = recvmsg(conn, &m.msg, MSG_CMSG_CLOEXEC);
    } while (n < 0 && errno == EINTR);
    cmsg = CMSG_FIRSTHDR(&m.msg);
    if (cmsg && cmsg->cmsg_level == SOL_SOCKET && cmsg->cmsg_type == SCM_RIGHTS)
        memcpy(seg_fd, CMSG_DATA(cmsg), sizeof(int));
    if (n != (ssize_t) sizeof(*hello) || *seg_fd < 0 || hello->magic != LINK_MAGIC ||
        (hello->kind != HELLO_PORT && hello->kind != HELLO_OUTBOX))
        return n < 0 ? errno : EPROTO;
    hello->pg_id[sizeof(hello->pg_id) - 1] = '\0';
    return 0;
}

/* A port link: a new temporary VC for ch3's accept queue (which answers a connection to
 * a port that is not open, or no longer, itself). */
static int accept_port_link(smheap_link_t * l)
{
    int mpi_errno = MPI_SUCCESS;
    MPIDI_VC_t *vc;

    vc = MPL_malloc(sizeof(*vc), MPL_MEM_ADDRESS);
    MPIR_ERR_CHKANDJUMP(vc == NULL, mpi_errno, MPI_ERR_OTHER, "**nomem");
    MPIDI_VC_Init(vc, NULL, 0);
    add_link(l);
    attach_out(vc, l, 1);
    attach_in(vc, l, 0);
    mpi_errno = MPIDI_CH3I_Acceptq_enqueue(vc, l->hello.port_tag);
    MPIR_ERR_CHECK(mpi_errno);

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* An outbox: the inbound ring of the sender's VC in our table of its group.  ch3 may not
 * have made that table yet (the sender's group learned about us first), and the VC may
 * still be reading an outbox the sender has closed: then it waits (NULL). */
static MPIDI_VC_t *outbox_vc(const smheap_link_t * l)
{
    MPIDI_PG_t *pg;
    MPIDI_VC_t *vc;

    if (MPIDI_PG_Find((void *) l->hello.pg_id, &pg) != MPI_SUCCESS || pg == NULL ||
        l->hello.pg_rank < 0 || l->hello.pg_rank >= pg->size)
        return NULL;
    vc = &pg->vct[l->hello.pg_rank];
    return vc->ch.in_link == NULL ? vc : NULL;
}

/* Attach a new outbox to its VC, or keep it pending until it can be. */
static void attach_outbox(smheap_link_t * l)
{
    MPIDI_VC_t *vc = outbox_vc(l);

    if (vc == NULL) {
        DL_PREPEND(pending, l);
        return;
    }
    add_link(l);
    attach_in(vc, l, 0);
}

static void retry_pending(void)
{
    smheap_link_t *l, *tmp;

    DL_FOREACH_SAFE(pending, l, tmp) {
        MPIDI_VC_t *vc = outbox_vc(l);

        if (vc == NULL)
            continue;
        DL_DELETE(pending, l);
        add_link(l);
        attach_in(vc, l, 0);
    }
}

/* Accept every connection waiting at the listener. */
static int accept_links(void)
{
    int mpi_errno = MPI_SUCCESS;

    for (;;) {
        smheap_link_hello_t hello;
        smheap_link_t *l = NULL;
        int conn, seg_fd, err;

        conn = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (conn < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            break;      /* EAGAIN: none waiting */
        }
        err = receive_hello(conn, &hello, &seg_fd);
        close(conn);
        if (err == 0)
            err = map_segment(seg_fd, &hello, &l);
        if (seg_fd >= 0)
            close(seg_fd);
        if (err) {
            /* not one of our peers, or one that died mid-way: nothing to answer */
            MPL_internal_error_printf("ch3:smheap: ignored a connection to %s: %s\n",
                                      my_addr, strerror(err));
            continue;
        }
        MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_links_accepted, 1);
        if (hello.kind == HELLO_PORT) {
            mpi_errno = accept_port_link(l);
            MPIR_ERR_CHECK(mpi_errno);
        } else {
            attach_outbox(l);
        }
    }

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* ------------------------------------------------------------------------------------ */
/* Progress                                                                             */

/* Read every inbound link ring (called by the progress engine with receiving allowed). */
int MPIDI_CH3I_Link_poll(int *made_progress)
{
    int mpi_errno = MPI_SUCCESS;
    smheap_link_t *l;

    DL_FOREACH(links, l) {
        MPIDI_VC_t *vc = l->vc;
        int budget = l->geom.cells, got = 0;
        smheap_cell_t *cell;

        if (vc == NULL || !l->reads || vc->ch.in_link != l)
            continue;
        while (budget-- > 0 && (cell = smheap_ring_peek(&vc->ch.in, &l->geom)) != NULL) {
            if (vc->state == MPIDI_VC_STATE_INACTIVE)
                MPIDI_CHANGE_VC_STATE(vc, ACTIVE);
            mpi_errno = MPIDI_CH3I_Receive_cell(vc, cell);
            MPIR_ERR_CHECK(mpi_errno);
            *made_progress = TRUE;
            got = 1;
            MPIR_T_PVAR_COUNTER_INC(SMHEAP, smheap_link_cells_received, 1);
            if (l->vc != vc)
                break;  /* the handler closed the VC: it may be gone */
            smheap_ring_release(&vc->ch.in);
        }
        if (got && l->vc == vc)
            smheap_doorbell_ring(&l->seg->bell[1 - l->side]);   /* room for the sender */
    }

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* Look for new links, now and then (a syscall), or now if `now`; *looked says whether it
 * was time (the socket listener is looked at as often, see ch3_progress.c). */
int MPIDI_CH3I_Link_poll_listener(int now, int *looked)
{
    int mpi_errno = MPI_SUCCESS;

    *looked = now || ++listen_ticks >= LISTEN_POLL_INTERVAL;
    if (!*looked)
        return MPI_SUCCESS;
    listen_ticks = 0;
    if (listen_fd < 0)
        return MPI_SUCCESS;
    mpi_errno = accept_links();
    if (pending)
        retry_pending();
    return mpi_errno;
}

/* A process group was made: an outbox from one of its processes may be waiting for it. */
void MPIDI_CH3I_Link_group_added(void)
{
    MPIDI_CH3I_Link_active = 1;
    listen_ticks = LISTEN_POLL_INTERVAL;
}

/* The VC is closed or destroyed: it reads and writes no link from now on.  The next VC
 * of the same process starts over with new links. */
void MPIDI_CH3I_Link_retire(MPIDI_VC_t * vc)
{
    if (vc->ch.in_link == NULL && vc->ch.out_link == NULL)
        return;         /* a VC of our job, or one that never spoke */
    if (vc->ch.in_link) {
        vc->ch.in_link->vc = NULL;
        retired++;
    }
    if (vc->ch.out_link && vc->ch.out_link != vc->ch.in_link) {
        vc->ch.out_link->vc = NULL;
        retired++;
    }
    vc->ch.in_link = vc->ch.out_link = NULL;
    vc->ch.in.ring = vc->ch.out.ring = NULL;
    vc->ch.peer_bell = NULL;
}

/* Unmap retired links, where nobody reads them or sleeps on them. */
void MPIDI_CH3I_Link_reap(void)
{
    smheap_link_t *l, *tmp;

    if (retired == 0 || MPIDI_CH3I_Link_sleepers > 0)
        return;
    DL_FOREACH_SAFE(links, l, tmp) {
        if (l->vc == NULL) {
            DL_DELETE(links, l);
            unmap_link(l);
        }
    }
    retired = 0;
}

/* Our doorbells in the link segments, after `first` (the node doorbell), for a sleep. */
int MPIDI_CH3I_Link_bells(smheap_doorbell_t ** bells, int max)
{
    int n = 0;
    smheap_link_t *l;

    DL_FOREACH(links, l) {
        if (n == max)
            break;
        if (l->vc)
            bells[n++] = &l->seg->bell[l->side];
    }
    return n;
}

#ifdef MPL_USE_DBG_LOGGING
const char *MPIDI_CH3_VC_GetStateString(struct MPIDI_VC *vc)
{
    return vc->ch.out_link || vc->ch.in_link ? "link" : "node";
}
#endif
