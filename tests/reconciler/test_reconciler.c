/* The reconciler's decisions, pass by pass, over a real store (SQLite in a temporary
 * directory, the cache the API writes through) and test doubles of what it drives, through
 * its table of operations (reconciler/ops.h): a fake rkt that keeps its pods in memory and
 * answers pod_read and pod_list from them, a fake system manager that keeps a list of units,
 * fake CNI plugins (the configuration is real), apps' cgroups in a temporary directory, a
 * fake clock that moves only when a test moves it, and a fake worker pool that runs actions
 * when the test says so, on the test's thread. No process, no bus, no real time: the one
 * thread is the log follower's, which test_exit_hold_output waits for without a clock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <fcntl.h>
#include <sched.h>
#include <inttypes.h>
#include <signal.h>
#include <sys/stat.h>

#include "reconciler/ops.h"
#include "reconciler/reconciler.h"
#include "base/alloc.h"
#include "base/config.h"
#include "base/fileio.h"
#include "base/strv.h"
#include "base/time-util.h"
#include "logs/logs.h"
#include "rkt/command.h"
#include "store/cache.h"
#include "store/store.h"

#define IMAGE_ID "sha512-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define MS       (int64_t)1000000
#define S        (1000 * MS)

/* The reconciler's limits (reconciler-internal.h), written out rather than included: the
 * tests hold the code to the documented values (docs/architecture.md, 'The reconcile loop';
 * docs/logs.md), so that a change of one fails here until it is meant. */
#define MAX_ATTEMPTS           5
#define CONTAINER_MAX_ATTEMPTS 8
#define EXIT_HOLD_NS           (5 * S)

/* ---- The fake rkt: pods in memory ---- */

typedef struct fake_app {
        char name[80];
        char cid[RKL_ID_LEN + 1]; /* the container ID it carries; "" : none */
        rkl_pod_app_state state;
        int exit_code;
        int64_t started_ns, finished_ns;
} fake_app;

typedef struct fake_pod {
        char uuid[RKL_POD_UUID_LEN + 1];
        char sandbox_id[RKL_ID_LEN + 1];
        rkl_pod_state state;
        bool ready;
        bool netns;         /* its network namespace exists */
        bool manifest_gone; /* its directory emptied from outside, the pod still up */
        uint32_t ppid;
        int64_t created_ns;
        fake_app apps[8];
        size_t n_apps;
} fake_pod;

typedef struct fake_unit {
        char name[96];
        rkl_unit_active active;
} fake_unit;

typedef struct work {
        void (*fn)(void *arg);
        void *arg;
} work;

/* A verb made to fail: the next n calls return code with msg. */
typedef struct failure {
        unsigned n;
        int code;
        bool leaves_app; /* app add: the failed add leaves a half-made app (docs/rkt.md) */
} failure;

enum {
        F_UNIT_START,
        F_APP_ADD,
        F_APP_START,
        F_APP_RM,
        F_POD_STOP,
        F_POD_RM,
        F_CNI_ADD,
        F_CNI_CHECK,
        F_CNI_DEL,
        _F_MAX
};

typedef struct fake {
        int64_t now;
        bool connected;
        char **calls; /* "unit start NAME", "app add UUID APP"...: what the reconciler did */
        fake_pod pods[8];
        size_t n_pods;
        fake_unit units[8];
        size_t n_units;
        work queue[32];
        size_t n_queued;
        failure fail[_F_MAX];
        bool pod_stop_ignored;  /* a pod that does not go down when stopped */
        bool unit_stop_lingers; /* a stopped unit stays loaded, deactivating, until removed */
        char *cgroups;          /* apps' cgroups: <cgroups>/<app>, cgroup2's layout, plain files */
} fake;

static void call(fake *f, const char *fmt, ...) _printf_(2, 3);
static void call(fake *f, const char *fmt, ...)
{
        va_list ap;
        char *s = NULL;
        va_start(ap, fmt);
        assert_true(vasprintf(&s, fmt, ap) >= 0);
        va_end(ap);
        rkl_strv_consume(&f->calls, s);
}

static int failing(fake *f, int which, rkl_error *reterr, const char *what)
{
        failure *x = &f->fail[which];
        if (x->n == 0)
                return 0;
        x->n--;
        return rkl_error_set(reterr, x->code, "%s: exit status 254: fake failure", what);
}

static fake_pod *pod_find(fake *f, const char *uuid)
{
        for (size_t i = 0; i < f->n_pods; i++)
                if (streq(f->pods[i].uuid, uuid))
                        return &f->pods[i];
        return NULL;
}

static fake_app *app_find(fake_pod *p, const char *name)
{
        for (size_t i = 0; p && i < p->n_apps; i++)
                if (streq(p->apps[i].name, name))
                        return &p->apps[i];
        return NULL;
}

static fake_unit *unit_find(fake *f, const char *name)
{
        for (size_t i = 0; i < f->n_units; i++)
                if (streq(f->units[i].name, name))
                        return &f->units[i];
        return NULL;
}

static void pod_remove(fake *f, const char *uuid)
{
        fake_pod *p = pod_find(f, uuid);
        if (!p)
                return;
        *p = f->pods[--f->n_pods];
}

static int fake_app_add(void *u, const char *uuid, const rkl_container_spec *spec,
                        const rkl_rkt_app_opts *o, uint64_t timeout_usec, rkl_error *reterr)
{
        fake *f = u;
        fake_pod *p = pod_find(f, uuid);
        call(f, "app add %s %s", uuid, o->app_name);
        if (!p)
                return rkl_error_set(reterr, -ENOENT, "app add: no such pod");
        bool leaves = f->fail[F_APP_ADD].leaves_app;
        int k = failing(f, F_APP_ADD, reterr, "app add");
        if (k < 0 && !leaves)
                return k;
        assert_null(app_find(p, o->app_name));
        assert_true(p->n_apps < ELEMENTSOF(p->apps));
        fake_app *a = &p->apps[p->n_apps++];
        *a = (fake_app){.state = RKL_POD_APP_CREATED};
        (void)snprintf(a->name, sizeof(a->name), "%s", o->app_name);
        (void)snprintf(a->cid, sizeof(a->cid), "%s", o->container_id);
        return k;
}

static int fake_app_start(void *u, const char *uuid, const char *app, pid_t supervisor,
                          uint64_t timeout_usec, rkl_error *reterr)
{
        fake *f = u;
        call(f, "app start %s %s", uuid, app);
        fake_app *a = app_find(pod_find(f, uuid), app);
        if (!a)
                return rkl_error_set(reterr, -ENOENT, "app start: no such app");
        int k = failing(f, F_APP_START, reterr, "app start");
        if (k < 0)
                return k;
        a->state = RKL_POD_APP_RUNNING;
        a->started_ns = f->now;
        return 0;
}

static int fake_app_stop(void *u, const char *uuid, const char *app, uint64_t timeout_usec,
                         rkl_error *reterr)
{
        fake *f = u;
        call(f, "app stop %s %s", uuid, app);
        fake_app *a = app_find(pod_find(f, uuid), app);
        if (!a)
                return rkl_error_set(reterr, -ENOENT, "app stop: no such app");
        a->state = RKL_POD_APP_EXITED;
        a->exit_code = SIGTERM;
        a->finished_ns = f->now;
        return 0;
}

static int fake_app_rm(void *u, const char *uuid, const char *app, uint64_t timeout_usec,
                       rkl_error *reterr)
{
        fake *f = u;
        call(f, "app rm %s %s", uuid, app);
        fake_pod *p = pod_find(f, uuid);
        fake_app *a = app_find(p, app);
        if (!a)
                return rkl_error_set(reterr, -ENOENT, "app rm: no such app");
        int k = failing(f, F_APP_RM, reterr, "app rm");
        if (k < 0)
                return k;
        *a = p->apps[--p->n_apps];
        return 0;
}

static int fake_pod_stop(void *u, const char *uuid, bool force, uint64_t timeout_usec,
                         rkl_error *reterr)
{
        fake *f = u;
        call(f, "stop%s %s", force ? " --force" : "", uuid);
        fake_pod *p = pod_find(f, uuid);
        if (!p)
                return rkl_error_set(reterr, -ENOENT, "stop: no such pod");
        int k = failing(f, F_POD_STOP, reterr, "stop");
        if (k < 0 || f->pod_stop_ignored)
                return k;
        p->state = RKL_POD_STATE_EXITED;
        for (size_t i = 0; i < p->n_apps; i++)
                if (p->apps[i].state == RKL_POD_APP_RUNNING) {
                        p->apps[i].state = RKL_POD_APP_EXITED;
                        p->apps[i].exit_code = SIGTERM;
                        p->apps[i].finished_ns = f->now;
                }
        return 0;
}

static int fake_pod_rm(void *u, const char *uuid, uint64_t timeout_usec, rkl_error *reterr)
{
        fake *f = u;
        call(f, "rm %s", uuid);
        if (!pod_find(f, uuid))
                return rkl_error_set(reterr, -ENOENT, "rm: no such pod");
        int k = failing(f, F_POD_RM, reterr, "rm");
        if (k < 0)
                return k;
        pod_remove(f, uuid);
        return 0;
}

static int fake_pod_restart_boot(void *u, uint32_t nspawn_pid, rkl_error *reterr)
{
        fake *f = u;
        call(f, "boot %u", nspawn_pid);
        return 0;
}

static int fake_rkt_version(void *u, rkl_rkt_version *ret, rkl_error *reterr)
{
        *ret = (rkl_rkt_version){.version = rkl_xstrdup("1.30.0"),
                                 .text = rkl_xstrdup("rkt Version: 1.30.0 (a test double)")};
        return 0;
}

static int fake_pod_read(void *u, const char *uuid, rkl_poddir_pod *ret, rkl_error *reterr)
{
        fake *f = u;
        const fake_pod *fp = pod_find(f, uuid);
        if (!fp)
                return rkl_error_set(reterr, -ENOENT, "no pod %s", uuid);
        rkl_poddir_pod p = {
            .dir = RKL_PODDIR_RUN,
            .state = fp->state,
            .locked = fp->state == RKL_POD_STATE_RUNNING,
            .supervisor_ready = fp->ready,
            .ppid = fp->ppid,
            .created_ns = fp->created_ns,
            .started_ns = fp->created_ns,
            .manifest_error = fp->manifest_gone ? -ENOENT : 0,
        };
        memcpy(p.uuid, fp->uuid, sizeof(p.uuid));
        if (fp->netns)
                p.netns = rkl_xasprintf("/var/run/netns/rkt-%s", fp->uuid);
        if (fp->sandbox_id[0])
                rkl_kvs_add(&p.user_annotations, RKL_MARK_SANDBOX_ID, fp->sandbox_id);
        p.apps = rkl_xnew0(rkl_poddir_app, fp->n_apps + 1);
        p.n_apps = fp->n_apps;
        for (size_t i = 0; i < fp->n_apps; i++) {
                const fake_app *fa = &fp->apps[i];
                rkl_poddir_app *a = &p.apps[i];
                a->name = rkl_xstrdup(fa->name);
                a->image_id = rkl_xstrdup(IMAGE_ID);
                a->in_manifest = true;
                a->state = fa->state;
                a->created_ns = fp->created_ns;
                a->started_ns = fa->started_ns;
                a->finished_ns = fa->finished_ns;
                a->exit_known = fa->state == RKL_POD_APP_EXITED;
                a->exit_code = fa->exit_code;
                if (fa->cid[0])
                        rkl_kvs_add(&a->user_annotations, RKL_MARK_CONTAINER_ID, fa->cid);
        }
        *ret = p;
        return 0;
}

static int fake_pod_list(void *u, char ***ret, rkl_error *reterr)
{
        fake *f = u;
        char **l = rkl_xnew0(char *, 1);
        for (size_t i = 0; i < f->n_pods; i++)
                rkl_strv_push(&l, f->pods[i].uuid);
        *ret = l;
        return 0;
}

/* An app's cgroup is <cgroups>/<app> when the test made it. */
static int fake_app_cgroups(void *u, pid_t supervisor, const char *app, char **ret_procs_dir,
                            char **ret_memory_dir)
{
        fake *f = u;
        _cleanup_free_ char *dir = rkl_xasprintf("%s/%s", f->cgroups, app);
        struct stat st;
        if (supervisor <= 0 || stat(dir, &st) < 0)
                return -ENXIO;
        *ret_procs_dir = rkl_xstrdup(dir);
        *ret_memory_dir = TAKE_PTR(dir);
        return 0;
}

