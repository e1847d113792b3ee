#include "exec.h"

#include <inttypes.h>

#include "lookup.h"
#include "base/alloc.h"
#include "base/log.h"
#include "base/time-util.h"
#include "exec/exec.h"
#include "rkt/command.h"
#include "store/cache.h"
#include "base/banned.h"

#define MAX_OUTPUT    (16 << 20) /* each stream, as CRI says */
#define MAX_CMD_BYTES (1 << 20)  /* the whole command line: execve's limit is near */
/* How long an ExecSync without a timeout waits for a container being started: kubelet's
 * default CRI request timeout. */
#define START_WAIT_MAX (120 * USEC_PER_SEC)

typedef struct exec_job {
        rkl_api_call *call;
        rkl_cache *cache;
        char container_id[RKL_ID_LEN + 1];
        bool starting; /* StartContainer accepted, the app not running yet: pid unknown */
        pid_t pid;
        char **argv;   /* in the arena */
        char *seccomp; /* the app's filter (rkl_rkt_exec_seccomp()), in the arena; NULL: none */
        uint64_t timeout_usec;
        uint64_t accepted_usec; /* CLOCK_MONOTONIC: the timeout counts from the call */
        Runtime__V1__ExecSyncResponse *resp;
} exec_job;

void rkl_api_exec_fit(size_t out_len, size_t err_len, size_t max, size_t *ret_out, size_t *ret_err)
{
        size_t half = max / 2;
        size_t err = err_len <= half || out_len + err_len <= max ? err_len
                     : out_len < half                            ? max - out_len
                                                                 : half;
        if (err > max)
                err = max;
        *ret_err = err;
        *ret_out = out_len <= max - err ? out_len : max - err;
}

static bool job_cancelled(void *userdata)
{
        const exec_job *j = userdata;
        return rkl_api_call_cancelled(j->call);
}

static int wait_started(exec_job *j, rkl_error *reterr)
{
        return rkl_api_container_wait_running(j->cache, j->call, j->container_id, j->accepted_usec,
                                              j->timeout_usec, &j->pid, reterr);
}

static void exec_run(void *userdata)
{
        exec_job *j = userdata; /* in the call's arena: gone once the call is finished */
        rkl_api_call *call = j->call;
        rkl_error err = RKL_ERROR_INIT;
        rkl_exec_result res = {0};
        char id[RKL_ID_LEN + 1];
        bool ran = false;
        int r = j->starting ? wait_started(j, &err) : 0;
        uint64_t start = rkl_now_usec(CLOCK_MONOTONIC);
        uint64_t waited = start - j->accepted_usec;

        memcpy(id, j->container_id, sizeof(id));
        if (r < 0)
                ;
        else if (rkl_api_call_cancelled(call))
                r = rkl_error_set(&err, -ECANCELED, "cancelled");
        else if (j->timeout_usec && waited >= j->timeout_usec)
                r = rkl_error_set(&err, -ETIMEDOUT,
                                  "timeout: %" PRIu64 " ms passed waiting for an exec slot",
                                  waited / USEC_PER_MSEC);
        else {
                rkl_exec_opts o = {
                    .pid = j->pid,
                    .argv = j->argv,
                    .timeout_usec = j->timeout_usec ? j->timeout_usec - waited : 0,
                    .max_output = MAX_OUTPUT,
                    .cancelled = job_cancelled,
                    .userdata = j,
                    .seccomp = j->seccomp,
                };
                r = rkl_exec_run(&o, &res, &err);
                ran = true;
        }
        if (r == -ESRCH)
                r = rkl_error_set(&err, -EBADFD, "container %s is not running: %s", id, err.msg);
        else if (r == -ETIMEDOUT && ran)
                /* kubelet maps DEADLINE_EXCEEDED to its exec timeout error. */
                r = rkl_error_set(&err, r,
                                  "timeout: '%s' still running after %" PRIu64
                                  " s: killed, with all it started",
                                  j->argv[0], j->timeout_usec / USEC_PER_SEC);
        if (r >= 0) {
                size_t out, errn;
                rkl_api_exec_fit(res.out_len, res.err_len, RKL_API_EXEC_REPLY_MAX, &out, &errn);
                j->resp->stdout = (ProtobufCBinaryData){.len = out, .data = (uint8_t *)res.out};
                j->resp->stderr = (ProtobufCBinaryData){.len = errn, .data = (uint8_t *)res.err};
                j->resp->exit_code = res.exit_code;
                rkl_log_debug("container %.12s: exec '%s' exited %d after %.1f ms "
                              "(%zu+%zu bytes%s, %.1f ms queued)",
                              id, j->argv[0], res.exit_code,
                              (double)(rkl_now_usec(CLOCK_MONOTONIC) - start) / USEC_PER_MSEC, out,
                              errn,
                              res.out_truncated || res.err_truncated || out < res.out_len ||
                                      errn < res.err_len
                                  ? ", truncated"
                                  : "",
                              (double)waited / USEC_PER_MSEC);
        } else
                rkl_log_debug("container %.12s: exec '%s': %s", id, j->argv[0], err.msg);
        /* Packs the reply (which points into res) before it returns. */
        rkl_api_call_finish(call, r, &err);
        rkl_exec_result_done(&res);
}

