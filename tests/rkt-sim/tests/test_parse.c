/* Unit tests of the simulator's parsers: pflag-style flags, Go durations, quantities, docker
 * references, UUIDs/ACNames and fault rules. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "base/alloc.h"
#include "base/strv.h"
#include "sim.h"
#include "base/banned.h"

/* A writable argv, as main() gets it. */
static char **mkargv(const char *const *l)
{
        char **v = rkl_xnew0(char *, 1);
        for (; *l; l++)
                rkl_strv_push(&v, *l);
        return v;
}
#define ARGV(...) mkargv((const char *const[]){__VA_ARGS__, NULL})

static void test_flags(void **state)
{
        _cleanup_free_ char *name = NULL, *err = NULL, *wait = NULL;
        _cleanup_strv_free_ char **env = NULL, **opts = NULL;
        bool force = true;
        sim_flag flags[] = {
            {"name", SIM_FLAG_STRING, &name},
            {"environment", SIM_FLAG_STRV, &env},
            {"insecure-options", SIM_FLAG_STRV, &opts, .split = true},
            {"force", SIM_FLAG_BOOL, &force},
            {"wait", SIM_FLAG_OPT, &wait},
            {"stdin", SIM_FLAG_STRING, &name, .hidden_attach = true},
        };
        _cleanup_strv_free_ char **argv =
            ARGV("UUID", "--name", "web", "--environment=A=1", "--environment", "B=2",
                 "--insecure-options=image,ondisk", "--force=false", "--wait", "IMG", "--", "x",
                 "y", "---");
        sim_args a = {0};
        assert_int_equal(sim_flags_parse(argv, flags, ELEMENTSOF(flags), 0, true, false, &a, &err),
                         0);
        assert_string_equal(name, "web");
        assert_int_equal(rkl_strv_length(env), 2);
        assert_string_equal(env[1], "B=2");
        assert_int_equal(rkl_strv_length(opts), 2);
        assert_string_equal(opts[1], "ondisk");
        assert_false(force);
        assert_string_equal(wait, "true");
        assert_int_equal(rkl_strv_length(a.pos), 2);
        assert_string_equal(a.pos[1], "IMG");
        assert_int_equal(rkl_strv_length(a.app_args), 2);
        sim_args_done(&a);

        _cleanup_strv_free_ char **bad = ARGV("--format=json");
        assert_int_equal(sim_flags_parse(bad, flags, ELEMENTSOF(flags), 0, false, false, &a, &err),
                         -EINVAL);
        assert_string_equal(err, "unknown flag: --format");
        free(err);
        err = NULL;
        _cleanup_strv_free_ char **attach = ARGV("--stdin=stream");
        assert_int_equal(
            sim_flags_parse(attach, flags, ELEMENTSOF(flags), 0, false, false, &a, &err), -EINVAL);
        free(err);
        err = NULL;
        assert_int_equal(
            sim_flags_parse(attach, flags, ELEMENTSOF(flags), 0, false, true, &a, &err), 0);
        sim_args_done(&a);

        /* enter: flags stop after the UUID */
        _cleanup_strv_free_ char **enter = ARGV("UUID", "sh", "-c", "exit 3");
        assert_int_equal(
            sim_flags_parse(enter, flags, ELEMENTSOF(flags), 1, false, false, &a, &err), 0);
        assert_int_equal(rkl_strv_length(a.pos), 4);
        sim_args_done(&a);
}

static void test_values(void **state)
{
        int64_t ns;
        uint64_t v;
        assert_int_equal(sim_parse_duration("10s", &ns), 0);
        assert_true(ns == 10000000000LL);
        assert_int_equal(sim_parse_duration("1m30s", &ns), 0);
        assert_true(ns == 90000000000LL);
        assert_int_equal(sim_parse_duration("1.5ms", &ns), 0);
        assert_true(ns == 1500000);
        assert_int_equal(sim_parse_duration("-1s", &ns), 0);
        assert_true(ns < 0);
        assert_int_equal(sim_parse_duration("10", &ns), -EINVAL);
        assert_int_equal(sim_parse_bytes("64M", &v), 0);
        assert_true(v == 64000000);
        assert_int_equal(sim_parse_bytes("64Mi", &v), 0);
        assert_true(v == 64ULL << 20);
        assert_int_equal(sim_parse_bytes("12x", &v), -EINVAL);
        assert_int_equal(sim_parse_millicores("500m", &v), 0);
        assert_true(v == 500);
        assert_int_equal(sim_parse_millicores("2", &v), 0);
        assert_true(v == 2000);
        bool b;
        assert_int_equal(sim_parse_bool("True", &b), 0);
        assert_true(b);
        assert_int_equal(sim_parse_bool("yes", &b), -EINVAL);
}

