/* Unit tests of src/store: migrations, round trips, constraints, validation, prefixes,
 * generations, cascades and concurrent writers, on in-memory and file databases. Tests
 * look at the tables with their own sqlite3 connection where the API cannot show what
 * must (or must not) be there. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include "base/alloc.h"
#include "base/spawn.h"
#include "base/fileio.h"
#include "base/strv.h"
#include "base/time-util.h"
#include "store/db.h"
#include "store/db-internal.h"

#define S(x) rkl_xstrdup(x)

static void assert_str_eq(const char *a, const char *b)
{
        if (!a || !b)
                assert_ptr_equal(a, b);
        else
                assert_string_equal(a, b);
}

static void assert_strv_eq(char *const *a, char *const *b)
{
        if (!a || !b) {
                assert_ptr_equal(a, b);
                return;
        }
        assert_int_equal(rkl_strv_length(a), rkl_strv_length(b));
        for (size_t i = 0; a[i]; i++)
                assert_string_equal(a[i], b[i]);
}

static void assert_kvs_eq(const rkl_kvs *a, const rkl_kvs *b)
{
        assert_int_equal(a->n, b->n);
        for (size_t i = 0; i < a->n; i++) {
                assert_string_equal(a->items[i].key, b->items[i].key);
                assert_string_equal(a->items[i].value, b->items[i].value);
        }
}

static char **empty_strv(void)
{
        return rkl_xnew0(char *, 1);
}

static void make_id(char id[static RKL_ID_LEN + 1], const char *prefix, unsigned n)
{
        char tail[RKL_ID_LEN + 1];
        (void)snprintf(tail, sizeof(tail), "%064x", n);
        size_t p = strlen(prefix);
        memcpy(id, prefix, p);
        memcpy(id + p, tail + p, RKL_ID_LEN - p + 1);
}

/* A pod spec with every field set, and the bytes that tend to break things. */
static void fill_pod_spec(rkl_pod_spec *p, const char *name, uint32_t attempt)
{
        *p = (rkl_pod_spec){0};
        p->name = S(name);
        p->uid = S("5f1c9e4e-8a6f-4b9e-9d7c-1e2f3a4b5c6d");
        p->namespace = S("kube-system");
        p->attempt = attempt;
        p->hostname = S("web-0");
        p->log_directory = S("/var/log/pods/kube-system_web-0_5f1c9e4e");
        p->dns_servers = rkl_strv_copy(RKL_STRV("10.96.0.10", "8.8.8.8"));
        p->dns_searches = rkl_strv_copy(RKL_STRV("svc.cluster.local", "cluster.local"));
        p->dns_options = empty_strv();
        p->ports = rkl_xnew0(rkl_port_mapping, 2);
        p->n_ports = 2;
        p->ports[0] = (rkl_port_mapping){RKL_PROTOCOL_TCP, 80, 8080, S("0.0.0.0")};
        p->ports[1] = (rkl_port_mapping){RKL_PROTOCOL_SCTP, 9000, 0, NULL};
        /* Not sorted: order must come back as given. */
        rkl_kvs_add(&p->labels, "zeta", "last?");
        rkl_kvs_add(&p->labels, "app", "wëb ☃");
        rkl_kvs_add(&p->labels, "empty", "");
        rkl_kvs_add(&p->labels, "quote", "it's \"q\"; DROP TABLE sandbox;--");
        rkl_kvs_add(&p->labels, "nl", "a\nb\tc\\");
        rkl_kvs_add(&p->annotations, "kubernetes.io/config.seen", "2024-01-01T00:00:00Z");
        rkl_kvs_add(&p->annotations, "emoji/🚀", "🚀 \xe2\x80\x8b");
        rkl_kvs_add(&p->annotations, "blank", "");
        p->cgroup_parent = S("/kubepods/besteffort/pod5f1c9e4e");
        rkl_kvs_add(&p->sysctls, "net.core.somaxconn", "1024");
        rkl_kvs_add(&p->sysctls, "kernel.shm_rmid_forced", "1");
        p->host_network = true;
        p->privileged = true;
        p->runtime_handler = S("rkt");
}

static void minimal_pod_spec(rkl_pod_spec *p, const char *name, uint32_t attempt)
{
        *p = (rkl_pod_spec){0};
        p->name = S(name);
        p->uid = S("uid");
        p->namespace = S("default");
        p->attempt = attempt;
}

static void assert_pod_spec_eq(const rkl_pod_spec *a, const rkl_pod_spec *b)
{
        assert_str_eq(a->name, b->name);
        assert_str_eq(a->uid, b->uid);
        assert_str_eq(a->namespace, b->namespace);
        assert_int_equal(a->attempt, b->attempt);
        assert_str_eq(a->hostname, b->hostname);
        assert_str_eq(a->log_directory, b->log_directory);
        assert_strv_eq(a->dns_servers, b->dns_servers);
        assert_strv_eq(a->dns_searches, b->dns_searches);
        assert_strv_eq(a->dns_options, b->dns_options);
        assert_int_equal(a->n_ports, b->n_ports);
        assert_int_equal(!a->ports, !b->ports);
        for (size_t i = 0; i < a->n_ports; i++) {
                assert_int_equal(a->ports[i].protocol, b->ports[i].protocol);
                assert_int_equal(a->ports[i].container_port, b->ports[i].container_port);
                assert_int_equal(a->ports[i].host_port, b->ports[i].host_port);
                assert_str_eq(a->ports[i].host_ip, b->ports[i].host_ip);
        }
        assert_kvs_eq(&a->labels, &b->labels);
        assert_kvs_eq(&a->annotations, &b->annotations);
        assert_str_eq(a->cgroup_parent, b->cgroup_parent);
        assert_kvs_eq(&a->sysctls, &b->sysctls);
        assert_int_equal(a->host_network, b->host_network);
        assert_int_equal(a->privileged, b->privileged);
        assert_str_eq(a->runtime_handler, b->runtime_handler);
}

static void fill_container_spec(rkl_container_spec *c, const char *name, uint32_t attempt)
{
        *c = (rkl_container_spec){0};
        c->name = S(name);
        c->attempt = attempt;
        c->image = S("docker.io/library/busybox:1.36");
        c->user_image = S("busybox:1.36");
        c->command = rkl_strv_copy(RKL_STRV("/bin/sh", "-c"));
        c->args = rkl_strv_copy(RKL_STRV("echo ✓ \"$HOME\"; sleep 1", ""));
        c->working_dir = S("/srv");
        rkl_kvs_add(&c->envs, "PATH", "/usr/bin:/bin");
        rkl_kvs_add(&c->envs, "EMPTY", "");
        rkl_kvs_add(&c->envs, "DUP", "1"); /* env lists may repeat a name: kept as is */
        rkl_kvs_add(&c->envs, "DUP", "2");
        c->mounts = rkl_xnew0(rkl_mount, 2);
        c->n_mounts = 2;
        c->mounts[0] =
            (rkl_mount){S("/data"), S("/var/lib/data"), true, true, RKL_PROPAGATION_BIDIRECTIONAL};
        c->mounts[1] = (rkl_mount){S("/tmp/x"), S(""), false, false, RKL_PROPAGATION_PRIVATE};
        rkl_kvs_add(&c->labels, "io.kubernetes.container.name", name);
        rkl_kvs_add(&c->labels, "ünïcødé", "");
        rkl_kvs_add(&c->annotations, "io.kubernetes.container.restartCount", "3");
        rkl_kvs_add(&c->annotations, "a", "line1\nline2");
        c->log_path = S("busybox/3.log");
        c->stdin_open = true;
        c->stdin_once = true;
        c->tty = false;
        c->cpu_period = 100000;
        c->cpu_quota = 50000;
        c->cpu_shares = 512;
        c->memory_limit = INT64_C(1) << 40;
        c->oom_score_adj = -998;
        c->has_run_as_user = true;
        c->run_as_user = 0; /* set, and zero: must not come back as unset */
        c->run_as_username = S("nobody");
        c->supplemental_groups = rkl_xnew0(int64_t, 3);
        c->n_supplemental_groups = 3;
        c->supplemental_groups[0] = 1;
        c->supplemental_groups[1] = 65534;
        c->supplemental_groups[2] = INT64_C(4294967296);
        c->readonly_rootfs = true;
        c->no_new_privs = true;
        c->caps_add = rkl_strv_copy(RKL_STRV("NET_ADMIN", "SYS_TIME"));
        c->caps_drop = empty_strv();
        c->seccomp = RKL_SECCOMP_LOCALHOST;
        c->seccomp_localhost_ref = S("profiles/audit.json");
}

static void minimal_container_spec(rkl_container_spec *c, const char *name, uint32_t attempt)
{
        *c = (rkl_container_spec){0};
        c->name = S(name);
        c->attempt = attempt;
        c->image = S("busybox");
}

static void assert_container_spec_eq(const rkl_container_spec *a, const rkl_container_spec *b)
{
        assert_str_eq(a->name, b->name);
        assert_int_equal(a->attempt, b->attempt);
        assert_str_eq(a->image, b->image);
        assert_str_eq(a->user_image, b->user_image);
        assert_strv_eq(a->command, b->command);
        assert_strv_eq(a->args, b->args);
        assert_str_eq(a->working_dir, b->working_dir);
        assert_kvs_eq(&a->envs, &b->envs);
        assert_int_equal(a->n_mounts, b->n_mounts);
        assert_int_equal(!a->mounts, !b->mounts);
        for (size_t i = 0; i < a->n_mounts; i++) {
                assert_str_eq(a->mounts[i].container_path, b->mounts[i].container_path);
                assert_str_eq(a->mounts[i].host_path, b->mounts[i].host_path);
                assert_int_equal(a->mounts[i].readonly, b->mounts[i].readonly);
                assert_int_equal(a->mounts[i].selinux_relabel, b->mounts[i].selinux_relabel);
                assert_int_equal(a->mounts[i].propagation, b->mounts[i].propagation);
        }
        assert_kvs_eq(&a->labels, &b->labels);
        assert_kvs_eq(&a->annotations, &b->annotations);
        assert_str_eq(a->log_path, b->log_path);
        assert_int_equal(a->stdin_open, b->stdin_open);
        assert_int_equal(a->stdin_once, b->stdin_once);
        assert_int_equal(a->tty, b->tty);
        assert_int_equal(a->cpu_period, b->cpu_period);
        assert_int_equal(a->cpu_quota, b->cpu_quota);
        assert_int_equal(a->cpu_shares, b->cpu_shares);
        assert_int_equal(a->memory_limit, b->memory_limit);
        assert_int_equal(a->oom_score_adj, b->oom_score_adj);
        assert_int_equal(a->has_run_as_user, b->has_run_as_user);
        assert_int_equal(a->has_run_as_group, b->has_run_as_group);
        assert_int_equal(a->run_as_user, b->run_as_user);
        assert_int_equal(a->run_as_group, b->run_as_group);
        assert_str_eq(a->run_as_username, b->run_as_username);
        assert_int_equal(a->n_supplemental_groups, b->n_supplemental_groups);
        for (size_t i = 0; i < a->n_supplemental_groups; i++)
                assert_int_equal(a->supplemental_groups[i], b->supplemental_groups[i]);
        assert_int_equal(a->readonly_rootfs, b->readonly_rootfs);
        assert_int_equal(a->privileged, b->privileged);
        assert_int_equal(a->no_new_privs, b->no_new_privs);
        assert_strv_eq(a->caps_add, b->caps_add);
        assert_strv_eq(a->caps_drop, b->caps_drop);
        assert_int_equal(a->seccomp, b->seccomp);
        assert_str_eq(a->seccomp_localhost_ref, b->seccomp_localhost_ref);
}

/* Fixtures: a private directory per test, an in-memory store or a file store in it. */

typedef struct fixture {
        char dir[512];
        char path[600];
        rkl_db *s;
} fixture;