char *rkl_api_exec_seccomp(rkl_arena *a, const rkl_container_spec *spec)
{
        _cleanup_free_ char *s = rkl_rkt_exec_seccomp(spec);
        return s ? rkl_arena_strdup(a, s) : NULL;
}

int rkl_api_cmd_check(size_t n_cmd, char *const *cmd, rkl_error *reterr)
{
        size_t total = 0;
        if (n_cmd == 0 || isempty(cmd[0]))
                return rkl_error_set(reterr, -EINVAL, "cmd: required");
        if (n_cmd > RKL_MAX_ARGS)
                return rkl_error_set(reterr, -E2BIG, "cmd: more than %d arguments", RKL_MAX_ARGS);
        for (size_t i = 0; i < n_cmd; i++) {
                size_t n = strlen(cmd[i]);
                if (n > RKL_MAX_ARG)
                        return rkl_error_set(reterr, -E2BIG, "cmd[%zu]: longer than %d bytes", i,
                                             RKL_MAX_ARG);
                total += n + 1;
        }
        if (total > MAX_CMD_BYTES)
                return rkl_error_set(reterr, -E2BIG, "cmd: longer than %d bytes in all",
                                     MAX_CMD_BYTES);
        return 0;
}

static int cmd_check(const Runtime__V1__ExecSyncRequest *req, rkl_error *reterr)
{
        int r = rkl_api_cmd_check(req->n_cmd, req->cmd, reterr);
        if (r < 0)
                return r;
        if (req->timeout < 0)
                return rkl_error_set(reterr, -EINVAL, "timeout: %" PRId64 " is negative",
                                     req->timeout);
        return 0;
}

/* Running, with a process the reconciler saw (its first, in the app's cgroup). */
static bool container_runs(const rkl_container_view *v)
{
        const rkl_container_record *c = v->rec;
        return v->state == RKL_CONTAINER_RUNNING && c->observed.pid > 0 &&
               c->observed.pid <= INT32_MAX && c->app_name;
}

/* StartContainer answers once the start is recorded, and kubelet runs a postStart hook
 * (critest an exec) right after: the app is waited for. */
static bool container_starting(const rkl_container_view *v)
{
        return v->state == RKL_CONTAINER_CREATED &&
               v->rec->desired == RKL_CONTAINER_DESIRED_RUNNING;
}

