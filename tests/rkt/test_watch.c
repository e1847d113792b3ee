/* rkt/watch.c on a real tmpdir with the real kernel's inotify: the steps rkt takes (docs/rkt.md,
 * 'The pod directory') done by hand, and the right UUIDs out of one poll() and one drain. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <poll.h>
#include <sys/inotify.h>

#include "rkt/poddir.h"
#include "rkt/watch.h"
#include "pods-fixture.h"
#include "base/banned.h"

#define U1 "2b000000-0000-4000-8000-000000000001"
#define U2 "2b000000-0000-4000-8000-000000000002"

static const char *const state_dirs[] = {"embryo", "prepare",        "prepared",
                                         "run",    "exited-garbage", "garbage"};

typedef struct fixture {
        char *dir;  /* tmpdir */
        char *pods; /* tmpdir/pods */
        int fd;     /* dirfd of pods/, or -EBADF */
        rkl_poddir_watch *w;
} fixture;

static void mkdir_at(fixture *f, const char *rel)
{
        if (mkdirat(f->fd, rel, 0755) < 0)
                fail_msg("mkdir %s: %m", rel);
}

static void open_pods(fixture *f)
{
        f->fd = open(f->pods, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(f->fd >= 0);
}

static void new_watch(fixture *f)
{
        rkl_error e = RKL_ERROR_INIT;
        if (rkl_poddir_watch_new(f->pods, &f->w, &e) < 0)
                fail_msg("watch_new: %s", e.msg);
}

/* An empty data dir as rkt creates it: pods/ and its six state dirs. */
static int setup_empty(void **state)
{
        fixture *f = rkl_xnew0(fixture, 1);
        f->dir = fixture_tmpdir(false);
        f->pods = rkl_xasprintf("%s/pods", f->dir);
        assert_int_equal(mkdir(f->pods, 0755), 0);
        open_pods(f);
        for (size_t i = 0; i < ELEMENTSOF(state_dirs); i++)
                mkdir_at(f, state_dirs[i]);
        new_watch(f);
        *state = f;
        return 0;
}

/* The committed fixture pods, with the watch created after them. */
static int setup_fixtures(void **state)
{
        fixture *f = rkl_xnew0(fixture, 1);
        f->dir = fixture_tmpdir(true);
        f->pods = rkl_xasprintf("%s/pods", f->dir);
        open_pods(f);
        new_watch(f);
        *state = f;
        return 0;
}

/* A data dir without pods/ yet: rkt creates it on first use. */
static int setup_no_pods(void **state)
{
        fixture *f = rkl_xnew0(fixture, 1);
        f->dir = fixture_tmpdir(false);
        f->pods = rkl_xasprintf("%s/pods", f->dir);
        f->fd = -EBADF;
        new_watch(f);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        fixture *f = *state;
        rkl_poddir_watch_free(f->w);
        safe_close(f->fd);
        free(f->pods);
        fixture_rm(f->dir);
        free(f);
        return 0;
}

/* One poll() (events are queued by the syscalls that cause them, so this never waits in a
 * passing run) and one drain; the result must be exactly the given UUIDs. */
static void expect(fixture *f, bool want_rescan, const char *const *want)
{
        struct pollfd p = {.fd = rkl_poddir_watch_fd(f->w), .events = POLLIN};
        size_t n_want = rkl_strv_length((char *const *)want);
        if (n_want > 0 || want_rescan)
                assert_int_equal(poll(&p, 1, 2000), 1);

        _cleanup_strv_free_ char **got = NULL;
        bool rescan = false;
        rkl_error e = RKL_ERROR_INIT;
        int r = rkl_poddir_watch_drain(f->w, &got, &rescan, &e);
        if (r < 0)
                fail_msg("drain: %s", e.msg);
        assert_non_null(got);
        assert_int_equal((size_t)r, rkl_strv_length(got));
        if (rkl_strv_length(got) != n_want || rescan != want_rescan) {
                for (size_t i = 0; got[i]; i++)
                        print_message("got %s\n", got[i]);
                fail_msg("got %zu uuids (rescan %d), want %zu (rescan %d)", rkl_strv_length(got),
                         rescan, n_want, want_rescan);
        }
        for (size_t i = 0; i < n_want; i++)
                assert_string_equal(got[i], want[i]);
}

#define EXPECT(...)   expect(f, false, (const char *const[]){__VA_ARGS__, NULL})
#define EXPECT_NONE() expect(f, false, (const char *const[]){NULL})

static void touch_at(fixture *f, const char *rel)
{
        write_at(f->fd, rel, "");
}

/* A sandbox's life as rkt 1.30 lives it on disk, step by step. */
static void test_pod_lifecycle(void **state)
{
        fixture *f = *state;
        size_t base = rkl_poddir_watch_count(f->w);
        EXPECT_NONE();

        mkdir_at(f, "embryo/" U1);
        EXPECT(U1);
        assert_int_equal(renameat(f->fd, "embryo/" U1, f->fd, "prepare/" U1), 0);
        EXPECT(U1);
        /* Writes inside a pod that is not in run/ are not watched: only its moves are. */
        touch_at(f, "prepare/" U1 "/pod");
        write_at(f->fd, "prepare/" U1 "/stage1TreeStoreID", TREE);
        mkdir_at(f, "prepare/" U1 "/stage1");
        mkdir_at(f, "prepare/" U1 "/overlay");
        EXPECT_NONE();

        assert_int_equal(renameat(f->fd, "prepare/" U1, f->fd, "run/" U1), 0);
        EXPECT(U1);
        /* pod dir, stage1/, overlay/ */
        assert_int_equal(rkl_poddir_watch_count(f->w), base + 3);

        /* The overlay upper dir appears level by level, after the pod dir. */
        mkdir_at(f, "run/" U1 "/overlay/" TREE);
        EXPECT(U1);
        mkdir_at(f, "run/" U1 "/overlay/" TREE "/upper");
        EXPECT(U1);
        mkdir_at(f, "run/" U1 "/overlay/" TREE "/upper/rkt");
        EXPECT(U1);
        mkdir_at(f, "run/" U1 "/" UPPER "/status");
        EXPECT(U1);
        assert_int_equal(rkl_poddir_watch_count(f->w), base + 7);

        write_at(f->fd, "run/" U1 "/ppid", "4242\n");
        EXPECT(U1);
        touch_at(f, "run/" U1 "/stage1/.#rootfs.lck");
        EXPECT(U1);
        assert_int_equal(symlinkat("ready", f->fd, "run/" U1 "/" UPPER "/supervisor-status"), 0);
        EXPECT(U1);
        touch_at(f, "run/" U1 "/" UPPER "/status/web-created");
        EXPECT(U1);
        touch_at(f, "run/" U1 "/" UPPER "/status/web-started");
        write_at(f->fd, "run/" U1 "/" UPPER "/status/web", "15\n");
        EXPECT(U1);

        /* Pod stop: supervisor-status goes, then .#rootfs.lck: the only visible exit sign. */
        assert_int_equal(unlinkat(f->fd, "run/" U1 "/" UPPER "/supervisor-status", 0), 0);
        EXPECT(U1);
        assert_int_equal(unlinkat(f->fd, "run/" U1 "/stage1/.#rootfs.lck", 0), 0);
        EXPECT(U1);

        /* rkt rm: to exited-garbage, then deleted. The pod's watches go with the move. */
        assert_int_equal(renameat(f->fd, "run/" U1, f->fd, "exited-garbage/" U1), 0);
        EXPECT(U1);
        assert_int_equal(rkl_poddir_watch_count(f->w), base);
        touch_at(f, "exited-garbage/" U1 "/" UPPER "/status/late");
        EXPECT_NONE();
        assert_int_equal(rkl_rm_rf_at(f->fd, "exited-garbage/" U1), 0);
        EXPECT(U1);
        EXPECT_NONE();
}

static void test_two_pods_dedup_sorted(void **state)
{
        fixture *f = *state;
        mkdir_at(f, "run/" U2);
        mkdir_at(f, "run/" U1);
        EXPECT(U1, U2);
        for (int i = 0; i < 50; i++) {
                _cleanup_free_ char *p = rkl_xasprintf("run/" U2 "/f%d", i);
                touch_at(f, p);
        }
        EXPECT(U2);
        touch_at(f, "run/" U1 "/net-info.json");
        touch_at(f, "run/" U2 "/net-info.json");
        touch_at(f, "run/" U1 "/subcgroup");
        EXPECT(U1, U2);
}

/* The pod manifest is replaced by tmpfile + rename on every `app add`. */
static void test_manifest_rewrite(void **state)
{
        fixture *f = *state;
        mkdir_at(f, "run/" U1);
        EXPECT(U1);
        write_at(f->fd, "run/" U1 "/pod", "{}");
        EXPECT(U1);
}

/* A watch created after the pods exist arms the running ones itself. */
static void test_existing_pods(void **state)
{
        fixture *f = *state;
        EXPECT_NONE();
        touch_at(f, "run/" U_RUNNING "/" UPPER "/status/idle-started");
        EXPECT(U_RUNNING);
        assert_int_equal(unlinkat(f->fd, "run/" U_RUNNING "/stage1/.#rootfs.lck", 0), 0);
        EXPECT(U_RUNNING);
        /* --no-overlay layout: no overlay dir, nothing more to arm, no error. */
        write_at(f->fd, "run/" U_STOPPED "/ppid", "1\n");
        EXPECT(U_STOPPED);
        /* Pods outside run/ are only seen moving. */
        touch_at(f, "exited-garbage/" U_EXITED_G "/pod");
        EXPECT_NONE();
        assert_int_equal(renameat(f->fd, "prepare/" U_PREPARE, f->fd, "run/" U_PREPARE), 0);
        EXPECT(U_PREPARE);
        /* Its stage1TreeStoreID names overlay dirs that do not exist yet. */
        mkdir_at(f, "run/" U_PREPARE "/overlay");
        mkdir_at(f, "run/" U_PREPARE "/overlay/" TREE);
        mkdir_at(f, "run/" U_PREPARE "/overlay/" TREE "/upper");
        mkdir_at(f, "run/" U_PREPARE "/" UPPER);
        mkdir_at(f, "run/" U_PREPARE "/" UPPER "/status");
        EXPECT(U_PREPARE);
        touch_at(f, "run/" U_PREPARE "/" UPPER "/status/x-created");
        EXPECT(U_PREPARE);
}

/* stage1TreeStoreID written after the overlay dirs exist (or rewritten): re-armed then. */
static void test_tree_id_late(void **state)
{
        fixture *f = *state;
        mkdir_at(f, "run/" U1);
        mkdir_at(f, "run/" U1 "/overlay");
        mkdir_at(f, "run/" U1 "/overlay/" TREE);
        mkdir_at(f, "run/" U1 "/overlay/" TREE "/upper");
        mkdir_at(f, "run/" U1 "/" UPPER);
        mkdir_at(f, "run/" U1 "/" UPPER "/status");
        EXPECT(U1);
        write_at(f->fd, "run/" U1 "/stage1TreeStoreID", TREE);
        EXPECT(U1);
        touch_at(f, "run/" U1 "/" UPPER "/status/a-created");
        EXPECT(U1);
}

static void test_watch_pod_idempotent(void **state)
{
        fixture *f = *state;
        rkl_error e = RKL_ERROR_INIT;
        size_t n = rkl_poddir_watch_count(f->w);
        assert_int_equal(rkl_poddir_watch_pod(f->w, U_RUNNING, &e), 0);
        assert_int_equal(rkl_poddir_watch_pod(f->w, U_RUNNING, &e), 0);
        assert_int_equal(rkl_poddir_watch_count(f->w), n);
        /* Not in run/: nothing to watch, and nothing left behind. */
        assert_int_equal(rkl_poddir_watch_pod(f->w, U_EXITED_G, &e), 0);
        assert_int_equal(rkl_poddir_watch_pod(f->w, "2b000000-0000-4000-8000-0000000000ff", &e), 0);
        assert_int_equal(rkl_poddir_watch_count(f->w), n);
        assert_int_equal(rkl_poddir_watch_pod(f->w, "../../etc", &e), -EINVAL);
        EXPECT_NONE();
}

/* rkt creates pods/ and the state dirs lazily; the watch follows them into existence. */
static void test_pods_dir_appears(void **state)
{
        fixture *f = *state;
        assert_int_equal(rkl_poddir_watch_count(f->w), 1);
        EXPECT_NONE();
        assert_int_equal(mkdir(f->pods, 0755), 0);
        open_pods(f);
        EXPECT_NONE();
        mkdir_at(f, "embryo");
        mkdir_at(f, "run");
        EXPECT_NONE();
        mkdir_at(f, "embryo/" U1);
        EXPECT(U1);
        /* Several levels at once, before anyone drains. */
        mkdir_at(f, "prepare");
        mkdir_at(f, "prepare/" U2);
        assert_int_equal(renameat(f->fd, "embryo/" U1, f->fd, "run/" U1), 0);
        EXPECT(U1, U2);
        touch_at(f, "run/" U1 "/ppid");
        EXPECT(U1);
}

/* A state dir removed and recreated: its pods went with it, so the owner must rescan. */
static void test_state_dir_replaced(void **state)
{
        fixture *f = *state;
        mkdir_at(f, "run/" U1);
        EXPECT(U1);
        assert_int_equal(rkl_rm_rf_at(f->fd, "run"), 0);
        expect(f, true, (const char *const[]){U1, NULL});
        mkdir_at(f, "run");
        mkdir_at(f, "run/" U2);
        EXPECT(U2);
        touch_at(f, "run/" U2 "/ppid");
        EXPECT(U2);
}

/* A real IN_Q_OVERFLOW: more events than /proc/sys/fs/inotify/max_queued_events. */
static void test_overflow_real(void **state)
{
        fixture *f = *state;
        _cleanup_free_ char *max_s = NULL;
        unsigned max = 0;
        if (rkl_read_file_at(AT_FDCWD, "/proc/sys/fs/inotify/max_queued_events", 64, &max_s, NULL) <
                0 ||
            sscanf(max_s, "%u", &max) != 1 || max > 1000000)
                skip();

        mkdir_at(f, "run/" U1);
        write_at(f->fd, "run/" U1 "/stage1TreeStoreID", TREE);
        mkdir_at(f, "run/" U1 "/overlay");
        mkdir_at(f, "run/" U1 "/overlay/" TREE);
        mkdir_at(f, "run/" U1 "/overlay/" TREE "/upper");
        mkdir_at(f, "run/" U1 "/" UPPER);
        mkdir_at(f, "run/" U1 "/" UPPER "/status");
        touch_at(f, "run/" U1 "/" UPPER "/status/a");
        touch_at(f, "run/" U1 "/" UPPER "/status/b");
        EXPECT(U1);
        /* IN_ATTRIB (utimes of both times) on two files in turn: cheap, and never coalesced
         * with the previous event. */
        for (unsigned i = 0; i < max + 64; i++) {
                struct timespec ts[2] = {{.tv_sec = i}, {.tv_sec = i}};
                const char *p =
                    i % 2 ? "run/" U1 "/" UPPER "/status/a" : "run/" U1 "/" UPPER "/status/b";
                assert_int_equal(utimensat(f->fd, p, ts, 0), 0);
        }
        expect(f, true, (const char *const[]){U1, NULL});
        /* Everything still works afterwards. */
        touch_at(f, "run/" U1 "/" UPPER "/status/c");
        EXPECT(U1);
        mkdir_at(f, "run/" U2);
        EXPECT(U2);
}

/* Events the kernel would rarely send, through the test hook. */
static void test_injected_events(void **state)
{
        fixture *f = *state;
        char buf[sizeof(struct inotify_event) + 16];
        struct inotify_event ev = {.wd = -1, .mask = IN_Q_OVERFLOW};

        memcpy(buf, &ev, sizeof(ev));
        assert_int_equal(rkl_poddir_watch__feed(f->w, buf, sizeof(ev)), 0);
        /* Nothing in the kernel queue: drain without polling. */
        _cleanup_strv_free_ char **got = NULL;
        bool rescan = false;
        assert_int_equal(rkl_poddir_watch_drain(f->w, &got, &rescan, NULL), 0);
        assert_true(rescan);

        /* A stale wd (its IN_IGNORED already handled) is ignored. */
        ev = (struct inotify_event){.wd = 987654, .mask = IN_CREATE, .len = 16};
        memcpy(buf, &ev, sizeof(ev));
        memset(buf + sizeof(ev), 0, 16);
        memcpy(buf + sizeof(ev), U1, 15);
        assert_int_equal(rkl_poddir_watch__feed(f->w, buf, sizeof(buf)), 0);
        EXPECT_NONE();

        /* Truncated buffers are refused, not overread. */
        assert_int_equal(rkl_poddir_watch__feed(f->w, buf, sizeof(ev) - 1), -EBADMSG);
        assert_int_equal(rkl_poddir_watch__feed(f->w, buf, sizeof(buf) - 1), -EBADMSG);
}

/* Many distinct pods between two drains: beyond the watcher's memory, rescan instead. */
static void test_too_many_pods(void **state)
{
        fixture *f = *state;
        char from[64], to[64];
        /* A rename names a new pod without allocating an inode: cheaper than mkdir. */
        snprintf(from, sizeof(from), "garbage/2b000000-0000-4000-8000-%012d", 0);
        mkdir_at(f, from);
        for (int i = 1; i <= 4200; i++) {
                snprintf(to, sizeof(to), "garbage/2b000000-0000-4000-8000-%012d", i);
                assert_int_equal(renameat(f->fd, from, f->fd, to), 0);
                memcpy(from, to, sizeof(from));
        }
        _cleanup_strv_free_ char **got = NULL;
        bool rescan = false;
        assert_int_equal(rkl_poddir_watch_drain(f->w, &got, &rescan, NULL), 4096);
        assert_true(rescan);
        for (size_t i = 1; got[i]; i++)
                assert_true(strcmp(got[i - 1], got[i]) < 0);
}

#define E(t)  cmocka_unit_test_setup_teardown(t, setup_empty, teardown)
#define FX(t) cmocka_unit_test_setup_teardown(t, setup_fixtures, teardown)

int main(void)
{
        const struct CMUnitTest tests[] = {
            E(test_pod_lifecycle),
            E(test_two_pods_dedup_sorted),
            E(test_manifest_rewrite),
            FX(test_existing_pods),
            E(test_tree_id_late),
            FX(test_watch_pod_idempotent),
            cmocka_unit_test_setup_teardown(test_pods_dir_appears, setup_no_pods, teardown),
            E(test_state_dir_replaced),
            E(test_overflow_real),
            E(test_injected_events),
            E(test_too_many_pods),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
