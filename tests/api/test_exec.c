/* ExecSync's handler called as a plain function over a cache, without a socket: what it
 * refuses before anything runs, and how a reply shares the message limit. Running commands
 * is covered by tests/exec (the machinery) and tests/integration/test_exec.py (end to end). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "api/api.h"
#include "api/exec.h"
#include "api/status.h"
#include "base/alloc.h"
#include "base/config.h"
#include "store/cache.h"
#include "store/db.h"

#define RUNNING "1111111111111111111111111111111111111111111111111111111111111111"
#define NO_PID  "2222222222222222222222222222222222222222222222222222222222222222"
#define EXITED  "3333333333333333333333333333333333333333333333333333333333333333"
#define UNKNOWN "4444444444444444444444444444444444444444444444444444444444444444"

typedef struct fixture {
        rkl_cache *cache;
        rkl_arena *arena;
        rkl_config options;
        rkl_api_config cfg;
        rkl_api_ctx ctx;
} fixture;

static void put(rkl_cache *c, const char *id, rkl_container_phase phase, int64_t pid)
{
        rkl_container_record *rec = rkl_xnew0(rkl_container_record, 1);
        memcpy(rec->id, id, RKL_ID_LEN + 1);
        memset(rec->sandbox_id, 'f', RKL_ID_LEN);
        rec->app_name = rkl_container_app_name(id);
        rec->desired = RKL_CONTAINER_DESIRED_RUNNING;
        rec->observed.phase = phase;
        rec->observed.pid = pid;
        rec->book.version = 1;
        assert_true(rkl_cache_container_put(c, rkl_container_view_new(rec, NULL)));
}

static int setup(void **state)
{
        fixture *f = rkl_xnew0(fixture, 1);
        f->cache = rkl_cache_new();
        f->arena = rkl_arena_new();
        f->cfg.config = &f->options;
        f->ctx = (rkl_api_ctx){.cfg = &f->cfg, .cache = f->cache, .arena = f->arena};
        put(f->cache, RUNNING, RKL_CONTAINER_PHASE_RUNNING, 4242);
        put(f->cache, NO_PID, RKL_CONTAINER_PHASE_RUNNING, 0);
        put(f->cache, EXITED, RKL_CONTAINER_PHASE_EXITED, 0);
        put(f->cache, UNKNOWN, RKL_CONTAINER_PHASE_UNKNOWN, 0);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        fixture *f = *state;
        rkl_cache_free(f->cache);
        rkl_arena_free(f->arena);
        free(f);
        return 0;
}

static grpc_status_code exec_sync(fixture *f, const char *id, char *const *cmd, size_t n_cmd,
                                  int64_t timeout, rkl_error *err)
{
        Runtime__V1__ExecSyncRequest req = RUNTIME__V1__EXEC_SYNC_REQUEST__INIT;
        Runtime__V1__ExecSyncResponse resp = RUNTIME__V1__EXEC_SYNC_RESPONSE__INIT;
        req.container_id = (char *)id;
        req.cmd = (char **)cmd;
        req.n_cmd = n_cmd;
        req.timeout = timeout;
        *err = (rkl_error)RKL_ERROR_INIT;
        int r = rkl_api_exec_sync(&f->ctx, &req, &resp, err);
        assert_true(r < 0); /* nothing here may get as far as running */
        return rkl_api_status_from_errno(r);
}

static void test_refusals(void **state)
{
        fixture *f = *state;
        char *const *cmd = RKL_STRV("true");
        rkl_error err;

        assert_int_equal(exec_sync(f, "5555", cmd, 1, 0, &err), GRPC_STATUS_NOT_FOUND);
        assert_non_null(strstr(err.msg, "not found"));
        assert_int_equal(exec_sync(f, "", cmd, 1, 0, &err), GRPC_STATUS_INVALID_ARGUMENT);
        /* Containers that do not run: CRI's FAILED_PRECONDITION, whatever the reason. */
        const char *stopped[] = {EXITED, UNKNOWN, NO_PID};
        for (size_t i = 0; i < ELEMENTSOF(stopped); i++) {
                assert_int_equal(exec_sync(f, stopped[i], cmd, 1, 0, &err),
                                 GRPC_STATUS_FAILED_PRECONDITION);
                assert_non_null(strstr(err.msg, "is not running"));
        }
        /* A prefix is enough to name one, as for every other call. */
        assert_int_equal(exec_sync(f, "3333", cmd, 1, 0, &err), GRPC_STATUS_FAILED_PRECONDITION);

        /* The request is checked first, whatever the container. */
        assert_int_equal(exec_sync(f, RUNNING, cmd, 0, 0, &err), GRPC_STATUS_INVALID_ARGUMENT);
        char *const *empty = RKL_STRV("");
        assert_int_equal(exec_sync(f, RUNNING, empty, 1, 0, &err), GRPC_STATUS_INVALID_ARGUMENT);
        assert_int_equal(exec_sync(f, RUNNING, cmd, 1, -1, &err), GRPC_STATUS_INVALID_ARGUMENT);
        assert_non_null(strstr(err.msg, "timeout"));
        char x[] = "x";
        char **many = rkl_xnew0(char *, RKL_MAX_ARGS + 1);
        for (size_t i = 0; i <= RKL_MAX_ARGS; i++)
                many[i] = x;
        assert_int_equal(exec_sync(f, RUNNING, many, RKL_MAX_ARGS + 1, 0, &err),
                         GRPC_STATUS_INVALID_ARGUMENT);
        free(many);
        char *long_arg = rkl_xmalloc(RKL_MAX_ARG + 2);
        memset(long_arg, 'a', RKL_MAX_ARG + 1);
        long_arg[RKL_MAX_ARG + 1] = 0;
        char *const *too_long = RKL_STRV("echo", long_arg);
        assert_int_equal(exec_sync(f, RUNNING, too_long, 2, 0, &err), GRPC_STATUS_INVALID_ARGUMENT);
        free(long_arg);
}

static void test_fit(void **state)
{
        static const struct {
                size_t out, err, max, want_out, want_err;
        } cases[] = {
            {10, 20, 100, 10, 20},   /* both fit */
            {200, 20, 100, 80, 20},  /* stdout gives way to a small stderr */
            {20, 200, 100, 20, 80},  /* and the other way round */
            {200, 200, 100, 50, 50}, /* both big: half each */
            {200, 60, 100, 50, 50},  /* stderr over half: cut to half, stdout the rest */
            {0, 0, 100, 0, 0},       /* nothing */
            {100, 0, 100, 100, 0},   /* exactly the limit */
            {101, 0, 100, 100, 0},   /* one over */
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                size_t out, err;
                rkl_api_exec_fit(cases[i].out, cases[i].err, cases[i].max, &out, &err);
                if (out != cases[i].want_out || err != cases[i].want_err)
                        fail_msg("case %zu: got %zu+%zu, want %zu+%zu", i, out, err,
                                 cases[i].want_out, cases[i].want_err);
                assert_true(out + err <= cases[i].max);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
            cmocka_unit_test(test_fit),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