/* ---- Fake CNI plugins: the configuration is read for real, the plugins not run ---- */

static int fake_cni_add(void *u, const rkl_cni_config *c, const rkl_cni_exec *x,
                        const rkl_cni_runtime *rt, char **ret_result, rkl_error *reterr)
{
        fake *f = u;
        call(f, "cni add %.8s %s", rt->container_id, rt->netns);
        int k = failing(f, F_CNI_ADD, reterr, "ADD");
        if (k < 0)
                return k;
        *ret_result = rkl_xstrdup("{\"cniVersion\":\"0.4.0\",\"ips\":[{\"version\":\"4\","
                                  "\"address\":\"10.22.0.5/16\"}]}");
        return 0;
}

static int fake_cni_check(void *u, const rkl_cni_config *c, const rkl_cni_exec *x,
                          const rkl_cni_runtime *rt, const char *result, rkl_error *reterr)
{
        fake *f = u;
        call(f, "cni check %.8s", rt->container_id);
        return failing(f, F_CNI_CHECK, reterr, "CHECK");
}

static int fake_cni_del(void *u, const rkl_cni_config *c, const rkl_cni_exec *x,
                        const rkl_cni_runtime *rt, const char *result, rkl_error *reterr)
{
        fake *f = u;
        call(f, "cni del %.8s%s", rt->container_id, result ? "" : " (no result)");
        return failing(f, F_CNI_DEL, reterr, "DEL");
}

/* ---- The fake system manager ---- */

static int fake_unit_probe(void *u, char **ret_version, rkl_error *reterr)
{
        fake *f = u;
        if (!f->connected)
                return rkl_error_set(reterr, -ECONNREFUSED, "cannot connect to the test double");
        *ret_version = rkl_xstrdup("252 (a test double)");
        return 0;
}

static bool fake_unit_connected(void *u)
{
        fake *f = u;
        return f->connected;
}

static int fake_unit_start(void *u, const rkl_unit_spec *spec, uint64_t timeout_usec,
                           rkl_error *reterr)
{
        fake *f = u;
        call(f, "unit start %s", spec->name);
        assert_non_null(spec->argv);
        assert_true(spec->argv[0][0] == '/');
        if (unit_find(f, spec->name))
                return rkl_error_set(reterr, -EEXIST, "unit %s exists", spec->name);
        int k = failing(f, F_UNIT_START, reterr, "unit start");
        if (k < 0)
                return k;
        assert_true(f->n_units < ELEMENTSOF(f->units));
        fake_unit *x = &f->units[f->n_units++];
        (void)snprintf(x->name, sizeof(x->name), "%s", spec->name);
        x->active = RKL_UNIT_ACTIVE;
        return 0;
}

static int fake_unit_stop(void *u, const char *name, rkl_error *reterr)
{
        fake *f = u;
        call(f, "unit stop %s", name);
        fake_unit *x = unit_find(f, name);
        if (!x)
                return rkl_error_set(reterr, -ENOENT, "no unit %s", name);
        if (f->unit_stop_lingers)
                x->active = RKL_UNIT_DEACTIVATING;
        else
                *x = f->units[--f->n_units];
        return 0;
}

static int fake_unit_state(void *u, const char *name, rkl_unit_state *ret, rkl_error *reterr)
{
        const fake_unit *x = unit_find(u, name);
        *ret = (rkl_unit_state){.active = x ? x->active : RKL_UNIT_GONE};
        return 0;
}

static int fake_unit_list(void *u, const char *pattern, char ***ret, rkl_error *reterr)
{
        fake *f = u;
        char **l = rkl_xnew0(char *, 1);
        for (size_t i = 0; i < f->n_units; i++)
                rkl_strv_push(&l, f->units[i].name);
        *ret = l;
        return 0;
}

static int fake_unit_list_active(void *u, const char *pattern, char ***ret_names,
                                 rkl_unit_active **ret_active, rkl_error *reterr)
{
        fake *f = u;
        char **l = rkl_xnew0(char *, 1);
        rkl_unit_active *a = rkl_xnew0(rkl_unit_active, f->n_units + 1);
        for (size_t i = 0; i < f->n_units; i++) {
                rkl_strv_push(&l, f->units[i].name);
                a[i] = f->units[i].active;
        }
        call(f, "unit list");
        *ret_names = l;
        *ret_active = a;
        return 0;
}

static int fake_unit_set_limits(void *u, const char *name, const rkl_unit_limits *l,
                                rkl_error *reterr)
{
        fake *f = u;
        call(f, "unit limits %s %" PRIu64, name, l->memory_bytes);
        return 0;
}

/* ---- The fake clock and pool ---- */

static int64_t fake_now_ns(void *u)
{
        fake *f = u;
        return f->now;
}

static void fake_sleep_usec(void *u, uint64_t usec)
{
        fake *f = u;
        f->now += (int64_t)usec * 1000;
}

static void fake_submit(void *u, void (*fn)(void *arg), void *arg)
{
        fake *f = u;
        assert_true(f->n_queued < ELEMENTSOF(f->queue));
        f->queue[f->n_queued++] = (work){fn, arg};
}

static const rkl_reconciler_ops fake_ops = {
    .app_add = fake_app_add,
    .app_start = fake_app_start,
    .app_stop = fake_app_stop,
    .app_rm = fake_app_rm,
    .pod_stop = fake_pod_stop,
    .pod_rm = fake_pod_rm,
    .pod_restart_boot = fake_pod_restart_boot,
    .rkt_version = fake_rkt_version,
    .pod_read = fake_pod_read,
    .pod_list = fake_pod_list,
    .app_cgroups = fake_app_cgroups,
    .cni_add = fake_cni_add,
    .cni_check = fake_cni_check,
    .cni_del = fake_cni_del,
    .unit_probe = fake_unit_probe,
    .unit_connected = fake_unit_connected,
    .unit_start = fake_unit_start,
    .unit_stop = fake_unit_stop,
    .unit_list = fake_unit_list,
    .unit_state = fake_unit_state,
    .unit_list_active = fake_unit_list_active,
    .unit_set_limits = fake_unit_set_limits,
    .now_ns = fake_now_ns,
    .sleep_usec = fake_sleep_usec,
    .submit = fake_submit,
};

/* ---- The fixture ---- */

typedef struct fixture {
        char dir[64];
        char *db_path, *state, *rkt_dir, *logs_dir;
        rkl_config options;
        rkl_cache *cache;
        rkl_store *store; /* the API's connection */
        rkl_logs *logs;
        rkl_reconciler *r;
        fake f;
} fixture;

static void reconciler_open(fixture *x)
{
        rkl_error err = RKL_ERROR_INIT;
        rkl_reconciler_config rc = {
            .config = &x->options,
            .db_path = x->db_path,
            .logs = x->logs,
            .ops = &fake_ops,
            .ops_userdata = &x->f,
        };
        assert_int_equal(rkl_reconciler_new(&rc, x->cache, &x->r, &err), 0);
}

/* The daemon restarts: a new reconciler over the same store. Its cache would be new, loaded
 * from the store and not probed yet; this one is kept (the API's connection writes through
 * it), its health cleared as a new one's is. */
static void restart(fixture *x)
{
        x->r = rkl_reconciler_free(x->r);
        rkl_cache_set_health(x->cache, &(rkl_health){0});
        reconciler_open(x);
}

static int setup_with(void **state, bool logs, bool cni)
{
        rkl_error err = RKL_ERROR_INIT;
        fixture *x = rkl_xnew0(fixture, 1);
        rkl_db *db = NULL;

        (void)snprintf(x->dir, sizeof(x->dir), "/tmp/rkl-test-reconciler-XXXXXX");
        assert_non_null(mkdtemp(x->dir));
        x->db_path = rkl_xasprintf("%s/rktlet.db", x->dir);
        x->state = rkl_xasprintf("%s/state", x->dir);
        x->rkt_dir = rkl_xasprintf("%s/rkt", x->dir);
        x->logs_dir = rkl_xasprintf("%s/logs", x->dir);
        _cleanup_free_ char *pods = rkl_xasprintf("%s/pods", x->rkt_dir);
        assert_int_equal(rkl_mkdir_p(pods, 0755), 0);
        assert_int_equal(rkl_mkdir_p(x->state, 0755), 0);
        x->options = (rkl_config){
            .state_dir = x->state,
            .rkt_data_dir = x->rkt_dir,
            .rkt_path = (char *)"/usr/bin/rkt-test-double", /* never run */
            .net = (char *)"default",                       /* rkt's own: no CNI here */
        };
        if (cni) {
                /* The cluster's network, from a configuration read for real. */
                x->options.net = NULL;
                x->options.cni_conf_dir = rkl_xasprintf("%s/cni", x->dir);
                _cleanup_free_ char *conf =
                    rkl_xasprintf("%s/10-test.conflist", x->options.cni_conf_dir);
                const char *text = "{\"cniVersion\":\"0.4.0\",\"name\":\"test\","
                                   "\"plugins\":[{\"type\":\"bridge\"}]}";
                assert_int_equal(rkl_mkdir_p(x->options.cni_conf_dir, 0755), 0);
                assert_int_equal(rkl_write_file_atomic_at(AT_FDCWD, conf, text, strlen(text), 0644),
                                 0);
        }
        /* The clock starts where the store's (accepted_ns is real time): from here on, only
         * the tests move it. */
        x->f.now = rkl_realtime_ns() + S;
        x->f.connected = true;
        x->f.cgroups = rkl_xasprintf("%s/cgroup", x->dir);
        x->cache = rkl_cache_new();
        assert_int_equal(rkl_db_open(x->db_path, NULL, &db, &err), 0);
        x->store = rkl_store_new(db, x->cache);
        assert_int_equal(rkl_store_load(x->store, NULL, NULL, &err), 0);
        if (logs) {
                char *forbidden[] = {x->state, NULL};
                assert_int_equal(rkl_logs_new(forbidden, &x->logs, &err), 0);
        }
        reconciler_open(x);
        *state = x;
        return 0;
}

static int setup(void **state)
{
        return setup_with(state, false, false);
}

static int setup_logs(void **state)
{
        return setup_with(state, true, false);
}

static int setup_cni(void **state)
{
        return setup_with(state, false, true);
}

static void run_actions(fixture *x);

static int teardown(void **state)
{
        fixture *x = *state;
        run_actions(x); /* their results are freed with the reconciler */
        x->r = rkl_reconciler_free(x->r);
        x->logs = rkl_logs_free(x->logs);
        x->store = rkl_store_free(x->store);
        x->cache = rkl_cache_free(x->cache);
        assert_int_equal(rkl_rm_rf_at(AT_FDCWD, x->dir), 0);
        rkl_strv_free(x->f.calls);
        free(x->f.cgroups);
        free(x->db_path);
        free(x->state);
        free(x->rkt_dir);
        free(x->logs_dir);
        free(x->options.cni_conf_dir);
        free(x);
        return 0;
}

/* Runs the actions the reconciler handed to its pool, in order, on this thread. */
static void run_actions(fixture *x)
{
        for (size_t i = 0; i < x->f.n_queued; i++)
                x->f.queue[i].fn(x->f.queue[i].arg);
        x->f.n_queued = 0;
}

/* One pass; returns when it wants the next (0: not before something happens). */
static int64_t pass(fixture *x)
{
        int64_t wake = 0;
        rkl_reconciler_run_pass(x->r, false, &wake);
        return wake;
}

static int64_t rescan(fixture *x)
{
        int64_t wake = 0;
        rkl_reconciler_run_pass(x->r, true, &wake);
        return wake;
}

/* The calls made since the last look, one a line, and forgets them. */
static char *calls_take(fixture *x)
{
        _cleanup_free_ char *all = rkl_strv_join(x->f.calls, "\n");
        x->f.calls = rkl_strv_free(x->f.calls);
        return rkl_xasprintf("%s", all ? all : "");
}

static void calls_forget(fixture *x)
{
        x->f.calls = rkl_strv_free(x->f.calls);
}

