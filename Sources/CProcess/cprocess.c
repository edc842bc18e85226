#define _GNU_SOURCE
#include "cprocess.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <unistd.h>

int chappie_process_set_dumpable(int dumpable) {
    return prctl(PR_SET_DUMPABLE, dumpable ? 1 : 0, 0, 0, 0);
}

int chappie_thread_set_name(const char *name) {
    return prctl(PR_SET_NAME, (unsigned long)name, 0, 0, 0);
}

int chappie_process_is_dumpable(void) {
    return prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
}

int chappie_process_open_standard_descriptors(void) {
    int result = 0;
    for (int descriptor = 0; descriptor <= 2; descriptor++) {
        if (fcntl(descriptor, F_GETFD) != -1 || errno != EBADF) continue;
        // open returns the lowest free descriptor: this one. A failure leaves it closed and goes on
        // with the others.
        int opened = open("/dev/null", O_RDWR);
        if (opened == -1) {
            result = -1;
        } else if (opened != descriptor) {
            close(opened);
            errno = EBADF;
            result = -1;
        }
    }
    return result;
}

int chappie_process_open_unnamed(const char *directory, unsigned int mode) {
    return open(directory, O_TMPFILE | O_WRONLY | O_CLOEXEC, mode);
}

int chappie_spawn_close_from(posix_spawn_file_actions_t *actions, int lowest) {
    return posix_spawn_file_actions_addclosefrom_np(actions, lowest);
}
