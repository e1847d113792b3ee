/* Sandbox (pod) records in the sandbox table: create, get, list, the desired and observed
 * state, the rkt UUID and unit name, retry bookkeeping, stop, delete and ID prefixes, and the
 * record's destructors. */
#include "store/db.h"

#include <sqlite3.h>

#include "base/alloc.h"
#include "base/strv.h"
#include "base/time-util.h"
#include "store/db-internal.h"
#include "base/banned.h"

void rkl_pod_observed_done(rkl_pod_observed *o)
{
        if (!o)
                return;
        free(o->ip);
        rkl_strv_free(o->additional_ips);
        free(o->reason);
        free(o->message);
        *o = (rkl_pod_observed){0};
}

rkl_pod_record *rkl_pod_record_free(rkl_pod_record *r)
{
        if (!r)
                return NULL;
        rkl_pod_spec_done(&r->spec);
        rkl_pod_observed_done(&r->observed);
        free(r->rkt_uuid);
        free(r->unit_name);
        free(r->book.last_error);
        free(r);
        return NULL;
}

rkl_pod_record **rkl_pod_record_array_free(rkl_pod_record **a, size_t n)
{
        for (size_t i = 0; a && i < n; i++)
                rkl_pod_record_free(a[i]);
        free(a);
        return NULL;
}

/* additional_ips: comma-separated, as operators read it. */
static char **ips_split(const char *s)
{
        char **l = NULL;
        while (!isempty(s)) {
                size_t n = strcspn(s, ",");
                if (n > 0)
                        rkl_strv_consume(&l, rkl_xstrndup(s, n));
                s += n + (s[n] == ',');
        }
        return l;
}

/* A record of the current row; a void ** for rkl_db__rows. */
static int read_pod_row(sqlite3_stmt *st, void **ret, rkl_error *reterr)
{
        _cleanup_(rkl_pod_record_freep) rkl_pod_record *p = rkl_xnew0(rkl_pod_record, 1);
        int r = rkl_db__copy_id(st, 0, p->id, reterr);
        if (r < 0)
                return r;
        p->spec.name = rkl_db__column_strdup(st, 1);
        p->spec.namespace = rkl_db__column_strdup(st, 2);
        p->spec.uid = rkl_db__column_strdup(st, 3);
        p->spec.attempt = (uint32_t)rkl_db__column_i64(st, 4);
        r = rkl_db__pod_config_from_json((const char *)sqlite3_column_text(st, 5), &p->spec,
                                         reterr);
        if (r < 0)
                return rkl_error_prefix(reterr, "sandbox '%s'", p->id);
        p->desired = rkl_pod_desired_from_string((const char *)sqlite3_column_text(st, 6));
        p->observed.phase = rkl_pod_phase_from_string((const char *)sqlite3_column_text(st, 7));
        if ((int)p->desired < 0 || (int)p->observed.phase < 0)
                return rkl_error_set(reterr, -EUCLEAN, "sandbox '%s': unknown state", p->id);
        p->observed.pid = rkl_db__column_i64(st, 8);
        p->observed.ip = rkl_db__column_strdup(st, 9);
        p->observed.created_ns = rkl_db__column_i64(st, 10);
        p->observed.started_ns = rkl_db__column_i64(st, 11);
        p->observed.finished_ns = rkl_db__column_i64(st, 12);
        p->observed.reason = rkl_db__column_strdup(st, 13);
        p->observed.message = rkl_db__column_strdup(st, 14);
        p->rkt_uuid = rkl_db__column_strdup(st, 15);
        p->unit_name = rkl_db__column_strdup(st, 16);
        p->book.version = (uint64_t)rkl_db__column_i64(st, 17);
        p->book.attempts = (uint32_t)rkl_db__column_i64(st, 18);
        p->book.last_error = rkl_db__column_strdup(st, 19);
        p->book.next_retry_ns = rkl_db__column_i64(st, 20);
        p->book.accepted_ns = rkl_db__column_i64(st, 21);
        r = rkl_db__read_kvs(st, 22, &p->spec.labels, &p->spec.annotations, reterr);
        if (r < 0)
                return rkl_error_prefix(reterr, "sandbox '%s'", p->id);
        p->observed.additional_ips = ips_split((const char *)sqlite3_column_text(st, 24));
        rkl_db__timeline_from_json((const char *)sqlite3_column_text(st, 25), true,
                                   &p->observed.timeline);
        *ret = TAKE_PTR(p);
        return 0;
}

