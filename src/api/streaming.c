#include "streaming.h"

#include "exec.h"
#include "lookup.h"
#include "base/alloc.h"
#include "base/strv.h"
#include "state/cache.h"
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

/* The URL for e, the request's stdio flags copied in, into the call's arena. */
static int exec_url(rkl_api_ctx *ctx, rkl_stream_exec *e, bool in, bool out, bool err, bool tty,
                    char **ret, rkl_error *reterr)
{
        _cleanup_free_ char *url = NULL;
        if (!ctx->cfg->stream)
                return no_server(reterr);
        e->stdin = in;
        e->stdout = out;
        e->stderr = err;
        e->tty = tty;
        int r = rkl_stream_exec_url(ctx->cfg->stream, e, &url, reterr);
        if (r < 0)
                return r;
        *ret = rkl_arena_strdup(ctx->arena, url);
        return 0;
}

int rkl_api_exec(rkl_api_ctx *ctx, const Runtime__V1__ExecRequest *req,
                 Runtime__V1__ExecResponse *resp, rkl_error *reterr)
{
        _cleanup_(rkl_container_view_unrefp) rkl_container_view *v = NULL;
        int r = rkl_api_cmd_check(req->n_cmd, req->cmd, reterr);
        if (r >= 0)
                r = stdio_check(req->stdin, req->stdout, req->stderr, req->tty, reterr);
        if (r >= 0)
                r = rkl_api_container_running(ctx, req->container_id, &v, reterr);
        if (r < 0)
                return r;
        _cleanup_strv_free_ char **argv = NULL;
        for (size_t i = 0; i < req->n_cmd; i++)
                rkl_strv_push(&argv, req->cmd[i]);
        rkl_stream_exec e = {.pid = (pid_t)v->rec->observed.pid, .argv = argv};
        return exec_url(ctx, &e, req->stdin, req->stdout, req->stderr, req->tty, &resp->url,
                        reterr);
}

int rkl_api_attach(rkl_api_ctx *ctx, const Runtime__V1__AttachRequest *req,
                   Runtime__V1__AttachResponse *resp, rkl_error *reterr)
{
        _cleanup_(rkl_container_view_unrefp) rkl_container_view *v = NULL;
        _cleanup_(rkl_pod_view_unrefp) rkl_pod_view *pv = NULL;
        int r = stdio_check(req->stdin, req->stdout, req->stderr, req->tty, reterr);
        if (r >= 0)
                r = rkl_api_container_running(ctx, req->container_id, &v, reterr);
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
        if (rkl_cache_pod_resolve(ctx->cache, c->sandbox_id, &pv) < 0 || !pv->rec->rkt_uuid)
                return rkl_error_set(reterr, -EBADFD, "the sandbox of container %s is gone", c->id);
        _cleanup_free_ char *dir =
            rkl_xasprintf("%s/pods/run/%s/stage1/rootfs/rkt/iottymux/%s", ctx->cfg->rkt_data_dir,
                          pv->rec->rkt_uuid, c->app_name);
        rkl_stream_exec e = {
            .pid = (pid_t)c->observed.pid,
            .attach_dir = dir,
            .stdin_once = c->spec.stdin_once,
        };
        return exec_url(ctx, &e, req->stdin, req->stdout, req->stderr, req->tty, &resp->url,
                        reterr);
}

int rkl_api_port_forward(rkl_api_ctx *ctx, const Runtime__V1__PortForwardRequest *req,
                         Runtime__V1__PortForwardResponse *resp, rkl_error *reterr)
{
        _cleanup_(rkl_pod_view_unrefp) rkl_pod_view *v = NULL;
        for (size_t i = 0; i < req->n_port; i++)
                if (req->port[i] < 1 || req->port[i] > 65535)
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
