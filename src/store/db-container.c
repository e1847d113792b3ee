/* Container records in the container table: create, get, list, start, stop, the observed
 * state, retry bookkeeping, delete and ID prefixes, and the record's destructors. */
#include "store/db.h"

#include <sqlite3.h>

#include "base/alloc.h"
#include "base/imageref.h"
#include "base/time-util.h"
#include "store/db-internal.h"
#include "base/banned.h"

void rkl_container_observed_done(rkl_container_observed *o)
{
        if (!o)
                return;
        free(o->reason);
        free(o->message);
        free(o->image_ref);
        *o = (rkl_container_observed){0};
}

rkl_container_record *rkl_container_record_free(rkl_container_record *r)
{
        if (!r)
                return NULL;
        rkl_container_spec_done(&r->spec);
        rkl_container_observed_done(&r->observed);
        free(r->app_name);
        free(r->book.last_error);
        free(r);
        return NULL;
}

rkl_container_record **rkl_container_record_array_free(rkl_container_record **a, size_t n)
{
        for (size_t i = 0; a && i < n; i++)
                rkl_container_record_free(a[i]);
        free(a);
        return NULL;
}

/* A record of the current row; a void ** for rkl_db__rows. */
static int read_container_row(sqlite3_stmt *st, void **ret, rkl_error *reterr)
{
        _cleanup_(rkl_container_record_freep) rkl_container_record *c =
            rkl_xnew0(rkl_container_record, 1);
        int r;
        if ((r = rkl_db__copy_id(st, 0, c->id, reterr)) < 0 ||
            (r = rkl_db__copy_id(st, 1, c->sandbox_id, reterr)) < 0)
                return r;
        c->spec.name = rkl_db__column_strdup(st, 2);
        c->spec.attempt = (uint32_t)rkl_db__column_i64(st, 3);
        c->spec.image = rkl_db__column_strdup(st, 4);
        r = rkl_db__container_config_from_json((const char *)sqlite3_column_text(st, 5), &c->spec,
                                               reterr);
        if (r < 0)
                return rkl_error_prefix(reterr, "container '%s'", c->id);
        c->app_name = rkl_db__column_strdup(st, 6);
        c->desired = rkl_container_desired_from_string((const char *)sqlite3_column_text(st, 7));
        c->observed.phase =
            rkl_container_phase_from_string((const char *)sqlite3_column_text(st, 8));
        if ((int)c->desired < 0 || (int)c->observed.phase < 0)
                return rkl_error_set(reterr, -EUCLEAN, "container '%s': unknown state", c->id);
        c->observed.pid = rkl_db__column_i64(st, 9);
        c->observed.has_exit_code = sqlite3_column_type(st, 10) != SQLITE_NULL;
        c->observed.exit_code = (int32_t)rkl_db__column_i64(st, 10);
        c->observed.created_ns = rkl_db__column_i64(st, 11);
        c->observed.started_ns = rkl_db__column_i64(st, 12);
        c->observed.finished_ns = rkl_db__column_i64(st, 13);
        c->observed.reason = rkl_db__column_strdup(st, 14);
        c->observed.message = rkl_db__column_strdup(st, 15);
        c->observed.image_ref = rkl_db__column_strdup(st, 16);
        c->book.version = (uint64_t)rkl_db__column_i64(st, 17);
        c->book.attempts = (uint32_t)rkl_db__column_i64(st, 18);
        c->book.last_error = rkl_db__column_strdup(st, 19);
        c->book.next_retry_ns = rkl_db__column_i64(st, 20);
        c->book.accepted_ns = rkl_db__column_i64(st, 21);
        c->stop_deadline_ns = rkl_db__column_i64(st, 22);
        r = rkl_db__read_kvs(st, 23, &c->spec.labels, &c->spec.annotations, reterr);
        if (r < 0)
                return rkl_error_prefix(reterr, "container '%s'", c->id);
        rkl_db__timeline_from_json((const char *)sqlite3_column_text(st, 25), false,
                                   &c->observed.timeline);
        *ret = TAKE_PTR(c);
        return 0;
}

int rkl_db__container_get(rkl_db *s, const char *container_id, rkl_container_record **ret,
                          rkl_error *reterr)
{
        _cleanup_reset_ sqlite3_stmt *st = NULL;
        int r = rkl_db__select_one(s, STMT_CONTAINER_SELECT, &rkl_db__kind_container, container_id,
                                   &st, reterr);
        void *rec = NULL;
        if (r < 0 || (r = read_container_row(st, &rec, reterr)) < 0)
                return r;
        *ret = rec;
        return 0;
}

