/* The state store over SQLite (store.h). One rkl_store is one sqlite3 connection, used by
 * one thread. The connection is opened in multi-thread mode (SQLITE_OPEN_NOMUTEX): SQLite
 * takes no mutex per call because the connection is never shared. */
#include "state/store.h"

#include <fcntl.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include "base/alloc.h"
#include "base/imageref.h"
#include "base/latch.h"
#include "base/strv.h"
#include "base/time-util.h"
#include "state/store-internal.h"
#include "base/banned.h"

#define DEFAULT_BUSY_TIMEOUT_MS 5000
/* After a checkpoint, a WAL bigger than this is truncated back to it (bytes). */
#define WAL_SIZE_LIMIT (32 * 1024 * 1024)
/* Free text from the machine (errors, reasons) is cut to this rather than refused. */
#define MAX_TEXT      RKL_MAX_STRING
#define UNIT_NAME_MAX 255
#define RKT_UUID_LEN  36

/* Every statement the store runs after open, prepared once per connection on first use
 * (SQLITE_PREPARE_PERSISTENT: they live as long as the connection). */
typedef enum stmt_id {
        STMT_BEGIN_WRITE,
        STMT_BEGIN_READ,
        STMT_COMMIT,
        STMT_ROLLBACK,
        STMT_GENERATION_BUMP,
        STMT_GENERATION_GET,
        STMT_DATA_VERSION,
        STMT_USER_VERSION,

        STMT_POD_INSERT,
        STMT_POD_SELECT,
        STMT_POD_SELECT_ALL,
        STMT_POD_EXISTS,
        STMT_POD_SET_DESIRED,
        STMT_POD_STOP_CONTAINERS,
        STMT_POD_SET_OBSERVED,
        STMT_POD_SET_RKT_UUID,
        STMT_POD_SET_UNIT_NAME,
        STMT_POD_RECORD_ERROR,
        STMT_POD_CLEAR_ERROR,
        STMT_POD_DELETE,
        STMT_POD_RESOLVE,

        STMT_CTR_INSERT,
        STMT_CTR_SELECT,
        STMT_CTR_SELECT_ALL,
        STMT_CTR_SELECT_BY_SANDBOX,
        STMT_CTR_SET_DESIRED,
        STMT_CTR_STOP,
        STMT_CTR_SET_OBSERVED,
        STMT_CTR_RECORD_ERROR,
        STMT_CTR_CLEAR_ERROR,
        STMT_CTR_DELETE,
        STMT_CTR_RESOLVE,
        _STMT_MAX,
} stmt_id;

/* Column order of POD_COLUMNS and CTR_COLUMNS, as read by read_pod_row()/read_ctr_row(). */
#define POD_COLUMNS                                                                                \
        "id, name, namespace, uid, attempt, config, desired, phase, pid, ip, created_ns, "         \
        "started_ns, finished_ns, reason, message, rkt_uuid, unit_name, version, attempts, "       \
        "last_error, next_retry_ns, accepted_ns, labels, annotations"
#define CTR_COLUMNS                                                                                \
        "id, sandbox_id, name, attempt, image, config, app_name, desired, phase, pid, "            \
        "exit_code, created_ns, started_ns, finished_ns, reason, message, image_ref, version, "    \
        "attempts, last_error, next_retry_ns, accepted_ns, stop_deadline_ns, labels, annotations"
#define ORDER " ORDER BY accepted_ns, id"

static const char *const stmt_sql[_STMT_MAX] = {
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
                              "reason = ?8, message = ?9, version = ?10 WHERE id = ?1",
    [STMT_POD_SET_RKT_UUID] = "UPDATE sandbox SET rkt_uuid = ?2, version = ?3 WHERE id = ?1",
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

    [STMT_CTR_INSERT] = "INSERT INTO container (id, sandbox_id, name, attempt, image, "
                        "config, app_name, desired, phase, version, accepted_ns, labels, "
                        "annotations, image_ref) "
                        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'created', 'created', ?8, ?9, ?10, "
                        "?11, ?12)",
    [STMT_CTR_SELECT] = "SELECT " CTR_COLUMNS " FROM container WHERE id = ?1",
    [STMT_CTR_SELECT_ALL] = "SELECT " CTR_COLUMNS " FROM container" ORDER,
    [STMT_CTR_SELECT_BY_SANDBOX] = "SELECT " CTR_COLUMNS " FROM container "
                                   "WHERE sandbox_id = ?1" ORDER,
    [STMT_CTR_SET_DESIRED] = "UPDATE container SET desired = ?2, version = ?3 WHERE id = ?1",
    [STMT_CTR_STOP] = "UPDATE container SET desired = 'stopped', "
                      "stop_deadline_ns = min(coalesce(stop_deadline_ns, ?2), ?2), version = ?3 "
                      "WHERE id = ?1",
    [STMT_CTR_SET_OBSERVED] = "UPDATE container SET phase = ?2, pid = ?3, exit_code = ?4, "
                              "created_ns = ?5, started_ns = ?6, finished_ns = ?7, "
                              "reason = ?8, message = ?9, image_ref = ?10, version = ?11 "
                              "WHERE id = ?1",
    [STMT_CTR_RECORD_ERROR] = "UPDATE container SET attempts = attempts + 1, "
                              "last_error = ?2, next_retry_ns = ?3, version = ?4 "
                              "WHERE id = ?1 RETURNING attempts",
    [STMT_CTR_CLEAR_ERROR] = "UPDATE container SET attempts = 0, last_error = NULL, "
                             "next_retry_ns = NULL, version = ?2 WHERE id = ?1",
    [STMT_CTR_DELETE] = "DELETE FROM container WHERE id = ?1",
    [STMT_CTR_RESOLVE] = "SELECT id FROM container WHERE id >= ?1 AND id < ?1 || 'g' "
                         "ORDER BY id LIMIT 2",
};

struct rkl_store {
        sqlite3 *db;
        sqlite3_stmt *stmts[_STMT_MAX];
        /* The generation of the write transaction in progress (0: none). Rows changed in it
         * get it as their version. */
        uint64_t tx_generation;
        rkl_store_gate *gate; /* borrowed; NULL once passed */
        void (*checkpoint_wanted)(void *userdata);
        void *checkpoint_userdata;
};

static int wal_grown(void *userdata, sqlite3 *db, const char *name, int frames)
{
        rkl_store *s = userdata;
        /* Ten times past the asking point the owner is not keeping up (blocked, or always
         * behind a reader): copy here rather than let the WAL grow without bound. */
        if (frames >= 10 * RKL_STORE_CHECKPOINT_FRAMES)
                (void)sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
        else if (frames >= RKL_STORE_CHECKPOINT_FRAMES)
                s->checkpoint_wanted(s->checkpoint_userdata);
        return SQLITE_OK;
}

struct rkl_store_gate {
        rkl_latch open;
        int r;           /* set before the latch opens */
        rkl_error error; /* when r < 0 */
};

rkl_store_gate *rkl_store_gate_new(void)
{
        rkl_store_gate *g = rkl_xnew0(rkl_store_gate, 1);
        rkl_latch_init(&g->open);
        g->error = (rkl_error)RKL_ERROR_INIT;
        return g;
}

void rkl_store_gate_open(rkl_store_gate *g, int r, const rkl_error *err)
{
        g->r = r;
        if (r < 0)
                rkl_error_set(&g->error, r, "%s", err && !isempty(err->msg) ? err->msg : "");
        rkl_latch_open(&g->open);
}

rkl_store_gate *rkl_store_gate_free(rkl_store_gate *g)
{
        if (!g)
                return NULL;
        rkl_latch_destroy(&g->open);
        free(g);
        return NULL;
}

/* Waits for the gate, then passes it for good or fails like it did. */
static int gate_pass(rkl_store *s, rkl_error *reterr)
{
        if (!s->gate)
                return 0;
        while (!rkl_latch_wait(&s->gate->open, 3600 * USEC_PER_SEC))
                ;
        if (s->gate->r < 0)
                return rkl_error_set(reterr, s->gate->r, "%s", s->gate->error.msg);
        s->gate = NULL;
        return 0;
}

int rkl_store_wait_writable(rkl_store *s, rkl_error *reterr)
{
        return gate_pass(s, reterr);
}

/* SQLite → -errno, here and nowhere else (STYLE rule 8). */
static int errno_from_sqlite(int rc)
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

/* Call right after the failing sqlite3_* call: sqlite3_errmsg() describes the last one. */
static int sql_error(rkl_store *s, int rc, const char *what, rkl_error *reterr)
{
        return rkl_error_set(reterr, errno_from_sqlite(rc), "%s: %s", what,
                             s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
}

/* Resets a cached statement when the scope that used it ends. The statement is borrowed
 * from the cache: this does not free it. */
static void stmt_resetp(sqlite3_stmt **st)
{
        if (*st) {
                (void)sqlite3_reset(*st);
                (void)sqlite3_clear_bindings(*st);
        }
}
#define _cleanup_reset_ _cleanup_(stmt_resetp)

static int use(rkl_store *s, stmt_id id, sqlite3_stmt **ret, rkl_error *reterr)
{
        assert(id < _STMT_MAX);
        if (!s->stmts[id]) {
                int rc = sqlite3_prepare_v3(s->db, stmt_sql[id], -1, SQLITE_PREPARE_PERSISTENT,
                                            &s->stmts[id], NULL);
                if (rc != SQLITE_OK)
                        return sql_error(s, rc, "prepare", reterr);
        }
        *ret = s->stmts[id];
        return 0;
}

/* Binding: strings are bound SQLITE_STATIC (the caller's memory outlives the step), NULL
 * as SQL NULL. Bind errors are programming errors or OOM. */
static void bind_text(sqlite3_stmt *st, int i, const char *v)
{
        int rc = v ? sqlite3_bind_text(st, i, v, -1, SQLITE_STATIC) : sqlite3_bind_null(st, i);
        if (rc == SQLITE_NOMEM)
                rkl_oom();
        assert(rc == SQLITE_OK);
}

static void bind_int(sqlite3_stmt *st, int i, int64_t v)
{
        int rc = sqlite3_bind_int64(st, i, v);
        assert(rc == SQLITE_OK);
        (void)rc;
}

/* 0 means "unknown" in the C structs and NULL in the tables. */
static void bind_int_or_null(sqlite3_stmt *st, int i, int64_t v)
{
        int rc = v ? sqlite3_bind_int64(st, i, v) : sqlite3_bind_null(st, i);
        assert(rc == SQLITE_OK);
        (void)rc;
}

/* Steps a statement that returns no rows (or whose rows are not wanted) to its end. */
static int step_done(rkl_store *s, sqlite3_stmt *st, const char *what, rkl_error *reterr)
{
        int rc;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW)
                ;
        if (rc != SQLITE_DONE) {
                int r = sql_error(s, rc, what, reterr);
                (void)sqlite3_reset(st);
                return r;
        }
        (void)sqlite3_reset(st);
        return 0;
}

