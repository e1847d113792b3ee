#include "wait.h"

#include <inttypes.h>

#include "base/config.h"
#include "base/log.h"
#include "base/time-util.h"
#include "store/cache.h"
#include "base/banned.h"

/* A wait looks again at each change of the cache, and at least at this pace, for its
 * client going away and its budget. */
#define LOOK_USEC (20 * USEC_PER_MSEC)

typedef struct wait_job {
        rkl_api_call *call;
        rkl_cache *cache;
        rkl_api_wait_for what;
        char id[RKL_ID_LEN + 1];
        uint64_t started_usec; /* CLOCK_MONOTONIC */
        uint64_t budget_usec;
        /* A sandbox withdrawn after failing (store.h): the failure's -errno and words, kept
         * from the first sight of it while rktlet undoes the sandbox. */
        int failed;
        char failure[RKL_ERROR_MSG_MAX];
} wait_job;

static const struct {
        const char *object, *state;
} what_words[_RKL_API_WAIT_MAX] = {
    [RKL_API_WAIT_POD_READY] = {"sandbox", "is not running with its network"},
    [RKL_API_WAIT_POD_STOPPED] = {"sandbox", "is not stopped"},
    [RKL_API_WAIT_CONTAINER_STARTED] = {"container", "has not started"},
    [RKL_API_WAIT_CONTAINER_STOPPED] = {"container", "is not stopped"},
};

static const char *failure_of(const char *message, const char *last_error)
{
        return !isempty(message) ? message : !isempty(last_error) ? last_error : "no reason known";
}

/* Each check: 1 when reached, 0 to wait on, or the error that ends the wait. */

/* A sandbox that fails for good under --wait is withdrawn (reconciler/pods.c): gone from
 * the lists at once, its failure kept until rktlet has undone it, and only then the call's
 * answer, with the failure's code (docs/architecture.md, 'Error codes'). */
static int pod_ready(wait_job *j, rkl_error *reterr)
{
        _cleanup_(rkl_pod_view_unrefp) rkl_pod_view *v = rkl_cache_pod_get(j->cache, j->id);
        if (!v) {
                int code;
                bool undone;
                _cleanup_free_ char *msg = NULL;
                if (rkl_cache_failure_get(j->cache, j->id, &code, &msg, &undone)) {
                        j->failed = code;
                        (void)snprintf(j->failure, sizeof(j->failure), "%s", msg);
                        if (!undone)
                                return 0;
                }
                if (j->failed)
                        return rkl_error_set(reterr, j->failed,
                                             "sandbox %s failed, and nothing of it is left: %s",
                                             j->id, j->failure);
                return rkl_error_set(reterr, -ENOENT, "sandbox %s was removed before it ran",
                                     j->id);
        }
        const rkl_pod_record *p = v->rec;
        if (p->desired != RKL_POD_DESIRED_READY)
                return 1; /* stopped meanwhile: that is what is wanted now */
        if (p->observed.phase == RKL_POD_PHASE_FAILED) {
                /* Failed for good before this daemon withdrew such sandboxes: it stays,
                 * NOTREADY, for the client to see and remove. */
                const char *why = failure_of(p->observed.message, p->book.last_error);
                int code = rkl_error_shortage_of(why);
                return rkl_error_set(reterr, code < 0 ? code : -EAGAIN, "sandbox %s failed: %s",
                                     j->id, why);
        }
        return p->observed.phase == RKL_POD_PHASE_RUNNING &&
               (p->spec.host_network || !isempty(p->observed.ip));
}

static int pod_stopped(wait_job *j, rkl_error *reterr)
{
        rkl_cache *cache = j->cache;
        const char *id = j->id;
        _cleanup_(rkl_pod_view_unrefp) rkl_pod_view *v = rkl_cache_pod_get(cache, id);
        if (!v || v->rec->desired != RKL_POD_DESIRED_STOPPED)
                return 1; /* removed, which stops it too */
        if (v->rec->observed.phase == RKL_POD_PHASE_PENDING ||
            v->rec->observed.phase == RKL_POD_PHASE_RUNNING)
                return 0;
        rkl_container_view **c = NULL;
        size_t n = 0;
        rkl_view_filter f = {.sandbox_id = id, .by_state = true, .state = RKL_CONTAINER_RUNNING};
        int r = rkl_cache_container_list(cache, &f, &c, &n);
        rkl_container_views_unref(c, n);
        if (r < 0)
                return rkl_error_set(reterr, r, "cannot list the containers of sandbox %s", id);
        return n == 0;
}

