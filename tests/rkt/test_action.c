/* The pod and app verbs against the simulator (build/rkt-sim), without systemd: a fixture pod
 * whose lock the test holds passes for running, a thread answers for its supervisor (the
 * abstract socket @rkt-sim/<uuid>), and a child sleep stands for its stage1 process. rkt-sim
 * runs behind a wrapper that records each command line. */
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "pods-fixture.h"
#include "rkt/action.h"
#include "rkt/image.h"
#include "rkt/poddir.h"
#include "rkt/rkt.h"

#define TIMEOUT (30ULL * 1000000)
/* The stage1 tree every pod of rkt-sim has (SIM_STAGE1_TREE, tests/rkt-sim/sim.h). */
#define SIM_TREE  "deps-sha512-7a3ee81cbd4c8d6ef4e7cde6a3e9d1b3a58ea9b2c8e4b64b7a4bbf6e0ab3b2d1"
#define SIM_UPPER "overlay/" SIM_TREE "/upper/rkt"

extern char **environ;

/* Stands in for the pod's supervisor: answers "ok" to every request and keeps them. */
typedef struct supervisor {
        int fd;
        pthread_t thread;
        pthread_mutex_t lock;
        char **requests;
} supervisor;

typedef struct fixture {
        char *dir, *log, *faults;
        char uuid[RKL_POD_UUID_LEN + 1];
        char *pod; /* pods/run/<uuid> */
        int pods_fd;
        int lock_fd; /* holds the pod lock: the pod is running */
        rkl_rkt *rkt;
        supervisor sup;
} fixture;

static void *supervise(void *userdata)
{
        supervisor *s = userdata;
        for (;;) {
                int c = accept4(s->fd, NULL, NULL, SOCK_CLOEXEC);
                if (c < 0) {
                        if (errno == EINTR)
                                continue;
                        return NULL; /* shut down by teardown */
                }
                char buf[256];
                size_t n = 0;
                while (n < sizeof(buf) - 1 && !memchr(buf, '\n', n)) {
                        ssize_t k = read(c, buf + n, sizeof(buf) - 1 - n);
                        if (k <= 0)
                                break;
                        n += (size_t)k;
                }
                buf[n] = 0;
                buf[strcspn(buf, "\n")] = 0;
                pthread_mutex_lock(&s->lock);
                rkl_strv_push(&s->requests, buf);
                pthread_mutex_unlock(&s->lock);
                if (write(c, "ok\n", 3) != 3)
                        abort();
                close(c);
        }
}

static void supervisor_start(supervisor *s, const char *uuid)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        int n = snprintf(sa.sun_path, sizeof(sa.sun_path), "%crkt-sim/%s", 0, uuid);
        s->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(s->fd >= 0);
        assert_int_equal(bind(s->fd, (struct sockaddr *)&sa,
                              (socklen_t)(offsetof(struct sockaddr_un, sun_path) + (size_t)n)),
                         0);
        assert_int_equal(listen(s->fd, 16), 0);
        pthread_mutex_init(&s->lock, NULL);
        assert_int_equal(pthread_create(&s->thread, NULL, supervise, s), 0);
}

static void supervisor_stop(supervisor *s)
{
        /* Wakes accept() with EINVAL. */
        (void)shutdown(s->fd, SHUT_RDWR);
        pthread_join(s->thread, NULL);
        close(s->fd);
        pthread_mutex_destroy(&s->lock);
        rkl_strv_free(s->requests);
}

/* The last request the supervisor got, or "". */
static char *supervisor_last(supervisor *s)
{
        pthread_mutex_lock(&s->lock);
        size_t n = rkl_strv_length(s->requests);
        char *r = rkl_xstrdup(n ? s->requests[n - 1] : "");
        pthread_mutex_unlock(&s->lock);
        return r;
}

static char *slurp(const char *path)
{
        char *buf = NULL;
        if (rkl_read_file_at(AT_FDCWD, path, 1 << 20, &buf, NULL) < 0)
                return rkl_xstrdup("");
        return buf;
}

/* The last command line the wrapper recorded, without the global flags rktlet adds. */
static char *last_command(fixture *e)
{
        _cleanup_free_ char *log = slurp(e->log);
        size_t n = strlen(log);
        if (n > 0 && log[n - 1] == '\n')
                log[--n] = 0;
        const char *line = strrchr(log, '\n');
        line = line ? line + 1 : log;
        _cleanup_free_ char *flags =
            rkl_xasprintf("--dir=%s --insecure-options=image,ondisk --debug=false ", e->dir);
        assert_true(strncmp(line, flags, strlen(flags)) == 0);
        return rkl_xstrdup(line + strlen(flags));
}

