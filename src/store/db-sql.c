/* Running SQL for the store's files: the text of every cached statement, the statement
 * cache, binding and stepping, SQLite result codes turned into -errno, and transactions. One
 * rkl_db is one sqlite3 connection used by one thread (store.c). */
#include "store/db.h"

#include <sqlite3.h>

#include "base/alloc.h"
#include "base/time-util.h"
#include "metrics/metrics.h"
#include "store/db-internal.h"
#include "base/banned.h"

/* Column order of POD_COLUMNS and CONTAINER_COLUMNS, as read by read_pod_row() (db-pod.c) and
 * read_container_row() (db-container.c). */
#define POD_COLUMNS                                                                                \
        "id, name, namespace, uid, attempt, config, desired, phase, pid, ip, created_ns, "         \
        "started_ns, finished_ns, reason, message, rkt_uuid, unit_name, version, attempts, "       \
        "last_error, next_retry_ns, accepted_ns, labels, annotations, additional_ips, timeline"
#define CONTAINER_COLUMNS                                                                          \
        "id, sandbox_id, name, attempt, image, config, app_name, desired, phase, pid, "            \
        "exit_code, created_ns, started_ns, finished_ns, reason, message, image_ref, version, "    \
        "attempts, last_error, next_retry_ns, accepted_ns, stop_deadline_ns, labels, "             \
        "annotations, "                                                                            \
        "timeline"
#define ORDER " ORDER BY accepted_ns, id"