/* Steps once: 1 if a row is there, 0 at the end. */
static int step_row(rkl_store *s, sqlite3_stmt *st, const char *what, rkl_error *reterr)
{
        int rc = sqlite3_step(st);
        if (rc == SQLITE_ROW)
                return 1;
        if (rc == SQLITE_DONE)
                return 0;
        return sql_error(s, rc, what, reterr);
}

static int run(rkl_store *s, stmt_id id, rkl_error *reterr)
{
        sqlite3_stmt *st;
        int r = use(s, id, &st, reterr);
        if (r < 0)
                return r;
        return step_done(s, st, stmt_sql[id], reterr);
}

static char *column_strdup(sqlite3_stmt *st, int i)
{
        /* Borrowed from the statement (STYLE rule 9): copy before the next step. */
        const unsigned char *t = sqlite3_column_text(st, i);
        if (!t && sqlite3_column_type(st, i) != SQLITE_NULL)
                rkl_oom();
        return rkl_xstrdup((const char *)t);
}

/* Transactions. A scope that begins one holds a pointer to the store in tx; leaving the
 * scope without tx_commit() rolls back, so no early return can commit half a change. */

static void tx_abortp(rkl_store **tx)
{
        if (!*tx)
                return;
        (*tx)->tx_generation = 0;
        /* A failed ROLLBACK (e.g. SQLite already rolled back after an I/O error) leaves no
         * transaction open either. */
        (void)run(*tx, STMT_ROLLBACK, NULL);
}
#define _cleanup_tx_ _cleanup_(tx_abortp)

/* BEGIN IMMEDIATE, and bump the generation: every write transaction counts as a change. */
static int tx_begin_write(rkl_store *s, rkl_store **tx, rkl_error *reterr)
{
        _cleanup_reset_ sqlite3_stmt *st = NULL;
        int r;

        assert(!*tx);
        r = gate_pass(s, reterr);
        if (r < 0)
                return r;
        r = run(s, STMT_BEGIN_WRITE, reterr);
        if (r < 0)
                return rkl_error_prefix(reterr, "begin");
        *tx = s;
        r = use(s, STMT_GENERATION_BUMP, &st, reterr);
        if (r < 0)
                return r;
        r = step_row(s, st, "bump generation", reterr);
        if (r < 0)
                return r;
        if (r == 0)
                return rkl_error_set(reterr, -EUCLEAN, "bump generation: meta row missing");
        s->tx_generation = (uint64_t)sqlite3_column_int64(st, 0);
        return 0;
}

/* A deferred read transaction: one snapshot across the statements of a get or list. */
static int tx_begin_read(rkl_store *s, rkl_store **tx, rkl_error *reterr)
{
        assert(!*tx);
        int r = run(s, STMT_BEGIN_READ, reterr);
        if (r < 0)
                return rkl_error_prefix(reterr, "begin");
        *tx = s;
        return 0;
}

static int tx_commit(rkl_store **tx, rkl_error *reterr)
{
        rkl_store *s = *tx;
        int r = run(s, STMT_COMMIT, reterr);
        if (r < 0)
                return rkl_error_prefix(reterr, "commit"); /* tx_abortp rolls back */
        s->tx_generation = 0;
        *tx = NULL;
        return 0;
}

/* Validation: the store refuses what it could not give back intact or what breaks the
 * schema's rules, with -EINVAL and the field's name. api/ validates first with the
 * protobuf names; this is the second line (model.h). */

static bool utf8_is_valid(const char *s)
{
        const unsigned char *p = (const unsigned char *)s;
        while (*p) {
                unsigned c = *p, n;
                uint32_t cp;
                if (c < 0x80) {
                        p++;
                        continue;
                } else if ((c & 0xe0) == 0xc0) {
                        n = 1;
                        cp = c & 0x1f;
                } else if ((c & 0xf0) == 0xe0) {
                        n = 2;
                        cp = c & 0x0f;
                } else if ((c & 0xf8) == 0xf0) {
                        n = 3;
                        cp = c & 0x07;
                } else
                        return false;
                for (unsigned i = 1; i <= n; i++) {
                        if ((p[i] & 0xc0) != 0x80)
                                return false;
                        cp = (cp << 6) | (p[i] & 0x3f);
                }
                /* No overlong forms, surrogates or code points past U+10FFFF. */
                if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
                    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
                        return false;
                p += n + 1;
        }
        return true;
}

static bool str_ok(const char *v, size_t max, bool required)
{
        if (!v)
                return !required;
        return (!required || *v) && strnlen(v, max + 1) <= max && utf8_is_valid(v);
}

static int check_str(const char *field, const char *v, size_t max, bool required, rkl_error *reterr)
{
        if (!v) {
                if (required)
                        return rkl_error_set(reterr, -EINVAL, "%s: missing", field);
                return 0;
        }
        if (required && !*v)
                return rkl_error_set(reterr, -EINVAL, "%s: empty", field);
        size_t n = strnlen(v, max + 1);
        if (n > max)
                return rkl_error_set(reterr, -EINVAL, "%s: longer than %zu bytes", field, max);
        if (!utf8_is_valid(v))
                return rkl_error_set(reterr, -EINVAL, "%s: not valid UTF-8", field);
        return 0;
}

static int check_id(const char *field, const char *id, rkl_error *reterr)
{
        if (!rkl_id_is_valid(id))
                return rkl_error_set(reterr, -EINVAL, "%s: not %d lowercase hex digits", field,
                                     RKL_ID_LEN);
        return 0;
}

static int check_strv(const char *field, char *const *l, size_t max_n, size_t max_len,
                      rkl_error *reterr)
{
        size_t n = rkl_strv_length(l);
        if (n > max_n)
                return rkl_error_set(reterr, -EINVAL, "%s: more than %zu entries", field, max_n);
        for (size_t i = 0; i < n; i++) {
                char name[64];
                if (str_ok(l[i], max_len, false))
                        continue; /* names are made for messages only: lists are long */
                (void)snprintf(name, sizeof(name), "%s[%zu]", field, i);
                return check_str(name, l[i], max_len, false, reterr);
        }
        return 0;
}

static int check_kvs(const char *field, const rkl_kvs *l, size_t max_n, size_t max_key,
                     size_t max_value, bool unique, rkl_error *reterr)
{
        if (l->n > max_n)
                return rkl_error_set(reterr, -EINVAL, "%s: more than %zu entries", field, max_n);
        if (l->n > 0 && !l->items)
                return rkl_error_set(reterr, -EINVAL, "%s: entries missing", field);
        for (size_t i = 0; i < l->n; i++) {
                char name[64];
                if (!str_ok(l->items[i].key, max_key, true)) {
                        (void)snprintf(name, sizeof(name), "%s[%zu].key", field, i);
                        return check_str(name, l->items[i].key, max_key, true, reterr);
                }
                if (!l->items[i].value || !str_ok(l->items[i].value, max_value, false)) {
                        (void)snprintf(name, sizeof(name), "%s['%.20s'].value", field,
                                       l->items[i].key);
                        if (!l->items[i].value)
                                return rkl_error_set(reterr, -EINVAL, "%s: missing", name);
                        return check_str(name, l->items[i].value, max_value, false, reterr);
                }
                for (size_t j = 0; unique && j < i; j++)
                        if (streq(l->items[j].key, l->items[i].key))
                                return rkl_error_set(reterr, -EINVAL, "%s: duplicate key '%s'",
                                                     field, l->items[i].key);
        }
        return 0;
}

static int check_labels(const rkl_kvs *labels, const rkl_kvs *annotations, rkl_error *reterr)
{
        int r = check_kvs("labels", labels, RKL_MAX_KV, RKL_MAX_KEY, RKL_MAX_VALUE, true, reterr);
        if (r < 0)
                return r;
        return check_kvs("annotations", annotations, RKL_MAX_KV, RKL_MAX_KEY, RKL_MAX_VALUE, true,
                         reterr);
}