static int setup_dir(void **state)
{
        fixture *f = rkl_xnew0(fixture, 1);
        const char *base = getenv("RKL_BUILD_DIR");
        (void)snprintf(f->dir, sizeof(f->dir), "%s/test-store-XXXXXX", base ? base : "/tmp");
        assert_non_null(mkdtemp(f->dir));
        (void)snprintf(f->path, sizeof(f->path), "%s/%s", f->dir, RKL_DB_FILE_NAME);
        *state = f;
        return 0;
}

static int teardown_dir(void **state)
{
        fixture *f = *state;
        f->s = rkl_db_close(f->s);
        (void)rkl_rm_rf_at(AT_FDCWD, f->dir);
        free(f);
        return 0;
}

static int setup_memory(void **state)
{
        rkl_error e = RKL_ERROR_INIT;
        fixture *f = rkl_xnew0(fixture, 1);
        int r = rkl_db_open(":memory:", NULL, &f->s, &e);
        if (r < 0)
                fail_msg("open: %s", e.msg);
        *state = f;
        return 0;
}

static int teardown_memory(void **state)
{
        fixture *f = *state;
        f->s = rkl_db_close(f->s);
        free(f);
        return 0;
}

static int setup_file(void **state)
{
        rkl_error e = RKL_ERROR_INIT;
        setup_dir(state);
        fixture *f = *state;
        int r = rkl_db_open(f->path, NULL, &f->s, &e);
        if (r < 0)
                fail_msg("open: %s", e.msg);
        return 0;
}

