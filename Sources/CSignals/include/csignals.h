#ifndef CHAPPIE_CSIGNALS_H
#define CHAPPIE_CSIGNALS_H

// chappie's signal relay: a sigaction handler that only writes the signal's number to a pipe (the
// self-pipe pattern), so that a thread of chappie's own can act on it. Written in C because a
// signal handler may only do async-signal-safe things, which Swift cannot promise (globals behind
// swift_once, exclusivity checks, reference counting).

/// Makes the pipe (both ends close-on-exec, the write end non-blocking) and returns its read end,
/// or -1 with errno set. Call once, before chappie_signal_relay_catch.
int chappie_signal_relay_open(void);

/// Sends `number` to the pipe from now on (sigaction, SA_RESTART). Returns 0, or -1 with errno set.
int chappie_signal_relay_catch(int number);

#endif
