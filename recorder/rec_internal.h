/* rec_internal.h -- what the recorder's files share and nothing else uses:
 * the signal handling of signals.c and the two calls into rec.c's step
 * queue it makes (see signals.c for the design). */
#ifndef JN_REC_INTERNAL_H
#define JN_REC_INTERNAL_H

#include <signal.h>
#include <time.h>

#include "jn_rec.h"

/* The signals the recorder handles: SIGTERM, SIGHUP and SIGINT. */
#define REC_NSIGS 3

/* Install the handlers and start the watcher thread (jn_rec_start, after
 * the writer is up); restore the handlers still ours and stop the watcher
 * (jn_rec_stop, before anything else: returns a signal that arrived during
 * the stop and was to end the process, for the caller to raise once the
 * steps are stored, or 0); a forked child's copy: restore the handlers,
 * drop the pipe (no watcher there). */
jn_status rec_sig_start(void);
int rec_sig_stop(void);
void rec_sig_atfork_child(void);
/* The signals to keep blocked in the recorder's own threads. */
void rec_sig_mask(sigset_t *set);

/* rec.c, called by the watcher when a signal is to end the process: end
 * the step in progress as "tail" (when the recording thread is between ops
 * by the deadline), have the writer commit every queued step and mark the
 * run killed by `sig` (exit status 128 + sig), and wait for that until
 * the deadline (CLOCK_REALTIME).  Returns with the step lock held, so that
 * nothing more is recorded until the process dies. */
void rec_end_by_signal(int sig, const struct timespec *deadline);

#endif
