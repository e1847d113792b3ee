/* What the sandbox and container tables share (db-pod.c, db-container.c): reading the
 * ID and label columns, selecting one row by ID, the single-row UPDATE and DELETE each in
 * its own write transaction, recording a failed attempt, and resolving an ID prefix. */
#include "store/db.h"

#include <sqlite3.h>

#include "base/alloc.h"
#include "store/db-internal.h"
#include "base/banned.h"

/* The labels and annotations columns of a row (read_pod_row() and read_container_row()). */
int rkl_db__read_kvs(sqlite3_stmt *st, int col, rkl_kvs *labels, rkl_kvs *annotations,
                     rkl_error *reterr)
{
        int r = rkl_db__kvs_from_json((const char *)sqlite3_column_text(st, col), "labels", labels,
                                      reterr);
        if (r < 0)
                return r;
        return rkl_db__kvs_from_json((const char *)sqlite3_column_text(st, col + 1), "annotations",
                                     annotations, reterr);
}

int rkl_db__copy_id(sqlite3_stmt *st, int col, char ret[static RKL_ID_LEN + 1], rkl_error *reterr)
{
        const char *id = (const char *)sqlite3_column_text(st, col);
        if (!rkl_id_is_valid(id))
                return rkl_error_set(reterr, -EUCLEAN, "bad ID in the database");
        memcpy(ret, id, RKL_ID_LEN + 1);
        return 0;
}

/* True if every pair of the selector is among the labels. */
bool rkl_db__labels_match(const rkl_kvs *labels, const rkl_kvs *selector)
{
        for (size_t i = 0; selector && i < selector->n; i++) {
                const char *v = rkl_kvs_get(labels, selector->items[i].key);
                if (!v || !streq(v, selector->items[i].value))
                        return false;
        }
        return true;
}

/* Steps stmt (selecting one object by ID) onto its row, in the transaction under way:
 * what a write hands back (ret != NULL) is exactly what it committed, with no second
 * transaction to read it. -ENOENT when there is none. */
int rkl_db__select_one(rkl_db *s, rkl_db__stmt_id stmt, const rkl_db__kind *kind, const char *id,
                       sqlite3_stmt **ret, rkl_error *reterr)
{
        int r = rkl_db__use(s, stmt, ret, reterr);
        if (r < 0)
                return r;
        rkl_db__bind_text(*ret, 1, id);
        r = rkl_db__step_row(s, *ret, rkl_db__stmt_sql[stmt], reterr);
        if (r < 0)
                return r;
        if (r == 0)
                return rkl_error_set(reterr, -ENOENT, "%s '%s' not found", kind->name, id);
        return 0;
}

const rkl_db__kind rkl_db__kind_container = {"container", "container_id"};
const rkl_db__kind rkl_db__kind_sandbox = {"sandbox", "pod_sandbox_id"};

int rkl_db__get(rkl_db *s, rkl_db__stmt_id stmt, const rkl_db__kind *kind, const char *id,
                const rkl_db__rows *rows, void **ret, rkl_error *reterr)
{
        _cleanup_tx_ rkl_db *tx = NULL;
        _cleanup_reset_ sqlite3_stmt *st = NULL;
        void *rec = NULL;
        int r;
        if ((r = rkl_db__check_id(kind->id_field, id, reterr)) < 0 ||
            (r = rkl_db__tx_begin_read(s, &tx, reterr)) < 0 ||
            (r = rkl_db__select_one(s, stmt, kind, id, &st, reterr)) < 0 ||
            (r = rows->read(st, &rec, reterr)) < 0)
                return r;
        if ((r = rkl_db__tx_commit(&tx, reterr)) < 0) {
                rows->drop(rec);
                return r;
        }
        *ret = rec;
        return 0;
}

