/*
 * ch3:smheap -- the channel's MPI_T counters themselves, bumped by the files that count
 * (MPIR_T_PVAR_COUNTER_INC) and registered, with their descriptions, by src/ch3_mpit.c.
 */

#include "smheap_mpit.h"

unsigned long long PVAR_COUNTER_smheap_sleeps;
unsigned long long PVAR_COUNTER_smheap_test_yields;
unsigned long long PVAR_COUNTER_smheap_contended_waits;
unsigned long long PVAR_COUNTER_smheap_cells_received;
unsigned long long PVAR_COUNTER_smheap_eager_msgs;
unsigned long long PVAR_COUNTER_smheap_eager_bytes;
unsigned long long PVAR_COUNTER_smheap_warm_msgs;
unsigned long long PVAR_COUNTER_smheap_hot_msgs;
unsigned long long PVAR_COUNTER_smheap_short_msgs;
unsigned long long PVAR_COUNTER_smheap_ring_lines;
unsigned long long PVAR_COUNTER_smheap_spread_msgs;
unsigned long long PVAR_COUNTER_smheap_single_copy_msgs;
unsigned long long PVAR_COUNTER_smheap_single_copy_bytes;
unsigned long long PVAR_COUNTER_smheap_staged_msgs;
unsigned long long PVAR_COUNTER_smheap_staged_bytes;
unsigned long long PVAR_COUNTER_smheap_cma_msgs;
unsigned long long PVAR_COUNTER_smheap_cma_bytes;
unsigned long long PVAR_COUNTER_smheap_cma_fallbacks;
unsigned long long PVAR_COUNTER_smheap_cma_slow_ring_msgs;
unsigned long long PVAR_COUNTER_smheap_both_ways_staged_msgs;
unsigned long long PVAR_COUNTER_smheap_shared_copy_msgs;
unsigned long long PVAR_COUNTER_smheap_copy_help_bytes;
unsigned long long PVAR_COUNTER_smheap_links_opened;
unsigned long long PVAR_COUNTER_smheap_links_accepted;
unsigned long long PVAR_COUNTER_smheap_link_cells_received;
unsigned long long PVAR_COUNTER_smheap_remote_msgs;
unsigned long long PVAR_COUNTER_smheap_remote_bytes;
unsigned long long PVAR_COUNTER_smheap_remote_connects;
unsigned long long PVAR_COUNTER_smheap_remote_failures;
unsigned long long PVAR_COUNTER_smheap_remote_wakeups;
unsigned long long PVAR_COUNTER_smheap_arms;
unsigned long long PVAR_COUNTER_smheap_net_ofi_data_msgs;
unsigned long long PVAR_COUNTER_smheap_net_ofi_read_msgs;
unsigned long long PVAR_COUNTER_smheap_net_ofi_reads;
unsigned long long PVAR_COUNTER_smheap_net_ofi_read_bytes;
unsigned long long PVAR_COUNTER_smheap_net_heap_registrations;
unsigned long long PVAR_COUNTER_smheap_net_registrations;
unsigned long long PVAR_COUNTER_smheap_part_in_place;
unsigned long long PVAR_COUNTER_smheap_part_msgs;
unsigned long long PVAR_COUNTER_smheap_part_placed;
unsigned long long PVAR_COUNTER_smheap_rma_ops_in_place;
unsigned long long PVAR_COUNTER_smheap_rma_ops_queued;
unsigned long long PVAR_COUNTER_smheap_rma_locks_in_place;
unsigned long long PVAR_COUNTER_smheap_rma_locks_for_packets;
unsigned long long PVAR_COUNTER_smheap_rma_heap_windows;
unsigned long long PVAR_COUNTER_smheap_rma_epochs_in_place;
unsigned long long PVAR_COUNTER_smheap_vector_reductions;
