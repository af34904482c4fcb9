/*
 * ch3:smheap -- the channel's MPI_T performance variables, all of them: the counters the
 * channel's files bump (declared in smheap_mpit.h) and the levels read from the heap, the
 * node segment and the progress engine.  The collectives declare theirs with them
 * (src/coll/smheap_coll_comm.c).
 */

#include "mpidi_ch3_impl.h"
#include "smheap.h"


#define FLAGS (MPIR_T_PVAR_FLAG_READONLY | MPIR_T_PVAR_FLAG_CONTINUOUS)

/* A counter the channel bumps with MPIR_T_PVAR_COUNTER_INC. */
#define COUNTER(name_, verbosity_, desc_)                                                  \
    MPIR_T_PVAR_COUNTER_REGISTER_STATIC(SMHEAP, MPI_UNSIGNED_LONG_LONG, name_, verbosity_, \
                                        MPI_T_BIND_NO_OBJECT, FLAGS, "CH3", desc_)

/* A value read when asked, by get_(addr).  MPICH 4.0.2's MPIR_T_PVAR_LEVEL_REGISTER_DYNAMIC
 * passes an unbound "get_count" (a typo), so this uses its _impl form directly. */
#define LEVEL(name_, addr_, get_, desc_)                                                   \
    PVAR_GATED_ACTION(SMHEAP, MPIR_T_PVAR_LEVEL_REGISTER_DYNAMIC_impl(                     \
        MPI_UNSIGNED_LONG_LONG, name_, (void *) (addr_), 1, MPI_T_VERBOSITY_USER_BASIC,    \
        MPI_T_BIND_NO_OBJECT, FLAGS, get_, NULL, "CH3", desc_))

/* A counter kept elsewhere (the heap's, the copy's), read by get_(addr). */
#define READ_COUNTER(name_, addr_, get_, verbosity_, desc_)                                \
    MPIR_T_PVAR_COUNTER_REGISTER_DYNAMIC(SMHEAP, MPI_UNSIGNED_LONG_LONG, name_, addr_, 1,  \
                                         verbosity_, MPI_T_BIND_NO_OBJECT, FLAGS, get_,    \
                                         NULL, "CH3", desc_)

static void get_heap_counter(void *addr, void *obj_handle, int count, void *buf)
{
    (void) obj_handle, (void) count;
    *(unsigned long long *) buf = smheap_counter_total((enum smheap_counter) (intptr_t) addr);
}

/* addr: a function without arguments that returns the value */
static void get_by_call(void *addr, void *obj_handle, int count, void *buf)
{
    size_t (*value) (void) = (size_t (*)(void)) addr;

    (void) obj_handle, (void) count;
    *(unsigned long long *) buf = value();
}

/* addr: an int */
static void get_int(void *addr, void *obj_handle, int count, void *buf)
{
    (void) obj_handle, (void) count;
    *(unsigned long long *) buf = (unsigned long long) *(const int *) addr;
}

/* MB/s, from bytes per ns */
static size_t ring_rate(void)
{
    return (size_t) (smheap_pace.last_rate * 1000);
}

static size_t slow_ring_rate(void)
{
    return (size_t) (smheap_pace.slow_below * 1000);
}

static void register_heap(void)
{
    LEVEL(smheap_heap_bytes_in_use, smheap_in_use, get_by_call,
          "bytes of the pages of this rank's slice of the shared heap that hold live "
          "allocations (and blocks the thread caches keep for reuse)");
    LEVEL(smheap_heap_bytes_committed, smheap_committed, get_by_call,
          "bytes of this rank's slice of the shared heap held in /dev/shm: live allocations "
          "and freed memory kept for reuse (MPIR_CVAR_CH3_SMHEAP_RETAIN)");
    LEVEL(smheap_heap_shared, &MPIDI_CH3I_Smheap_heap_shared, get_int,
          "1 if every rank of this node allocates from one shared heap");
    READ_COUNTER(smheap_glibc_full, (void *) (intptr_t) SMHEAP_GLIBC_FULL, get_heap_counter,
                 MPI_T_VERBOSITY_USER_BASIC,
                 "allocations served by glibc because this rank's slice (or /dev/shm) was "
                 "full");
    READ_COUNTER(smheap_glibc_off, (void *) (intptr_t) SMHEAP_GLIBC_OFF, get_heap_counter,
                 MPI_T_VERBOSITY_USER_BASIC,
                 "allocations served by glibc because the shared heap was off");
    READ_COUNTER(smheap_heap_purges, (void *) (intptr_t) SMHEAP_PURGES, get_heap_counter,
                 MPI_T_VERBOSITY_USER_BASIC,
                 "times this rank gave its freed big blocks back to /dev/shm because it kept "
                 "more than MPIR_CVAR_CH3_SMHEAP_RETAIN");
}