#define assert_calls(x, ...)                                                                       \
        do {                                                                                       \
                _cleanup_free_ char *_want = rkl_xasprintf(__VA_ARGS__);                           \
                _cleanup_free_ char *_got = calls_take(x);                                         \
                if (!streq(_want, _got))                                                           \
                        fail_msg("calls:\n%s\nwanted:\n%s", _got, _want);                          \
        } while (0)

static int cmp_str(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The same, for calls in no particular order: want lists them sorted. */
#define assert_calls_sorted(x, ...)                                                                \
        do {                                                                                       \
                qsort((x)->f.calls, rkl_strv_length((x)->f.calls), sizeof(char *), cmp_str);       \
                assert_calls(x, __VA_ARGS__);                                                      \
        } while (0)

static void id_of(char c, char ret[static RKL_ID_LEN + 1])
{
        memset(ret, c, RKL_ID_LEN);
        ret[RKL_ID_LEN] = 0;
}

static void uuid_of(char c, char ret[static RKL_POD_UUID_LEN + 1])
{
        (void)snprintf(ret, RKL_POD_UUID_LEN + 1, "%c%c%c%c%c%c%c%c-0000-4000-8000-000000000000", c,
                       c, c, c, c, c, c, c);
}

static void sandbox_create(fixture *x, const char *id)
{
        rkl_error err = RKL_ERROR_INIT;
        rkl_pod_spec p = {0};
        p.name = rkl_xasprintf("pod-%.4s", id);
        p.uid = rkl_xstrdup("uid");
        p.namespace = rkl_xstrdup("default");
        p.log_directory = rkl_xstrdup(x->logs_dir);
        assert_int_equal(rkl_store_pod_create(x->store, id, &p, &err), 0);
        rkl_pod_spec_done(&p);
}

static void container_create(fixture *x, const char *id, const char *pod)
{
        rkl_error err = RKL_ERROR_INIT;
        rkl_container_spec c = {0};
        c.name = rkl_xasprintf("ctr-%.4s", id);
        c.image = rkl_xstrdup("busybox");
        c.log_path = rkl_xasprintf("ctr-%.4s.log", id);
        _cleanup_free_ char *app = rkl_container_app_name(id);
        int k = rkl_store_container_create(x->store, id, pod, app, IMAGE_ID, &c, &err);
        if (k < 0)
                fail_msg("container create: %s", err.msg);
        rkl_container_spec_done(&c);
}

static void container_start(fixture *x, const char *id)
{
        rkl_error err = RKL_ERROR_INIT;
        assert_true(rkl_store_container_start(x->store, id, &err) >= 0);
}

static char *unit_of(const char *id)
{
        return rkl_xasprintf("rktlet-%s.service", id);
}

static char *app_of(const char *id)
{
        return rkl_container_app_name(id);
}

/* The pod the sandbox's unit would have rkt make: running, its supervisor ready or not. */
static fake_pod *pod_appears(fixture *x, const char *uuid, const char *sandbox_id, bool ready)
{
        assert_true(x->f.n_pods < ELEMENTSOF(x->f.pods));
        fake_pod *p = &x->f.pods[x->f.n_pods++];
        *p = (fake_pod){.state = RKL_POD_STATE_RUNNING, .ready = ready, .created_ns = x->f.now};
        (void)snprintf(p->uuid, sizeof(p->uuid), "%s", uuid);
        (void)snprintf(p->sandbox_id, sizeof(p->sandbox_id), "%s", sandbox_id);
        return p;
}

/* The record as the cache shows it now (a reference, dropped by the caller). */
static rkl_pod_view *pod_get(fixture *x, const char *id)
{
        rkl_pod_view *v = rkl_cache_pod_get(x->cache, id);
        assert_non_null(v);
        return v;
}

static rkl_container_view *container_get(fixture *x, const char *id)
{
        rkl_container_view *v = rkl_cache_container_get(x->cache, id);
        assert_non_null(v);
        return v;
}

static rkl_pod_phase pod_phase(fixture *x, const char *id)
{
        _cleanup_(rkl_pod_view_unrefp) rkl_pod_view *v = pod_get(x, id);
        return v->rec->observed.phase;
}

static rkl_container_phase container_phase(fixture *x, const char *id)
{
        _cleanup_(rkl_container_view_unrefp) rkl_container_view *v = container_get(x, id);
        return v->rec->observed.phase;
}

/* A sandbox recorded, its unit started, its pod up and adopted: running. */
static void sandbox_running(fixture *x, const char *id, const char *uuid)
{
        _cleanup_free_ char *unit = unit_of(id);
        sandbox_create(x, id);
        rescan(x);
        assert_calls(x, "unit start %s", unit);
        pod_appears(x, uuid, id, true);
        rescan(x);
        assert_calls(x, "%s", "");
        assert_int_equal(pod_phase(x, id), RKL_POD_PHASE_RUNNING);
}

/* A container of a running sandbox added and started: running. */
static void container_running(fixture *x, const char *id, const char *pod, const char *uuid)
{
        _cleanup_free_ char *app = app_of(id);
        container_create(x, id, pod);
        container_start(x, id);
        pass(x);
        run_actions(x);
        pass(x);
        run_actions(x);
        pass(x);
        assert_calls(x, "app add %s %s\napp start %s %s", uuid, app, uuid, app);
        assert_int_equal(container_phase(x, id), RKL_CONTAINER_PHASE_RUNNING);
}

/* ---- Sandboxes ---- */

static void test_sandbox_start(void **state)
{
        fixture *x = *state;
        char id[RKL_ID_LEN + 1], uuid[RKL_POD_UUID_LEN + 1];
        id_of('a', id);
        uuid_of('1', uuid);
        _cleanup_free_ char *unit = unit_of(id);

        sandbox_create(x, id);
        int64_t wake = rescan(x);
        assert_calls(x, "unit start %s", unit);
        {
                _cleanup_(rkl_pod_view_unrefp) rkl_pod_view *v = pod_get(x, id);
                assert_string_equal(v->rec->unit_name, unit); /* recorded before the start */
                assert_null(v->rec->rkt_uuid);
                assert_int_equal(v->rec->observed.phase, RKL_POD_PHASE_PENDING);
                assert_int_equal(v->rec->book.attempts, 0);
        }
        /* Polled while pending, and no second start. */
        assert_true(wake > x->f.now && wake <= x->f.now + 100 * MS);
        x->f.now = wake;
        pass(x);
        assert_calls(x, "%s", "");

        /* The pod appears, its supervisor not ready yet: adopted, still pending. */
        fake_pod *p = pod_appears(x, uuid, id, false);
        rescan(x);
        {
                _cleanup_(rkl_pod_view_unrefp) rkl_pod_view *v = pod_get(x, id);
                assert_string_equal(v->rec->rkt_uuid, uuid);
                assert_int_equal(v->rec->observed.phase, RKL_POD_PHASE_PENDING);
        }
        p->ready = true;
        rescan(x);
        assert_int_equal(pod_phase(x, id), RKL_POD_PHASE_RUNNING);
        /* Running: nothing more to do, and no pass wanted. */
        x->f.now += 10 * S;
        assert_int_equal(rescan(x), 0);
        assert_calls(x, "%s", "");
}

/* The uuid file the sandbox writes names its pod: read by the pass that waits for it. */
static void test_sandbox_uuid_file(void **state)
{
        fixture *x = *state;
        char id[RKL_ID_LEN + 1], uuid[RKL_POD_UUID_LEN + 1];
        id_of('b', id);
        uuid_of('2', uuid);

        sandbox_create(x, id);
        pass(x);
        calls_forget(x);
        pod_appears(x, uuid, id, true);
        _cleanup_free_ char *path = rkl_xasprintf("%s/pods/%s/uuid", x->state, id);
        _cleanup_free_ char *text = rkl_xasprintf("%s\n", uuid);
        assert_int_equal(rkl_write_file_atomic_at(AT_FDCWD, path, text, strlen(text), 0644), 0);
        pass(x); /* no rescan: only the file tells */
        _cleanup_(rkl_pod_view_unrefp) rkl_pod_view *v = pod_get(x, id);
        assert_string_equal(v->rec->rkt_uuid, uuid);
        assert_int_equal(v->rec->observed.phase, RKL_POD_PHASE_RUNNING);
}

/* No systemd: nothing is started, and the pass comes back a second later. */
static void test_sandbox_waits_for_systemd(void **state)
{
        fixture *x = *state;
        char id[RKL_ID_LEN + 1];
        id_of('c', id);
        _cleanup_free_ char *unit = unit_of(id);

        x->f.connected = false;
        sandbox_create(x, id);
        assert_int_equal(rescan(x), x->f.now + S);
        assert_calls(x, "%s", "");
        x->f.connected = true;
        x->f.now += S;
        pass(x);
        assert_calls(x, "unit start %s", unit);
}

/* A unit that cannot start: retried after a backoff that doubles, and the fifth failure is
 * the last (MAX_ATTEMPTS): failed for good, CreateFailed, never started again. */
static void test_sandbox_retry_then_fail(void **state)
{
        fixture *x = *state;
        char id[RKL_ID_LEN + 1];
        id_of('d', id);
        _cleanup_free_ char *unit = unit_of(id);

        x->f.fail[F_UNIT_START] = (failure){.n = 100, .code = -EIO};
        sandbox_create(x, id);
        int64_t backoff = 500 * MS;
        for (unsigned attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
                int64_t wake = pass(x);
                assert_calls(x, "unit start %s", unit);
                _cleanup_(rkl_pod_view_unrefp) rkl_pod_view *v = pod_get(x, id);
                assert_int_equal(v->rec->book.attempts, attempt);
                assert_non_null(strstr(v->rec->book.last_error, "fake failure"));
                assert_int_equal(v->rec->book.next_retry_ns, x->f.now + backoff);
                assert_null(v->rec->unit_name); /* no unit came of it */
                if (attempt < MAX_ATTEMPTS) {
                        assert_int_equal(v->rec->observed.phase, RKL_POD_PHASE_PENDING);
                        assert_int_equal(wake, x->f.now + backoff);
                        /* Not a nanosecond early. */
                        x->f.now += backoff - 1;
                        assert_int_equal(pass(x), x->f.now + 1);
                        assert_calls(x, "%s", "");
                        x->f.now += 1;
                } else {
                        assert_int_equal(v->rec->observed.phase, RKL_POD_PHASE_FAILED);
                        assert_string_equal(v->rec->observed.reason, "CreateFailed");
                        assert_non_null(strstr(v->rec->observed.message, "fake failure"));
                }
                backoff *= 2;
        }
        x->f.now += 10 * 60 * S;
        rescan(x);
        assert_calls(x, "%s", "");
}

/* A sandbox whose unit went before its pod appeared: a failed attempt, with the end of the
 * sandbox's own output, undone and retried. */
static void test_sandbox_unit_gone(void **state)
{
        fixture *x = *state;
        char id[RKL_ID_LEN + 1];
        id_of('e', id);
        _cleanup_free_ char *unit = unit_of(id);
        _cleanup_free_ char *log = rkl_xasprintf("%s/pods/%s/sandbox.log", x->state, id);

        sandbox_create(x, id);
        pass(x);
        assert_calls(x, "unit start %s", unit);
        /* Its unit asked after a second after the first pass that waits for its pod, not
         * before. */
        x->f.now += 50 * MS;
        assert_int_equal(pass(x), x->f.now + 50 * MS);
        x->f.now += 999 * MS;
        pass(x);
        assert_calls(x, "%s", "");
        x->f.now += 1 * MS;
        pass(x);
        assert_calls(x, "unit list");
        _cleanup_(rkl_pod_view_unrefp) rkl_pod_view *v = pod_get(x, id);
        assert_int_equal(v->rec->book.attempts, 0);

        /* The unit fails, having said why. */
        const char *out = "stage1: cannot mount: permission denied\n";
        assert_int_equal(rkl_write_file_atomic_at(AT_FDCWD, log, out, strlen(out), 0644), 0);
        x->f.units[0].active = RKL_UNIT_FAILED;
        x->f.now += S;
        pass(x);
        assert_calls(x, "unit list\nunit stop %s", unit);
        rkl_pod_view_unref(v);
        v = pod_get(x, id);
        assert_int_equal(v->rec->book.attempts, 1);
        assert_null(v->rec->unit_name);
        assert_non_null(strstr(v->rec->book.last_error, "the sandbox exited before its pod"));
        assert_non_null(strstr(v->rec->book.last_error, "permission denied"));
        /* The retry, after the backoff, once the manager has collected the failed attempt's
         * unit, whose name it takes. */
        x->f.now = v->rec->book.next_retry_ns;
        pass(x);
        assert_calls(x, "unit start %s", unit);
}

/* A retry while the failed attempt's unit, whose name it takes, is still going: it waits
 * for the manager to collect it, rather than take it for its own. */
static void test_sandbox_retry_waits_for_old_unit(void **state)
{
        fixture *x = *state;
        char id[RKL_ID_LEN + 1];
        id_of('e', id);
        _cleanup_free_ char *unit = unit_of(id);

        x->f.unit_stop_lingers = true;
        sandbox_create(x, id);
        pass(x);
        assert_calls(x, "unit start %s", unit);
        x->f.now += 50 * MS; /* the first pass that waits for its pod */
        pass(x);
        x->f.now += S;
        pass(x);
        assert_calls(x, "unit list");
        x->f.units[0].active = RKL_UNIT_FAILED;
        x->f.now += S;
        pass(x);
        assert_calls(x, "unit list\nunit stop %s", unit);
        _cleanup_(rkl_pod_view_unrefp) rkl_pod_view *v = pod_get(x, id);
        assert_int_equal(v->rec->book.attempts, 1);
        assert_int_equal(x->f.units[0].active, RKL_UNIT_DEACTIVATING);

        x->f.now = v->rec->book.next_retry_ns;
        int64_t wake = pass(x);
        assert_calls(x, "%s", "");
        assert_true(wake <= x->f.now + S);
        x->f.n_units = 0; /* collected */
        x->f.now = wake;
        pass(x);
        assert_calls(x, "unit start %s", unit);
}

/* A pod that never becomes ready fails its attempt at the ready timeout (120 s). */
static void test_sandbox_ready_timeout(void **state)
{
        fixture *x = *state;
        char id[RKL_ID_LEN + 1], uuid[RKL_POD_UUID_LEN + 1];
        id_of('f', id);
        uuid_of('3', uuid);
        _cleanup_free_ char *unit = unit_of(id);

        sandbox_create(x, id);
        pass(x);
        pod_appears(x, uuid, id, false);
        rescan(x);
        assert_calls(x, "unit start %s", unit);
        x->f.now += 119 * S;
        pass(x);
        assert_int_equal(pod_phase(x, id), RKL_POD_PHASE_PENDING);
        x->f.now += 2 * S;
        pass(x);
        /* Its unit stopped; the pod, no longer the sandbox's, is a leftover. */
        run_actions(x);
        assert_calls(x, "unit stop %s\nstop --force %s", unit, uuid);
        _cleanup_(rkl_pod_view_unrefp) rkl_pod_view *v = pod_get(x, id);
        assert_int_equal(v->rec->book.attempts, 1);
        assert_null(v->rec->rkt_uuid);
        assert_non_null(strstr(v->rec->book.last_error, "did not become ready in time"));
        /* The retry makes a new unit after the backoff. */
        x->f.now = v->rec->book.next_retry_ns;
        pass(x);
        assert_calls(x, "unit start %s", unit);
}

/* A pending pod whose systemd dropped its boot is booted again, once per 5 s. */
static void test_sandbox_boot_look(void **state)
{
        fixture *x = *state;
        char id[RKL_ID_LEN + 1], uuid[RKL_POD_UUID_LEN + 1];
        id_of('9', id);
        uuid_of('9', uuid);

        sandbox_create(x, id);
        pass(x);
        fake_pod *p = pod_appears(x, uuid, id, false);
        p->ppid = 4194305; /* above any pid_max: no process, no cgroup */
        rescan(x);
        calls_forget(x);
        x->f.now += 6 * S;
        pass(x);
        run_actions(x);
        assert_calls(x, "boot 4194305");
        x->f.now += S;
        pass(x);
        run_actions(x);
        assert_calls(x, "%s", "");
        x->f.now += 5 * S;
        pass(x);
        run_actions(x);
        assert_calls(x, "boot 4194305");
}

/* StopPodSandbox, then RemovePodSandbox: stop, rm, stopped; the record goes. */
static void test_sandbox_stop(void **state)
{
        fixture *x = *state;
        rkl_error err = RKL_ERROR_INIT;
        char id[RKL_ID_LEN + 1], cid[RKL_ID_LEN + 1], uuid[RKL_POD_UUID_LEN + 1];
        id_of('1', id);
        id_of('2', cid);
        uuid_of('4', uuid);

        sandbox_running(x, id, uuid);
        container_running(x, cid, id, uuid);
        assert_int_equal(rkl_store_pod_stop(x->store, id, &err), 0);
        pass(x);
        assert_calls(x, "%s", "");
        run_actions(x);
        assert_calls(x, "stop %s", uuid);
        pass(x); /* the stop's result: the pod exited, then rm */
        assert_int_equal(container_phase(x, cid), RKL_CONTAINER_PHASE_EXITED);
        {
                _cleanup_(rkl_container_view_unrefp) rkl_container_view *c = container_get(x, cid);
                assert_int_equal(c->rec->observed.exit_code, 128 + SIGTERM);
        }
        run_actions(x);
        assert_calls(x, "rm %s", uuid);
        pass(x);
        {
                _cleanup_(rkl_pod_view_unrefp) rkl_pod_view *v = pod_get(x, id);
                assert_int_equal(v->rec->observed.phase, RKL_POD_PHASE_STOPPED);
                assert_null(v->rec->rkt_uuid);
        }
        assert_int_equal(rkl_store_pod_delete(x->store, id, &err), 0);
        rescan(x);
        run_actions(x);
        /* Its unit is a leftover now. */
        _cleanup_free_ char *unit = unit_of(id);
        assert_calls(x, "unit stop %s", unit);
        assert_int_equal(x->f.n_pods, 0);
}

/* A pod that does not go down at rkt's stop is killed after the grace, by the fake clock. */
static void test_sandbox_stop_force(void **state)
{
        fixture *x = *state;
        rkl_error err = RKL_ERROR_INIT;
        char id[RKL_ID_LEN + 1], uuid[RKL_POD_UUID_LEN + 1];
        id_of('3', id);
        uuid_of('5', uuid);

        sandbox_running(x, id, uuid);
        assert_int_equal(rkl_store_pod_stop(x->store, id, &err), 0);
        x->f.pod_stop_ignored = true;
        pass(x);
        int64_t before = x->f.now;
        run_actions(x);
        x->f.pod_stop_ignored = false;
        /* The worker waited (slept) out the 10 s grace, then --force. */
        assert_true(x->f.now >= before + 10 * S);
        assert_calls(x, "stop %s\nstop --force %s", uuid, uuid);
}

/* UpdatePodSandboxResources: the pod's limits go on its unit once, again when they change. */
static void test_sandbox_limits(void **state)
{
        fixture *x = *state;
        rkl_error err = RKL_ERROR_INIT;
        char id[RKL_ID_LEN + 1], uuid[RKL_POD_UUID_LEN + 1];
        id_of('2', id);
        uuid_of('6', uuid);
        _cleanup_free_ char *unit = unit_of(id);

        sandbox_running(x, id, uuid);
        rkl_resources res = {.memory_limit = 64 << 20, .cpu_shares = 512};
        assert_int_equal(rkl_store_pod_set_resources(x->store, id, &res, &err), 0);
        pass(x);
        assert_calls(x, "unit limits %s 67108864", unit);
        pass(x);
        assert_calls(x, "%s", "");
        res.memory_limit = 128 << 20;
        assert_int_equal(rkl_store_pod_set_resources(x->store, id, &res, &err), 0);
        pass(x);
        assert_calls(x, "unit limits %s 134217728", unit);
}

/* A running pod that exits on its own: NOTREADY (PodExited) for kubelet to recreate, and
 * its running container ended with it. */
static void test_sandbox_dies(void **state)
{
        fixture *x = *state;
        char id[RKL_ID_LEN + 1], cid[RKL_ID_LEN + 1], uuid[RKL_POD_UUID_LEN + 1];
        id_of('3', id);
        id_of('4', cid);
        uuid_of('7', uuid);

        sandbox_running(x, id, uuid);
        container_running(x, cid, id, uuid);
        fake_pod *p = pod_find(&x->f, uuid);
        p->state = RKL_POD_STATE_EXITED;
        p->apps[0].state = RKL_POD_APP_EXITED;
        p->apps[0].exit_code = SIGKILL;
        rescan(x);
        _cleanup_(rkl_pod_view_unrefp) rkl_pod_view *v = pod_get(x, id);
        assert_int_equal(v->rec->observed.phase, RKL_POD_PHASE_FAILED);
        assert_string_equal(v->rec->observed.reason, "PodExited");
        _cleanup_(rkl_container_view_unrefp) rkl_container_view *c = container_get(x, cid);
        assert_int_equal(c->rec->observed.phase, RKL_CONTAINER_PHASE_EXITED);
        assert_int_equal(c->rec->observed.exit_code, SIGKILL); /* not a signal rktlet sent */
        assert_string_equal(c->rec->observed.reason, "PodExited");
        assert_calls(x, "%s", "");
}

/* A running pod removed outside rktlet: FAILED (PodGone), its unit stopped (nothing else
 * would end its apps), its container ended; seen again (its unit still stopping), nothing
 * more is done. dir_left: the removal left the directory, held by the pod's processes, and
 * the pod is known for a remnant by its missing manifest (rkt never removes one before the
 * directory). */
static void removed_outside(fixture *x, bool dir_left)
{
        char id[RKL_ID_LEN + 1], cid[RKL_ID_LEN + 1], uuid[RKL_POD_UUID_LEN + 1];
        id_of('5', id);
        id_of('6', cid);
        uuid_of('8', uuid);
        _cleanup_free_ char *unit = unit_of(id);

        sandbox_running(x, id, uuid);
        container_running(x, cid, id, uuid);
        if (dir_left)
                pod_find(&x->f, uuid)->manifest_gone = true;
        else
                pod_remove(&x->f, uuid);
        for (int look = 0; look < 2; look++) {
                rescan(x);
                if (look == 0)
                        assert_calls(x, "unit stop %s", unit);
                else
                        assert_calls(x, "%s", "");
                _cleanup_(rkl_pod_view_unrefp) rkl_pod_view *v = pod_get(x, id);
                assert_int_equal(v->rec->observed.phase, RKL_POD_PHASE_FAILED);
                assert_string_equal(v->rec->observed.reason, "PodGone");
                _cleanup_(rkl_container_view_unrefp) rkl_container_view *c = container_get(x, cid);
                assert_int_equal(c->rec->observed.phase, RKL_CONTAINER_PHASE_EXITED);
                assert_string_equal(c->rec->observed.reason, "PodExited");
        }
}

static void test_sandbox_removed_outside(void **state)
{
        removed_outside(*state, false);
}

static void test_sandbox_emptied_outside(void **state)
{
        removed_outside(*state, true);
}

/* A pod that stays up through rkt's stop and --force: the stop fails, counted on the
 * sandbox, its unit is stopped (which takes the pod down on a node; not this fake's), and it
 * is tried again after the backoff; a later success clears the count. */
static void test_sandbox_stop_fails(void **state)
{
        fixture *x = *state;
        rkl_error err = RKL_ERROR_INIT;
        char id[RKL_ID_LEN + 1], uuid[RKL_POD_UUID_LEN + 1];
        id_of('7', id);
        uuid_of('9', uuid);
        _cleanup_free_ char *unit = unit_of(id);

        sandbox_running(x, id, uuid);
        assert_int_equal(rkl_store_pod_stop(x->store, id, &err), 0);
        x->f.pod_stop_ignored = true;
        pass(x);
        run_actions(x);
        pass(x);
        assert_calls(x, "stop %s\nstop --force %s\nunit stop %s", uuid, uuid, unit);
        _cleanup_(rkl_pod_view_unrefp) rkl_pod_view *v = pod_get(x, id);
        assert_int_equal(v->rec->book.attempts, 1);
        assert_non_null(strstr(v->rec->book.last_error, "did not exit after SIGKILL"));
        assert_int_equal(v->rec->observed.phase, RKL_POD_PHASE_RUNNING);
        x->f.pod_stop_ignored = false;
        x->f.now = v->rec->book.next_retry_ns;
        pass(x);
        run_actions(x);
        pass(x);
        run_actions(x);
        pass(x);
        assert_calls(x, "stop %s\nrm %s", uuid, uuid);
        rkl_pod_view_unref(v);
        v = pod_get(x, id);
        assert_int_equal(v->rec->observed.phase, RKL_POD_PHASE_STOPPED);
        assert_int_equal(v->rec->book.attempts, 0);
        assert_null(v->rec->book.last_error);
}

/* Under churn an add would always come before a leftover app's rm (a pass steps the
 * containers before it reaps): so an add made while the pod holds leftovers owes one of them
 * its removal, and the pod's next add waits for it; a failed rm slows the adds, never stops
 * them. */
static void test_orphan_app_rm_owed(void **state)
{
        fixture *x = *state;
        rkl_error err = RKL_ERROR_INIT;
        char id[RKL_ID_LEN + 1], old[RKL_ID_LEN + 1], c1[RKL_ID_LEN + 1], c2[RKL_ID_LEN + 1];
        char uuid[RKL_POD_UUID_LEN + 1];
        id_of('e', id);
        id_of('f', old);
        id_of('0', c1);
        id_of('1', c2);
        uuid_of('a', uuid);
        _cleanup_free_ char *old_app = app_of(old);
        _cleanup_free_ char *app1 = app_of(c1);
        _cleanup_free_ char *app2 = app_of(c2);

        sandbox_running(x, id, uuid);
        container_create(x, old, id);
        pass(x);
        run_actions(x);
        pass(x);
        assert_calls(x, "app add %s %s", uuid, old_app);
        assert_int_equal(rkl_store_container_delete(x->store, old, &err), 0);
        container_create(x, c1, id);
        pass(x); /* the add comes first, and now owes a removal */
        run_actions(x);
        assert_calls(x, "app add %s %s", uuid, app1);
        x->f.fail[F_APP_RM] = (failure){.n = 1, .code = -EIO};
        container_create(x, c2, id);
        pass(x); /* the next add waits: the rm goes first, and fails */
        run_actions(x);
        assert_calls(x, "app rm %s %s", uuid, old_app);
        pass(x); /* the add is not held up for ever */
        run_actions(x);
        assert_calls(x, "app add %s %s", uuid, app2);
        pass(x);
        run_actions(x);
        assert_calls(x, "%s", ""); /* the failed rm waits for its backoff */
        x->f.now += 1 * S;
        pass(x);
        run_actions(x);
        assert_calls(x, "app rm %s %s", uuid, old_app);
        assert_null(app_find(pod_find(&x->f, uuid), old_app));
}

/* ---- Containers ---- */

static void test_container_start(void **state)
{
        fixture *x = *state;
        char id[RKL_ID_LEN + 1], cid[RKL_ID_LEN + 1], uuid[RKL_POD_UUID_LEN + 1];
        id_of('4', id);
        id_of('5', cid);
        uuid_of('6', uuid);
        _cleanup_free_ char *app = app_of(cid);

        sandbox_running(x, id, uuid);
        container_create(x, cid, id);
        /* Created, not started: added only. */
        pass(x);
        run_actions(x);
        assert_calls(x, "app add %s %s", uuid, app);
        pass(x);
        run_actions(x);
        assert_calls(x, "%s", "");
        assert_int_equal(container_phase(x, cid), RKL_CONTAINER_PHASE_CREATED);
        container_start(x, cid);
        pass(x);
        /* One action per object at a time: nothing more while it runs. */
        pass(x);
        run_actions(x);
        assert_calls(x, "app start %s %s", uuid, app);
        pass(x);
        _cleanup_(rkl_container_view_unrefp) rkl_container_view *c = container_get(x, cid);
        assert_int_equal(c->rec->observed.phase, RKL_CONTAINER_PHASE_RUNNING);
        assert_int_equal(c->rec->observed.started_ns, x->f.now);
        assert_int_equal(c->rec->book.attempts, 0);
}

/* A failed add leaves a half-made app: removed before the next add; a success clears the
 * count. */
static void test_container_undo(void **state)
{
        fixture *x = *state;
        char id[RKL_ID_LEN + 1], cid[RKL_ID_LEN + 1], uuid[RKL_POD_UUID_LEN + 1];
        id_of('6', id);
        id_of('7', cid);
        uuid_of('7', uuid);
        _cleanup_free_ char *app = app_of(cid);

        sandbox_running(x, id, uuid);
        container_create(x, cid, id);
        container_start(x, cid);
        x->f.fail[F_APP_ADD] = (failure){.n = 1, .code = -EIO, .leaves_app = true};
        pass(x);
        run_actions(x);
        pass(x);
        {
                _cleanup_(rkl_container_view_unrefp) rkl_container_view *c = container_get(x, cid);
                assert_int_equal(c->rec->book.attempts, 1);
                x->f.now = c->rec->book.next_retry_ns;
        }
        pass(x);
        run_actions(x);
        pass(x);
        run_actions(x);
        pass(x);
        run_actions(x);
        pass(x);
        assert_calls(x, "app add %s %s\napp rm %s %s\napp add %s %s\napp start %s %s", uuid, app,
                     uuid, app, uuid, app, uuid, app);
        _cleanup_(rkl_container_view_unrefp) rkl_container_view *c = container_get(x, cid);
        assert_int_equal(c->rec->observed.phase, RKL_CONTAINER_PHASE_RUNNING);
        assert_int_equal(c->rec->book.attempts, 0);
        assert_null(c->rec->book.last_error);
}

/* Starts that keep failing: retried with a doubling backoff, and the eighth failure
 * (CONTAINER_MAX_ATTEMPTS) is the last: EXITED, StartError, 128. */
static void test_container_gives_up(void **state)
{
        fixture *x = *state;
        char id[RKL_ID_LEN + 1], cid[RKL_ID_LEN + 1], uuid[RKL_POD_UUID_LEN + 1];
        id_of('8', id);
        id_of('9', cid);
        uuid_of('8', uuid);
        _cleanup_free_ char *app = app_of(cid);

        sandbox_running(x, id, uuid);
        container_create(x, cid, id);
        container_start(x, cid);
        pass(x);
        run_actions(x);
        pass(x);
        assert_calls(x, "app add %s %s", uuid, app);
        x->f.fail[F_APP_START] = (failure){.n = 100, .code = -EIO};
        int64_t backoff = 500 * MS;
        for (unsigned attempt = 1; attempt <= CONTAINER_MAX_ATTEMPTS; attempt++) {
                pass(x); /* app start, or after a failure the undo's rm */
                run_actions(x);
                int64_t wake = pass(x);
                _cleanup_(rkl_container_view_unrefp) rkl_container_view *c = container_get(x, cid);
                if (attempt > 1) {
                        /* Undone, added again, then started. */
                        run_actions(x);
                        pass(x);
                        run_actions(x);
                        wake = pass(x);
                        rkl_container_view_unref(c);
                        c = container_get(x, cid);
                        assert_calls(x, "app rm %s %s\napp add %s %s\napp start %s %s", uuid, app,
                                     uuid, app, uuid, app);
                } else
                        assert_calls(x, "app start %s %s", uuid, app);
                assert_int_equal(c->rec->book.attempts, attempt);
                assert_int_equal(c->rec->book.next_retry_ns, x->f.now + backoff);
                if (attempt < CONTAINER_MAX_ATTEMPTS) {
                        assert_int_equal(c->rec->observed.phase, RKL_CONTAINER_PHASE_CREATED);
                        assert_int_equal(wake, x->f.now + backoff);
                        x->f.now += backoff - 1;
                        pass(x);
                        run_actions(x);
                        assert_calls(x, "%s", "");
                        x->f.now += 1;
                } else {
                        assert_int_equal(c->rec->observed.phase, RKL_CONTAINER_PHASE_EXITED);
                        assert_string_equal(c->rec->observed.reason, "StartError");
                        assert_int_equal(c->rec->observed.exit_code, 128);
                        assert_non_null(strstr(c->rec->observed.message, "gave up after 8"));
                }
                backoff = backoff * 2 < 60 * S ? backoff * 2 : 60 * S;
        }
        x->f.now += 10 * 60 * S;
        rescan(x);
        run_actions(x);
        assert_calls(x, "%s", "");
}

/* StopContainer: app stop, then exited with 143 (a SIGTERM rktlet sent). */
static void test_container_stop(void **state)
{
        fixture *x = *state;
        rkl_error err = RKL_ERROR_INIT;
        char id[RKL_ID_LEN + 1], cid[RKL_ID_LEN + 1], uuid[RKL_POD_UUID_LEN + 1];
        id_of('a', id);
        id_of('b', cid);
        uuid_of('a', uuid);
        _cleanup_free_ char *app = app_of(cid);

        sandbox_running(x, id, uuid);
        container_running(x, cid, id, uuid);
        assert_int_equal(rkl_store_container_stop(x->store, cid, x->f.now + 30 * S, &err), 0);
        pass(x);
        run_actions(x);
        assert_calls(x, "app stop %s %s", uuid, app);
        pass(x);
        _cleanup_(rkl_container_view_unrefp) rkl_container_view *c = container_get(x, cid);
        assert_int_equal(c->rec->observed.phase, RKL_CONTAINER_PHASE_EXITED);
        assert_int_equal(c->rec->observed.exit_code, 128 + SIGTERM);
}

/* A container stopped before its start was carried out never runs: EXITED, NotStarted. */
static void test_container_stopped_before_start(void **state)
{
        fixture *x = *state;
        rkl_error err = RKL_ERROR_INIT;
        char id[RKL_ID_LEN + 1], cid[RKL_ID_LEN + 1], uuid[RKL_POD_UUID_LEN + 1];
        id_of('c', id);
        id_of('d', cid);
        uuid_of('b', uuid);

        sandbox_running(x, id, uuid);
        container_create(x, cid, id);
        container_start(x, cid);
        assert_int_equal(rkl_store_container_stop(x->store, cid, x->f.now + S, &err), 0);
        pass(x);
        assert_calls(x, "%s", "");
        _cleanup_(rkl_container_view_unrefp) rkl_container_view *c = container_get(x, cid);
        assert_int_equal(c->rec->observed.phase, RKL_CONTAINER_PHASE_EXITED);
        assert_string_equal(c->rec->observed.reason, "NotStarted");
}

/* ---- The exit hold ---- */

/* An app's exit waits for its output (rkt's writer has not made its file yet), at most
 * EXIT_HOLD_NS from the exit; the fake clock lets the hold run out. */
static void test_exit_hold_expires(void **state)
{
        fixture *x = *state;
        char id[RKL_ID_LEN + 1], cid[RKL_ID_LEN + 1], uuid[RKL_POD_UUID_LEN + 1];
        id_of('e', id);
        id_of('f', cid);
        uuid_of('c', uuid);
        _cleanup_free_ char *app = app_of(cid);

        sandbox_running(x, id, uuid);
        container_running(x, cid, id, uuid);
        fake_app *a = app_find(pod_find(&x->f, uuid), app);
        a->state = RKL_POD_APP_EXITED;
        a->exit_code = 3;
        a->finished_ns = x->f.now;
        int64_t wake = rescan(x);
        /* Held: still running, and looked at again soon. */
        assert_int_equal(container_phase(x, cid), RKL_CONTAINER_PHASE_RUNNING);
        assert_int_equal(wake, x->f.now + 20 * MS);
        x->f.now += EXIT_HOLD_NS - 1;
        pass(x);
        assert_int_equal(container_phase(x, cid), RKL_CONTAINER_PHASE_RUNNING);
        x->f.now += 1;
        pass(x);
        _cleanup_(rkl_container_view_unrefp) rkl_container_view *c = container_get(x, cid);
        assert_int_equal(c->rec->observed.phase, RKL_CONTAINER_PHASE_EXITED);
        assert_int_equal(c->rec->observed.exit_code, 3);
        assert_int_equal(c->rec->observed.finished_ns, a->finished_ns);
}

/* A stopped sandbox's pod is removed only once its containers' exits are written: rkt's rm
 * would take a held exit along, and the container would be left running in the store. */
static void test_stop_waits_for_held_exit(void **state)
{
        fixture *x = *state;
        rkl_error err = RKL_ERROR_INIT;
        char id[RKL_ID_LEN + 1], cid[RKL_ID_LEN + 1], uuid[RKL_POD_UUID_LEN + 1];
        id_of('7', id);
        id_of('8', cid);
        uuid_of('e', uuid);

        sandbox_running(x, id, uuid);
        container_running(x, cid, id, uuid);
        assert_int_equal(rkl_store_pod_stop(x->store, id, &err), 0);
        pass(x);
        run_actions(x);
        assert_calls(x, "stop %s", uuid);
        pass(x); /* the pod exited; the container's exit is held for its log */
        assert_int_equal(container_phase(x, cid), RKL_CONTAINER_PHASE_RUNNING);
        run_actions(x);
        assert_calls(x, "%s", ""); /* no rm while it is */
        x->f.now += EXIT_HOLD_NS;
        pass(x);
        assert_int_equal(container_phase(x, cid), RKL_CONTAINER_PHASE_EXITED);
        pass(x);
        run_actions(x);
        assert_calls(x, "rm %s", uuid);
}

/* With rkt's output file there and its writer gone, the exit waits for the follower only:
 * it is handed the container to finish, and the hold holds until it has. */
static void test_exit_hold_output(void **state)
{
        fixture *x = *state;
        char id[RKL_ID_LEN + 1], cid[RKL_ID_LEN + 1], uuid[RKL_POD_UUID_LEN + 1];
        id_of('0', id);
        id_of('1', cid);
        uuid_of('d', uuid);
        _cleanup_free_ char *app = app_of(cid);

        sandbox_running(x, id, uuid);
        container_running(x, cid, id, uuid);
        _cleanup_free_ char *source = rkl_logs_source_path(x->state, id, app);
        _cleanup_free_ char *dir = rkl_xasprintf("%s/pods/%s/logs", x->state, id);
        assert_int_equal(rkl_mkdir_p(dir, 0700), 0);
        assert_int_equal(rkl_write_file_atomic_at(AT_FDCWD, source, "", 0, 0644), 0);
        fake_app *a = app_find(pod_find(&x->f, uuid), app);
        a->state = RKL_POD_APP_EXITED;
        a->exit_code = 0;
        a->finished_ns = x->f.now;
        rescan(x);
        /* The follower may or may not have finished already; either way the exit is
         * recorded once it has, and before the hold runs out. */
        for (int i = 0; i < 1000000 && container_phase(x, cid) != RKL_CONTAINER_PHASE_EXITED; i++) {
                sched_yield(); /* the follower's turn: no sleep, no clock */
                pass(x);
        }
        assert_int_equal(container_phase(x, cid), RKL_CONTAINER_PHASE_EXITED);
        assert_true(rkl_logs_finished(x->logs, cid));
}

/* ---- Pod networking (CNI) ---- */

/* The network is added once the pod's namespace exists, before the sandbox counts as
 * running, and its address becomes the sandbox's; on stop it is deleted after the pod went
 * down and before rkt removes the pod (and its namespace). */
static void test_cni_add_and_del(void **state)
{
        fixture *x = *state;
        rkl_error err = RKL_ERROR_INIT;
        char id[RKL_ID_LEN + 1], uuid[RKL_POD_UUID_LEN + 1];
        id_of('a', id);
        uuid_of('b', uuid);
        _cleanup_free_ char *unit = unit_of(id);

        sandbox_create(x, id);
        pass(x);
        assert_calls(x, "unit start %s", unit);
        fake_pod *p = pod_appears(x, uuid, id, true);
        rescan(x); /* ready, but no namespace yet: pending */
        assert_int_equal(pod_phase(x, id), RKL_POD_PHASE_PENDING);
        p->netns = true;
        rescan(x);
        run_actions(x);
        assert_calls(x, "cni add aaaaaaaa /var/run/netns/rkt-%s", uuid);
        assert_int_equal(pod_phase(x, id), RKL_POD_PHASE_PENDING);
        rescan(x);
        {
                _cleanup_(rkl_pod_view_unrefp) rkl_pod_view *v = pod_get(x, id);
                assert_int_equal(v->rec->observed.phase, RKL_POD_PHASE_RUNNING);
                assert_string_equal(v->rec->observed.ip, "10.22.0.5");
        }
        /* Added once. */
        rescan(x);
        run_actions(x);
        assert_calls(x, "%s", "");

        assert_int_equal(rkl_store_pod_stop(x->store, id, &err), 0);
        pass(x);
        run_actions(x);
        assert_calls(x, "stop %s", uuid);
        pass(x); /* the pod is down: DEL first, rm waits for it */
        run_actions(x);
        assert_calls(x, "cni del aaaaaaaa");
        pass(x);
        run_actions(x);
        assert_calls(x, "rm %s", uuid);
        pass(x);
        _cleanup_(rkl_pod_view_unrefp) rkl_pod_view *v = pod_get(x, id);
        assert_int_equal(v->rec->observed.phase, RKL_POD_PHASE_STOPPED);
        assert_null(v->rec->observed.ip);
}

/* A failed ADD is undone by a DEL at once and fails the creation attempt ("network: ..."):
 * its unit stopped, its pod a leftover. */
static void test_cni_add_fails(void **state)
{
        fixture *x = *state;
        char id[RKL_ID_LEN + 1], uuid[RKL_POD_UUID_LEN + 1];
        id_of('b', id);
        uuid_of('c', uuid);
        _cleanup_free_ char *unit = unit_of(id);

        x->f.fail[F_CNI_ADD] = (failure){.n = 1, .code = -EIO};
        sandbox_create(x, id);
        pass(x);
        pod_appears(x, uuid, id, true)->netns = true;
        rescan(x);
        run_actions(x);
        pass(x);
        run_actions(x); /* the leftover pod of the failed attempt */
        assert_calls(x,
                     "unit start %s\ncni add bbbbbbbb /var/run/netns/rkt-%s\n"
                     "cni del bbbbbbbb (no result)\nunit stop %s\nstop --force %s",
                     unit, uuid, unit, uuid);
        _cleanup_(rkl_pod_view_unrefp) rkl_pod_view *v = pod_get(x, id);
        assert_int_equal(v->rec->book.attempts, 1);
        assert_non_null(strstr(v->rec->book.last_error, "network: ADD"));
        assert_null(v->rec->rkt_uuid);
        assert_int_equal(v->rec->observed.phase, RKL_POD_PHASE_PENDING);
}

/* Without a usable configuration no pod is booted: the attempt fails saying why. A
 * host-network sandbox needs none. */
static void test_cni_no_config(void **state)
{
        fixture *x = *state;
        rkl_error err = RKL_ERROR_INIT;
        char id[RKL_ID_LEN + 1], host[RKL_ID_LEN + 1];
        id_of('c', id);
        id_of('d', host);
        _cleanup_free_ char *unit = unit_of(host);
        _cleanup_free_ char *conf = rkl_xasprintf("%s/10-test.conflist", x->options.cni_conf_dir);
        assert_int_equal(unlink(conf), 0);
        /* A new reconciler reads the (now empty) directory at its first pass. */
        restart(x);

        sandbox_create(x, id);
        rkl_pod_spec p = {0};
        p.name = rkl_xstrdup("host");
        p.uid = rkl_xstrdup("uid");
        p.namespace = rkl_xstrdup("default");
        p.host_network = true;
        assert_int_equal(rkl_store_pod_create(x->store, host, &p, &err), 0);
        rkl_pod_spec_done(&p);
        pass(x);
        assert_calls(x, "unit start %s", unit);
        _cleanup_(rkl_pod_view_unrefp) rkl_pod_view *v = pod_get(x, id);
        assert_int_equal(v->rec->book.attempts, 1);
        assert_non_null(strstr(v->rec->book.last_error, "network: "));
        assert_null(v->rec->unit_name);
}

/* After a restart, each running sandbox's network is CHECKed once; a failed CHECK is told,
 * not acted on. A DEL that fails is retried after a backoff. */
static void test_cni_check_and_del_retry(void **state)
{
        fixture *x = *state;
        rkl_error err = RKL_ERROR_INIT;
        char id[RKL_ID_LEN + 1], uuid[RKL_POD_UUID_LEN + 1];
        id_of('e', id);
        uuid_of('d', uuid);

        sandbox_create(x, id);
        pass(x);
        pod_appears(x, uuid, id, true)->netns = true;
        rescan(x);
        run_actions(x);
        rescan(x);
        assert_int_equal(pod_phase(x, id), RKL_POD_PHASE_RUNNING);
        calls_forget(x);

        restart(x);
        x->f.fail[F_CNI_CHECK] = (failure){.n = 1, .code = -EIO};
        rescan(x);
        run_actions(x);
        rescan(x);
        run_actions(x);
        assert_calls(x, "cni check eeeeeeee");
        assert_int_equal(pod_phase(x, id), RKL_POD_PHASE_RUNNING);
        {
                /* Recorded with the sandbox's network. */
                rkl_pod_network **l = NULL;
                size_t n = 0;
                assert_int_equal(rkl_db_pod_network_list(rkl_store_db(x->store), &l, &n, &err), 0);
                assert_int_equal(n, 1);
                assert_non_null(l[0]->check_error);
                assert_non_null(strstr(l[0]->check_error, "CHECK"));
                l = rkl_pod_network_array_free(l, n);
        }

        assert_int_equal(rkl_store_pod_stop(x->store, id, &err), 0);
        x->f.fail[F_CNI_DEL] = (failure){.n = 1, .code = -EIO};
        pass(x);
        run_actions(x);
        pass(x);
        run_actions(x);
        assert_calls(x, "stop %s\ncni del eeeeeeee", uuid);
        int64_t retry = pass(x); /* the DEL's failure applied: again after a backoff */
        assert_int_equal(retry, x->f.now + 1000 * MS);
        run_actions(x);
        assert_calls(x, "%s", "");
        x->f.now = retry;
        pass(x);
        run_actions(x);
        pass(x);
        run_actions(x);
        assert_calls(x, "cni del eeeeeeee\nrm %s", uuid);
}

/* ---- Apps' processes and cgroups ---- */

#define SUPERVISOR 4194305 /* above any pid_max: no such process */
#define APP_PID    "4194306"

/* An app's cgroup, as its pod's systemd makes it: its processes listed, and the control
 * files the limits go to. */
static char *app_cgroup(fixture *x, const char *app, const char *procs)
{
        char *dir = rkl_xasprintf("%s/%s", x->f.cgroups, app);
        assert_int_equal(rkl_mkdir_p(dir, 0755), 0);
        static const char *const files[] = {"memory.max", "memory.swap.max", "cpu.weight",
                                            "cpu.max"};
        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                _cleanup_free_ char *p = rkl_xasprintf("%s/%s", dir, files[i]);
                assert_int_equal(rkl_write_file_atomic_at(AT_FDCWD, p, "", 0, 0644), 0);
        }
        _cleanup_free_ char *p = rkl_xasprintf("%s/cgroup.procs", dir);
        assert_int_equal(rkl_write_file_atomic_at(AT_FDCWD, p, procs, strlen(procs), 0644), 0);
        return dir;
}

