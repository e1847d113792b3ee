/* The view cache: versions never go back, tombstones hold, filters, prefixes, and readers
 * running against a writer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#include <pthread.h>
#include <cmocka.h>

#include "base/alloc.h"
#include "base/strv.h"
#include "store/cache.h"

static char *hex_id(unsigned n)
{
        return rkl_xasprintf("%08x%056x", n, 0u);
}

static rkl_pod_record *pod(unsigned n, uint64_t version, rkl_pod_desired d, rkl_pod_phase p,
                           const char *app)
{
        rkl_pod_record *r = rkl_xnew0(rkl_pod_record, 1);
        _cleanup_free_ char *id = hex_id(n);
        memcpy(r->id, id, sizeof(r->id));
        r->spec.name = rkl_xasprintf("pod-%u", n);
        rkl_kvs_add(&r->spec.labels, "app", app);
        r->desired = d;
        r->observed.phase = p;
        r->book.version = version;
        r->book.accepted_ns = 1000 - n; /* newer IDs were accepted earlier */
        return r;
}

static rkl_container_record *container(unsigned n, unsigned pod_n, uint64_t version,
                                       rkl_container_phase p)
{
        rkl_container_record *r = rkl_xnew0(rkl_container_record, 1);
        _cleanup_free_ char *id = rkl_xasprintf("%08x%056x", n, 1u);
        _cleanup_free_ char *pid = hex_id(pod_n);
        memcpy(r->id, id, sizeof(r->id));
        memcpy(r->sandbox_id, pid, sizeof(r->sandbox_id));
        r->spec.name = rkl_xasprintf("ctr-%u", n);
        r->spec.log_path = rkl_xstrdup("ctr/0.log");
        rkl_kvs_add(&r->spec.labels, "tier", n % 2 ? "odd" : "even");
        r->observed.phase = p;
        r->book.version = version;
        r->book.accepted_ns = n;
        return r;
}

/* Withdrawn sandboxes' failures: the waiting call reads one however fast it was undone,
 * and the reconciler's list holds only those still to undo; undone ones go in time. */
static void test_failures(void **state)
{
        _cleanup_(rkl_cache_freep) rkl_cache *c = rkl_cache_new();
        rkl_pod_failure f = {.code = -ENOSPC,
                             .message = (char *)"spent",
                             .sandbox = (char *)"ns/a (attempt 0)",
                             .failed_ns = 1};
        memset(f.sandbox_id, 'a', RKL_ID_LEN);
        int code = 0;
        bool undone = true;
        char *msg = NULL;
        assert_false(rkl_cache_failure_get(c, f.sandbox_id, &code, &msg, &undone));
        assert_null(rkl_cache_failure_ids(c, 100));
        rkl_cache_failure_put(c, &f);
        assert_true(rkl_cache_failure_get(c, f.sandbox_id, &code, &msg, &undone));
        assert_int_equal(code, -ENOSPC);
        assert_string_equal(msg, "spent");
        assert_false(undone);
        free(msg);
        char **ids = rkl_cache_failure_ids(c, 100);
        assert_int_equal(rkl_strv_length(ids), 1);
        assert_string_equal(ids[0], f.sandbox_id);
        rkl_strv_free(ids);

        int64_t now = 1000 * (int64_t)1000000000;
        rkl_cache_failure_undone(c, f.sandbox_id, now);
        assert_null(rkl_cache_failure_ids(c, now));
        assert_true(rkl_cache_failure_get(c, f.sandbox_id, &code, &msg, &undone));
        assert_true(undone);
        free(msg);
        /* Kept longer than any call waits (api/wait.h: 240 s), then gone. */
        assert_null(rkl_cache_failure_ids(c, now + 300 * (int64_t)1000000000));
        assert_true(rkl_cache_failure_get(c, f.sandbox_id, &code, &msg, &undone));
        free(msg);
        assert_null(rkl_cache_failure_ids(c, now + 3600 * (int64_t)1000000000));
        assert_false(rkl_cache_failure_get(c, f.sandbox_id, &code, &msg, &undone));
}

