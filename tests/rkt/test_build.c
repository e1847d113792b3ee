/* rkt's build record (rkt/build.h): the file scripts/build-rkt writes beside rkt, read and
 * checked against the binary and the patches rktlet wants. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fixture.h"
#include "base/strv.h"
#include "rkt/build.h"

/* Two patches of the real list, as a test's "wanted" set. */
static const rkl_rkt_patch want[] = {
    {"stderr-fd.patch", "459979962fa8aff583397b452cb54b895f8c250d154f33bb860a4d1d42057c85"},
    {"stream-drain.patch", "c7bbae481477080b33e9427e4892f65e68ad491617e14e86a2fd65be27fdd28c"},
};

/* A sha256 in the record's format, of nothing in particular. */
#define SCRIPT_SUM "16f8a0d7d1f01e3f7cb9a5e4c5b2c3e5dd4a1e2b3c4d5e6f708192a3b4c5d6e7"

/* The record scripts/build-rkt wrote for a real build (tests/fixtures/rkt-build/). */
static void test_parse_real_record(void **state)
{
        (void)state;
        size_t n;
        _cleanup_free_ char *text = rkl_test_fixture_read("rkt-build/rkt.patches", &n);
        rkl_rkt_build b = {0};
        rkl_error err = RKL_ERROR_INIT;

        assert_int_equal(rkl_rkt_build_parse(text, n, &b, &err), 0);
        assert_string_equal(b.version, "1.30.0");
        assert_int_equal(strlen(b.sha256), 64);
        assert_string_equal(b.stage1_name, "coreos.com/rkt/stage1-host:1.30.0");
        assert_int_equal(strlen(b.stage1_id), strlen("sha512-") + 64);
        assert_non_null(strstr(b.stage1_path, "/bin/stage1-host.aci"));
        assert_int_equal(rkl_strv_length(b.patch_names), rkl_rkt_n_patches_wanted);
        assert_int_equal(rkl_strv_length(b.patch_sums), rkl_rkt_n_patches_wanted);
        assert_int_equal(rkl_rkt_build_check_patches(&b, want, ELEMENTSOF(want), &err), 0);
        /* What this rktlet was built with is what that build applied. */
        assert_int_equal(
            rkl_rkt_build_check_patches(&b, rkl_rkt_patches_wanted, rkl_rkt_n_patches_wanted, &err),
            0);

        _cleanup_free_ char *s = rkl_rkt_build_summary(&b);
        /* In name order, without ".patch"; as many as packaging/rkt/ has. */
        _cleanup_free_ char *head =
            rkl_xasprintf("%zu patches (app-add-no-reload, app-rm-shared-image, "
                          "iottymux-partial, lazy-debug-templates, make43, nspawn-incoming, ",
                          rkl_rkt_n_patches_wanted);
        assert_true(startswith(s, head));
        assert_non_null(strstr(s, ", stream-drain, supervisor-ready, volume-rbind)"));
        rkl_rkt_build_done(&b);
}

/* The compiled-in list is every file of packaging/rkt/, nothing else. */
static void test_wanted_is_packaging_rkt(void **state)
{
        (void)state;
        const char *src = getenv("RKL_SOURCE_DIR");
        _cleanup_free_ char *dir = rkl_xasprintf("%s/packaging/rkt", src ? src : "../..");
        _cleanup_closedir_ DIR *d = opendir(dir);
        size_t n = 0;

        assert_non_null(d);
        for (struct dirent *e; (e = readdir(d));) {
                size_t l = strlen(e->d_name);
                if (l < 6 || !streq(e->d_name + l - 6, ".patch"))
                        continue;
                n++;
                bool found = false;
                for (size_t i = 0; i < rkl_rkt_n_patches_wanted; i++)
                        found = found || streq(rkl_rkt_patches_wanted[i].name, e->d_name);
                assert_true(found);
        }
        assert_int_equal(n, rkl_rkt_n_patches_wanted);
        for (size_t i = 0; i < rkl_rkt_n_patches_wanted; i++)
                assert_int_equal(strlen(rkl_rkt_patches_wanted[i].sha256), 64);
}

static void parse_fails(const char *text, const char *why)
{
        rkl_rkt_build b = {0};
        rkl_error err = RKL_ERROR_INIT;
        assert_int_equal(rkl_rkt_build_parse(text, strlen(text), &b, &err), -EBADMSG);
        if (!strstr(err.msg, why))
                fail_msg("'%s' does not say '%s'", err.msg, why);
        assert_null(b.version);
}

