/* rkt/poddir.c on fixture pod dirs shaped like real rkt 1.30 ones (docs/rkt.md, 'The pod
 * directory'). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/wait.h>

#include "rkt/poddir.h"
#include "pods-fixture.h"
#include "base/banned.h"

#define T_CREATED     INT64_C(1795243412453128342)
#define T_PPID        INT64_C(1795243413655874299)
#define T_APP_CREATED INT64_C(1795243420965470590)
#define T_APP_STARTED INT64_C(1795243421695873956)
#define T_APP_EXITED  INT64_C(1795243444847872967)

typedef struct fixture {
        char *dir;
        int pods;
        pid_t locker; /* a process group holding a pod lock, or 0 */
} fixture;

static int setup(void **state)
{
        fixture *f = rkl_xnew0(fixture, 1);
        f->dir = fixture_tmpdir(true);
        _cleanup_free_ char *p = rkl_xasprintf("%s/pods", f->dir);
        f->pods = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(f->pods >= 0);

        /* Times as rkt leaves them: the file mtimes are the timestamps. */
        set_mtime(f->pods, "run/" U_RUNNING "/pod-created", T_CREATED);
        set_mtime(f->pods, "run/" U_RUNNING "/ppid", T_PPID);
        const char *st = "run/" U_RUNNING "/" UPPER "/status/";
        const char *names[] = {
            "ticker-created", "ticker-started", "web-created", "web-started", "web",
            "idle-created"};
        const int64_t times[] = {T_APP_CREATED,     T_APP_STARTED, T_APP_CREATED + 1,
                                 T_APP_STARTED + 1, T_APP_EXITED,  T_APP_CREATED + 2};
        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                _cleanup_free_ char *path = rkl_xasprintf("%s%s", st, names[i]);
                set_mtime(f->pods, path, times[i]);
        }
        /* The readiness symlink (not committed: fixtures are plain files). */
        assert_int_equal(
            symlinkat("ready", f->pods, "run/" U_RUNNING "/" UPPER "/supervisor-status"), 0);
        *state = f;
        return 0;
}

static void unlock_pod(fixture *f)
{
        if (f->locker > 0) {
                (void)kill(-f->locker, SIGKILL);
                (void)waitpid(f->locker, NULL, 0);
                f->locker = 0;
        }
}

static int teardown(void **state)
{
        fixture *f = *state;
        unlock_pod(f);
        safe_close(f->pods);
        fixture_rm(f->dir);
        free(f);
        return 0;
}

/* Holds rkt's pod lock from another process, as stage1 does: flock(1) -o keeps the lock in
 * flock itself (not in sleep), in its own process group so that teardown kills both. */
static void lock_pod(fixture *f, const char *rel)
{
        _cleanup_free_ char *path = rkl_xasprintf("%s/pods/%s", f->dir, rel);
        posix_spawnattr_t attr;
        posix_spawnattr_init(&attr);
        posix_spawnattr_setpgroup(&attr, 0);
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
        pid_t pid;
        assert_int_equal(posix_spawn(&pid, "/usr/bin/flock", NULL, &attr,
                                     RKL_STRV("flock", "-x", "-o", path, "/bin/sleep", "30"), NULL),
                         0);
        posix_spawnattr_destroy(&attr);
        f->locker = pid;
        /* Wait until the lock is really held. */
        _cleanup_close_ int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(fd >= 0);
        for (int i = 0; i < 500; i++) {
                if (flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK)
                        return;
                (void)flock(fd, LOCK_UN);
                usleep(10 * 1000);
        }
        fail_msg("flock(1) did not take the lock");
}

static const rkl_poddir_app *app(const rkl_poddir_pod *p, const char *name)
{
        const rkl_poddir_app *a = rkl_poddir_pod_find_app(p, name);
        if (!a)
                fail_msg("app '%s' missing", name);
        return a;
}