static char *file_text(const char *dir, const char *file)
{
        _cleanup_free_ char *p = rkl_xasprintf("%s/%s", dir, file);
        char *text = NULL;
        assert_int_equal(rkl_read_file_at(AT_FDCWD, p, 4096, &text, NULL), 0);
        return text;
}

/* rkt's iottymux, the writer of an app's output, ends after its app. Gone while the app's
 * process is there, the daemon says so; gone with the app, whose exit rkt has not recorded
 * yet (the container still running in rkt's files), nothing is said. */
static void test_writer_gone_before_its_app(void **state)
{
        fixture *x = *state;
        char id[RKL_ID_LEN + 1], uuid[RKL_POD_UUID_LEN + 1], cids[2][RKL_ID_LEN + 1];
        id_of('5', id);
        uuid_of('f', uuid);
        sandbox_running(x, id, uuid);
        pod_find(&x->f, uuid)->ppid = SUPERVISOR;
        char *cgroups[2], *iomux[2];
        for (int i = 0; i < 2; i++) {
                id_of('6' + i, cids[i]);
                _cleanup_free_ char *app = app_of(cids[i]);
                cgroups[i] = app_cgroup(x, app, APP_PID "\n");
                _cleanup_free_ char *unit = rkl_xasprintf("system-iomux.slice/iomux@%s", app);
                iomux[i] = app_cgroup(x, unit, "4194307\n");
                _cleanup_free_ char *dir = rkl_xasprintf(
                    "%s/pods/run/%s/stage1/rootfs/rkt/iottymux/%s", x->rkt_dir, uuid, app);
                assert_int_equal(rkl_mkdir_p(dir, 0755), 0);
                container_running(x, cids[i], id, uuid);
        }
        /* The first's app exits, and its writer with it; the second's writer is killed. */
        for (int i = 0; i < 2; i++) {
                _cleanup_free_ char *procs = rkl_xasprintf("%s/cgroup.procs", iomux[i]);
                assert_int_equal(rkl_write_file_atomic_at(AT_FDCWD, procs, "", 0, 0644), 0);
        }
        _cleanup_free_ char *procs = rkl_xasprintf("%s/cgroup.procs", cgroups[0]);
        assert_int_equal(rkl_write_file_atomic_at(AT_FDCWD, procs, "", 0, 0644), 0);
        rescan(x);
        assert_true(rkl_logs_writer_gone(x->logs, cids[0]));  /* not said before */
        assert_false(rkl_logs_writer_gone(x->logs, cids[1])); /* said */
        for (int i = 0; i < 2; i++) {
                free(cgroups[i]);
                free(iomux[i]);
        }
}

