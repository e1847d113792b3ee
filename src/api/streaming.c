#include "streaming.h"

#include "exec.h"
#include "lookup.h"
#include "base/config.h"
#include "base/alloc.h"
#include "base/arena.h"
#include "base/parse.h"
#include "base/time-util.h"
#include "store/cache.h"
#include "stream/stream.h"
#include "base/banned.h"

/* CRI's rules for the stdio flags, shared by Exec and Attach. */
static int stdio_check(bool in, bool out, bool err, bool tty, rkl_error *reterr)
{
        if (!in && !out && !err)
                return rkl_error_set(reterr, -EINVAL,
                                     "one of stdin, stdout and stderr must be set");
        if (tty && err)
                return rkl_error_set(reterr, -EINVAL,
                                     "tty and stderr cannot both be set: a terminal merges "
                                     "stderr into stdout");
        return 0;
}

static int no_server(rkl_error *reterr)
{
        return rkl_error_set(reterr, -EOPNOTSUPP, "the streaming server is not running");
}

/* rkt's iottymux directory of container c's app, in the call's arena: Attach's endpoints.
 * -EBADFD while rktlet has not seen its sandbox's rkt pod (a container being started in a
 * sandbox answered READY before rkt made its pod) or once the sandbox is gone. */
static int attach_dir_of(rkl_cache *cache, rkl_arena *a, const char *rkt_data_dir,
                         const rkl_container_record *c, const char **ret, rkl_error *reterr)
{
        _cleanup_(rkl_pod_view_unrefp) rkl_pod_view *pv = NULL;
        if (rkl_cache_pod_resolve(cache, c->sandbox_id, &pv) < 0 || !pv->rec->rkt_uuid)
                return rkl_error_set(reterr, -EBADFD, "the sandbox of container %s has no rkt pod",
                                     c->id);
        *ret = rkl_arena_printf(a, "%s/pods/run/%s/stage1/rootfs/rkt/iottymux/%s", rkt_data_dir,
                                pv->rec->rkt_uuid, c->app_name);
        return 0;
}

/* An Exec or Attach whose container is starting: the URL is made once it runs (on the exec
 * pool: the wait must not hold a CRI thread). Everything lives in the call's arena. */
typedef struct url_job {
        rkl_api_call *call;
        rkl_cache *cache;
        rkl_stream_server *stream;
        rkl_arena *arena;
        char container_id[RKL_ID_LEN + 1];
        uint64_t accepted_usec;
        rkl_stream_exec e;
        const char *attach_data_dir; /* Attach: rkt's data dir, for attach_dir_of() */
        char **url;                  /* the response's */
} url_job;

static void url_when_running(void *userdata)
{
        url_job *j = userdata;
        rkl_error err = RKL_ERROR_INIT;
        _cleanup_free_ char *url = NULL;
        int r = rkl_api_container_wait_running(j->cache, j->call, j->container_id, j->accepted_usec,
                                               0, &j->e.pid, &err);
        if (r >= 0 && j->attach_data_dir) {
                /* Its sandbox's rkt pod is known once the app runs. */
                _cleanup_(rkl_container_view_unrefp) rkl_container_view *v =
                    rkl_cache_container_get(j->cache, j->container_id);
                r = v ? attach_dir_of(j->cache, j->arena, j->attach_data_dir, v->rec,
                                      &j->e.attach_dir, &err)
                      : rkl_error_set(&err, -ENOENT, "container %s is gone", j->container_id);
        }
        if (r >= 0)
                r = rkl_stream_exec_url(j->stream, &j->e, &url, &err);
        if (r >= 0)
                *j->url = rkl_arena_strdup(j->arena, url);
        rkl_api_call_finish(j->call, r, &err);
}

/* The URL for e, now or once the container runs. */
static int url_for(rkl_api_ctx *ctx, const rkl_container_view *v, bool starting, uint64_t accepted,
                   rkl_stream_exec *e, const char *attach_data_dir, char **ret, rkl_error *reterr)
{
        if (!ctx->cfg->stream)
                return no_server(reterr);
        if (!starting) {
                _cleanup_free_ char *url = NULL;
                e->pid = (pid_t)v->rec->observed.pid;
                int r = rkl_stream_exec_url(ctx->cfg->stream, e, &url, reterr);
                if (r < 0)
                        return r;
                *ret = rkl_arena_strdup(ctx->arena, url);
                return 0;
        }
        url_job *j = rkl_arena_newa(url_job, ctx->arena, 1);
        *j = (url_job){
            .call = ctx->call,
            .cache = ctx->cache,
            .stream = ctx->cfg->stream,
            .arena = ctx->arena,
            .accepted_usec = accepted,
            .e = *e,
            .attach_data_dir = attach_data_dir,
            .url = ret,
        };
        memcpy(j->container_id, v->rec->id, sizeof(j->container_id));
        int r = rkl_api_defer_on(ctx, RKL_API_POOL_EXEC, url_when_running, j);
        if (r == -EMFILE)
                return rkl_error_set(reterr, r,
                                     "too many calls waiting for containers to start: "
                                     "try again later");
        return r;
}

