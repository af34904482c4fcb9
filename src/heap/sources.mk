# The shared heap's sources, for both builds that compile them: the project's own
# (Makefile.am: the library its unit tests link) and MPICH's (the channel's Makefile.mk,
# which grafts src/heap at the same path).  smheap_tls.c is not here: MPICH builds it into
# a library of its own (see the channel's Makefile.mk).

smheap_heap_headers =                                      \
    src/heap/smheap.h                                      \
    src/heap/smheap_config.h                               \
    src/heap/smheap_engine.h                               \
    src/heap/smheap_family.h                               \
    src/heap/smheap_glibc.h                                \
    src/heap/smheap_region.h                               \
    src/heap/smheap_stats.h                                \
    src/heap/smheap_valgrind.h

smheap_heap_sources =                                      \
    src/heap/smheap_commit.c                               \
    src/heap/smheap_config.c                               \
    src/heap/smheap_engine.c                               \
    src/heap/smheap_glibc.c                                \
    src/heap/smheap_malloc.c                               \
    src/heap/smheap_region.c                               \
    src/heap/smheap_stats.c