static void register_messages(void)
{
    COUNTER(smheap_eager_msgs, MPI_T_VERBOSITY_USER_BASIC,
            "messages this rank sent eagerly, copied through the rings");
    COUNTER(smheap_eager_bytes, MPI_T_VERBOSITY_USER_BASIC, "bytes of those messages");
    COUNTER(smheap_warm_msgs, MPI_T_VERBOSITY_USER_DETAIL,
            "eager messages (and other packets with data) whose data went through a "
            "ring's warm slot");
    COUNTER(smheap_hot_msgs, MPI_T_VERBOSITY_USER_DETAIL,
            "short messages and packets that went through a ring's hot cell (their "
            "receiver had read the last one there), not through a cell of their own");
    COUNTER(smheap_short_msgs, MPI_T_VERBOSITY_USER_DETAIL,
            "eager messages of a few hundred bytes at most sent in a ring cell's short form, "
            "whose header leaves 48 bytes of data in the cell's first cache line");
    COUNTER(smheap_ring_lines, MPI_T_VERBOSITY_USER_DETAIL,
            "cache lines of ring cells, warm slots and spread data that sent messages "
            "were written into");
    COUNTER(smheap_spread_msgs, MPI_T_VERBOSITY_USER_DETAIL,
            "eager messages whose data went further into their cell, where the ring "
            "spreads it from lap to lap");
    COUNTER(smheap_single_copy_msgs, MPI_T_VERBOSITY_USER_BASIC,
            "messages this rank sent with a single copy from the shared heap");
    COUNTER(smheap_single_copy_bytes, MPI_T_VERBOSITY_USER_BASIC, "bytes of those messages");
    COUNTER(smheap_staged_msgs, MPI_T_VERBOSITY_USER_BASIC,
            "messages this rank sent through ch3's rendezvous, staged through the rings "
            "(large data outside the shared heap, or noncontiguous)");
    COUNTER(smheap_staged_bytes, MPI_T_VERBOSITY_USER_BASIC, "bytes of those messages");
    LEVEL(smheap_cma, &MPIDI_CH3I_Smheap_cma_ready, get_int,
          "1 if this rank copies large messages outside the shared heap through the kernel "
          "(MPIR_CVAR_CH3_SMHEAP_CMA_MIN)");
    COUNTER(smheap_cma_msgs, MPI_T_VERBOSITY_USER_BASIC,
            "messages this rank offered for a single copy through the kernel (large, "
            "contiguous, outside the shared heap)");
    COUNTER(smheap_cma_bytes, MPI_T_VERBOSITY_USER_BASIC, "bytes of those messages");
    COUNTER(smheap_cma_fallbacks, MPI_T_VERBOSITY_USER_BASIC,
            "such messages this rank received staged through the rings instead: the "
            "kernel refused the copy or the receive type is noncontiguous");
    COUNTER(smheap_cma_slow_ring_msgs, MPI_T_VERBOSITY_USER_BASIC,
            "of smheap_cma_msgs, those below MPIR_CVAR_CH3_SMHEAP_CMA_MIN, sent through "
            "the kernel because the rings were slow");
    COUNTER(smheap_both_ways_staged_msgs, MPI_T_VERBOSITY_USER_BASIC,
            "messages offered through the kernel that this rank received staged through "
            "the rings instead, because it was sending to the same peer and the rings were "
            "fast (MPIR_CVAR_CH3_SMHEAP_STAGE_BOTH_WAYS_MAX)");
    LEVEL(smheap_rings_slow, &smheap_pace.slow, get_int,
          "1 while copies into the rings run slower than smheap_slow_ring_rate");
    LEVEL(smheap_ring_rate, ring_rate, get_by_call,
          "MB/s of the fastest of the last few timed copies into the rings (0: none yet)");
    LEVEL(smheap_slow_ring_rate, slow_ring_rate, get_by_call,
          "MB/s below which the rings count as slow (MPIR_CVAR_CH3_SMHEAP_SLOW_RING_RATE, "
          "or half the speed of a 64 KiB copy through the kernel, timed at MPI_Init; 0: "
          "not watched)");
    READ_COUNTER(smheap_ring_slow_spells, &smheap_pace.slow_spells, NULL,
                 MPI_T_VERBOSITY_USER_BASIC, "times the rings were found slow");
    COUNTER(smheap_shared_copy_msgs, MPI_T_VERBOSITY_USER_BASIC,
            "single-copy messages this rank received and copied together with the sender "
            "(both buffers in the shared heap, or through the kernel)");
    COUNTER(smheap_copy_help_bytes, MPI_T_VERBOSITY_USER_BASIC,
            "bytes this rank copied into a receiver's buffer for its own messages");
    READ_COUNTER(smheap_copy_detours, &smheap_copy_detours, NULL, MPI_T_VERBOSITY_USER_DETAIL,
                 "bulk copies of this process that went backwards, around glibc's slow "
                 "memcpy on AMD at a source-to-destination distance of 1 to 15 bytes mod "
                 "4 KiB");
    READ_COUNTER(smheap_copy_pieced, &smheap_copy_pieced, NULL, MPI_T_VERBOSITY_USER_DETAIL,
                 "copies of one-sided operations done in place, from the L2 size to half the "
                 "L3, that went in pieces of a quarter of the L2, where MPI_Init did not find "
                 "one memcpy faster");
    COUNTER(smheap_cells_received, MPI_T_VERBOSITY_USER_DETAIL, "ring cells this rank received");
    COUNTER(smheap_links_opened, MPI_T_VERBOSITY_USER_DETAIL,
            "link segments this process created (connections to processes of other jobs)");
    COUNTER(smheap_links_accepted, MPI_T_VERBOSITY_USER_DETAIL,
            "link segments this process accepted from processes of other jobs");
    COUNTER(smheap_link_cells_received, MPI_T_VERBOSITY_USER_DETAIL,
            "ring cells this process received over links");
    COUNTER(smheap_remote_msgs, MPI_T_VERBOSITY_USER_BASIC,
            "packets this rank sent to processes on other nodes, over sockets");
    COUNTER(smheap_remote_bytes, MPI_T_VERBOSITY_USER_BASIC,
            "data bytes sent with those packets (headers not counted)");
    COUNTER(smheap_remote_connects, MPI_T_VERBOSITY_USER_DETAIL,
            "socket connections this rank opened to processes on other nodes");
    COUNTER(smheap_remote_failures, MPI_T_VERBOSITY_USER_BASIC,
            "socket connections to other nodes that broke before ch3 closed them");
    COUNTER(smheap_part_in_place, MPI_T_VERBOSITY_USER_BASIC,
            "partitions (of the sender) that reached this rank's partitioned receives in "
            "place, through the shared heap, without a message");
    COUNTER(smheap_part_placed, MPI_T_VERBOSITY_USER_DETAIL,
            "partitions this rank's partitioned sends put in the receive buffer themselves "
            "(the receiver had started and its buffer is in the heap)");
    COUNTER(smheap_part_msgs, MPI_T_VERBOSITY_USER_BASIC,
            "partitions of partitioned sends this rank sent as messages");
}

