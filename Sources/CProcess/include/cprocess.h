#ifndef CHAPPIE_CPROCESS_H
#define CHAPPIE_CPROCESS_H

// Process-level calls Swift cannot make itself: prctl is variadic, and O_TMPFILE is a macro Swift
// does not import.

/// Whether another process of the same user may attach to this one or read its memory and
/// environment in /proc (PR_SET_DUMPABLE). Returns 0, or -1 with errno set.
int chappie_process_set_dumpable(int dumpable);

/// Names the calling thread (PR_SET_NAME; at most 15 bytes are kept), as `ps -L` and
/// /proc/PID/task/TID/comm show it. Returns 0, or -1 with errno set.
int chappie_thread_set_name(const char *name);

/// Returns 1 when this process may be dumped and read by its user's other processes, 0 when not,
/// -1 with errno set.
int chappie_process_is_dumpable(void);

/// Opens /dev/null on each of descriptors 0, 1 and 2 that is closed, so that no file chappie opens
/// later (the signal relay's pipe, the database) takes a standard descriptor and receives what is
/// printed. Returns 0, or -1 with errno set.
int chappie_process_open_standard_descriptors(void);

/// Opens an unnamed file in `directory` for writing (O_TMPFILE), with `mode`: it has no name until
/// linked, so nothing of it is left behind if chappie dies first. Returns the descriptor, or -1 with
/// errno set (EOPNOTSUPP or EISDIR where the file system or kernel cannot).
int chappie_process_open_unnamed(const char *directory, unsigned int mode);

#include <spawn.h>

/// Adds to `actions` the closing, in the child, of every descriptor from `lowest` up
/// (posix_spawn_file_actions_addclosefrom_np, a GNU extension Swift's Glibc module does not show).
/// Returns 0, or an error number.
int chappie_spawn_close_from(posix_spawn_file_actions_t *actions, int lowest);

#endif