static void test_states(void **state)
{
        rkl_pod_record *r = pod(1, 1, RKL_POD_DESIRED_READY, RKL_POD_PHASE_PENDING, "a");
        assert_int_equal(rkl_pod_readiness_of(r), RKL_POD_READY);
        r->observed.phase = RKL_POD_PHASE_FAILED;
        assert_int_equal(rkl_pod_readiness_of(r), RKL_POD_NOT_READY);
        r->observed.phase = RKL_POD_PHASE_RUNNING;
        r->desired = RKL_POD_DESIRED_STOPPED;
        assert_int_equal(rkl_pod_readiness_of(r), RKL_POD_NOT_READY);
        rkl_pod_record_free(r);
}

static void test_versions_and_tombstones(void **state)
{
        _cleanup_(rkl_cache_freep) rkl_cache *c = rkl_cache_new();
        _cleanup_free_ char *id = hex_id(7);

        assert_true(rkl_cache_pod_put(
            c, rkl_pod_view_new(pod(7, 5, RKL_POD_DESIRED_READY, RKL_POD_PHASE_PENDING, "a"))));
        /* An older version arriving late loses. */
        assert_false(rkl_cache_pod_put(
            c, rkl_pod_view_new(pod(7, 4, RKL_POD_DESIRED_READY, RKL_POD_PHASE_RUNNING, "a"))));
        _cleanup_(rkl_pod_view_unrefp) rkl_pod_view *v = rkl_cache_pod_get(c, id);
        assert_non_null(v);
        assert_int_equal(v->rec->observed.phase, RKL_POD_PHASE_PENDING);
        /* A newer one wins; the reader's reference keeps the old view alive. */
        assert_true(rkl_cache_pod_put(
            c, rkl_pod_view_new(pod(7, 6, RKL_POD_DESIRED_READY, RKL_POD_PHASE_RUNNING, "a"))));
        assert_int_equal(v->rec->observed.phase, RKL_POD_PHASE_PENDING);

        rkl_cache_pod_remove(c, id, 8);
        assert_null(rkl_cache_pod_get(c, id));
        /* A put that raced with the delete cannot bring the object back. */
        assert_false(rkl_cache_pod_put(
            c, rkl_pod_view_new(pod(7, 7, RKL_POD_DESIRED_READY, RKL_POD_PHASE_RUNNING, "a"))));
        assert_null(rkl_cache_pod_get(c, id));
}

static void test_list_and_resolve(void **state)
{
        _cleanup_(rkl_cache_freep) rkl_cache *c = rkl_cache_new();
        rkl_pod_view **pods = NULL, *v = NULL;
        size_t n;

        rkl_cache_pod_put(
            c, rkl_pod_view_new(pod(0x11, 1, RKL_POD_DESIRED_READY, RKL_POD_PHASE_RUNNING, "web")));
        rkl_cache_pod_put(c, rkl_pod_view_new(pod(0x12, 2, RKL_POD_DESIRED_STOPPED,
                                                  RKL_POD_PHASE_STOPPED, "web")));
        rkl_cache_pod_put(
            c, rkl_pod_view_new(pod(0x21, 3, RKL_POD_DESIRED_READY, RKL_POD_PHASE_PENDING, "db")));

        assert_int_equal(rkl_cache_pod_list(c, NULL, &pods, &n), 0);
        assert_int_equal(n, 3);
        /* Oldest accepted first. */
        assert_string_equal(pods[0]->rec->spec.name, "pod-33");
        rkl_pod_views_unref(pods, n);

        rkl_kvs sel = {0};
        rkl_kvs_add(&sel, "app", "web");
        rkl_view_filter f = {.label_selector = &sel, .by_state = true, .state = RKL_POD_READY};
        assert_int_equal(rkl_cache_pod_list(c, &f, &pods, &n), 0);
        assert_int_equal(n, 1);
        assert_string_equal(pods[0]->rec->spec.name, "pod-17");
        rkl_pod_views_unref(pods, n);
        rkl_kvs_done(&sel);

        assert_int_equal(rkl_cache_pod_resolve(c, "0000002", &v), 0);
        assert_string_equal(v->rec->spec.name, "pod-33");
        rkl_pod_view_unref(v);
        assert_int_equal(rkl_cache_pod_resolve(c, "0000001", &v), -ENOTUNIQ);
        assert_int_equal(rkl_cache_pod_resolve(c, "ff", &v), -ENOENT);
        f = (rkl_view_filter){.id = "0000001"};
        assert_int_equal(rkl_cache_pod_list(c, &f, &pods, &n), 0);
        assert_int_equal(n, 0); /* an ambiguous ID filter matches nothing */
        rkl_pod_views_unref(pods, n);
}

