/*
 * ch3:smheap -- the channel's side of the shared heap (src/heap): its CVARs and MPI_T
 * variables, and the check at MPI_Init that the heap is live and that every local rank
 * shares the same one.
 *
 * The heap reads its settings from the environment before main, under the same names and
 * spellings as these CVARs; MPICH reads them again here so that mpivars and MPI_T show them.
 */

/*
=== BEGIN_MPI_T_CVAR_INFO_BLOCK ===

cvars:
    - name        : MPIR_CVAR_CH3_SMHEAP_ENABLE
      category    : CH3
      type        : boolean
      default     : true
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_ALL_EQ
      description : >-
        ch3:smheap: serve malloc, calloc, realloc, memalign and the rest of the malloc family
        from the node-wide shared heap, so that large messages can move with a single copy.
        Read from the environment before main.  0 sends every allocation to glibc's malloc
        and messages take the copying paths.

    - name        : MPIR_CVAR_CH3_SMHEAP_SIZE
      category    : CH3
      type        : string
      default     : auto
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_ALL_EQ
      description : >-
        ch3:smheap: the size of each rank's slice of the shared heap, in bytes with an
        optional K, M or G suffix (for example 2G).  auto shares /dev/shm's capacity out
        between the ranks of the node (at most 64G each).  The reservation is virtual:
        pages are taken from /dev/shm only as they are allocated.  Allocations that do
        not fit come from glibc (MPI_T: smheap_glibc_full).  Read from the environment
        before main.

    - name        : MPIR_CVAR_CH3_SMHEAP_RETAIN
      category    : CH3
      type        : string
      default     : auto
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        ch3:smheap: the most memory of freed big blocks (over 1 MiB) a rank keeps in
        /dev/shm, so that blocks freed and allocated again are reused without a trip
        through tmpfs; above it, the rank gives them back at once (MPI_T:
        smheap_heap_purges), and when a new block needs fresh pages anyway, it keeps only a
        sixteenth of it.  Bytes with an optional K, M or G suffix; 0 keeps nothing; auto is
        an eighth of the rank's slice, between 64M and 1G.  Freed memory not reused for 10
        s is given back in any case.  Read from the environment before main.

    - name        : MPIR_CVAR_CH3_SMHEAP_PRELOAD
      category    : CH3
      type        : boolean
      default     : true
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_ALL_EQ
      description : >-
        ch3:smheap: mpiexec preloads libsmheap_preload.so (LD_PRELOAD, ahead of the user's
        own) into the processes it starts, so that the shared heap serves malloc in programs
        that reach libmpi through another library (ScaLAPACK, PETSc) or load it with dlopen
        (Python), whose own load order binds malloc to glibc's.  The library forwards to
        glibc until libmpi loads.  Read by mpiexec's proxy from the environment it gives
        the processes (export it, or -genv); 0 preloads nothing.

=== END_MPI_T_CVAR_INFO_BLOCK ===
*/

#include "mpidi_ch3_impl.h"
#include "mpidu_init_shm.h"
#include "smheap.h"

int MPIDI_CH3I_Smheap_heap_shared;

/* What each local rank publishes about its heap at MPI_Init (one MPIDU_Init_shm block). */
struct heap_identity {
    uintptr_t base;
    uint64_t size;
    uint64_t job;               /* hash of the region's job key */
    int active;
};

static uint64_t hash_key(const char *key)
{
    uint64_t h = 1469598103934665603ULL;        /* FNV-1a */

    for (; *key; key++)
        h = (h ^ (unsigned char) *key) * 1099511628211ULL;
    return h;
}

/* Every local rank says whether its heap is live and which region it is in; the heap is
 * shared only if all of them are in the same one. */
static int agree_on_heap(int local_size, int local_rank, int *first_off)
{
    int mpi_errno = MPI_SUCCESS;
    struct heap_identity mine = { 0 }, theirs;
    const char *key;
    int i;

    if (smheap_region_identity(&mine.base, &mine.size, &key) == 0) {
        mine.active = 1;
        mine.job = hash_key(key);
    }
    MPIR_Assert(sizeof(mine) <= MPIDU_INIT_SHM_BLOCK_SIZE);
    mpi_errno = MPIDU_Init_shm_put(&mine, sizeof(mine));
    MPIR_ERR_CHECK(mpi_errno);
    mpi_errno = MPIDU_Init_shm_barrier();
    MPIR_ERR_CHECK(mpi_errno);

    MPIDI_CH3I_Smheap_heap_shared = 1;
    *first_off = -1;
    for (i = 0; i < local_size; i++) {
        if (i == local_rank)
            theirs = mine;
        else {
            mpi_errno = MPIDU_Init_shm_get(i, sizeof(theirs), &theirs);
            MPIR_ERR_CHECK(mpi_errno);
        }
        if (!theirs.active && *first_off < 0)
            *first_off = i;
        if (!theirs.active || theirs.base != mine.base || theirs.size != mine.size ||
            theirs.job != mine.job)
            MPIDI_CH3I_Smheap_heap_shared = 0;
    }
    mpi_errno = MPIDU_Init_shm_barrier();       /* before anyone reuses the blocks */
    MPIR_ERR_CHECK(mpi_errno);

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* Called from MPIDI_CH3_Init once the node segment (and MPIDU_Init_shm) is up. */
int MPIDI_CH3I_Smheap_heap_init(int local_size, int local_rank)
{
    int mpi_errno = MPI_SUCCESS;
    char why[320] = "";
    int first_off;

    MPIR_FUNC_ENTER;

    MPIR_ERR_CHKANDJUMP1(smheap_config_error() != NULL, mpi_errno, MPI_ERR_OTHER,
                         "**smheap_env", "**smheap_env %s", smheap_config_error());
    if (!MPIR_CVAR_CH3_SMHEAP_ENABLE)   /* also when set through MPI_T before MPI_Init */
        smheap_disable();
    else if (!smheap_active())
        snprintf(why, sizeof(why), "%s", smheap_off_reason());
    else if (smheap_selftest(why, sizeof(why)) != 0)
        smheap_disable();
    else
        smheap_start_background_purge();

    mpi_errno = agree_on_heap(local_size, local_rank, &first_off);
    MPIR_ERR_CHECK(mpi_errno);

    /* One line per node: from the first rank whose heap is off, with its reason. */
    if (first_off == local_rank && why[0] != '\0')
        MPL_error_printf("ch3:smheap: the shared heap is off, so large messages are copied: "
                         "%s\n", why);
    else if (first_off < 0 && !MPIDI_CH3I_Smheap_heap_shared && local_rank == 0)
        MPL_error_printf("ch3:smheap: the ranks of this node are not in one shared heap "
                         "(were they started by one mpiexec?), so large messages are "
                         "copied\n");

  fn_exit:
    MPIR_FUNC_EXIT;
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}
