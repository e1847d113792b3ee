#include "logs.h"

#include "lookup.h"
#include "base/config.h"
#include "base/alloc.h"
#include "base/log.h"
#include "logs/logs.h"
#include "store/cache.h"
#include "base/banned.h"

/* A log is refused INVALID_ARGUMENT whatever the reason src/logs gives. */
static int invalid(int r, rkl_error *reterr)
{
        if (r < 0 && r != -EINVAL)
                reterr->code = -EINVAL;
        return r < 0 ? -EINVAL : 0;
}

/* The daemon's own directories, where no log may go (the array holds them). */
static char *const *forbidden(rkl_api_ctx *ctx, char *array[3])
{
        size_t n = 0;
        if (ctx->cfg->config->state_dir)
                array[n++] = ctx->cfg->config->state_dir;
        if (ctx->cfg->config->rkt_data_dir)
                array[n++] = ctx->cfg->config->rkt_data_dir;
        array[n] = NULL;
        return array;
}

int rkl_api_log_directory_check(rkl_api_ctx *ctx, const char *log_directory, rkl_error *reterr)
{
        char *dirs[3];
        return invalid(rkl_logs_directory_check(log_directory, forbidden(ctx, dirs), reterr),
                       reterr);
}

int rkl_api_log_path_check(rkl_api_ctx *ctx, const char *log_directory, const char *log_path,
                           rkl_error *reterr)
{
        char *dirs[3];
        return invalid(rkl_logs_path_check(log_directory, log_path, forbidden(ctx, dirs), reterr),
                       reterr);
}

/* The sandbox's log directory, from the cache; NULL when it has none. */
static char *log_directory_of(rkl_api_ctx *ctx, const rkl_container_record *c)
{
        _cleanup_(rkl_pod_view_unrefp) rkl_pod_view *pod =
            rkl_cache_pod_get(ctx->cache, c->sandbox_id);
        return pod && !isempty(pod->rec->spec.log_directory)
                   ? rkl_xstrdup(pod->rec->spec.log_directory)
                   : NULL;
}

int rkl_api_log_file_make(rkl_api_ctx *ctx, const rkl_container_view *v, rkl_error *reterr)
{
        const rkl_container_record *c = v->rec;
        _cleanup_free_ char *dir = log_directory_of(ctx, c);
        if (!dir || isempty(c->spec.log_path) || !ctx->cfg->config->state_dir)
                return 0;
        _cleanup_free_ char *src =
            rkl_logs_source_path(ctx->cfg->config->state_dir, c->sandbox_id, c->app_name);
        _cleanup_free_ char *progress =
            rkl_logs_progress_path(ctx->cfg->config->state_dir, c->sandbox_id, c->app_name);
        rkl_logs_target t = {
            .container_id = c->id,
            .source = src,
            .progress = progress,
            .log_directory = dir,
            .log_path = c->spec.log_path,
        };
        char *dirs[3];
        int r = rkl_logs_file_make(&t, forbidden(ctx, dirs), reterr);
        /* Where it leads or what is there is the client's choice. */
        if (r == -EXDEV || r == -EEXIST)
                return invalid(r, reterr);
        if (r < 0)
                return rkl_error_prefix(reterr, "cannot make the container's log file");
        return 0;
}

typedef struct reopen_job {
        rkl_api_call *call;
        rkl_logs *logs;
        rkl_logs_target t;
} reopen_job;

static void reopen_run(void *userdata)
{
        reopen_job *j = userdata;
        rkl_error err = RKL_ERROR_INIT;
        int r = rkl_logs_reopen(j->logs, &j->t, &err);
        /* What is at log_path now is not a file rktlet may write into: the container's log
         * is in a state the client can change (ALREADY_EXISTS would read as a retry's). */
        if (r == -EEXIST || r == -EXDEV)
                r = err.code = -EBADFD;
        if (r >= 0)
                rkl_log_debug("container %.12s: log reopened", j->t.container_id);
        rkl_api_call_finish(j->call, r, &err);
}

int rkl_api_reopen_container_log(rkl_api_ctx *ctx,
                                 const Runtime__V1__ReopenContainerLogRequest *req,
                                 Runtime__V1__ReopenContainerLogResponse *resp, rkl_error *reterr)
{
        _cleanup_(rkl_container_view_unrefp) rkl_container_view *v = NULL;
        int r = rkl_api_container_lookup(ctx, "container_id", req->container_id, &v, reterr);
        if (r < 0)
                return r;
        const rkl_container_record *c = v->rec;
        /* CRI: a container that does not run has no log to reopen. */
        if (v->state != RKL_CONTAINER_RUNNING)
                return rkl_error_set(reterr, -EBADFD, "container %s is not running", c->id);
        _cleanup_free_ char *dir = log_directory_of(ctx, c);
        if (!dir || isempty(c->spec.log_path))
                return rkl_error_set(reterr, -EBADFD, "container %s has no log path", c->id);
        if (!ctx->cfg->logs || !ctx->cfg->config->state_dir)
                return rkl_error_set(reterr, -EOPNOTSUPP, "no log follower in this daemon");

        reopen_job *j = rkl_arena_newa(reopen_job, ctx->arena, 1);
        j->call = ctx->call;
        j->logs = ctx->cfg->logs;
        _cleanup_free_ char *src =
            rkl_logs_source_path(ctx->cfg->config->state_dir, c->sandbox_id, c->app_name);
        _cleanup_free_ char *progress =
            rkl_logs_progress_path(ctx->cfg->config->state_dir, c->sandbox_id, c->app_name);
        j->t = (rkl_logs_target){
            .container_id = rkl_arena_strdup(ctx->arena, c->id),
            .source = rkl_arena_strdup(ctx->arena, src),
            .progress = rkl_arena_strdup(ctx->arena, progress),
            .log_directory = rkl_arena_strdup(ctx->arena, dir),
            .log_path = rkl_arena_strdup(ctx->arena, c->spec.log_path),
        };
        return rkl_api_defer(ctx, reopen_run, j);
}
