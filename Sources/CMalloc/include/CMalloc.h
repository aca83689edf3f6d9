#ifndef REVUE_CMALLOC_H
#define REVUE_CMALLOC_H

/// The most malloc arenas the node uses.
#define REVUE_MALLOC_ARENAS 1

/// The arena bound set before main (REVUE_MALLOC_ARENAS), or 0 when MALLOC_ARENA_MAX (or
/// GLIBC_TUNABLES) chose it instead.
int revue_malloc_arenas(void);

#endif