/* rkt marks an app started before its process exists: the container is running only once
 * its cgroup holds a process, and then its limits are written there, once per change. */
static void test_container_process_and_limits(void **state)
{
        fixture *x = *state;
        rkl_error err = RKL_ERROR_INIT;
        char id[RKL_ID_LEN + 1], cid[RKL_ID_LEN + 1], uuid[RKL_POD_UUID_LEN + 1];
        id_of('1', id);
        id_of('2', cid);
        uuid_of('e', uuid);
        _cleanup_free_ char *app = app_of(cid);

        sandbox_running(x, id, uuid);
        pod_find(&x->f, uuid)->ppid = SUPERVISOR;
        _cleanup_free_ char *cg = app_cgroup(x, app, "");
        container_create(x, cid, id);
        container_start(x, cid);
        pass(x);
        run_actions(x);
        pass(x);
        run_actions(x);
        int64_t wake = pass(x);
        assert_calls(x, "app add %s %s\napp start %s %s", uuid, app, uuid, app);
        /* Started by rkt, no process yet: still created, and looked at again soon. */
        assert_int_equal(container_phase(x, cid), RKL_CONTAINER_PHASE_CREATED);
        assert_int_equal(wake, x->f.now + 20 * MS);
        _cleanup_free_ char *procs = rkl_xasprintf("%s/cgroup.procs", cg);
        assert_int_equal(
            rkl_write_file_atomic_at(AT_FDCWD, procs, APP_PID "\n", strlen(APP_PID "\n"), 0644), 0);
        x->f.now = wake;
        pass(x);
        {
                _cleanup_(rkl_container_view_unrefp) rkl_container_view *c = container_get(x, cid);
                assert_int_equal(c->rec->observed.phase, RKL_CONTAINER_PHASE_RUNNING);
                assert_int_equal(c->rec->observed.pid, 4194306);
        }
        /* UpdateContainerResources: written into its cgroup (cgroup2's names). */
        rkl_resources res = {.memory_limit = 64 << 20, .cpu_shares = 1024};
        assert_int_equal(rkl_store_container_set_resources(x->store, cid, &res, &err), 0);
        rescan(x);
        _cleanup_free_ char *max = file_text(cg, "memory.max");
        _cleanup_free_ char *weight = file_text(cg, "cpu.weight");
        assert_string_equal(max, "67108864");
        assert_string_equal(weight, "39");
        assert_calls(x, "%s", "");
}

