/*
 * ch3:smheap -- the node segment: rings and doorbells (see smheap_queue.h).
 *
 * The segment comes from MPICH's MPIDU_Init_shm_alloc, which creates it in the first
 * local rank, hands its name to the others through PMI and removes the backing file as
 * soon as every local rank has it mapped, so nothing is left in /dev/shm however the job
 * ends.
 */

#include "mpidi_ch3_impl.h"
#include "mpidu_init_shm.h"

smheap_queue_t smheap_queue;

static void choose_geometry(int nranks)
{
    /* Rings for nranks^2 pairs: keep the segment modest as jobs grow.  Cells are
     * touched (and backed by tmpfs pages) only when a pair actually talks. */
    if (nranks <= 16) {
        smheap_queue.geom.cells = 8;
        smheap_queue.geom.cell_size = 32 * 1024;
    } else {
        smheap_queue.geom.cells = 4;
        smheap_queue.geom.cell_size = 16 * 1024;
    }
}

int MPIDI_CH3I_Smheap_queue_init(int nranks, int my_rank)
{
    int mpi_errno = MPI_SUCCESS;
    size_t bells_len, len;

    MPIR_FUNC_ENTER;

    smheap_queue.nranks = nranks;
    smheap_queue.my_rank = my_rank;
    choose_geometry(nranks);

    bells_len = MPL_ROUND_UP_ALIGN((size_t) nranks * sizeof(smheap_doorbell_t), 4096);
    len = bells_len + (size_t) nranks * nranks * smheap_ring_size(&smheap_queue.geom);

    mpi_errno = MPIDU_Init_shm_init();
    MPIR_ERR_CHECK(mpi_errno);
    mpi_errno = MPIDU_Init_shm_alloc(len, &smheap_queue.segment);
    MPIR_ERR_CHECK(mpi_errno);

    /* A new tmpfs segment reads as zeroes; a one-rank node gets private memory. */
    if (nranks == 1)
        memset(smheap_queue.segment, 0, len);

    smheap_queue.bells = (smheap_doorbell_t *) smheap_queue.segment;
    smheap_queue.rings = (char *) smheap_queue.segment + bells_len;

    mpi_errno = MPIDU_Init_shm_barrier();
    MPIR_ERR_CHECK(mpi_errno);

  fn_exit:
    MPIR_FUNC_EXIT;
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPIDI_CH3I_Smheap_queue_finalize(void)
{
    int mpi_errno = MPI_SUCCESS;

    MPIR_FUNC_ENTER;

    if (smheap_queue.segment) {
        /* Nobody may still be writing into our inbox: every peer has finished the
         * close protocol with us, and this barrier makes that hold node-wide. */
        mpi_errno = MPIDU_Init_shm_barrier();
        MPIR_ERR_CHECK(mpi_errno);
        mpi_errno = MPIDU_Init_shm_free(smheap_queue.segment);
        MPIR_ERR_CHECK(mpi_errno);
        smheap_queue.segment = NULL;
    }
    mpi_errno = MPIDU_Init_shm_finalize();
    MPIR_ERR_CHECK(mpi_errno);

  fn_exit:
    MPIR_FUNC_EXIT;
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}