static int check_pod_spec(const rkl_pod_spec *p, rkl_error *reterr)
{
        int r;
        if (!p)
                return rkl_error_set(reterr, -EINVAL, "config: missing");
        if ((r = check_str("metadata.name", p->name, RKL_MAX_NAME, true, reterr)) < 0 ||
            (r = check_str("metadata.namespace", p->namespace, RKL_MAX_NAME, true, reterr)) < 0 ||
            (r = check_str("metadata.uid", p->uid, RKL_MAX_NAME, true, reterr)) < 0 ||
            (r = check_str("hostname", p->hostname, RKL_MAX_NAME, false, reterr)) < 0 ||
            (r = check_str("log_directory", p->log_directory, RKL_MAX_PATH, false, reterr)) < 0 ||
            (r = check_strv("dns_config.servers", p->dns_servers, RKL_MAX_DNS, RKL_MAX_NAME,
                            reterr)) < 0 ||
            (r = check_strv("dns_config.searches", p->dns_searches, RKL_MAX_DNS, RKL_MAX_NAME,
                            reterr)) < 0 ||
            (r = check_strv("dns_config.options", p->dns_options, RKL_MAX_DNS, RKL_MAX_NAME,
                            reterr)) < 0 ||
            (r = check_labels(&p->labels, &p->annotations, reterr)) < 0 ||
            (r = check_str("cgroup_parent", p->cgroup_parent, RKL_MAX_PATH, false, reterr)) < 0 ||
            (r = check_kvs("sysctls", &p->sysctls, RKL_MAX_KV, RKL_MAX_NAME, RKL_MAX_STRING, true,
                           reterr)) < 0 ||
            (r = check_str("runtime_handler", p->runtime_handler, RKL_MAX_NAME, false, reterr)) < 0)
                return r;
        if (p->n_ports > RKL_MAX_PORTS)
                return rkl_error_set(reterr, -EINVAL, "port_mappings: more than %d entries",
                                     RKL_MAX_PORTS);
        if (p->n_ports > 0 && !p->ports)
                return rkl_error_set(reterr, -EINVAL, "port_mappings: entries missing");
        for (size_t i = 0; i < p->n_ports; i++) {
                const rkl_port_mapping *m = &p->ports[i];
                if ((unsigned)m->protocol >= _RKL_PROTOCOL_MAX)
                        return rkl_error_set(reterr, -EINVAL,
                                             "port_mappings[%zu].protocol: unknown", i);
                if (m->container_port < 0 || m->container_port > 65535 || m->host_port < 0 ||
                    m->host_port > 65535)
                        return rkl_error_set(reterr, -EINVAL,
                                             "port_mappings[%zu]: port out of range", i);
                r = check_str("port_mappings.host_ip", m->host_ip, RKL_MAX_NAME, false, reterr);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int check_container_spec(const rkl_container_spec *c, rkl_error *reterr)
{
        int r;
        if (!c)
                return rkl_error_set(reterr, -EINVAL, "config: missing");
        if ((r = check_str("metadata.name", c->name, RKL_MAX_NAME, true, reterr)) < 0 ||
            (r = check_str("image", c->image, RKL_MAX_STRING, true, reterr)) < 0 ||
            (r = check_strv("command", c->command, RKL_MAX_ARGS, RKL_MAX_ARG, reterr)) < 0 ||
            (r = check_strv("args", c->args, RKL_MAX_ARGS, RKL_MAX_ARG, reterr)) < 0 ||
            (r = check_str("working_dir", c->working_dir, RKL_MAX_PATH, false, reterr)) < 0 ||
            (r = check_kvs("envs", &c->envs, RKL_MAX_ENVS, RKL_MAX_STRING, RKL_MAX_ARG, false,
                           reterr)) < 0 ||
            (r = check_labels(&c->labels, &c->annotations, reterr)) < 0 ||
            (r = check_str("log_path", c->log_path, RKL_MAX_PATH, false, reterr)) < 0 ||
            (r = check_str("run_as_username", c->run_as_username, RKL_MAX_NAME, false, reterr)) <
                0 ||
            (r = check_strv("capabilities.add", c->caps_add, RKL_MAX_KV, RKL_MAX_NAME, reterr)) <
                0 ||
            (r = check_strv("capabilities.drop", c->caps_drop, RKL_MAX_KV, RKL_MAX_NAME, reterr)) <
                0 ||
            (r = check_str("seccomp.localhost_ref", c->seccomp_localhost_ref, RKL_MAX_PATH, false,
                           reterr)) < 0)
                return r;
        if ((unsigned)c->seccomp >= _RKL_SECCOMP_MAX)
                return rkl_error_set(reterr, -EINVAL, "seccomp.profile_type: unknown");
        if (c->n_mounts > RKL_MAX_MOUNTS)
                return rkl_error_set(reterr, -EINVAL, "mounts: more than %d entries",
                                     RKL_MAX_MOUNTS);
        if (c->n_mounts > 0 && !c->mounts)
                return rkl_error_set(reterr, -EINVAL, "mounts: entries missing");
        for (size_t i = 0; i < c->n_mounts; i++) {
                const rkl_mount *m = &c->mounts[i];
                char name[64];
                (void)snprintf(name, sizeof(name), "mounts[%zu].container_path", i);
                if ((r = check_str(name, m->container_path, RKL_MAX_PATH, true, reterr)) < 0)
                        return r;
                (void)snprintf(name, sizeof(name), "mounts[%zu].host_path", i);
                if ((r = check_str(name, m->host_path, RKL_MAX_PATH, false, reterr)) < 0)
                        return r;
                if ((unsigned)m->propagation >= _RKL_PROPAGATION_MAX)
                        return rkl_error_set(reterr, -EINVAL, "mounts[%zu].propagation: unknown",
                                             i);
        }
        if (c->n_supplemental_groups > RKL_MAX_KV)
                return rkl_error_set(reterr, -EINVAL, "supplemental_groups: more than %d entries",
                                     RKL_MAX_KV);
        if (c->n_supplemental_groups > 0 && !c->supplemental_groups)
                return rkl_error_set(reterr, -EINVAL, "supplemental_groups: entries missing");
        return 0;
}

/* rkt pod UUIDs as rkt prints them: 8-4-4-4-12 lowercase hex. */
static int check_rkt_uuid(const char *uuid, rkl_error *reterr)
{
        size_t i = 0;
        for (; uuid[i]; i++) {
                bool dash = i == 8 || i == 13 || i == 18 || i == 23;
                char c = uuid[i];
                if (i >= RKT_UUID_LEN ||
                    (dash ? c != '-' : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))))
                        break;
        }
        if (i != RKT_UUID_LEN || uuid[i])
                return rkl_error_set(reterr, -EINVAL, "rkt_uuid: not a lowercase rkt pod UUID");
        return 0;
}

static int check_unit_name(const char *unit, rkl_error *reterr)
{
        size_t n = strnlen(unit, UNIT_NAME_MAX + 1);
        if (n == 0 || n > UNIT_NAME_MAX || unit[0] == '-' ||
            strspn(unit, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789:_.@\\-") !=
                n)
                return rkl_error_set(reterr, -EINVAL, "unit_name: not a systemd unit name");
        return 0;
}

/* ACName (appc spec): [a-z0-9]+(-[a-z0-9]+)*. */
static int check_app_name(const char *app, rkl_error *reterr)
{
        size_t n = app ? strnlen(app, RKL_MAX_NAME + 1) : 0;
        bool ok = n > 0 && n <= RKL_MAX_NAME && app[0] != '-' && app[n - 1] != '-' &&
                  !strstr(app, "--") && strspn(app, "abcdefghijklmnopqrstuvwxyz0123456789-") == n;
        if (!ok)
                return rkl_error_set(reterr, -EINVAL, "app_name: not an ACName");
        return 0;
}

static int check_time(const char *field, int64_t t, rkl_error *reterr)
{
        if (t < 0)
                return rkl_error_set(reterr, -EINVAL, "%s: negative", field);
        return 0;
}

/* Free text from the reconciler (errors, reasons, messages) may carry a tool's raw output:
 * it is cut to MAX_TEXT and invalid UTF-8 becomes '?', because refusing to record a failure
 * would only hide it. Returns NULL for NULL. */
static char *sanitize_text(const char *s)
{
        if (!s)
                return NULL;
        size_t n = strnlen(s, MAX_TEXT);
        char *t = rkl_xstrndup(s, n);
        /* Walk character by character; a byte that starts no valid sequence is replaced. */
        for (size_t i = 0; i < n;) {
                unsigned char c = (unsigned char)t[i];
                size_t len = c < 0x80             ? 1
                             : (c & 0xe0) == 0xc0 ? 2
                             : (c & 0xf0) == 0xe0 ? 3
                             : (c & 0xf8) == 0xf0 ? 4
                                                  : 0;
                char buf[5] = {0};
                if (len > 0 && i + len <= n) {
                        memcpy(buf, t + i, len);
                        if (utf8_is_valid(buf)) {
                                i += len;
                                continue;
                        }
                }
                t[i++] = '?';
        }
        return t;
}

/* Open and migrate. */

static int exec_sql(rkl_store *s, const char *sql, rkl_error *reterr)
{
        int rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);
        if (rc != SQLITE_OK) {
                /* A migration is a whole file: name its first line only. */
                int n = (int)strcspn(sql, "\n");
                return rkl_error_set(reterr, errno_from_sqlite(rc), "%.*s%s: %s", n > 60 ? 60 : n,
                                     sql, n > 60 || sql[n] ? "..." : "", sqlite3_errmsg(s->db));
        }
        return 0;
}

/* Runs a statement returning one value (a PRAGMA) and returns its integer or text. */
static int query_int(rkl_store *s, const char *sql, int64_t *ret, rkl_error *reterr)
{
        sqlite3_stmt *st = NULL;
        int rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
        if (rc != SQLITE_OK)
                return sql_error(s, rc, sql, reterr);
        rc = sqlite3_step(st);
        if (rc != SQLITE_ROW) {
                int r = rc == SQLITE_DONE ? rkl_error_set(reterr, -EIO, "%s: no result", sql)
                                          : sql_error(s, rc, sql, reterr);
                sqlite3_finalize(st);
                return r;
        }
        *ret = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        return 0;
}

static int user_version(rkl_store *s, unsigned *ret, rkl_error *reterr)
{
        int64_t v;
        int r = query_int(s, "PRAGMA user_version", &v, reterr);
        if (r < 0)
                return r;
        if (v < 0)
                return rkl_error_set(reterr, -EUCLEAN, "user_version %" PRId64 " is negative", v);
        *ret = (unsigned)v;
        return 0;
}

static int refuse_newer(unsigned have, unsigned latest, rkl_error *reterr)
{
        return rkl_error_set(reterr, -EPROTONOSUPPORT,
                             "database schema version %u is newer than this rktlet knows (%u): "
                             "it was written by a newer rktlet; refusing to open it rather than "
                             "risk damaging it",
                             have, latest);
}