static void test_parse_rejects(void **state)
{
        (void)state;
        parse_fails("", "no 'rkt VERSION SHA256' line");
        parse_fails("# only a comment\n", "no 'rkt");
        parse_fails("rkt 1.30.0\n", "line 1: not 'rkt VERSION SHA256'");
        parse_fails("rkt 1.30.0 " SCRIPT_SUM "\nrkt 1.30.0 " SCRIPT_SUM "\n", "a second 'rkt'");
        parse_fails("rkt 1.30.0 " SCRIPT_SUM "\npatch xyz stderr-fd.patch\n",
                    "line 2: not 'patch SHA256 NAME'");
        parse_fails("rkt 1.30.0 " SCRIPT_SUM "\npatch " SCRIPT_SUM " ../x.patch\n", "line 2");
        parse_fails("rkt 1.30.0 " SCRIPT_SUM "\nstage1 n sha256-00 /x\n", "line 2: not 'stage1");
        parse_fails("rkt 1.30.0 " SCRIPT_SUM "\nstage1 n sha512-00 relative\n", "line 2");
        parse_fails("rkt \x01 " SCRIPT_SUM "\n", "line 1");

        rkl_rkt_build b = {0};
        rkl_error err = RKL_ERROR_INIT;
        const char nul[] = "rkt 1.30.0 " SCRIPT_SUM "\n\0";
        assert_int_equal(rkl_rkt_build_parse(nul, sizeof(nul) - 1, &b, &err), -EBADMSG);
}

/* Lines of a newer build-rkt are left alone; CRLF and blank lines are fine. */
static void test_parse_tolerates(void **state)
{
        (void)state;
        const char *text = "rkt 1.30.0 " SCRIPT_SUM "\r\n\n"
                           "builder somebody-else\n"
                           "  patch " SCRIPT_SUM " stderr-fd.patch\n";
        rkl_rkt_build b = {0};
        rkl_error err = RKL_ERROR_INIT;
        assert_int_equal(rkl_rkt_build_parse(text, strlen(text), &b, &err), 0);
        assert_null(b.stage1_name);
        assert_string_equal(b.patch_names[0], "stderr-fd.patch");
        assert_null(b.patch_names[1]);
        rkl_rkt_build_done(&b);
}

static void test_check_patches_names_what_lacks(void **state)
{
        (void)state;
        const char *text = "rkt 1.30.0 " SCRIPT_SUM "\n"
                           "patch " SCRIPT_SUM " stderr-fd.patch\n";
        rkl_rkt_build b = {0};
        rkl_error err = RKL_ERROR_INIT;
        assert_int_equal(rkl_rkt_build_parse(text, strlen(text), &b, &err), 0);
        assert_int_equal(rkl_rkt_build_check_patches(&b, want, ELEMENTSOF(want), &err), -ENOPKG);
        assert_string_equal(err.msg, "without stream-drain; an older version of stderr-fd");
        rkl_rkt_build_done(&b);

        text = "rkt 1.30.0 " SCRIPT_SUM "\n";
        assert_int_equal(rkl_rkt_build_parse(text, strlen(text), &b, &err), 0);
        assert_int_equal(rkl_rkt_build_check_patches(&b, want, ELEMENTSOF(want), &err), -ENOPKG);
        assert_string_equal(err.msg, "without stderr-fd, stream-drain");
        _cleanup_free_ char *s = rkl_rkt_build_summary(&b);
        assert_string_equal(s, "0 patches");
        rkl_rkt_build_done(&b);
}

typedef struct dir {
        char path[64];
        char *rkt;
} dir;

static void write_file(const char *path, const char *text, mode_t mode)
{
        FILE *f = fopen(path, "we");
        assert_non_null(f);
        fputs(text, f);
        assert_int_equal(fclose(f), 0);
        assert_int_equal(chmod(path, mode), 0);
}

static void dir_make(dir *d)
{
        snprintf(d->path, sizeof(d->path), "/tmp/rkl-test-build-XXXXXX");
        assert_non_null(mkdtemp(d->path));
        d->rkt = rkl_xasprintf("%s/rkt", d->path);
        write_file(d->rkt, "#!/bin/sh\n", 0755);
}

static void dir_record(dir *d, const char *text)
{
        _cleanup_free_ char *p = rkl_xasprintf("%s.patches", d->rkt);
        write_file(p, text, 0644);
}

static void dir_remove(dir *d)
{
        assert_int_equal(rkl_rm_rf_at(AT_FDCWD, d->path), 0);
        free(d->rkt);
}

/* The sha256 of the test's rkt, "#!/bin/sh\n", in hex. */
static char *sh_sum(void)
{
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned n = 0;
        char *hex = rkl_xmalloc(65);
        assert_true(EVP_Digest("#!/bin/sh\n", 10, md, &n, EVP_sha256(), NULL));
        for (unsigned i = 0; i < n; i++)
                snprintf(hex + 2 * i, 3, "%02x", md[i]);
        return hex;
}