static void test_running_pod(void **state)
{
        fixture *f = *state;
        _cleanup_(rkl_poddir_pod_done) rkl_poddir_pod p = {0};
        rkl_error e = RKL_ERROR_INIT;

        lock_pod(f, "run/" U_RUNNING);
        assert_int_equal(rkl_poddir_read(f->pods, U_RUNNING, &p, &e), 0);
        assert_string_equal(p.uuid, U_RUNNING);
        assert_int_equal(p.dir, RKL_PODDIR_RUN);
        assert_int_equal(p.state, RKL_POD_STATE_RUNNING);
        assert_string_equal(rkl_pod_state_to_string(p.state), "running");
        assert_true(p.locked);
        assert_true(p.rootfs_lock);
        assert_true(p.supervisor_ready);
        assert_int_equal(p.ppid, 4242);
        assert_true(p.created_ns == T_CREATED);
        assert_true(p.started_ns == T_PPID);
        assert_true(p.gc_marked_ns == 0);
        /* rkt.kubernetes.io wins over default, wherever it is in the array. */
        assert_string_equal(p.ip, "10.1.2.3");
        assert_string_equal(p.netns, "/var/run/netns/cni-1a2b3c4d-0000-1111-2222-333344445555");
        assert_string_equal(p.net_name, "rkt.kubernetes.io");
        assert_string_equal(p.subcgroup, "system.slice/rkt-pod1.service");
        assert_string_equal(p.stage1_tree, TREE);
        assert_int_equal(p.manifest_error, 0);
        assert_null(p.warning);
        assert_string_equal(rkl_kvs_get(&p.user_annotations, "rktlet.io/sandbox-id"),
                            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
        assert_string_equal(rkl_kvs_get(&p.user_labels, "app"), "demo");
        assert_string_equal(rkl_kvs_get(&p.annotations, "coreos.com/rkt/stage1/mutable"), "true");
        assert_int_equal(p.annotations.n, 3);

        assert_int_equal(p.n_apps, 3);
        /* Manifest order. */
        assert_string_equal(p.apps[0].name, "ticker");
        assert_string_equal(p.apps[1].name, "web");
        assert_string_equal(p.apps[2].name, "idle");

        const rkl_poddir_app *t = app(&p, "ticker");
        assert_true(t->in_manifest);
        assert_int_equal(t->state, RKL_POD_APP_RUNNING);
        assert_true(t->created_ns == T_APP_CREATED);
        assert_true(t->started_ns == T_APP_STARTED);
        assert_true(t->finished_ns == 0);
        assert_false(t->exit_known);
        assert_string_equal(t->image_id, "sha512-c3749ed3b5ba1bd1fc3ad5dbf6f14ab1c1b44e42d5b5ac5a2"
                                         "d7e7c0bc1bf6f31");
        assert_string_equal(rkl_kvs_get(&t->user_annotations, "k8s-container"), "ticker");
        assert_string_equal(rkl_kvs_get(&t->user_labels, "tier"), "test");
        assert_string_equal(
            rkl_kvs_get(&t->annotations, "coreos.com/rkt/experiment/kubernetes-log-path"),
            "ticker_0.log");

        const rkl_poddir_app *w = app(&p, "web");
        assert_int_equal(w->state, RKL_POD_APP_EXITED);
        assert_true(w->exit_known);
        assert_int_equal(w->exit_code, 15); /* the bare signal number, as rkt writes it */
        assert_true(w->created_ns == T_APP_CREATED + 1);
        assert_true(w->started_ns == T_APP_STARTED + 1);
        assert_true(w->finished_ns == T_APP_EXITED);

        const rkl_poddir_app *i = app(&p, "idle");
        assert_int_equal(i->state, RKL_POD_APP_CREATED);
        assert_true(i->created_ns == T_APP_CREATED + 2);
        assert_true(i->started_ns == 0);
        assert_int_equal(i->user_annotations.n, 0);
}

/* The same pod once its lock is gone: exited, apps not exited are exited with an unknown
 * code (rkt: the pod was killed before the reaper ran), no finish time in run/. */
static void test_running_pod_unlocked_is_exited(void **state)
{
        fixture *f = *state;
        _cleanup_(rkl_poddir_pod_done) rkl_poddir_pod p = {0};
        assert_int_equal(rkl_poddir_read(f->pods, U_RUNNING, &p, NULL), 0);
        assert_int_equal(p.state, RKL_POD_STATE_EXITED);
        assert_false(p.locked);
        const rkl_poddir_app *t = app(&p, "ticker");
        assert_int_equal(t->state, RKL_POD_APP_EXITED);
        assert_false(t->exit_known);
        assert_true(t->finished_ns == 0);
        assert_true(t->started_ns == T_APP_STARTED);
        const rkl_poddir_app *w = app(&p, "web");
        assert_true(w->exit_known);
        assert_int_equal(w->exit_code, 15);
}

/* The reaper creates an app's exit file, then writes the code: read in between, the app is
 * still running (not exited with an unknown code), unless the pod is gone. */
static void test_exit_file_being_written(void **state)
{
        fixture *f = *state;
        _cleanup_(rkl_poddir_pod_done) rkl_poddir_pod p = {0}, q = {0};
        _cleanup_free_ char *exit_file =
            rkl_xasprintf("%s/pods/run/" U_RUNNING "/" UPPER "/status/ticker", f->dir);
        _cleanup_close_ int fd = open(exit_file, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        assert_true(fd >= 0);

        /* Held in process, through its own open file description (as in
         * test_prepare_lock_in_process): released at once, unlike a killed flock(1)'s. */
        _cleanup_close_ int lk = openat(f->pods, "run/" U_RUNNING, O_RDONLY | O_DIRECTORY);
        assert_true(lk >= 0);
        assert_int_equal(flock(lk, LOCK_EX | LOCK_NB), 0);
        assert_int_equal(rkl_poddir_read(f->pods, U_RUNNING, &p, NULL), 0);
        assert_true(p.locked);
        assert_int_equal(app(&p, "ticker")->state, RKL_POD_APP_RUNNING);
        assert_false(app(&p, "ticker")->exit_known);

        assert_int_equal(flock(lk, LOCK_UN), 0);
        assert_int_equal(rkl_poddir_read(f->pods, U_RUNNING, &q, NULL), 0);
        assert_false(q.locked);
        assert_int_equal(app(&q, "ticker")->state, RKL_POD_APP_EXITED);
        assert_false(app(&q, "ticker")->exit_known);
}

/* flock locks belong to the open file description: a lock this process holds through one
 * open() blocks LOCK_SH|LOCK_NB through another open() of the same dir, so an in-process
 * lock is a faithful stand-in for stage1's. */
static void test_prepare_lock_in_process(void **state)
{
        fixture *f = *state;
        _cleanup_(rkl_poddir_pod_done) rkl_poddir_pod p = {0}, q = {0};

        _cleanup_close_ int lk = openat(f->pods, "prepare/" U_PREPARE, O_RDONLY | O_DIRECTORY);
        assert_true(lk >= 0);
        assert_int_equal(flock(lk, LOCK_EX | LOCK_NB), 0);
        assert_int_equal(rkl_poddir_read(f->pods, U_PREPARE, &p, NULL), 0);
        assert_int_equal(p.state, RKL_POD_STATE_PREPARING);
        assert_true(p.locked);
        /* No pod-created yet: the manifest's mtime stands in, as in rkt. */
        struct stat st;
        assert_int_equal(fstatat(f->pods, "prepare/" U_PREPARE "/pod", &st, 0), 0);
        assert_true(p.created_ns == rkl_timespec_ns(&st.st_mtim));
        assert_int_equal(p.n_apps, 0); /* "apps": null */
        assert_int_equal(p.manifest_error, 0);
        assert_true(p.started_ns == 0);
        assert_int_equal(p.ppid, 0);

        assert_int_equal(flock(lk, LOCK_UN), 0);
        assert_int_equal(rkl_poddir_read(f->pods, U_PREPARE, &q, NULL), 0);
        assert_int_equal(q.state, RKL_POD_STATE_ABORTED_PREPARE);
        assert_string_equal(rkl_pod_state_to_string(q.state), "aborted prepare");
}

static void test_stopped_pod(void **state)
{
        fixture *f = *state;
        _cleanup_(rkl_poddir_pod_done) rkl_poddir_pod p = {0};
        set_mtime(f->pods, "run/" U_STOPPED "/stage1/rootfs/rkt/status/web", T_APP_EXITED);

        assert_int_equal(rkl_poddir_read(f->pods, U_STOPPED, &p, NULL), 0);
        assert_int_equal(p.state, RKL_POD_STATE_EXITED);
        assert_false(p.rootfs_lock);
        assert_false(p.supervisor_ready);
        assert_null(p.ip); /* host network: no net-info.json */
        assert_null(p.netns);
        assert_null(p.stage1_tree);
        assert_int_equal(p.ppid, 777);
        assert_int_equal(p.n_apps, 2);
        /* "\n" only: systemctl stop hit the pod first; the code is unknown, not 0 or 1. */
        const rkl_poddir_app *w = app(&p, "web");
        assert_int_equal(w->state, RKL_POD_APP_EXITED);
        assert_false(w->exit_known);
        assert_true(w->finished_ns == T_APP_EXITED);
        const rkl_poddir_app *d = app(&p, "db");
        assert_int_equal(d->state, RKL_POD_APP_EXITED);
        assert_false(d->exit_known);
        assert_true(d->started_ns != 0);
}

static void test_exited_garbage(void **state)
{
        fixture *f = *state;
        _cleanup_(rkl_poddir_pod_done) rkl_poddir_pod p = {0}, q = {0};
        struct stat st;

        assert_int_equal(rkl_poddir_read(f->pods, U_EXITED_G, &p, NULL), 0);
        assert_int_equal(p.dir, RKL_PODDIR_EXITED_GARBAGE);
        assert_int_equal(p.state, RKL_POD_STATE_EXITED_GARBAGE);
        assert_int_equal(fstatat(f->pods, "exited-garbage/" U_EXITED_G, &st, 0), 0);
        assert_true(p.gc_marked_ns == rkl_timespec_ns(&st.st_ctim));
        assert_int_equal(p.ppid, 31337);          /* from "pid": kvm/fly style */
        assert_string_equal(p.stage1_tree, TREE); /* trailing newline trimmed */
        const rkl_poddir_app *a = app(&p, "oneshot");
        assert_int_equal(a->state, RKL_POD_APP_EXITED);
        assert_true(a->exit_known);
        assert_int_equal(a->exit_code, 0);

        lock_pod(f, "exited-garbage/" U_EXITED_G);
        assert_int_equal(rkl_poddir_read(f->pods, U_EXITED_G, &q, NULL), 0);
        assert_int_equal(q.state, RKL_POD_STATE_EXITED_DELETING);
}

static void test_other_states(void **state)
{
        fixture *f = *state;
        struct {
                const char *uuid;
                rkl_pod_state state;
                rkl_poddir_dir dir;
        } cases[] = {
            {U_EMBRYO, RKL_POD_STATE_EMBRYO, RKL_PODDIR_EMBRYO},
            {U_PREPARED, RKL_POD_STATE_PREPARED, RKL_PODDIR_PREPARED},
            {U_GARBAGE, RKL_POD_STATE_GARBAGE, RKL_PODDIR_GARBAGE},
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_(rkl_poddir_pod_done) rkl_poddir_pod p = {0};
                assert_int_equal(rkl_poddir_read(f->pods, cases[i].uuid, &p, NULL), 0);
                assert_int_equal(p.state, cases[i].state);
                assert_int_equal(p.dir, cases[i].dir);
        }
        /* Apps of a garbage pod that never ran are exited with unknown codes (AfterRun). */
        _cleanup_(rkl_poddir_pod_done) rkl_poddir_pod g = {0};
        assert_int_equal(rkl_poddir_read(f->pods, U_GARBAGE, &g, NULL), 0);
        assert_true(rkl_pod_state_is_after_run(g.state));
        assert_int_equal(g.n_apps, 2);
        assert_int_equal(g.apps[0].state, RKL_POD_APP_EXITED);
        assert_false(g.apps[0].exit_known);
        assert_true(g.apps[0].finished_ns == g.gc_marked_ns && g.gc_marked_ns != 0);
}

/* Truncated manifest, garbage ppid and net-info.json: nothing crashes, nothing is invented;
 * apps come from the status files alone. */
static void test_broken_pod(void **state)
{
        fixture *f = *state;
        _cleanup_(rkl_poddir_pod_done) rkl_poddir_pod p = {0};
        lock_pod(f, "run/" U_BROKEN);
        assert_int_equal(rkl_poddir_read(f->pods, U_BROKEN, &p, NULL), 0);
        assert_int_equal(p.state, RKL_POD_STATE_RUNNING);
        assert_int_equal(p.manifest_error, -EBADMSG);
        /* Both broken files say why, in the order they are read. */
        assert_non_null(p.warning);
        assert_true(strncmp(p.warning, "net-info.json: ", 15) == 0);
        assert_non_null(strstr(p.warning, "; pod manifest: "));
        assert_int_equal(p.ppid, 0);
        assert_true(p.started_ns != 0); /* the file exists: the pod started */
        assert_null(p.ip);
        assert_int_equal(p.user_annotations.n, 0);
        assert_int_equal(p.n_apps, 2);
        assert_string_equal(p.apps[0].name, "a");
        assert_false(p.apps[0].in_manifest);
        assert_null(p.apps[0].image_id);
        assert_int_equal(p.apps[0].state, RKL_POD_APP_EXITED);
        assert_true(p.apps[0].exit_known);
        assert_int_equal(p.apps[0].exit_code, 7);
        assert_string_equal(p.apps[1].name, "b");
        assert_int_equal(p.apps[1].state, RKL_POD_APP_EXITED);
        assert_false(p.apps[1].exit_known); /* "killed\n" */
}

static void test_empty_pod_dir(void **state)
{
        fixture *f = *state;
        _cleanup_(rkl_poddir_pod_done) rkl_poddir_pod p = {0};
        assert_int_equal(rkl_poddir_read(f->pods, U_EMPTY, &p, NULL), 0);
        assert_int_equal(p.state, RKL_POD_STATE_EXITED);
        assert_int_equal(p.manifest_error, -ENOENT);
        assert_null(p.warning); /* nothing written yet is nothing wrong */
        assert_true(p.created_ns == 0 && p.started_ns == 0);
        assert_int_equal(p.ppid, 0);
        assert_null(p.ip);
        assert_null(p.subcgroup);
        assert_null(p.stage1_tree);
        assert_int_equal(p.n_apps, 0);
}

static void test_missing_and_invalid(void **state)
{
        fixture *f = *state;
        rkl_poddir_pod p = {0};
        rkl_error e = RKL_ERROR_INIT;
        assert_int_equal(rkl_poddir_read(f->pods, "1a000000-0000-4000-8000-0000000000ff", &p, &e),
                         -ENOENT);
        assert_int_equal(e.code, -ENOENT);
        const char *bad[] = {"../run", "", "1A000000-0000-4000-8000-000000000001",
                             "1a000000-0000-4000-8000-000000000001/..",
                             "1a000000x0000-4000-8000-000000000001"};
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                assert_int_equal(rkl_poddir_read(f->pods, bad[i], &p, NULL), -EINVAL);
        /* A regular file where a pod dir should be is no pod. */
        assert_int_equal(rkl_poddir_read(f->pods, "1a000000-0000-4000-8000-00000000000f", &p, NULL),
                         -ENOENT);
}

/* FIFOs and oversized files must neither block nor be read. */
static void test_hostile_files(void **state)
{
        fixture *f = *state;
        _cleanup_(rkl_poddir_pod_done) rkl_poddir_pod p = {0};
        assert_int_equal(unlinkat(f->pods, "run/" U_RUNNING "/pod", 0), 0);
        assert_int_equal(mkfifoat(f->pods, "run/" U_RUNNING "/pod", 0600), 0);
        assert_int_equal(unlinkat(f->pods, "run/" U_RUNNING "/" UPPER "/status/web", 0), 0);
        assert_int_equal(mkfifoat(f->pods, "run/" U_RUNNING "/" UPPER "/status/web", 0600), 0);
        _cleanup_close_ int big =
            openat(f->pods, "run/" U_RUNNING "/net-info.json", O_WRONLY | O_TRUNC | O_CLOEXEC);
        assert_true(big >= 0);
        assert_int_equal(ftruncate(big, 10 * 1024 * 1024), 0);

        lock_pod(f, "run/" U_RUNNING);
        assert_int_equal(rkl_poddir_read(f->pods, U_RUNNING, &p, NULL), 0);
        assert_int_equal(p.manifest_error, -EBADFD);
        assert_null(p.ip);
        assert_string_equal(p.warning, "net-info.json: File too large; pod manifest: File "
                                       "descriptor in bad state");
        /* Status-only apps now: web's exit "file" is a FIFO, so it is not exited. */
        const rkl_poddir_app *w = app(&p, "web");
        assert_false(w->in_manifest);
        assert_int_not_equal(w->state, RKL_POD_APP_EXITED);
}

/* `app rm` leaves <app>-created and <app>-started behind: with a readable manifest that no
 * longer lists the app, it is not claimed to be running. */
static void test_removed_app_leftovers(void **state)
{
        fixture *f = *state;
        _cleanup_(rkl_poddir_pod_done) rkl_poddir_pod p = {0};
        write_at(f->pods, "run/" U_RUNNING "/" UPPER "/status/gone-created", "");
        write_at(f->pods, "run/" U_RUNNING "/" UPPER "/status/gone-started", "");
        lock_pod(f, "run/" U_RUNNING);
        assert_int_equal(rkl_poddir_read(f->pods, U_RUNNING, &p, NULL), 0);
        assert_int_equal(p.n_apps, 4);
        const rkl_poddir_app *g = app(&p, "gone");
        assert_false(g->in_manifest);
        assert_int_equal(g->state, RKL_POD_APP_UNKNOWN);
        assert_true(g->created_ns != 0 && g->started_ns != 0);
}

/* A pod deleted between open and the end of the read is reported gone. */
static void test_vanished_while_reading(void **state)
{
        fixture *f = *state;
        rkl_poddir_pod p = {0};
        assert_int_equal(rkl_rm_rf_at(f->pods, "run/" U_STOPPED), 0);
        assert_int_equal(rkl_poddir_read(f->pods, U_STOPPED, &p, NULL), -ENOENT);
}

static void test_list(void **state)
{
        fixture *f = *state;
        _cleanup_strv_free_ char **l = NULL;
        /* Mid-rename duplicates (a copy in a later state dir) are listed once. */
        assert_int_equal(mkdirat(f->pods, "exited-garbage/" U_RUNNING, 0755), 0);
        assert_int_equal(rkl_poddir_list(f->pods, &l, NULL), 0);
        assert_int_equal(rkl_strv_length(l), 9);
        assert_string_equal(l[0], U_RUNNING);
        assert_string_equal(l[8], U_GARBAGE);
        for (size_t i = 1; l[i]; i++)
                assert_true(strcmp(l[i - 1], l[i]) < 0);
        /* Both copies exist: the earlier state dir wins, as in rkt's getPod(). */
        _cleanup_(rkl_poddir_pod_done) rkl_poddir_pod p = {0};
        assert_int_equal(rkl_poddir_read(f->pods, U_RUNNING, &p, NULL), 0);
        assert_int_equal(p.dir, RKL_PODDIR_RUN);
}

static void test_list_empty_data_dir(void **state)
{
        _cleanup_free_ char *dir = fixture_tmpdir(false);
        _cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        _cleanup_strv_free_ char **l = NULL;
        assert_int_equal(rkl_poddir_list(fd, &l, NULL), 0);
        assert_non_null(l);
        assert_null(l[0]);
        (void)rkl_rm_rf_at(AT_FDCWD, dir);
}

static void test_parse_exit(void **state)
{
        int c = -1;
        assert_int_equal(rkl_poddir_parse_exit("15\n", 3, &c), 0);
        assert_int_equal(c, 15);
        assert_int_equal(rkl_poddir_parse_exit(" 203 \r\n", 7, &c), 0);
        assert_int_equal(c, 203);
        assert_int_equal(rkl_poddir_parse_exit("0", 1, &c), 0);
        assert_int_equal(c, 0);
        assert_int_equal(rkl_poddir_parse_exit("\n", 1, &c), -ENODATA);
        assert_int_equal(rkl_poddir_parse_exit("", 0, &c), -ENODATA);
        assert_int_equal(rkl_poddir_parse_exit("abc", 3, &c), -EBADMSG);
        assert_int_equal(rkl_poddir_parse_exit("-1", 2, &c), -EBADMSG);
        assert_int_equal(rkl_poddir_parse_exit("1\0002", 3, &c), -EBADMSG);
        assert_int_equal(rkl_poddir_parse_exit("256", 3, &c), -ERANGE);
        assert_int_equal(rkl_poddir_parse_exit("99999999999999999999999", 23, &c), -EBADMSG);
        /* Only len bytes count. */
        assert_int_equal(rkl_poddir_parse_exit("9x", 1, &c), 0);
        assert_int_equal(c, 9);
}

static void test_parse_pid(void **state)
{
        uint32_t pid = 0;
        assert_int_equal(rkl_poddir_parse_pid("4242\n", 5, &pid), 0);
        assert_int_equal(pid, 4242);
        assert_int_equal(rkl_poddir_parse_pid("0", 1, &pid), -ERANGE);
        assert_int_equal(rkl_poddir_parse_pid("2147483648", 10, &pid), -ERANGE);
        assert_int_equal(rkl_poddir_parse_pid("", 0, &pid), -ENODATA);
        assert_int_equal(rkl_poddir_parse_pid("12 34", 5, &pid), -EBADMSG);
}

static int netinfo(const char *json, char **ip, char **name)
{
        rkl_error e = RKL_ERROR_INIT;
        return rkl_poddir_parse_netinfo(json, strlen(json), ip, name, &e);
}

static void test_parse_netinfo(void **state)
{
        char *ip = NULL, *name = NULL;
#define CHECK(json, want_ip, want_name)                                                            \
        do {                                                                                       \
                assert_int_equal(netinfo(json, &ip, &name), 0);                                    \
                if (want_ip) {                                                                     \
                        assert_string_equal(ip, (const char *)want_ip);                            \
                        assert_string_equal(name, (const char *)want_name);                        \
                } else                                                                             \
                        assert_null(ip);                                                           \
                free(ip);                                                                          \
                free(name);                                                                        \
                ip = name = NULL;                                                                  \
        } while (0)
        CHECK("[{\"netName\":\"a\",\"ip\":\"10.0.0.1\"},{\"netName\":\"default\",\"ip\":"
              "\"172.16.28.5\"}]",
              "172.16.28.5", "default");
        CHECK("[{\"netName\":\"a\",\"ip\":\"10.0.0.1\"},{\"netName\":\"b\",\"ip\":\"10.0.0.2\"}]",
              "10.0.0.1", "a");
        /* IPv4 only: a preferred network with an IPv6 address does not count. */
        CHECK("[{\"netName\":\"rkt.kubernetes.io\",\"ip\":\"fd00::1\"},{\"netName\":\"x\",\"ip\":"
              "\"10.0.0.9\"}]",
              "10.0.0.9", "x");
        CHECK("[{\"netName\":\"default\",\"ip\":\"fd00::1\"}]", NULL, NULL);
        CHECK("[]", NULL, NULL);
        CHECK("null", NULL, NULL);
        CHECK("[{\"netName\":\"default\"}]", NULL, NULL);
        CHECK("[{\"netName\":\"default\",\"ip\":\"10.0.0.256\"}]", NULL, NULL);
#undef CHECK
        assert_int_equal(netinfo("{}", &ip, &name), -EBADMSG);
        assert_int_equal(netinfo("[{\"netName\":1,\"ip\":\"10.0.0.1\"}]", &ip, &name), -EBADMSG);
        assert_int_equal(netinfo("[{\"netName\":\"a\",\"ip\":\"10.0.0.1\"}", &ip, &name), -EBADMSG);
        assert_int_equal(netinfo("[1]", &ip, &name), -EBADMSG);
}

static int manifest(const char *json, rkl_poddir_manifest *m)
{
        rkl_error e = RKL_ERROR_INIT;
        int r = rkl_poddir_parse_manifest(json, strlen(json), m, &e);
        if (r < 0)
                assert_int_equal(e.code, r);
        return r;
}

static void test_parse_manifest(void **state)
{
        _cleanup_(rkl_poddir_manifest_done) rkl_poddir_manifest m = {0};
        assert_int_equal(
            manifest("{\"acKind\":\"PodManifest\",\"apps\":[{\"name\":\"a\",\"image\":{\"id\":"
                     "\"sha512-1\"}}],\"userAnnotations\":{\"k\":\"v\"},\"annotations\":[{\"name\":"
                     "\"n\",\"value\":\"w\"}]} \n",
                     &m),
            0);
        assert_int_equal(m.n_apps, 1);
        assert_string_equal(m.apps[0].image_id, "sha512-1");
        assert_string_equal(rkl_kvs_get(&m.user_annotations, "k"), "v");
        assert_string_equal(rkl_kvs_get(&m.annotations, "n"), "w");

        const char *bad[] = {
            "",
            "null",
            "[]",
            "{}",
            "{\"acKind\":\"ImageManifest\"}",
            "{\"acKind\":\"PodManifest\"} x",
            "{\"acKind\":\"PodManifest\",\"apps\":{}}",
            "{\"acKind\":\"PodManifest\",\"apps\":[{\"name\":\"../etc\"}]}",
            "{\"acKind\":\"PodManifest\",\"apps\":[{\"name\":\"a/b\"}]}",
            "{\"acKind\":\"PodManifest\",\"apps\":[{\"name\":\"a\"},{\"name\":\"a\"}]}",
            "{\"acKind\":\"PodManifest\",\"apps\":[{}]}",
            "{\"acKind\":\"PodManifest\",\"userLabels\":{\"k\":1}}",
            ("{\"acKind\":\"PodManifest\",\"annotations\":[{\"name\":\"a\",\"value\":\"1\"},"
             "{\"name\":\"a\",\"value\":\"2\"}]}"),
            "{\"acKind\":\"PodManifest\",\"userLabels\":{\"k\":\"a\\u0000b\"}}",
            "{\"acKind\":\"PodManifest\",\"userLabels\":{\"k\":\"\xff\"}}",
            "{'acKind':'PodManifest'}",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                rkl_poddir_manifest b = {0};
                if (manifest(bad[i], &b) != -EBADMSG)
                        fail_msg("accepted: %s", bad[i]);
        }

        /* Nesting beyond the tokener's depth is refused, not recursed into. */
        size_t depth = 10000;
        _cleanup_free_ char *deep = rkl_xmalloc(2 * depth + 64);
        size_t n = 0;
        n += (size_t)snprintf(deep, 64, "{\"acKind\":\"PodManifest\",\"x\":");
        memset(deep + n, '[', depth);
        memset(deep + n + depth, ']', depth);
        memcpy(deep + n + 2 * depth, "}", 2);
        rkl_poddir_manifest b = {0};
        assert_int_equal(manifest(deep, &b), -EBADMSG);
}

static void test_names(void **state)
{
        assert_true(rkl_pod_uuid_is_valid(U_RUNNING));
        assert_false(rkl_pod_uuid_is_valid(NULL));
        assert_false(rkl_pod_uuid_is_valid(U_RUNNING "0"));
        assert_true(rkl_pod_app_name_is_valid("0-nginx"));
        assert_true(rkl_pod_app_name_is_valid("a.b_c~d"));
        const char *bad[] = {"", "-a", "a-", "a..b", "..", ".", "A", "a/b", "a b", "a--b"};
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                if (rkl_pod_app_name_is_valid(bad[i]))
                        fail_msg("accepted app name '%s'", bad[i]);
        char long_name[256];
        memset(long_name, 'a', sizeof(long_name) - 1);
        long_name[255] = 0;
        assert_false(rkl_pod_app_name_is_valid(long_name));
        assert_int_equal(rkl_poddir_dir_from_string("exited-garbage"), RKL_PODDIR_EXITED_GARBAGE);
        assert_int_equal(rkl_poddir_dir_from_string("nope"), _RKL_PODDIR_DIR_INVALID);
        for (int s = 0; s < _RKL_POD_STATE_MAX; s++)
                assert_non_null(rkl_pod_state_to_string(s));
        assert_null(rkl_pod_state_to_string(_RKL_POD_STATE_MAX));
        assert_string_equal(rkl_pod_app_state_to_string(RKL_POD_APP_EXITED), "exited");
}

/* The pod's systemd is its nspawn's first child: here this process stands for the nspawn,
 * with a sleep as its child; a process that is gone, or has no child, has no pod systemd. */
static void test_pod_init(void **state)
{
        (void)state;
        rkl_error err = RKL_ERROR_INIT;
        pid_t init = 0, child;
        assert_int_equal(rkl_poddir_pod_init(0, &init, &err), -ESRCH);
        assert_int_equal(
            posix_spawn(&child, "/bin/sleep", NULL, NULL, RKL_STRV("sleep", "30"), NULL), 0);
        assert_int_equal(rkl_poddir_pod_init((uint32_t)getpid(), &init, &err), 0);
        assert_int_equal(init, child);
        /* The child has no child of its own. */
        err = (rkl_error)RKL_ERROR_INIT;
        assert_int_equal(rkl_poddir_pod_init((uint32_t)child, &init, &err), -ESRCH);
        assert_non_null(strstr(err.msg, "no child"));
        assert_int_equal(kill(child, SIGKILL), 0);
        assert_int_equal(waitpid(child, NULL, 0), child);
        /* Reaped: its PID names no process now (until reused, which a test cannot wait on). */
        err = (rkl_error)RKL_ERROR_INIT;
        assert_int_equal(rkl_poddir_pod_init((uint32_t)child, &init, &err), -ESRCH);
        assert_non_null(strstr(err.msg, "not running"));
        assert_int_equal(init, child); /* ret_ untouched on failure */
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
        const struct CMUnitTest tests[] = {
            T(test_running_pod),
            T(test_running_pod_unlocked_is_exited),
            T(test_exit_file_being_written),
            T(test_prepare_lock_in_process),
            T(test_stopped_pod),
            T(test_exited_garbage),
            T(test_other_states),
            T(test_broken_pod),
            T(test_empty_pod_dir),
            T(test_missing_and_invalid),
            T(test_hostile_files),
            T(test_removed_app_leftovers),
            T(test_vanished_while_reading),
            T(test_list),
            cmocka_unit_test(test_list_empty_data_dir),
            cmocka_unit_test(test_parse_exit),
            cmocka_unit_test(test_parse_pid),
            cmocka_unit_test(test_parse_netinfo),
            cmocka_unit_test(test_parse_manifest),
            cmocka_unit_test(test_names),
            cmocka_unit_test(test_pod_init),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
