/* The probe of rkt and systemd for Status (probe.h), the stage1's import and the listing of
 * rkt's images: the probe runs on the reconciler thread, the import and the listing on the
 * pool, whose ends ask for a probe through the flags here. */
#include "probe.h"

#include <stdatomic.h>

#include "reconciler-internal.h"
#include "network.h"
#include "images/images.h"
#include "base/alloc.h"
#include "base/log.h"
#include "base/strv.h"
#include "base/time-util.h"
#include "base/workpool.h"
#include "rkt/build.h"
#include "rkt/rkt.h"
#include "store/cache.h"
#include "base/banned.h"

struct rkl_probe {
        atomic_bool images_unlisted; /* the last image list failed: again at the next probe */
        atomic_bool images_listing;  /* one is on the pool now */
        atomic_bool asked;           /* a listing finished: the stage1 in rkt's store to check */
        /* The stage1 rkt's build names is missing from its store and imported on the pool
         * now: sandboxes wait rather than each import it (import_stage1()). */
        atomic_bool stage1_importing;
        atomic_bool stage1_import_failed; /* then pods import it, as rkt does by itself */
        rkl_rkt_build_memo rkt_memo;      /* the rkt binary's sha256, for its build record */
};

rkl_probe *rkl_probe_new(void)
{
        return rkl_xnew0(rkl_probe, 1);
}

rkl_probe *rkl_probe_free(rkl_probe *p)
{
        free(p);
        return NULL;
}

typedef struct stage1_import {
        rkl_reconciler *r;
        char *path;
} stage1_import;

static void import_stage1_run(void *userdata)
{
        stage1_import *job = userdata;
        rkl_reconciler *r = job->r;
        rkl_error err = RKL_ERROR_INIT;
        uint64_t t0 = rkl_now_usec(CLOCK_MONOTONIC);
        if (rkl_images_import(r->images, job->path, NULL, &err) < 0) {
                rkl_log_warning("%s: each pod's rkt imports it then, pods of a first batch in "
                                "parallel",
                                err.msg);
                atomic_store(&r->probe->stage1_import_failed, true);
        } else
                rkl_log_info("imported stage1 from '%s' into rkt's store in %.1f s", job->path,
                             (double)(rkl_now_usec(CLOCK_MONOTONIC) - t0) / USEC_PER_SEC);
        atomic_store(&r->probe->stage1_importing, false);
        (void)atomic_exchange(&r->probe->asked, true);
        rkl_reconciler_kick(r);
        free(job->path);
        free(job);
}

/* rkt imports a stage1 its store lacks from the file with every pod it prepares, until one
 * import has ended: a first batch of 30 pods on a new node spent 20 s of both cores hashing
 * the same image, each pod past a 20 s ready timeout. One import ahead, the pods waiting
 * for it, costs the batch about 2 s. */
static void import_stage1(rkl_reconciler *r, const rkl_rkt_build *b)
{
        if (!b->stage1_path || atomic_load(&r->probe->stage1_import_failed) ||
            atomic_exchange(&r->probe->stage1_importing, true))
                return;
        rkl_log_info("rkt's store has no stage1 '%s': importing '%s' before any pod starts",
                     b->stage1_name, b->stage1_path);
        stage1_import *job = rkl_xnew0(stage1_import, 1);
        job->r = r;
        job->path = rkl_xstrdup(b->stage1_path);
        rkl_workpool_submit(r->pool, import_stage1_run, job);
}

/* The stage1 rkt's store holds under the name b records: rkt runs that one, not the file;
 * when it holds none, the file is imported. Known once the image cache has been listed (a
 * listing asks for a probe when it ends). */
static int probe_stage1(rkl_reconciler *r, const rkl_rkt_build *b, rkl_error *reterr)
{
        rkl_image **l = NULL;
        size_t n = 0;
        int k = 0;
        bool held = false;

        if (!b->stage1_name || !r->images || !rkl_images_wait_listed(r->images, 0) ||
            rkl_images_list(r->images, NULL, &l, &n, NULL) < 0)
                return 0;
        for (size_t i = 0; i < n && k >= 0; i++) {
                held = held || streq_ptr(l[i]->name, b->stage1_name);
                k = rkl_rkt_build_check_stage1(b, l[i]->name, l[i]->id, reterr);
        }
        rkl_image_array_free(l, n);
        if (!held)
                import_stage1(r, b);
        return k;
}

/* Whether the rkt that said it is version, and the stage1 pods run, carry the fixes rktlet
 * relies on: rkt's build record beside it lists them (rkt/build.h). Told at start and by
 * every probe, so that an unpatched rkt shows in Status before it loses a log line. */