static void register_rma(void)
{
    COUNTER(smheap_rma_ops_in_place, MPI_T_VERBOSITY_USER_BASIC,
            "one-sided operations this rank did in place: to its own window, or to a "
            "window of its node in shared memory (the heap, or MPI_Win_allocate's segment)");
    COUNTER(smheap_rma_ops_queued, MPI_T_VERBOSITY_USER_BASIC,
            "one-sided operations this rank queued as packets for the target to apply");
    COUNTER(smheap_rma_locks_in_place, MPI_T_VERBOSITY_USER_BASIC,
            "passive-target locks this rank took in the shared heap, without the target "
            "(MPI_Win_lock_all counts one per target)");
    COUNTER(smheap_rma_locks_for_packets, MPI_T_VERBOSITY_USER_BASIC,
            "passive-target locks this rank, as a target, granted to lock packets (from "
            "origins on other nodes) after taking its lock word in the heap for them, so that "
            "its node's origins, which take that word themselves, are kept out");
    COUNTER(smheap_rma_heap_windows, MPI_T_VERBOSITY_USER_DETAIL,
            "windows of MPI_Win_create this rank made shared-memory windows, their node's "
            "memory being in the heap");
    COUNTER(smheap_rma_epochs_in_place, MPI_T_VERBOSITY_USER_BASIC,
            "active-target synchronization calls (fence, post, start, complete, wait, a "
            "successful test) this rank did through the heap, without messages");
    COUNTER(smheap_vector_reductions, MPI_T_VERBOSITY_USER_DETAIL,
            "reductions this rank did with the channel's vector kernels instead of MPICH's "
            "loops: accumulates done in place or from packets, and the shared-heap "
            "collectives' local reductions");
}

