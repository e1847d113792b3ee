#include "action.h"

#include <assert.h>

#include "image-user.h"
#include "sysctl.h"
#include "rkt.h"
#include "rkt-internal.h"
#include <fcntl.h>

#include "base/alloc.h"
#include "base/fileio.h"
#include "base/macro.h"
#include "base/strv.h"
#include "base/banned.h"

/* One verb: rkt's outcome classified, and -EIO when rkt could not be run at all. */
static int run(rkl_rkt *d, const char *what, char *const args[], uint64_t timeout_usec,
               rkl_error *reterr)
{
        rkl_rkt__exec_opts eo = {.what = what, .not_run_is_eio = true};
        return rkl_rkt__exec(d, args, &eo, timeout_usec, NULL, reterr);
}

static char *dropin_dir(rkl_rkt *d, const char *uuid, const char *app_name)
{
        return rkl_xasprintf("%s/pods/run/%s/stage1/rootfs/usr/lib/systemd/system/%s.service.d",
                             rkl_rkt__data_dir(d), uuid, app_name);
}

/* Placed before `app add`, whose own daemon-reload in the pod then reads it with the unit
 * rkt writes; the pod's stage1 rootfs is an overlay mounted where rkt runs, which is here. */
static int write_dropin(rkl_rkt *d, const char *uuid, const rkl_container_spec *spec,
                        const char *app_name, rkl_error *reterr)
{
        _cleanup_free_ char *text = rkl_rkt_app_dropin(spec);
        if (!text)
                return 0;
        /* Beneath the pod's directory, never a new one for a pod that is not there. */
        _cleanup_free_ char *pod = rkl_xasprintf("%s/pods/run/%s", rkl_rkt__data_dir(d), uuid);
        if (access(pod, F_OK) < 0)
                return rkl_error_set(reterr, -ENOENT, "no running pod %s", uuid);
        _cleanup_free_ char *dir = dropin_dir(d, uuid, app_name);
        int r = rkl_mkdir_p(dir, 0755);
        if (r < 0)
                return rkl_error_set(reterr, r, "%s: %s", dir, strerror(-r));
        _cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return rkl_error_set(reterr, -errno, "%s: %s", dir, strerror(errno));
        r = rkl_write_file_atomic_at(fd, "50-rktlet.conf", text, strlen(text), 0644);
        if (r < 0)
                return rkl_error_set(reterr, r, "%s/50-rktlet.conf: %s", dir, strerror(-r));
        return 0;
}

int rkl_rkt_app_add(rkl_rkt *d, const char *uuid, const rkl_container_spec *spec,
                    const rkl_rkt_app_opts *o, uint64_t timeout_usec, rkl_error *reterr)
{
        _cleanup_strv_free_ char **args = NULL;
        int r;

        assert(uuid && spec && o);
        _cleanup_(rkl_rkt_ids_done) rkl_rkt_ids ids = {0};
        r = rkl_rkt_image_ids(d, o->image, spec, &ids, reterr);
        if (r < 0)
                return r;
        rkl_rkt_app_opts oi = *o;
        oi.ids = &ids;
        r = rkl_rkt_app_add_args(uuid, spec, &oi, &args, reterr);
        if (r < 0)
                return r;
        /* Before every app, not once per pod: cheap, idempotent, and no app ever starts
         * without them, whatever a restart of the daemon interrupted. */
        _cleanup_(rkl_kvs_done) rkl_kvs ns = {0};
        if (o->pod_sysctls)
                rkl_kvs_copy(&ns, o->pod_sysctls);
        /* The pod's systemd drops a trailing dot from the hostname rkt gives it, which
         * kubelet's setHostnameAsFQDN can end with: the pod's UTS namespace gets it as asked. */
        size_t n = o->pod_hostname ? strlen(o->pod_hostname) : 0;
        if (n > 1 && o->pod_hostname[n - 1] == '.')
                rkl_kvs_add(&ns, "kernel.hostname", o->pod_hostname);
        r = rkl_rkt_pod_sysctls(o->pod_pid, &ns, reterr);
        if (r < 0)
                return r;
        r = write_dropin(d, uuid, spec, o->app_name, reterr);
        if (r < 0)
                return r;
        return run(d, "app add", args, timeout_usec, reterr);
}

/* `rkt app VERB UUID --app=APP` */
static int app_verb(rkl_rkt *d, const char *verb, const char *uuid, const char *app,
                    uint64_t timeout_usec, rkl_error *reterr)
{
        assert(uuid && app);
        _cleanup_free_ char *what = rkl_xasprintf("app %s", verb);
        _cleanup_free_ char *app_flag = rkl_xasprintf("--app=%s", app);
        return run(d, what, RKL_STRV("app", verb, uuid, app_flag), timeout_usec, reterr);
}

int rkl_rkt_app_start(rkl_rkt *d, const char *uuid, const char *app, uint64_t timeout_usec,
                      rkl_error *reterr)
{
        return app_verb(d, "start", uuid, app, timeout_usec, reterr);
}

int rkl_rkt_app_stop(rkl_rkt *d, const char *uuid, const char *app, uint64_t timeout_usec,
                     rkl_error *reterr)
{
        return app_verb(d, "stop", uuid, app, timeout_usec, reterr);
}

int rkl_rkt_app_rm(rkl_rkt *d, const char *uuid, const char *app, uint64_t timeout_usec,
                   rkl_error *reterr)
{
        int r = app_verb(d, "rm", uuid, app, timeout_usec, reterr);
        if (r >= 0) {
                /* rkt removes the units it wrote, not the drop-in rktlet put beside them. */
                _cleanup_free_ char *dir = dropin_dir(d, uuid, app);
                _cleanup_free_ char *file = rkl_xasprintf("%s/50-rktlet.conf", dir);
                (void)unlink(file);
                (void)rmdir(dir);
        }
        return r;
}

int rkl_rkt_pod_stop(rkl_rkt *d, const char *uuid, bool force, uint64_t timeout_usec,
                     rkl_error *reterr)
{
        assert(uuid);
        if (force)
                return run(d, "stop", RKL_STRV("stop", "--force=true", uuid), timeout_usec, reterr);
        return run(d, "stop", RKL_STRV("stop", uuid), timeout_usec, reterr);
}

int rkl_rkt_pod_rm(rkl_rkt *d, const char *uuid, uint64_t timeout_usec, rkl_error *reterr)
{
        assert(uuid);
        return run(d, "rm", RKL_STRV("rm", uuid), timeout_usec, reterr);
}

int rkl_rkt_sandbox_command(rkl_rkt *d, const rkl_pod_spec *spec, const rkl_rkt_sandbox_opts *o,
                            char ***ret_argv, char ***ret_env, rkl_error *reterr)
{
        _cleanup_strv_free_ char **args = NULL;
        const char *insecure = NULL;
        int r;

        r = rkl_rkt_sandbox_args(spec, o, &args, &insecure, reterr);
        if (r < 0)
                return r;
        *ret_argv = rkl_rkt_argv(d, args, insecure);
        *ret_env = rkl_rkt_unit_env(d);
        return 0;
}
