/* Measures what durability costs: commits per second of rkl_db_pod_create() (one
 * IMMEDIATE transaction: sandbox row, 3 labels, 2 annotations, generation bump) and of
 * rkl_db_pod_set_observed() (one UPDATE), then the same with a start's timeline, and a list of
 * every row without and with timelines, with synchronous=NORMAL (the default) and
 * synchronous=FULL, on a file database in the given directory. Not a test: speed is
 * measured, never asserted (docs/design.md, 'Testing'). Results go in docs/store.md.
 *
 *   bench_db_sync <dir> [commits per run, default 2000] */
#include <stdio.h>
#include <stdlib.h>

#include "base/alloc.h"
#include "base/fileio.h"
#include "base/parse.h"
#include "base/strv.h"
#include "base/time-util.h"
#include "store/db.h"

static void spec(rkl_pod_spec *p, unsigned i)
{
        *p = (rkl_pod_spec){0};
        p->name = rkl_xasprintf("pod-%u", i);
        p->uid = rkl_xstrdup("5f1c9e4e-8a6f-4b9e-9d7c-1e2f3a4b5c6d");
        p->namespace = rkl_xstrdup("default");
        p->hostname = rkl_xstrdup("web");
        p->log_directory = rkl_xstrdup("/var/log/pods/default_web_5f1c9e4e");
        p->dns_servers = rkl_strv_copy(RKL_STRV("10.96.0.10"));
        rkl_kvs_add(&p->labels, "app", "web");
        rkl_kvs_add(&p->labels, "pod-template-hash", "5d4c7b9f8");
        rkl_kvs_add(&p->labels, "tier", "frontend");
        rkl_kvs_add(&p->annotations, "kubernetes.io/config.seen", "2024-01-01T00:00:00Z");
        rkl_kvs_add(&p->annotations, "kubernetes.io/config.source", "api");
}

static int run(const char *dir, bool full, unsigned n)
{
        rkl_error e = RKL_ERROR_INIT;
        rkl_db *s = NULL;
        char *path = rkl_xasprintf("%s/bench-%s.db", dir, full ? "full" : "normal");
        int r;

        (void)rkl_rm_rf_at(AT_FDCWD, path);
        r = rkl_db_open(path, &(rkl_db_options){.sync_full = full}, &s, &e);
        if (r < 0)
                goto fail;

        uint64_t t0 = rkl_now_usec(CLOCK_MONOTONIC);
        for (unsigned i = 0; i < n; i++) {
                char id[RKL_ID_LEN + 1];
                rkl_pod_spec p;
                (void)snprintf(id, sizeof(id), "%064x", i + 1);
                spec(&p, i);
                r = rkl_db_pod_create(s, id, &p, NULL, &e);
                rkl_pod_spec_done(&p);
                if (r < 0)
                        goto fail;
        }
        uint64_t t1 = rkl_now_usec(CLOCK_MONOTONIC);
        for (unsigned i = 0; i < n; i++) {
                char id[RKL_ID_LEN + 1];
                (void)snprintf(id, sizeof(id), "%064x", i + 1);
                r = rkl_db_pod_set_observed(
                    s, id, &(rkl_pod_observed){.phase = RKL_POD_PHASE_RUNNING, .pid = 100}, &e);
                if (r < 0)
                        goto fail;
        }
        uint64_t t2 = rkl_now_usec(CLOCK_MONOTONIC);
        rkl_pod_record **all = NULL;
        size_t n_all = 0;
        if ((r = rkl_db_pod_list(s, NULL, &all, &n_all, &e)) < 0)
                goto fail;
        all = rkl_pod_record_array_free(all, n_all);
        uint64_t t3 = rkl_now_usec(CLOCK_MONOTONIC);
        /* The same update carrying a finished start's timeline (every step): what the
         * reconciler's last write of a sandbox's start costs. */
        rkl_pod_observed o = {.phase = RKL_POD_PHASE_RUNNING, .pid = 101};
        for (size_t k = 0; k < _RKL_POD_STEP_MAX; k++)
                o.timeline.usec[k] = (int64_t)(k + 1) * 123457;
        for (unsigned i = 0; i < n; i++) {
                char id[RKL_ID_LEN + 1];
                (void)snprintf(id, sizeof(id), "%064x", i + 1);
                r = rkl_db_pod_set_observed(s, id, &o, &e);
                if (r < 0)
                        goto fail;
        }
        uint64_t t4 = rkl_now_usec(CLOCK_MONOTONIC);
        if ((r = rkl_db_pod_list(s, NULL, &all, &n_all, &e)) < 0)
                goto fail;
        all = rkl_pod_record_array_free(all, n_all);
        uint64_t t5 = rkl_now_usec(CLOCK_MONOTONIC);
        double c = (double)(t1 - t0) / n, u = (double)(t2 - t1) / n, ut = (double)(t4 - t3) / n;
        printf("%-7s create: %8.1f us/commit %8.0f commits/s   update: %8.1f us/commit %8.0f "
               "commits/s   with a timeline: %8.1f us/commit\n",
               full ? "FULL" : "NORMAL", c, 1e6 / c, u, 1e6 / u, ut);
        printf("%-7s list of %u: %.2f us/record, with timelines %.2f us/record\n",
               full ? "FULL" : "NORMAL", n, (double)(t3 - t2) / n, (double)(t5 - t4) / n);
        s = rkl_db_close(s);
        free(path);
        return 0;
fail:
        fprintf(stderr, "%s: %s\n", path, e.msg);
        rkl_db_close(s);
        free(path);
        return 1;
}

int main(int argc, char **argv)
{
        unsigned n = 2000;
        if (argc < 2 || (argc > 2 && rkl_safe_atou(argv[2], &n) < 0) || n == 0) {
                fprintf(stderr, "usage: %s <dir> [commits]\n", argv[0]);
                return 2;
        }
        printf("%u commits per run in %s\n", n, argv[1]);
        return run(argv[1], false, n) | run(argv[1], true, n);
}