/* A SIGKILLed app whose memory cgroup counted an OOM kill exited OOMKilled, 137, and stays
 * so once its cgroup is gone (a later pass once turned it back into a bare exit 9). */
static void test_container_oom_killed(void **state)
{
        fixture *x = *state;
        char id[RKL_ID_LEN + 1], cid[RKL_ID_LEN + 1], uuid[RKL_POD_UUID_LEN + 1];
        id_of('3', id);
        id_of('4', cid);
        uuid_of('f', uuid);
        _cleanup_free_ char *app = app_of(cid);

        sandbox_running(x, id, uuid);
        pod_find(&x->f, uuid)->ppid = SUPERVISOR;
        _cleanup_free_ char *cg = app_cgroup(x, app, APP_PID "\n");
        container_running(x, cid, id, uuid);
        _cleanup_free_ char *events = rkl_xasprintf("%s/memory.events", cg);
        const char *text = "low 0\nhigh 0\nmax 7\noom 1\noom_kill 1\n";
        assert_int_equal(rkl_write_file_atomic_at(AT_FDCWD, events, text, strlen(text), 0644), 0);
        fake_app *a = app_find(pod_find(&x->f, uuid), app);
        a->state = RKL_POD_APP_EXITED;
        a->exit_code = SIGKILL;
        a->finished_ns = x->f.now;
        rescan(x);
        {
                _cleanup_(rkl_container_view_unrefp) rkl_container_view *c = container_get(x, cid);
                assert_int_equal(c->rec->observed.phase, RKL_CONTAINER_PHASE_EXITED);
                assert_int_equal(c->rec->observed.exit_code, 137);
                assert_string_equal(c->rec->observed.reason, "OOMKilled");
        }
        assert_int_equal(rkl_rm_rf_at(AT_FDCWD, cg), 0);
        rescan(x);
        _cleanup_(rkl_container_view_unrefp) rkl_container_view *c = container_get(x, cid);
        assert_int_equal(c->rec->observed.exit_code, 137);
        assert_string_equal(c->rec->observed.reason, "OOMKilled");
}

