/* Internals of src/store shared between its files: the embedded migrations, the JSON codec
 * of the config, labels and annotations columns, and what the store's files share about the
 * connection (statements, transactions, validation, row helpers). Nothing outside src/store
 * includes this, except the store's own tests. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "base/macro.h"
#include "base/model.h"
#include "store/db.h"

/* SQLite's handles, declared rather than included (CONTRIBUTING.md, 'Modules and headers'):
 * only the files that call SQLite include sqlite3.h. */
typedef struct sqlite3 sqlite3;
typedef struct sqlite3_stmt sqlite3_stmt;

/* One migrations/NNNN_name.sql file, embedded at build time (embed-migrations.cmake). */
typedef struct rkl_db__migration {
        unsigned version; /* NNNN: PRAGMA user_version after it ran */
        const char *name; /* file name, for messages */
        const char *sql;
} rkl_db__migration;

/* Ordered by version, which runs 1..n without gaps (the generator enforces it). */
extern const rkl_db__migration rkl_db__migrations[];
extern const size_t rkl_db__n_migrations;

/* The config column: the spec minus what has its own columns (name, uid, namespace,
 * attempt, image, labels, annotations). NULL strings, string vectors and arrays
 * are left out and come back NULL; empty ones come back empty: the spec round-trips
 * exactly. The _to_ functions abort on OOM like rkl_xmalloc. The _from_ functions fill
 * only those fields of *spec, which the caller has zeroed; on failure (-EUCLEAN: the column
 * is not what this binary wrote) the caller frees *spec. */
char *rkl_db__pod_config_to_json(const rkl_pod_spec *spec);
int rkl_db__pod_config_from_json(const char *json, rkl_pod_spec *spec, rkl_error *reterr);
char *rkl_db__container_config_to_json(const rkl_container_spec *spec);
int rkl_db__container_config_from_json(const char *json, rkl_container_spec *spec,
                                       rkl_error *reterr);

/* The labels and annotations columns: one JSON object, keys in the given order (the
 * store refuses duplicate keys before encoding). Same contract as the config codec; column
 * names the column in messages. */
char *rkl_db__kvs_to_json(const rkl_kvs *l);
int rkl_db__kvs_from_json(const char *json, const char *column, rkl_kvs *ret, rkl_error *reterr);

/* The timeline column: {"step": microseconds, ...} in step order, with the steps reached
 * only; NULL when none is. pod picks the sandbox's step names, else the container's. Decoding
 * is lenient, unlike the config's: the timeline is for people, so a column edited by hand or
 * by a newer rktlet never fails its row. Unknown steps are skipped, and a column that is not
 * such an object reads as an empty timeline. */
char *rkl_db__timeline_to_json(const rkl_timeline *t, bool pod);
void rkl_db__timeline_from_json(const char *json, bool pod, rkl_timeline *ret);

/* Test hook: runs the given migrations instead of the embedded ones, exactly as
 * rkl_db_open() does (one IMMEDIATE transaction each, keyed by user_version). */
int rkl_db__migrate(rkl_db *s, const rkl_db__migration *migrations, size_t n, rkl_error *reterr);

/* Every statement the store runs after open, prepared once per connection on first use
 * (SQLITE_PREPARE_PERSISTENT: they live as long as the connection). Their SQL is
 * rkl_db__stmt_sql[] in db-sql.c. */
typedef enum rkl_db__stmt_id {
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
        STMT_POD_SET_RESOURCES,
        STMT_POD_RECORD_ERROR,
        STMT_POD_CLEAR_ERROR,
        STMT_POD_DELETE,
        STMT_POD_RESOLVE,

        STMT_CONTAINER_INSERT,
        STMT_CONTAINER_SELECT,
        STMT_CONTAINER_SELECT_ALL,
        STMT_CONTAINER_SELECT_BY_SANDBOX,
        STMT_CONTAINER_SET_DESIRED,
        STMT_CONTAINER_STOP,
        STMT_CONTAINER_SET_OBSERVED,
        STMT_CONTAINER_RECORD_ERROR,
        STMT_CONTAINER_CLEAR_ERROR,
        STMT_CONTAINER_SET_RESOURCES,
        STMT_CONTAINER_DELETE,
        STMT_CONTAINER_RESOLVE,

        STMT_NETWORK_PUT,
        STMT_NETWORK_SELECT_ALL,
        STMT_NETWORK_DELETE,

        STMT_FAILURE_INSERT,
        STMT_FAILURE_SELECT_ALL,
        STMT_FAILURE_DELETE,
        _STMT_MAX,
} rkl_db__stmt_id;

