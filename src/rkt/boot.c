#include "boot.h"

#include <stdio.h>

#include "poddir.h"
#include "base/macro.h"
#include "base/spawn.h"
#include "base/time-util.h"
#include "base/banned.h"

#define NSENTER "/usr/bin/nsenter"

/* systemctl ARGS... in the pod: 0 with its output in *ret (the caller's to free). */
static int pod_systemctl(pid_t init, const char *a1, const char *a2, const char *a3, char **ret,
                         rkl_error *reterr)
{
        char pid[16];
        (void)snprintf(pid, sizeof(pid), "%d", (int)init);
        char *const argv[] = {
            (char *)NSENTER,     (char *)"-t", pid,        (char *)"-m", (char *)"-p",
            (char *)"systemctl", (char *)a1,   (char *)a2, (char *)a3,   NULL};
        rkl_spawn_opts o = {.timeout_usec = 10 * USEC_PER_SEC, .max_output = 4096};
        rkl_spawn_result res = {0};
        int r = rkl_spawn_run(argv, &o, &res, reterr);
        if (r >= 0 && res.exit_code != 0)
                r = rkl_error_set(reterr, -EIO, "systemctl %s in the pod: %s", a1,
                                  res.err && *res.err ? res.err : "failed");
        if (r >= 0 && ret) {
                *ret = res.out;
                res.out = NULL;
        }
        rkl_spawn_result_done(&res);
        return r;
}

int rkl_rkt_pod_restart_boot(uint32_t nspawn_pid, rkl_error *reterr)
{
        pid_t init;
        int r = rkl_poddir_pod_init(nspawn_pid, &init, reterr);
        if (r < 0)
                return r;
        _cleanup_free_ char *jobs = NULL;
        r = pod_systemctl(init, "list-jobs", "--no-legend", "--no-pager", &jobs, reterr);
        if (r < 0)
                return r;
        if (!isempty(jobs))
                return rkl_error_set(reterr, -EAGAIN, "the pod's systemd is still booting");
        return pod_systemctl(init, "--no-block", "start", "default.target", NULL, reterr);
}