int rkl_db_container_create(rkl_db *s, const char *container_id, const char *pod_id,
                            const char *app_name, const char *image_id, rkl_container_spec *spec,
                            rkl_container_record **ret, rkl_error *reterr)
{
        _cleanup_tx_ rkl_db *tx = NULL;
        _cleanup_reset_ sqlite3_stmt *st = NULL;
        int64_t accepted;
        int r;

        if ((r = rkl_db__check_id("container_id", container_id, reterr)) < 0 ||
            (r = rkl_db__check_id("pod_sandbox_id", pod_id, reterr)) < 0 ||
            (r = rkl_db__check_app_name(app_name, reterr)) < 0 ||
            (r = rkl_db__check_container_spec(spec, reterr)) < 0)
                return r;
        if (image_id && !rkl_image_id_is_valid(image_id))
                return rkl_error_set(reterr, -EINVAL, "image_id: not an rkt image ID");
        _cleanup_free_ char *config = rkl_db__container_config_to_json(spec),
                            *labels = rkl_db__kvs_to_json(&spec->labels),
                            *annotations = rkl_db__kvs_to_json(&spec->annotations);

        if ((r = rkl_db__tx_begin_write(s, &tx, reterr)) < 0 ||
            (r = rkl_db__use(s, STMT_POD_EXISTS, &st, reterr)) < 0)
                return r;
        /* Say "no such sandbox" rather than let the foreign key say "constraint failed". */
        rkl_db__bind_text(st, 1, pod_id);
        if ((r = rkl_db__step_row(s, st, "select sandbox", reterr)) < 0)
                return r;
        if (r == 0)
                return rkl_error_set(reterr, -ENOENT, "sandbox '%s' not found", pod_id);
        (void)sqlite3_reset(st); /* SQLITE_OK after SQLITE_ROW */

        if ((r = rkl_db__use(s, STMT_CONTAINER_INSERT, &st, reterr)) < 0)
                return r;
        accepted = rkl_realtime_ns(); /* in commit order: List sorts by it */
        rkl_db__bind_text(st, 1, container_id);
        rkl_db__bind_text(st, 2, pod_id);
        rkl_db__bind_text(st, 3, spec->name);
        rkl_db__bind_int(st, 4, spec->attempt);
        rkl_db__bind_text(st, 5, spec->image);
        rkl_db__bind_text(st, 6, config);
        rkl_db__bind_text(st, 7, app_name);
        rkl_db__bind_int(st, 8, (int64_t)s->tx_generation);
        rkl_db__bind_int(st, 9, accepted);
        rkl_db__bind_text(st, 10, labels);
        rkl_db__bind_text(st, 11, annotations);
        rkl_db__bind_text(st, 12, image_id);
        if ((r = rkl_db__step_done(s, st, "insert container", reterr)) < 0)
                return rkl_error_prefix(reterr, "container '%s'", container_id);
        uint64_t version = s->tx_generation;
        if ((r = rkl_db__tx_commit(&tx, reterr)) < 0)
                return r;
        if (ret) {
                rkl_container_record *c = rkl_xnew0(rkl_container_record, 1);
                memcpy(c->id, container_id, sizeof(c->id));
                memcpy(c->sandbox_id, pod_id, sizeof(c->sandbox_id));
                c->spec = *spec;
                *spec = (rkl_container_spec){0};
                c->app_name = rkl_xstrdup(app_name);
                c->desired = RKL_CONTAINER_DESIRED_CREATED;
                c->observed.phase = RKL_CONTAINER_PHASE_CREATED;
                c->observed.image_ref = image_id ? rkl_xstrdup(image_id) : NULL;
                c->book.version = version;
                c->book.accepted_ns = accepted;
                *ret = c;
        }
        return 0;
}

static bool keep_container(const void *rec, const void *filter)
{
        const rkl_container_record *c = rec;
        const rkl_container_filter *f = filter;
        return (!f->sandbox_id || streq(c->sandbox_id, f->sandbox_id)) &&
               (!f->by_desired || c->desired == f->desired) &&
               (!f->by_phase || c->observed.phase == f->phase) &&
               rkl_db__labels_match(&c->spec.labels, f->label_selector);
}