static void probe_patches(rkl_reconciler *r, rkl_health *h, const char *version)
{
        rkl_error err = RKL_ERROR_INIT;
        rkl_rkt_build b = {0};

        if (rkl_rkt_build_verify(r->cfg.rkt_path, version, rkl_rkt_patches_wanted,
                                 rkl_rkt_n_patches_wanted, &r->probe->rkt_memo, &b, &err) < 0) {
                h->rkt_patches = rkl_xstrdup(err.msg);
                return;
        }
        _cleanup_free_ char *summary = rkl_rkt_build_summary(&b);
        if (r->cfg.stage1_name && !streq_ptr(r->cfg.stage1_name, b.stage1_name)) {
                /* The operator's choice, of which the record knows nothing. */
                h->rkt_patched = true;
                h->rkt_patches = rkl_xasprintf("%s; stage1 '%s' (--stage1-name) not checked",
                                               summary, r->cfg.stage1_name);
        } else if (probe_stage1(r, &b, &err) < 0)
                h->rkt_patches = rkl_xstrdup(err.msg);
        else {
                h->rkt_patched = true;
                h->rkt_patches = b.stage1_name ? rkl_xasprintf("%s; stage1 %s %s", summary,
                                                               b.stage1_name, b.stage1_id)
                                               : TAKE_PTR(summary);
        }
        rkl_rkt_build_done(&b);
}

static void probe_rkt(rkl_reconciler *r, rkl_health *h)
{
        rkl_error err = RKL_ERROR_INIT;
        rkl_rkt_version v = {0};

        if (!r->rkt) {
                h->rkt_detail = rkl_xstrdup("no rkt binary: not found in PATH; set --rkt-path");
                return;
        }
        if (RKL_OPS(r, rkt_version, &v, &err) < 0) {
                h->rkt_detail = rkl_xstrdup(err.msg);
                return;
        }
        h->rkt_ok = true;
        probe_patches(r, h, v.version);
        h->rkt_version = TAKE_PTR(v.version);
        h->rkt_detail = TAKE_PTR(v.text);
        rkl_rkt_version_done(&v);
}

static void probe_systemd(rkl_reconciler *r, rkl_health *h)
{
        rkl_error err = RKL_ERROR_INIT;
        char *version = NULL;

        if (RKL_OPS(r, unit_probe, &version, &err) < 0) {
                h->systemd_detail = rkl_xstrdup(err.msg);
                return;
        }
        h->systemd_ok = true;
        h->systemd_version = version;
}

void rkl_probe_run(rkl_reconciler *r)
{
        rkl_health h = {0}, old = {0};

        probe_rkt(r, &h);
        probe_systemd(r, &h);
        rkl_network_health(r, &h);
        h.probed_ns = rkl_realtime_ns();

        rkl_cache_get_health(r->cache, &old);
        if (old.probed_ns == 0 || old.rkt_ok != h.rkt_ok || old.systemd_ok != h.systemd_ok ||
            old.rkt_patched != h.rkt_patched) {
                if (h.rkt_ok && h.rkt_patched)
                        rkl_log_info("rkt %s is usable, with %s", h.rkt_version, h.rkt_patches);
                else if (h.rkt_ok)
                        rkl_log_warning("rkt %s runs but lacks rktlet's fixes: %s", h.rkt_version,
                                        h.rkt_patches);
                else
                        rkl_log_warning("rkt is not usable: %s", h.rkt_detail);
                if (h.systemd_ok)
                        rkl_log_info("systemd %s is reachable", h.systemd_version);
                else
                        rkl_log_warning("systemd is not reachable: %s", h.systemd_detail);
        }
        rkl_cache_set_health(r->cache, &h);
        rkl_health_done(&h);
        rkl_health_done(&old);
}

/* The image cache from rkt's store: at the start, and again with every probe until it
 * worked once (pulls and removals keep it current after that). On an action slot: a slow
 * `rkt image list` holds back neither probes nor passes. */
static void list_images_run(void *userdata)
{
        rkl_reconciler *r = userdata;
        rkl_error err = RKL_ERROR_INIT;
        if (rkl_images_refresh(r->images, &err) < 0) {
                rkl_log_warning("%s, continuing with the images known so far", err.msg);
                /* without rkt there is nothing to try again */
                atomic_store(&r->probe->images_unlisted, r->rkt != NULL);
        } else if (!atomic_exchange(&r->probe->asked, true))
                rkl_reconciler_kick(r);
        atomic_store(&r->probe->images_listing, false);
}

void rkl_probe_list_images(rkl_reconciler *r)
{
        if (!r->images || atomic_exchange(&r->probe->images_listing, true))
                return;
        atomic_store(&r->probe->images_unlisted, false);
        rkl_workpool_submit(r->pool, list_images_run, r);
}

void rkl_probe_run_if_asked(rkl_reconciler *r)
{
        if (atomic_exchange(&r->probe->asked, false))
                rkl_probe_run(r);
}

void rkl_probe_tick(rkl_reconciler *r)
{
        rkl_probe_run(r);
        if (atomic_load(&r->probe->images_unlisted))
                rkl_probe_list_images(r);
}

bool rkl_probe_stage1_importing(rkl_reconciler *r)
{
        return atomic_load(&r->probe->stage1_importing);
}