/* Runs checks that return rows describing problems, and "ok" (or nothing) when fine. */
static int check_rows(rkl_store *s, const char *sql, bool ok_row, rkl_error *reterr)
{
        sqlite3_stmt *st = NULL;
        int rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
        if (rc != SQLITE_OK)
                return sql_error(s, rc, sql, reterr);
        int r = 0;
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
                const char *v = (const char *)sqlite3_column_text(st, 0);
                if (!ok_row || !v || !streq(v, "ok"))
                        r = rkl_error_set(reterr, -EUCLEAN, "%s: %s", sql, v ? v : "problem found");
        } else if (rc != SQLITE_DONE)
                r = sql_error(s, rc, sql, reterr);
        sqlite3_finalize(st);
        return r;
}

/* One migration in one IMMEDIATE transaction; the caller turned foreign keys off. */
static int migrate_one(rkl_store *s, const rkl_store__migration *m, unsigned latest,
                       rkl_error *reterr)
{
        _cleanup_tx_ rkl_store *tx = NULL;
        unsigned have = 0;
        char set[64];
        int r;

        /* Take the write lock before looking at the version: another connection may be
         * migrating this very file right now, and then it did the work. */
        if ((r = run(s, STMT_BEGIN_WRITE, reterr)) < 0)
                return r;
        tx = s;
        if ((r = user_version(s, &have, reterr)) < 0)
                return r;
        if (have > latest)
                return refuse_newer(have, latest, reterr);
        if (have >= m->version)
                return 0; /* tx rolls back: nothing was written */
        if ((r = exec_sql(s, m->sql, reterr)) < 0 ||
            (r = check_rows(s, "PRAGMA foreign_key_check", false, reterr)) < 0)
                return r;
        (void)snprintf(set, sizeof(set), "PRAGMA user_version = %u", m->version);
        if ((r = exec_sql(s, set, reterr)) < 0)
                return r;
        return tx_commit(&tx, reterr);
}

int rkl_store__migrate(rkl_store *s, const rkl_store__migration *migrations, size_t n,
                       rkl_error *reterr)
{
        unsigned latest = n ? migrations[n - 1].version : 0, have = 0;
        int r = user_version(s, &have, reterr);
        if (r < 0)
                return r;
        if (have > latest)
                return refuse_newer(have, latest, reterr);

        for (size_t i = 0; i < n; i++) {
                const rkl_store__migration *m = &migrations[i];
                assert(m->version == i + 1);
                if (m->version <= have)
                        continue;
                /* SQLite's procedure for schema changes: foreign keys off (a no-op inside a
                 * transaction, hence out here), change, foreign_key_check, commit, back on. */
                r = exec_sql(s, "PRAGMA foreign_keys = OFF", reterr);
                if (r >= 0)
                        r = migrate_one(s, m, latest, reterr);
                (void)exec_sql(s, "PRAGMA foreign_keys = ON", NULL);
                if (r < 0)
                        return rkl_error_prefix(reterr, "migration %s", m->name);
        }
        return exec_sql(s, "PRAGMA foreign_keys = ON", reterr);
}

/* Creates the file 0600 ourselves (SQLite would use 0644 less the umask) and puts right the
 * mode of an existing database, WAL and shared-memory file: they hold every pod's config.
 * Also refuses, before SQLite touches it, a non-empty file that is not a database.
 *
 * Only the first connection of a process may do this: closing any descriptor of a file
 * drops all of the process's POSIX locks on it, SQLite's included, and a process whose
 * lock on -shm is gone looks absent to other processes, one of which (an operator's
 * sqlite3 -readonly) may then rebuild the shared memory under the daemon's mapping, which
 * dies of SIGBUS. The side files are therefore only ever touched by path. */
static int prepare_file(const char *path, rkl_error *reterr)
{
        static const char magic[16] = "SQLite format 3";
        _cleanup_close_ int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOCTTY, 0600);
        struct stat st;
        if (fd < 0)
                return rkl_error_set(reterr, -errno, "open '%s': %m", path);
        if (fstat(fd, &st) < 0)
                return rkl_error_set(reterr, -errno, "stat '%s': %m", path);
        if (!S_ISREG(st.st_mode))
                return rkl_error_set(reterr, -EINVAL, "'%s' is not a regular file", path);
        if (st.st_size > 0) {
                char head[sizeof(magic)];
                ssize_t n = pread(fd, head, sizeof(head), 0);
                if (n < 0)
                        return rkl_error_set(reterr, -errno, "read '%s': %m", path);
                if ((size_t)n < sizeof(head) || memcmp(head, magic, sizeof(magic)) != 0)
                        return rkl_error_set(reterr, -EUCLEAN,
                                             "'%s' is not an SQLite database; refusing to use it "
                                             "(it was left untouched)",
                                             path);
        }
        /* Only now: a file that is not ours keeps even its mode. */
        if ((st.st_mode & 07777) != 0600 && fchmod(fd, 0600) < 0)
                return rkl_error_set(reterr, -errno, "chmod 0600 '%s': %m", path);
        for (size_t i = 0; i < 2; i++) {
                _cleanup_free_ char *side = rkl_xasprintf("%s%s", path, i ? "-shm" : "-wal");
                if (lstat(side, &st) < 0) {
                        if (errno == ENOENT)
                                continue;
                        return rkl_error_set(reterr, -errno, "stat '%s': %m", side);
                }
                if (S_ISREG(st.st_mode) && (st.st_mode & 07777) != 0600 && chmod(side, 0600) < 0)
                        return rkl_error_set(reterr, -errno, "chmod 0600 '%s': %m", side);
        }
        return 0;
}

