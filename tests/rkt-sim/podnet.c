/* The pod's own network namespace, as rkt's ptp network gives it, when the test provides a
 * namespace to attach pods to ($RKT_SIM_NETNS, a path such as /proc/<pid>/ns/net, holding a
 * bridge SIM_POD_BRIDGE with the subnet's .1).
 *
 * A hidden child, `rkt-sim __netns-holder <supervisor pid>`, unshares a network namespace
 * and sleeps until the supervisor is gone (PR_SET_PDEATHSIG), so the namespace lives as long
 * as the pod, like the pause container of a Kubernetes pod. A veth pair joins it to the test's
 * bridge: "eth0" in the pod with the pod's IP and a default route via the bridge, the outer
 * end "veth<uuid prefix>" in the test's namespace. iproute2 does the work, entered with
 * nsenter, so that nothing is ever created in the machine's own namespace. Apps join the pod's
 * namespace with setns() before they exec. */
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "base/alloc.h"
#include "base/parse.h"
#include "base/strv.h"
#include "sim.h"
#include "base/banned.h"

extern char **environ;

static const char *first_executable(const char *const *candidates, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (access(candidates[i], X_OK) == 0)
                        return candidates[i];
        return NULL;
}

/* Runs `ip ARGS...` to completion inside the network namespace at netns. */
static int ip_in(const char *netns, char *const args[])
{
        static const char *const nsenters[] = {"/usr/bin/nsenter", "/bin/nsenter"};
        static const char *const ips[] = {"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"};
        const char *nsenter = first_executable(nsenters, ELEMENTSOF(nsenters));
        const char *ip = first_executable(ips, ELEMENTSOF(ips));
        if (!nsenter || !ip)
                return -ENOENT;
        _cleanup_strv_free_ char **argv = rkl_xnew0(char *, 1);
        rkl_strv_push(&argv, nsenter);
        rkl_strv_consume(&argv, rkl_xasprintf("--net=%s", netns));
        rkl_strv_push(&argv, ip);
        for (size_t i = 0; args[i]; i++)
                rkl_strv_push(&argv, args[i]);
        int r = sim_run(argv);
        return r < 0 ? r : r == 0 ? 0 : -EIO;
}

static void fa_destroyp(posix_spawn_file_actions_t *fa)
{
        posix_spawn_file_actions_destroy(fa);
}

static void attr_destroyp(posix_spawnattr_t *a)
{
        posix_spawnattr_destroy(a);
}

/* Spawns the holder and waits until its namespace exists. */
static int holder_start(const char *exe, pid_t *ret_pid)
{
        _cleanup_(fa_destroyp) posix_spawn_file_actions_t fa;
        _cleanup_(attr_destroyp) posix_spawnattr_t attr;
        _cleanup_close_ int rd = -EBADF, wr = -EBADF;
        int p[2];

        posix_spawn_file_actions_init(&fa);
        posix_spawnattr_init(&attr);
        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        rd = p[0];
        wr = p[1];
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_adddup2(&fa, wr, 1);
        sim_spawnattr_clean_signals(&attr, 0);
        char parent[32];
        snprintf(parent, sizeof(parent), "%d", (int)getpid());
        char *argv[] = {(char *)exe, (char *)"__netns-holder", parent, NULL};
        pid_t pid;
        int k = posix_spawn(&pid, exe, &fa, &attr, argv, environ);
        if (k != 0)
                return -k;
        wr = safe_close(wr);
        char buf[4] = {0};
        ssize_t n;
        while ((n = read(rd, buf, sizeof(buf) - 1)) < 0 && errno == EINTR)
                ;
        if (n < 2 || !streq(buf, "ok")) {
                (void)kill(pid, SIGKILL);
                while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
                        ;
                return -ECHILD;
        }
        *ret_pid = pid;
        return 0;
}

/* The test's namespace must not be ours: the veth and its bridge port would be made in the
 * namespace rkt-sim runs in, the machine's. */
static int check_outer(const char *outer)
{
        struct stat a, b;
        if (stat(outer, &a) < 0)
                return -errno;
        if (stat("/proc/self/ns/net", &b) < 0)
                return -errno;
        return a.st_dev == b.st_dev && a.st_ino == b.st_ino ? -EEXIST : 0;
}

