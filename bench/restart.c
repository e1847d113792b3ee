/* The restart scenario: the daemon is SIGKILLed and started again, and timed until it answers,
 * lists everything, lists it as before the kill, and has converged (bench.h). */
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "base/alloc.h"
#include "base/parse.h"
#include "base/banned.h"

extern char **environ;

/* Runs the restart command; its last line of output, if a number, is the new daemon's PID. */
static int run_restart_cmd(const char *cmd, pid_t *ret_pid)
{
        posix_spawn_file_actions_t fa;
        char *argv[] = {(char *)"/bin/sh", (char *)"-c", (char *)cmd, NULL};
        char buf[256] = "";
        size_t len = 0;
        int pfd[2], status, r;
        pid_t pid;

        if (pipe2(pfd, O_CLOEXEC) < 0)
                return -errno;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, pfd[1], STDOUT_FILENO);
        r = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        close(pfd[1]);
        if (r != 0) {
                close(pfd[0]);
                return -r;
        }
        for (ssize_t n;
             len < sizeof(buf) - 1 && (n = read(pfd[0], buf + len, sizeof(buf) - 1 - len)) != 0;) {
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        break;
                len += (size_t)n;
        }
        close(pfd[0]);
        if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                fprintf(stderr, "rkl-bench: restart command failed\n");
                return -ECHILD;
        }
        buf[len] = 0;
        while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
                buf[--len] = 0;
        const char *last = strrchr(buf, '\n');
        uint64_t v;
        if (rkl_safe_atou64(last ? last + 1 : buf, &v) == 0 && v > 0)
                *ret_pid = (pid_t)v;
        return 0;
}

/* rktlet's verbose PodSandboxStatus says the observed phase in info's JSON; other runtimes
 * leave it out, and "" stands for it. */
static void pod_phase(const Runtime__V1__PodSandboxStatusResponse *r, char *buf, size_t size)
{
        buf[0] = 0;
        for (size_t i = 0; i < r->n_info; i++) {
                const char *p = strstr(r->info[i]->value, "\"phase\"");
                const char *q;
                if (!p || !(p = strchr(p + 7, ':')) || !(p = strchr(p, '"')) ||
                    !(q = strchr(p + 1, '"')))
                        continue;
                snprintf(buf, size, "%.*s", (int)(q - p - 1), p + 1);
                return;
        }
}

typedef struct snapshot {
        int *container_state; /* per container of the run, in pod order */
        int *pod_state;
        char (*pod_phase)[32];
} snapshot;

static void snapshot_release(snapshot *s)
{
        free(s->container_state);
        free(s->pod_state);
        free(s->pod_phase);
        memset(s, 0, sizeof(*s));
}

typedef struct id_state {
        const char *id;
        int state;
} id_state;

static int cmp_id_state(const void *a, const void *b)
{
        return strcmp(((const id_state *)a)->id, ((const id_state *)b)->id);
}

/* One ListContainers into container_state[] (-1: missing). Returns how many are present. */
static int list_into(rkb_bench *b, int *container_state)
{
        _cleanup_(rkb_request_freep) rkb_request *req =
            rkb_cri_by_id(&b->cri, RKB_LIST_CONTAINERS, NULL, false);
        _cleanup_free_ id_state *v = NULL;
        size_t n = 0, k = 0, present = 0;
        rkb_reply r;

        if (rkb_call(b, RKB_LIST_CONTAINERS, req, true, NULL, &r) != GRPC_STATUS_OK) {
                rkb_reply_release(&r);
                return -EPROTO;
        }
        const Runtime__V1__ListContainersResponse *l = (const void *)r.resp;
        v = rkl_xnew0(id_state, l->n_containers + 1);
        for (size_t i = 0; i < l->n_containers; i++)
                v[n++] = (id_state){l->containers[i]->id, l->containers[i]->state};
        qsort(v, n, sizeof(*v), cmp_id_state);
        for (size_t i = 0; i < b->n_pods; i++)
                for (size_t j = 0; j < b->pods[i].n_containers; j++, k++) {
                        id_state key = {b->pods[i].containers[j], 0};
                        const id_state *hit = bsearch(&key, v, n, sizeof(*v), cmp_id_state);
                        container_state[k] = hit ? hit->state : -1;
                        present += !!hit;
                }
        rkb_reply_release(&r);
        return (int)present;
}

