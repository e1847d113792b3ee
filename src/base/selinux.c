#include "selinux.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "banned.h"

bool rkl_selinux_enabled_at(const char *root)
{
        char path[4096];
        (void)snprintf(path, sizeof(path), "%s/sys/fs/selinux/enforce", root ? root : "");
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return false;
        char c = 0;
        ssize_t n = read(fd, &c, 1);
        close(fd);
        return n == 1 && (c == '0' || c == '1');
}

static pthread_once_t once = PTHREAD_ONCE_INIT;
static bool enabled; /* a fact of the machine, read once (base/selinux.h) */

static void read_once(void)
{
        enabled = rkl_selinux_enabled_at(NULL);
}

bool rkl_selinux_enabled(void)
{
        pthread_once(&once, read_once);
        return enabled;
}