static void drop_container(void *rec)
{
        rkl_container_record_free(rec);
}

static const rkl_db__rows container_rows = {"select containers", read_container_row, keep_container,
                                            drop_container};

int rkl_db_container_get(rkl_db *s, const char *container_id, rkl_container_record **ret,
                         rkl_error *reterr)
{
        return rkl_db__get(s, STMT_CONTAINER_SELECT, &rkl_db__kind_container, container_id,
                           &container_rows, (void **)ret, reterr);
}

int rkl_db_container_list(rkl_db *s, const rkl_container_filter *f, rkl_container_record ***ret,
                          size_t *ret_n, rkl_error *reterr)
{
        static const rkl_container_filter all = {0};
        int r;

        if (!f)
                f = &all;
        if ((f->id && (r = rkl_db__check_id("filter.id", f->id, reterr)) < 0) ||
            (f->sandbox_id &&
             (r = rkl_db__check_id("filter.pod_sandbox_id", f->sandbox_id, reterr)) < 0) ||
            (r = rkl_db__check_selector(f->label_selector, reterr)) < 0)
                return r;
        if (f->id)
                return rkl_db__list(s, STMT_CONTAINER_SELECT, f->id, &container_rows, f,
                                    (void ***)ret, ret_n, reterr);
        if (f->sandbox_id)
                return rkl_db__list(s, STMT_CONTAINER_SELECT_BY_SANDBOX, f->sandbox_id,
                                    &container_rows, f, (void ***)ret, ret_n, reterr);
        return rkl_db__list(s, STMT_CONTAINER_SELECT_ALL, NULL, &container_rows, f, (void ***)ret,
                            ret_n, reterr);
}

static int bind_one_int(sqlite3_stmt *st, const void *arg)
{
        rkl_db__bind_int(st, 2, *(const int64_t *)arg);
        return 3;
}

int rkl_db_container_stop(rkl_db *s, const char *container_id, int64_t deadline_ns,
                          rkl_container_record **ret, rkl_error *reterr)
{
        if (deadline_ns <= 0)
                return rkl_error_set(reterr, -EINVAL, "stop deadline: must be positive");
        return rkl_db__update_one(s, STMT_CONTAINER_STOP, &rkl_db__kind_container, container_id,
                                  bind_one_int, &deadline_ns, NULL, ret, reterr);
}

int rkl_db_container_start(rkl_db *s, const char *container_id, rkl_container_record **ret,
                           rkl_error *reterr)
{
        _cleanup_tx_ rkl_db *tx = NULL;
        _cleanup_reset_ sqlite3_stmt *st = NULL;
        _cleanup_(rkl_container_record_freep) rkl_container_record *c = NULL;
        int r;

        /* Look and change in one write transaction: a stop or remove in between cannot
         * slip past the checks. */
        if ((r = rkl_db__check_id("container_id", container_id, reterr)) < 0 ||
            (r = rkl_db__tx_begin_write(s, &tx, reterr)) < 0 ||
            (r = rkl_db__container_get(s, container_id, &c, reterr)) < 0)
                return r;
        if (c->desired == RKL_CONTAINER_DESIRED_STOPPED)
                return rkl_error_set(reterr, -EBADFD, "container %s is stopped", container_id);
        if (c->observed.phase == RKL_CONTAINER_PHASE_EXITED)
                return rkl_error_set(reterr, -EBADFD, "container %s has already run and exited",
                                     container_id);
        if (c->desired == RKL_CONTAINER_DESIRED_RUNNING) {
                /* Asked for already: nothing to write (tx rolls back the generation bump). */
                if (ret)
                        *ret = TAKE_PTR(c);
                return 0;
        }
        if ((r = rkl_db__use(s, STMT_CONTAINER_SET_DESIRED, &st, reterr)) < 0)
                return r;
        rkl_db__bind_text(st, 1, container_id);
        rkl_db__bind_text(st, 2, rkl_container_desired_to_string(RKL_CONTAINER_DESIRED_RUNNING));
        rkl_db__bind_int(st, 3, (int64_t)s->tx_generation);
        c->desired = RKL_CONTAINER_DESIRED_RUNNING;
        c->book.version = s->tx_generation;
        if ((r = rkl_db__step_done(s, st, "start container", reterr)) < 0 ||
            (r = rkl_db__tx_commit(&tx, reterr)) < 0)
                return r;
        if (ret)
                *ret = TAKE_PTR(c);
        return 1;
}