/* Every pod's state and phase, from verbose PodSandboxStatus. */
static int pods_into(rkb_bench *b, int *pod_state, char (*phase)[32])
{
        for (size_t i = 0; i < b->n_pods; i++) {
                _cleanup_(rkb_request_freep) rkb_request *req =
                    rkb_cri_by_id(&b->cri, RKB_POD_STATUS, b->pods[i].id, true);
                rkb_reply r;

                if (rkb_call(b, RKB_POD_STATUS, req, true, NULL, &r) != GRPC_STATUS_OK) {
                        rkb_reply_release(&r);
                        return -EPROTO;
                }
                const Runtime__V1__PodSandboxStatusResponse *s = (const void *)r.resp;
                pod_state[i] = s->status ? (int)s->status->state : -1;
                pod_phase(s, phase[i], sizeof(phase[i]));
                rkb_reply_release(&r);
        }
        return 0;
}

static int take_snapshot(rkb_bench *b, snapshot *s)
{
        s->container_state = rkl_xnew0(int, b->n_containers + 1);
        s->pod_state = rkl_xnew0(int, b->n_pods + 1);
        s->pod_phase = rkl_xcalloc(b->n_pods + 1, sizeof(*s->pod_phase));
        if (list_into(b, s->container_state) < 0 || pods_into(b, s->pod_state, s->pod_phase) < 0)
                return -EPROTO;
        return 0;
}

/* The list is true: every container as before the kill, or further along (created before,
 * running now: the daemon may finish what it had not done). */
static bool same_or_ahead(const rkb_bench *b, const snapshot *before, const snapshot *now)
{
        for (size_t i = 0; i < b->n_containers; i++)
                if (now->container_state[i] != before->container_state[i] &&
                    !(before->container_state[i] ==
                          RUNTIME__V1__CONTAINER_STATE__CONTAINER_CREATED &&
                      now->container_state[i] == RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING &&
                      b->start_containers))
                        return false;
        return true;
}

static bool all_wanted(const rkb_bench *b, const snapshot *now)
{
        int want = b->start_containers ? RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING
                                       : RUNTIME__V1__CONTAINER_STATE__CONTAINER_CREATED;
        for (size_t i = 0; i < b->n_containers; i++)
                if (now->container_state[i] != want)
                        return false;
        return true;
}

/* Restart: the daemon is SIGKILLed and started again. "Correct" is the ListContainers it gave
 * before the kill (same IDs, same states or further along); "converged" is every container
 * running (created with --no-start) and every pod's state and observed phase as before the
 * kill. Times count from the spawn of the restart command. */