static void test_verify(void **state)
{
        (void)state;
        dir d;
        rkl_error err = RKL_ERROR_INIT;
        rkl_rkt_build_memo memo = {0};
        rkl_rkt_build b = {0};
        _cleanup_free_ char *sum = sh_sum();

        dir_make(&d);
        /* No record: an rkt from elsewhere. */
        assert_int_equal(
            rkl_rkt_build_verify(d.rkt, "1.30.0", want, ELEMENTSOF(want), &memo, NULL, &err),
            -ENOENT);
        assert_non_null(strstr(err.msg, "has no build record"));
        assert_non_null(strstr(err.msg, "rktlet-rkt"));

        /* The record of this binary, with the patches. */
        _cleanup_free_ char *good = rkl_xasprintf("rkt 1.30.0 %s\n"
                                                  "patch %s stderr-fd.patch\n"
                                                  "patch %s stream-drain.patch\n",
                                                  sum, want[0].sha256, want[1].sha256);
        dir_record(&d, good);
        assert_int_equal(
            rkl_rkt_build_verify(d.rkt, "1.30.0", want, ELEMENTSOF(want), &memo, &b, &err), 0);
        assert_string_equal(memo.sha256, sum);
        assert_string_equal(b.patch_names[1], "stream-drain.patch");
        rkl_rkt_build_done(&b);

        /* Found through a symlink, as rkt finds its stage1: beside the real file. */
        _cleanup_free_ char *link = rkl_xasprintf("%s/rkt-link", d.path);
        assert_int_equal(symlink(d.rkt, link), 0);
        assert_int_equal(rkl_rkt_build_verify(link, NULL, want, ELEMENTSOF(want), NULL, NULL, &err),
                         0);

        /* Another version than the binary says. */
        assert_int_equal(
            rkl_rkt_build_verify(d.rkt, "1.29.0", want, ELEMENTSOF(want), &memo, NULL, &err),
            -ESTALE);
        assert_non_null(strstr(err.msg, "is version 1.29.0 but its build record"));

        /* The binary replaced after the build: another content, so another sha256. */
        write_file(d.rkt, "#!/bin/sh\nexit 0\n", 0755);
        assert_int_equal(
            rkl_rkt_build_verify(d.rkt, "1.30.0", want, ELEMENTSOF(want), &memo, NULL, &err),
            -ESTALE);
        assert_non_null(strstr(err.msg, "is not the binary its build record"));
        write_file(d.rkt, "#!/bin/sh\n", 0755);

        /* A build without one of them. */
        _cleanup_free_ char *lacking =
            rkl_xasprintf("rkt 1.30.0 %s\npatch %s stderr-fd.patch\n", sum, want[0].sha256);
        dir_record(&d, lacking);
        assert_int_equal(
            rkl_rkt_build_verify(d.rkt, "1.30.0", want, ELEMENTSOF(want), &memo, NULL, &err),
            -ENOPKG);
        assert_non_null(
            strstr(err.msg, "lacks fixes rktlet relies on: built without stream-drain"));

        dir_record(&d, "garbage\n");
        assert_int_equal(
            rkl_rkt_build_verify(d.rkt, "1.30.0", want, ELEMENTSOF(want), &memo, NULL, &err),
            -EBADMSG);
        dir_remove(&d);
}

static void test_stage1(void **state)
{
        (void)state;
        const char *text = "rkt 1.30.0 " SCRIPT_SUM "\n"
                           "stage1 coreos.com/rkt/stage1-host:1.30.0 sha512-0123456789abcdef "
                           "/usr/lib/rktlet/rkt/bin/stage1-host.aci\n";
        rkl_rkt_build b = {0};
        rkl_error err = RKL_ERROR_INIT;
        assert_int_equal(rkl_rkt_build_parse(text, strlen(text), &b, &err), 0);
        assert_string_equal(b.stage1_path, "/usr/lib/rktlet/rkt/bin/stage1-host.aci");

        /* The one built, under a longer ID; any other image. */
        assert_int_equal(rkl_rkt_build_check_stage1(&b, "coreos.com/rkt/stage1-host:1.30.0",
                                                    "sha512-0123456789abcdef0000", &err),
                         0);
        assert_int_equal(rkl_rkt_build_check_stage1(&b, "registry-1.docker.io/library/busybox",
                                                    "sha512-ffff", &err),
                         0);
        assert_int_equal(rkl_rkt_build_check_stage1(&b, NULL, NULL, &err), 0);
        /* Another stage1 of the same name: rkt would run that one. */
        assert_int_equal(rkl_rkt_build_check_stage1(&b, "coreos.com/rkt/stage1-host:1.30.0",
                                                    "sha512-ffffffff", &err),
                         -ENOPKG);
        assert_non_null(strstr(err.msg, "rkt image rm sha512-ffffffff"));
        rkl_rkt_build_done(&b);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_parse_real_record),
            cmocka_unit_test(test_wanted_is_packaging_rkt),
            cmocka_unit_test(test_parse_rejects),
            cmocka_unit_test(test_parse_tolerates),
            cmocka_unit_test(test_check_patches_names_what_lacks),
            cmocka_unit_test(test_verify),
            cmocka_unit_test(test_stage1),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