int rkl_db__list(rkl_db *s, rkl_db__stmt_id stmt, const char *key, const rkl_db__rows *rows,
                 const void *filter, void ***ret, size_t *ret_n, rkl_error *reterr)
{
        _cleanup_tx_ rkl_db *tx = NULL;
        _cleanup_reset_ sqlite3_stmt *st = NULL;
        void **a = NULL;
        size_t n = 0;
        int r;

        if ((r = rkl_db__tx_begin_read(s, &tx, reterr)) < 0 ||
            (r = rkl_db__use(s, stmt, &st, reterr)) < 0)
                return r;
        if (key)
                rkl_db__bind_text(st, 1, key);
        while ((r = rkl_db__step_row(s, st, rows->what, reterr)) > 0) {
                void *rec = NULL;
                if ((r = rows->read(st, &rec, reterr)) < 0)
                        break;
                if (rows->keep && !rows->keep(rec, filter))
                        rows->drop(rec);
                else
                        rkl_db__push_ptr(&a, &n, rec);
        }
        if (r >= 0)
                r = rkl_db__tx_commit(&tx, reterr);
        if (r < 0) {
                for (size_t i = 0; i < n; i++)
                        rows->drop(a[i]);
                free(a);
                return r;
        }
        *ret = a;
        *ret_n = n;
        return 0;
}

void rkl_db__push_ptr(void ***a, size_t *n, void *p)
{
        *a = rkl_xrealloc(*a, (*n + 1) * sizeof(void *));
        (*a)[(*n)++] = p;
}

/* Runs one single-row UPDATE of (id, ...binds..., version) in its own write transaction;
 * -ENOENT when no row has that ID. bind fills the parameters from ?2 on and returns the
 * index of the version parameter. */
int rkl_db__bind_limits(sqlite3_stmt *st, const void *arg)
{
        const rkl_resources *res = arg;
        rkl_db__bind_int(st, 2, res->cpu_period);
        rkl_db__bind_int(st, 3, res->cpu_quota);
        rkl_db__bind_int(st, 4, res->cpu_shares);
        rkl_db__bind_int(st, 5, res->memory_limit);
        return 6;
}

int rkl_db__update_one(rkl_db *s, rkl_db__stmt_id id, const rkl_db__kind *kind, const char *obj_id,
                       rkl_db__bind_fn bind, const void *arg, int64_t *ret_value,
                       rkl_container_record **ret_container, rkl_error *reterr)
{
        _cleanup_tx_ rkl_db *tx = NULL;
        _cleanup_reset_ sqlite3_stmt *st = NULL;
        _cleanup_(rkl_container_record_freep) rkl_container_record *rec = NULL;
        int r;

        if ((r = rkl_db__check_id(kind->id_field, obj_id, reterr)) < 0 ||
            (r = rkl_db__tx_begin_write(s, &tx, reterr)) < 0 ||
            (r = rkl_db__use(s, id, &st, reterr)) < 0)
                return r;
        rkl_db__bind_text(st, 1, obj_id);
        int vi = bind(st, arg);
        rkl_db__bind_int(st, vi, (int64_t)s->tx_generation);
        if (ret_value) {
                /* RETURNING: the one row carries the new value. */
                r = rkl_db__step_row(s, st, rkl_db__stmt_sql[id], reterr);
                if (r < 0)
                        return rkl_error_prefix(reterr, "%s '%s'", kind->name, obj_id);
                if (r > 0)
                        *ret_value = sqlite3_column_int64(st, 0);
                r = r > 0 ? 1 : 0;
                /* The first step made the whole change (or failed, returned above); after
                 * SQLITE_ROW or SQLITE_DONE reset returns SQLITE_OK. */
                (void)sqlite3_reset(st);
        } else {
                r = rkl_db__step_done(s, st, rkl_db__stmt_sql[id], reterr);
                if (r < 0)
                        return rkl_error_prefix(reterr, "%s '%s'", kind->name, obj_id);
                r = sqlite3_changes(s->db) > 0;
        }
        if (r == 0)
                return rkl_error_set(reterr, -ENOENT, "%s '%s' not found", kind->name, obj_id);
        if ((ret_container && (r = rkl_db__container_get(s, obj_id, &rec, reterr)) < 0) ||
            (r = rkl_db__tx_commit(&tx, reterr)) < 0)
                return r;
        if (ret_container)
                *ret_container = TAKE_PTR(rec);
        return 0;
}