static size_t n_commands(fixture *e)
{
        _cleanup_free_ char *log = slurp(e->log);
        size_t n = 0;
        for (const char *p = log; (p = strchr(p, '\n')); p++)
                n++;
        return n;
}

static void set_faults(fixture *e, const char *rules)
{
        write_at(AT_FDCWD, e->faults, rules);
}

/* A child that stands for the pod's stage1 process: written to the pod's ppid. */
static pid_t stage1_start(fixture *e)
{
        pid_t pid;
        assert_int_equal(
            posix_spawn(&pid, "/bin/sleep", NULL, NULL, RKL_STRV("sleep", "30"), environ), 0);
        _cleanup_free_ char *ppid = rkl_xasprintf("%s/ppid", e->pod);
        _cleanup_free_ char *s = rkl_xasprintf("%d\n", (int)pid);
        write_at(AT_FDCWD, ppid, s);
        return pid;
}

/* The signal that ended the child. */
static int stage1_wait(pid_t pid)
{
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFSIGNALED(status));
        return WTERMSIG(status);
}

static int setup(void **state)
{
        const char *build = getenv("RKL_BUILD_DIR");
        assert_non_null(build);
        fixture *e = rkl_xnew0(fixture, 1);
        e->dir = fixture_tmpdir(true);
        e->log = rkl_xasprintf("%s/argv.log", e->dir);
        e->faults = rkl_xasprintf("%s/faults", e->dir);
        set_faults(e, "");

        /* A pod of our own name: the supervisor's socket is machine-wide. */
        uint8_t rnd[6];
        assert_int_equal(getrandom(rnd, sizeof(rnd), 0), (ssize_t)sizeof(rnd));
        (void)snprintf(e->uuid, sizeof(e->uuid), "1a0000ff-0000-4000-8000-%02x%02x%02x%02x%02x%02x",
                       rnd[0], rnd[1], rnd[2], rnd[3], rnd[4], rnd[5]);
        _cleanup_free_ char *from = rkl_xasprintf("%s/pods/run/%s", e->dir, U_RUNNING);
        e->pod = rkl_xasprintf("%s/pods/run/%s", e->dir, e->uuid);
        assert_int_equal(rename(from, e->pod), 0);
        /* As if rkt-sim made it: its stage1 tree. */
        _cleanup_free_ char *tree = rkl_xasprintf("%s/overlay/%s", e->pod, TREE);
        _cleanup_free_ char *sim_tree = rkl_xasprintf("%s/overlay/%s", e->pod, SIM_TREE);
        assert_int_equal(rename(tree, sim_tree), 0);
        _cleanup_free_ char *tree_id = rkl_xasprintf("%s/stage1TreeStoreID", e->pod);
        write_at(AT_FDCWD, tree_id, SIM_TREE);
        _cleanup_free_ char *env_dir = rkl_xasprintf("%s/%s/env", e->pod, SIM_UPPER);
        assert_int_equal(rkl_mkdir_p(env_dir, 0755), 0);
        _cleanup_free_ char *ready = rkl_xasprintf("%s/%s/supervisor-status", e->pod, SIM_UPPER);
        assert_int_equal(symlink("ready", ready), 0);
        /* No process of this machine: a stop that a test did not mean to reach harms none. */
        _cleanup_free_ char *ppid = rkl_xasprintf("%s/ppid", e->pod);
        write_at(AT_FDCWD, ppid, "999999999\n");
        e->lock_fd = open(e->pod, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(e->lock_fd >= 0);
        assert_int_equal(flock(e->lock_fd, LOCK_EX), 0);
        _cleanup_free_ char *pods = rkl_xasprintf("%s/pods", e->dir);
        e->pods_fd = open(pods, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(e->pods_fd >= 0);
        supervisor_start(&e->sup, e->uuid);

        _cleanup_free_ char *wrapper = rkl_xasprintf("%s/rkt", e->dir);
        _cleanup_free_ char *script = rkl_xasprintf(
            "#!/bin/sh\nprintf '%%s\\n' \"$*\" >> '%s'\nexec '%s/rkt-sim' \"$@\"\n", e->log, build);
        assert_int_equal(rkl_write_file_atomic_at(AT_FDCWD, wrapper, script, strlen(script), 0755),
                         0);
        /* The driver takes the environment as it is now. */
        setenv("RKT_SIM_FAULTS", e->faults, 1);
        unsetenv("RKT_SIM_PROFILE");
        rkl_rkt_config cfg = {.rkt_path = wrapper, .data_dir = e->dir};
        assert_int_equal(rkl_rkt_new(&cfg, &e->rkt, NULL), 0);
        *state = e;
        return 0;
}

static int teardown(void **state)
{
        fixture *e = *state;
        supervisor_stop(&e->sup);
        rkl_rkt_free(e->rkt);
        close(e->lock_fd);
        close(e->pods_fd);
        free(e->log);
        free(e->faults);
        free(e->pod);
        fixture_rm(e->dir);
        free(e);
        return 0;
}

static void test_app_start_stop_rm(void **state)
{
        fixture *e = *state;
        rkl_error err = RKL_ERROR_INIT;
        _cleanup_free_ char *cmd = NULL, *req = NULL;

        assert_int_equal(rkl_rkt_app_start(e->rkt, e->uuid, "idle", TIMEOUT, &err), 0);
        cmd = last_command(e);
        _cleanup_free_ char *want = rkl_xasprintf("app start %s --app=idle", e->uuid);
        assert_string_equal(cmd, want);
        req = supervisor_last(&e->sup);
        assert_string_equal(req, "start idle");

        free(cmd), free(req), free(want);
        assert_int_equal(rkl_rkt_app_stop(e->rkt, e->uuid, "ticker", TIMEOUT, &err), 0);
        cmd = last_command(e);
        want = rkl_xasprintf("app stop %s --app=ticker", e->uuid);
        assert_string_equal(cmd, want);
        req = supervisor_last(&e->sup);
        assert_string_equal(req, "stop ticker");

        free(cmd), free(req), free(want);
        assert_int_equal(rkl_rkt_app_rm(e->rkt, e->uuid, "web", TIMEOUT, &err), 0);
        cmd = last_command(e);
        want = rkl_xasprintf("app rm %s --app=web", e->uuid);
        assert_string_equal(cmd, want);
        req = supervisor_last(&e->sup);
        assert_string_equal(req, "rm web");
        rkl_poddir_pod p = {0};
        assert_int_equal(rkl_poddir_read(e->pods_fd, e->uuid, &p, NULL), 0);
        const rkl_poddir_app *web = rkl_poddir_pod_find_app(&p, "web");
        assert_true(web == NULL || !web->in_manifest);
        assert_non_null(rkl_poddir_pod_find_app(&p, "ticker"));
        rkl_poddir_pod_done(&p);

        /* Gone already: rkt's app rm is not idempotent. */
        assert_int_equal(rkl_rkt_app_rm(e->rkt, e->uuid, "web", TIMEOUT, &err), -ENOENT);
        assert_int_equal(err.code, -ENOENT);
        assert_non_null(strstr(err.msg, "rkt app rm: exit status 254: "));
        assert_non_null(strstr(err.msg, "nonexistent app \"web\""));
        assert_int_equal(rkl_rkt_app_start(e->rkt, e->uuid, "nope", TIMEOUT, &err), -ENOENT);
        assert_int_equal(rkl_rkt_app_stop(e->rkt, e->uuid, "nope", TIMEOUT, &err), -ENOENT);
}

static void test_app_verbs_on_other_pods(void **state)
{
        fixture *e = *state;
        rkl_error err = RKL_ERROR_INIT;
        const char *missing = "1a000000-0000-4000-8000-0000000000ee";

        assert_int_equal(rkl_rkt_app_start(e->rkt, missing, "web", TIMEOUT, &err), -ENOENT);
        assert_non_null(strstr(err.msg, "no matches found"));
        assert_int_equal(rkl_rkt_app_stop(e->rkt, missing, "web", TIMEOUT, &err), -ENOENT);
        assert_int_equal(rkl_rkt_app_rm(e->rkt, missing, "web", TIMEOUT, &err), -ENOENT);

        /* An exited pod: stop is done already, start cannot be, rm works. */
        assert_int_equal(rkl_rkt_app_stop(e->rkt, U_STOPPED, "web", TIMEOUT, &err), 0);
        assert_int_equal(rkl_rkt_app_start(e->rkt, U_STOPPED, "web", TIMEOUT, &err), -EIO);
        assert_non_null(strstr(err.msg, "rkt app start: exit status 254: "));
        assert_int_equal(rkl_rkt_app_rm(e->rkt, U_STOPPED, "web", TIMEOUT, &err), 0);

        /* Running, its supervisor not ready yet. */
        _cleanup_free_ char *ready = rkl_xasprintf("%s/%s/supervisor-status", e->pod, SIM_UPPER);
        assert_int_equal(unlink(ready), 0);
        assert_int_equal(rkl_rkt_app_start(e->rkt, e->uuid, "idle", TIMEOUT, &err), -EAGAIN);
        assert_non_null(strstr(err.msg, "not yet ready"));
}

static void test_app_add(void **state)
{
        fixture *e = *state;
        rkl_error err = RKL_ERROR_INIT;

        /* A one-file image in rkt-sim's local source, fetched into rkt's store. */
        _cleanup_free_ char *src =
            rkl_xasprintf("%s/images/registry-1.docker.io/library/tiny/latest", e->dir);
        _cleanup_free_ char *rootfs = rkl_xasprintf("%s/rootfs", src);
        assert_int_equal(rkl_mkdir_p(rootfs, 0755), 0);
        _cleanup_free_ char *config = rkl_xasprintf("%s/config.json", src);
        write_at(AT_FDCWD, config, "{\"Entrypoint\":[\"/true\"]}");
        _cleanup_free_ char *file = rkl_xasprintf("%s/true", rootfs);
        write_at(AT_FDCWD, file, "");
        _cleanup_free_ char *images = rkl_xasprintf("%s/images", e->dir);
        setenv("RKT_SIM_IMAGES", images, 1);
        _cleanup_(rkl_rkt_freep) rkl_rkt *d = NULL;
        _cleanup_free_ char *wrapper = rkl_xasprintf("%s/rkt", e->dir);
        rkl_rkt_config cfg = {.rkt_path = wrapper, .data_dir = e->dir};
        assert_int_equal(rkl_rkt_new(&cfg, &d, NULL), 0);
        _cleanup_free_ char *id = NULL;
        rkl_rkt_fetch_opts fo = {.timeout_usec = TIMEOUT};
        if (rkl_rkt_image_fetch(d, "docker://tiny", &fo, &id, &err) < 0)
                fail_msg("fetch: %s", err.msg);

        char *command[] = {(char *)"/true", (char *)"x", NULL};
        rkl_container_spec spec = {.command = command};
        rkl_rkt_app_opts o = {
            .container_id = "c0ffee",
            .app_name = "new",
            .image = id,
            .log_file = "new.log",
        };
        if (rkl_rkt_app_add(d, e->uuid, &spec, &o, TIMEOUT, &err) < 0)
                fail_msg("app add: %s", err.msg);
        _cleanup_free_ char *cmd = last_command(e);
        _cleanup_free_ char *want = rkl_xasprintf("app add %s %s --name=new", e->uuid, id);
        assert_true(strncmp(cmd, want, strlen(want)) == 0);
        assert_non_null(strstr(cmd, " --exec=/true -- x ---"));

        rkl_poddir_pod p = {0};
        assert_int_equal(rkl_poddir_read(e->pods_fd, e->uuid, &p, NULL), 0);
        const rkl_poddir_app *a = rkl_poddir_pod_find_app(&p, "new");
        assert_non_null(a);
        assert_true(a->in_manifest);
        assert_int_equal(a->state, RKL_POD_APP_CREATED);
        assert_string_equal(rkl_kvs_get(&a->user_annotations, "rktlet.io/container-id"), "c0ffee");
        rkl_poddir_pod_done(&p);

        /* Twice: rkt refuses a second app of that name. */
        assert_int_equal(rkl_rkt_app_add(d, e->uuid, &spec, &o, TIMEOUT, &err), -EIO);
        assert_non_null(strstr(err.msg, "rkt app add: exit status 254: "));
        assert_non_null(strstr(err.msg, "already exists"));
        assert_int_equal(
            rkl_rkt_app_add(d, "1a000000-0000-4000-8000-0000000000ee", &spec, &o, TIMEOUT, &err),
            -ENOENT);

        /* What rkt cannot do is refused before rkt runs. */
        size_t n = n_commands(e);
        rkl_container_spec user = {.has_run_as_user = true, .run_as_user = 1000};
        rkl_rkt_app_opts by_name = o;
        by_name.image = "docker://busybox";
        assert_int_equal(rkl_rkt_app_add(d, e->uuid, &user, &by_name, TIMEOUT, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "not an image ID"));
        assert_int_equal(n_commands(e), n);
}

static void test_pod_stop(void **state)
{
        fixture *e = *state;
        rkl_error err = RKL_ERROR_INIT;

        pid_t pid = stage1_start(e);
        assert_int_equal(rkl_rkt_pod_stop(e->rkt, e->uuid, false, TIMEOUT, &err), 0);
        _cleanup_free_ char *cmd = last_command(e);
        _cleanup_free_ char *want = rkl_xasprintf("stop %s", e->uuid);
        assert_string_equal(cmd, want);
        assert_int_equal(stage1_wait(pid), SIGTERM);

        pid = stage1_start(e);
        assert_int_equal(rkl_rkt_pod_stop(e->rkt, e->uuid, true, TIMEOUT, &err), 0);
        free(cmd), free(want);
        cmd = last_command(e);
        want = rkl_xasprintf("stop --force=true %s", e->uuid);
        assert_string_equal(cmd, want);
        assert_int_equal(stage1_wait(pid), SIGKILL);

        /* Exited already: rkt says so and exits 0. */
        assert_int_equal(rkl_rkt_pod_stop(e->rkt, U_STOPPED, false, TIMEOUT, &err), 0);
        assert_int_equal(
            rkl_rkt_pod_stop(e->rkt, "1a000000-0000-4000-8000-0000000000ee", true, TIMEOUT, &err),
            -ENOENT);
        assert_non_null(strstr(err.msg, "rkt stop: exit status 254: "));
        /* Never ran. */
        assert_int_equal(rkl_rkt_pod_stop(e->rkt, U_PREPARED, false, TIMEOUT, &err), -EAGAIN);
        assert_non_null(strstr(err.msg, "is not running"));
}

static void test_pod_rm(void **state)
{
        fixture *e = *state;
        rkl_error err = RKL_ERROR_INIT;

        assert_int_equal(rkl_rkt_pod_rm(e->rkt, U_STOPPED, TIMEOUT, &err), 0);
        _cleanup_free_ char *cmd = last_command(e);
        assert_string_equal(cmd, "rm " U_STOPPED);
        rkl_poddir_pod p = {0};
        assert_int_equal(rkl_poddir_read(e->pods_fd, U_STOPPED, &p, NULL), -ENOENT);

        /* Gone already. */
        assert_int_equal(rkl_rkt_pod_rm(e->rkt, U_STOPPED, TIMEOUT, &err), -ENOENT);
        assert_non_null(strstr(err.msg, "rkt rm: exit status 254: "));
        /* Running. */
        assert_int_equal(rkl_rkt_pod_rm(e->rkt, e->uuid, TIMEOUT, &err), -EIO);
        assert_non_null(strstr(err.msg, "is currently running"));
        assert_int_equal(rkl_poddir_read(e->pods_fd, e->uuid, &p, NULL), 0);
        rkl_poddir_pod_done(&p);
}

static void test_faults(void **state)
{
        fixture *e = *state;
        rkl_error err = RKL_ERROR_INIT;

        set_faults(e, "app start hang\n");
        assert_int_equal(rkl_rkt_app_start(e->rkt, e->uuid, "idle", 300 * 1000, &err), -ETIMEDOUT);
        assert_string_equal(err.msg, "rkt app start: no answer within 300 ms");

        set_faults(e, "stop fail 254 stop: unable to get pod lock: resource busy\n");
        assert_int_equal(rkl_rkt_pod_stop(e->rkt, e->uuid, false, TIMEOUT, &err), -EAGAIN);
        set_faults(e, "app stop fail 254 pod \"x\" is already stopped\n");
        assert_int_equal(rkl_rkt_app_stop(e->rkt, e->uuid, "ticker", TIMEOUT, &err), -EALREADY);
        set_faults(e, "app rm fail 1 rm: something else\n");
        assert_int_equal(rkl_rkt_app_rm(e->rkt, e->uuid, "web", TIMEOUT, &err), -EIO);
        assert_string_equal(err.msg, "rkt app rm: exit status 1: rm: something else");
        set_faults(e, "");
}

/* No rkt to run is no "no such pod": a removal must not take it for done. */
static void test_rkt_missing(void **state)
{
        (void)state;
        _cleanup_(rkl_rkt_freep) rkl_rkt *d = NULL;
        rkl_error err = RKL_ERROR_INIT;
        rkl_rkt_config cfg = {.rkt_path = "/nonexistent/rkt", .data_dir = "/nonexistent"};
        assert_int_equal(rkl_rkt_new(&cfg, &d, NULL), 0);

        assert_int_equal(rkl_rkt_app_rm(d, U_STOPPED, "web", TIMEOUT, &err), -EIO);
        assert_int_equal(err.code, -EIO);
        assert_non_null(strstr(err.msg, "rkt app rm: cannot run '/nonexistent/rkt'"));
        assert_int_equal(rkl_rkt_pod_rm(d, U_STOPPED, TIMEOUT, &err), -EIO);
        /* rkl_rkt_exec() itself still passes the spawn's code on. */
        assert_int_equal(rkl_rkt_exec(d, RKL_STRV("rm", U_STOPPED), TIMEOUT, NULL, &err), -ENOENT);
}

static bool has(char **l, const char *s)
{
        RKL_STRV_FOREACH (p, l)
                if (streq(*p, s))
                        return true;
        return false;
}

static void test_sandbox_command(void **state)
{
        (void)state;
        _cleanup_(rkl_rkt_freep) rkl_rkt *d = NULL;
        _cleanup_strv_free_ char **argv = NULL, **env = NULL;
        rkl_error err = RKL_ERROR_INIT;

        setenv("RKT_SIM_PROFILE", "fast", 1);
        setenv("HOME", "/root", 1);
        rkl_rkt_config cfg = {.rkt_path = "/usr/bin/rkt", .data_dir = "/var/lib/rkt"};
        assert_int_equal(rkl_rkt_new(&cfg, &d, NULL), 0);
        unsetenv("RKT_SIM_PROFILE");

        rkl_pod_spec spec = {
            .name = (char *)"web",
            .uid = (char *)"uid-1",
            .namespace = (char *)"default",
            .privileged = true,
        };
        rkl_rkt_sandbox_opts o = {
            .sandbox_id = "abcd",
            .uuid_file = "/run/rktlet/abcd/uuid",
            .log_dir = "/run/rktlet/abcd/logs",
        };
        assert_int_equal(rkl_rkt_sandbox_command(d, &spec, &o, &argv, &env, &err), 0);
        assert_string_equal(argv[0], "/usr/bin/rkt");
        assert_string_equal(argv[1], "--dir=/var/lib/rkt");
        assert_string_equal(argv[2], "--insecure-options=image,ondisk,all-run");
        assert_string_equal(argv[3], "--debug=false");
        assert_string_equal(argv[4], "app");
        assert_string_equal(argv[5], "sandbox");
        assert_string_equal(argv[6], "--uuid-file-save=/run/rktlet/abcd/uuid");
        assert_true(has(argv, "--user-annotation=rktlet.io/sandbox-id=abcd"));

        assert_true(has(env, "RKT_EXPERIMENT_APP=true"));
        assert_true(has(env, "RKT_EXPERIMENT_ATTACH=true"));
        assert_true(has(env, "RKT_SIM_PROFILE=fast"));
        RKL_STRV_FOREACH (s, env)
                assert_true(strncmp(*s, "RKT_", 4) == 0 || strncmp(*s, "PATH=", 5) == 0);

        /* Not privileged: rkt's capability restriction only is off (the app units' drop-ins
         * bound each app). */
        rkl_strv_free(argv), rkl_strv_free(env);
        spec.privileged = false;
        assert_int_equal(rkl_rkt_sandbox_command(d, &spec, &o, &argv, &env, &err), 0);
        assert_string_equal(argv[2], "--insecure-options=image,ondisk,capabilities");

        /* What rkt's own networking cannot express. */
        rkl_port_mapping sctp = {RKL_PROTOCOL_SCTP, 80, 8080, NULL};
        spec.ports = &sctp;
        spec.n_ports = 1;
        o.net = "default";
        char **a2 = NULL, **e2 = NULL;
        assert_int_equal(rkl_rkt_sandbox_command(d, &spec, &o, &a2, &e2, &err), -EINVAL);
        assert_null(a2);
        assert_null(e2);
        assert_non_null(strstr(err.msg, "SCTP"));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(test_app_start_stop_rm, setup, teardown),
            cmocka_unit_test_setup_teardown(test_app_verbs_on_other_pods, setup, teardown),
            cmocka_unit_test_setup_teardown(test_app_add, setup, teardown),
            cmocka_unit_test_setup_teardown(test_pod_stop, setup, teardown),
            cmocka_unit_test_setup_teardown(test_pod_rm, setup, teardown),
            cmocka_unit_test_setup_teardown(test_faults, setup, teardown),
            cmocka_unit_test(test_rkt_missing),
            cmocka_unit_test(test_sandbox_command),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
