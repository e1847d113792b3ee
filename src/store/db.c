/* The state store over SQLite (store.h): opening (file checks, pragmas, migrations) and
 * closing a connection, the write gate, the generation and data_version counters,
 * checkpoints and the quick and integrity checks. Statements and transactions are in
 * db-sql.c, validation in db-check.c, sandboxes in db-pod.c and containers in
 * db-container.c.
 *
 * One rkl_db is one sqlite3 connection, used by one thread. The connection is opened in
 * multi-thread mode (SQLITE_OPEN_NOMUTEX): SQLite takes no mutex per call because the
 * connection is never shared. */
#include "store/db.h"

#include <fcntl.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include "base/alloc.h"
#include "base/latch.h"
#include "base/time-util.h"
#include "store/db-internal.h"
#include "base/banned.h"

#define DEFAULT_BUSY_TIMEOUT_MS 5000
/* After a checkpoint, a WAL bigger than this is truncated back to it (bytes). */
#define WAL_SIZE_LIMIT (32 * 1024 * 1024)

static int wal_grown(void *userdata, sqlite3 *db, const char *name, int frames)
{
        rkl_db *s = userdata;
        /* Ten times past the asking point the owner is not keeping up (blocked, or always
         * behind a reader): copy here rather than let the WAL grow without bound. Its
         * error is dropped: returning it would fail the commit that has just succeeded,
         * BUSY means another checkpoint is at work, and anything else comes back at the
         * next commit or in the owner's rkl_db_checkpoint(). */
        if (frames >= 10 * RKL_DB_CHECKPOINT_FRAMES)
                (void)sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
        else if (frames >= RKL_DB_CHECKPOINT_FRAMES)
                s->checkpoint_wanted(s->checkpoint_userdata);
        return SQLITE_OK;
}

struct rkl_db_gate {
        rkl_latch open;
        int r;           /* set before the latch opens */
        rkl_error error; /* when r < 0 */
};

rkl_db_gate *rkl_db_gate_new(void)
{
        rkl_db_gate *g = rkl_xnew0(rkl_db_gate, 1);
        rkl_latch_init(&g->open);
        g->error = (rkl_error)RKL_ERROR_INIT;
        return g;
}

void rkl_db_gate_open(rkl_db_gate *g, int r, const rkl_error *err)
{
        g->r = r;
        if (r < 0)
                rkl_error_set(&g->error, r, "%s", err && !isempty(err->msg) ? err->msg : "");
        rkl_latch_open(&g->open);
}

rkl_db_gate *rkl_db_gate_free(rkl_db_gate *g)
{
        if (!g)
                return NULL;
        rkl_latch_destroy(&g->open);
        free(g);
        return NULL;
}

/* Waits for the gate, then passes it for good or fails like it did. */
static int gate_pass(rkl_db *s, rkl_error *reterr)
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

int rkl_db_wait_writable(rkl_db *s, rkl_error *reterr)
{
        return gate_pass(s, reterr);
}

/* Open and migrate. */

static int exec_sql(rkl_db *s, const char *sql, rkl_error *reterr)
{
        int rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);
        if (rc != SQLITE_OK) {
                /* A migration is a whole file: name its first line only. */
                int n = (int)strcspn(sql, "\n");
                return rkl_error_set(reterr, rkl_db__errno_from_sqlite(rc), "%.*s%s: %s",
                                     n > 60 ? 60 : n, sql, n > 60 || sql[n] ? "..." : "",
                                     sqlite3_errmsg(s->db));
        }
        return 0;
}

/* Runs a statement returning one value (a PRAGMA) and returns its integer or text. */
static int query_int(rkl_db *s, const char *sql, int64_t *ret, rkl_error *reterr)
{
        sqlite3_stmt *st = NULL;
        int rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
        if (rc != SQLITE_OK)
                return rkl_db__sql_error(s, rc, sql, reterr);
        rc = sqlite3_step(st);
        if (rc != SQLITE_ROW) {
                int r = rc == SQLITE_DONE ? rkl_error_set(reterr, -EIO, "%s: no result", sql)
                                          : rkl_db__sql_error(s, rc, sql, reterr);
                sqlite3_finalize(st);
                return r;
        }
        *ret = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        return 0;
}

static int user_version(rkl_db *s, unsigned *ret, rkl_error *reterr)
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
static int check_rows(rkl_db *s, const char *sql, bool ok_row, rkl_error *reterr)
{
        sqlite3_stmt *st = NULL;
        int rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
        if (rc != SQLITE_OK)
                return rkl_db__sql_error(s, rc, sql, reterr);
        int r = 0;
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
                const char *v = (const char *)sqlite3_column_text(st, 0);
                if (!ok_row || !v || !streq(v, "ok"))
                        r = rkl_error_set(reterr, -EUCLEAN, "%s: %s", sql, v ? v : "problem found");
        } else if (rc != SQLITE_DONE)
                r = rkl_db__sql_error(s, rc, sql, reterr);
        sqlite3_finalize(st);
        return r;
}

