// Holds glibc's malloc to REVUE_MALLOC_ARENAS arenas in the `revue` node, before main. By
// default glibc makes an arena for each thread that allocates while the others' are busy, up to
// 8 per core, and keeps what each held: a node serving RTSP, whose every session brings
// short-lived streaming threads, grew 17 MiB in each 40 sessions (ffprobe clients one after
// another). With two arenas it still grew 10–11 MiB from the 40th session to the 200th; with
// one it held 63–65 MiB (revue-bench sessions). glibc fixes the bound the first time a thread
// needs an arena of its own; set in a constructor, before main and before any thread, it holds
// from the start, as MALLOC_ARENA_MAX in the environment would (which, given, wins).
#include "CMalloc.h"

#include <malloc.h>
#include <stdlib.h>

static int arenas = 0;

__attribute__((constructor)) static void bound_malloc_arenas(void) {
    if (getenv("MALLOC_ARENA_MAX") != NULL || getenv("GLIBC_TUNABLES") != NULL) return;
    if (mallopt(M_ARENA_MAX, REVUE_MALLOC_ARENAS) == 1) arenas = REVUE_MALLOC_ARENAS;
}

int revue_malloc_arenas(void) { return arenas; }
