/* Container events: what each change of a record makes (the pure derivation), the hub's
 * bounded queues (a subscriber that falls behind is dropped, the others go on), the events
 * kept for the next subscriber, and the events the store's writes emit, in order, with the
 * sandbox and its containers as they were. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <unistd.h>

#include "base/alloc.h"
#include "metrics/metrics.h"
#include "store/events.h"
#include "store/store.h"
#include "records.h"

#define C RKL_EVENT_CREATED
#define S RKL_EVENT_STARTED
#define T RKL_EVENT_STOPPED
#define D RKL_EVENT_DELETED

/* ---- Derivation ---- */

typedef struct pod_state {
        bool exists;
        rkl_pod_desired desired;
        rkl_pod_phase phase;
} pod_state;

static const rkl_pod_record *pod_rec(rkl_pod_record *r, pod_state s)
{
        if (!s.exists)
                return NULL;
        *r = (rkl_pod_record){.desired = s.desired, .observed.phase = s.phase};
        return r;
}

#define NONE                                                                                       \
        {                                                                                          \
                false, 0, 0                                                                        \
        }
#define P(d, p)                                                                                    \
        {                                                                                          \
                true, RKL_POD_DESIRED_##d, RKL_POD_PHASE_##p                                       \
        }

static void test_derive_pod(void **state)
{
        static const struct {
                pod_state before, after;
                rkl_event_type want[RKL_EVENT_DERIVE_MAX];
                size_t n;
        } cases[] = {
            {NONE, NONE, {0}, 0},
            {NONE, P(READY, PENDING), {C}, 1},
            {NONE, P(READY, RUNNING), {C, S}, 2},
            {NONE, P(STOPPED, STOPPED), {C, T}, 2},
            {P(READY, PENDING), P(READY, PENDING), {0}, 0},
            {P(READY, PENDING), P(READY, RUNNING), {S}, 1},
            {P(READY, RUNNING), P(READY, RUNNING), {0}, 0},
            /* StopPodSandbox: not ready from the moment it is accepted */
            {P(READY, RUNNING), P(STOPPED, RUNNING), {T}, 1},
            {P(STOPPED, RUNNING), P(STOPPED, STOPPED), {0}, 0},
            /* the pod died on its own, or never got ready */
            {P(READY, RUNNING), P(READY, FAILED), {T}, 1},
            {P(READY, PENDING), P(READY, FAILED), {T}, 1},
            {P(READY, PENDING), P(STOPPED, PENDING), {T}, 1},
            {P(STOPPED, STOPPED), NONE, {D}, 1},
            {P(READY, RUNNING), NONE, {D}, 1},
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                rkl_pod_record b, a;
                rkl_event_type got[RKL_EVENT_DERIVE_MAX];
                size_t n = rkl_event_derive_pod(pod_rec(&b, cases[i].before),
                                                pod_rec(&a, cases[i].after), got);
                if (n != cases[i].n)
                        fail_msg("case %zu: %zu events, wanted %zu", i, n, cases[i].n);
                for (size_t k = 0; k < n; k++)
                        if (got[k] != cases[i].want[k])
                                fail_msg("case %zu: event %zu is %s, wanted %s", i, k,
                                         rkl_event_type_to_string(got[k]),
                                         rkl_event_type_to_string(cases[i].want[k]));
        }
}

typedef struct ctr_state {
        bool exists;
        rkl_container_phase phase;
        bool started; /* rkt recorded a start */
} ctr_state;

static const rkl_container_record *ctr_rec(rkl_container_record *r, ctr_state s)
{
        if (!s.exists)
                return NULL;
        *r = (rkl_container_record){.observed.phase = s.phase,
                                    .observed.started_ns = s.started ? 1 : 0};
        return r;
}

#define K(p, st)                                                                                   \
        {                                                                                          \
                true, RKL_CONTAINER_PHASE_##p, st                                                  \
        }

