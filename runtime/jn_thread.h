/* jn_thread.h -- how janus starts its own threads (runtime/threadpool.c).
 *
 * Every thread janus creates (kernel pool workers, the process group's
 * watchdog) starts with the asynchronous signals blocked: a signal sent to
 * the process (^C, SIGTERM) then lands on a thread that handles it --
 * Python's main thread, or the recorder's signal watcher -- never on a
 * worker, where Python's handler would only set a flag that a main thread
 * asleep in time.sleep() does not see until it wakes.  Faults (SIGSEGV,
 * SIGBUS, SIGFPE, SIGILL) stay deliverable.
 */
#ifndef JN_THREAD_H
#define JN_THREAD_H

#include <pthread.h>

/* pthread_create(th, NULL, fn, arg) with that mask: 0 or its error. */
int jn_rt_thread_start(pthread_t *th, void *(*fn)(void *), void *arg);

#endif