/* ---- Adoption and orphans ---- */

/* The daemon restarted: a pod found running for a record whose UUID was never written
 * (a crash after the unit's start) is adopted, its running app too, with no rkt command. */
static void test_adopt_at_start(void **state)
{
        fixture *x = *state;
        rkl_error err = RKL_ERROR_INIT;
        char id[RKL_ID_LEN + 1], cid[RKL_ID_LEN + 1], uuid[RKL_POD_UUID_LEN + 1];
        id_of('5', id);
        id_of('6', cid);
        uuid_of('e', uuid);
        _cleanup_free_ char *unit = unit_of(id);
        _cleanup_free_ char *app = app_of(cid);

        sandbox_create(x, id);
        assert_int_equal(rkl_store_pod_set_unit_name(x->store, id, unit, &err), 0);
        container_create(x, cid, id);
        container_start(x, cid);
        fake_pod *p = pod_appears(x, uuid, id, true);
        p->apps[p->n_apps++] = (fake_app){.state = RKL_POD_APP_RUNNING, .started_ns = x->f.now};
        (void)snprintf(p->apps[0].name, sizeof(p->apps[0].name), "%s", app);
        (void)snprintf(p->apps[0].cid, sizeof(p->apps[0].cid), "%s", cid);
        x->f.units[x->f.n_units++] = (fake_unit){.active = RKL_UNIT_ACTIVE};
        (void)snprintf(x->f.units[0].name, sizeof(x->f.units[0].name), "%s", unit);

        /* A new reconciler over the same store: the daemon's start. */
        restart(x);
        rescan(x);
        run_actions(x);
        assert_calls(x, "%s", "");
        _cleanup_(rkl_pod_view_unrefp) rkl_pod_view *v = pod_get(x, id);
        assert_string_equal(v->rec->rkt_uuid, uuid);
        assert_int_equal(v->rec->observed.phase, RKL_POD_PHASE_RUNNING);
        assert_int_equal(container_phase(x, cid), RKL_CONTAINER_PHASE_RUNNING);
}

/* A pod of an earlier attempt (made before the current attempt began) is not adopted. */
static void test_no_adopt_earlier_attempt(void **state)
{
        fixture *x = *state;
        char id[RKL_ID_LEN + 1], uuid[RKL_POD_UUID_LEN + 1];
        id_of('7', id);
        uuid_of('f', uuid);

        sandbox_create(x, id);
        fake_pod *p = pod_appears(x, uuid, id, true);
        p->created_ns = x->f.now - 60 * S;
        x->f.fail[F_UNIT_START] = (failure){.n = 1, .code = -EIO};
        pass(x); /* a failed attempt: the next begins after its backoff */
        _cleanup_(rkl_pod_view_unrefp) rkl_pod_view *v = pod_get(x, id);
        x->f.now = v->rec->book.next_retry_ns;
        p->created_ns = x->f.now - 1;
        rescan(x);
        run_actions(x);
        rkl_pod_view_unref(v);
        v = pod_get(x, id);
        assert_null(v->rec->rkt_uuid);
        _cleanup_free_ char *unit = unit_of(id);
        assert_calls(x, "unit start %s\nunit start %s\nstop --force %s", unit, unit, uuid);
}

/* Pods, apps and units that carry rktlet's marks but that no record wants are removed: a
 * running pod stopped (with its unit), an exited one removed with its state directory. A
 * pod whose preparation died before its manifest (the mark) was written is removed too;
 * one still being prepared, or another's, is left alone. */
static void test_orphan_pods(void **state)
{
        fixture *x = *state;
        char gone[RKL_ID_LEN + 1], gone2[RKL_ID_LEN + 1];
        char u1[RKL_POD_UUID_LEN + 1], u2[RKL_POD_UUID_LEN + 1], u3[RKL_POD_UUID_LEN + 1];
        char u4[RKL_POD_UUID_LEN + 1], u5[RKL_POD_UUID_LEN + 1];
        id_of('8', gone);
        id_of('9', gone2);
        uuid_of('1', u1);
        uuid_of('2', u2);
        uuid_of('3', u3);
        uuid_of('4', u4);
        uuid_of('5', u5);
        _cleanup_free_ char *unit = unit_of(gone);
        _cleanup_free_ char *dir = rkl_xasprintf("%s/pods/%s", x->state, gone2);
        assert_int_equal(rkl_mkdir_p(dir, 0700), 0);

        pod_appears(x, u1, gone, true);
        pod_appears(x, u2, gone2, true)->state = RKL_POD_STATE_EXITED;
        pod_appears(x, u3, "", true); /* not rktlet's: left alone */
        pod_appears(x, u4, "", false)->state = RKL_POD_STATE_ABORTED_PREPARE;
        pod_appears(x, u5, "", false)->state = RKL_POD_STATE_PREPARING;
        rescan(x);
        assert_calls(x, "unit stop %s", unit);
        assert_int_equal(access(dir, F_OK), -1); /* the exited one's state went at once */
        run_actions(x);
        /* In no particular order: they are independent. */
        assert_calls_sorted(x, "rm %s\nrm %s\nstop --force %s", u2, u4, u1);
        rescan(x);
        run_actions(x);
        assert_calls(x, "rm %s", u1);
        rescan(x);
        run_actions(x);
        assert_calls(x, "%s", "");
        assert_int_equal(x->f.n_pods, 2);
        assert_non_null(pod_find(&x->f, u3));
        assert_non_null(pod_find(&x->f, u5));
}

/* A leftover pod whose rm fails is tried again after the backoff (1 s, then 2 s), not at
 * every pass, until its rm works. */
static void test_orphan_rm_backs_off(void **state)
{
        fixture *x = *state;
        char gone[RKL_ID_LEN + 1], uuid[RKL_POD_UUID_LEN + 1];
        id_of('8', gone);
        uuid_of('6', uuid);

        pod_appears(x, uuid, gone, true)->state = RKL_POD_STATE_EXITED;
        x->f.fail[F_POD_RM] = (failure){.n = 2, .code = -EIO};
        rescan(x);
        run_actions(x);
        assert_calls(x, "rm %s", uuid);
        rescan(x); /* takes the failure in: again in 1 s */
        run_actions(x);
        assert_calls(x, "%s", "");
        x->f.now += 1 * S;
        rescan(x);
        run_actions(x);
        assert_calls(x, "rm %s", uuid);
        rescan(x); /* the second failure: again in 2 s */
        run_actions(x);
        x->f.now += 1 * S;
        rescan(x);
        run_actions(x);
        assert_calls(x, "%s", "");
        x->f.now += 1 * S;
        rescan(x);
        run_actions(x);
        assert_calls(x, "rm %s", uuid);
        assert_null(pod_find(&x->f, uuid));
        rescan(x);
        run_actions(x);
        assert_calls(x, "%s", "");
}

