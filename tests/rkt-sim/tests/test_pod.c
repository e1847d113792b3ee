/* Unit tests of how rkt-sim reads a pod directory: states from the dir and its lock, the
 * mutable (`app status`) and immutable (`status`/`list`) app rules, times from mtimes. No
 * systemd and no root needed: the pod is built by hand in a temporary directory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "base/alloc.h"
#include "base/fileio.h"
#include "sim.h"
#include "base/banned.h"

#define UUID "cb41ffa9-8f3d-4c2e-9a1b-0123456789ab"
#define IMG  "sha512-c3749ed3"

typedef struct fixture {
        char dir[64];
        sim_ctx c;
        char *pod;
} fixture;

static void put(const char *dir, const char *rel, const char *content, int64_t mtime_sec)
{
        _cleanup_free_ char *p = rkl_xasprintf("%s/%s", dir, rel);
        _cleanup_free_ char *parent = rkl_xstrdup(p);
        *strrchr(parent, '/') = 0;
        assert_int_equal(rkl_mkdir_p(parent, 0755), 0);
        assert_int_equal(sim_write_file(p, content, 0644), 0);
        struct timespec ts[2] = {{.tv_sec = mtime_sec, .tv_nsec = 123456789},
                                 {.tv_sec = mtime_sec, .tv_nsec = 123456789}};
        assert_int_equal(utimensat(AT_FDCWD, p, ts, 0), 0);
}

static int setup(void **state)
{
        fixture *f = rkl_xnew0(fixture, 1);
        snprintf(f->dir, sizeof(f->dir), "/tmp/rkt-sim-test-pod-XXXXXX");
        assert_non_null(mkdtemp(f->dir));
        f->c.dir = f->dir;
        f->pod = rkl_xasprintf("%s/pods/run/%s", f->dir, UUID);
        put(f->pod, "pod",
            "{\"acKind\":\"PodManifest\",\"acVersion\":\"1.30.0\",\"apps\":["
            "{\"name\":\"web\",\"image\":{\"name\":\"x\",\"id\":\"" IMG "\"},"
            "\"app\":{\"userAnnotations\":{\"b\":\"2\",\"a\":\"1\"}},"
            "\"mounts\":[{\"volume\":\"data\",\"path\":\"/data\"}]},"
            "{\"name\":\"idle\",\"image\":{\"name\":\"x\",\"id\":\"" IMG "\"},\"app\":{}}],"
            "\"volumes\":[{\"name\":\"data\",\"kind\":\"host\",\"source\":\"/"
            "srv\",\"readOnly\":true}],"
            "\"userLabels\":{\"tier\":\"test\"}}",
            1000);
        put(f->pod, "pod-created", "", 1000);
        put(f->pod, "ppid", "4242", 1001);
        put(f->pod, "net-info.json",
            "[{\"netName\":\"default\",\"ip\":\"172.16.28.9\",\"mask\":\"255.255.255.0\"}]", 1001);
        _cleanup_free_ char *st = rkl_xasprintf("overlay/%s/upper/rkt/status", SIM_STAGE1_TREE);
        _cleanup_free_ char *wc = rkl_xasprintf("%s/web-created", st);
        _cleanup_free_ char *ws = rkl_xasprintf("%s/web-started", st);
        _cleanup_free_ char *we = rkl_xasprintf("%s/web", st);
        _cleanup_free_ char *ic = rkl_xasprintf("%s/idle-created", st);
        put(f->pod, wc, "", 1002);
        put(f->pod, ws, "", 1003);
        put(f->pod, we, "15\n", 1004);
        put(f->pod, ic, "", 1005);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        fixture *f = *state;
        (void)rkl_rm_rf_at(AT_FDCWD, f->dir);
        free(f->pod);
        free(f);
        return 0;
}

static struct json_object *app_of(const sim_pod *p, const char *name, bool mutable_rules)
{
        _cleanup_json_ struct json_object *m = sim_pod_manifest(p);
        return sim_app_json(p, sim_manifest_app(m, name), mutable_rules);
}

static int64_t i64(struct json_object *o, const char *key)
{
        struct json_object *v;
        return json_object_object_get_ex(o, key, &v) ? json_object_get_int64(v) : -1;
}

static void test_exited_pod(void **state)
{
        fixture *f = *state;
        _cleanup_pod_ sim_pod p = {0};
        _cleanup_free_ char *err = NULL;
        assert_int_equal(sim_pod_find(&f->c, "cb41", &p, &err), 0);
        assert_string_equal(p.uuid, UUID);
        /* Nobody holds the lock: a pod in run/ is exited. */
        assert_int_equal(p.state, SIM_POD_EXITED);
        assert_true(sim_pod_after_run(&p));

        _cleanup_json_ struct json_object *web = app_of(&p, "web", true);
        assert_string_equal(sim_json_str(web, "state"), "exited");
        assert_true(i64(web, "created_at") == 1002123456789LL);
        assert_true(i64(web, "started_at") == 1003123456789LL);
        assert_true(i64(web, "finished_at") == 1004123456789LL);
        assert_true(i64(web, "exit_code") == 15);
        _cleanup_free_ char *s = sim_json_go(web, false);
        assert_non_null(strstr(s, "\"user_annotations\":{\"a\":\"1\",\"b\":\"2\"}"));
        assert_non_null(strstr(s, "\"mounts\":[{\"name\":\"data\",\"container_path\":\"/data\","
                                  "\"host_path\":\"/srv\",\"read_only\":true}]"));

        /* Created, never started, pod after run: forced to exited, no times beyond created. */
        _cleanup_json_ struct json_object *idle = app_of(&p, "idle", true);
        assert_string_equal(sim_json_str(idle, "state"), "exited");
        assert_true(i64(idle, "started_at") == -1);
        assert_true(i64(idle, "exit_code") == -1);

        /* Immutable rules: pod times for every app, no finished_at. */
        _cleanup_json_ struct json_object *iweb = app_of(&p, "web", false);
        assert_true(i64(iweb, "created_at") == 1000123456789LL);
        assert_true(i64(iweb, "started_at") == 1001123456789LL);
        assert_true(i64(iweb, "finished_at") == -1);
        assert_true(i64(iweb, "exit_code") == 15);

        _cleanup_json_ struct json_object *pod = sim_pod_json(&p);
        assert_string_equal(sim_json_str(pod, "state"), "exited");
        assert_true(i64(pod, "created_at") == 1000);
        assert_true(i64(pod, "started_at") == 1001);
        _cleanup_free_ char *ps = sim_json_go(pod, false);
        assert_non_null(strstr(ps, "\"app_names\":[\"web\",\"idle\"]"));
        assert_non_null(strstr(ps, "\"ip\":\"172.16.28.9\""));
}