static void test_derive_container(void **state)
{
        static const struct {
                ctr_state before, after;
                rkl_event_type want[RKL_EVENT_DERIVE_MAX];
                size_t n;
        } cases[] = {
            {NONE, NONE, {0}, 0},
            {NONE, K(CREATED, false), {C}, 1},
            {NONE, K(RUNNING, true), {C, S}, 2},
            {NONE, K(EXITED, true), {C, S, T}, 3},
            {K(CREATED, false), K(CREATED, false), {0}, 0},
            {K(CREATED, false), K(RUNNING, true), {S}, 1},
            /* running before rkt's record of the start was read: started all the same */
            {K(CREATED, false), K(RUNNING, false), {S}, 1},
            {K(RUNNING, true), K(RUNNING, true), {0}, 0},
            {K(RUNNING, true), K(EXITED, true), {T}, 1},
            /* it ran and exited between two looks */
            {K(CREATED, false), K(EXITED, true), {S, T}, 2},
            /* it never ran: a start that failed for good, or a stop before the start */
            {K(CREATED, false), K(EXITED, false), {T}, 1},
            {K(EXITED, true), K(EXITED, true), {0}, 0},
            {K(EXITED, true), NONE, {D}, 1},
            {K(CREATED, false), NONE, {D}, 1},
            /* no CRI event names a container whose state is not known */
            {K(RUNNING, true), K(UNKNOWN, true), {0}, 0},
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                rkl_container_record b, a;
                rkl_event_type got[RKL_EVENT_DERIVE_MAX];
                size_t n = rkl_event_derive_container(ctr_rec(&b, cases[i].before),
                                                      ctr_rec(&a, cases[i].after), got);
                if (n != cases[i].n)
                        fail_msg("case %zu: %zu events, wanted %zu", i, n, cases[i].n);
                for (size_t k = 0; k < n; k++)
                        if (got[k] != cases[i].want[k])
                                fail_msg("case %zu: event %zu is %s, wanted %s", i, k,
                                         rkl_event_type_to_string(got[k]),
                                         rkl_event_type_to_string(cases[i].want[k]));
        }
}

/* ---- The hub ---- */

typedef struct waker {
        int woken;
} waker;

static void wake(void *userdata)
{
        ((waker *)userdata)->woken++;
}

static rkl_event *event(unsigned n)
{
        char id[RKL_ID_LEN + 1];
        (void)snprintf(id, sizeof(id), "%064x", n);
        return rkl_event_new(RKL_EVENT_CREATED, false, id, NULL, NULL, 0);
}

static void emit(rkl_events *e, unsigned n)
{
        rkl_events_publish_lock(e);
        rkl_events_emit(e, event(n));
        rkl_events_publish_unlock(e);
}

/* The next event's ID's number, or -errno / 0 (none). */
static long next_of(rkl_events_sub *s)
{
        rkl_event *ev = NULL;
        int r = rkl_events_next(s, &ev, NULL);
        if (r <= 0)
                return r;
        long n = strtol(ev->id, NULL, 16);
        rkl_event_unref(ev);
        return n;
}

