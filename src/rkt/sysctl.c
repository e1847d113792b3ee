/* A pod's namespaced sysctls, set in its network, IPC and UTS namespaces (those of the pod's
 * systemd, nspawn's child) by a helper the daemon runs as itself: setns() would move a
 * daemon thread, a fresh single-threaded process may. /proc/sys/net and the IPC keys show
 * the namespaces of the process that opens them. */
#include "sysctl.h"

#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

#include "poddir.h"
#include "rkt-internal.h"
#include "base/alloc.h"
#include "base/fileio.h"
#include "base/macro.h"
#include "base/spawn.h"
#include "base/strv.h"
#include "base/time-util.h"
#include "base/banned.h"

bool rkl_rkt_sysctl_is_namespaced(const char *key)
{
        static const char *const prefixes[] = {"net.", "kernel.shm", "kernel.msg", "fs.mqueue."};
        if (streq(key, "kernel.sem"))
                return true;
        for (size_t i = 0; i < ELEMENTSOF(prefixes); i++)
                if (strncmp(key, prefixes[i], strlen(prefixes[i])) == 0)
                        return true;
        return false;
}

int rkl_rkt_pod_sysctls(uint32_t nspawn_pid, const rkl_kvs *sysctls, rkl_error *reterr)
{
        if (!sysctls || sysctls->n == 0)
                return 0;
        pid_t pid;
        int k = rkl_poddir_pod_init(nspawn_pid, &pid, reterr);
        if (k < 0)
                return rkl_error_prefix(reterr, "sysctls");
        _cleanup_strv_free_ char **argv = NULL;
        rkl_strv_push(&argv, "/proc/self/exe");
        rkl_strv_push(&argv, RKL_SYSCTL_COMMAND);
        rkl_strv_consume(&argv, rkl_xasprintf("%d", (int)pid));
        for (size_t i = 0; i < sysctls->n; i++)
                rkl_strv_consume(
                    &argv, rkl_xasprintf("%s=%s", sysctls->items[i].key, sysctls->items[i].value));
        rkl_spawn_opts o = {.timeout_usec = 10 * USEC_PER_SEC, .max_output = 4096};
        rkl_spawn_result res = {0};
        int r = rkl_spawn_run(argv, &o, &res, reterr);
        if (r >= 0 && res.exit_code != 0)
                r = rkl_error_set(reterr, -EIO, "sysctls: %s",
                                  res.err && *res.err ? res.err : "the helper failed");
        rkl_spawn_result_done(&res);
        return r;
}

int rkl_rkt_sysctl_main(int argc, char *argv[])
{
        if (argc < 2)
                return 2;
        static const struct {
                const char *ns;
                int type;
        } nss[] = {{"net", CLONE_NEWNET}, {"ipc", CLONE_NEWIPC}, {"uts", CLONE_NEWUTS}};
        for (size_t i = 0; i < ELEMENTSOF(nss); i++) {
                char path[64];
                (void)snprintf(path, sizeof(path), "/proc/%s/ns/%s", argv[1], nss[i].ns);
                _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
                if (fd < 0 || setns(fd, nss[i].type) < 0) {
                        fprintf(stderr, "%s: %s\n", path, strerror(errno));
                        return 1;
                }
        }
        for (int i = 2; i < argc; i++) {
                char *eq = strchr(argv[i], '=');
                if (!eq)
                        return 2;
                *eq = 0;
                _cleanup_free_ char *path = rkl_xasprintf("/proc/sys/%s", argv[i]);
                for (char *p = path + strlen("/proc/sys/"); *p; p++)
                        if (*p == '.')
                                *p = '/';
                _cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
                size_t n = strlen(eq + 1);
                if (fd < 0 || write(fd, eq + 1, n) != (ssize_t)n) {
                        fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
                        return 1;
                }
        }
        return 0;
}
