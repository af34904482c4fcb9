/*
 * ch3:smheap -- channel finalization.  ch3 has closed every VC (all sends delivered)
 * before it calls us, and destroys the remaining process groups after.
 */

#include "mpidi_ch3_impl.h"
#include "smheap_coll.h"

int MPIDI_CH3_Finalize(void)
{
    int mpi_errno = MPI_SUCCESS;

    MPIR_FUNC_ENTER;

    mpi_errno = MPIDI_CH3I_Smheap_coll_finalize();
    MPIR_ERR_CHECK(mpi_errno);
    mpi_errno = MPIDI_CH3I_Link_finalize();
    MPIR_ERR_CHECK(mpi_errno);
    mpi_errno = MPIDI_CH3I_Net_finalize();
    MPIR_ERR_CHECK(mpi_errno);
    mpi_errno = MPIDI_CH3I_Smheap_part_finalize();
    MPIR_ERR_CHECK(mpi_errno);
    mpi_errno = MPIDI_CH3I_Progress_finalize();
    MPIR_ERR_CHECK(mpi_errno);
    mpi_errno = MPIDI_CH3I_Smheap_queue_finalize();
    MPIR_ERR_CHECK(mpi_errno);
    MPIDI_CH3I_Free_node_map();

  fn_exit:
    MPIR_FUNC_EXIT;
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}