static void test_bound_drops_slow_subscriber(void **state)
{
        rkl_events_config cfg = {.queue_max = 3, .keep_usec = 0, .keep_max = 0};
        _cleanup_(rkl_events_freep) rkl_events *e = rkl_events_new(&cfg);
        waker fast_w = {0}, slow_w = {0};
        rkl_events_sub *fast = NULL, *slow = NULL;
        int64_t dropped = rkl_metrics_get(RKL_METRICS_EVENT_STREAMS_DROPPED);

        assert_int_equal(rkl_events_subscribe(e, wake, &fast_w, &fast), 0);
        assert_int_equal(rkl_events_subscribe(e, wake, &slow_w, &slow), 0);
        assert_int_equal(rkl_events_n_subscribers(e), 2);
        assert_int_equal(next_of(fast), 0);

        /* A wake when a queue goes from empty to not: one per burst, however long. */
        emit(e, 1);
        emit(e, 2);
        assert_int_equal(fast_w.woken, 1);
        assert_int_equal(slow_w.woken, 1);
        assert_int_equal(next_of(fast), 1);
        assert_int_equal(next_of(fast), 2);
        assert_int_equal(next_of(fast), 0);
        emit(e, 3);
        assert_int_equal(fast_w.woken, 2);
        assert_int_equal(next_of(fast), 3);

        /* The slow one has 3 waiting, its bound: the 4th drops it, not the fast one. */
        emit(e, 4);
        assert_int_equal(slow_w.woken, 2); /* told, to end its stream */
        assert_int_equal(rkl_events_n_subscribers(e), 1);
        assert_int_equal(rkl_metrics_get(RKL_METRICS_EVENT_STREAMS_DROPPED), dropped + 1);
        rkl_event *ev = NULL;
        uint64_t lost = 0;
        assert_int_equal(rkl_events_next(slow, &ev, &lost), -ENOSPC);
        assert_int_equal(lost, 4);
        assert_int_equal(rkl_events_next(slow, &ev, &lost), -ENOSPC); /* and stays so */
        assert_int_equal(next_of(fast), 4);

        /* Nothing more reaches it. */
        emit(e, 5);
        assert_int_equal(slow_w.woken, 2);
        assert_int_equal(next_of(fast), 5);

        slow = rkl_events_unsubscribe(slow);
        fast = rkl_events_unsubscribe(fast);
        assert_int_equal(rkl_events_n_subscribers(e), 0);
}

static void test_kept_for_next_subscriber(void **state)
{
        rkl_events_config cfg = {.queue_max = 8, .keep_usec = UINT64_C(60000000), .keep_max = 3};
        _cleanup_(rkl_events_freep) rkl_events *e = rkl_events_new(&cfg);
        waker w = {0};
        rkl_events_sub *a = NULL, *b = NULL;

        /* Nobody listens: the last keep_max are kept, in order. */
        for (unsigned i = 1; i <= 5; i++)
                emit(e, i);
        assert_int_equal(rkl_events_subscribe(e, wake, &w, &a), 0);
        assert_int_equal(next_of(a), 3);
        assert_int_equal(next_of(a), 4);
        emit(e, 6); /* live ones follow */
        assert_int_equal(next_of(a), 5);
        assert_int_equal(next_of(a), 6);
        assert_int_equal(next_of(a), 0);

        /* Kept events went to the first subscriber: the next one gets only what came
         * while nobody listened. */
        a = rkl_events_unsubscribe(a);
        emit(e, 7);
        assert_int_equal(rkl_events_subscribe(e, wake, &w, &b), 0);
        assert_int_equal(next_of(b), 7);
        assert_int_equal(next_of(b), 0);
        b = rkl_events_unsubscribe(b);
}

static void test_kept_expire(void **state)
{
        rkl_events_config cfg = {.queue_max = 8, .keep_usec = UINT64_C(10000000), .keep_max = 8};
        _cleanup_(rkl_events_freep) rkl_events *e = rkl_events_new(&cfg);
        waker w = {0};
        rkl_events_sub *s = NULL;

        /* Event 1 is dated twice the window back rather than waited for, so a slow
         * machine cannot age event 2 past the window too. */
        rkl_event *old = event(1);
        assert_true(old->emitted_usec > 2 * cfg.keep_usec);
        old->emitted_usec -= 2 * cfg.keep_usec;
        rkl_events_publish_lock(e);
        rkl_events_emit(e, old);
        rkl_events_publish_unlock(e);
        emit(e, 2);
        assert_int_equal(rkl_events_subscribe(e, wake, &w, &s), 0);
        assert_int_equal(next_of(s), 2);
        assert_int_equal(next_of(s), 0);
        s = rkl_events_unsubscribe(s);
}

