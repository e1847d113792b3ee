/* Sandboxes whose RunPodSandbox failed under --wait, in the sandbox_failure table: from the
 * transaction that records the failure and deletes the sandbox's row until the reconciler
 * has undone what rkt, systemd and CNI held of it. */
#include "store/db.h"

#include <inttypes.h>
#include <sqlite3.h>

#include "base/alloc.h"
#include "store/db-internal.h"
#include "base/banned.h"

#define ERRNO_MAX 4095 /* the largest errno the kernel gives */

rkl_pod_failure *rkl_pod_failure_free(rkl_pod_failure *f)
{
        if (!f)
                return NULL;
        free(f->message);
        free(f->sandbox);
        free(f);
        return NULL;
}

rkl_pod_failure **rkl_pod_failure_array_free(rkl_pod_failure **a, size_t n)
{
        for (size_t i = 0; a && i < n; i++)
                rkl_pod_failure_free(a[i]);
        free(a);
        return NULL;
}

int rkl_db_pod_withdraw(rkl_db *s, const rkl_pod_failure *f, rkl_error *reterr)
{
        _cleanup_tx_ rkl_db *tx = NULL;
        _cleanup_reset_ sqlite3_stmt *del = NULL;
        _cleanup_reset_ sqlite3_stmt *ins = NULL;
        int r;

        if ((r = rkl_db__check_id("sandbox_id", f->sandbox_id, reterr)) < 0 ||
            (r = rkl_db__check_str("message", f->message, RKL_MAX_STRING, true, reterr)) < 0 ||
            (r = rkl_db__check_str("sandbox", f->sandbox, RKL_MAX_STRING, true, reterr)) < 0)
                return r;
        if (f->code >= 0)
                return rkl_error_set(reterr, -EINVAL, "code: %d is not a -errno", f->code);
        if ((r = rkl_db__tx_begin_write(s, &tx, reterr)) < 0 ||
            (r = rkl_db__use(s, STMT_POD_DELETE, &del, reterr)) < 0)
                return r;
        rkl_db__bind_text(del, 1, f->sandbox_id);
        if ((r = rkl_db__step_done(s, del, "delete the failed sandbox", reterr)) < 0)
                return rkl_error_prefix(reterr, "sandbox '%s'", f->sandbox_id);
        if (sqlite3_changes(s->db) == 0)
                return rkl_error_set(reterr, -ENOENT, "sandbox '%s' not found", f->sandbox_id);
        if ((r = rkl_db__use(s, STMT_FAILURE_INSERT, &ins, reterr)) < 0)
                return r;
        _cleanup_free_ char *message = rkl_db__sanitize_text(f->message);
        rkl_db__bind_text(ins, 1, f->sandbox_id);
        rkl_db__bind_int(ins, 2, -f->code);
        rkl_db__bind_text(ins, 3, message);
        rkl_db__bind_text(ins, 4, f->sandbox);
        rkl_db__bind_int(ins, 5, f->failed_ns);
        if ((r = rkl_db__step_done(s, ins, "record the sandbox's failure", reterr)) < 0)
                return rkl_error_prefix(reterr, "sandbox '%s'", f->sandbox_id);
        return rkl_db__tx_commit(&tx, reterr);
}

static int read_row(sqlite3_stmt *st, void **ret, rkl_error *reterr)
{
        _cleanup_(rkl_pod_failure_freep) rkl_pod_failure *f = rkl_xnew0(rkl_pod_failure, 1);
        int r = rkl_db__copy_id(st, 0, f->sandbox_id, reterr);
        if (r < 0)
                return r;
        int64_t code = rkl_db__column_i64(st, 1);
        if (code <= 0 || code > ERRNO_MAX)
                return rkl_error_set(reterr, -EUCLEAN, "sandbox failure '%s': code %" PRIi64,
                                     f->sandbox_id, code);
        f->code = -(int)code;
        f->message = rkl_db__column_strdup(st, 2);
        f->sandbox = rkl_db__column_strdup(st, 3);
        f->failed_ns = rkl_db__column_i64(st, 4);
        *ret = TAKE_PTR(f);
        return 0;
}

static void drop_row(void *rec)
{
        rkl_pod_failure_free(rec);
}

int rkl_db_pod_failure_list(rkl_db *s, rkl_pod_failure ***ret, size_t *ret_n, rkl_error *reterr)
{
        static const rkl_db__rows rows = {"select sandbox failures", read_row, NULL, drop_row};
        return rkl_db__list(s, STMT_FAILURE_SELECT_ALL, NULL, &rows, NULL, (void ***)ret, ret_n,
                            reterr);
}

int rkl_db_pod_failure_delete(rkl_db *s, const char *sandbox_id, rkl_error *reterr)
{
        static const rkl_db__kind failure = {"sandbox failure", "sandbox_id"};
        int r = rkl_db__delete_one(s, STMT_FAILURE_DELETE, &failure, sandbox_id, reterr);
        if (r == -ENOENT) {
                rkl_error_clear(reterr);
                return 0;
        }
        return r;
}