int rkl_api_container_wait_running(rkl_cache *cache, rkl_api_call *call, const char *id,
                                   uint64_t accepted_usec, uint64_t timeout_usec, pid_t *ret_pid,
                                   rkl_error *reterr)
{
        uint64_t budget = timeout_usec ? timeout_usec : START_WAIT_MAX;
        uint64_t seen = rkl_cache_changes(cache); /* before the look: no change is missed */
        for (;;) {
                _cleanup_(rkl_container_view_unrefp) rkl_container_view *v =
                    rkl_cache_container_get(cache, id);
                if (!v)
                        return rkl_error_set(reterr, -ENOENT, "container %s is gone", id);
                if (container_runs(v)) {
                        *ret_pid = (pid_t)v->rec->observed.pid;
                        return 0;
                }
                if (!container_starting(v))
                        return rkl_error_set(reterr, -EBADFD, "container %s is not running", id);
                if (rkl_api_call_cancelled(call))
                        return rkl_error_set(reterr, -ECANCELED, "cancelled");
                if (rkl_now_usec(CLOCK_MONOTONIC) - accepted_usec >= budget)
                        return rkl_error_set(reterr, timeout_usec ? -ETIMEDOUT : -EBADFD,
                                             "container %s did not start within %" PRIu64 " s", id,
                                             budget / USEC_PER_SEC);
                /* Woken by the cache's next change; 20 ms at most, for a cancellation. */
                seen = rkl_cache_wait_change(cache, seen, 20 * USEC_PER_MSEC);
        }
}

int rkl_api_container_running_or_starting(rkl_api_ctx *ctx, const char *given,
                                          rkl_container_view **ret, bool *ret_starting,
                                          rkl_error *reterr)
{
        _cleanup_(rkl_container_view_unrefp) rkl_container_view *v = NULL;
        int r = rkl_api_container_lookup(ctx, "container_id", given, &v, reterr);
        if (r < 0)
                return r;
        bool starting = !container_runs(v) && container_starting(v) && v->rec->app_name;
        if (!starting && !container_runs(v))
                return rkl_error_set(reterr, -EBADFD, "container %s is not running", v->rec->id);
        *ret_starting = starting;
        *ret = TAKE_PTR(v);
        return 0;
}

int rkl_api_exec_sync(rkl_api_ctx *ctx, const Runtime__V1__ExecSyncRequest *req,
                      Runtime__V1__ExecSyncResponse *resp, rkl_error *reterr)
{
        _cleanup_(rkl_container_view_unrefp) rkl_container_view *v = NULL;
        uint64_t accepted = rkl_now_usec(CLOCK_MONOTONIC);
        int r = cmd_check(req, reterr);
        bool starting = false;
        if (r >= 0)
                r = rkl_api_container_running_or_starting(ctx, req->container_id, &v, &starting,
                                                          reterr);
        if (r < 0)
                return r;
        const rkl_container_record *c = v->rec;

        exec_job *j = rkl_arena_newa(exec_job, ctx->arena, 1);
        *j = (exec_job){
            .call = ctx->call,
            .cache = ctx->cache,
            .starting = starting,
            .pid = starting ? 0 : (pid_t)c->observed.pid,
            .argv = rkl_arena_newa(char *, ctx->arena, req->n_cmd + 1),
            /* Beyond a century is no timeout at all (and would overflow). */
            .timeout_usec = req->timeout <= 0 || req->timeout > INT64_C(100) * 366 * 24 * 3600
                                ? 0
                                : (uint64_t)req->timeout * USEC_PER_SEC,
            .accepted_usec = accepted,
            .resp = resp,
        };
        memcpy(j->container_id, c->id, sizeof(j->container_id));
        j->seccomp = rkl_api_exec_seccomp(ctx->arena, &c->spec);
        for (size_t i = 0; i < req->n_cmd; i++)
                j->argv[i] = rkl_arena_strdup(ctx->arena, req->cmd[i]);
        j->argv[req->n_cmd] = NULL;
        r = rkl_api_defer_on(ctx, RKL_API_POOL_EXEC, exec_run, j);
        if (r == -EMFILE)
                return rkl_error_set(reterr, r,
                                     "too many ExecSync calls at once (%d running or waiting): "
                                     "try again later",
                                     RKL_API_EXEC_ADMITTED);
        return r;
}