static void test_docker_ref(void **state)
{
        sim_docker_ref r;
        assert_int_equal(sim_docker_ref_parse("busybox", &r), 0);
        assert_string_equal(r.registry, "registry-1.docker.io");
        assert_string_equal(r.repo, "library/busybox");
        assert_string_equal(r.tag, "latest");
        sim_docker_ref_done(&r);
        assert_int_equal(sim_docker_ref_parse("docker.io/library/busybox:1.36", &r), 0);
        assert_string_equal(r.registry, "registry-1.docker.io");
        assert_string_equal(r.tag, "1.36");
        sim_docker_ref_done(&r);
        assert_int_equal(sim_docker_ref_parse("localhost:5000/a/b", &r), 0);
        assert_string_equal(r.registry, "localhost:5000");
        assert_string_equal(r.repo, "a/b");
        sim_docker_ref_done(&r);
        assert_int_equal(
            sim_docker_ref_parse("quay.io/x/y@sha256:"
                                 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                                 &r),
            0);
        assert_null(r.tag);
        assert_non_null(r.digest);
        sim_docker_ref_done(&r);
        assert_int_equal(sim_docker_ref_parse("../../etc", &r), -EINVAL);
        assert_int_equal(sim_docker_ref_parse("Upper", &r), -EINVAL);
}

static void test_names(void **state)
{
        assert_true(sim_uuid_is_valid("cb41ffa9-8f3d-4c2e-9a1b-0123456789ab"));
        assert_false(sim_uuid_is_valid("cb41ffa9-8f3d-4c2e-9a1b-0123456789aB"));
        assert_false(sim_uuid_is_valid("cb41ffa9"));
        assert_true(sim_acname_is_valid("0-nginx"));
        assert_false(sim_acname_is_valid("-x"));
        assert_false(sim_acname_is_valid("a--b"));
        assert_false(sim_acname_is_valid("A"));
}

static void test_fault_rules(void **state)
{
        _cleanup_free_ char *w = NULL;
        sim_fault f = {0};
        assert_int_equal(sim_fault_parse_line("app add fail 254 boom  now", &w, &f), 0);
        assert_string_equal(w, "app add");
        assert_int_equal(f.kind, SIM_FAULT_FAIL);
        assert_int_equal(f.code, 254);
        assert_string_equal(f.message, "boom  now");
        sim_fault_done(&f);
        free(w);
        w = NULL;
        assert_int_equal(sim_fault_parse_line("app web signal 9 after 50", &w, &f), 0);
        assert_string_equal(w, "app web");
        assert_int_equal(f.kind, SIM_FAULT_APP_SIGNAL);
        assert_int_equal(f.code, 9);
        assert_true(f.after_ms == 50);
        sim_fault_done(&f);
        free(w);
        w = NULL;
        assert_int_equal(sim_fault_parse_line("sandbox crash-after prepare", &w, &f), 0);
        assert_string_equal(f.step, "prepare");
        sim_fault_done(&f);
        free(w);
        w = NULL;
        assert_int_equal(sim_fault_parse_line("sandbox slow-stop 3000", &w, &f), 0);
        assert_string_equal(w, "sandbox");
        assert_int_equal(f.kind, SIM_FAULT_SLOW_STOP);
        assert_int_equal(f.code, 3000);
        sim_fault_done(&f);
        free(w);
        w = NULL;
        assert_int_equal(sim_fault_parse_line("sandbox slow-stop", &w, &f), -EINVAL);
        assert_int_equal(sim_fault_parse_line("sandbox never-ready", &w, &f), 0);
        assert_int_equal(f.kind, SIM_FAULT_NEVER_READY);
        assert_int_equal(sim_fault_parse_line("status", &w, &f), -EINVAL);
        assert_int_equal(sim_fault_parse_line("fail 1 x", &w, &f), -EINVAL);
}

static void test_times(void **state)
{
        _cleanup_free_ char *a = sim_format_time_ms(1795243412453128342LL);
        assert_string_equal(a, "2026-11-21 06:43:32.453 +0000 UTC");
        _cleanup_free_ char *b = sim_format_rfc3339nano(1795243412450000000LL);
        assert_string_equal(b, "2026-11-21T06:43:32.45Z");
        _cleanup_free_ char *c = sim_format_time_ms(1795243412000000000LL);
        assert_string_equal(c, "2026-11-21 06:43:32 +0000 UTC");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_flags),       cmocka_unit_test(test_values),
            cmocka_unit_test(test_docker_ref),  cmocka_unit_test(test_names),
            cmocka_unit_test(test_fault_rules), cmocka_unit_test(test_times),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
