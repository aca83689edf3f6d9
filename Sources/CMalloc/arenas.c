// Holds glibc's malloc to REVUE_MALLOC_ARENAS arenas in the `revue` node, before main: by
// default glibc makes one for each thread that allocates while the others' are busy, up to 8 per
// core, and keeps what each held. It fixes the bound the first time it needs a new arena, which
// the Swift runtime's threads reach before main: set from main, the bound came too late (a node
// serving 200 RTSP sessions one after another still grew 10.5 MiB after the 40th, as against
// 3.8 MiB with MALLOC_ARENA_MAX=2 in the environment), so it is set in a constructor, as the
// environment variable would be.
#include "CMalloc.h"

#include <malloc.h>
#include <stdlib.h>

static int arenas = 0;

__attribute__((constructor)) static void bound_malloc_arenas(void) {
    if (getenv("MALLOC_ARENA_MAX") != NULL || getenv("GLIBC_TUNABLES") != NULL) return;
    if (mallopt(M_ARENA_MAX, REVUE_MALLOC_ARENAS) == 1) arenas = REVUE_MALLOC_ARENAS;
}

int revue_malloc_arenas(void) { return arenas; }