int rkl_api_exec(rkl_api_ctx *ctx, const Runtime__V1__ExecRequest *req,
                 Runtime__V1__ExecResponse *resp, rkl_error *reterr)
{
        _cleanup_(rkl_container_view_unrefp) rkl_container_view *v = NULL;
        uint64_t accepted = rkl_now_usec(CLOCK_MONOTONIC);
        bool starting = false;
        int r = rkl_api_cmd_check(req->n_cmd, req->cmd, reterr);
        if (r >= 0)
                r = stdio_check(req->stdin, req->stdout, req->stderr, req->tty, reterr);
        if (r >= 0)
                r = rkl_api_container_running_or_starting(ctx, req->container_id, &v, &starting,
                                                          reterr);
        if (r < 0)
                return r;
        char **argv = rkl_arena_newa(char *, ctx->arena, req->n_cmd + 1);
        for (size_t i = 0; i < req->n_cmd; i++)
                argv[i] = rkl_arena_strdup(ctx->arena, req->cmd[i]);
        argv[req->n_cmd] = NULL;
        rkl_stream_exec e = {
            .argv = argv,
            .seccomp = rkl_api_exec_seccomp(ctx->arena, &v->rec->spec),
            .stdin = req->stdin,
            .stdout = req->stdout,
            .stderr = req->stderr,
            .tty = req->tty,
        };
        return url_for(ctx, v, starting, accepted, &e, NULL, &resp->url, reterr);
}

int rkl_api_attach(rkl_api_ctx *ctx, const Runtime__V1__AttachRequest *req,
                   Runtime__V1__AttachResponse *resp, rkl_error *reterr)
{
        _cleanup_(rkl_container_view_unrefp) rkl_container_view *v = NULL;
        uint64_t accepted = rkl_now_usec(CLOCK_MONOTONIC);
        bool starting = false;
        int r = stdio_check(req->stdin, req->stdout, req->stderr, req->tty, reterr);
        if (r >= 0)
                r = rkl_api_container_running_or_starting(ctx, req->container_id, &v, &starting,
                                                          reterr);
        if (r < 0)
                return r;
        const rkl_container_record *c = v->rec;
        /* rkt gave the app the stdio its spec asked for (src/rkt/command.c): that is what
         * there is to attach to. */
        if (!!req->tty != c->spec.tty)
                return rkl_error_set(reterr, -EINVAL, "tty: container %s was created %s a terminal",
                                     c->id, c->spec.tty ? "with" : "without");
        if (req->stdin && !c->spec.stdin_open)
                return rkl_error_set(reterr, -EINVAL,
                                     "stdin: container %s was created without stdin", c->id);
        rkl_stream_exec e = {
            .stdin_once = c->spec.stdin_once,
            .stdin = req->stdin,
            .stdout = req->stdout,
            .stderr = req->stderr,
            .tty = req->tty,
        };
        /* Being started: the directory is found once the app runs (url_when_running). */
        if (!starting) {
                r = attach_dir_of(ctx->cache, ctx->arena, ctx->cfg->config->rkt_data_dir, c,
                                  &e.attach_dir, reterr);
                if (r < 0)
                        return r;
        }
        return url_for(ctx, v, starting, accepted, &e, ctx->cfg->config->rkt_data_dir, &resp->url,
                       reterr);
}

int rkl_api_port_forward(rkl_api_ctx *ctx, const Runtime__V1__PortForwardRequest *req,
                         Runtime__V1__PortForwardResponse *resp, rkl_error *reterr)
{
        _cleanup_(rkl_pod_view_unrefp) rkl_pod_view *v = NULL;
        for (size_t i = 0; i < req->n_port; i++)
                if (req->port[i] < 1 || req->port[i] > RKL_MAX_PORT)
                        return rkl_error_set(reterr, -EINVAL, "port[%zu]: %d is no TCP port", i,
                                             (int)req->port[i]);
        int r = rkl_api_pod_lookup(ctx, "pod_sandbox_id", req->pod_sandbox_id, &v, reterr);
        if (r < 0)
                return r;
        const rkl_pod_record *p = v->rec;
        if (v->state != RKL_POD_READY || p->observed.pid <= 0 || p->observed.pid > INT32_MAX)
                return rkl_error_set(reterr, -EBADFD, "pod sandbox %s is not ready", p->id);
        if (!ctx->cfg->stream)
                return no_server(reterr);
        _cleanup_free_ char *url = NULL;
        r = rkl_stream_port_forward_url(ctx->cfg->stream, (pid_t)p->observed.pid, req->port,
                                        req->n_port, &url, reterr);
        if (r == -ESRCH)
                return rkl_error_set(reterr, -EBADFD, "pod sandbox %s is not running: %s", p->id,
                                     reterr->msg);
        if (r < 0)
                return r;
        resp->url = rkl_arena_strdup(ctx->arena, url);
        return 0;
}