int rkl_db_pod_create(rkl_db *s, const char *pod_id, rkl_pod_spec *spec, rkl_pod_record **ret,
                      rkl_error *reterr)
{
        _cleanup_tx_ rkl_db *tx = NULL;
        _cleanup_reset_ sqlite3_stmt *st = NULL;
        int64_t accepted;
        int r;

        if ((r = rkl_db__check_id("pod_sandbox_id", pod_id, reterr)) < 0 ||
            (r = rkl_db__check_pod_spec(spec, reterr)) < 0)
                return r;
        _cleanup_free_ char *config = rkl_db__pod_config_to_json(spec),
                            *labels = rkl_db__kvs_to_json(&spec->labels),
                            *annotations = rkl_db__kvs_to_json(&spec->annotations);

        if ((r = rkl_db__tx_begin_write(s, &tx, reterr)) < 0 ||
            (r = rkl_db__use(s, STMT_POD_INSERT, &st, reterr)) < 0)
                return r;
        accepted = rkl_realtime_ns(); /* in commit order: List sorts by it */
        rkl_db__bind_text(st, 1, pod_id);
        rkl_db__bind_text(st, 2, spec->name);
        rkl_db__bind_text(st, 3, spec->namespace);
        rkl_db__bind_text(st, 4, spec->uid);
        rkl_db__bind_int(st, 5, spec->attempt);
        rkl_db__bind_text(st, 6, config);
        rkl_db__bind_int(st, 7, (int64_t)s->tx_generation);
        rkl_db__bind_int(st, 8, accepted);
        rkl_db__bind_text(st, 9, labels);
        rkl_db__bind_text(st, 10, annotations);
        if ((r = rkl_db__step_done(s, st, "insert sandbox", reterr)) < 0)
                return rkl_error_prefix(reterr, "sandbox '%s'", pod_id);
        uint64_t version = s->tx_generation;
        if ((r = rkl_db__tx_commit(&tx, reterr)) < 0)
                return r;
        if (ret) {
                /* The row as inserted, without reading it: the spec round-trips exactly. */
                rkl_pod_record *p = rkl_xnew0(rkl_pod_record, 1);
                memcpy(p->id, pod_id, sizeof(p->id));
                p->spec = *spec;
                *spec = (rkl_pod_spec){0};
                p->desired = RKL_POD_DESIRED_READY;
                p->observed.phase = RKL_POD_PHASE_PENDING;
                p->book.version = version;
                p->book.accepted_ns = accepted;
                *ret = p;
        }
        return 0;
}

static bool keep_pod(const void *rec, const void *filter)
{
        const rkl_pod_record *p = rec;
        const rkl_pod_filter *f = filter;
        return (!f->by_desired || p->desired == f->desired) &&
               (!f->by_phase || p->observed.phase == f->phase) &&
               rkl_db__labels_match(&p->spec.labels, f->label_selector);
}

static void drop_pod(void *rec)
{
        rkl_pod_record_free(rec);
}

static const rkl_db__rows pod_rows = {"select sandboxes", read_pod_row, keep_pod, drop_pod};

int rkl_db_pod_get(rkl_db *s, const char *pod_id, rkl_pod_record **ret, rkl_error *reterr)
{
        return rkl_db__get(s, STMT_POD_SELECT, &rkl_db__kind_sandbox, pod_id, &pod_rows,
                           (void **)ret, reterr);
}

