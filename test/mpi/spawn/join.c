/* MPI_Comm_join over a real TCP socket between ranks 0 and 1, CYCLES times: rank 0 listens
 * on a TCP port, rank 1 connects to it at rank 0's host name, and both join.  Over the new
 * intercommunicator 100 B and 4 MiB of heap data go each way, every byte checked.  MPICH
 * builds the join on a port: the temporary connection behind it must be a link when the
 * two ranks share a node and a socket connection to the port's listener when they do not
 * (MPI_T counters, summed over both ranks). */
#include <netdb.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "../include/smheap_test.h"

#define CYCLES 3
#define BIG (4 << 20)

/* Rank 0: a listening TCP socket on any address; its port goes to rank 1. */
static int listen_tcp(int *port)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof(sa);
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_ANY);
    if (fd < 0 || bind(fd, (struct sockaddr *) &sa, sizeof(sa)) != 0 || listen(fd, 1) != 0 ||
        getsockname(fd, (struct sockaddr *) &sa, &len) != 0) {
        perror("listening socket");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    *port = ntohs(sa.sin_port);
    return fd;
}

/* Rank 1: a TCP connection to host:port. */
static int connect_tcp(const char *host, int port)
{
    struct addrinfo hints = { 0 }, *ai;
    char service[16];
    int fd;

    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    snprintf(service, sizeof(service), "%d", port);
    if (getaddrinfo(host, service, &hints, &ai) != 0) {
        fprintf(stderr, "cannot resolve %s\n", host);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        perror("connecting to rank 0");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    freeaddrinfo(ai);
    return fd;
}

static int exchange(MPI_Comm inter, int seed)
{
    char *out = malloc(BIG), *in = malloc(BIG);
    int errs = 0;

    for (int i = 0; i < BIG; i++)
        out[i] = (char) (seed + i % 253);
    MPI_Sendrecv(out, 100, MPI_CHAR, 0, 1, in, 100, MPI_CHAR, 0, 1, inter, MPI_STATUS_IGNORE);
    for (int i = 0; i < 100; i++)
        errs += in[i] != (char) (seed + i % 253);
    MPI_Sendrecv(out, BIG, MPI_CHAR, 0, 2, in, BIG, MPI_CHAR, 0, 2, inter, MPI_STATUS_IGNORE);
    for (int i = 0; i < BIG; i++)
        errs += in[i] != (char) (seed + i % 253);
    if (errs)
        fprintf(stderr, "%d bytes wrong over the joined communicator\n", errs);
    free(out);
    free(in);
    return errs != 0;
}

/* Both ranks' counter increases since `before`, summed. */
static unsigned long long sum_since(const char *name, unsigned long long before)
{
    unsigned long long mine = pvar_value(name) - before, sum;

    MPI_Allreduce(&mine, &sum, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    return sum;
}

int main(int argc, char **argv)
{
    int rank, size, prov, errs = 0, port = 0, fd = -1, listen_fd = -1, same;
    unsigned long long links0, sock0, links, socks;
    char host[MPI_MAX_PROCESSOR_NAME] = "";

    MPI_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &prov);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        fprintf(stderr, "run with 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    same = same_node(MPI_COMM_WORLD, 0, 1);
    if (rank == 0) {
        int len;

        MPI_Get_processor_name(host, &len);
    }
    MPI_Bcast(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, MPI_COMM_WORLD);

    links0 = pvar_value("smheap_links_opened");
    sock0 = pvar_value("smheap_remote_connects");
    for (int c = 0; c < CYCLES; c++) {
        MPI_Comm inter;

        if (rank == 0) {
            listen_fd = listen_tcp(&port);
            MPI_Send(&port, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);
            fd = accept(listen_fd, NULL, NULL);
            close(listen_fd);
        } else {
            MPI_Recv(&port, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            fd = connect_tcp(host, port);
        }
        MPI_Comm_join(fd, &inter);
        errs += exchange(inter, c * 7 + 1);
        MPI_Comm_disconnect(&inter);
        close(fd);
    }

    links = sum_since("smheap_links_opened", links0);
    socks = sum_since("smheap_remote_connects", sock0);
    if (same ? links < CYCLES || socks != 0 : socks < CYCLES || links != 0) {
        if (rank == 0)
            fprintf(stderr, "ranks on %s: %llu port links and %llu socket connections for "
                    "%d joins\n", same ? "one node" : "two nodes", links, socks, CYCLES);
        errs++;
    }

    MPI_T_finalize();
    smheap_test_report(errs);
    MPI_Finalize();
    return 0;
}