static void test_containers(void **state)
{
        _cleanup_(rkl_cache_freep) rkl_cache *c = rkl_cache_new();
        rkl_container_view **l = NULL;
        size_t n;

        rkl_cache_pod_put(
            c, rkl_pod_view_new(pod(1, 1, RKL_POD_DESIRED_READY, RKL_POD_PHASE_RUNNING, "a")));
        for (unsigned i = 1; i <= 6; i++)
                rkl_cache_container_put(
                    c, rkl_container_view_new(container(i, i <= 4 ? 1 : 2, i,
                                                        i == 3 ? RKL_CONTAINER_PHASE_RUNNING
                                                               : RKL_CONTAINER_PHASE_CREATED),
                                              "/var/log/pods/x"));
        rkl_view_filter f = {.sandbox_id = "00000001"};
        assert_int_equal(rkl_cache_container_list(c, &f, &l, &n), 0);
        assert_int_equal(n, 4);
        assert_string_equal(l[0]->log_path, "/var/log/pods/x/ctr/0.log");
        rkl_container_views_unref(l, n);

        f = (rkl_view_filter){.by_state = true, .state = RKL_CONTAINER_RUNNING};
        assert_int_equal(rkl_cache_container_list(c, &f, &l, &n), 0);
        assert_int_equal(n, 1);
        assert_string_equal(l[0]->rec->spec.name, "ctr-3");
        rkl_container_views_unref(l, n);

        /* By sandbox (the full ID of one the cache does not hold): newer versions replace,
         * never duplicate; a removed container leaves, and a late put keeps it out. */
        _cleanup_free_ char *pod2 = hex_id(2), *ctr5 = rkl_xasprintf("%08x%056x", 5, 1u);
        f = (rkl_view_filter){.sandbox_id = pod2};
        rkl_cache_container_put(
            c, rkl_container_view_new(container(6, 2, 60, RKL_CONTAINER_PHASE_RUNNING), NULL));
        assert_int_equal(rkl_cache_container_list(c, &f, &l, &n), 0);
        assert_int_equal(n, 2);
        assert_string_equal(l[0]->rec->spec.name, "ctr-5");
        assert_int_equal(l[1]->rec->book.version, 60);
        rkl_container_views_unref(l, n);
        rkl_cache_container_remove(c, ctr5, 61);
        assert_false(rkl_cache_container_put(
            c, rkl_container_view_new(container(5, 2, 5, RKL_CONTAINER_PHASE_RUNNING), NULL)));
        assert_int_equal(rkl_cache_container_list(c, &f, &l, &n), 0);
        assert_int_equal(n, 1);
        assert_string_equal(l[0]->rec->spec.name, "ctr-6");
        rkl_container_views_unref(l, n);
        /* A tombstone for an ID never seen, then the object after all (a newer version). */
        _cleanup_free_ char *ctr9 = rkl_xasprintf("%08x%056x", 9, 1u);
        rkl_cache_container_remove(c, ctr9, 70);
        assert_true(rkl_cache_container_put(
            c, rkl_container_view_new(container(9, 2, 71, RKL_CONTAINER_PHASE_RUNNING), NULL)));
        assert_int_equal(rkl_cache_container_list(c, &f, &l, &n), 0);
        assert_int_equal(n, 2);
        rkl_container_views_unref(l, n);
}