/* The connection. Its body is here rather than in store.c because every store file reads
 * db and tx_generation (SQLite's btreeInt.h does the same). */
struct rkl_db {
        sqlite3 *db;
        sqlite3_stmt *stmts[_STMT_MAX];
        /* The generation of the write transaction in progress (0: none). Rows changed in it
         * get it as their version. */
        uint64_t tx_generation;
        rkl_db_gate *gate; /* borrowed; NULL once passed */
        void (*checkpoint_wanted)(void *userdata);
        void *checkpoint_userdata;
};

/* db-sql.c: running statements. */

extern const char *const rkl_db__stmt_sql[_STMT_MAX];

/* SQLite → -errno, here and nowhere else (CONTRIBUTING.md, 'Foreign errors at the edge'). */
int rkl_db__errno_from_sqlite(int rc);
/* Call right after the failing sqlite3_* call: sqlite3_errmsg() describes the last one. */
int rkl_db__sql_error(rkl_db *s, int rc, const char *what, rkl_error *reterr);

/* Resets a cached statement when the scope that used it ends. The statement is borrowed
 * from the cache: this does not free it. */
void rkl_db__stmt_resetp(sqlite3_stmt **st);
#define _cleanup_reset_ _cleanup_(rkl_db__stmt_resetp)

/* Hands out the cached statement id, preparing it on first use. */
int rkl_db__use(rkl_db *s, rkl_db__stmt_id id, sqlite3_stmt **ret, rkl_error *reterr);
/* Binding: strings are bound SQLITE_STATIC (the caller's memory outlives the step), NULL
 * as SQL NULL; 0 is bound as NULL by _int_or_null ("unknown" in the C structs). Bind errors
 * are programming errors or OOM. */
void rkl_db__bind_text(sqlite3_stmt *st, int i, const char *v);
void rkl_db__bind_int(sqlite3_stmt *st, int i, int64_t v);
void rkl_db__bind_int_or_null(sqlite3_stmt *st, int i, int64_t v);
/* Steps to the end, ignoring rows, and resets the statement. */
int rkl_db__step_done(rkl_db *s, sqlite3_stmt *st, const char *what, rkl_error *reterr);
/* Steps once: 1 if a row is there, 0 at the end. */
int rkl_db__step_row(rkl_db *s, sqlite3_stmt *st, const char *what, rkl_error *reterr);
/* Runs the cached statement id to its end. */
int rkl_db__run(rkl_db *s, rkl_db__stmt_id id, rkl_error *reterr);
/* Column i of the current row, copied; NULL for SQL NULL. Aborts on OOM. */
char *rkl_db__column_strdup(sqlite3_stmt *st, int i);
/* Column i of the current row; SQL NULL reads as 0, which is "unknown". */
int64_t rkl_db__column_i64(sqlite3_stmt *st, int i);

/* Transactions. A scope that begins one holds a pointer to the store in tx; leaving the
 * scope without rkl_db__tx_commit() rolls back, so no early return can commit half a
 * change. */
void rkl_db__tx_abortp(rkl_db **tx);
#define _cleanup_tx_ _cleanup_(rkl_db__tx_abortp)
/* Passes the write gate, BEGIN IMMEDIATE, and bumps the generation into s->tx_generation. */
int rkl_db__tx_begin_write(rkl_db *s, rkl_db **tx, rkl_error *reterr);
/* A deferred read transaction: one snapshot across the statements of a get or list. */
int rkl_db__tx_begin_read(rkl_db *s, rkl_db **tx, rkl_error *reterr);
int rkl_db__tx_commit(rkl_db **tx, rkl_error *reterr);

/* db-check.c: validation of what callers hand the store; -EINVAL naming the field. */

int rkl_db__check_str(const char *field, const char *v, size_t max, bool required,
                      rkl_error *reterr);
int rkl_db__check_id(const char *field, const char *id, rkl_error *reterr);
int rkl_db__check_time(const char *field, int64_t t, rkl_error *reterr);
/* What a sandbox's and a container's observation share: a PID, three times, a timeline. */
int rkl_db__check_observed(int64_t pid, int64_t created_ns, int64_t started_ns, int64_t finished_ns,
                           const rkl_timeline *timeline, rkl_error *reterr);
int rkl_db__check_pod_spec(const rkl_pod_spec *p, rkl_error *reterr);
int rkl_db__check_container_spec(const rkl_container_spec *c, rkl_error *reterr);
int rkl_db__check_rkt_uuid(const char *uuid, rkl_error *reterr);
int rkl_db__check_unit_name(const char *unit, rkl_error *reterr);
int rkl_db__check_app_name(const char *app, rkl_error *reterr);
/* A list filter's label selector; NULL is fine. */
int rkl_db__check_selector(const rkl_kvs *sel, rkl_error *reterr);
/* Free text from the machine, cut to size with invalid UTF-8 replaced rather than refused.
 * NULL for NULL; aborts on OOM. */