#define OK(expr)                                                                                   \
        do {                                                                                       \
                rkl_error e_ = RKL_ERROR_INIT;                                                     \
                int r_ = (expr);                                                                   \
                if (r_ < 0)                                                                        \
                        fail_msg("%s: %d %s", #expr, r_, e_.msg);                                  \
        } while (0)
/* Expects -err, and a message in reterr. The expression uses e_ as its reterr. */
#define FAILS(err, expr)                                                                           \
        do {                                                                                       \
                rkl_error e_ = RKL_ERROR_INIT;                                                     \
                int r_ = (expr);                                                                   \
                if (r_ != (err))                                                                   \
                        fail_msg("%s: want %d, got %d (%s)", #expr, (err), r_, e_.msg);            \
                assert_int_equal(e_.code, (err));                                                  \
                assert_true(e_.msg[0] != 0);                                                       \
        } while (0)

static uint64_t generation(rkl_db *s)
{
        uint64_t g = 0;
        OK(rkl_db_generation(s, &g, &e_));
        return g;
}

static void create_pod(rkl_db *s, const char *id, const char *name, uint32_t attempt)
{
        rkl_pod_spec p;
        minimal_pod_spec(&p, name, attempt);
        OK(rkl_db_pod_create(s, id, &p, NULL, &e_));
        rkl_pod_spec_done(&p);
}

static void create_container(rkl_db *s, const char *id, const char *pod_id, const char *app,
                             const char *name, uint32_t attempt)
{
        rkl_container_spec c;
        minimal_container_spec(&c, name, attempt);
        OK(rkl_db_container_create(s, id, pod_id, app, NULL, &c, NULL, &e_));
        rkl_container_spec_done(&c);
}

/* A second, raw connection for looking at the tables. */
static sqlite3 *raw_open(const char *path)
{
        sqlite3 *db = NULL;
        assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
        sqlite3_busy_timeout(db, 5000);
        return db;
}

static int64_t raw_int(sqlite3 *db, const char *sql)
{
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
                fail_msg("%s: %s", sql, sqlite3_errmsg(db));
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        int64_t v = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        return v;
}

static void raw_exec(sqlite3 *db, const char *sql)
{
        char *err = NULL;
        if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK)
                fail_msg("%s: %s", sql, err);
}

static char *slurp(const char *path, size_t *ret_n)
{
        char *buf = NULL;
        assert_int_equal(rkl_read_file_at(AT_FDCWD, path, 64 << 20, &buf, ret_n), 0);
        return buf;
}

static bool exists(const char *path)
{
        return access(path, F_OK) == 0;
}

/* Open, migrations, modes. */

static void test_open_memory(void **state)
{
        fixture *f = *state;
        unsigned v = 0;
        OK(rkl_db_schema_version(f->s, &v, &e_));
        assert_int_equal(v, rkl_db_schema_version_latest());
        assert_true(v >= 1);
        assert_int_equal(generation(f->s), 0);
        OK(rkl_db_integrity_check(f->s, &e_));
}

static void test_open_file_mode_and_reopen(void **state)
{
        fixture *f = *state;
        struct stat st;
        char side[700];
        rkl_db_options opts = {.sync_full = true, .busy_timeout_ms = 100};
        mode_t old = umask(0);

        /* Created 0600 even with umask 0. */
        OK(rkl_db_open(f->path, &opts, &f->s, &e_));
        umask(old);
        create_pod(f->s, "0000000000000000000000000000000000000000000000000000000000000001", "a",
                   0);
        assert_int_equal(stat(f->path, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0600);
        (void)snprintf(side, sizeof(side), "%s-wal", f->path);
        assert_int_equal(stat(side, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0600);
        (void)snprintf(side, sizeof(side), "%s-shm", f->path);
        assert_int_equal(stat(side, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0600);
        f->s = rkl_db_close(f->s);

        /* A loosened mode is put right; the data and the schema version are kept and no
         * migration runs again. */
        assert_int_equal(chmod(f->path, 0644), 0);
        OK(rkl_db_open(f->path, NULL, &f->s, &e_));
        assert_int_equal(stat(f->path, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0600);
        rkl_pod_record *p = NULL;
        OK(rkl_db_pod_get(f->s, "0000000000000000000000000000000000000000000000000000000000000001",
                          &p, &e_));
        assert_string_equal(p->spec.name, "a");
        p = rkl_pod_record_free(p);
        unsigned v = 0;
        OK(rkl_db_schema_version(f->s, &v, &e_));
        assert_int_equal(v, rkl_db_schema_version_latest());
        assert_int_equal(generation(f->s), 1);
        f->s = rkl_db_close(f->s);

        /* A missing directory is an error, not a crash. */
        char missing[700];
        (void)snprintf(missing, sizeof(missing), "%s/nope/x.db", f->dir);
        FAILS(-ENOENT, rkl_db_open(missing, NULL, &f->s, &e_));
        FAILS(-EINVAL, rkl_db_open("", NULL, &f->s, &e_));
        FAILS(-EISDIR, rkl_db_open(f->dir, NULL, &f->s, &e_));
}

static void test_newer_schema_refused(void **state)
{
        fixture *f = *state;
        char sql[64];
        size_t n1, n2;

        OK(rkl_db_open(f->path, NULL, &f->s, &e_));
        f->s = rkl_db_close(f->s);
        sqlite3 *db = raw_open(f->path);
        (void)snprintf(sql, sizeof(sql), "PRAGMA user_version = %u",
                       rkl_db_schema_version_latest() + 1);
        raw_exec(db, sql);
        sqlite3_close(db);
        assert_true(exists(f->path));

        _cleanup_free_ char *before = slurp(f->path, &n1);
        rkl_error e = RKL_ERROR_INIT;
        assert_int_equal(rkl_db_open(f->path, NULL, &f->s, &e), -EPROTONOSUPPORT);
        assert_null(f->s);
        assert_non_null(strstr(e.msg, "newer"));
        _cleanup_free_ char *after = slurp(f->path, &n2);
        assert_int_equal(n1, n2);
        assert_memory_equal(before, after, n1);
}

static void test_garbage_refused_untouched(void **state)
{
        fixture *f = *state;
        static const char garbage[] = "this is not a database, it is a shopping list\n"
                                      "eggs\nmilk\n";
        size_t n;
        char side[700];

        assert_int_equal(
            rkl_write_file_atomic_at(AT_FDCWD, f->path, garbage, sizeof(garbage), 0644), 0);
        rkl_error e = RKL_ERROR_INIT;
        assert_int_equal(rkl_db_open(f->path, NULL, &f->s, &e), -EUCLEAN);
        assert_null(f->s);
        _cleanup_free_ char *after = slurp(f->path, &n);
        assert_int_equal(n, sizeof(garbage));
        assert_memory_equal(after, garbage, n);
        struct stat gst;
        assert_int_equal(stat(f->path, &gst), 0);
        assert_int_equal(gst.st_mode & 07777, 0644); /* not even its mode */
        (void)snprintf(side, sizeof(side), "%s-wal", f->path);
        assert_false(exists(side));

        /* A file that starts like a database but whose pages are garbage. */
        assert_int_equal(unlink(f->path), 0);
        OK(rkl_db_open(f->path, NULL, &f->s, &e_));
        for (unsigned i = 0; i < 50; i++) {
                char id[RKL_ID_LEN + 1];
                make_id(id, "", i + 1);
                rkl_pod_spec p;
                fill_pod_spec(&p, "pod", i);
                OK(rkl_db_pod_create(f->s, id, &p, NULL, &e_));
                rkl_pod_spec_done(&p);
        }
        f->s = rkl_db_close(f->s); /* checkpoints the WAL into the file */
        struct stat st;
        assert_int_equal(stat(f->path, &st), 0);
        assert_true(st.st_size > 8192);
        /* Keep page 1 (header and schema), scribble over page 2 on. */
        _cleanup_close_ int fd = open(f->path, O_WRONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        char junk[4096];
        memset(junk, 0xa5, sizeof(junk));
        assert_int_equal(pwrite(fd, junk, sizeof(junk), 4096), (ssize_t)sizeof(junk));
        fd = safe_close(fd);
        _cleanup_free_ char *bad = slurp(f->path, &n);
        e = (rkl_error)RKL_ERROR_INIT;
        assert_int_equal(rkl_db_open(f->path, NULL, &f->s, &e), -EUCLEAN);
        assert_non_null(strstr(e.msg, "damaged"));
        size_t n2;
        _cleanup_free_ char *after2 = slurp(f->path, &n2);
        assert_int_equal(n, n2);
        assert_memory_equal(bad, after2, n);

        /* A deferred check opens it, and the check on a second connection refuses it;
         * nothing wrote to it meanwhile. */
        rkl_db *other = NULL;
        OK(rkl_db_open(f->path, &(rkl_db_options){.defer_check = true}, &f->s, &e_));
        OK(rkl_db_open(f->path, &(rkl_db_options){.skip_check = true}, &other, &e_));
        e = (rkl_error)RKL_ERROR_INIT;
        assert_int_equal(rkl_db_quick_check(other, &e), -EUCLEAN);
        assert_non_null(strstr(e.msg, "damaged"));
        other = rkl_db_close(other);
        f->s = rkl_db_close(f->s);
        _cleanup_free_ char *after3 = slurp(f->path, &n2);
        assert_int_equal(n, n2);
        assert_memory_equal(bad, after3, n);

        /* But not when a migration is due: that never runs on an unchecked file. */
        sqlite3 *db = raw_open(f->path);
        raw_exec(db, "PRAGMA user_version = 1");
        sqlite3_close(db);
        e = (rkl_error)RKL_ERROR_INIT;
        assert_int_equal(rkl_db_open(f->path, &(rkl_db_options){.defer_check = true}, &f->s, &e),
                         -EUCLEAN);
        assert_null(f->s);
}

/* A migration that fails half-way leaves nothing behind; the next one runs on a clean slate. */
static void test_migration_atomic(void **state)
{
        fixture *f = *state;
        size_t n = rkl_db__n_migrations;
        rkl_db__migration *ms = rkl_xnew0(rkl_db__migration, n + 1);
        memcpy(ms, rkl_db__migrations, n * sizeof(*ms));
        unsigned next = rkl_db_schema_version_latest() + 1;
        uint64_t g = generation(f->s);

        ms[n] = (rkl_db__migration){next, "bad.sql",
                                    "CREATE TABLE extra (x INTEGER);"
                                    "UPDATE meta SET generation = 1000;"
                                    "INSERT INTO no_such_table VALUES (1);"};
        FAILS(-EIO, rkl_db__migrate(f->s, ms, n + 1, &e_));
        unsigned v = 0;
        OK(rkl_db_schema_version(f->s, &v, &e_));
        assert_int_equal(v, next - 1);
        assert_int_equal(generation(f->s), g);

        /* Would fail with "table extra already exists" had the first one left it there. */
        ms[n].sql = "CREATE TABLE extra (x INTEGER);";
        OK(rkl_db__migrate(f->s, ms, n + 1, &e_));
        OK(rkl_db_schema_version(f->s, &v, &e_));
        assert_int_equal(v, next);
        /* Foreign keys are back on after a migration. */
        char name[] = "c", image[] = "i";
        FAILS(-ENOENT,
              rkl_db_container_create(
                  f->s, "1111111111111111111111111111111111111111111111111111111111111111",
                  "2222222222222222222222222222222222222222222222222222222222222222", "app", NULL,
                  &(rkl_container_spec){.name = name, .image = image}, NULL, &e_));
        /* And this binary now refuses the database it migrated past its knowledge. */
        FAILS(-EPROTONOSUPPORT,
              rkl_db__migrate(f->s, rkl_db__migrations, rkl_db__n_migrations, &e_));
        free(ms);
}

/* A database written by the first schema (labels in tables of their own) keeps every pair,
 * in order and byte for byte, when 0003 moves them into the rows. */
static void test_migration_labels_inline(void **state)
{
        fixture *f = *state;
        static const char pod[] =
            "00000000000000000000000000000000000000000000000000000000000000a1",
                          container[] =
                              "00000000000000000000000000000000000000000000000000000000000000c1",
                          bare[] =
                              "00000000000000000000000000000000000000000000000000000000000000c2";
        sqlite3 *db = NULL;
        assert_int_equal(
            sqlite3_open_v2(f->path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL),
            SQLITE_OK);
        for (size_t i = 0; i < rkl_db__n_migrations && rkl_db__migrations[i].version <= 2; i++)
                raw_exec(db, rkl_db__migrations[i].sql);
        raw_exec(db, "PRAGMA user_version = 2");
        raw_exec(db,
                 "INSERT INTO sandbox (id, name, namespace, uid, attempt, config, desired, "
                 "version, accepted_ns) VALUES "
                 "('00000000000000000000000000000000000000000000000000000000000000a1', 'web', "
                 "'default', 'u', 0, '{}', 'ready', 1, 1);"
                 "INSERT INTO container (id, sandbox_id, name, attempt, image, config, app_name, "
                 "desired, version, accepted_ns) VALUES "
                 "('00000000000000000000000000000000000000000000000000000000000000c1', "
                 "'00000000000000000000000000000000000000000000000000000000000000a1', 'c', 0, "
                 "'busybox', '{}', 'app', 'created', 1, 1), "
                 "('00000000000000000000000000000000000000000000000000000000000000c2', "
                 "'00000000000000000000000000000000000000000000000000000000000000a1', 'd', 0, "
                 "'busybox', '{}', 'bare', 'created', 1, 1);"
                 /* Inserted out of order: position, not rowid order, is the client's. */
                 "INSERT INTO sandbox_labels VALUES "
                 "('00000000000000000000000000000000000000000000000000000000000000a1', 1, 'b', "
                 "''), "
                 "('00000000000000000000000000000000000000000000000000000000000000a1', 0, 'z', "
                 "'1');"
                 "INSERT INTO sandbox_annotations VALUES "
                 "('00000000000000000000000000000000000000000000000000000000000000a1', 0, "
                 "'kubernetes.io/config.seen', 'now \"quoted\" \u00e9');"
                 "INSERT INTO container_labels VALUES "
                 "('00000000000000000000000000000000000000000000000000000000000000c1', 2, 'a.b', "
                 "'x'), "
                 "('00000000000000000000000000000000000000000000000000000000000000c1', 0, "
                 "'io.kubernetes.container.name', 'c'), "
                 "('00000000000000000000000000000000000000000000000000000000000000c1', 1, 'q', "
                 "'y');");
        sqlite3_close(db);

        OK(rkl_db_open(f->path, NULL, &f->s, &e_));
        unsigned v = 0;
        OK(rkl_db_schema_version(f->s, &v, &e_));
        assert_int_equal(v, rkl_db_schema_version_latest());

        rkl_pod_record *p = NULL;
        OK(rkl_db_pod_get(f->s, pod, &p, &e_));
        assert_int_equal(p->spec.labels.n, 2);
        assert_string_equal(p->spec.labels.items[0].key, "z");
        assert_string_equal(p->spec.labels.items[0].value, "1");
        assert_string_equal(p->spec.labels.items[1].key, "b");
        assert_string_equal(p->spec.labels.items[1].value, "");
        assert_int_equal(p->spec.annotations.n, 1);
        assert_string_equal(p->spec.annotations.items[0].value, "now \"quoted\" \u00e9");
        p = rkl_pod_record_free(p);

        rkl_container_record *c = NULL;
        OK(rkl_db_container_get(f->s, container, &c, &e_));
        assert_int_equal(c->spec.labels.n, 3);
        assert_string_equal(c->spec.labels.items[0].key, "io.kubernetes.container.name");
        assert_string_equal(c->spec.labels.items[1].key, "q");
        assert_string_equal(c->spec.labels.items[2].key, "a.b");
        assert_int_equal(c->spec.annotations.n, 0);
        c = rkl_container_record_free(c);
        OK(rkl_db_container_get(f->s, bare, &c, &e_));
        assert_int_equal(c->spec.labels.n, 0);
        c = rkl_container_record_free(c);
        OK(rkl_db_integrity_check(f->s, &e_));

        db = raw_open(f->path);
        assert_int_equal(
            raw_int(db, "SELECT count(*) FROM sqlite_schema WHERE name GLOB '*_labels'"), 0);
        /* What operators are told to type (docs/operators.md). */
        assert_int_equal(raw_int(db, "SELECT count(*) FROM container "
                                     "WHERE labels ->> '$.\"a.b\"' = 'x'"),
                         1);
        sqlite3_close(db);
}

/* Round trips. */

static void test_pod_roundtrip(void **state)
{
        fixture *f = *state;
        const char *id = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
        rkl_pod_spec spec;
        rkl_pod_record *p = NULL;

        fill_pod_spec(&spec, "web-0", UINT32_MAX);
        int64_t before = rkl_realtime_ns();
        OK(rkl_db_pod_create(f->s, id, &spec, NULL, &e_));
        int64_t after = rkl_realtime_ns();
        OK(rkl_db_pod_get(f->s, id, &p, &e_));
        assert_string_equal(p->id, id);
        assert_pod_spec_eq(&p->spec, &spec);
        assert_int_equal(p->desired, RKL_POD_DESIRED_READY);
        assert_int_equal(p->observed.phase, RKL_POD_PHASE_PENDING);
        assert_int_equal(p->observed.pid, 0);
        assert_null(p->observed.ip);
        assert_null(p->rkt_uuid);
        assert_null(p->unit_name);
        assert_int_equal(p->book.attempts, 0);
        assert_null(p->book.last_error);
        assert_int_equal(p->book.next_retry_ns, 0);
        assert_int_equal(p->book.version, generation(f->s));
        assert_true(p->book.accepted_ns >= before && p->book.accepted_ns <= after);
        p = rkl_pod_record_free(p);
        rkl_pod_spec_done(&spec);

        /* A minimal spec: what was NULL comes back NULL. */
        const char *id2 = "1123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
        minimal_pod_spec(&spec, "min", 0);
        OK(rkl_db_pod_create(f->s, id2, &spec, NULL, &e_));
        OK(rkl_db_pod_get(f->s, id2, &p, &e_));
        assert_pod_spec_eq(&p->spec, &spec);
        assert_null(p->spec.dns_servers);
        assert_null(p->spec.ports);
        p = rkl_pod_record_free(p);
        rkl_pod_spec_done(&spec);

        FAILS(-ENOENT, rkl_db_pod_get(
                           f->s, "2123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                           &p, &e_));
        assert_null(p);
}

/* A sandbox's network row: written before ADD, replaced as it goes, outliving the sandbox's
 * own row until its DEL, and deleted idempotently. */
static void test_pod_network(void **state)
{
        fixture *f = *state;
        const char *id = "00000000000000000000000000000000000000000000000000000000000000cc";
        create_pod(f->s, id, "net", 0);
        rkl_pod_network n = {
            .rkt_uuid = (char *)"8d6b1a0e-3c2f-4e5d-9a8b-7c6d5e4f3a2b",
            .state = RKL_POD_NETWORK_ADDING,
            .network = (char *)"podnet",
            .config = (char *)"{\"cniVersion\":\"1.0.0\",\"name\":\"podnet\",\"plugins\":[]}",
            .netns = (char *)"/var/run/netns/cni-1",
            .ifname = (char *)"eth0",
            .args = (char *)"IgnoreUnknown=1",
            .capabilities = (char *)"{}",
            .created_ns = 5,
            .updated_ns = 5,
        };
        memcpy(n.sandbox_id, id, sizeof(n.sandbox_id));
        uint64_t g = generation(f->s);
        OK(rkl_db_pod_network_put(f->s, &n, &e_));
        assert_true(generation(f->s) > g);
        n.state = RKL_POD_NETWORK_READY;
        n.result = (char *)"{\"ips\":[{\"address\":\"10.244.1.2/24\"}]}";
        n.updated_ns = 6;
        OK(rkl_db_pod_network_put(f->s, &n, &e_));

        /* The sandbox goes; its network stays until its DEL. */
        OK(rkl_db_pod_delete(f->s, id, &e_));
        rkl_pod_network **a = NULL;
        size_t k = 0;
        OK(rkl_db_pod_network_list(f->s, &a, &k, &e_));
        assert_int_equal(k, 1);
        assert_string_equal(a[0]->sandbox_id, id);
        assert_int_equal(a[0]->state, RKL_POD_NETWORK_READY);
        assert_string_equal(a[0]->result, n.result);
        assert_string_equal(a[0]->rkt_uuid, n.rkt_uuid);
        assert_string_equal(a[0]->netns, n.netns);
        assert_int_equal(a[0]->updated_ns, 6);
        assert_null(a[0]->check_error);
        a = rkl_pod_network_array_free(a, k);

        /* What is not JSON is refused by the table itself. */
        n.result = (char *)"{";
        FAILS(-EINVAL, rkl_db_pod_network_put(f->s, &n, &e_));
        n.result = NULL;
        n.network = NULL;
        FAILS(-EINVAL, rkl_db_pod_network_put(f->s, &n, &e_));

        OK(rkl_db_pod_network_delete(f->s, id, &e_));
        OK(rkl_db_pod_network_delete(f->s, id, &e_));
        OK(rkl_db_pod_network_list(f->s, &a, &k, &e_));
        assert_int_equal(k, 0);
        free(a);
}

/* A sandbox withdrawn after its RunPodSandbox failed: its row and its failure's in one
 * commit, its name free at once for the client's next attempt, the failure listed until it
 * is deleted (idempotently). */
static void test_pod_withdraw(void **state)
{
        fixture *f = *state;
        const char *id = "00000000000000000000000000000000000000000000000000000000000000dd";
        const char *id2 = "00000000000000000000000000000000000000000000000000000000000000de";
        create_pod(f->s, id, "gone", 0);
        rkl_pod_failure fl = {
            .code = -ENOSPC,
            .message = (char *)"network: no IP addresses available in range set",
            .sandbox = (char *)"ns/gone (attempt 0)",
            .failed_ns = 7,
        };
        memcpy(fl.sandbox_id, id, sizeof(fl.sandbox_id));
        uint64_t g = generation(f->s);
        OK(rkl_db_pod_withdraw(f->s, &fl, &e_));
        assert_true(generation(f->s) > g);
        rkl_pod_record *p = NULL;
        FAILS(-ENOENT, rkl_db_pod_get(f->s, id, &p, &e_));
        create_pod(f->s, id2, "gone", 0); /* the same name and attempt: free again */

        rkl_pod_failure **a = NULL;
        size_t k = 0;
        OK(rkl_db_pod_failure_list(f->s, &a, &k, &e_));
        assert_int_equal(k, 1);
        assert_string_equal(a[0]->sandbox_id, id);
        assert_int_equal(a[0]->code, -ENOSPC);
        assert_string_equal(a[0]->message, fl.message);
        assert_string_equal(a[0]->sandbox, fl.sandbox);
        assert_int_equal(a[0]->failed_ns, 7);
        a = rkl_pod_failure_array_free(a, k);

        /* Gone already: nothing is recorded. A code that is not a -errno is refused. */
        FAILS(-ENOENT, rkl_db_pod_withdraw(f->s, &fl, &e_));
        memcpy(fl.sandbox_id, id2, sizeof(fl.sandbox_id));
        fl.code = 28;
        FAILS(-EINVAL, rkl_db_pod_withdraw(f->s, &fl, &e_));
        OK(rkl_db_pod_get(f->s, id2, &p, &e_));
        p = rkl_pod_record_free(p);

        OK(rkl_db_pod_failure_delete(f->s, id, &e_));
        OK(rkl_db_pod_failure_delete(f->s, id, &e_));
        OK(rkl_db_pod_failure_list(f->s, &a, &k, &e_));
        assert_int_equal(k, 0);
        free(a);
}

static void test_pod_observed_and_identity(void **state)
{
        fixture *f = *state;
        const char *id = "00000000000000000000000000000000000000000000000000000000000000aa";
        const char *id2 = "00000000000000000000000000000000000000000000000000000000000000bb";
        rkl_pod_record *p = NULL;
        create_pod(f->s, id, "a", 0);
        create_pod(f->s, id2, "b", 0);

        char ip[] = "10.1.2.3", reason[] = "Started", message[] = "supervisor ready";
        rkl_pod_observed o = {.phase = RKL_POD_PHASE_RUNNING,
                              .pid = 4242,
                              .ip = ip,
                              .additional_ips = (char **)RKL_STRV("fd00::3"),
                              .created_ns = 1,
                              .started_ns = INT64_C(1700000000123456789),
                              .reason = reason,
                              .message = message};
        OK(rkl_db_pod_set_observed(f->s, id, &o, &e_));
        OK(rkl_db_pod_set_rkt_uuid(f->s, id, "8d6b1a0e-3c2f-4e5d-9a8b-7c6d5e4f3a2b", &e_));
        OK(rkl_db_pod_set_unit_name(f->s, id, "rktlet-00000000aa.service", &e_));
        OK(rkl_db_pod_set_desired(f->s, id, RKL_POD_DESIRED_STOPPED, &e_));
        OK(rkl_db_pod_get(f->s, id, &p, &e_));
        assert_int_equal(p->desired, RKL_POD_DESIRED_STOPPED);
        assert_int_equal(p->observed.phase, RKL_POD_PHASE_RUNNING);
        assert_int_equal(p->observed.pid, 4242);
        assert_string_equal(p->observed.ip, "10.1.2.3");
        assert_int_equal(rkl_strv_length(p->observed.additional_ips), 1);
        assert_string_equal(p->observed.additional_ips[0], "fd00::3");
        assert_int_equal(p->observed.created_ns, 1);
        assert_int_equal(p->observed.started_ns, INT64_C(1700000000123456789));
        assert_int_equal(p->observed.finished_ns, 0);
        assert_string_equal(p->observed.reason, "Started");
        assert_string_equal(p->observed.message, "supervisor ready");
        assert_string_equal(p->rkt_uuid, "8d6b1a0e-3c2f-4e5d-9a8b-7c6d5e4f3a2b");
        assert_string_equal(p->unit_name, "rktlet-00000000aa.service");
        assert_int_equal(p->book.version, generation(f->s));
        p = rkl_pod_record_free(p);

        /* rkt UUIDs and unit names are unique across sandboxes. */
        FAILS(-EEXIST,
              rkl_db_pod_set_rkt_uuid(f->s, id2, "8d6b1a0e-3c2f-4e5d-9a8b-7c6d5e4f3a2b", &e_));
        FAILS(-EEXIST, rkl_db_pod_set_unit_name(f->s, id2, "rktlet-00000000aa.service", &e_));
        /* Forgetting them (the pod was removed from rkt) frees them for reuse. */
        OK(rkl_db_pod_set_rkt_uuid(f->s, id, NULL, &e_));
        OK(rkl_db_pod_set_unit_name(f->s, id, NULL, &e_));
        OK(rkl_db_pod_set_rkt_uuid(f->s, id2, "8d6b1a0e-3c2f-4e5d-9a8b-7c6d5e4f3a2b", &e_));
        OK(rkl_db_pod_get(f->s, id, &p, &e_));
        assert_null(p->rkt_uuid);
        assert_null(p->unit_name);
        p = rkl_pod_record_free(p);

        /* Backoff bookkeeping. */
        assert_int_equal(rkl_db_pod_record_error(f->s, id, "rkt: exit 1", 111, NULL), 1);
        assert_int_equal(rkl_db_pod_record_error(f->s, id, "rkt: exit 2", 222, NULL), 2);
        /* Machine text is kept even when it is not UTF-8 or too long: cut and patched. */
        char *longerr = rkl_xmalloc(RKL_MAX_STRING + 100);
        memset(longerr, 'x', RKL_MAX_STRING + 99);
        longerr[0] = '\xff';
        longerr[1] = '\xc3'; /* truncated sequence */
        longerr[RKL_MAX_STRING + 99] = 0;
        assert_int_equal(rkl_db_pod_record_error(f->s, id, longerr, 333, NULL), 3);
        free(longerr);
        OK(rkl_db_pod_get(f->s, id, &p, &e_));
        assert_int_equal(p->book.attempts, 3);
        assert_int_equal(p->book.next_retry_ns, 333);
        assert_int_equal(strlen(p->book.last_error), RKL_MAX_STRING);
        assert_int_equal(p->book.last_error[0], '?');
        assert_int_equal(p->book.last_error[1], '?');
        assert_int_equal(p->book.last_error[2], 'x');
        p = rkl_pod_record_free(p);
        OK(rkl_db_pod_clear_error(f->s, id, &e_));
        OK(rkl_db_pod_get(f->s, id, &p, &e_));
        assert_int_equal(p->book.attempts, 0);
        assert_null(p->book.last_error);
        assert_int_equal(p->book.next_retry_ns, 0);
        p = rkl_pod_record_free(p);

        const char *none = "00000000000000000000000000000000000000000000000000000000000000cc";
        FAILS(-ENOENT, rkl_db_pod_set_desired(f->s, none, RKL_POD_DESIRED_READY, &e_));
        FAILS(-ENOENT, rkl_db_pod_set_observed(f->s, none, &o, &e_));
        FAILS(-ENOENT, rkl_db_pod_record_error(f->s, none, "x", 0, &e_));
        FAILS(-ENOENT, rkl_db_pod_clear_error(f->s, none, &e_));
        FAILS(-ENOENT, rkl_db_pod_set_rkt_uuid(f->s, none, NULL, &e_));
        FAILS(-ENOENT, rkl_db_pod_stop(f->s, none, &e_));
        FAILS(-ENOENT, rkl_db_pod_delete(f->s, none, &e_));
}

static void test_container_roundtrip(void **state)
{
        fixture *f = *state;
        const char *pod = "00000000000000000000000000000000000000000000000000000000000000aa";
        const char *id = "c000000000000000000000000000000000000000000000000000000000000001";
        rkl_container_spec spec;
        rkl_container_record *c = NULL;

        create_pod(f->s, pod, "p", 0);
        fill_container_spec(&spec, "busybox", 3);
        OK(rkl_db_container_create(f->s, id, pod, "c000000000000001", NULL, &spec, NULL, &e_));
        OK(rkl_db_container_get(f->s, id, &c, &e_));
        assert_string_equal(c->id, id);
        assert_string_equal(c->sandbox_id, pod);
        assert_string_equal(c->app_name, "c000000000000001");
        assert_container_spec_eq(&c->spec, &spec);
        assert_int_equal(c->desired, RKL_CONTAINER_DESIRED_CREATED);
        assert_int_equal(c->observed.phase, RKL_CONTAINER_PHASE_CREATED);
        assert_false(c->observed.has_exit_code);
        c = rkl_container_record_free(c);
        rkl_container_spec_done(&spec);

        char reason[] = "OOMKilled", message[] = "killed: memory", ref[] = "sha512-abc";
        rkl_container_observed o = {
            RKL_CONTAINER_PHASE_EXITED, 77, true, 137, 10, 20, 30, reason, message, ref};
        OK(rkl_db_container_start(f->s, id, NULL, &e_));
        OK(rkl_db_container_set_observed(f->s, id, &o, &e_));
        OK(rkl_db_container_get(f->s, id, &c, &e_));
        assert_int_equal(c->desired, RKL_CONTAINER_DESIRED_RUNNING);
        assert_int_equal(c->observed.phase, RKL_CONTAINER_PHASE_EXITED);
        assert_int_equal(c->observed.pid, 77);
        assert_true(c->observed.has_exit_code);
        assert_int_equal(c->observed.exit_code, 137);
        assert_int_equal(c->observed.created_ns, 10);
        assert_int_equal(c->observed.started_ns, 20);
        assert_int_equal(c->observed.finished_ns, 30);
        assert_string_equal(c->observed.reason, "OOMKilled");
        assert_string_equal(c->observed.message, "killed: memory");
        assert_string_equal(c->observed.image_ref, "sha512-abc");
        c = rkl_container_record_free(c);

        /* Exit code 0 is a value, not "unknown". */
        o = (rkl_container_observed){.phase = RKL_CONTAINER_PHASE_EXITED, .has_exit_code = true};
        OK(rkl_db_container_set_observed(f->s, id, &o, &e_));
        OK(rkl_db_container_get(f->s, id, &c, &e_));
        assert_true(c->observed.has_exit_code);
        assert_int_equal(c->observed.exit_code, 0);
        assert_null(c->observed.reason);
        c = rkl_container_record_free(c);

        assert_int_equal(rkl_db_container_record_error(f->s, id, "app add failed", 5, NULL), 1);
        OK(rkl_db_container_get(f->s, id, &c, &e_));
        assert_string_equal(c->book.last_error, "app add failed");
        c = rkl_container_record_free(c);
        OK(rkl_db_container_clear_error(f->s, id, &e_));

        /* A minimal spec. */
        const char *id2 = "c000000000000000000000000000000000000000000000000000000000000002";
        minimal_container_spec(&spec, "min", 0);
        OK(rkl_db_container_create(f->s, id2, pod, "c2", NULL, &spec, NULL, &e_));
        OK(rkl_db_container_get(f->s, id2, &c, &e_));
        assert_container_spec_eq(&c->spec, &spec);
        assert_false(c->spec.has_run_as_user);
        assert_null(c->spec.mounts);
        c = rkl_container_record_free(c);
        rkl_container_spec_done(&spec);
}

/* Constraints CRI implies. */

static void test_constraints(void **state)
{
        fixture *f = *state;
        const char *p1 = "00000000000000000000000000000000000000000000000000000000000000a1";
        const char *p2 = "00000000000000000000000000000000000000000000000000000000000000a2";
        const char *c1 = "00000000000000000000000000000000000000000000000000000000000000c1";
        const char *c2 = "00000000000000000000000000000000000000000000000000000000000000c2";
        const char *c3 = "00000000000000000000000000000000000000000000000000000000000000c3";
        rkl_pod_spec ps;
        rkl_container_spec cs;

        create_pod(f->s, p1, "web", 0);
        minimal_pod_spec(&ps, "web", 0);
        FAILS(-EEXIST, rkl_db_pod_create(f->s, p1, &ps, NULL, &e_)); /* same ID */
        FAILS(-EEXIST, rkl_db_pod_create(f->s, p2, &ps, NULL, &e_)); /* same name and attempt */
        ps.attempt = 1;
        OK(rkl_db_pod_create(f->s, p2, &ps, NULL, &e_)); /* next attempt */
        rkl_pod_spec_done(&ps);

        create_container(f->s, c1, p1, "app1", "nginx", 0);
        minimal_container_spec(&cs, "nginx", 0);
        FAILS(-EEXIST,
              rkl_db_container_create(f->s, c1, p1, "app9", NULL, &cs, NULL, &e_)); /* ID */
        FAILS(-EEXIST,
              rkl_db_container_create(f->s, c2, p1, "app2", NULL, &cs, NULL, &e_)); /* name */
        cs.attempt = 1;
        FAILS(-EEXIST,
              rkl_db_container_create(f->s, c2, p1, "app1", NULL, &cs, NULL, &e_)); /* app */
        OK(rkl_db_container_create(f->s, c2, p1, "app2", NULL, &cs, NULL, &e_));
        cs.attempt = 0;
        /* Same name and app name in another sandbox is fine. */
        OK(rkl_db_container_create(f->s, c3, p2, "app1", NULL, &cs, NULL, &e_));
        /* A container needs its sandbox. */
        FAILS(-ENOENT, rkl_db_container_create(
                           f->s, "00000000000000000000000000000000000000000000000000000000000000c4",
                           "00000000000000000000000000000000000000000000000000000000000000a9", "x",
                           NULL, &cs, NULL, &e_));
        rkl_container_spec_done(&cs);
}

static char *repeat(char c, size_t n)
{
        char *s = rkl_xmalloc(n + 1);
        memset(s, c, n);
        s[n] = 0;
        return s;
}

static const char *const pod_case_field[] = {
    "metadata.name",
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "metadata.name",
    "labels",
    "labels",
    "labels",
    "labels",
    "labels",
    "labels",
    "labels",
    "annotations",
    "sysctls",
    "port_mappings",
    "port_mappings",
    "port_mappings",
    "hostname",
    "dns_config.servers",
    NULL,
};

/* Breaks one field of a full spec, in the way case i says. */
static void mutate_pod(rkl_pod_spec *q, int i)
{
        char k[16];
        switch (i) {
        case 0:
                free(q->name);
                q->name = S("");
                break;
        case 1:
                free(q->name);
                q->name = NULL;
                break;
        case 2:
                free(q->namespace);
                q->namespace = S("");
                break;
        case 3:
                free(q->uid);
                q->uid = NULL;
                break;
        case 4:
                free(q->name);
                q->name = repeat('n', RKL_MAX_NAME + 1);
                break;
        case 5:
                rkl_kvs_add(&q->labels, "", "v");
                break;
        case 6:
                rkl_kvs_add(&q->labels, "app", "dup");
                break;
        case 7:
                rkl_kvs_add(&q->labels, "k", "\xc3\x28"); /* truncated sequence */
                break;
        case 8:
                rkl_kvs_add(&q->labels, "k", "\xed\xa0\x80"); /* surrogate */
                break;
        case 9:
                rkl_kvs_add(&q->labels, "k", "\xc0\xaf"); /* overlong '/' */
                break;
        case 10:
                rkl_kvs_add(&q->labels, "k", NULL);
                break;
        case 11:
                for (unsigned j = 0; j <= RKL_MAX_KV; j++) {
                        (void)snprintf(k, sizeof(k), "k%u", j);
                        rkl_kvs_add(&q->labels, k, "v");
                }
                break;
        case 12: {
                char *key = repeat('k', RKL_MAX_KEY + 1);
                rkl_kvs_add(&q->annotations, key, "");
                free(key);
                break;
        }
        case 13:
                rkl_kvs_add(&q->sysctls, "net.core.somaxconn", "1");
                break;
        case 14:
                q->ports[0].protocol = 7;
                break;
        case 15:
                q->ports[1].host_port = 70000;
                break;
        case 16:
                for (size_t j = 0; j < q->n_ports; j++)
                        free(q->ports[j].host_ip);
                free(q->ports);
                q->ports = NULL; /* n_ports stays 2 */
                break;
        case 17:
                free(q->hostname);
                q->hostname = S("\xff");
                break;
        case 18:
                rkl_strv_push(&q->dns_servers, "\x80");
                break;
        default:
                fail();
        }
}

/* Invalid input: -EINVAL naming the field, and nothing committed. */
static void test_invalid_input(void **state)
{
        fixture *f = *state;
        const char *pod = "00000000000000000000000000000000000000000000000000000000000000a1";
        const char *container = "00000000000000000000000000000000000000000000000000000000000000c1";
        rkl_pod_spec p;
        rkl_container_spec c;
        rkl_error e = RKL_ERROR_INIT;
        uint64_t g0 = generation(f->s);

        /* IDs. */
        minimal_pod_spec(&p, "x", 0);
        const char *bad_ids[] = {
            "",
            "abc",
            "00000000000000000000000000000000000000000000000000000000000000A1",
            "00000000000000000000000000000000000000000000000000000000000000g1",
            "00000000000000000000000000000000000000000000000000000000000000a",
            "00000000000000000000000000000000000000000000000000000000000000a1a"};
        for (size_t i = 0; i < ELEMENTSOF(bad_ids); i++) {
                e = (rkl_error)RKL_ERROR_INIT;
                assert_int_equal(rkl_db_pod_create(f->s, bad_ids[i], &p, NULL, &e), -EINVAL);
                assert_non_null(strstr(e.msg, "pod_sandbox_id"));
        }
        assert_int_equal(rkl_db_pod_create(f->s, NULL, &p, NULL, NULL), -EINVAL);
        assert_int_equal(rkl_db_pod_create(f->s, pod, NULL, NULL, NULL), -EINVAL);
        rkl_pod_spec_done(&p);

        /* Pod fields: each case names its field. */
        for (int i = 0; pod_case_field[i]; i++) {
                fill_pod_spec(&p, "web", 0);
                mutate_pod(&p, i);
                e = (rkl_error)RKL_ERROR_INIT;
                int r = rkl_db_pod_create(f->s, pod, &p, NULL, &e);
                if (r != -EINVAL || !strstr(e.msg, pod_case_field[i]))
                        fail_msg("case %d: want -EINVAL naming '%s', got %d '%s'", i,
                                 pod_case_field[i], r, e.msg);
                if (!p.ports)
                        p.n_ports = 0;
                rkl_pod_spec_done(&p);
        }
        FAILS(-ENOENT, rkl_db_pod_get(f->s, pod, &(rkl_pod_record *){NULL}, &e_));

        /* Containers. */
        create_pod(f->s, pod, "web", 0);
        uint64_t g1 = generation(f->s);
        assert_int_equal(g1, g0 + 1); /* every refusal above committed nothing */
        const char *bad_apps[] = {"", "App", "-a", "a-", "a--b", "a_b", "a/b", NULL};
        for (size_t i = 0; i < ELEMENTSOF(bad_apps); i++) {
                minimal_container_spec(&c, "c", 0);
                FAILS(-EINVAL, rkl_db_container_create(f->s, container, pod, bad_apps[i], NULL, &c,
                                                       NULL, &e_));
                rkl_container_spec_done(&c);
        }
        minimal_container_spec(&c, "c", 0);
        free(c.image);
        c.image = S("");
        e = (rkl_error)RKL_ERROR_INIT;
        assert_int_equal(rkl_db_container_create(f->s, container, pod, "app", NULL, &c, NULL, &e),
                         -EINVAL);
        assert_non_null(strstr(e.msg, "image"));
        rkl_container_spec_done(&c);
        fill_container_spec(&c, "c", 0);
        free(c.mounts[1].container_path);
        c.mounts[1].container_path = S("");
        e = (rkl_error)RKL_ERROR_INIT;
        assert_int_equal(rkl_db_container_create(f->s, container, pod, "app", NULL, &c, NULL, &e),
                         -EINVAL);
        assert_non_null(strstr(e.msg, "mounts[1].container_path"));
        rkl_container_spec_done(&c);
        fill_container_spec(&c, "c", 0);
        c.seccomp = 9;
        FAILS(-EINVAL, rkl_db_container_create(f->s, container, pod, "app", NULL, &c, NULL, &e_));
        c.seccomp = RKL_SECCOMP_UNCONFINED;
        c.mounts[0].propagation = 5;
        FAILS(-EINVAL, rkl_db_container_create(f->s, container, pod, "app", NULL, &c, NULL, &e_));
        rkl_container_spec_done(&c);
        FAILS(-ENOENT, rkl_db_container_get(f->s, container, &(rkl_container_record *){NULL}, &e_));

        /* Updates. */
        create_container(f->s, container, pod, "app", "c", 0);
        uint64_t g2 = generation(f->s);
        FAILS(-EINVAL, rkl_db_pod_set_desired(f->s, pod, 7, &e_));
        FAILS(-EINVAL, rkl_db_pod_set_desired(f->s, pod, _RKL_POD_DESIRED_INVALID, &e_));
        FAILS(-EINVAL, rkl_db_pod_set_observed(f->s, pod, &(rkl_pod_observed){.phase = 4}, &e_));
        FAILS(-EINVAL, rkl_db_pod_set_observed(f->s, pod, &(rkl_pod_observed){.pid = -1}, &e_));
        FAILS(-EINVAL,
              rkl_db_pod_set_observed(f->s, pod, &(rkl_pod_observed){.started_ns = -5}, &e_));
        FAILS(-EINVAL, rkl_db_container_set_observed(
                           f->s, container,
                           &(rkl_container_observed){.phase = _RKL_CONTAINER_PHASE_INVALID}, &e_));
        FAILS(-EINVAL, rkl_db_pod_set_rkt_uuid(f->s, pod, "not-a-uuid", &e_));
        FAILS(-EINVAL,
              rkl_db_pod_set_rkt_uuid(f->s, pod, "8D6B1A0E-3C2F-4E5D-9A8B-7C6D5E4F3A2B", &e_));
        FAILS(-EINVAL,
              rkl_db_pod_set_rkt_uuid(f->s, pod, "8d6b1a0e-3c2f-4e5d-9a8b-7c6d5e4f3a2b0", &e_));
        FAILS(-EINVAL, rkl_db_pod_set_unit_name(f->s, pod, "a b.service", &e_));
        FAILS(-EINVAL, rkl_db_pod_set_unit_name(f->s, pod, "", &e_));
        FAILS(-EINVAL, rkl_db_pod_record_error(f->s, pod, "x", -1, &e_));
        FAILS(-EINVAL, rkl_db_pod_delete(f->s, "xyz", &e_));
        FAILS(-EINVAL, rkl_db_container_delete(f->s, NULL, &e_));
        FAILS(-EINVAL, rkl_db_pod_list(f->s, &(rkl_pod_filter){.id = "zz"},
                                       &(rkl_pod_record **){NULL}, &(size_t){0}, &e_));
        assert_int_equal(generation(f->s), g2);
}

/* A write that fails half-way through its statements commits nothing: a trigger injects the
 * failure after the sandbox row and its labels are in. */
static void test_all_or_nothing(void **state)
{
        fixture *f = *state;
        const char *pod = "00000000000000000000000000000000000000000000000000000000000000a1";
        const char *container = "00000000000000000000000000000000000000000000000000000000000000c1";
        rkl_pod_spec p;
        rkl_container_spec c;
        sqlite3 *db = raw_open(f->path);

        /* Fails each insert after the generation bump of its transaction. */
        raw_exec(db, "CREATE TRIGGER inject_pod BEFORE INSERT ON sandbox "
                     "WHEN NEW.annotations ->> '$.boom' IS NOT NULL "
                     "BEGIN SELECT RAISE(ABORT, 'injected'); END;"
                     "CREATE TRIGGER inject_ctr BEFORE INSERT ON container "
                     "WHEN NEW.annotations ->> '$.boom' IS NOT NULL "
                     "BEGIN SELECT RAISE(ABORT, 'injected'); END;");
        uint64_t g = generation(f->s);
        fill_pod_spec(&p, "web", 0);
        rkl_kvs_add(&p.annotations, "boom", "");
        rkl_error e = RKL_ERROR_INIT;
        assert_true(rkl_db_pod_create(f->s, pod, &p, NULL, &e) < 0);
        assert_non_null(strstr(e.msg, "injected"));
        rkl_pod_spec_done(&p);
        assert_int_equal(generation(f->s), g);
        assert_int_equal(raw_int(db, "SELECT count(*) FROM sandbox"), 0);

        create_pod(f->s, pod, "web", 0);
        g = generation(f->s);
        fill_container_spec(&c, "c", 0);
        rkl_kvs_add(&c.annotations, "boom", "");
        assert_true(rkl_db_container_create(f->s, container, pod, "app", NULL, &c, NULL, NULL) < 0);
        rkl_container_spec_done(&c);
        assert_int_equal(generation(f->s), g);
        assert_int_equal(raw_int(db, "SELECT count(*) FROM container"), 0);
        /* The store is still usable after a rolled-back transaction. */
        create_container(f->s, container, pod, "app", "c", 0);
        assert_int_equal(generation(f->s), g + 1);
        sqlite3_close(db);
}

static void test_resolve(void **state)
{
        fixture *f = *state;
        char ids[4][RKL_ID_LEN + 1], got[RKL_ID_LEN + 1];
        make_id(ids[0], "abc0", 1);
        make_id(ids[1], "abc1", 2);
        make_id(ids[2], "def", 3);
        make_id(ids[3], "ffff", 4);
        for (size_t i = 0; i < 4; i++) {
                char name[8];
                (void)snprintf(name, sizeof(name), "p%zu", i);
                create_pod(f->s, ids[i], name, 0);
        }
        FAILS(-ENOTUNIQ, rkl_db_pod_resolve(f->s, "abc", got, &e_));
        FAILS(-ENOTUNIQ, rkl_db_pod_resolve(f->s, "a", got, &e_));
        OK(rkl_db_pod_resolve(f->s, "abc0", got, &e_));
        assert_string_equal(got, ids[0]);
        OK(rkl_db_pod_resolve(f->s, "d", got, &e_));
        assert_string_equal(got, ids[2]);
        OK(rkl_db_pod_resolve(f->s, "f", got, &e_)); /* the top of the range */
        assert_string_equal(got, ids[3]);
        OK(rkl_db_pod_resolve(f->s, ids[1], got, &e_));
        assert_string_equal(got, ids[1]);
        FAILS(-ENOENT, rkl_db_pod_resolve(f->s, "0", got, &e_));
        FAILS(-ENOENT, rkl_db_pod_resolve(f->s, "abc2", got, &e_));
        FAILS(-EINVAL, rkl_db_pod_resolve(f->s, "", got, &e_));
        FAILS(-EINVAL, rkl_db_pod_resolve(f->s, "ABC", got, &e_));
        FAILS(-EINVAL, rkl_db_pod_resolve(f->s, "abc%", got, &e_));
        FAILS(-EINVAL, rkl_db_pod_resolve(f->s, NULL, got, &e_));

        char cid[RKL_ID_LEN + 1];
        make_id(cid, "abc0", 9); /* a container ID may share a sandbox's prefix */
        create_container(f->s, cid, ids[0], "app", "c", 0);
        OK(rkl_db_container_resolve(f->s, "abc", got, &e_));
        assert_string_equal(got, cid);
        FAILS(-ENOENT, rkl_db_container_resolve(f->s, "d", got, &e_));
}

static void test_generation(void **state)
{
        fixture *f = *state;
        const char *pod = "00000000000000000000000000000000000000000000000000000000000000a1";
        const char *container = "00000000000000000000000000000000000000000000000000000000000000c1";
        uint64_t g = generation(f->s), dv1 = 0, dv2 = 0;
        rkl_db *other = NULL;
        rkl_pod_record *p = NULL;

        OK(rkl_db_open(f->path, &(rkl_db_options){.skip_check = true}, &other, &e_));
        OK(rkl_db_data_version(f->s, &dv1, &e_));
        create_pod(f->s, pod, "a", 0);
        assert_int_equal(generation(f->s), g + 1);
        assert_int_equal(generation(other), g + 1); /* seen by every connection */
        create_container(f->s, container, pod, "app", "c", 0);
        OK(rkl_db_pod_set_desired(f->s, pod, RKL_POD_DESIRED_READY, &e_));
        OK(rkl_db_pod_set_observed(f->s, pod, &(rkl_pod_observed){0}, &e_));
        OK(rkl_db_container_set_observed(f->s, container, &(rkl_container_observed){0}, &e_));
        assert_int_equal(generation(f->s), g + 5);
        /* Reads and refused writes do not count. */
        OK(rkl_db_pod_get(f->s, pod, &p, &e_));
        assert_int_equal(p->book.version, g + 4);
        p = rkl_pod_record_free(p);
        FAILS(-ENOENT,
              rkl_db_pod_delete(
                  f->s, "00000000000000000000000000000000000000000000000000000000000000a2", &e_));
        assert_int_equal(generation(f->s), g + 5);

        /* data_version moves for another connection's commits, not for our own. */
        OK(rkl_db_data_version(f->s, &dv2, &e_));
        assert_true(dv1 == dv2);
        OK(rkl_db_pod_stop(other, pod, &e_));
        OK(rkl_db_data_version(f->s, &dv2, &e_));
        assert_true(dv1 != dv2);
        assert_int_equal(generation(f->s), g + 6);
        other = rkl_db_close(other);
}

static void test_cascade_and_stop(void **state)
{
        fixture *f = *state;
        const char *p1 = "00000000000000000000000000000000000000000000000000000000000000a1";
        const char *p2 = "00000000000000000000000000000000000000000000000000000000000000a2";
        const char *c1 = "00000000000000000000000000000000000000000000000000000000000000c1";
        const char *c2 = "00000000000000000000000000000000000000000000000000000000000000c2";
        const char *c3 = "00000000000000000000000000000000000000000000000000000000000000c3";
        rkl_container_spec cs;
        rkl_container_record *c = NULL;
        sqlite3 *db = raw_open(f->path);

        create_pod(f->s, p1, "a", 0);
        create_pod(f->s, p2, "b", 0);
        fill_container_spec(&cs, "one", 0);
        OK(rkl_db_container_create(f->s, c1, p1, "one", NULL, &cs, NULL, &e_));
        rkl_container_spec_done(&cs);
        fill_container_spec(&cs, "two", 0);
        OK(rkl_db_container_create(f->s, c2, p1, "two", NULL, &cs, NULL, &e_));
        rkl_container_spec_done(&cs);
        create_container(f->s, c3, p2, "one", "one", 0);
        OK(rkl_db_container_start(f->s, c2, NULL, &e_));

        /* StopPodSandbox: the sandbox and its containers, not the neighbour's. */
        OK(rkl_db_pod_stop(f->s, p1, &e_));
        OK(rkl_db_container_get(f->s, c1, &c, &e_));
        assert_int_equal(c->desired, RKL_CONTAINER_DESIRED_STOPPED);
        c = rkl_container_record_free(c);
        OK(rkl_db_container_get(f->s, c2, &c, &e_));
        assert_int_equal(c->desired, RKL_CONTAINER_DESIRED_STOPPED);
        c = rkl_container_record_free(c);
        OK(rkl_db_container_get(f->s, c3, &c, &e_));
        assert_int_equal(c->desired, RKL_CONTAINER_DESIRED_CREATED);
        c = rkl_container_record_free(c);

        /* Deleting a container takes only it; deleting a sandbox takes its containers. */
        OK(rkl_db_container_delete(f->s, c2, &e_));
        FAILS(-ENOENT, rkl_db_container_delete(f->s, c2, &e_));
        assert_int_equal(raw_int(db, "SELECT count(*) FROM container WHERE id LIKE '%c2'"), 0);
        assert_int_equal(raw_int(db, "SELECT count(*) FROM container"), 2);
        OK(rkl_db_pod_delete(f->s, p1, &e_));
        FAILS(-ENOENT, rkl_db_container_get(f->s, c1, &c, &e_));
        OK(rkl_db_container_get(f->s, c3, &c, &e_));
        c = rkl_container_record_free(c);
        assert_int_equal(raw_int(db, "SELECT count(*) FROM container"), 1);
        assert_int_equal(raw_int(db, "SELECT count(*) FROM sandbox"), 1);
        OK(rkl_db_integrity_check(f->s, &e_));
        sqlite3_close(db);
}

static void test_container_stop_deadline(void **state)
{
        fixture *f = *state;
        const char *p1 = "00000000000000000000000000000000000000000000000000000000000000b1";
        const char *c1 = "00000000000000000000000000000000000000000000000000000000000000d1";
        rkl_container_record *c = NULL;

        create_pod(f->s, p1, "a", 0);
        create_container(f->s, c1, p1, "one", "one", 0);
        OK(rkl_db_container_get(f->s, c1, &c, &e_));
        assert_int_equal(c->stop_deadline_ns, 0);
        uint64_t v0 = c->book.version;
        c = rkl_container_record_free(c);

        /* A later, longer stop never pushes a deadline back; a shorter one brings it in. */
        OK(rkl_db_container_stop(f->s, c1, 2000, NULL, &e_));
        OK(rkl_db_container_stop(f->s, c1, 5000, NULL, &e_));
        OK(rkl_db_container_get(f->s, c1, &c, &e_));
        assert_int_equal(c->desired, RKL_CONTAINER_DESIRED_STOPPED);
        assert_int_equal(c->stop_deadline_ns, 2000);
        assert_true(c->book.version > v0);
        c = rkl_container_record_free(c);
        OK(rkl_db_container_stop(f->s, c1, 1000, NULL, &e_));
        OK(rkl_db_container_get(f->s, c1, &c, &e_));
        assert_int_equal(c->stop_deadline_ns, 1000);
        c = rkl_container_record_free(c);

        FAILS(-EINVAL, rkl_db_container_stop(f->s, c1, 0, NULL, &e_));
        FAILS(-ENOENT, rkl_db_container_stop(
                           f->s, "00000000000000000000000000000000000000000000000000000000000000d9",
                           1000, NULL, &e_));
}

static void count_call(void *userdata)
{
        (*(unsigned *)userdata)++;
}

/* A connection that leaves checkpoints to another asks for one once the WAL is big, never
 * copies it itself, and the other's checkpoint does the copying. */
static void test_checkpoint_elsewhere(void **state)
{
        fixture *f = *state;
        unsigned asked = 0, n = 0;
        rkl_db *api = NULL;
        char wal[700];
        struct stat st;

        OK(rkl_db_open(f->path, NULL, &f->s, &e_));
        OK(rkl_db_open(f->path,
                       &(rkl_db_options){.skip_check = true,
                                         .checkpoint_wanted = count_call,
                                         .checkpoint_userdata = &asked},
                       &api, &e_));
        /* Past the threshold, and half as far again. */
        for (unsigned extra = 0; extra < 100 && n < 5000; n++) {
                char id[RKL_ID_LEN + 1];
                make_id(id, "c", n + 1);
                create_pod(api, id, "p", n);
                extra += asked > 0;
        }
        assert_true(asked > 0);
        /* Its commits never copied the WAL back (which restarts it from the top). */
        (void)snprintf(wal, sizeof(wal), "%s-wal", f->path);
        assert_int_equal(stat(wal, &st), 0);
        assert_true(st.st_size > (off_t)(RKL_DB_CHECKPOINT_FRAMES * 4120 * 6 / 5));
        assert_int_equal(stat(f->path, &st), 0);
        off_t before = st.st_size;
        /* The other connection's checkpoint does. */
        OK(rkl_db_checkpoint(f->s, &e_));
        assert_int_equal(stat(f->path, &st), 0);
        assert_true(st.st_size > before);
        api = rkl_db_close(api);
}

/* What a write hands back is what it committed: the record a get reads afterwards. */
static void assert_same_container(rkl_db *s, const rkl_container_record *got)
{
        rkl_container_record *c = NULL;
        OK(rkl_db_container_get(s, got->id, &c, &e_));
        assert_container_spec_eq(&got->spec, &c->spec);
        assert_string_equal(got->sandbox_id, c->sandbox_id);
        assert_int_equal(got->observed.has_exit_code, c->observed.has_exit_code);
        assert_int_equal(got->desired, c->desired);
        assert_int_equal(got->observed.phase, c->observed.phase);
        assert_int_equal(got->book.version, c->book.version);
        assert_int_equal(got->book.accepted_ns, c->book.accepted_ns);
        assert_int_equal(got->stop_deadline_ns, c->stop_deadline_ns);
        assert_string_equal(got->app_name, c->app_name);
        rkl_container_record_free(c);
}

static void test_writes_hand_back_records(void **state)
{
        fixture *f = *state;
        const char *p1 = "00000000000000000000000000000000000000000000000000000000000000b2";
        const char *c1 = "00000000000000000000000000000000000000000000000000000000000000d2";
        const char *c2 = "00000000000000000000000000000000000000000000000000000000000000d3";
        rkl_pod_record *p = NULL;
        rkl_container_record *c = NULL;
        rkl_pod_spec ps;
        rkl_container_spec cs;

        fill_pod_spec(&ps, "web", 0);
        OK(rkl_db_pod_create(f->s, p1, &ps, &p, &e_));
        assert_null(ps.name); /* moved into the record */
        assert_int_equal(p->book.version, generation(f->s));
        rkl_pod_record *got = NULL;
        OK(rkl_db_pod_get(f->s, p1, &got, &e_));
        assert_pod_spec_eq(&p->spec, &got->spec);
        assert_int_equal(p->desired, got->desired);
        assert_int_equal(p->observed.phase, got->observed.phase);
        assert_int_equal(p->book.accepted_ns, got->book.accepted_ns);
        assert_int_equal(p->book.version, got->book.version);
        got = rkl_pod_record_free(got);
        p = rkl_pod_record_free(p);
        rkl_pod_spec_done(&ps);

        fill_container_spec(&cs, "one", 0);
        OK(rkl_db_container_create(f->s, c1, p1, "one", NULL, &cs, &c, &e_));
        assert_int_equal(c->desired, RKL_CONTAINER_DESIRED_CREATED);
        assert_same_container(f->s, c);
        c = rkl_container_record_free(c);
        rkl_container_spec_done(&cs);

        /* Start: changed once, then asked for already (nothing written). */
        uint64_t g = generation(f->s);
        assert_int_equal(rkl_db_container_start(f->s, c1, &c, NULL), 1);
        assert_int_equal(c->desired, RKL_CONTAINER_DESIRED_RUNNING);
        assert_int_equal(c->book.version, g + 1);
        assert_same_container(f->s, c);
        c = rkl_container_record_free(c);
        assert_int_equal(rkl_db_container_start(f->s, c1, &c, NULL), 0);
        assert_int_equal(c->desired, RKL_CONTAINER_DESIRED_RUNNING);
        assert_int_equal(generation(f->s), g + 1);
        c = rkl_container_record_free(c);

        /* Not after it ran and exited, nor once stopped. */
        OK(rkl_db_container_set_observed(
            f->s, c1, &(rkl_container_observed){.phase = RKL_CONTAINER_PHASE_EXITED}, &e_));
        rkl_error e = RKL_ERROR_INIT;
        assert_int_equal(rkl_db_container_start(f->s, c1, NULL, &e), -EBADFD);
        assert_non_null(strstr(e.msg, "exited"));
        create_container(f->s, c2, p1, "two", "two", 0);
        OK(rkl_db_container_stop(f->s, c2, 1000, &c, &e_));
        assert_int_equal(c->desired, RKL_CONTAINER_DESIRED_STOPPED);
        assert_int_equal(c->stop_deadline_ns, 1000);
        assert_same_container(f->s, c);
        c = rkl_container_record_free(c);
        e = (rkl_error)RKL_ERROR_INIT;
        assert_int_equal(rkl_db_container_start(f->s, c2, NULL, &e), -EBADFD);
        assert_non_null(strstr(e.msg, "stopped"));
        FAILS(-ENOENT, rkl_db_container_start(
                           f->s, "00000000000000000000000000000000000000000000000000000000000000d9",
                           NULL, &e_));
}

/* Another process must see this one as a user of the database while its connections are
 * open: SQLite's dead-man switch is a shared POSIX lock on byte 128 of -shm. Opening a
 * connection once closed descriptors of the files outside SQLite, which dropped every lock
 * of the process on them; an operator's sqlite3 then rebuilt -shm under the daemon's
 * mapping, and the daemon died of SIGBUS. */
static void test_other_process_sees_us(void **state)
{
        fixture *f = *state;
        rkl_db *b = NULL, *c = NULL;
        rkl_db_options later = {.skip_check = true};
        const char *p1 = "00000000000000000000000000000000000000000000000000000000000000e1";

        create_pod(f->s, p1, "a", 0); /* a write: WAL and -shm in use */
        OK(rkl_db_open(f->path, &later, &b, &e_));
        OK(rkl_db_open(f->path, &later, &c, &e_));
        uint64_t g;
        OK(rkl_db_generation(b, &g, &e_));

        _cleanup_free_ char *shm = rkl_xasprintf("%s-shm", f->path);
        _cleanup_free_ char *script =
            rkl_xasprintf("import fcntl,sys\nfd=open('%s','r+b')\n"
                          "try:\n    fcntl.lockf(fd, fcntl.LOCK_EX|fcntl.LOCK_NB, 1, 128)\n"
                          "except OSError:\n    sys.exit(3)\nsys.exit(0)\n",
                          shm);
        rkl_spawn_result res = {0};
        OK(rkl_spawn_run(RKL_STRV("/usr/bin/python3", "-c", script), NULL, &res, &e_));
        assert_int_equal(res.exit_code, 3); /* locked: we are there */
        rkl_spawn_result_done(&res);
        rkl_db_close(b);
        rkl_db_close(c);
}

static void test_list_filters(void **state)
{
        fixture *f = *state;
        char ids[6][RKL_ID_LEN + 1];
        rkl_pod_record **a = NULL;
        rkl_container_record **ca = NULL;
        size_t n = 0;

        for (unsigned i = 0; i < 6; i++) {
                rkl_pod_spec p;
                make_id(ids[i], "", 0x100 + i);
                minimal_pod_spec(&p, "p", i);
                rkl_kvs_add(&p.labels, "app", i % 2 ? "odd" : "even");
                rkl_kvs_add(&p.labels, "tier", i < 3 ? "front" : "back");
                OK(rkl_db_pod_create(f->s, ids[i], &p, NULL, &e_));
                rkl_pod_spec_done(&p);
        }
        OK(rkl_db_pod_set_desired(f->s, ids[4], RKL_POD_DESIRED_STOPPED, &e_));
        OK(rkl_db_pod_set_observed(f->s, ids[5],
                                   &(rkl_pod_observed){.phase = RKL_POD_PHASE_RUNNING}, &e_));

        OK(rkl_db_pod_list(f->s, NULL, &a, &n, &e_));
        assert_int_equal(n, 6);
        for (size_t i = 0; i < n; i++) /* in acceptance order */
                assert_string_equal(a[i]->id, ids[i]);
        a = rkl_pod_record_array_free(a, n);

        rkl_kvs sel = {0};
        rkl_kvs_add(&sel, "app", "even");
        rkl_kvs_add(&sel, "tier", "back");
        OK(rkl_db_pod_list(f->s, &(rkl_pod_filter){.label_selector = &sel}, &a, &n, &e_));
        assert_int_equal(n, 1);
        assert_string_equal(a[0]->id, ids[4]);
        a = rkl_pod_record_array_free(a, n);
        rkl_kvs_done(&sel);
        rkl_kvs_add(&sel, "app", "none");
        OK(rkl_db_pod_list(f->s, &(rkl_pod_filter){.label_selector = &sel}, &a, &n, &e_));
        assert_int_equal(n, 0);
        a = rkl_pod_record_array_free(a, n);
        rkl_kvs_done(&sel);

        OK(rkl_db_pod_list(
            f->s, &(rkl_pod_filter){.by_desired = true, .desired = RKL_POD_DESIRED_STOPPED}, &a, &n,
            &e_));
        assert_int_equal(n, 1);
        a = rkl_pod_record_array_free(a, n);
        OK(rkl_db_pod_list(f->s,
                           &(rkl_pod_filter){.by_phase = true, .phase = RKL_POD_PHASE_PENDING}, &a,
                           &n, &e_));
        assert_int_equal(n, 5);
        a = rkl_pod_record_array_free(a, n);
        OK(rkl_db_pod_list(f->s, &(rkl_pod_filter){.id = ids[2]}, &a, &n, &e_));
        assert_int_equal(n, 1);
        assert_string_equal(a[0]->id, ids[2]);
        a = rkl_pod_record_array_free(a, n);

        char c1[RKL_ID_LEN + 1], c2[RKL_ID_LEN + 1], c3[RKL_ID_LEN + 1];
        make_id(c1, "c", 1);
        make_id(c2, "c", 2);
        make_id(c3, "c", 3);
        create_container(f->s, c1, ids[0], "a1", "one", 0);
        create_container(f->s, c2, ids[0], "a2", "two", 0);
        create_container(f->s, c3, ids[1], "a1", "one", 0);
        OK(rkl_db_container_start(f->s, c2, NULL, &e_));
        OK(rkl_db_container_list(f->s, &(rkl_container_filter){.sandbox_id = ids[0]}, &ca, &n,
                                 &e_));
        assert_int_equal(n, 2);
        assert_string_equal(ca[0]->id, c1);
        assert_string_equal(ca[1]->id, c2);
        ca = rkl_container_record_array_free(ca, n);
        OK(rkl_db_container_list(
            f->s,
            &(rkl_container_filter){.by_desired = true, .desired = RKL_CONTAINER_DESIRED_RUNNING},
            &ca, &n, &e_));
        assert_int_equal(n, 1);
        ca = rkl_container_record_array_free(ca, n);
        rkl_kvs_add(&sel, "io.kubernetes.container.name", "x");
        OK(rkl_db_container_list(f->s, &(rkl_container_filter){.label_selector = &sel}, &ca, &n,
                                 &e_));
        assert_int_equal(n, 0);
        ca = rkl_container_record_array_free(ca, n);
        rkl_kvs_done(&sel);
        OK(rkl_db_container_list(f->s, &(rkl_container_filter){.id = c3, .sandbox_id = ids[0]}, &ca,
                                 &n, &e_));
        assert_int_equal(n, 0);
        ca = rkl_container_record_array_free(ca, n);
        OK(rkl_db_container_list(f->s, NULL, &ca, &n, &e_));
        assert_int_equal(n, 3);
        ca = rkl_container_record_array_free(ca, n);
}

/* The operator views parse and say what docs/operators.md says they say. */
static void test_views(void **state)
{
        fixture *f = *state;
        const char *p1 = "00000000000000000000000000000000000000000000000000000000000000a1";
        const char *p2 = "00000000000000000000000000000000000000000000000000000000000000a2";
        const char *c1 = "00000000000000000000000000000000000000000000000000000000000000c1";
        const char *c2 = "00000000000000000000000000000000000000000000000000000000000000c2";
        sqlite3 *db = raw_open(f->path);

        create_pod(f->s, p1, "a", 0);
        create_pod(f->s, p2, "b", 0);
        create_container(f->s, c1, p1, "one", "one", 0);
        create_container(f->s, c2, p1, "two", "two", 0);
        OK(rkl_db_pod_set_observed(f->s, p1,
                                   &(rkl_pod_observed){.phase = RKL_POD_PHASE_RUNNING,
                                                       .started_ns = INT64_C(1700000000500000000)},
                                   &e_));
        OK(rkl_db_container_start(f->s, c2, NULL, &e_));
        OK(rkl_db_container_set_observed(
            f->s, c2, &(rkl_container_observed){.phase = RKL_CONTAINER_PHASE_EXITED}, &e_));
        OK(rkl_db_pod_record_error(f->s, p2, "boom", 5, &e_));

        assert_int_equal(raw_int(db, "SELECT count(*) FROM sandboxes"), 2);
        assert_int_equal(raw_int(db, "SELECT containers FROM sandboxes WHERE name = 'a'"), 2);
        assert_int_equal(raw_int(db, "SELECT count(*) FROM sandboxes WHERE "
                                     "started_at = '2023-11-14T22:13:20.500Z'"),
                         1);
        assert_int_equal(raw_int(db, "SELECT count(*) FROM containers WHERE pod = 'a'"), 2);
        /* p1 running, c1 created, c2 ran: converged. p2 pending: not. */
        assert_int_equal(raw_int(db, "SELECT count(*) FROM unconverged"), 1);
        assert_int_equal(raw_int(db, "SELECT attempts FROM unconverged WHERE kind = 'sandbox' "
                                     "AND name = 'default/b' AND last_error = 'boom'"),
                         1);
        assert_int_equal(raw_int(db, "SELECT count(*) FROM sandbox WHERE "
                                     "json_extract(config, '$.host_network') = 0"),
                         2);
        sqlite3_close(db);
}

static char *raw_text(sqlite3 *db, const char *sql)
{
        sqlite3_stmt *st = NULL;
        assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        char *v = rkl_xstrdup((const char *)sqlite3_column_text(st, 0));
        sqlite3_finalize(st);
        return v;
}

/* The steps of a start travel with the observation, come back as written, read as
 * milliseconds in the views, and a column edited by hand never fails its row. */
static void test_timeline(void **state)
{
        fixture *f = *state;
        const char *pod = "00000000000000000000000000000000000000000000000000000000000000a1";
        const char *ctr = "00000000000000000000000000000000000000000000000000000000000000c1";
        sqlite3 *db = raw_open(f->path);
        rkl_pod_record *p = NULL;
        rkl_container_record *c = NULL;

        create_pod(f->s, pod, "a", 0);
        create_container(f->s, ctr, pod, "one", "one", 0);
        assert_int_equal(raw_int(db, "SELECT timeline IS NULL FROM sandbox"), 1);

        rkl_pod_observed po = {.phase = RKL_POD_PHASE_RUNNING};
        po.timeline.usec[RKL_POD_STEP_UNIT_STARTED] = 1200;
        po.timeline.usec[RKL_POD_STEP_POD_SEEN] = 350000;
        po.timeline.usec[RKL_POD_STEP_RUNNING] = 2300500;
        OK(rkl_db_pod_set_observed(f->s, pod, &po, &e_));
        OK(rkl_db_pod_get(f->s, pod, &p, &e_));
        assert_memory_equal(&p->observed.timeline, &po.timeline, sizeof(po.timeline));
        p = rkl_pod_record_free(p);
        _cleanup_free_ char *j = raw_text(db, "SELECT timeline FROM sandbox");
        assert_string_equal(j, "{\"unit_started\":1200,\"pod_seen\":350000,\"running\":2300500}");
        assert_int_equal(raw_int(db, "SELECT running_ms * 10 FROM sandbox_timelines"), 23005);
        assert_int_equal(raw_int(db, "SELECT net_add_begun_ms IS NULL FROM sandbox_timelines"), 1);

        rkl_container_observed co = {.phase = RKL_CONTAINER_PHASE_RUNNING};
        co.timeline.usec[RKL_CONTAINER_STEP_ADD_BEGUN] = 10;
        co.timeline.usec[RKL_CONTAINER_STEP_RUNNING] = 99000;
        OK(rkl_db_container_set_observed(f->s, ctr, &co, &e_));
        OK(rkl_db_container_get(f->s, ctr, &c, &e_));
        assert_memory_equal(&c->observed.timeline, &co.timeline, sizeof(co.timeline));
        c = rkl_container_record_free(c);
        assert_int_equal(raw_int(db, "SELECT running_ms FROM container_timelines "
                                     "WHERE name = 'default/a/one'"),
                         99);

        /* No step: NULL again. A negative time is refused. */
        OK(rkl_db_container_set_observed(f->s, ctr, &(rkl_container_observed){0}, &e_));
        assert_int_equal(raw_int(db, "SELECT timeline IS NULL FROM container"), 1);
        po.timeline.usec[RKL_POD_STEP_STAGE1_READY] = -1;
        FAILS(-EINVAL, rkl_db_pod_set_observed(f->s, pod, &po, &e_));

        /* By hand: unknown steps are skipped, a wrong value empties the timeline. */
        raw_exec(db, "UPDATE sandbox SET timeline = '{\"later_step\": [1], \"running\": 7}'");
        OK(rkl_db_pod_get(f->s, pod, &p, &e_));
        assert_int_equal(p->observed.timeline.usec[RKL_POD_STEP_RUNNING], 7);
        p = rkl_pod_record_free(p);
        raw_exec(db, "UPDATE sandbox SET timeline = '{\"running\": 7, \"pod_seen\": \"soon\"}'");
        OK(rkl_db_pod_get(f->s, pod, &p, &e_));
        assert_int_equal(p->observed.timeline.usec[RKL_POD_STEP_RUNNING], 0);
        p = rkl_pod_record_free(p);
        sqlite3_close(db);
}

/* The timeline codec alone: what decodes encodes back the same. */
static void test_timeline_codec(void **state)
{
        static const struct {
                const char *in, *out;
        } cases[] = {
            {"{}", NULL},
            {" { \"add_done\" : 5 , \"add_begun\":4 } ", "{\"add_begun\":4,\"add_done\":5}"},
            {"{\"running\":1,\"running\":2}", "{\"running\":2}"},
            {"{\"ru\\\"n\":1,\"running\":3}", "{\"running\":3}"},
            {"{\"running\":-4}", NULL},
            {"{\"running\":1.5}", NULL},
            {"{\"running\":1,}", NULL},
            {"{\"running\":99999999999999999999}", NULL},
            {"[1]", NULL},
            {"", NULL},
            {"{\"running\":1", NULL},
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                rkl_timeline t;
                rkl_db__timeline_from_json(cases[i].in, false, &t);
                _cleanup_free_ char *j = rkl_db__timeline_to_json(&t, false);
                assert_str_eq(j, cases[i].out);
        }
        rkl_timeline t;
        rkl_db__timeline_from_json(NULL, true, &t);
        assert_null(rkl_db__timeline_to_json(&t, true));
}

/* Two threads, each with its own connection, writing at once: busy_timeout queues them. */
typedef struct writer {
        const char *path;
        unsigned base, n;
        int r;
        char msg[512];
} writer;

static void *writer_main(void *arg)
{
        writer *w = arg;
        rkl_error e = RKL_ERROR_INIT;
        rkl_db *s = NULL;
        w->r = rkl_db_open(w->path, &(rkl_db_options){.skip_check = true}, &s, &e);
        for (unsigned i = 0; w->r >= 0 && i < w->n; i++) {
                char id[RKL_ID_LEN + 1], name[32];
                rkl_pod_spec p;
                make_id(id, "", w->base + i);
                (void)snprintf(name, sizeof(name), "pod-%u", w->base + i);
                fill_pod_spec(&p, name, 0);
                w->r = rkl_db_pod_create(s, id, &p, NULL, &e);
                rkl_pod_spec_done(&p);
                if (w->r >= 0)
                        w->r = rkl_db_pod_set_observed(
                            s, id, &(rkl_pod_observed){.phase = RKL_POD_PHASE_RUNNING}, &e);
        }
        memcpy(w->msg, e.msg, sizeof(w->msg));
        rkl_db_close(s);
        return NULL;
}

static void test_concurrent_writers(void **state)
{
        fixture *f = *state;
        writer w[2] = {{f->path, 1000, 150, 0, ""}, {f->path, 2000, 150, 0, ""}};
        pthread_t t[2];
        uint64_t g = generation(f->s);

        for (size_t i = 0; i < 2; i++)
                assert_int_equal(pthread_create(&t[i], NULL, writer_main, &w[i]), 0);
        for (size_t i = 0; i < 2; i++) {
                assert_int_equal(pthread_join(t[i], NULL), 0);
                if (w[i].r < 0)
                        fail_msg("writer %zu: %d %s", i, w[i].r, w[i].msg);
        }
        rkl_pod_record **a = NULL;
        size_t n = 0;
        OK(rkl_db_pod_list(f->s, NULL, &a, &n, &e_));
        assert_int_equal(n, 300);
        a = rkl_pod_record_array_free(a, n);
        assert_int_equal(generation(f->s), g + 600);
        OK(rkl_db_integrity_check(f->s, &e_));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(test_open_memory, setup_memory, teardown_memory),
            cmocka_unit_test_setup_teardown(test_open_file_mode_and_reopen, setup_dir,
                                            teardown_dir),
            cmocka_unit_test_setup_teardown(test_newer_schema_refused, setup_dir, teardown_dir),
            cmocka_unit_test_setup_teardown(test_migration_labels_inline, setup_dir, teardown_dir),
            cmocka_unit_test_setup_teardown(test_garbage_refused_untouched, setup_dir,
                                            teardown_dir),
            cmocka_unit_test_setup_teardown(test_migration_atomic, setup_memory, teardown_memory),
            cmocka_unit_test_setup_teardown(test_pod_roundtrip, setup_memory, teardown_memory),
            cmocka_unit_test_setup_teardown(test_pod_roundtrip, setup_file, teardown_dir),
            cmocka_unit_test_setup_teardown(test_pod_network, setup_memory, teardown_memory),
            cmocka_unit_test_setup_teardown(test_pod_withdraw, setup_memory, teardown_memory),
            cmocka_unit_test_setup_teardown(test_pod_observed_and_identity, setup_memory,
                                            teardown_memory),
            cmocka_unit_test_setup_teardown(test_container_roundtrip, setup_memory,
                                            teardown_memory),
            cmocka_unit_test_setup_teardown(test_container_roundtrip, setup_file, teardown_dir),
            cmocka_unit_test_setup_teardown(test_constraints, setup_memory, teardown_memory),
            cmocka_unit_test_setup_teardown(test_invalid_input, setup_memory, teardown_memory),
            cmocka_unit_test_setup_teardown(test_all_or_nothing, setup_file, teardown_dir),
            cmocka_unit_test_setup_teardown(test_resolve, setup_memory, teardown_memory),
            cmocka_unit_test_setup_teardown(test_generation, setup_file, teardown_dir),
            cmocka_unit_test_setup_teardown(test_cascade_and_stop, setup_file, teardown_dir),
            cmocka_unit_test_setup_teardown(test_list_filters, setup_memory, teardown_memory),
            cmocka_unit_test_setup_teardown(test_checkpoint_elsewhere, setup_dir, teardown_dir),
            cmocka_unit_test_setup_teardown(test_writes_hand_back_records, setup_file,
                                            teardown_dir),
            cmocka_unit_test_setup_teardown(test_container_stop_deadline, setup_memory,
                                            teardown_memory),
            cmocka_unit_test_setup_teardown(test_other_process_sees_us, setup_file, teardown_dir),
            cmocka_unit_test_setup_teardown(test_views, setup_file, teardown_dir),
            cmocka_unit_test_setup_teardown(test_timeline, setup_file, teardown_dir),
            cmocka_unit_test(test_timeline_codec),
            cmocka_unit_test_setup_teardown(test_concurrent_writers, setup_file, teardown_dir),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
