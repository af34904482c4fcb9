/*
 * ch3:smheap -- the channel's MPI_T counters (mpit/), bumped with
 * MPIR_T_PVAR_COUNTER_INC(SMHEAP, name, n) by the files that count; kept in
 * smheap_counters.c, registered with their descriptions by src/ch3_mpit.c.
 */

#ifndef SMHEAP_MPIT_H_INCLUDED
#define SMHEAP_MPIT_H_INCLUDED

/* The channel's MPI_T performance variables say which paths ran; they are always on
 * (MPICH gates each pvar module on ENABLE_PVAR_<module>). */
#ifndef ENABLE_PVAR_SMHEAP
#define ENABLE_PVAR_SMHEAP 1
#endif

extern unsigned long long PVAR_COUNTER_smheap_sleeps;
extern unsigned long long PVAR_COUNTER_smheap_test_yields;
extern unsigned long long PVAR_COUNTER_smheap_contended_waits;
extern unsigned long long PVAR_COUNTER_smheap_cells_received;
extern unsigned long long PVAR_COUNTER_smheap_eager_msgs;
extern unsigned long long PVAR_COUNTER_smheap_eager_bytes;
extern unsigned long long PVAR_COUNTER_smheap_warm_msgs;
extern unsigned long long PVAR_COUNTER_smheap_hot_msgs;
extern unsigned long long PVAR_COUNTER_smheap_short_msgs;
extern unsigned long long PVAR_COUNTER_smheap_ring_lines;
extern unsigned long long PVAR_COUNTER_smheap_spread_msgs;
extern unsigned long long PVAR_COUNTER_smheap_single_copy_msgs;
extern unsigned long long PVAR_COUNTER_smheap_single_copy_bytes;
extern unsigned long long PVAR_COUNTER_smheap_staged_msgs;
extern unsigned long long PVAR_COUNTER_smheap_staged_bytes;
extern unsigned long long PVAR_COUNTER_smheap_cma_msgs;
extern unsigned long long PVAR_COUNTER_smheap_cma_bytes;
extern unsigned long long PVAR_COUNTER_smheap_cma_fallbacks;
extern unsigned long long PVAR_COUNTER_smheap_cma_slow_ring_msgs;
extern unsigned long long PVAR_COUNTER_smheap_both_ways_staged_msgs;
extern unsigned long long PVAR_COUNTER_smheap_shared_copy_msgs;
extern unsigned long long PVAR_COUNTER_smheap_copy_help_bytes;
extern unsigned long long PVAR_COUNTER_smheap_links_opened;
extern unsigned long long PVAR_COUNTER_smheap_links_accepted;
extern unsigned long long PVAR_COUNTER_smheap_link_cells_received;
extern unsigned long long PVAR_COUNTER_smheap_remote_msgs;
extern unsigned long long PVAR_COUNTER_smheap_remote_bytes;
extern unsigned long long PVAR_COUNTER_smheap_remote_connects;
extern unsigned long long PVAR_COUNTER_smheap_remote_failures;
extern unsigned long long PVAR_COUNTER_smheap_remote_wakeups;
extern unsigned long long PVAR_COUNTER_smheap_arms;
extern unsigned long long PVAR_COUNTER_smheap_net_ofi_data_msgs;
extern unsigned long long PVAR_COUNTER_smheap_net_ofi_read_msgs;
extern unsigned long long PVAR_COUNTER_smheap_net_ofi_reads;
extern unsigned long long PVAR_COUNTER_smheap_net_ofi_read_bytes;
extern unsigned long long PVAR_COUNTER_smheap_net_heap_registrations;
extern unsigned long long PVAR_COUNTER_smheap_net_registrations;
extern unsigned long long PVAR_COUNTER_smheap_part_in_place;
extern unsigned long long PVAR_COUNTER_smheap_part_msgs;
extern unsigned long long PVAR_COUNTER_smheap_part_placed;
extern unsigned long long PVAR_COUNTER_smheap_rma_ops_in_place;
extern unsigned long long PVAR_COUNTER_smheap_rma_ops_queued;
extern unsigned long long PVAR_COUNTER_smheap_rma_locks_in_place;
extern unsigned long long PVAR_COUNTER_smheap_rma_locks_for_packets;
extern unsigned long long PVAR_COUNTER_smheap_rma_heap_windows;
extern unsigned long long PVAR_COUNTER_smheap_rma_epochs_in_place;
extern unsigned long long PVAR_COUNTER_smheap_vector_reductions;

#endif /* SMHEAP_MPIT_H_INCLUDED */