static void test_shutdown(void **state)
{
        _cleanup_(rkl_events_freep) rkl_events *e = rkl_events_new(NULL);
        waker w = {0};
        rkl_events_sub *s = NULL, *t = NULL;

        assert_int_equal(rkl_events_subscribe(e, wake, &w, &s), 0);
        emit(e, 1);
        assert_int_equal(w.woken, 1);
        rkl_events_shutdown(e);
        assert_int_equal(w.woken, 2);
        assert_int_equal(next_of(s), -ESHUTDOWN);
        assert_int_equal(rkl_events_subscribe(e, wake, &w, &t), -ESHUTDOWN);
        emit(e, 2); /* dropped */
        assert_int_equal(w.woken, 2);
        s = rkl_events_unsubscribe(s);
}

/* ---- What the store emits ---- */

typedef struct fixture {
        char path[64];
        rkl_cache *cache;
        rkl_store *store;
} fixture;

static int setup(void **state)
{
        fixture *f = rkl_xnew0(fixture, 1);
        rkl_error err = RKL_ERROR_INIT;
        rkl_db *db = NULL;
        (void)snprintf(f->path, sizeof(f->path), "/tmp/rkl-test-events-XXXXXX");
        assert_non_null(mkdtemp(f->path));
        char *p = rkl_xasprintf("%s/rktlet.db", f->path);
        assert_int_equal(rkl_db_open(p, NULL, &db, &err), 0);
        free(p);
        f->cache = rkl_cache_new();
        f->store = rkl_store_new(db, f->cache);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        fixture *f = *state;
        rkl_store_free(f->store);
        rkl_cache_free(f->cache);
        const char *const files[] = {"rktlet.db", "rktlet.db-wal", "rktlet.db-shm"};
        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                char *p = rkl_xasprintf("%s/%s", f->path, files[i]);
                (void)unlink(p);
                free(p);
        }
        assert_int_equal(rmdir(f->path), 0);
        free(f);
        return 0;
}

static void pod_create(rkl_store *st, unsigned n)
{
        records_pod_create(st, n, &(rkl_pod_spec){0});
}

static void ctr_create(rkl_store *st, unsigned n, unsigned pod)
{
        records_container_create(st, n, pod, &(rkl_container_spec){0});
}

static void ctr_observe(rkl_store *st, unsigned n, rkl_container_phase phase)
{
        rkl_error err = RKL_ERROR_INIT;
        char id[RKL_ID_LEN + 1];
        records_id(n, id);
        rkl_container_observed o = {.phase = phase, .started_ns = 1000};
        if (phase == RKL_CONTAINER_PHASE_EXITED)
                o.has_exit_code = true, o.finished_ns = 2000;
        assert_int_equal(rkl_store_container_set_observed(st, id, &o, &err), 0);
}

/* The next event: its type, its object's number, and the states it shows. */
static rkl_event *expect(rkl_events_sub *s, rkl_event_type type, bool about_pod, unsigned n)
{
        rkl_event *ev = NULL;
        char id[RKL_ID_LEN + 1];
        records_id(n, id);
        if (rkl_events_next(s, &ev, NULL) != 1)
                fail_msg("no event, wanted %s of %u", rkl_event_type_to_string(type), n);
        if (ev->type != type || ev->about_pod != about_pod || !streq(ev->id, id))
                fail_msg("got %s of %s %s, wanted %s of %u", rkl_event_type_to_string(ev->type),
                         ev->about_pod ? "sandbox" : "container", ev->id,
                         rkl_event_type_to_string(type), n);
        assert_true(ev->created_ns > 0);
        return ev;
}

