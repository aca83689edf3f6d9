// Makes Swift's Synchronization.Mutex visible to ThreadSanitizer (docs/sanitizers.md).
//
// An uncontended Mutex lock and unlock are atomics inlined into the caller, which ThreadSanitizer
// instruments. A contended one waits and wakes in _MutexHandle._lockSlow and _unlockSlow, futex
// calls inside libswiftSynchronization.so, which is not instrumented: ThreadSanitizer misses that
// happens-before edge and reports the next access to the guarded state as a race (Swift 6.3.1 on
// Linux; four threads incrementing one Mutex<[Int: Int]> reproduce it). The test binary defines
// both functions itself, so the calls inlined into Revue's code come here: each calls the
// runtime's own, and tells ThreadSanitizer that the lock was acquired or released.
//
// Only under -fsanitize=thread (`swift test --sanitize=thread`); otherwise this file is empty.

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)

#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

void __tsan_acquire(void *address);
void __tsan_release(void *address);

#define LOCK_SLOW "$s15Synchronization12_MutexHandleV9_lockSlowyys6UInt32VF"
#define UNLOCK_SLOW "$s15Synchronization12_MutexHandleV11_unlockSlowyyF"

// `borrowing self` of a method is passed in Swift's self register, which swift_context names.
typedef __attribute__((swiftcall)) void (*LockSlow)(uint32_t, __attribute__((swift_context)) void *);
typedef __attribute__((swiftcall)) void (*UnlockSlow)(__attribute__((swift_context)) void *);

static LockSlow runtimeLockSlow;
static UnlockSlow runtimeUnlockSlow;

// Resolved before main, so the pointers are written before any thread reads them.
__attribute__((constructor)) static void resolveRuntimeMutex(void) {
  runtimeLockSlow = (LockSlow)dlsym(RTLD_NEXT, LOCK_SLOW);
  runtimeUnlockSlow = (UnlockSlow)dlsym(RTLD_NEXT, UNLOCK_SLOW);
  if (!runtimeLockSlow || !runtimeUnlockSlow) {
    fprintf(stderr, "RevueTSanSupport: the Swift runtime has no %s: update MutexAnnotations.c\n", LOCK_SLOW);
    abort();
  }
}

__attribute__((swiftcall)) void revueLockSlow(uint32_t owner, __attribute__((swift_context)) void *handle)
    __asm__(LOCK_SLOW);
__attribute__((swiftcall)) void revueLockSlow(uint32_t owner, __attribute__((swift_context)) void *handle) {
  runtimeLockSlow(owner, handle);
  __tsan_acquire(handle);
}

__attribute__((swiftcall)) void revueUnlockSlow(__attribute__((swift_context)) void *handle) __asm__(UNLOCK_SLOW);
__attribute__((swiftcall)) void revueUnlockSlow(__attribute__((swift_context)) void *handle) {
  __tsan_release(handle);
  runtimeUnlockSlow(handle);
}

#endif
#endif