const char *const rkl_db__stmt_sql[_STMT_MAX] = {
    /* Writers take the write lock up front: a deferred transaction that reads and then
     * writes can fail with SQLITE_BUSY without the busy handler ever being called. */
    [STMT_BEGIN_WRITE] = "BEGIN IMMEDIATE",
    [STMT_BEGIN_READ] = "BEGIN DEFERRED",
    [STMT_COMMIT] = "COMMIT",
    [STMT_ROLLBACK] = "ROLLBACK",
    [STMT_GENERATION_BUMP] =
        "UPDATE meta SET generation = generation + 1 WHERE id = 1 RETURNING generation",
    [STMT_GENERATION_GET] = "SELECT generation FROM meta WHERE id = 1",
    [STMT_DATA_VERSION] = "PRAGMA data_version",
    [STMT_USER_VERSION] = "PRAGMA user_version",

    [STMT_POD_INSERT] = "INSERT INTO sandbox (id, name, namespace, uid, attempt, config, "
                        "desired, phase, version, accepted_ns, labels, annotations) "
                        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'ready', 'pending', ?7, ?8, ?9, ?10)",
    [STMT_POD_SELECT] = "SELECT " POD_COLUMNS " FROM sandbox WHERE id = ?1",
    [STMT_POD_SELECT_ALL] = "SELECT " POD_COLUMNS " FROM sandbox" ORDER,
    [STMT_POD_EXISTS] = "SELECT 1 FROM sandbox WHERE id = ?1",
    [STMT_POD_SET_DESIRED] = "UPDATE sandbox SET desired = ?2, version = ?3 WHERE id = ?1",
    [STMT_POD_STOP_CONTAINERS] = "UPDATE container SET desired = 'stopped', version = ?2 "
                                 "WHERE sandbox_id = ?1 AND desired <> 'stopped'",
    [STMT_POD_SET_OBSERVED] = "UPDATE sandbox SET phase = ?2, pid = ?3, ip = ?4, "
                              "created_ns = ?5, started_ns = ?6, finished_ns = ?7, "
                              "reason = ?8, message = ?9, additional_ips = ?10, timeline = ?11, "
                              "version = ?12 WHERE id = ?1",
    [STMT_POD_SET_RKT_UUID] = "UPDATE sandbox SET rkt_uuid = ?2, version = ?3 WHERE id = ?1",
    [STMT_POD_SET_RESOURCES] =
        "UPDATE sandbox SET config = json_set(config, '$.cpu_period', ?2, '$.cpu_quota', ?3, "
        "'$.cpu_shares', ?4, '$.memory_limit', ?5), version = ?6 WHERE id = ?1",
    [STMT_POD_SET_UNIT_NAME] = "UPDATE sandbox SET unit_name = ?2, version = ?3 "
                               "WHERE id = ?1",
    [STMT_POD_RECORD_ERROR] = "UPDATE sandbox SET attempts = attempts + 1, last_error = ?2, "
                              "next_retry_ns = ?3, version = ?4 WHERE id = ?1 "
                              "RETURNING attempts",
    [STMT_POD_CLEAR_ERROR] = "UPDATE sandbox SET attempts = 0, last_error = NULL, "
                             "next_retry_ns = NULL, version = ?2 WHERE id = ?1",
    [STMT_POD_DELETE] = "DELETE FROM sandbox WHERE id = ?1",
    /* IDs are hex, and 'g' sorts after every hex digit: the range is the prefix's. */
    [STMT_POD_RESOLVE] = "SELECT id FROM sandbox WHERE id >= ?1 AND id < ?1 || 'g' "
                         "ORDER BY id LIMIT 2",

    [STMT_CONTAINER_INSERT] =
        "INSERT INTO container (id, sandbox_id, name, attempt, image, "
        "config, app_name, desired, phase, version, accepted_ns, labels, "
        "annotations, image_ref) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'created', 'created', ?8, ?9, ?10, "
        "?11, ?12)",
    [STMT_CONTAINER_SELECT] = "SELECT " CONTAINER_COLUMNS " FROM container WHERE id = ?1",
    [STMT_CONTAINER_SELECT_ALL] = "SELECT " CONTAINER_COLUMNS " FROM container" ORDER,
    [STMT_CONTAINER_SELECT_BY_SANDBOX] = "SELECT " CONTAINER_COLUMNS " FROM container "
                                         "WHERE sandbox_id = ?1" ORDER,
    [STMT_CONTAINER_SET_DESIRED] = "UPDATE container SET desired = ?2, version = ?3 WHERE id = ?1",
    [STMT_CONTAINER_STOP] =
        "UPDATE container SET desired = 'stopped', "
        "stop_deadline_ns = min(coalesce(stop_deadline_ns, ?2), ?2), version = ?3 "
        "WHERE id = ?1",
    [STMT_CONTAINER_SET_OBSERVED] = "UPDATE container SET phase = ?2, pid = ?3, exit_code = ?4, "
                                    "created_ns = ?5, started_ns = ?6, finished_ns = ?7, "
                                    "reason = ?8, message = ?9, image_ref = ?10, timeline = ?11, "
                                    "version = ?12 WHERE id = ?1",
    [STMT_CONTAINER_RECORD_ERROR] = "UPDATE container SET attempts = attempts + 1, "
                                    "last_error = ?2, next_retry_ns = ?3, version = ?4 "
                                    "WHERE id = ?1 RETURNING attempts",
    [STMT_CONTAINER_CLEAR_ERROR] = "UPDATE container SET attempts = 0, last_error = NULL, "
                                   "next_retry_ns = NULL, version = ?2 WHERE id = ?1",
    /* The resources live in config, where CreateContainer put them (0004's view shows them). */
    [STMT_CONTAINER_SET_RESOURCES] =
        "UPDATE container SET config = json_set(config, '$.cpu_period', ?2, '$.cpu_quota', ?3, "
        "'$.cpu_shares', ?4, '$.memory_limit', ?5, '$.oom_score_adj', ?6, '$.cpuset_cpus', ?7), "
        "version = ?8 WHERE id = ?1",
    [STMT_CONTAINER_DELETE] = "DELETE FROM container WHERE id = ?1",
    [STMT_CONTAINER_RESOLVE] = "SELECT id FROM container WHERE id >= ?1 AND id < ?1 || 'g' "
                               "ORDER BY id LIMIT 2",

    [STMT_NETWORK_PUT] = "INSERT OR REPLACE INTO sandbox_network (sandbox_id, rkt_uuid, state, "
                         "network, config, netns, ifname, args, capabilities, result, "
                         "check_error, created_ns, updated_ns) VALUES (?1, ?2, ?3, ?4, ?5, ?6, "
                         "?7, ?8, ?9, ?10, ?11, ?12, ?13)",
    [STMT_NETWORK_SELECT_ALL] = "SELECT sandbox_id, rkt_uuid, state, network, config, netns, "
                                "ifname, args, capabilities, result, check_error, created_ns, "
                                "updated_ns FROM sandbox_network ORDER BY created_ns, sandbox_id",
    [STMT_NETWORK_DELETE] = "DELETE FROM sandbox_network WHERE sandbox_id = ?1",

    [STMT_FAILURE_INSERT] = "INSERT OR REPLACE INTO sandbox_failure (sandbox_id, code, message, "
                            "sandbox, failed_ns) VALUES (?1, ?2, ?3, ?4, ?5)",
    [STMT_FAILURE_SELECT_ALL] = "SELECT sandbox_id, code, message, sandbox, failed_ns "
                                "FROM sandbox_failure ORDER BY failed_ns, sandbox_id",
    [STMT_FAILURE_DELETE] = "DELETE FROM sandbox_failure WHERE sandbox_id = ?1",
};