int rkl_db_pod_list(rkl_db *s, const rkl_pod_filter *f, rkl_pod_record ***ret, size_t *ret_n,
                    rkl_error *reterr)
{
        static const rkl_pod_filter all = {0};
        int r;

        if (!f)
                f = &all;
        if ((f->id && (r = rkl_db__check_id("filter.id", f->id, reterr)) < 0) ||
            (r = rkl_db__check_selector(f->label_selector, reterr)) < 0)
                return r;
        /* Narrow with an index (the ID), filter the rest here: labels are not indexed. */
        return rkl_db__list(s, f->id ? STMT_POD_SELECT : STMT_POD_SELECT_ALL, f->id, &pod_rows, f,
                            (void ***)ret, ret_n, reterr);
}

int rkl_db_pod_set_desired(rkl_db *s, const char *pod_id, rkl_pod_desired desired,
                           rkl_error *reterr)
{
        const char *d = rkl_pod_desired_to_string(desired);
        if (!d)
                return rkl_error_set(reterr, -EINVAL, "desired: unknown state %d", (int)desired);
        return rkl_db__update_one(s, STMT_POD_SET_DESIRED, &rkl_db__kind_sandbox, pod_id,
                                  rkl_db__bind_one_text, d, NULL, NULL, reterr);
}

int rkl_db_pod_stop(rkl_db *s, const char *pod_id, rkl_error *reterr)
{
        _cleanup_tx_ rkl_db *tx = NULL;
        _cleanup_reset_ sqlite3_stmt *st = NULL;
        int r;

        if ((r = rkl_db__check_id("pod_sandbox_id", pod_id, reterr)) < 0 ||
            (r = rkl_db__tx_begin_write(s, &tx, reterr)) < 0 ||
            (r = rkl_db__use(s, STMT_POD_SET_DESIRED, &st, reterr)) < 0)
                return r;
        rkl_db__bind_text(st, 1, pod_id);
        rkl_db__bind_text(st, 2, rkl_pod_desired_to_string(RKL_POD_DESIRED_STOPPED));
        rkl_db__bind_int(st, 3, (int64_t)s->tx_generation);
        if ((r = rkl_db__step_done(s, st, "stop sandbox", reterr)) < 0)
                return r;
        if (sqlite3_changes(s->db) == 0)
                return rkl_error_set(reterr, -ENOENT, "sandbox '%s' not found", pod_id);
        if ((r = rkl_db__use(s, STMT_POD_STOP_CONTAINERS, &st, reterr)) < 0)
                return r;
        rkl_db__bind_text(st, 1, pod_id);
        rkl_db__bind_int(st, 2, (int64_t)s->tx_generation);
        if ((r = rkl_db__step_done(s, st, "stop containers", reterr)) < 0)
                return r;
        return rkl_db__tx_commit(&tx, reterr);
}

typedef struct pod_observed_args {
        const rkl_pod_observed *o;
        char *reason, *message; /* sanitized */
        char *additional_ips;   /* joined */
        char *timeline;         /* encoded */
} pod_observed_args;

static int bind_pod_observed(sqlite3_stmt *st, const void *arg)
{
        const pod_observed_args *a = arg;
        rkl_db__bind_text(st, 2, rkl_pod_phase_to_string(a->o->phase));
        rkl_db__bind_int_or_null(st, 3, a->o->pid);
        rkl_db__bind_text(st, 4, a->o->ip);
        rkl_db__bind_int_or_null(st, 5, a->o->created_ns);
        rkl_db__bind_int_or_null(st, 6, a->o->started_ns);
        rkl_db__bind_int_or_null(st, 7, a->o->finished_ns);
        rkl_db__bind_text(st, 8, a->reason);
        rkl_db__bind_text(st, 9, a->message);
        rkl_db__bind_text(st, 10, a->additional_ips);
        rkl_db__bind_text(st, 11, a->timeline);
        return 12;
}