static void test_store_emits(void **state)
{
        fixture *f = *state;
        rkl_error err = RKL_ERROR_INIT;
        waker w = {0};
        rkl_events_sub *s = NULL;
        char pod1[RKL_ID_LEN + 1], c2[RKL_ID_LEN + 1], c3[RKL_ID_LEN + 1];
        rkl_event *ev;
        records_id(1, pod1);
        records_id(2, c2);
        records_id(3, c3);

        assert_int_equal(rkl_events_subscribe(rkl_cache_events(f->cache), wake, &w, &s), 0);

        pod_create(f->store, 1);
        ev = expect(s, C, true, 1);
        assert_non_null(ev->pod);
        assert_int_equal(ev->pod->state, RKL_POD_READY);
        assert_int_equal(ev->n_containers, 0);
        uint64_t seq = ev->seq;
        rkl_event_unref(ev);

        ctr_create(f->store, 2, 1);
        ev = expect(s, C, false, 2);
        assert_true(ev->seq > seq);
        assert_string_equal(ev->pod->rec->id, pod1);
        assert_int_equal(ev->n_containers, 1);
        assert_int_equal(ev->containers[0]->state, RKL_CONTAINER_CREATED);
        rkl_event_unref(ev);

        rkl_pod_observed po = {.phase = RKL_POD_PHASE_RUNNING, .ip = (char *)"10.0.0.2"};
        assert_int_equal(rkl_store_pod_set_observed(f->store, pod1, &po, &err), 0);
        ev = expect(s, S, true, 1);
        assert_string_equal(ev->pod->rec->observed.ip, "10.0.0.2");
        assert_int_equal(ev->n_containers, 1);
        rkl_event_unref(ev);

        /* Writes that change no state make no event. */
        assert_int_equal(rkl_store_container_start(f->store, c2, &err), 1);
        assert_int_equal(rkl_store_pod_set_observed(f->store, pod1, &po, &err), 0);
        ev = NULL;
        assert_int_equal(rkl_events_next(s, &ev, NULL), 0);

        ctr_observe(f->store, 2, RKL_CONTAINER_PHASE_RUNNING);
        ev = expect(s, S, false, 2);
        assert_int_equal(ev->containers[0]->state, RKL_CONTAINER_RUNNING); /* as it is now */
        rkl_event_unref(ev);

        ctr_create(f->store, 3, 1);
        rkl_event_unref(expect(s, C, false, 3));

        ctr_observe(f->store, 2, RKL_CONTAINER_PHASE_EXITED);
        ev = expect(s, T, false, 2);
        assert_int_equal(ev->n_containers, 2);
        assert_int_equal(ev->containers[0]->state, RKL_CONTAINER_EXITED);
        assert_int_equal(ev->containers[1]->state, RKL_CONTAINER_CREATED);
        rkl_event_unref(ev);

        assert_int_equal(rkl_store_container_delete(f->store, c2, &err), 0);
        ev = expect(s, D, false, 2);
        assert_int_equal(ev->n_containers, 1); /* the others, without it */
        assert_string_equal(ev->containers[0]->rec->id, c3);
        rkl_event_unref(ev);

        /* The sandbox stopped, then removed with its last container: the container's
         * deletion first, each with the sandbox as it last was. */
        assert_int_equal(rkl_store_pod_stop(f->store, pod1, &err), 0);
        ev = expect(s, T, true, 1);
        assert_int_equal(ev->pod->state, RKL_POD_NOT_READY);
        rkl_event_unref(ev);
        assert_int_equal(rkl_store_pod_delete(f->store, pod1, &err), 0);
        ev = expect(s, D, false, 3);
        assert_non_null(ev->pod);
        assert_string_equal(ev->pod->rec->id, pod1);
        assert_int_equal(ev->n_containers, 0);
        rkl_event_unref(ev);
        ev = expect(s, D, true, 1);
        assert_int_equal(ev->pod->state, RKL_POD_NOT_READY);
        rkl_event_unref(ev);
        assert_int_equal(rkl_events_next(s, &ev, NULL), 0);

        /* A removal of what is gone already emits nothing more. */
        (void)rkl_store_pod_delete(f->store, pod1, &err);
        assert_int_equal(rkl_events_next(s, &ev, NULL), 0);
        s = rkl_events_unsubscribe(s);
}

