/* Sandboxes' networks in the sandbox_network table: what a DEL needs, from before the ADD
 * until the DEL has succeeded. */
#include "store/db.h"

#include <sqlite3.h>

#include "base/alloc.h"
#include "store/db-internal.h"
#include "base/banned.h"

#define CONFIG_MAX (1 << 20) /* a configuration list or a result, as the CNI module reads them */

static const char *const state_names[_RKL_POD_NETWORK_STATE_MAX] = {
    [RKL_POD_NETWORK_ADDING] = "adding",
    [RKL_POD_NETWORK_READY] = "ready",
};

rkl_pod_network *rkl_pod_network_free(rkl_pod_network *n)
{
        if (!n)
                return NULL;
        free(n->rkt_uuid);
        free(n->network);
        free(n->config);
        free(n->netns);
        free(n->ifname);
        free(n->args);
        free(n->capabilities);
        free(n->result);
        free(n->check_error);
        free(n);
        return NULL;
}

rkl_pod_network **rkl_pod_network_array_free(rkl_pod_network **a, size_t n)
{
        for (size_t i = 0; a && i < n; i++)
                rkl_pod_network_free(a[i]);
        free(a);
        return NULL;
}

static int check(const rkl_pod_network *n, rkl_error *reterr)
{
        int r;
        if ((r = rkl_db__check_id("sandbox_id", n->sandbox_id, reterr)) < 0 ||
            (n->rkt_uuid && (r = rkl_db__check_rkt_uuid(n->rkt_uuid, reterr)) < 0) ||
            (r = rkl_db__check_str("network", n->network, RKL_MAX_NAME, true, reterr)) < 0 ||
            (r = rkl_db__check_str("config", n->config, CONFIG_MAX, true, reterr)) < 0 ||
            (r = rkl_db__check_str("netns", n->netns, RKL_MAX_PATH, true, reterr)) < 0 ||
            (r = rkl_db__check_str("ifname", n->ifname, 16, true, reterr)) < 0 ||
            (r = rkl_db__check_str("args", n->args, RKL_MAX_STRING, true, reterr)) < 0 ||
            (r = rkl_db__check_str("capabilities", n->capabilities, CONFIG_MAX, true, reterr)) <
                0 ||
            (r = rkl_db__check_str("result", n->result, CONFIG_MAX, false, reterr)) < 0)
                return r;
        if ((unsigned)n->state >= _RKL_POD_NETWORK_STATE_MAX)
                return rkl_error_set(reterr, -EINVAL, "state: unknown %d", (int)n->state);
        return 0;
}

int rkl_db_pod_network_put(rkl_db *s, const rkl_pod_network *n, rkl_error *reterr)
{
        _cleanup_tx_ rkl_db *tx = NULL;
        _cleanup_reset_ sqlite3_stmt *st = NULL;
        int r;

        if ((r = check(n, reterr)) < 0 || (r = rkl_db__tx_begin_write(s, &tx, reterr)) < 0 ||
            (r = rkl_db__use(s, STMT_NETWORK_PUT, &st, reterr)) < 0)
                return r;
        _cleanup_free_ char *check_error = rkl_db__sanitize_text(n->check_error);
        rkl_db__bind_text(st, 1, n->sandbox_id);
        rkl_db__bind_text(st, 2, n->rkt_uuid);
        rkl_db__bind_text(st, 3, state_names[n->state]);
        rkl_db__bind_text(st, 4, n->network);
        rkl_db__bind_text(st, 5, n->config);
        rkl_db__bind_text(st, 6, n->netns);
        rkl_db__bind_text(st, 7, n->ifname);
        rkl_db__bind_text(st, 8, n->args);
        rkl_db__bind_text(st, 9, n->capabilities);
        rkl_db__bind_text(st, 10, n->result);
        rkl_db__bind_text(st, 11, check_error);
        rkl_db__bind_int(st, 12, n->created_ns);
        rkl_db__bind_int(st, 13, n->updated_ns);
        if ((r = rkl_db__step_done(s, st, "put sandbox network", reterr)) < 0)
                return rkl_error_prefix(reterr, "sandbox '%s'", n->sandbox_id);
        return rkl_db__tx_commit(&tx, reterr);
}

/* A record of the current row; a void ** for rkl_db__rows. */
static int read_row(sqlite3_stmt *st, void **ret, rkl_error *reterr)
{
        _cleanup_(rkl_pod_network_freep) rkl_pod_network *n = rkl_xnew0(rkl_pod_network, 1);
        int r = rkl_db__copy_id(st, 0, n->sandbox_id, reterr);
        if (r < 0)
                return r;
        const char *state = (const char *)sqlite3_column_text(st, 2);
        n->state = _RKL_POD_NETWORK_STATE_INVALID;
        for (int i = 0; state && i < _RKL_POD_NETWORK_STATE_MAX; i++)
                if (streq(state, state_names[i]))
                        n->state = (rkl_pod_network_state)i;
        if ((int)n->state < 0)
                return rkl_error_set(reterr, -EUCLEAN, "sandbox network '%s': unknown state",
                                     n->sandbox_id);
        n->rkt_uuid = rkl_db__column_strdup(st, 1);
        n->network = rkl_db__column_strdup(st, 3);
        n->config = rkl_db__column_strdup(st, 4);
        n->netns = rkl_db__column_strdup(st, 5);
        n->ifname = rkl_db__column_strdup(st, 6);
        n->args = rkl_db__column_strdup(st, 7);
        n->capabilities = rkl_db__column_strdup(st, 8);
        n->result = rkl_db__column_strdup(st, 9);
        n->check_error = rkl_db__column_strdup(st, 10);
        n->created_ns = rkl_db__column_i64(st, 11);
        n->updated_ns = rkl_db__column_i64(st, 12);
        *ret = TAKE_PTR(n);
        return 0;
}

static void drop_row(void *rec)
{
        rkl_pod_network_free(rec);
}

int rkl_db_pod_network_list(rkl_db *s, rkl_pod_network ***ret, size_t *ret_n, rkl_error *reterr)
{
        static const rkl_db__rows rows = {"select sandbox networks", read_row, NULL, drop_row};
        return rkl_db__list(s, STMT_NETWORK_SELECT_ALL, NULL, &rows, NULL, (void ***)ret, ret_n,
                            reterr);
}

int rkl_db_pod_network_delete(rkl_db *s, const char *sandbox_id, rkl_error *reterr)
{
        static const rkl_db__kind network = {"sandbox network", "sandbox_id"};
        int r = rkl_db__delete_one(s, STMT_NETWORK_DELETE, &network, sandbox_id, reterr);
        if (r == -ENOENT) {
                rkl_error_clear(reterr);
                return 0;
        }
        return r;
}