static int container_started(wait_job *j, rkl_error *reterr)
{
        const char *id = j->id;
        _cleanup_(rkl_container_view_unrefp) rkl_container_view *v =
            rkl_cache_container_get(j->cache, id);
        if (!v)
                return rkl_error_set(reterr, -ENOENT, "container %s was removed before it ran", id);
        const rkl_container_record *c = v->rec;
        switch (v->state) {
        case RKL_CONTAINER_RUNNING:
                return 1;
        case RKL_CONTAINER_EXITED:
                if (streq_ptr(c->observed.reason, RKL_CONTAINER_START_ERROR)) {
                        /* rkt's failure, after its retries: a shortage its words name, else
                         * what may pass */
                        const char *why = failure_of(c->observed.message, c->book.last_error);
                        int code = rkl_error_shortage_of(why);
                        return rkl_error_set(reterr, code < 0 ? code : -EAGAIN,
                                             "container %s did not start: %s", id, why);
                }
                return 1; /* ran, and is done already */
        case RKL_CONTAINER_CREATED:
                return c->desired != RKL_CONTAINER_DESIRED_RUNNING; /* stopped meanwhile */
        default:
                return 0;
        }
}

static int container_stopped(wait_job *j, rkl_error *reterr)
{
        _cleanup_(rkl_container_view_unrefp) rkl_container_view *v =
            rkl_cache_container_get(j->cache, j->id);
        return !v || v->state == RKL_CONTAINER_EXITED ||
               (v->state == RKL_CONTAINER_CREATED &&
                v->rec->desired != RKL_CONTAINER_DESIRED_RUNNING);
}

static int (*const checks[_RKL_API_WAIT_MAX])(wait_job *, rkl_error *) = {
    [RKL_API_WAIT_POD_READY] = pod_ready,
    [RKL_API_WAIT_POD_STOPPED] = pod_stopped,
    [RKL_API_WAIT_CONTAINER_STARTED] = container_started,
    [RKL_API_WAIT_CONTAINER_STOPPED] = container_stopped,
};

static void wait_run(void *userdata)
{
        wait_job *j = userdata; /* in the call's arena: gone once the call is finished */
        rkl_error err = RKL_ERROR_INIT;
        int r;

        uint64_t seen = rkl_cache_changes(j->cache); /* before the look: no change is missed */
        while ((r = checks[j->what](j, &err)) == 0) {
                if (rkl_api_call_cancelled(j->call)) {
                        r = rkl_error_set(&err, -ECANCELED, "cancelled");
                        break;
                }
                uint64_t waited = rkl_now_usec(CLOCK_MONOTONIC) - j->started_usec;
                if (waited >= j->budget_usec && j->failed) {
                        r = rkl_error_set(&err, j->failed,
                                          "sandbox %s failed (rktlet goes on undoing it): %s",
                                          j->id, j->failure);
                        break;
                }
                if (waited >= j->budget_usec) {
                        r = rkl_error_set(&err, -ETIMEDOUT,
                                          "%s %s %s after %" PRIu64
                                          " s of waiting (rktlet goes on with it)",
                                          what_words[j->what].object, j->id,
                                          what_words[j->what].state, waited / USEC_PER_SEC);
                        break;
                }
                seen = rkl_cache_wait_change(j->cache, seen, LOOK_USEC);
        }
        if (r < 0)
                rkl_log_debug("%s", err.msg);
        rkl_api_call_finish(j->call, r < 0 ? r : 0, &err);
}

int rkl_api_wait(rkl_api_ctx *ctx, rkl_api_wait_for what, const char *id,
                 uint64_t stop_timeout_usec)
{
        if (!ctx->cfg || !ctx->cfg->config->wait || !ctx->call)
                return 0;
        wait_job *j = rkl_arena_newa(wait_job, ctx->arena, 1);
        *j = (wait_job){
            .call = ctx->call,
            .cache = ctx->cache,
            .what = what,
            .started_usec = rkl_now_usec(CLOCK_MONOTONIC),
            .budget_usec = RKL_API_WAIT_MAX_USEC + stop_timeout_usec,
        };
        memcpy(j->id, id, sizeof(j->id));
        int r = rkl_api_defer_on(ctx, RKL_API_POOL_WAIT, wait_run, j);
        if (r == -EMFILE) {
                /* The change is committed: refusing now would say it was not. */
                rkl_log_debug("wait pool full: %s answered without waiting", id);
                return 0;
        }
        return r;
}
