#define _GNU_SOURCE
#include "csignals.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

static volatile int relay_write_end = -1;

// Async-signal-safe: one write(2), errno as the interrupted code left it. A full pipe drops the
// byte (the reader has signals enough to act on).
static void relay_handler(int number) {
    int saved = errno;
    unsigned char byte = (unsigned char)number;
    ssize_t written = write(relay_write_end, &byte, 1);
    (void)written;
    errno = saved;
}

int chappie_signal_relay_open(void) {
    int ends[2];
    if (pipe2(ends, O_CLOEXEC) != 0) return -1;
    int flags = fcntl(ends[1], F_GETFL);
    if (flags < 0 || fcntl(ends[1], F_SETFL, flags | O_NONBLOCK) != 0) {
        int saved = errno;
        close(ends[0]);
        close(ends[1]);
        errno = saved;
        return -1;
    }
    relay_write_end = ends[1];
    return ends[0];
}

int chappie_signal_relay_catch(int number) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = relay_handler;
    action.sa_flags = SA_RESTART;
    sigemptyset(&action.sa_mask);
    return sigaction(number, &action, NULL);
}