/* SQLite → -errno, here and nowhere else (CONTRIBUTING.md, 'Foreign errors at the edge'). */
int rkl_db__errno_from_sqlite(int rc)
{
        switch (rc) {
        case SQLITE_CONSTRAINT_CHECK:
        case SQLITE_CONSTRAINT_NOTNULL:
        case SQLITE_CONSTRAINT_DATATYPE:
                /* The C validation runs first; reaching this is a gap in it. */
                return -EINVAL;
        case SQLITE_CONSTRAINT_FOREIGNKEY:
                return -ENOENT;
        default:
                break;
        }
        switch (rc & 0xff) {
        case SQLITE_OK:
        case SQLITE_ROW:
        case SQLITE_DONE:
                return 0;
        case SQLITE_CONSTRAINT:
                return -EEXIST;
        case SQLITE_BUSY:
        case SQLITE_LOCKED:
                return -EBUSY;
        case SQLITE_NOMEM:
                return -ENOMEM;
        case SQLITE_CORRUPT:
        case SQLITE_NOTADB:
                return -EUCLEAN;
        case SQLITE_FULL:
                return -ENOSPC;
        case SQLITE_READONLY:
                return -EROFS;
        case SQLITE_PERM:
        case SQLITE_AUTH:
        case SQLITE_CANTOPEN:
                return -EACCES;
        default:
                return -EIO;
        }
}

int rkl_db__sql_error(rkl_db *s, int rc, const char *what, rkl_error *reterr)
{
        return rkl_error_set(reterr, rkl_db__errno_from_sqlite(rc), "%s: %s", what,
                             s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
}

void rkl_db__stmt_resetp(sqlite3_stmt **st)
{
        if (*st) {
                /* reset returns the last step's error, which that step reported already;
                 * clear_bindings always succeeds. */
                (void)sqlite3_reset(*st);
                (void)sqlite3_clear_bindings(*st);
        }
}

int rkl_db__use(rkl_db *s, rkl_db__stmt_id id, sqlite3_stmt **ret, rkl_error *reterr)
{
        assert(id < _STMT_MAX);
        if (!s->stmts[id]) {
                int rc = sqlite3_prepare_v3(s->db, rkl_db__stmt_sql[id], -1,
                                            SQLITE_PREPARE_PERSISTENT, &s->stmts[id], NULL);
                if (rc != SQLITE_OK)
                        return rkl_db__sql_error(s, rc, "prepare", reterr);
        }
        *ret = s->stmts[id];
        return 0;
}

/* Binding: strings are bound SQLITE_STATIC (the caller's memory outlives the step), NULL
 * as SQL NULL. Bind errors are programming errors or OOM. */
void rkl_db__bind_text(sqlite3_stmt *st, int i, const char *v)
{
        int rc = v ? sqlite3_bind_text(st, i, v, -1, SQLITE_STATIC) : sqlite3_bind_null(st, i);
        if (rc == SQLITE_NOMEM)
                rkl_oom();
        assert(rc == SQLITE_OK);
}

void rkl_db__bind_int(sqlite3_stmt *st, int i, int64_t v)
{
        int rc = sqlite3_bind_int64(st, i, v);
        assert(rc == SQLITE_OK);
        (void)rc; /* for NDEBUG: binding an integer fails only for a bad index, a bug */
}

/* 0 means "unknown" in the C structs and NULL in the tables. */
void rkl_db__bind_int_or_null(sqlite3_stmt *st, int i, int64_t v)
{
        int rc = v ? sqlite3_bind_int64(st, i, v) : sqlite3_bind_null(st, i);
        assert(rc == SQLITE_OK);
        (void)rc; /* for NDEBUG: binding an integer fails only for a bad index, a bug */
}

/* Steps a statement that returns no rows (or whose rows are not wanted) to its end. */
int rkl_db__step_done(rkl_db *s, sqlite3_stmt *st, const char *what, rkl_error *reterr)
{
        int rc;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW)
                ;
        if (rc != SQLITE_DONE) {
                int r = rkl_db__sql_error(s, rc, what, reterr);
                (void)sqlite3_reset(st); /* returns rc again: reported just above */
                return r;
        }
        (void)sqlite3_reset(st); /* SQLITE_OK after SQLITE_DONE */
        return 0;
}