/* One migration in one IMMEDIATE transaction; the caller turned foreign keys off. */
static int migrate_one(rkl_db *s, const rkl_db__migration *m, unsigned latest, rkl_error *reterr)
{
        _cleanup_tx_ rkl_db *tx = NULL;
        unsigned have = 0;
        char set[64];
        int r;

        /* Take the write lock before looking at the version: another connection may be
         * migrating this very file right now, and then it did the work. */
        if ((r = rkl_db__run(s, STMT_BEGIN_WRITE, reterr)) < 0)
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
        (void)snprintf(set, sizeof(set), "PRAGMA user_version = %u", m->version); /* fits 64 */
        if ((r = exec_sql(s, set, reterr)) < 0)
                return r;
        return rkl_db__tx_commit(&tx, reterr);
}

int rkl_db__migrate(rkl_db *s, const rkl_db__migration *migrations, size_t n, rkl_error *reterr)
{
        unsigned latest = n ? migrations[n - 1].version : 0, have = 0;
        int r = user_version(s, &have, reterr);
        if (r < 0)
                return r;
        if (have > latest)
                return refuse_newer(have, latest, reterr);

        for (size_t i = 0; i < n; i++) {
                const rkl_db__migration *m = &migrations[i];
                assert(m->version == i + 1);
                if (m->version <= have)
                        continue;
                /* SQLite's procedure for schema changes: foreign keys off (a no-op inside a
                 * transaction, hence out here), change, foreign_key_check, commit, back on. */
                r = exec_sql(s, "PRAGMA foreign_keys = OFF", reterr);
                if (r >= 0)
                        r = migrate_one(s, m, latest, reterr);
                /* Unchecked: after a failure the migration's error is the one to report
                 * (and open then closes the connection); after a success the next
                 * iteration turns them off again, or the return below retries this and
                 * reports. */
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

/* WAL: readers (operators' sqlite3 -readonly, other threads) never block the writer, and a
 * commit is one append. */
static int enable_wal(rkl_db *s, const char *path, rkl_error *reterr)
{
        sqlite3_stmt *st = NULL;
        int rc = sqlite3_prepare_v2(s->db, "PRAGMA journal_mode = WAL", -1, &st, NULL);
        if (rc == SQLITE_OK)
                rc = sqlite3_step(st);
        bool wal = rc == SQLITE_ROW && streq_ptr((const char *)sqlite3_column_text(st, 0), "wal");
        int r =
            rc == SQLITE_ROW ? 0 : rkl_db__sql_error(s, rc, "PRAGMA journal_mode = WAL", reterr);
        sqlite3_finalize(st);
        if (r < 0)
                return rkl_error_prefix(reterr, "open '%s'", path);
        if (!wal)
                return rkl_error_set(reterr, -EIO, "open '%s': cannot enable WAL mode", path);
        return 0;
}

int rkl_db_open(const char *path, const rkl_db_options *opts, rkl_db **ret, rkl_error *reterr)
{
        rkl_db_options o = opts ? *opts : (rkl_db_options){0};
        unsigned latest = rkl_db_schema_version_latest(), have = 0;
        int r, rc;

        if (isempty(path))
                return rkl_error_set(reterr, -EINVAL, "store path: empty");
        bool memory = streq(path, ":memory:");
        if (!memory && !o.skip_check) {
                r = prepare_file(path, reterr);
                if (r < 0)
                        return r;
        }

        _cleanup_(rkl_db_closep) rkl_db *s = rkl_xnew0(rkl_db, 1);
        rc = sqlite3_open_v2(path, &s->db,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX |
                                 SQLITE_OPEN_EXRESCODE,
                             NULL);
        if (rc != SQLITE_OK) {
                if (!s->db)
                        rkl_oom();
                r = rkl_db__sql_error(s, rc, "open", reterr);
                return rkl_error_prefix(reterr, "'%s'", path);
        }
        /* Neither this nor the wal_hook, autocheckpoint and busy_timeout calls below can
         * fail on an open handle (wal_hook returns the previous hook's argument, not an
         * error). SQLITE_OPEN_EXRESCODE asked for extended codes already. */
        (void)sqlite3_extended_result_codes(s->db, 1);
        s->gate = o.write_gate;
        if (o.checkpoint_wanted) {
                /* Replaces SQLite's autocheckpoint hook on this connection. */
                s->checkpoint_wanted = o.checkpoint_wanted;
                s->checkpoint_userdata = o.checkpoint_userdata;
                (void)sqlite3_wal_hook(s->db, wal_grown, s);
        } else
                (void)sqlite3_wal_autocheckpoint(s->db, RKL_DB_CHECKPOINT_FRAMES);
        (void)sqlite3_busy_timeout(s->db, o.busy_timeout_ms ? (int)o.busy_timeout_ms
                                                            : DEFAULT_BUSY_TIMEOUT_MS);
        /* Hardening: no writable_schema tricks, no double-quoted string literals. The
         * schema stays trusted: SQLite 3.40 counts json_valid(), which the CHECKs on the
         * config columns use, as unsafe, and the file is root's own 0600 file anyway.
         * db_config fails only for an op this SQLite does not know, and all three are older
         * than RETURNING (3.35), without which no statement of the store prepares. */
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
                r = rkl_db_quick_check(s, reterr);
                if (r < 0)
                        return r;
        }

        int64_t dummy;
        char sql[64];
        if (!memory && (r = enable_wal(s, path, reterr)) < 0)
                return r;
        /* A short number into 64 bytes: no truncation to check for. */
        (void)snprintf(sql, sizeof(sql), "PRAGMA journal_size_limit = %d", WAL_SIZE_LIMIT);
        if ((r = query_int(s, sql, &dummy, reterr)) < 0 ||
            (r = exec_sql(s,
                          o.sync_full ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL",
                          reterr)) < 0)
                return rkl_error_prefix(reterr, "open '%s'", path);

        r = rkl_db__migrate(s, rkl_db__migrations, rkl_db__n_migrations, reterr);
        if (r < 0)
                return rkl_error_prefix(reterr, "open '%s'", path);

        *ret = TAKE_PTR(s);
        return 0;
}

rkl_db *rkl_db_close(rkl_db *s)
{
        if (!s)
                return NULL;
        for (size_t i = 0; i < _STMT_MAX; i++)
                sqlite3_finalize(s->stmts[i]);
        /* The last connection to close checkpoints the WAL into the database file.
         * close_v2 returns SQLITE_OK for any handle: it defers, never refuses, a close. */
        (void)sqlite3_close_v2(s->db);
        free(s);
        return NULL;
}

unsigned rkl_db_schema_version_latest(void)
{
        return rkl_db__n_migrations ? rkl_db__migrations[rkl_db__n_migrations - 1].version : 0;
}

int rkl_db_schema_version(rkl_db *s, unsigned *ret, rkl_error *reterr)
{
        return user_version(s, ret, reterr);
}

static int read_u64(rkl_db *s, rkl_db__stmt_id id, uint64_t *ret, rkl_error *reterr)
{
        _cleanup_reset_ sqlite3_stmt *st = NULL;
        int r = rkl_db__use(s, id, &st, reterr);
        if (r < 0)
                return r;
        r = rkl_db__step_row(s, st, rkl_db__stmt_sql[id], reterr);
        if (r < 0)
                return r;
        if (r == 0)
                return rkl_error_set(reterr, -EUCLEAN, "%s: no row", rkl_db__stmt_sql[id]);
        *ret = (uint64_t)sqlite3_column_int64(st, 0);
        return 0;
}

int rkl_db_generation(rkl_db *s, uint64_t *ret, rkl_error *reterr)
{
        return read_u64(s, STMT_GENERATION_GET, ret, reterr);
}

int rkl_db_data_version(rkl_db *s, uint64_t *ret, rkl_error *reterr)
{
        return read_u64(s, STMT_DATA_VERSION, ret, reterr);
}

int rkl_db_checkpoint(rkl_db *s, rkl_error *reterr)
{
        int rc = sqlite3_wal_checkpoint_v2(s->db, "main", SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
        /* BUSY: another checkpoint is running; it does the work. */
        if (rc != SQLITE_OK && rc != SQLITE_BUSY)
                return rkl_db__sql_error(s, rc, "checkpoint", reterr);
        return 0;
}

int rkl_db_quick_check(rkl_db *s, rkl_error *reterr)
{
        int r = check_rows(s, "PRAGMA quick_check", true, reterr);
        if (r < 0)
                return rkl_error_prefix(reterr, "'%s' is damaged; refusing to use it",
                                        sqlite3_db_filename(s->db, "main"));
        return 0;
}

int rkl_db_integrity_check(rkl_db *s, rkl_error *reterr)
{
        int r = check_rows(s, "PRAGMA integrity_check", true, reterr);
        if (r < 0)
                return r;
        return check_rows(s, "PRAGMA foreign_key_check", false, reterr);
}
