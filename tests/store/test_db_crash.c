/* The crash test: a child process commits writes in a loop and reports every acknowledged
 * commit on a pipe; the parent SIGKILLs it at a random moment, reopens the database and
 * checks that every acknowledged write is there, that nothing is half there, and that
 * PRAGMA integrity_check is ok. Dozens of rounds per run, on one database that keeps
 * growing, so later rounds also recover from earlier kills.
 *
 * The child is this executable run again with --child (posix_spawn; tests do not include
 * banned.h, but there is no need for fork either). RKL_CRASH_SEED=<n> replays a run;
 * RKL_CRASH_ROUNDS=<n> changes the number of rounds. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>

#include "base/alloc.h"
#include "base/fileio.h"
#include "base/parse.h"
#include "base/strv.h"
#include "base/time-util.h"
#include "store/db.h"

extern char **environ;

/* This executable, to run as the child. (Not under valgrind: its posix_spawn of the child
 * fails there; ASan covers the child instead.) */
static const char *self = "/proc/self/exe";

#define ROUNDS_DEFAULT 40
#define MAX_DELAY_MS   50
#define IDS_PER_ROUND  100000u /* each round writes its own ID range */
#define ACK_FD         3

enum { OP_POD = 1, OP_CONTAINER = 2, OP_DELETE = 3, OP_ERROR = 4 };

typedef struct ack {
        uint32_t op;
        uint32_t i;
} ack;

static void pod_id(char id[static RKL_ID_LEN + 1], uint32_t i)
{
        (void)snprintf(id, RKL_ID_LEN + 1, "%064x", i);
}

static void container_id(char id[static RKL_ID_LEN + 1], uint32_t i)
{
        (void)snprintf(id, RKL_ID_LEN + 1, "c%063x", i);
}

static void full_pod_spec(rkl_pod_spec *p, uint32_t i)
{
        *p = (rkl_pod_spec){0};
        p->name = rkl_xasprintf("pod-%u", i);
        p->uid = rkl_xstrdup("uid");
        p->namespace = rkl_xstrdup("crash");
        p->hostname = rkl_xstrdup("h");
        p->dns_servers = rkl_strv_copy(RKL_STRV("10.0.0.10"));
        rkl_kvs_add(&p->labels, "app", "crash");
        rkl_kvs_add(&p->labels, "i", p->name);
        rkl_kvs_add(&p->labels, "ü", "");
        rkl_kvs_add(&p->annotations, "a", "1");
        rkl_kvs_add(&p->annotations, "b", "2");
}

static void send_ack(uint32_t op, uint32_t i)
{
        ack a = {op, i};
        /* One write of 8 bytes to a pipe is atomic. The parent reading it means the commit
         * returned before the write: that is what "acknowledged" means here. */
        if (write(ACK_FD, &a, sizeof(a)) != (ssize_t)sizeof(a))
                _exit(3);
}

static int child_main(const char *path, uint32_t start, bool sync_full)
{
        rkl_error e = RKL_ERROR_INIT;
        rkl_db *s = NULL;
        int r = rkl_db_open(path, &(rkl_db_options){.sync_full = sync_full}, &s, &e);
        if (r < 0) {
                fprintf(stderr, "child: open: %s\n", e.msg);
                return 2;
        }
        for (uint32_t i = start; i < start + IDS_PER_ROUND; i++) {
                char id[RKL_ID_LEN + 1], cid[RKL_ID_LEN + 1];
                rkl_pod_spec p;
                pod_id(id, i);
                full_pod_spec(&p, i);
                r = rkl_db_pod_create(s, id, &p, NULL, &e);
                rkl_pod_spec_done(&p);
                if (r < 0)
                        break;
                send_ack(OP_POD, i);
                if (i % 3 == 0) {
                        char name[] = "c", image[] = "busybox", app[32];
                        (void)snprintf(app, sizeof(app), "app-%u", i);
                        rkl_container_spec c = {.name = name, .image = image};
                        container_id(cid, i);
                        if ((r = rkl_db_container_create(s, cid, id, app, NULL, &c, NULL, &e)) < 0)
                                break;
                        send_ack(OP_CONTAINER, i);
                }
                if (i % 4 == 0) {
                        if ((r = rkl_db_pod_record_error(s, id, "backoff", 1, &e)) < 0)
                                break;
                        send_ack(OP_ERROR, i);
                }
                if (i % 5 == 0 && i >= start + 2) {
                        pod_id(id, i - 2);
                        if ((r = rkl_db_pod_delete(s, id, &e)) < 0)
                                break;
                        send_ack(OP_DELETE, i - 2);
                }
        }
        fprintf(stderr, "child: stopped: %d %s\n", r, e.msg);
        rkl_db_close(s);
        return 1;
}