static void test_load_is_quiet(void **state)
{
        fixture *f = *state;
        rkl_error err = RKL_ERROR_INIT;
        pod_create(f->store, 1);
        ctr_create(f->store, 2, 1);

        /* A restart: the records go into a new cache without events. */
        _cleanup_(rkl_cache_freep) rkl_cache *cache = rkl_cache_new();
        rkl_db *db = NULL;
        char *p = rkl_xasprintf("%s/rktlet.db", f->path);
        assert_int_equal(rkl_db_open(p, NULL, &db, &err), 0);
        free(p);
        _cleanup_(rkl_store_freep) rkl_store *st = rkl_store_new(db, cache);
        assert_int_equal(rkl_store_load(st, NULL, NULL, &err), 0);
        waker w = {0};
        rkl_events_sub *s = NULL;
        assert_int_equal(rkl_events_subscribe(rkl_cache_events(cache), wake, &w, &s), 0);
        rkl_event *ev = NULL;
        assert_int_equal(rkl_events_next(s, &ev, NULL), 0);
        s = rkl_events_unsubscribe(s);
}

/* Two threads publishing at once: each object's events still come in the order of its
 * views, and each view's version only grows. */
typedef struct writer {
        fixture *f;
        unsigned first, n;
} writer;

static void *writer_main(void *userdata)
{
        writer *w = userdata;
        rkl_error err = RKL_ERROR_INIT;
        rkl_db *db = NULL;
        char *p = rkl_xasprintf("%s/rktlet.db", w->f->path);
        assert_int_equal(rkl_db_open(p, NULL, &db, &err), 0);
        free(p);
        rkl_store *st = rkl_store_new(db, w->f->cache);
        for (unsigned i = w->first; i < w->first + w->n; i++) {
                char id[RKL_ID_LEN + 1];
                records_id(i, id);
                ctr_create(st, i, 1);
                ctr_observe(st, i, RKL_CONTAINER_PHASE_RUNNING);
                ctr_observe(st, i, RKL_CONTAINER_PHASE_EXITED);
                assert_int_equal(rkl_store_container_delete(st, id, &err), 0);
        }
        rkl_store_free(st);
        return NULL;
}

static void test_concurrent_order(void **state)
{
        fixture *f = *state;
        waker w = {0};
        rkl_events_sub *s = NULL;

        pod_create(f->store, 1);
        assert_int_equal(rkl_events_subscribe(rkl_cache_events(f->cache), wake, &w, &s), 0);
        rkl_event_unref(expect(s, C, true, 1)); /* kept for it: nobody listened */
        writer a = {f, 100, 20}, b = {f, 200, 20};
        pthread_t ta, tb;
        assert_int_equal(pthread_create(&ta, NULL, writer_main, &a), 0);
        assert_int_equal(pthread_create(&tb, NULL, writer_main, &b), 0);
        pthread_join(ta, NULL);
        pthread_join(tb, NULL);

        /* Per container: created, started, stopped, deleted, and nothing else. */
        int step[300] = {0};
        uint64_t last_seq = 0;
        size_t total = 0;
        rkl_event *ev;
        while (rkl_events_next(s, &ev, NULL) == 1) {
                unsigned n = records_number(ev->id);
                assert_true(n >= 100 && n < 300);
                assert_true(ev->seq > last_seq);
                last_seq = ev->seq;
                if ((int)ev->type != step[n])
                        fail_msg("container %u: %s after %d events", n,
                                 rkl_event_type_to_string(ev->type), step[n]);
                step[n]++;
                total++;
                rkl_event_unref(ev);
        }
        assert_int_equal(total, 4 * 40);
        s = rkl_events_unsubscribe(s);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_derive_pod),
            cmocka_unit_test(test_derive_container),
            cmocka_unit_test(test_bound_drops_slow_subscriber),
            cmocka_unit_test(test_kept_for_next_subscriber),
            cmocka_unit_test(test_kept_expire),
            cmocka_unit_test(test_shutdown),
            cmocka_unit_test_setup_teardown(test_store_emits, setup, teardown),
            cmocka_unit_test_setup_teardown(test_load_is_quiet, setup, teardown),
            cmocka_unit_test_setup_teardown(test_concurrent_order, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