int sim_podnet_setup(sim_podnet *n, const char *exe, const char *outer, const char *uuid,
                     const char *ip, char **ret_err)
{
        int r = check_outer(outer);
        if (r < 0) {
                *ret_err = rkl_xasprintf("RKT_SIM_NETNS=%s: %s", outer,
                                         r == -EEXIST ? "that is rkt-sim's own network namespace"
                                                      : strerror(-r));
                return r;
        }
        r = holder_start(exe, &n->holder);
        if (r < 0) {
                *ret_err =
                    rkl_xasprintf("cannot create the pod's network namespace: %s", strerror(-r));
                return r;
        }
        char pid[32];
        snprintf(pid, sizeof(pid), "%d", (int)n->holder);
        n->path = rkl_xasprintf("/proc/%s/ns/net", pid);
        n->outer = rkl_xstrdup(outer);
        _cleanup_free_ char *veth = rkl_xasprintf("veth%.8s", uuid);
        _cleanup_free_ char *addr = rkl_xasprintf("%s/24", ip);
        _cleanup_free_ char *gw = rkl_xasprintf("%s.1", SIM_DEFAULT_SUBNET);
        /* Created in the test's namespace with its peer straight in the pod's: no interface
         * ever appears in the machine's namespace. */
        r = ip_in(outer, RKL_STRV("link", "add", veth, "type", "veth", "peer", "name", "eth0",
                                  "netns", pid));
        if (r < 0) {
                *ret_err =
                    rkl_xasprintf("cannot create veth %s in %s: %s", veth, outer, strerror(-r));
                return r;
        }
        n->veth = TAKE_PTR(veth);
        if ((r = ip_in(outer, RKL_STRV("link", "set", n->veth, "master", SIM_POD_BRIDGE, "up"))) <
                0 ||
            (r = ip_in(n->path, RKL_STRV("link", "set", "lo", "up"))) < 0 ||
            (r = ip_in(n->path, RKL_STRV("addr", "add", addr, "dev", "eth0"))) < 0 ||
            (r = ip_in(n->path, RKL_STRV("link", "set", "eth0", "up"))) < 0 ||
            (r = ip_in(n->path, RKL_STRV("route", "add", "default", "via", gw, "dev", "eth0"))) <
                0) {
                *ret_err = rkl_xasprintf("cannot set up %s on bridge %s: %s", n->veth,
                                         SIM_POD_BRIDGE, strerror(-r));
                return r;
        }
        return 0;
}

void sim_podnet_holder_gone(sim_podnet *n, pid_t pid)
{
        if (n->holder > 0 && n->holder == pid)
                n->holder = 0;
}

void sim_podnet_teardown(sim_podnet *n)
{
        /* Deleting one end deletes both, at once; the namespace would take them along only
         * once its last process (the holder, a straggling app) is gone. */
        if (n->veth && n->outer)
                (void)ip_in(n->outer, RKL_STRV("link", "del", n->veth));
        if (n->holder > 0) {
                (void)kill(n->holder, SIGKILL);
                while (waitpid(n->holder, NULL, 0) < 0 && errno == EINTR)
                        ;
        }
        free(n->veth);
        free(n->outer);
        free(n->path);
        *n = (sim_podnet){0};
}

int sim_podnet_join(const char *path)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        return setns(fd, CLONE_NEWNET) < 0 ? -errno : 0;
}

int sim_cmd_netns_holder(int argc, char **argv)
{
        int parent;
        if (argc != 3 || rkl_safe_atoi(argv[2], &parent) < 0)
                return SIM_EXIT_ERROR;
        /* Gone with the supervisor, however it ends (stop --force, SIGKILL, a crash fault). */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
                return SIM_EXIT_ERROR;
        if (unshare(CLONE_NEWNET) < 0) {
                sim_err("rkt-sim: cannot unshare the network namespace: %m");
                return SIM_EXIT_ERROR;
        }
        if (write(STDOUT_FILENO, "ok", 2) != 2)
                return SIM_EXIT_ERROR;
        (void)close(STDOUT_FILENO);
        for (;;)
                pause();
}