int rkl_db_pod_set_observed(rkl_db *s, const char *pod_id, const rkl_pod_observed *o,
                            rkl_error *reterr)
{
        int r;
        if (!o || !rkl_pod_phase_to_string(o->phase))
                return rkl_error_set(reterr, -EINVAL, "phase: unknown");
        if ((r = rkl_db__check_observed(o->pid, o->created_ns, o->started_ns, o->finished_ns,
                                        &o->timeline, reterr)) < 0 ||
            (r = rkl_db__check_str("ip", o->ip, RKL_MAX_NAME, false, reterr)) < 0)
                return r;
        if (rkl_strv_length(o->additional_ips) > 8)
                return rkl_error_set(reterr, -EINVAL, "additional_ips: more than 8");
        RKL_STRV_FOREACH (ip, o->additional_ips)
                if (isempty(*ip) || strlen(*ip) > 64 ||
                    strspn(*ip, "0123456789abcdefABCDEF.:") != strlen(*ip))
                        return rkl_error_set(reterr, -EINVAL, "additional_ips: '%s' is no address",
                                             *ip);
        _cleanup_free_ char *reason = rkl_db__sanitize_text(o->reason);
        _cleanup_free_ char *message = rkl_db__sanitize_text(o->message);
        _cleanup_free_ char *ips =
            rkl_strv_length(o->additional_ips) ? rkl_strv_join(o->additional_ips, ",") : NULL;
        _cleanup_free_ char *timeline = rkl_db__timeline_to_json(&o->timeline, true);
        pod_observed_args a = {o, reason, message, ips, timeline};
        return rkl_db__update_one(s, STMT_POD_SET_OBSERVED, &rkl_db__kind_sandbox, pod_id,
                                  bind_pod_observed, &a, NULL, NULL, reterr);
}

int rkl_db_pod_set_rkt_uuid(rkl_db *s, const char *pod_id, const char *uuid, rkl_error *reterr)
{
        int r;
        if (uuid && (r = rkl_db__check_rkt_uuid(uuid, reterr)) < 0)
                return r;
        return rkl_db__update_one(s, STMT_POD_SET_RKT_UUID, &rkl_db__kind_sandbox, pod_id,
                                  rkl_db__bind_one_text, uuid, NULL, NULL, reterr);
}

int rkl_db_pod_set_unit_name(rkl_db *s, const char *pod_id, const char *unit, rkl_error *reterr)
{
        int r;
        if (unit && (r = rkl_db__check_unit_name(unit, reterr)) < 0)
                return r;
        return rkl_db__update_one(s, STMT_POD_SET_UNIT_NAME, &rkl_db__kind_sandbox, pod_id,
                                  rkl_db__bind_one_text, unit, NULL, NULL, reterr);
}

int rkl_db_pod_set_resources(rkl_db *s, const char *pod_id, const rkl_resources *res,
                             rkl_error *reterr)
{
        return rkl_db__update_one(s, STMT_POD_SET_RESOURCES, &rkl_db__kind_sandbox, pod_id,
                                  rkl_db__bind_limits, res, NULL, NULL, reterr);
}

int rkl_db_pod_record_error(rkl_db *s, const char *pod_id, const char *error, int64_t next_retry_ns,
                            rkl_error *reterr)
{
        return rkl_db__record_error(s, STMT_POD_RECORD_ERROR, &rkl_db__kind_sandbox, pod_id, error,
                                    next_retry_ns, reterr);
}

int rkl_db_pod_clear_error(rkl_db *s, const char *pod_id, rkl_error *reterr)
{
        return rkl_db__update_one(s, STMT_POD_CLEAR_ERROR, &rkl_db__kind_sandbox, pod_id,
                                  rkl_db__bind_nothing, NULL, NULL, NULL, reterr);
}

int rkl_db_pod_delete(rkl_db *s, const char *pod_id, rkl_error *reterr)
{
        /* Its containers go with it: ON DELETE CASCADE. */
        return rkl_db__delete_one(s, STMT_POD_DELETE, &rkl_db__kind_sandbox, pod_id, reterr);
}

int rkl_db_pod_resolve(rkl_db *s, const char *prefix, char ret_id[static RKL_ID_LEN + 1],
                       rkl_error *reterr)
{
        return rkl_db__resolve(s, STMT_POD_RESOLVE, &rkl_db__kind_sandbox, prefix, ret_id, reterr);
}