/* Apps of removed containers in a running pod: a running one stopped, then removed; the
 * sandbox's own container is left alone. */
static void test_orphan_apps(void **state)
{
        fixture *x = *state;
        rkl_error err = RKL_ERROR_INIT;
        char id[RKL_ID_LEN + 1], cid[RKL_ID_LEN + 1], keep[RKL_ID_LEN + 1];
        char uuid[RKL_POD_UUID_LEN + 1];
        id_of('a', id);
        id_of('b', cid);
        id_of('c', keep);
        uuid_of('4', uuid);
        _cleanup_free_ char *app = app_of(cid);

        sandbox_running(x, id, uuid);
        container_running(x, cid, id, uuid);
        container_running(x, keep, id, uuid);
        assert_int_equal(rkl_store_container_delete(x->store, cid, &err), 0);
        pass(x);
        run_actions(x);
        assert_calls(x, "app stop %s %s", uuid, app);
        pass(x);
        run_actions(x);
        assert_calls(x, "app rm %s %s", uuid, app);
        pass(x);
        run_actions(x);
        assert_calls(x, "%s", "");
        assert_int_equal(pod_find(&x->f, uuid)->n_apps, 1);
}

/* Units of rktlet's that no record names go at the rescan. */
static void test_orphan_units(void **state)
{
        fixture *x = *state;
        char id[RKL_ID_LEN + 1];
        id_of('d', id);
        _cleanup_free_ char *unit = unit_of(id);
        x->f.units[x->f.n_units++] = (fake_unit){.active = RKL_UNIT_ACTIVE};
        (void)snprintf(x->f.units[0].name, sizeof(x->f.units[0].name), "%s", unit);
        x->f.units[x->f.n_units++] = (fake_unit){.active = RKL_UNIT_ACTIVE};
        (void)snprintf(x->f.units[1].name, sizeof(x->f.units[1].name), "%s", "sshd.service");
        pass(x);
        assert_calls(x, "%s", ""); /* only at a rescan */
        rescan(x);
        assert_calls(x, "unit stop %s", unit);
        assert_int_equal(x->f.n_units, 1);
}

/* ---- Kicks, passes, checkpoints ---- */

/* What metrics and STATUS= read: passes counted, no lag once a pass has begun after the last
 * kick, no action in flight when none runs. A checkpoint the API's connections ask for
 * (their WAL grew) is made by the next pass: the database file takes the WAL's pages. */
static void test_stats_and_checkpoint(void **state)
{
        fixture *x = *state;
        rkl_reconciler_stats st;
        struct stat before, after;

        rkl_reconciler_get_stats(x->r, &st);
        assert_int_equal(st.passes, 0);
        rkl_reconciler_kick(x->r);
        pass(x);
        rkl_reconciler_get_stats(x->r, &st);
        assert_int_equal(st.passes, 1);
        assert_int_equal(st.lag_usec, 0);
        assert_int_equal(st.in_flight, 0);

        for (char c = 'a'; c <= 'f'; c++) {
                char id[RKL_ID_LEN + 1];
                id_of(c, id);
                x->f.connected = false; /* recorded, not started */
                sandbox_create(x, id);
        }
        pass(x);
        assert_int_equal(stat(x->db_path, &before), 0);
        rkl_reconciler_checkpoint_wanted(x->r);
        pass(x);
        assert_int_equal(stat(x->db_path, &after), 0);
        assert_true(after.st_size > before.st_size ||
                    after.st_mtim.tv_sec != before.st_mtim.tv_sec ||
                    after.st_mtim.tv_nsec != before.st_mtim.tv_nsec);
        rkl_reconciler_get_stats(x->r, &st);
        assert_int_equal(st.passes, 3);
}

/* ---- The probe ---- */

/* The first pass probes rkt and systemd for Status, as the thread does before it: what
 * each says, and why one is not usable. */
static void test_probe(void **state)
{
        fixture *x = *state;
        rkl_health h = {0};

        x->f.connected = false;
        pass(x);
        rkl_cache_get_health(x->cache, &h);
        assert_true(h.rkt_ok);
        assert_string_equal(h.rkt_version, "1.30.0");
        /* The build record that would say which fixes it carries is not there. */
        assert_false(h.rkt_patched);
        assert_non_null(h.rkt_patches);
        assert_false(h.systemd_ok);
        assert_non_null(strstr(h.systemd_detail, "test double"));
        assert_true(h.net_ok); /* rkt's own network: nothing to configure */
        assert_true(h.probed_ns > 0);
        rkl_health_done(&h);

        /* Probed again by a new reconciler (the daemon's start), with systemd there. */
        x->f.connected = true;
        restart(x);
        pass(x);
        rkl_cache_get_health(x->cache, &h);
        assert_true(h.systemd_ok);
        assert_string_equal(h.systemd_version, "252 (a test double)");
        rkl_health_done(&h);
}

/* Pod networking's health: the configuration in use, or why there is none. */
static void test_probe_network(void **state)
{
        fixture *x = *state;
        rkl_health h = {0};
        pass(x);
        rkl_cache_get_health(x->cache, &h);
        assert_true(h.net_ok);
        assert_non_null(strstr(h.net_config, "10-test.conflist"));
        rkl_health_done(&h);
}

/* A configuration directory that cannot be watched is read again at every probe, and a
 * health already probed (a daemon's second reconciler, or the probe's own refresh) does not
 * make that read ask for the health again, which recursed until the stack ran out. */
static void test_probe_network_unwatched(void **state)
{
        fixture *x = *state;
        rkl_health h = {0};
        pass(x); /* probed once */

        _cleanup_free_ char *file = rkl_xasprintf("%s/not-a-dir", x->dir);
        assert_int_equal(rkl_write_file_atomic_at(AT_FDCWD, file, "", 0, 0644), 0);
        free(x->options.cni_conf_dir);
        x->options.cni_conf_dir = rkl_xasprintf("%s/cni", file); /* no watch can be set there */
        x->r = rkl_reconciler_free(x->r);                        /* its health kept */
        reconciler_open(x);
        pass(x);
        rkl_cache_get_health(x->cache, &h);
        assert_false(h.net_ok);
        assert_string_equal(h.net_reason, "NetworkPluginNotReady");
        rkl_health_done(&h);
}

/* ---- The real table ---- */

/* With no ops given, the reconciler uses the real table: with no connection to systemd (the
 * thread's probe makes it; none ran) a sandbox waits, nothing is started, and the pass asks
 * to come back. Nothing here runs rkt or touches a bus. */
static void test_real_ops_without_systemd(void **state)
{
        fixture *x = *state;
        rkl_error err = RKL_ERROR_INIT;
        char id[RKL_ID_LEN + 1];
        id_of('4', id);

        x->r = rkl_reconciler_free(x->r);
        /* No rkt to run, and a bus address nothing listens on: the probe runs no process and
         * reaches no manager. */
        _cleanup_free_ char *bus = rkl_xasprintf("unix:path=%s/no-bus", x->dir);
        x->options.rkt_path = NULL;
        x->options.systemd_bus = bus;
        rkl_reconciler_config rc = {.config = &x->options, .db_path = x->db_path};
        assert_int_equal(rkl_reconciler_new(&rc, x->cache, &x->r, &err), 0);
        sandbox_create(x, id);
        int64_t wake = 0;
        rkl_reconciler_run_pass(x->r, true, &wake);
        assert_true(wake > 0);
        _cleanup_(rkl_pod_view_unrefp) rkl_pod_view *v = pod_get(x, id);
        assert_null(v->rec->unit_name);
        assert_int_equal(v->rec->book.attempts, 0);
        assert_null(x->f.calls); /* the fake was not asked */
        rkl_health h = {0};
        rkl_cache_get_health(x->cache, &h);
        assert_false(h.rkt_ok);
        assert_non_null(strstr(h.rkt_detail, "no rkt binary"));
        assert_false(h.systemd_ok);
        assert_non_null(strstr(h.systemd_detail, "no-bus"));
        rkl_health_done(&h);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(test_sandbox_start, setup, teardown),
            cmocka_unit_test_setup_teardown(test_sandbox_uuid_file, setup, teardown),
            cmocka_unit_test_setup_teardown(test_sandbox_waits_for_systemd, setup, teardown),
            cmocka_unit_test_setup_teardown(test_sandbox_retry_then_fail, setup, teardown),
            cmocka_unit_test_setup_teardown(test_sandbox_unit_gone, setup, teardown),
            cmocka_unit_test_setup_teardown(test_sandbox_retry_waits_for_old_unit, setup, teardown),
            cmocka_unit_test_setup_teardown(test_sandbox_ready_timeout, setup, teardown),
            cmocka_unit_test_setup_teardown(test_sandbox_boot_look, setup, teardown),
            cmocka_unit_test_setup_teardown(test_sandbox_stop, setup, teardown),
            cmocka_unit_test_setup_teardown(test_sandbox_stop_force, setup, teardown),
            cmocka_unit_test_setup_teardown(test_sandbox_limits, setup, teardown),
            cmocka_unit_test_setup_teardown(test_sandbox_dies, setup, teardown),
            cmocka_unit_test_setup_teardown(test_sandbox_removed_outside, setup, teardown),
            cmocka_unit_test_setup_teardown(test_sandbox_emptied_outside, setup, teardown),
            cmocka_unit_test_setup_teardown(test_sandbox_stop_fails, setup, teardown),
            cmocka_unit_test_setup_teardown(test_container_start, setup, teardown),
            cmocka_unit_test_setup_teardown(test_container_undo, setup, teardown),
            cmocka_unit_test_setup_teardown(test_container_gives_up, setup, teardown),
            cmocka_unit_test_setup_teardown(test_container_stop, setup, teardown),
            cmocka_unit_test_setup_teardown(test_container_stopped_before_start, setup, teardown),
            cmocka_unit_test_setup_teardown(test_exit_hold_expires, setup_logs, teardown),
            cmocka_unit_test_setup_teardown(test_stop_waits_for_held_exit, setup_logs, teardown),
            cmocka_unit_test_setup_teardown(test_exit_hold_output, setup_logs, teardown),
            cmocka_unit_test_setup_teardown(test_writer_gone_before_its_app, setup_logs, teardown),
            cmocka_unit_test_setup_teardown(test_cni_add_and_del, setup_cni, teardown),
            cmocka_unit_test_setup_teardown(test_cni_add_fails, setup_cni, teardown),
            cmocka_unit_test_setup_teardown(test_cni_no_config, setup_cni, teardown),
            cmocka_unit_test_setup_teardown(test_cni_check_and_del_retry, setup_cni, teardown),
            cmocka_unit_test_setup_teardown(test_container_process_and_limits, setup, teardown),
            cmocka_unit_test_setup_teardown(test_container_oom_killed, setup, teardown),
            cmocka_unit_test_setup_teardown(test_adopt_at_start, setup, teardown),
            cmocka_unit_test_setup_teardown(test_no_adopt_earlier_attempt, setup, teardown),
            cmocka_unit_test_setup_teardown(test_orphan_pods, setup, teardown),
            cmocka_unit_test_setup_teardown(test_orphan_rm_backs_off, setup, teardown),
            cmocka_unit_test_setup_teardown(test_orphan_apps, setup, teardown),
            cmocka_unit_test_setup_teardown(test_orphan_units, setup, teardown),
            cmocka_unit_test_setup_teardown(test_orphan_app_rm_owed, setup, teardown),
            cmocka_unit_test_setup_teardown(test_stats_and_checkpoint, setup, teardown),
            cmocka_unit_test_setup_teardown(test_probe, setup, teardown),
            cmocka_unit_test_setup_teardown(test_probe_network, setup_cni, teardown),
            cmocka_unit_test_setup_teardown(test_probe_network_unwatched, setup_cni, teardown),
            cmocka_unit_test_setup_teardown(test_real_ops_without_systemd, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