typedef struct race {
        rkl_cache *c;
        atomic_bool stop;
        atomic_size_t lists;
} race;

static void *reader(void *userdata)
{
        race *r = userdata;
        while (!atomic_load(&r->stop)) {
                rkl_pod_view **l;
                size_t n;
                rkl_cache_pod_list(r->c, NULL, &l, &n);
                for (size_t i = 0; i < n; i++)
                        assert_non_null(l[i]->rec->spec.name);
                rkl_pod_views_unref(l, n);
                atomic_fetch_add(&r->lists, 1);
        }
        return NULL;
}

static void test_readers_against_writer(void **state)
{
        race r = {.c = rkl_cache_new()};
        pthread_t t[3];
        for (int i = 0; i < 3; i++)
                pthread_create(&t[i], NULL, reader, &r);
        for (uint64_t v = 1; v < 20000; v++) {
                unsigned n = (unsigned)(v % 50);
                if (v % 7 == 0) {
                        _cleanup_free_ char *id = hex_id(n);
                        rkl_cache_pod_remove(r.c, id, v);
                } else {
                        rkl_cache_pod_put(r.c, rkl_pod_view_new(pod(n, v, RKL_POD_DESIRED_READY,
                                                                    RKL_POD_PHASE_RUNNING, "a")));
                }
        }
        atomic_store(&r.stop, true);
        for (int i = 0; i < 3; i++)
                pthread_join(t[i], NULL);
        assert_true(atomic_load(&r.lists) > 0);
        rkl_cache_free(r.c);
}

static void *put_after_a_while(void *userdata)
{
        rkl_cache *c = userdata;
        /* The waiter is in its wait, or about to be: either way it sees the change. */
        struct timespec ts = {.tv_nsec = 20 * 1000 * 1000};
        (void)nanosleep(&ts, NULL);
        rkl_cache_pod_put(
            c, rkl_pod_view_new(pod(3, 1, RKL_POD_DESIRED_READY, RKL_POD_PHASE_RUNNING, "a")));
        return NULL;
}

/* A put, a lost put, a removal and a failure each count a change or not; a waiter wakes at
 * one, and a wait with none ends at its timeout with the count it was given. */
static void test_changes(void **state)
{
        _cleanup_(rkl_cache_freep) rkl_cache *c = rkl_cache_new();
        _cleanup_free_ char *id = hex_id(3);
        uint64_t n = rkl_cache_changes(c);
        assert_int_equal(rkl_cache_wait_change(c, n, 1000), n); /* nothing: its timeout */

        pthread_t t;
        assert_int_equal(pthread_create(&t, NULL, put_after_a_while, c), 0);
        /* A minute: the put comes long before, and ends the wait. */
        assert_int_equal(rkl_cache_wait_change(c, n, 60ULL * 1000 * 1000), n + 1);
        assert_int_equal(pthread_join(t, NULL), 0);

        /* An older version, which loses, changes nothing. */
        assert_false(rkl_cache_pod_put(
            c, rkl_pod_view_new(pod(3, 0, RKL_POD_DESIRED_READY, RKL_POD_PHASE_PENDING, "a"))));
        assert_int_equal(rkl_cache_changes(c), n + 1);
        rkl_cache_pod_remove(c, id, 2);
        assert_int_equal(rkl_cache_changes(c), n + 2);
        rkl_pod_failure f = {.code = -EIO, .message = (char *)"no", .sandbox = (char *)"{}"};
        memcpy(f.sandbox_id, id, sizeof(f.sandbox_id));
        rkl_cache_failure_put(c, &f);
        rkl_cache_failure_undone(c, id, 1);
        assert_int_equal(rkl_cache_changes(c), n + 4);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_states),
            cmocka_unit_test(test_failures),
            cmocka_unit_test(test_versions_and_tombstones),
            cmocka_unit_test(test_list_and_resolve),
            cmocka_unit_test(test_containers),
            cmocka_unit_test(test_readers_against_writer),
            cmocka_unit_test(test_changes),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
