/* Calls finished on a worker pool (api.h's rkl_api_defer_on()): slow handlers, ExecSync,
 * --wait's replies and stats calls waiting for a fresh snapshot, each pool with its threads
 * and its bound, and the calls that wait for something not known yet, such as the daemon's
 * first look at the machine (rkl_api_defer_until()). A deferred call watches for its client
 * going away, and holds a reference of its own until the work answers. */
#include "server-internal.h"

#include "base/config.h"
#include "base/banned.h"

static const struct {
        const char *name;
        unsigned threads;
        size_t admitted; /* running or waiting; 0: no bound */
} pool_defs[_RKL_API_POOL_MAX] = {
    [RKL_API_POOL_SLOW] = {"api", RKL_API_SLOW_THREADS, 0},
    [RKL_API_POOL_EXEC] = {"exec", RKL_API_EXEC_THREADS, RKL_API_EXEC_ADMITTED},
    [RKL_API_POOL_WAIT] = {"wait", RKL_API_WAIT_THREADS, RKL_API_WAIT_ADMITTED},
    [RKL_API_POOL_STATS] = {"stats", RKL_API_STATS_THREADS, 0},
};

int rkl_api_defer(rkl_api_ctx *ctx, rkl_work_fn fn, void *userdata)
{
        return rkl_api_defer_on(ctx, RKL_API_POOL_SLOW, fn, userdata);
}

/* Watches for the client going away: cancellation is only visible through this op, which
 * a call starts once (a late run may defer again). */
void rkl_api__close_watch(rkl_api_call *c)
{
        grpc_op op = {.op = GRPC_OP_RECV_CLOSE_ON_SERVER};

        if (c->deferred)
                return;
        c->deferred = true;
        op.data.recv_close_on_server.cancelled = &c->cancelled;
        atomic_fetch_add(&c->pending, 1);
        grpc_call_error e = grpc_call_start_batch(c->call, &op, 1, &c->tag_close, NULL);
        if (e != GRPC_CALL_OK) {
                assert(!"grpc_call_start_batch failed");
                atomic_fetch_sub(&c->pending, 1);
        }
}

int rkl_api_defer_on(rkl_api_ctx *ctx, rkl_api_pool pool, rkl_work_fn fn, void *userdata)
{
        rkl_api_call *c = ctx->call;
        rkl_workpool *p = c->w->srv->pools[pool];

        /* Watch for the client going away while the work runs. */
        rkl_api__close_watch(c);
        /* The work's own reference, dropped once it answered: a client that goes away
         * completes the close op above, which must not free the call under the work. */
        atomic_fetch_add(&c->pending, 1);
        if (pool_defs[pool].admitted == 0)
                rkl_workpool_submit(p, fn, userdata);
        else if (rkl_workpool_submit_bounded(p, pool_defs[pool].admitted, fn, userdata) < 0) {
                /* Never the call's last reference: the caller holds the request's. The close
                 * watch stays: the answer goes out without one of its own (c->deferred). */
                atomic_fetch_sub(&c->pending, 1);
                return -EMFILE;
        }
        return RKL_API_DEFERRED;
}

typedef struct late_run {
        rkl_api_call *c;
        rkl_api_wait_fn wait;
        void *userdata;
} late_run;

static void late_run_main(void *userdata)
{
        late_run *j = userdata;
        rkl_api_call *c = j->c; /* j lives in the call's arena */
        j->wait(j->userdata);
        rkl_api__call_handle(c, NULL,
                             true); /* answers, or defers again with a reference of its own */
        rkl_api__call_unref(c);
}

int rkl_api_defer_until(rkl_api_ctx *ctx, rkl_api_pool pool, rkl_api_wait_fn wait, void *userdata)
{
        assert(!ctx->late);
        late_run *j = rkl_arena_newa(late_run, ctx->arena, 1);
        *j = (late_run){.c = ctx->call, .wait = wait, .userdata = userdata};
        return rkl_api_defer_on(ctx, pool, late_run_main, j);
}

void rkl_api_call_finish(rkl_api_call *c, int r, const rkl_error *err)
{
        static const rkl_error none = RKL_ERROR_INIT;
        rkl_api__call_answer(c, r, err ? err : &none);
        rkl_api__call_unref(c); /* the work's reference (rkl_api_defer()) */
}

bool rkl_api_call_cancelled(rkl_api_call *c)
{
        return atomic_load(&c->cancel_seen);
}

void rkl_api__pools_start(rkl_api_server *s)
{
        for (size_t i = 0; i < _RKL_API_POOL_MAX; i++)
                if (i != RKL_API_POOL_WAIT || s->cfg->config->wait)
                        s->pools[i] = rkl_workpool_new(pool_defs[i].threads, pool_defs[i].name);
}

void rkl_api__pools_drain(rkl_api_server *s)
{
        s->pools[RKL_API_POOL_EXEC] = rkl_workpool_free(s->pools[RKL_API_POOL_EXEC]);
        s->pools[RKL_API_POOL_WAIT] = rkl_workpool_free(s->pools[RKL_API_POOL_WAIT]);
        s->pools[RKL_API_POOL_STATS] = rkl_workpool_free(s->pools[RKL_API_POOL_STATS]);
}