int rkl_store_open(const char *path, const rkl_store_options *opts, rkl_store **ret,
                   rkl_error *reterr)
{
        rkl_store_options o = opts ? *opts : (rkl_store_options){0};
        unsigned latest = rkl_store_schema_version_latest(), have = 0;
        int r, rc;

        if (isempty(path))
                return rkl_error_set(reterr, -EINVAL, "store path: empty");
        bool memory = streq(path, ":memory:");
        if (!memory && !o.skip_check) {
                r = prepare_file(path, reterr);
                if (r < 0)
                        return r;
        }

        _cleanup_(rkl_store_closep) rkl_store *s = rkl_xnew0(rkl_store, 1);
        rc = sqlite3_open_v2(path, &s->db,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX |
                                 SQLITE_OPEN_EXRESCODE,
                             NULL);
        if (rc != SQLITE_OK) {
                if (!s->db)
                        rkl_oom();
                r = sql_error(s, rc, "open", reterr);
                return rkl_error_prefix(reterr, "'%s'", path);
        }
        (void)sqlite3_extended_result_codes(s->db, 1);
        s->gate = o.write_gate;
        if (o.checkpoint_wanted) {
                /* Replaces SQLite's autocheckpoint hook on this connection. */
                s->checkpoint_wanted = o.checkpoint_wanted;
                s->checkpoint_userdata = o.checkpoint_userdata;
                (void)sqlite3_wal_hook(s->db, wal_grown, s);
        } else
                (void)sqlite3_wal_autocheckpoint(s->db, RKL_STORE_CHECKPOINT_FRAMES);
        (void)sqlite3_busy_timeout(s->db, o.busy_timeout_ms ? (int)o.busy_timeout_ms
                                                            : DEFAULT_BUSY_TIMEOUT_MS);
        /* Hardening: no writable_schema tricks, no double-quoted string literals. The
         * schema stays trusted: SQLite 3.40 counts json_valid(), which the CHECKs on the
         * config columns use, as unsafe, and the file is root's own 0600 file anyway. */
        (void)sqlite3_db_config(s->db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
        (void)sqlite3_db_config(s->db, SQLITE_DBCONFIG_DQS_DML, 0, NULL);
        (void)sqlite3_db_config(s->db, SQLITE_DBCONFIG_DQS_DDL, 0, NULL);

        /* Read before anything writes (journal_mode writes the header): a newer schema or
         * a damaged file is refused untouched. */
        r = user_version(s, &have, reterr);
        if (r < 0)
                return rkl_error_prefix(reterr, "open '%s'", path);
        if (have > latest) {
                r = refuse_newer(have, latest, reterr);
                return rkl_error_prefix(reterr, "'%s'", path);
        }
        if (!o.skip_check && (!o.defer_check || have < latest)) {
                r = rkl_store_quick_check(s, reterr);
                if (r < 0)
                        return r;
        }

        int64_t dummy;
        char sql[64];
        if (!memory) {
                /* WAL: readers (operators' sqlite3 -readonly, other threads) never block the
                 * writer, and a commit is one append. */
                sqlite3_stmt *st = NULL;
                rc = sqlite3_prepare_v2(s->db, "PRAGMA journal_mode = WAL", -1, &st, NULL);
                if (rc == SQLITE_OK)
                        rc = sqlite3_step(st);
                bool wal =
                    rc == SQLITE_ROW && streq_ptr((const char *)sqlite3_column_text(st, 0), "wal");
                r = rc == SQLITE_ROW ? 0 : sql_error(s, rc, "PRAGMA journal_mode = WAL", reterr);
                sqlite3_finalize(st);
                if (r < 0)
                        return rkl_error_prefix(reterr, "open '%s'", path);
                if (!wal)
                        return rkl_error_set(reterr, -EIO, "open '%s': cannot enable WAL mode",
                                             path);
        }
        (void)snprintf(sql, sizeof(sql), "PRAGMA journal_size_limit = %d", WAL_SIZE_LIMIT);
        if ((r = query_int(s, sql, &dummy, reterr)) < 0 ||
            (r = exec_sql(s,
                          o.sync_full ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL",
                          reterr)) < 0)
                return rkl_error_prefix(reterr, "open '%s'", path);

        r = rkl_store__migrate(s, rkl_store__migrations, rkl_store__n_migrations, reterr);
        if (r < 0)
                return rkl_error_prefix(reterr, "open '%s'", path);

        *ret = TAKE_PTR(s);
        return 0;
}

rkl_store *rkl_store_close(rkl_store *s)
{
        if (!s)
                return NULL;
        for (size_t i = 0; i < _STMT_MAX; i++)
                sqlite3_finalize(s->stmts[i]);
        /* The last connection to close checkpoints the WAL into the database file. */
        (void)sqlite3_close_v2(s->db);
        free(s);
        return NULL;
}

unsigned rkl_store_schema_version_latest(void)
{
        return rkl_store__n_migrations ? rkl_store__migrations[rkl_store__n_migrations - 1].version
                                       : 0;
}

int rkl_store_schema_version(rkl_store *s, unsigned *ret, rkl_error *reterr)
{
        return user_version(s, ret, reterr);
}

static int read_u64(rkl_store *s, stmt_id id, uint64_t *ret, rkl_error *reterr)
{
        _cleanup_reset_ sqlite3_stmt *st = NULL;
        int r = use(s, id, &st, reterr);
        if (r < 0)
                return r;
        r = step_row(s, st, stmt_sql[id], reterr);
        if (r < 0)
                return r;
        if (r == 0)
                return rkl_error_set(reterr, -EUCLEAN, "%s: no row", stmt_sql[id]);
        *ret = (uint64_t)sqlite3_column_int64(st, 0);
        return 0;
}

int rkl_store_generation(rkl_store *s, uint64_t *ret, rkl_error *reterr)
{
        return read_u64(s, STMT_GENERATION_GET, ret, reterr);
}

int rkl_store_data_version(rkl_store *s, uint64_t *ret, rkl_error *reterr)
{
        return read_u64(s, STMT_DATA_VERSION, ret, reterr);
}

int rkl_store_checkpoint(rkl_store *s, rkl_error *reterr)
{
        int rc = sqlite3_wal_checkpoint_v2(s->db, "main", SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
        /* BUSY: another checkpoint is running; it does the work. */
        if (rc != SQLITE_OK && rc != SQLITE_BUSY)
                return sql_error(s, rc, "checkpoint", reterr);
        return 0;
}

int rkl_store_quick_check(rkl_store *s, rkl_error *reterr)
{
        int r = check_rows(s, "PRAGMA quick_check", true, reterr);
        if (r < 0)
                return rkl_error_prefix(reterr, "'%s' is damaged; refusing to use it",
                                        sqlite3_db_filename(s->db, "main"));
        return 0;
}

int rkl_store_integrity_check(rkl_store *s, rkl_error *reterr)
{
        int r = check_rows(s, "PRAGMA integrity_check", true, reterr);
        if (r < 0)
                return r;
        return check_rows(s, "PRAGMA foreign_key_check", false, reterr);
}

/* Records. */

void rkl_pod_observed_done(rkl_pod_observed *o)
{
        if (!o)
                return;
        free(o->ip);
        free(o->reason);
        free(o->message);
        *o = (rkl_pod_observed){0};
}

void rkl_container_observed_done(rkl_container_observed *o)
{
        if (!o)
                return;
        free(o->reason);
        free(o->message);
        free(o->image_ref);
        *o = (rkl_container_observed){0};
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

/* The labels and annotations columns of a row (read_pod_row() and read_ctr_row()). */
static int read_kvs(sqlite3_stmt *st, int col, rkl_kvs *labels, rkl_kvs *annotations,
                    rkl_error *reterr)
{
        int r = rkl_store__kvs_from_json((const char *)sqlite3_column_text(st, col), "labels",
                                         labels, reterr);
        if (r < 0)
                return r;
        return rkl_store__kvs_from_json((const char *)sqlite3_column_text(st, col + 1),
                                        "annotations", annotations, reterr);
}

static int copy_id(sqlite3_stmt *st, int col, char ret[static RKL_ID_LEN + 1], rkl_error *reterr)
{
        const char *id = (const char *)sqlite3_column_text(st, col);
        if (!rkl_id_is_valid(id))
                return rkl_error_set(reterr, -EUCLEAN, "bad ID in the database");
        memcpy(ret, id, RKL_ID_LEN + 1);
        return 0;
}

static int64_t col_i64(sqlite3_stmt *st, int i)
{
        return sqlite3_column_int64(st, i); /* NULL reads as 0, which is "unknown" */
}

static int read_pod_row(sqlite3_stmt *st, rkl_pod_record **ret, rkl_error *reterr)
{
        _cleanup_(rkl_pod_record_freep) rkl_pod_record *p = rkl_xnew0(rkl_pod_record, 1);
        int r = copy_id(st, 0, p->id, reterr);
        if (r < 0)
                return r;
        p->spec.name = column_strdup(st, 1);
        p->spec.namespace = column_strdup(st, 2);
        p->spec.uid = column_strdup(st, 3);
        p->spec.attempt = (uint32_t)col_i64(st, 4);
        r = rkl_store__pod_config_from_json((const char *)sqlite3_column_text(st, 5), &p->spec,
                                            reterr);
        if (r < 0)
                return rkl_error_prefix(reterr, "sandbox '%s'", p->id);
        p->desired = rkl_pod_desired_from_string((const char *)sqlite3_column_text(st, 6));
        p->observed.phase = rkl_pod_phase_from_string((const char *)sqlite3_column_text(st, 7));
        if ((int)p->desired < 0 || (int)p->observed.phase < 0)
                return rkl_error_set(reterr, -EUCLEAN, "sandbox '%s': unknown state", p->id);
        p->observed.pid = col_i64(st, 8);
        p->observed.ip = column_strdup(st, 9);
        p->observed.created_ns = col_i64(st, 10);
        p->observed.started_ns = col_i64(st, 11);
        p->observed.finished_ns = col_i64(st, 12);
        p->observed.reason = column_strdup(st, 13);
        p->observed.message = column_strdup(st, 14);
        p->rkt_uuid = column_strdup(st, 15);
        p->unit_name = column_strdup(st, 16);
        p->book.version = (uint64_t)col_i64(st, 17);
        p->book.attempts = (uint32_t)col_i64(st, 18);
        p->book.last_error = column_strdup(st, 19);
        p->book.next_retry_ns = col_i64(st, 20);
        p->book.accepted_ns = col_i64(st, 21);
        r = read_kvs(st, 22, &p->spec.labels, &p->spec.annotations, reterr);
        if (r < 0)
                return rkl_error_prefix(reterr, "sandbox '%s'", p->id);
        *ret = TAKE_PTR(p);
        return 0;
}

static int read_ctr_row(sqlite3_stmt *st, rkl_container_record **ret, rkl_error *reterr)
{
        _cleanup_(rkl_container_record_freep) rkl_container_record *c =
            rkl_xnew0(rkl_container_record, 1);
        int r;
        if ((r = copy_id(st, 0, c->id, reterr)) < 0 ||
            (r = copy_id(st, 1, c->sandbox_id, reterr)) < 0)
                return r;
        c->spec.name = column_strdup(st, 2);
        c->spec.attempt = (uint32_t)col_i64(st, 3);
        c->spec.image = column_strdup(st, 4);
        r = rkl_store__container_config_from_json((const char *)sqlite3_column_text(st, 5),
                                                  &c->spec, reterr);
        if (r < 0)
                return rkl_error_prefix(reterr, "container '%s'", c->id);
        c->app_name = column_strdup(st, 6);
        c->desired = rkl_ctr_desired_from_string((const char *)sqlite3_column_text(st, 7));
        c->observed.phase = rkl_ctr_phase_from_string((const char *)sqlite3_column_text(st, 8));
        if ((int)c->desired < 0 || (int)c->observed.phase < 0)
                return rkl_error_set(reterr, -EUCLEAN, "container '%s': unknown state", c->id);
        c->observed.pid = col_i64(st, 9);
        c->observed.has_exit_code = sqlite3_column_type(st, 10) != SQLITE_NULL;
        c->observed.exit_code = (int32_t)col_i64(st, 10);
        c->observed.created_ns = col_i64(st, 11);
        c->observed.started_ns = col_i64(st, 12);
        c->observed.finished_ns = col_i64(st, 13);
        c->observed.reason = column_strdup(st, 14);
        c->observed.message = column_strdup(st, 15);
        c->observed.image_ref = column_strdup(st, 16);
        c->book.version = (uint64_t)col_i64(st, 17);
        c->book.attempts = (uint32_t)col_i64(st, 18);
        c->book.last_error = column_strdup(st, 19);
        c->book.next_retry_ns = col_i64(st, 20);
        c->book.accepted_ns = col_i64(st, 21);
        c->stop_deadline_ns = col_i64(st, 22);
        r = read_kvs(st, 23, &c->spec.labels, &c->spec.annotations, reterr);
        if (r < 0)
                return rkl_error_prefix(reterr, "container '%s'", c->id);
        *ret = TAKE_PTR(c);
        return 0;
}

/* True if every pair of the selector is among the labels. */
static bool labels_match(const rkl_kvs *labels, const rkl_kvs *selector)
{
        for (size_t i = 0; selector && i < selector->n; i++) {
                const char *v = rkl_kvs_get(labels, selector->items[i].key);
                if (!v || !streq(v, selector->items[i].value))
                        return false;
        }
        return true;
}

static int check_selector(const rkl_kvs *sel, rkl_error *reterr)
{
        if (!sel)
                return 0;
        return check_kvs("label_selector", sel, RKL_MAX_KV, RKL_MAX_KEY, RKL_MAX_VALUE, false,
                         reterr);
}

/* Steps stmt (selecting one object by ID) onto its row, in the transaction under way:
 * what a write hands back (ret != NULL) is exactly what it committed, with no second
 * transaction to read it. -ENOENT when there is none. */
static int select_one(rkl_store *s, stmt_id stmt, const char *kind, const char *id,
                      sqlite3_stmt **ret, rkl_error *reterr)
{
        int r = use(s, stmt, ret, reterr);
        if (r < 0)
                return r;
        bind_text(*ret, 1, id);
        r = step_row(s, *ret, stmt_sql[stmt], reterr);
        if (r < 0)
                return r;
        if (r == 0)
                return rkl_error_set(reterr, -ENOENT, "%s '%s' not found", kind, id);
        return 0;
}

static int ctr_get(rkl_store *s, const char *ctr_id, rkl_container_record **ret, rkl_error *reterr)
{
        _cleanup_reset_ sqlite3_stmt *st = NULL;
        int r = select_one(s, STMT_CTR_SELECT, "container", ctr_id, &st, reterr);
        return r < 0 ? r : read_ctr_row(st, ret, reterr);
}

static int pod_get(rkl_store *s, const char *pod_id, rkl_pod_record **ret, rkl_error *reterr)
{
        _cleanup_reset_ sqlite3_stmt *st = NULL;
        int r = select_one(s, STMT_POD_SELECT, "sandbox", pod_id, &st, reterr);
        return r < 0 ? r : read_pod_row(st, ret, reterr);
}

/* Sandboxes. */

int rkl_store_pod_create(rkl_store *s, const char *pod_id, rkl_pod_spec *spec, rkl_pod_record **ret,
                         rkl_error *reterr)
{
        _cleanup_tx_ rkl_store *tx = NULL;
        _cleanup_reset_ sqlite3_stmt *st = NULL;
        int64_t accepted;
        int r;

        if ((r = check_id("pod_sandbox_id", pod_id, reterr)) < 0 ||
            (r = check_pod_spec(spec, reterr)) < 0)
                return r;
        _cleanup_free_ char *config = rkl_store__pod_config_to_json(spec),
                            *labels = rkl_store__kvs_to_json(&spec->labels),
                            *annotations = rkl_store__kvs_to_json(&spec->annotations);

        if ((r = tx_begin_write(s, &tx, reterr)) < 0 ||
            (r = use(s, STMT_POD_INSERT, &st, reterr)) < 0)
                return r;
        accepted = rkl_realtime_nsec(); /* in commit order: List sorts by it */
        bind_text(st, 1, pod_id);
        bind_text(st, 2, spec->name);
        bind_text(st, 3, spec->namespace);
        bind_text(st, 4, spec->uid);
        bind_int(st, 5, spec->attempt);
        bind_text(st, 6, config);
        bind_int(st, 7, (int64_t)s->tx_generation);
        bind_int(st, 8, accepted);
        bind_text(st, 9, labels);
        bind_text(st, 10, annotations);
        if ((r = step_done(s, st, "insert sandbox", reterr)) < 0)
                return rkl_error_prefix(reterr, "sandbox '%s'", pod_id);
        uint64_t version = s->tx_generation;
        if ((r = tx_commit(&tx, reterr)) < 0)
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

int rkl_store_pod_get(rkl_store *s, const char *pod_id, rkl_pod_record **ret, rkl_error *reterr)
{
        _cleanup_tx_ rkl_store *tx = NULL;
        rkl_pod_record *p = NULL;
        int r;
        if ((r = check_id("pod_sandbox_id", pod_id, reterr)) < 0 ||
            (r = tx_begin_read(s, &tx, reterr)) < 0 || (r = pod_get(s, pod_id, &p, reterr)) < 0)
                return r;
        if ((r = tx_commit(&tx, reterr)) < 0) {
                rkl_pod_record_free(p);
                return r;
        }
        *ret = p;
        return 0;
}

static void push_ptr(void ***a, size_t *n, void *p)
{
        *a = rkl_xrealloc(*a, (*n + 1) * sizeof(void *));
        (*a)[(*n)++] = p;
}

int rkl_store_pod_list(rkl_store *s, const rkl_pod_filter *f, rkl_pod_record ***ret, size_t *ret_n,
                       rkl_error *reterr)
{
        static const rkl_pod_filter all = {0};
        _cleanup_tx_ rkl_store *tx = NULL;
        _cleanup_reset_ sqlite3_stmt *st = NULL;
        rkl_pod_record **a = NULL;
        size_t n = 0;
        int r;

        if (!f)
                f = &all;
        if ((f->id && (r = check_id("filter.id", f->id, reterr)) < 0) ||
            (r = check_selector(f->label_selector, reterr)) < 0)
                return r;
        if ((r = tx_begin_read(s, &tx, reterr)) < 0)
                return r;
        /* Narrow with an index (the ID), filter the rest here: labels are not indexed. */
        if (f->id) {
                r = use(s, STMT_POD_SELECT, &st, reterr);
                if (r >= 0)
                        bind_text(st, 1, f->id);
        } else
                r = use(s, STMT_POD_SELECT_ALL, &st, reterr);
        if (r < 0)
                return r;
        while ((r = step_row(s, st, "select sandboxes", reterr)) > 0) {
                rkl_pod_record *p = NULL;
                r = read_pod_row(st, &p, reterr);
                if (r < 0)
                        break;
                if ((f->by_desired && p->desired != f->desired) ||
                    (f->by_phase && p->observed.phase != f->phase) ||
                    !labels_match(&p->spec.labels, f->label_selector)) {
                        rkl_pod_record_free(p);
                        continue;
                }
                push_ptr((void ***)&a, &n, p);
        }
        if (r >= 0)
                r = tx_commit(&tx, reterr);
        if (r < 0) {
                rkl_pod_record_array_free(a, n);
                return r;
        }
        *ret = a;
        *ret_n = n;
        return 0;
}

int rkl_store_pod_foreach(rkl_store *s, const rkl_pod_filter *filter, rkl_store_pod_cb cb,
                          void *userdata, rkl_error *reterr)
{
        rkl_pod_record **a = NULL;
        size_t n = 0;
        /* Read everything first: cb may write, which an open read statement would turn into
         * a read-to-write upgrade on the same connection. */
        int r = rkl_store_pod_list(s, filter, &a, &n, reterr);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n && r == 0; i++)
                r = cb(a[i], userdata);
        rkl_pod_record_array_free(a, n);
        return r;
}

/* Runs one single-row UPDATE of (id, ...binds..., version) in its own write transaction;
 * -ENOENT when no row has that ID. bind fills the parameters from ?2 on and returns the
 * index of the version parameter. */
typedef int (*bind_fn)(sqlite3_stmt *st, const void *arg);

static int update_one(rkl_store *s, stmt_id id, const char *kind, const char *obj_id, bind_fn bind,
                      const void *arg, int64_t *ret_value, rkl_container_record **ret_ctr,
                      rkl_error *reterr)
{
        _cleanup_tx_ rkl_store *tx = NULL;
        _cleanup_reset_ sqlite3_stmt *st = NULL;
        _cleanup_(rkl_container_record_freep) rkl_container_record *rec = NULL;
        int r;

        if ((r = tx_begin_write(s, &tx, reterr)) < 0 || (r = use(s, id, &st, reterr)) < 0)
                return r;
        bind_text(st, 1, obj_id);
        int vi = bind(st, arg);
        bind_int(st, vi, (int64_t)s->tx_generation);
        if (ret_value) {
                /* RETURNING: the one row carries the new value. */
                r = step_row(s, st, stmt_sql[id], reterr);
                if (r < 0)
                        return rkl_error_prefix(reterr, "%s '%s'", kind, obj_id);
                if (r > 0)
                        *ret_value = sqlite3_column_int64(st, 0);
                r = r > 0 ? 1 : 0;
                (void)sqlite3_reset(st);
        } else {
                r = step_done(s, st, stmt_sql[id], reterr);
                if (r < 0)
                        return rkl_error_prefix(reterr, "%s '%s'", kind, obj_id);
                r = sqlite3_changes(s->db) > 0;
        }
        if (r == 0)
                return rkl_error_set(reterr, -ENOENT, "%s '%s' not found", kind, obj_id);
        if ((ret_ctr && (r = ctr_get(s, obj_id, &rec, reterr)) < 0) ||
            (r = tx_commit(&tx, reterr)) < 0)
                return r;
        if (ret_ctr)
                *ret_ctr = TAKE_PTR(rec);
        return 0;
}

static int bind_nothing(sqlite3_stmt *st, const void *arg)
{
        return 2;
}

static int bind_one_text(sqlite3_stmt *st, const void *arg)
{
        bind_text(st, 2, arg);
        return 3;
}

typedef struct error_args {
        const char *error;
        int64_t next_retry_ns;
} error_args;

static int bind_error(sqlite3_stmt *st, const void *arg)
{
        const error_args *e = arg;
        bind_text(st, 2, e->error);
        bind_int_or_null(st, 3, e->next_retry_ns);
        return 4;
}

int rkl_store_pod_set_desired(rkl_store *s, const char *pod_id, rkl_pod_desired desired,
                              rkl_error *reterr)
{
        const char *d = rkl_pod_desired_to_string(desired);
        int r = check_id("pod_sandbox_id", pod_id, reterr);
        if (r < 0)
                return r;
        if (!d)
                return rkl_error_set(reterr, -EINVAL, "desired: unknown state %d", (int)desired);
        return update_one(s, STMT_POD_SET_DESIRED, "sandbox", pod_id, bind_one_text, d, NULL, NULL,
                          reterr);
}

int rkl_store_pod_stop(rkl_store *s, const char *pod_id, rkl_error *reterr)
{
        _cleanup_tx_ rkl_store *tx = NULL;
        _cleanup_reset_ sqlite3_stmt *st = NULL;
        int r;

        if ((r = check_id("pod_sandbox_id", pod_id, reterr)) < 0 ||
            (r = tx_begin_write(s, &tx, reterr)) < 0 ||
            (r = use(s, STMT_POD_SET_DESIRED, &st, reterr)) < 0)
                return r;
        bind_text(st, 1, pod_id);
        bind_text(st, 2, rkl_pod_desired_to_string(RKL_POD_DESIRED_STOPPED));
        bind_int(st, 3, (int64_t)s->tx_generation);
        if ((r = step_done(s, st, "stop sandbox", reterr)) < 0)
                return r;
        if (sqlite3_changes(s->db) == 0)
                return rkl_error_set(reterr, -ENOENT, "sandbox '%s' not found", pod_id);
        if ((r = use(s, STMT_POD_STOP_CONTAINERS, &st, reterr)) < 0)
                return r;
        bind_text(st, 1, pod_id);
        bind_int(st, 2, (int64_t)s->tx_generation);
        if ((r = step_done(s, st, "stop containers", reterr)) < 0)
                return r;
        return tx_commit(&tx, reterr);
}

typedef struct pod_observed_args {
        const rkl_pod_observed *o;
        char *reason, *message; /* sanitized */
} pod_observed_args;

static int bind_pod_observed(sqlite3_stmt *st, const void *arg)
{
        const pod_observed_args *a = arg;
        bind_text(st, 2, rkl_pod_phase_to_string(a->o->phase));
        bind_int_or_null(st, 3, a->o->pid);
        bind_text(st, 4, a->o->ip);
        bind_int_or_null(st, 5, a->o->created_ns);
        bind_int_or_null(st, 6, a->o->started_ns);
        bind_int_or_null(st, 7, a->o->finished_ns);
        bind_text(st, 8, a->reason);
        bind_text(st, 9, a->message);
        return 10;
}

int rkl_store_pod_set_observed(rkl_store *s, const char *pod_id, const rkl_pod_observed *o,
                               rkl_error *reterr)
{
        int r;
        if ((r = check_id("pod_sandbox_id", pod_id, reterr)) < 0)
                return r;
        if (!o || !rkl_pod_phase_to_string(o->phase))
                return rkl_error_set(reterr, -EINVAL, "phase: unknown");
        if (o->pid < 0)
                return rkl_error_set(reterr, -EINVAL, "pid: negative");
        if ((r = check_str("ip", o->ip, RKL_MAX_NAME, false, reterr)) < 0 ||
            (r = check_time("created_at", o->created_ns, reterr)) < 0 ||
            (r = check_time("started_at", o->started_ns, reterr)) < 0 ||
            (r = check_time("finished_at", o->finished_ns, reterr)) < 0)
                return r;
        _cleanup_free_ char *reason = sanitize_text(o->reason);
        _cleanup_free_ char *message = sanitize_text(o->message);
        pod_observed_args a = {o, reason, message};
        return update_one(s, STMT_POD_SET_OBSERVED, "sandbox", pod_id, bind_pod_observed, &a, NULL,
                          NULL, reterr);
}

int rkl_store_pod_set_rkt_uuid(rkl_store *s, const char *pod_id, const char *uuid,
                               rkl_error *reterr)
{
        int r;
        if ((r = check_id("pod_sandbox_id", pod_id, reterr)) < 0 ||
            (uuid && (r = check_rkt_uuid(uuid, reterr)) < 0))
                return r;
        return update_one(s, STMT_POD_SET_RKT_UUID, "sandbox", pod_id, bind_one_text, uuid, NULL,
                          NULL, reterr);
}

int rkl_store_pod_set_unit_name(rkl_store *s, const char *pod_id, const char *unit,
                                rkl_error *reterr)
{
        int r;
        if ((r = check_id("pod_sandbox_id", pod_id, reterr)) < 0 ||
            (unit && (r = check_unit_name(unit, reterr)) < 0))
                return r;
        return update_one(s, STMT_POD_SET_UNIT_NAME, "sandbox", pod_id, bind_one_text, unit, NULL,
                          NULL, reterr);
}

static int record_error(rkl_store *s, stmt_id id, const char *kind, const char *obj_id,
                        const char *error, int64_t next_retry_ns, rkl_error *reterr)
{
        int64_t attempts = 0;
        int r;
        if ((r = check_time("next_retry", next_retry_ns, reterr)) < 0)
                return r;
        _cleanup_free_ char *e = sanitize_text(error ? error : "unknown error");
        error_args a = {e, next_retry_ns};
        r = update_one(s, id, kind, obj_id, bind_error, &a, &attempts, NULL, reterr);
        if (r < 0)
                return r;
        return attempts > INT32_MAX ? INT32_MAX : (int)attempts;
}

int rkl_store_pod_record_error(rkl_store *s, const char *pod_id, const char *error,
                               int64_t next_retry_ns, rkl_error *reterr)
{
        int r = check_id("pod_sandbox_id", pod_id, reterr);
        if (r < 0)
                return r;
        return record_error(s, STMT_POD_RECORD_ERROR, "sandbox", pod_id, error, next_retry_ns,
                            reterr);
}

int rkl_store_pod_clear_error(rkl_store *s, const char *pod_id, rkl_error *reterr)
{
        int r = check_id("pod_sandbox_id", pod_id, reterr);
        if (r < 0)
                return r;
        return update_one(s, STMT_POD_CLEAR_ERROR, "sandbox", pod_id, bind_nothing, NULL, NULL,
                          NULL, reterr);
}

static int delete_one(rkl_store *s, stmt_id id, const char *kind, const char *obj_id,
                      rkl_error *reterr)
{
        _cleanup_tx_ rkl_store *tx = NULL;
        _cleanup_reset_ sqlite3_stmt *st = NULL;
        int r;
        if ((r = tx_begin_write(s, &tx, reterr)) < 0 || (r = use(s, id, &st, reterr)) < 0)
                return r;
        bind_text(st, 1, obj_id);
        if ((r = step_done(s, st, stmt_sql[id], reterr)) < 0)
                return rkl_error_prefix(reterr, "%s '%s'", kind, obj_id);
        if (sqlite3_changes(s->db) == 0)
                return rkl_error_set(reterr, -ENOENT, "%s '%s' not found", kind, obj_id);
        return tx_commit(&tx, reterr);
}

int rkl_store_pod_delete(rkl_store *s, const char *pod_id, rkl_error *reterr)
{
        int r = check_id("pod_sandbox_id", pod_id, reterr);
        if (r < 0)
                return r;
        /* Its containers go with it: ON DELETE CASCADE. */
        return delete_one(s, STMT_POD_DELETE, "sandbox", pod_id, reterr);
}

static int resolve(rkl_store *s, stmt_id id, const char *kind, const char *prefix,
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
                                     kind, RKL_ID_LEN);
        if ((r = use(s, id, &st, reterr)) < 0)
                return r;
        bind_text(st, 1, prefix);
        if ((r = step_row(s, st, "resolve", reterr)) < 0)
                return r;
        if (r == 0)
                return rkl_error_set(reterr, -ENOENT, "no %s ID starts with '%s'", kind, prefix);
        if ((r = copy_id(st, 0, first, reterr)) < 0 || (r = step_row(s, st, "resolve", reterr)) < 0)
                return r;
        if (r > 0)
                return rkl_error_set(reterr, -ENOTUNIQ, "%s ID prefix '%s' is ambiguous", kind,
                                     prefix);
        memcpy(ret_id, first, sizeof(first));
        return 0;
}

int rkl_store_pod_resolve(rkl_store *s, const char *prefix, char ret_id[static RKL_ID_LEN + 1],
                          rkl_error *reterr)
{
        return resolve(s, STMT_POD_RESOLVE, "sandbox", prefix, ret_id, reterr);
}

/* Containers. */

int rkl_store_container_create(rkl_store *s, const char *ctr_id, const char *pod_id,
                               const char *app_name, const char *image_id, rkl_container_spec *spec,
                               rkl_container_record **ret, rkl_error *reterr)
{
        _cleanup_tx_ rkl_store *tx = NULL;
        _cleanup_reset_ sqlite3_stmt *st = NULL;
        int64_t accepted;
        int r;

        if ((r = check_id("container_id", ctr_id, reterr)) < 0 ||
            (r = check_id("pod_sandbox_id", pod_id, reterr)) < 0 ||
            (r = check_app_name(app_name, reterr)) < 0 ||
            (r = check_container_spec(spec, reterr)) < 0)
                return r;
        if (image_id && !rkl_image_id_is_valid(image_id))
                return rkl_error_set(reterr, -EINVAL, "image_id: not an rkt image ID");
        _cleanup_free_ char *config = rkl_store__container_config_to_json(spec),
                            *labels = rkl_store__kvs_to_json(&spec->labels),
                            *annotations = rkl_store__kvs_to_json(&spec->annotations);

        if ((r = tx_begin_write(s, &tx, reterr)) < 0 ||
            (r = use(s, STMT_POD_EXISTS, &st, reterr)) < 0)
                return r;
        /* Say "no such sandbox" rather than let the foreign key say "constraint failed". */
        bind_text(st, 1, pod_id);
        if ((r = step_row(s, st, "select sandbox", reterr)) < 0)
                return r;
        if (r == 0)
                return rkl_error_set(reterr, -ENOENT, "sandbox '%s' not found", pod_id);
        (void)sqlite3_reset(st);

        if ((r = use(s, STMT_CTR_INSERT, &st, reterr)) < 0)
                return r;
        accepted = rkl_realtime_nsec(); /* in commit order: List sorts by it */
        bind_text(st, 1, ctr_id);
        bind_text(st, 2, pod_id);
        bind_text(st, 3, spec->name);
        bind_int(st, 4, spec->attempt);
        bind_text(st, 5, spec->image);
        bind_text(st, 6, config);
        bind_text(st, 7, app_name);
        bind_int(st, 8, (int64_t)s->tx_generation);
        bind_int(st, 9, accepted);
        bind_text(st, 10, labels);
        bind_text(st, 11, annotations);
        bind_text(st, 12, image_id);
        if ((r = step_done(s, st, "insert container", reterr)) < 0)
                return rkl_error_prefix(reterr, "container '%s'", ctr_id);
        uint64_t version = s->tx_generation;
        if ((r = tx_commit(&tx, reterr)) < 0)
                return r;
        if (ret) {
                rkl_container_record *c = rkl_xnew0(rkl_container_record, 1);
                memcpy(c->id, ctr_id, sizeof(c->id));
                memcpy(c->sandbox_id, pod_id, sizeof(c->sandbox_id));
                c->spec = *spec;
                *spec = (rkl_container_spec){0};
                c->app_name = rkl_xstrdup(app_name);
                c->desired = RKL_CTR_DESIRED_CREATED;
                c->observed.phase = RKL_CTR_PHASE_CREATED;
                c->observed.image_ref = image_id ? rkl_xstrdup(image_id) : NULL;
                c->book.version = version;
                c->book.accepted_ns = accepted;
                *ret = c;
        }
        return 0;
}

int rkl_store_container_get(rkl_store *s, const char *ctr_id, rkl_container_record **ret,
                            rkl_error *reterr)
{
        _cleanup_tx_ rkl_store *tx = NULL;
        _cleanup_(rkl_container_record_freep) rkl_container_record *c = NULL;
        int r;
        if ((r = check_id("container_id", ctr_id, reterr)) < 0 ||
            (r = tx_begin_read(s, &tx, reterr)) < 0 || (r = ctr_get(s, ctr_id, &c, reterr)) < 0 ||
            (r = tx_commit(&tx, reterr)) < 0)
                return r;
        *ret = TAKE_PTR(c);
        return 0;
}

int rkl_store_container_list(rkl_store *s, const rkl_container_filter *f,
                             rkl_container_record ***ret, size_t *ret_n, rkl_error *reterr)
{
        static const rkl_container_filter all = {0};
        _cleanup_tx_ rkl_store *tx = NULL;
        _cleanup_reset_ sqlite3_stmt *st = NULL;
        rkl_container_record **a = NULL;
        size_t n = 0;
        int r;

        if (!f)
                f = &all;
        if ((f->id && (r = check_id("filter.id", f->id, reterr)) < 0) ||
            (f->sandbox_id && (r = check_id("filter.pod_sandbox_id", f->sandbox_id, reterr)) < 0) ||
            (r = check_selector(f->label_selector, reterr)) < 0)
                return r;
        if ((r = tx_begin_read(s, &tx, reterr)) < 0)
                return r;
        if (f->id) {
                r = use(s, STMT_CTR_SELECT, &st, reterr);
                if (r >= 0)
                        bind_text(st, 1, f->id);
        } else if (f->sandbox_id) {
                r = use(s, STMT_CTR_SELECT_BY_SANDBOX, &st, reterr);
                if (r >= 0)
                        bind_text(st, 1, f->sandbox_id);
        } else
                r = use(s, STMT_CTR_SELECT_ALL, &st, reterr);
        if (r < 0)
                return r;
        while ((r = step_row(s, st, "select containers", reterr)) > 0) {
                rkl_container_record *c = NULL;
                r = read_ctr_row(st, &c, reterr);
                if (r < 0)
                        break;
                if ((f->sandbox_id && !streq(c->sandbox_id, f->sandbox_id)) ||
                    (f->by_desired && c->desired != f->desired) ||
                    (f->by_phase && c->observed.phase != f->phase) ||
                    !labels_match(&c->spec.labels, f->label_selector)) {
                        rkl_container_record_free(c);
                        continue;
                }
                push_ptr((void ***)&a, &n, c);
        }
        if (r >= 0)
                r = tx_commit(&tx, reterr);
        if (r < 0) {
                rkl_container_record_array_free(a, n);
                return r;
        }
        *ret = a;
        *ret_n = n;
        return 0;
}

int rkl_store_container_foreach(rkl_store *s, const rkl_container_filter *filter,
                                rkl_store_container_cb cb, void *userdata, rkl_error *reterr)
{
        rkl_container_record **a = NULL;
        size_t n = 0;
        int r = rkl_store_container_list(s, filter, &a, &n, reterr);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n && r == 0; i++)
                r = cb(a[i], userdata);
        rkl_container_record_array_free(a, n);
        return r;
}

static int bind_one_int(sqlite3_stmt *st, const void *arg)
{
        bind_int(st, 2, *(const int64_t *)arg);
        return 3;
}

int rkl_store_container_stop(rkl_store *s, const char *ctr_id, int64_t deadline_ns,
                             rkl_container_record **ret, rkl_error *reterr)
{
        int r = check_id("container_id", ctr_id, reterr);
        if (r < 0)
                return r;
        if (deadline_ns <= 0)
                return rkl_error_set(reterr, -EINVAL, "stop deadline: must be positive");
        return update_one(s, STMT_CTR_STOP, "container", ctr_id, bind_one_int, &deadline_ns, NULL,
                          ret, reterr);
}

int rkl_store_container_start(rkl_store *s, const char *ctr_id, rkl_container_record **ret,
                              rkl_error *reterr)
{
        _cleanup_tx_ rkl_store *tx = NULL;
        _cleanup_reset_ sqlite3_stmt *st = NULL;
        _cleanup_(rkl_container_record_freep) rkl_container_record *c = NULL;
        int r;

        /* Look and change in one write transaction: a stop or remove in between cannot
         * slip past the checks. */
        if ((r = check_id("container_id", ctr_id, reterr)) < 0 ||
            (r = tx_begin_write(s, &tx, reterr)) < 0 || (r = ctr_get(s, ctr_id, &c, reterr)) < 0)
                return r;
        if (c->desired == RKL_CTR_DESIRED_STOPPED)
                return rkl_error_set(reterr, -EBADFD, "container %s is stopped", ctr_id);
        if (c->observed.phase == RKL_CTR_PHASE_EXITED)
                return rkl_error_set(reterr, -EBADFD, "container %s has already run and exited",
                                     ctr_id);
        if (c->desired == RKL_CTR_DESIRED_RUNNING) {
                /* Asked for already: nothing to write (tx rolls back the generation bump). */
                if (ret)
                        *ret = TAKE_PTR(c);
                return 0;
        }
        if ((r = use(s, STMT_CTR_SET_DESIRED, &st, reterr)) < 0)
                return r;
        bind_text(st, 1, ctr_id);
        bind_text(st, 2, rkl_ctr_desired_to_string(RKL_CTR_DESIRED_RUNNING));
        bind_int(st, 3, (int64_t)s->tx_generation);
        c->desired = RKL_CTR_DESIRED_RUNNING;
        c->book.version = s->tx_generation;
        if ((r = step_done(s, st, "start container", reterr)) < 0 ||
            (r = tx_commit(&tx, reterr)) < 0)
                return r;
        if (ret)
                *ret = TAKE_PTR(c);
        return 1;
}

typedef struct ctr_observed_args {
        const rkl_container_observed *o;
        char *reason, *message;
} ctr_observed_args;

static int bind_ctr_observed(sqlite3_stmt *st, const void *arg)
{
        const ctr_observed_args *a = arg;
        bind_text(st, 2, rkl_ctr_phase_to_string(a->o->phase));
        bind_int_or_null(st, 3, a->o->pid);
        if (a->o->has_exit_code)
                bind_int(st, 4, a->o->exit_code);
        else
                bind_text(st, 4, NULL);
        bind_int_or_null(st, 5, a->o->created_ns);
        bind_int_or_null(st, 6, a->o->started_ns);
        bind_int_or_null(st, 7, a->o->finished_ns);
        bind_text(st, 8, a->reason);
        bind_text(st, 9, a->message);
        bind_text(st, 10, a->o->image_ref);
        return 11;
}

int rkl_store_container_set_observed(rkl_store *s, const char *ctr_id,
                                     const rkl_container_observed *o, rkl_error *reterr)
{
        int r;
        if ((r = check_id("container_id", ctr_id, reterr)) < 0)
                return r;
        if (!o || !rkl_ctr_phase_to_string(o->phase))
                return rkl_error_set(reterr, -EINVAL, "phase: unknown");
        if (o->pid < 0)
                return rkl_error_set(reterr, -EINVAL, "pid: negative");
        if ((r = check_str("image_ref", o->image_ref, RKL_MAX_STRING, false, reterr)) < 0 ||
            (r = check_time("created_at", o->created_ns, reterr)) < 0 ||
            (r = check_time("started_at", o->started_ns, reterr)) < 0 ||
            (r = check_time("finished_at", o->finished_ns, reterr)) < 0)
                return r;
        _cleanup_free_ char *reason = sanitize_text(o->reason);
        _cleanup_free_ char *message = sanitize_text(o->message);
        ctr_observed_args a = {o, reason, message};
        return update_one(s, STMT_CTR_SET_OBSERVED, "container", ctr_id, bind_ctr_observed, &a,
                          NULL, NULL, reterr);
}

int rkl_store_container_record_error(rkl_store *s, const char *ctr_id, const char *error,
                                     int64_t next_retry_ns, rkl_error *reterr)
{
        int r = check_id("container_id", ctr_id, reterr);
        if (r < 0)
                return r;
        return record_error(s, STMT_CTR_RECORD_ERROR, "container", ctr_id, error, next_retry_ns,
                            reterr);
}

int rkl_store_container_clear_error(rkl_store *s, const char *ctr_id, rkl_error *reterr)
{
        int r = check_id("container_id", ctr_id, reterr);
        if (r < 0)
                return r;
        return update_one(s, STMT_CTR_CLEAR_ERROR, "container", ctr_id, bind_nothing, NULL, NULL,
                          NULL, reterr);
}

int rkl_store_container_delete(rkl_store *s, const char *ctr_id, rkl_error *reterr)
{
        int r = check_id("container_id", ctr_id, reterr);
        if (r < 0)
                return r;
        return delete_one(s, STMT_CTR_DELETE, "container", ctr_id, reterr);
}

int rkl_store_container_resolve(rkl_store *s, const char *prefix,
                                char ret_id[static RKL_ID_LEN + 1], rkl_error *reterr)
{
        return resolve(s, STMT_CTR_RESOLVE, "container", prefix, ret_id, reterr);
}
