/*
 * daemon.h — what every offcore daemon (offcored, offcore-dp,
 * offcore-nvmf) does the same way at start, in one place.
 *
 * Signals: SIGHUP is ignored.  The daemons log to stderr (the service
 * manager's journal keeps the file), so there is no log file to reopen,
 * and the configuration is read once at start (restart to change it):
 * a hang-up — a closed terminal, a stray `kill -HUP`, a `reload` — must
 * not stop forwarding or storage.  SIGPIPE is ignored too: a peer that
 * left is an EPIPE where it is written.  SIGTERM and SIGINT stay each
 * daemon's own (a clean stop).
 *
 * Threading: call from main before any thread starts (dispositions are
 * per process; an ignored signal is dropped whatever a thread's mask).
 */
#ifndef OC_UTIL_DAEMON_H
#define OC_UTIL_DAEMON_H

/** Ignore SIGHUP and SIGPIPE (above).  Idempotent; cannot fail. */
void oc__daemon_signals(void);

#endif