static void register_waiting(void)
{
    COUNTER(smheap_sleeps, MPI_T_VERBOSITY_USER_DETAIL, "times this rank slept on its doorbell");
    COUNTER(smheap_test_yields, MPI_T_VERBOSITY_USER_DETAIL,
            "fruitless nonblocking polls (MPI_Test...) that yielded the CPU on an oversubscribed node");
    COUNTER(smheap_contended_waits, MPI_T_VERBOSITY_USER_DETAIL,
            "waits that stopped spinning because more threads were runnable than the CPUs");
    COUNTER(smheap_remote_wakeups, MPI_T_VERBOSITY_USER_DETAIL,
            "times a local peer woke this rank from a sleep in poll() on its sockets");
    COUNTER(smheap_arms, MPI_T_VERBOSITY_USER_DETAIL,
            "doorbells this rank armed, announcing that it may sleep on them (its node "
            "doorbell, and its link doorbells, at each sleep and each last look before one)");
    READ_COUNTER(smheap_wakeups, (void *) smheap_doorbell_wakeups, get_by_call,
                 MPI_T_VERBOSITY_USER_DETAIL,
                 "wake-ups this rank issued to peers that had armed their doorbells (a futex "
                 "call, and a datagram to a peer asleep in poll()): at most one per arm");
    LEVEL(smheap_net_ofi, MPIDI_CH3I_Net_uses_ofi, get_by_call,
          "1 if the ranks of this job on other nodes are reached over libfabric "
          "(MPIR_CVAR_CH3_SMHEAP_NET), 0 if over TCP sockets");
    COUNTER(smheap_net_ofi_data_msgs, MPI_T_VERBOSITY_USER_BASIC,
            "libfabric messages this rank sent that carried ch3's bytes themselves (copied)");
    COUNTER(smheap_net_ofi_read_msgs, MPI_T_VERBOSITY_USER_BASIC,
            "libfabric messages this rank sent that named data for the receiver to read "
            "with RDMA");
    COUNTER(smheap_net_ofi_reads, MPI_T_VERBOSITY_USER_BASIC,
            "RDMA reads this rank made of other ranks' data (one per contiguous piece)");
    COUNTER(smheap_net_ofi_read_bytes, MPI_T_VERBOSITY_USER_BASIC, "bytes those reads moved");
    COUNTER(smheap_net_heap_registrations, MPI_T_VERBOSITY_USER_BASIC,
            "registrations of the node's shared heap with the libfabric provider (one, at "
            "MPI_Init; none with MPIR_CVAR_CH3_SMHEAP_OFI_REGISTER=message)");
    COUNTER(smheap_net_registrations, MPI_T_VERBOSITY_USER_BASIC,
            "registrations of message data with the libfabric provider, one per message "
            "piece: data outside the shared heap (and any with "
            "MPIR_CVAR_CH3_SMHEAP_OFI_REGISTER=message)");
    LEVEL(smheap_spin_polls, MPIDI_CH3I_Progress_spin_polls, get_by_call,
          "polls a waiting rank spins before it yields the CPU "
          "(MPIR_CVAR_CH3_SMHEAP_SPIN_POLLS, or the automatic choice: 0, or so many that "
          "smheap_spin_usec ends the spin)");
    LEVEL(smheap_spin_usec, MPIDI_CH3I_Progress_spin_usec, get_by_call,
          "microseconds a waiting rank spins before it yields the CPU, when the channel "
          "chooses (0: it does not spin, or MPIR_CVAR_CH3_SMHEAP_SPIN_POLLS counts the polls)");
    LEVEL(smheap_node_cpus, &smheap_queue.node_cpus, get_int,
          "CPUs the ranks of this node may run on between them (their affinity masks)");
    LEVEL(smheap_wake_fenceless, &smheap_doorbell_fenceless, get_int,
          "1: a rank publishing work for another takes no fence before its look at the "
          "other's doorbell, a sleeper calls membarrier(2) instead (every rank of the node "
          "registered for it and they do not outnumber their CPUs); 0: a fence every time");
}

void MPIDI_CH3I_Smheap_mpit_init(void)
{
    register_heap();
    register_messages();
    register_rma();
    register_waiting();
}