char *rkl_db__sanitize_text(const char *s);

/* db-row.c: what the sandbox and container tables share. */

int rkl_db__read_kvs(sqlite3_stmt *st, int col, rkl_kvs *labels, rkl_kvs *annotations,
                     rkl_error *reterr);
int rkl_db__copy_id(sqlite3_stmt *st, int col, char ret[static RKL_ID_LEN + 1], rkl_error *reterr);
bool rkl_db__labels_match(const rkl_kvs *labels, const rkl_kvs *selector);
/* Appends p to the array *a of *n pointers. Aborts on OOM. */
void rkl_db__push_ptr(void ***a, size_t *n, void *p);
/* A kind of row, as its messages name it: "container", and its ID's field in the message
 * that refuses a bad ID: "container_id". */
typedef struct rkl_db__kind {
        const char *name, *id_field;
} rkl_db__kind;
extern const rkl_db__kind rkl_db__kind_container, rkl_db__kind_sandbox;

int rkl_db__select_one(rkl_db *s, rkl_db__stmt_id stmt, const rkl_db__kind *kind, const char *id,
                       sqlite3_stmt **ret, rkl_error *reterr);

/* Fills an UPDATE's parameters from ?2 on and returns the index of its version parameter. */
/* The row functions of a list: read makes a record of the current row, keep says whether
 * the filter wants it (NULL: all), drop frees one that is not kept or not returned. */
typedef struct rkl_db__rows {
        const char *what; /* "select containers": for messages */
        int (*read)(sqlite3_stmt *st, void **ret, rkl_error *reterr);
        bool (*keep)(const void *rec, const void *filter);
        void (*drop)(void *rec);
} rkl_db__rows;
/* The one row of stmt (?1 bound to id) in a read transaction of its own; -EINVAL for a
 * malformed id, -ENOENT for none. */
int rkl_db__get(rkl_db *s, rkl_db__stmt_id stmt, const rkl_db__kind *kind, const char *id,
                const rkl_db__rows *rows, void **ret, rkl_error *reterr);
/* Every row of the statement stmt (?1 bound to key unless NULL) in one read transaction,
 * in the statement's order. */
int rkl_db__list(rkl_db *s, rkl_db__stmt_id stmt, const char *key, const rkl_db__rows *rows,
                 const void *filter, void ***ret, size_t *ret_n, rkl_error *reterr);

typedef int (*rkl_db__bind_fn)(sqlite3_stmt *st, const void *arg);
int rkl_db__bind_nothing(sqlite3_stmt *st, const void *arg);
/* ?2 to ?5: the CPU and memory limits of a sandbox and a container (arg: const
 * rkl_resources *); returns 6, the next parameter. */
int rkl_db__bind_limits(sqlite3_stmt *st, const void *arg);
int rkl_db__bind_one_text(sqlite3_stmt *st, const void *arg); /* arg: const char * */
/* One single-row UPDATE in its own write transaction; -EINVAL for a malformed obj_id, -ENOENT
 * when no row has it. ret_value: the RETURNING column; ret_container: the container as
 * committed. */
int rkl_db__update_one(rkl_db *s, rkl_db__stmt_id id, const rkl_db__kind *kind, const char *obj_id,
                       rkl_db__bind_fn bind, const void *arg, int64_t *ret_value,
                       rkl_container_record **ret_container, rkl_error *reterr);
/* Counts a failed attempt and returns the attempts so far. */
int rkl_db__record_error(rkl_db *s, rkl_db__stmt_id id, const rkl_db__kind *kind,
                         const char *obj_id, const char *error, int64_t next_retry_ns,
                         rkl_error *reterr);
/* The same checks as update_one(). */
int rkl_db__delete_one(rkl_db *s, rkl_db__stmt_id id, const rkl_db__kind *kind, const char *obj_id,
                       rkl_error *reterr);
/* The one ID that starts with prefix: -ENOENT for none, -ENOTUNIQ for several. */
int rkl_db__resolve(rkl_db *s, rkl_db__stmt_id id, const rkl_db__kind *kind, const char *prefix,
                    char ret_id[static RKL_ID_LEN + 1], rkl_error *reterr);

/* db-container.c: the container in the transaction under way (update_one() hands it back). */
int rkl_db__container_get(rkl_db *s, const char *container_id, rkl_container_record **ret,
                          rkl_error *reterr);