int rkb_scenario_restart(rkb_bench *b)
{
        _cleanup_(snapshot_release) snapshot before = {0}, now = {0};
        _cleanup_(rkb_request_freep) rkb_request *version = rkb_cri_version();
        pid_t new_pid = 0;
        uint64_t t0, deadline;
        long hwm;
        int r;

        if (b->daemon_pid <= 0 || !b->args->restart_cmd) {
                fprintf(stderr, "rkl-bench: restart needs --daemon-pid and --restart-cmd\n");
                return -EINVAL;
        }
        if (b->n_containers < b->args->restart_containers) {
                rkb_phase_begin(b, "%s", "populate-restart");
                r = rkb_populate(b, b->args->restart_containers, b->per_pod);
                rkb_phase_end(b);
                if (r < 0)
                        return r;
        }
        rkb_note_settled(b, "restart", rkb_wait_settled(b, b->settle_usec, 100));
        if (take_snapshot(b, &before) < 0)
                return -EPROTO;
        b->rst.containers = b->n_containers;
        b->rst.running = 0;
        for (size_t i = 0; i < b->n_containers; i++)
                b->rst.running +=
                    before.container_state[i] == RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING;
        (void)rkb_read_rss(b->daemon_pid, &b->rst.rss_before_kib, &hwm);

        if (kill(b->daemon_pid, SIGKILL) < 0)
                return -errno;
        /* Dead once it is gone or a zombie: its socket, locks and database are released. */
        for (long rss; rkb_read_rss(b->daemon_pid, &rss, &hwm) == 0;)
                rkb_sleep_ms(1);
        b->cli = rkb_client_free(b->cli);

        t0 = rkb_now_ns();
        r = run_restart_cmd(b->args->restart_cmd, &new_pid);
        if (r < 0)
                return r;
        b->daemon_pid = new_pid;
        deadline = t0 + b->settle_usec * NSEC_PER_USEC;
        b->rst.done = true;
        b->rst.timed_out = true;
        now.container_state = rkl_xnew0(int, b->n_containers + 1);
        now.pod_state = rkl_xnew0(int, b->n_pods + 1);
        now.pod_phase = rkl_xcalloc(b->n_pods + 1, sizeof(*now.pod_phase));
        while (rkb_now_ns() < deadline) {
                rkb_reply rep;
                /* A fresh channel per attempt: a channel that saw the socket refuse backs off
                 * on its own schedule, which would be measured instead of the daemon.
                 * Failures while it starts are expected: not errors of the run. */
                b->cli = rkb_client_free(b->cli);
                r = rkb_client_new(b->endpoint, &b->cli);
                if (r < 0)
                        return r;
                if (rkb_client_call(b->cli, version, NULL, 2000000, &rep) == 0 &&
                    rep.status == GRPC_STATUS_OK) {
                        rkb_reply_release(&rep);
                        b->rst.answer_ms = rkb_ms(rkb_now_ns() - t0);
                        break;
                }
                if (getenv("RKL_BENCH_DEBUG"))
                        fprintf(stderr, "rkl-bench: %.1f ms: %s %s\n", rkb_ms(rkb_now_ns() - t0),
                                rkb_status_name(rep.status), rep.details ? rep.details : "");
                rkb_reply_release(&rep);
                rkb_sleep_ms(1);
        }
        while (b->rst.answer_ms > 0 && rkb_now_ns() < deadline) {
                int present = list_into(b, now.container_state);
                uint64_t t = rkb_now_ns();

                if (present == (int)b->n_containers && b->rst.list_complete_ms == 0)
                        b->rst.list_complete_ms = rkb_ms(t - t0);
                if (present == (int)b->n_containers && same_or_ahead(b, &before, &now)) {
                        b->rst.list_correct_ms = rkb_ms(t - t0);
                        break;
                }
                rkb_sleep_ms(1);
        }
        while (b->rst.list_correct_ms > 0 && rkb_now_ns() < deadline) {
                if (list_into(b, now.container_state) == (int)b->n_containers &&
                    all_wanted(b, &now) && pods_into(b, now.pod_state, now.pod_phase) == 0 &&
                    memcmp(now.pod_state, before.pod_state, b->n_pods * sizeof(int)) == 0 &&
                    memcmp(now.pod_phase, before.pod_phase, b->n_pods * sizeof(*now.pod_phase)) ==
                        0) {
                        b->rst.converged_ms = rkb_ms(rkb_now_ns() - t0);
                        b->rst.timed_out = false;
                        break;
                }
                rkb_sleep_ms(20);
        }
        (void)rkb_read_rss(b->daemon_pid, &b->rst.rss_after_kib, &hwm);
        rkb_record_rss(b, "after-restart");
        return b->rst.timed_out ? -ETIMEDOUT : 0;
}