/* What the parent knows was acknowledged in one round, indexed by i - start. */
typedef struct round_acks {
        uint8_t *ops; /* bit (1 << op) per i */
        size_t n_acks;
        ack last; /* the last acknowledgement: the child was busy with the step after it */
} round_acks;

/* The child's steps for one i, in order (child_main). */
static const uint32_t step_order[] = {OP_POD, OP_CONTAINER, OP_ERROR, OP_DELETE};

static bool has_step(uint32_t op, uint32_t i, uint32_t start)
{
        switch (op) {
        case OP_POD:
                return true;
        case OP_CONTAINER:
                return i % 3 == 0;
        case OP_ERROR:
                return i % 4 == 0;
        case OP_DELETE:
                return i % 5 == 0 && i >= start + 2;
        default:
                return false;
        }
}

/* The step the child was in when it was killed: it may or may not have committed. */
static ack in_flight(const round_acks *ra, uint32_t start)
{
        if (ra->n_acks == 0)
                return (ack){OP_POD, start};
        uint32_t i = ra->last.op == OP_DELETE ? ra->last.i + 2 : ra->last.i;
        size_t pos = 0;
        while (step_order[pos] != ra->last.op)
                pos++;
        for (pos++; pos < ELEMENTSOF(step_order); pos++)
                if (has_step(step_order[pos], i, start))
                        return (ack){step_order[pos], step_order[pos] == OP_DELETE ? i - 2 : i};
        return (ack){OP_POD, i + 1};
}