int rkl_db__bind_nothing(sqlite3_stmt *st, const void *arg)
{
        return 2;
}

int rkl_db__bind_one_text(sqlite3_stmt *st, const void *arg)
{
        rkl_db__bind_text(st, 2, arg);
        return 3;
}

typedef struct error_args {
        const char *error;
        int64_t next_retry_ns;
} error_args;

static int bind_error(sqlite3_stmt *st, const void *arg)
{
        const error_args *e = arg;
        rkl_db__bind_text(st, 2, e->error);
        rkl_db__bind_int_or_null(st, 3, e->next_retry_ns);
        return 4;
}

int rkl_db__record_error(rkl_db *s, rkl_db__stmt_id id, const rkl_db__kind *kind,
                         const char *obj_id, const char *error, int64_t next_retry_ns,
                         rkl_error *reterr)
{
        int64_t attempts = 0;
        int r;
        if ((r = rkl_db__check_time("next_retry", next_retry_ns, reterr)) < 0)
                return r;
        _cleanup_free_ char *e = rkl_db__sanitize_text(error ? error : "unknown error");
        error_args a = {e, next_retry_ns};
        r = rkl_db__update_one(s, id, kind, obj_id, bind_error, &a, &attempts, NULL, reterr);
        if (r < 0)
                return r;
        return attempts > INT32_MAX ? INT32_MAX : (int)attempts;
}

int rkl_db__delete_one(rkl_db *s, rkl_db__stmt_id id, const rkl_db__kind *kind, const char *obj_id,
                       rkl_error *reterr)
{
        _cleanup_tx_ rkl_db *tx = NULL;
        _cleanup_reset_ sqlite3_stmt *st = NULL;
        int r;
        if ((r = rkl_db__check_id(kind->id_field, obj_id, reterr)) < 0 ||
            (r = rkl_db__tx_begin_write(s, &tx, reterr)) < 0 ||
            (r = rkl_db__use(s, id, &st, reterr)) < 0)
                return r;
        rkl_db__bind_text(st, 1, obj_id);
        if ((r = rkl_db__step_done(s, st, rkl_db__stmt_sql[id], reterr)) < 0)
                return rkl_error_prefix(reterr, "%s '%s'", kind->name, obj_id);
        if (sqlite3_changes(s->db) == 0)
                return rkl_error_set(reterr, -ENOENT, "%s '%s' not found", kind->name, obj_id);
        return rkl_db__tx_commit(&tx, reterr);
}

int rkl_db__resolve(rkl_db *s, rkl_db__stmt_id id, const rkl_db__kind *kind, const char *prefix,
                    char ret_id[static RKL_ID_LEN + 1], rkl_error *reterr)
{
        _cleanup_reset_ sqlite3_stmt *st = NULL;
        size_t n = prefix ? strnlen(prefix, RKL_ID_LEN + 1) : 0;
        char first[RKL_ID_LEN + 1];
        int r;

        if (n == 0 || n > RKL_ID_LEN || strspn(prefix, "0123456789abcdef") != n)
                return rkl_error_set(reterr, -EINVAL,
                                     "%s ID prefix: not 1 to %d lowercase hex "
                                     "digits",
                                     kind->name, RKL_ID_LEN);
        if ((r = rkl_db__use(s, id, &st, reterr)) < 0)
                return r;
        rkl_db__bind_text(st, 1, prefix);
        if ((r = rkl_db__step_row(s, st, "resolve", reterr)) < 0)
                return r;
        if (r == 0)
                return rkl_error_set(reterr, -ENOENT, "no %s ID starts with '%s'", kind->name,
                                     prefix);
        if ((r = rkl_db__copy_id(st, 0, first, reterr)) < 0 ||
            (r = rkl_db__step_row(s, st, "resolve", reterr)) < 0)
                return r;
        if (r > 0)
                return rkl_error_set(reterr, -ENOTUNIQ, "%s ID prefix '%s' is ambiguous",
                                     kind->name, prefix);
        memcpy(ret_id, first, sizeof(first));
        return 0;
}