typedef struct container_observed_args {
        const rkl_container_observed *o;
        char *reason, *message;
        char *timeline;
} container_observed_args;

static int bind_container_observed(sqlite3_stmt *st, const void *arg)
{
        const container_observed_args *a = arg;
        rkl_db__bind_text(st, 2, rkl_container_phase_to_string(a->o->phase));
        rkl_db__bind_int_or_null(st, 3, a->o->pid);
        if (a->o->has_exit_code)
                rkl_db__bind_int(st, 4, a->o->exit_code);
        else
                rkl_db__bind_text(st, 4, NULL);
        rkl_db__bind_int_or_null(st, 5, a->o->created_ns);
        rkl_db__bind_int_or_null(st, 6, a->o->started_ns);
        rkl_db__bind_int_or_null(st, 7, a->o->finished_ns);
        rkl_db__bind_text(st, 8, a->reason);
        rkl_db__bind_text(st, 9, a->message);
        rkl_db__bind_text(st, 10, a->o->image_ref);
        rkl_db__bind_text(st, 11, a->timeline);
        return 12;
}

int rkl_db_container_set_observed(rkl_db *s, const char *container_id,
                                  const rkl_container_observed *o, rkl_error *reterr)
{
        int r;
        if (!o || !rkl_container_phase_to_string(o->phase))
                return rkl_error_set(reterr, -EINVAL, "phase: unknown");
        if ((r = rkl_db__check_observed(o->pid, o->created_ns, o->started_ns, o->finished_ns,
                                        &o->timeline, reterr)) < 0 ||
            (r = rkl_db__check_str("image_ref", o->image_ref, RKL_MAX_STRING, false, reterr)) < 0)
                return r;
        _cleanup_free_ char *reason = rkl_db__sanitize_text(o->reason);
        _cleanup_free_ char *message = rkl_db__sanitize_text(o->message);
        _cleanup_free_ char *timeline = rkl_db__timeline_to_json(&o->timeline, false);
        container_observed_args a = {o, reason, message, timeline};
        return rkl_db__update_one(s, STMT_CONTAINER_SET_OBSERVED, &rkl_db__kind_container,
                                  container_id, bind_container_observed, &a, NULL, NULL, reterr);
}

int rkl_db_container_record_error(rkl_db *s, const char *container_id, const char *error,
                                  int64_t next_retry_ns, rkl_error *reterr)
{
        return rkl_db__record_error(s, STMT_CONTAINER_RECORD_ERROR, &rkl_db__kind_container,
                                    container_id, error, next_retry_ns, reterr);
}

int rkl_db_container_clear_error(rkl_db *s, const char *container_id, rkl_error *reterr)
{
        return rkl_db__update_one(s, STMT_CONTAINER_CLEAR_ERROR, &rkl_db__kind_container,
                                  container_id, rkl_db__bind_nothing, NULL, NULL, NULL, reterr);
}

static int bind_resources(sqlite3_stmt *st, const void *arg)
{
        const rkl_resources *res = arg;
        int i = rkl_db__bind_limits(st, res);
        rkl_db__bind_int(st, i, res->oom_score_adj);
        rkl_db__bind_text(st, i + 1, res->cpuset_cpus);
        return i + 2;
}

int rkl_db_container_set_resources(rkl_db *s, const char *container_id, const rkl_resources *res,
                                   rkl_error *reterr)
{
        return rkl_db__update_one(s, STMT_CONTAINER_SET_RESOURCES, &rkl_db__kind_container,
                                  container_id, bind_resources, res, NULL, NULL, reterr);
}

int rkl_db_container_delete(rkl_db *s, const char *container_id, rkl_error *reterr)
{
        return rkl_db__delete_one(s, STMT_CONTAINER_DELETE, &rkl_db__kind_container, container_id,
                                  reterr);
}

int rkl_db_container_resolve(rkl_db *s, const char *prefix, char ret_id[static RKL_ID_LEN + 1],
                             rkl_error *reterr)
{
        return rkl_db__resolve(s, STMT_CONTAINER_RESOLVE, &rkl_db__kind_container, prefix, ret_id,
                               reterr);
}