static void read_acks(int fd, round_acks *ra, uint32_t start)
{
        ack buf[512];
        for (;;) {
                ssize_t n = read(fd, buf, sizeof(buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        return;
                assert_true(n >= 0);
                if (n == 0)
                        return;
                /* Whole records only: 8-byte writes to a pipe are never split. */
                assert_int_equal(n % sizeof(ack), 0);
                for (size_t k = 0; k < (size_t)n / sizeof(ack); k++) {
                        assert_true(buf[k].i >= start && buf[k].i < start + IDS_PER_ROUND);
                        ra->ops[buf[k].i - start] |= (uint8_t)(1u << buf[k].op);
                        ra->n_acks++;
                        ra->last = buf[k];
                }
        }
}

static uint64_t now_ms(void)
{
        return rkl_now_usec(CLOCK_MONOTONIC) / USEC_PER_MSEC;
}

/* Kills the child delay_ms after it started, or (after_first_ack) after its first
 * acknowledged commit: half the rounds must die mid-stream however slowly the child starts
 * (a loaded machine, a sanitizer), the others may die while it opens or migrates. */
static void run_round(const char *path, unsigned round, unsigned delay_ms, bool after_first_ack,
                      bool sync_full, size_t *ret_acks)
{
        uint32_t start = (round + 1) * IDS_PER_ROUND;
        char start_s[16], sync_s[2] = {sync_full ? '1' : '0', 0};
        int fds[2];
        pid_t pid;
        posix_spawn_file_actions_t fa;

        (void)snprintf(start_s, sizeof(start_s), "%u", start);
        assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
        assert_int_equal(posix_spawn_file_actions_init(&fa), 0);
        /* dup2 onto fd 3 clears O_CLOEXEC there; every other descriptor closes. */
        assert_int_equal(posix_spawn_file_actions_adddup2(&fa, fds[1], ACK_FD), 0);
        char *const argv[] = {
            (char *)"test_db_crash", (char *)"--child", (char *)path, start_s, sync_s, NULL};
        assert_int_equal(posix_spawn(&pid, self, &fa, NULL, argv, environ), 0);
        posix_spawn_file_actions_destroy(&fa);
        close(fds[1]);
        assert_int_equal(fcntl(fds[0], F_SETFL, O_NONBLOCK), 0);

        round_acks ra = {rkl_xnew0(uint8_t, IDS_PER_ROUND), 0, {0, 0}};
        for (uint64_t limit = now_ms() + 60000; after_first_ack && ra.n_acks == 0;) {
                assert_true(now_ms() < limit);
                struct pollfd p = {fds[0], POLLIN, 0};
                (void)poll(&p, 1, 100);
                read_acks(fds[0], &ra, start);
        }
        uint64_t deadline = now_ms() + delay_ms;
        for (uint64_t t; (t = now_ms()) < deadline;) {
                struct pollfd p = {fds[0], POLLIN, 0};
                (void)poll(&p, 1, (int)(deadline - t));
                read_acks(fds[0], &ra, start);
        }
        assert_int_equal(kill(pid, SIGKILL), 0);
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
                fail_msg("round %u: child ended on its own (status 0x%x)", round, status);
        assert_int_equal(fcntl(fds[0], F_SETFL, 0), 0);
        read_acks(fds[0], &ra, start); /* to EOF */
        close(fds[0]);

        /* Recover: open runs quick_check and refuses a damaged file. */
        rkl_error e = RKL_ERROR_INIT;
        rkl_db *s = NULL;
        if (rkl_db_open(path, NULL, &s, &e) < 0)
                fail_msg("round %u: reopen: %s", round, e.msg);
        if (rkl_db_integrity_check(s, &e) < 0)
                fail_msg("round %u: integrity: %s", round, e.msg);
        /* A delete in flight may have committed without its acknowledgement. */
        ack busy = in_flight(&ra, start);
        for (uint32_t k = 0; k < IDS_PER_ROUND; k++) {
                uint8_t ops = ra.ops[k];
                char id[RKL_ID_LEN + 1];
                rkl_pod_record *p = NULL;
                if (!ops)
                        continue;
                pod_id(id, start + k);
                int r = rkl_db_pod_get(s, id, &p, &e);
                if (ops & (1u << OP_DELETE)) {
                        if (r != -ENOENT)
                                fail_msg("round %u: deleted pod %u is back (%d)", round, start + k,
                                         r);
                        continue;
                }
                if (r == -ENOENT && busy.op == OP_DELETE && busy.i == start + k)
                        continue;
                if (ops & (1u << OP_POD) && r < 0)
                        fail_msg("round %u: acknowledged pod %u lost: %s", round, start + k, e.msg);
                if (ops & (1u << OP_ERROR))
                        assert_int_equal(p->book.attempts, 1);
                p = rkl_pod_record_free(p);
                if (ops & (1u << OP_CONTAINER)) {
                        rkl_container_record *c = NULL;
                        container_id(id, start + k);
                        if (rkl_db_container_get(s, id, &c, &e) < 0)
                                fail_msg("round %u: acknowledged container %u lost: %s", round,
                                         start + k, e.msg);
                        rkl_container_record_free(c);
                }
        }
        /* Nothing is half there: every pod in the file has all its labels and annotations,
         * acknowledged or not. */
        rkl_pod_record **all = NULL;
        size_t n = 0;
        if (rkl_db_pod_list(s, NULL, &all, &n, &e) < 0)
                fail_msg("round %u: list: %s", round, e.msg);
        for (size_t k = 0; k < n; k++) {
                assert_int_equal(all[k]->spec.labels.n, 3);
                assert_int_equal(all[k]->spec.annotations.n, 2);
                assert_non_null(all[k]->spec.dns_servers);
        }
        rkl_pod_record_array_free(all, n);
        rkl_db_close(s);
        free(ra.ops);
        *ret_acks = ra.n_acks;
}

static void test_kill9(void **state)
{
        char dir[512], path[600];
        const char *base = getenv("RKL_BUILD_DIR"), *seed_s = getenv("RKL_CRASH_SEED"),
                   *rounds_s = getenv("RKL_CRASH_ROUNDS");
        unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid(), rounds = ROUNDS_DEFAULT;
        size_t total = 0, with_acks = 0;

        if (seed_s)
                assert_int_equal(rkl_safe_atou(seed_s, &seed), 0);
        if (rounds_s)
                assert_int_equal(rkl_safe_atou(rounds_s, &rounds), 0);
        print_message("crash test: seed %u (RKL_CRASH_SEED=%u replays it), %u rounds\n", seed, seed,
                      rounds);
        (void)snprintf(dir, sizeof(dir), "%s/test-store-crash-XXXXXX", base ? base : "/tmp");
        assert_non_null(mkdtemp(dir));
        (void)snprintf(path, sizeof(path), "%s/%s", dir, RKL_DB_FILE_NAME);

        for (unsigned round = 0; round < rounds; round++) {
                unsigned delay = (unsigned)rand_r(&seed) % (MAX_DELAY_MS + 1);
                size_t acks = 0;
                /* Every third round uses synchronous=FULL: both settings must survive. */
                run_round(path, round, delay, round % 2 == 1, round % 3 == 2, &acks);
                total += acks;
                with_acks += acks > 0;
        }
        print_message("crash test: %zu acknowledged writes checked, %zu of %u rounds killed "
                      "after their first commit\n",
                      total, with_acks, rounds);
        /* Most rounds must get past open: otherwise the test tests nothing. */
        assert_true(with_acks >= rounds / 2);
        (void)rkl_rm_rf_at(AT_FDCWD, dir);
}

int main(int argc, char **argv)
{
        if (argc == 5 && strcmp(argv[1], "--child") == 0) {
                unsigned start = 0;
                if (rkl_safe_atou(argv[3], &start) < 0)
                        return 2;
                return child_main(argv[2], start, argv[4][0] == '1');
        }
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_kill9),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