int rkl_db__step_row(rkl_db *s, sqlite3_stmt *st, const char *what, rkl_error *reterr)
{
        int rc = sqlite3_step(st);
        if (rc == SQLITE_ROW)
                return 1;
        if (rc == SQLITE_DONE)
                return 0;
        return rkl_db__sql_error(s, rc, what, reterr);
}

int rkl_db__run(rkl_db *s, rkl_db__stmt_id id, rkl_error *reterr)
{
        sqlite3_stmt *st;
        int r = rkl_db__use(s, id, &st, reterr);
        if (r < 0)
                return r;
        return rkl_db__step_done(s, st, rkl_db__stmt_sql[id], reterr);
}

char *rkl_db__column_strdup(sqlite3_stmt *st, int i)
{
        /* Borrowed from the statement (CONTRIBUTING.md, 'Ownership'): copy before the next step. */
        const unsigned char *t = sqlite3_column_text(st, i);
        if (!t && sqlite3_column_type(st, i) != SQLITE_NULL)
                rkl_oom();
        return rkl_xstrdup((const char *)t);
}

int64_t rkl_db__column_i64(sqlite3_stmt *st, int i)
{
        return sqlite3_column_int64(st, i); /* NULL reads as 0, which is "unknown" */
}

/* Transactions (db-internal.h: _cleanup_tx_ rolls back what was not committed). */

void rkl_db__tx_abortp(rkl_db **tx)
{
        if (!*tx)
                return;
        (*tx)->tx_generation = 0;
        /* A failed ROLLBACK (e.g. SQLite already rolled back after an I/O error) leaves no
         * transaction open either. */
        (void)rkl_db__run(*tx, STMT_ROLLBACK, NULL);
}

/* BEGIN IMMEDIATE, and bump the generation: every write transaction counts as a change. */
int rkl_db__tx_begin_write(rkl_db *s, rkl_db **tx, rkl_error *reterr)
{
        _cleanup_reset_ sqlite3_stmt *st = NULL;
        int r;

        assert(!*tx);
        r = rkl_db_wait_writable(s, reterr); /* the gate (store.c) */
        if (r < 0)
                return r;
        r = rkl_db__run(s, STMT_BEGIN_WRITE, reterr);
        if (r < 0)
                return rkl_error_prefix(reterr, "begin");
        *tx = s;
        r = rkl_db__use(s, STMT_GENERATION_BUMP, &st, reterr);
        if (r < 0)
                return r;
        r = rkl_db__step_row(s, st, "bump generation", reterr);
        if (r < 0)
                return r;
        if (r == 0)
                return rkl_error_set(reterr, -EUCLEAN, "bump generation: meta row missing");
        s->tx_generation = (uint64_t)sqlite3_column_int64(st, 0);
        return 0;
}

/* A deferred read transaction: one snapshot across the statements of a get or list. */
int rkl_db__tx_begin_read(rkl_db *s, rkl_db **tx, rkl_error *reterr)
{
        assert(!*tx);
        int r = rkl_db__run(s, STMT_BEGIN_READ, reterr);
        if (r < 0)
                return rkl_error_prefix(reterr, "begin");
        *tx = s;
        return 0;
}

int rkl_db__tx_commit(rkl_db **tx, rkl_error *reterr)
{
        rkl_db *s = *tx;
        uint64_t t0 = rkl_now_usec(CLOCK_MONOTONIC);
        int r = rkl_db__run(s, STMT_COMMIT, reterr);
        rkl_metrics_record(RKL_METRICS_STORE_COMMIT, NULL, rkl_now_usec(CLOCK_MONOTONIC) - t0,
                           r < 0);
        if (r < 0)
                return rkl_error_prefix(reterr, "commit"); /* rkl_db__tx_abortp rolls back */
        s->tx_generation = 0;
        *tx = NULL;
        return 0;
}