static void test_running_pod(void **state)
{
        fixture *f = *state;
        _cleanup_close_ int fd = open(f->pod, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(flock(fd, LOCK_EX), 0);
        _cleanup_pod_ sim_pod p = {0};
        _cleanup_free_ char *err = NULL;
        assert_int_equal(sim_pod_find(&f->c, UUID, &p, &err), 0);
        assert_int_equal(p.state, SIM_POD_RUNNING);
        assert_true(sim_lock_held(f->pod));
        /* The bug docs/rkt.md ('Quirks') describes: a created-only app is "running" in
         * status/list. */
        _cleanup_json_ struct json_object *iidle = app_of(&p, "idle", false);
        assert_string_equal(sim_json_str(iidle, "state"), "running");
        _cleanup_json_ struct json_object *idle = app_of(&p, "idle", true);
        assert_string_equal(sim_json_str(idle, "state"), "created");
        assert_false(sim_pod_ready(&p));
}

static void test_find_errors(void **state)
{
        fixture *f = *state;
        sim_pod p = {0};
        char *err = NULL;
        assert_int_equal(sim_pod_find(&f->c, "ffff", &p, &err), -ENOENT);
        assert_string_equal(err, "no matches found for \"ffff\"");
        free(err);
        err = NULL;
        assert_int_equal(sim_pod_find(&f->c, "../x", &p, &err), -ENOENT);
        free(err);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(test_exited_pod, setup, teardown),
            cmocka_unit_test_setup_teardown(test_running_pod, setup, teardown),
            cmocka_unit_test_setup_teardown(test_find_errors, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
