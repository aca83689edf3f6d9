// ThreadSanitizer support for the tests: nothing to call. MutexAnnotations.c, compiled only under
// -fsanitize=thread, tells ThreadSanitizer about the contended path of Swift's Mutex.
