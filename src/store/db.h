/* The database: desired and observed state of sandboxes and containers in SQLite.
 *
 * Every accepted CRI call lands here before it is answered, and a restart recovers from it.
 * Only src/store speaks SQL. One rkl_db is one connection: open one per thread on the
 * same file (WAL lets readers and one writer run at once; busy_timeout queues writers).
 * Every write is one IMMEDIATE transaction: it commits entirely or not at all, and bumps
 * the store's change generation.
 *
 * Errors are -errno with a message in reterr: -EINVAL (bad input, the message names the
 * field), -ENOENT (no such object), -EEXIST (an ID, name+attempt, app name, rkt UUID or
 * unit name already taken), -ENOTUNIQ (ambiguous ID prefix), -EBUSY (the database stayed
 * locked past the busy timeout), -EPROTONOSUPPORT (schema newer than this binary),
 * -EUCLEAN (not a database, or corrupt), -ENOSPC, -EROFS, -EACCES, else -EIO. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/error.h"
#include "base/macro.h"
#include "base/model.h"

typedef struct rkl_db rkl_db;
typedef struct rkl_db_gate rkl_db_gate;

/* The daemon's database, below --state-dir. */
#define RKL_DB_FILE_NAME "rktlet.db"

typedef struct rkl_db_options {
        /* false: synchronous=NORMAL. A committed write survives a crash or kill -9 of the
         * daemon; a power loss or kernel crash may lose the last transactions (never
         * corrupts). true: synchronous=FULL, every commit is fsync'ed: survives power loss,
         * at the cost measured in docs/store.md. */
        bool sync_full;
        /* How long a write waits for another connection's transaction; 0 means 5000 ms. */
        unsigned busy_timeout_ms;
        /* Skip PRAGMA quick_check at open: for the second and later connection of a
         * process, once the first one has checked the file. Open that first connection
         * before starting the threads that open the others: it creates, migrates and
         * switches the file to WAL. Required for the others: without it, open looks at the
         * files outside SQLite, which drops the POSIX locks of the connections already
         * open in this process. */
        bool skip_check;
        /* Leave PRAGMA quick_check to the caller, unless a migration is due (a migration
         * never runs on an unchecked file): open every connection with a write_gate, check
         * with rkl_db_quick_check() and pass the outcome to rkl_db_gate_open(). The
         * daemon serves reads from its cache meanwhile. */
        bool defer_check;
        /* Every write transaction of the connection waits until the gate is open, and then
         * fails with the gate's error if it has one. NULL: no gate. */
        rkl_db_gate *write_gate;
        /* Checkpoints (copying the WAL into the database, with an fsync) are left to
         * another connection: once the WAL holds RKL_DB_CHECKPOINT_FRAMES frames, a
         * commit here calls checkpoint_wanted(checkpoint_userdata), whose owner then calls
         * rkl_db_checkpoint() on its own connection. For threads that answer calls.
         * NULL: this connection checkpoints at that size itself, in its commits. */
        void (*checkpoint_wanted)(void *userdata);
        void *checkpoint_userdata;
} rkl_db_options;

#define RKL_DB_CHECKPOINT_FRAMES 1000 /* SQLite's default autocheckpoint */

/* What holds writes back until a deferred check is done (see defer_check). */
/* Waits at the connection's write gate (if any): 0 once writes may go on, else the check's
 * error. For a thread that acts on what it read before writing anything. */
int rkl_db_wait_writable(rkl_db *s, rkl_error *reterr);
rkl_db_gate *rkl_db_gate_new(void);
/* Lets the writes through (r == 0) or makes them fail with r and reterr's message. */
void rkl_db_gate_open(rkl_db_gate *g, int r, const rkl_error *err);
rkl_db_gate *rkl_db_gate_free(rkl_db_gate *g);
RKL_DEFINE_CLEANUP(rkl_db_gate *, rkl_db_gate_free)

/* Opens (creating it with mode 0600 if missing) and migrates the database at path;
 * ":memory:" gives a private in-memory database (one per connection, for tests). Refuses a
 * file that is not a database or fails quick_check (-EUCLEAN) and a schema newer than this
 * binary (-EPROTONOSUPPORT), and never writes to such a file. opts may be NULL. */
int rkl_db_open(const char *path, const rkl_db_options *opts, rkl_db **ret, rkl_error *reterr);
rkl_db *rkl_db_close(rkl_db *s);
RKL_DEFINE_CLEANUP(rkl_db *, rkl_db_close)

/* The change generation: bumped by every committed write through any connection. */
int rkl_db_generation(rkl_db *s, uint64_t *ret, rkl_error *reterr);
/* SQLite's PRAGMA data_version: changes when another connection has committed since this
 * one last looked. Cheaper than rkl_db_generation() (no table read) but blind to this
 * connection's own writes. */
int rkl_db_data_version(rkl_db *s, uint64_t *ret, rkl_error *reterr);
/* The schema version of the open database, and the newest this binary knows. */
int rkl_db_schema_version(rkl_db *s, unsigned *ret, rkl_error *reterr);
unsigned rkl_db_schema_version_latest(void);
/* A PASSIVE checkpoint: copies what the WAL holds into the database as far as no reader
 * needs it, without waiting for anyone. */
int rkl_db_checkpoint(rkl_db *s, rkl_error *reterr);
/* PRAGMA quick_check, as rkl_db_open() runs it: 0, or -EUCLEAN with the first problem. */
int rkl_db_quick_check(rkl_db *s, rkl_error *reterr);
/* PRAGMA integrity_check (full; slow on big files): 0, or -EUCLEAN with the first problem. */
int rkl_db_integrity_check(rkl_db *s, rkl_error *reterr);

/* Reconcile bookkeeping carried by every object. */
typedef struct rkl_db_bookkeeping {
        uint64_t version;      /* the store generation at this object's last change */
        uint32_t attempts;     /* failed attempts since the last success */
        char *last_error;      /* NULL when the last attempt succeeded */
        int64_t next_retry_ns; /* realtime ns; 0: no retry scheduled */
        int64_t accepted_ns;   /* when the CRI call was accepted (realtime ns) */
} rkl_db_bookkeeping;

/* A timeline (rkl_pod_observed.timeline, rkl_container_observed.timeline) as its column
 * holds it, {"step": microseconds, ...}, for a sandbox's steps (pod) or a container's; NULL
 * when no step is in it. */
char *rkl_db_timeline_json(const rkl_timeline *t, bool pod);

/* Sandboxes. */

/* What the reconciler last observed of a sandbox; 0 / NULL mean unknown or not yet. */
typedef struct rkl_pod_observed {
        rkl_pod_phase phase;
        int64_t pid;
        char *ip;
        char **additional_ips; /* a dual-stack pod's other family; NULL: none */
        int64_t created_ns, started_ns, finished_ns;
        char *reason, *message;
        /* Its start's steps (rkl_pod_step). Written with whatever else a write changes, never
         * on its own (rkl_pod_observed_equal() leaves it out): the reconciler keeps the steps
         * it saw until its next write of the sandbox. */
        rkl_timeline timeline;
} rkl_pod_observed;

void rkl_pod_observed_done(rkl_pod_observed *o);

typedef struct rkl_pod_record {
        char id[RKL_ID_LEN + 1];
        rkl_pod_spec spec;
        rkl_pod_desired desired;
        rkl_pod_observed observed;
        char *rkt_uuid;  /* NULL until the rkt pod exists */
        char *unit_name; /* NULL until a unit is started */
        rkl_db_bookkeeping book;
} rkl_pod_record;

rkl_pod_record *rkl_pod_record_free(rkl_pod_record *r);
RKL_DEFINE_CLEANUP(rkl_pod_record *, rkl_pod_record_free)
/* Frees an array from rkl_db_pod_list() and its records; returns NULL. */
rkl_pod_record **rkl_pod_record_array_free(rkl_pod_record **a, size_t n);

/* Which sandboxes a list returns; a zeroed filter (or NULL) selects all. */
typedef struct rkl_pod_filter {
        const char *id; /* exact ID */
        bool by_desired;
        rkl_pod_desired desired;
        bool by_phase;
        rkl_pod_phase phase;
        const rkl_kvs *label_selector; /* every pair must be among the labels */
} rkl_pod_filter;

/* Writes that change one object can hand back its record as they committed it (ret, when
 * not NULL; the caller frees it): what the cache publishes, without reading it again. The
 * creates then move *spec into the record (leaving it zeroed) instead of copying it. */

/* Records a new sandbox with the caller's fresh ID: desired ready, phase pending. */
int rkl_db_pod_create(rkl_db *s, const char *pod_id, rkl_pod_spec *spec, rkl_pod_record **ret,
                      rkl_error *reterr);
int rkl_db_pod_get(rkl_db *s, const char *pod_id, rkl_pod_record **ret, rkl_error *reterr);
/* Sorted by accepted time, then ID. */
int rkl_db_pod_list(rkl_db *s, const rkl_pod_filter *filter, rkl_pod_record ***ret, size_t *ret_n,
                    rkl_error *reterr);
int rkl_db_pod_set_desired(rkl_db *s, const char *pod_id, rkl_pod_desired desired,
                           rkl_error *reterr);
/* StopPodSandbox in one transaction: the sandbox and all its containers to stopped. */
int rkl_db_pod_stop(rkl_db *s, const char *pod_id, rkl_error *reterr);
/* Replaces the whole observed state. */
int rkl_db_pod_set_observed(rkl_db *s, const char *pod_id, const rkl_pod_observed *o,
                            rkl_error *reterr);
/* uuid: 36-char lowercase rkt pod UUID, or NULL to forget it (the pod was removed). */
int rkl_db_pod_set_rkt_uuid(rkl_db *s, const char *pod_id, const char *uuid, rkl_error *reterr);
/* unit: systemd unit name, or NULL to forget it. */
int rkl_db_pod_set_unit_name(rkl_db *s, const char *pod_id, const char *unit, rkl_error *reterr);
/* UpdatePodSandboxResources: the pod's own limits, in its config (cpuset_cpus and
 * oom_score_adj of res are not the pod's and are not kept). */
int rkl_db_pod_set_resources(rkl_db *s, const char *pod_id, const rkl_resources *res,
                             rkl_error *reterr);
/* A failed attempt: attempts++, last_error, next retry (realtime ns). Returns the new
 * attempt count. The backoff policy is the caller's. */
int rkl_db_pod_record_error(rkl_db *s, const char *pod_id, const char *error, int64_t next_retry_ns,
                            rkl_error *reterr);
/* A successful attempt: attempts 0, no error, no retry. */
int rkl_db_pod_clear_error(rkl_db *s, const char *pod_id, rkl_error *reterr);
/* Deletes the sandbox with its containers. -ENOENT if absent. */
int rkl_db_pod_delete(rkl_db *s, const char *pod_id, rkl_error *reterr);
/* Resolves a unique ID prefix (1 to 64 hex digits, as crictl users type them) to the full
 * ID. -ENOENT: none matches; -ENOTUNIQ: more than one does. */
int rkl_db_pod_resolve(rkl_db *s, const char *prefix, char ret_id[static RKL_ID_LEN + 1],
                       rkl_error *reterr);

/* Sandboxes' networks: what a DEL of a sandbox's CNI network needs, kept from before its ADD
 * runs until its DEL has succeeded, beyond the sandbox's own removal. Only the reconciler
 * reads and writes them; they are not in the cache. */

typedef enum rkl_pod_network_state {
        RKL_POD_NETWORK_ADDING, /* ADD ran, or may have: a DEL is owed */
        RKL_POD_NETWORK_READY,  /* ADD succeeded: result holds its answer */
        _RKL_POD_NETWORK_STATE_MAX,
        _RKL_POD_NETWORK_STATE_INVALID = -EINVAL,
} rkl_pod_network_state;

typedef struct rkl_pod_network {
        char sandbox_id[RKL_ID_LEN + 1];
        char *rkt_uuid; /* the rkt pod whose namespace it is */
        rkl_pod_network_state state;
        char *network, *config; /* the configuration's name, and the list as ADD ran it */
        char *netns, *ifname, *args, *capabilities; /* the rest of what the plugins got */
        char *result;                               /* ADD's answer; NULL while adding */
        char *check_error;                          /* the last CHECK's failure, or NULL */
        int64_t created_ns, updated_ns;
} rkl_pod_network;

rkl_pod_network *rkl_pod_network_free(rkl_pod_network *n);
RKL_DEFINE_CLEANUP(rkl_pod_network *, rkl_pod_network_free)
rkl_pod_network **rkl_pod_network_array_free(rkl_pod_network **a, size_t n);

/* Inserts or replaces the sandbox's network. */
int rkl_db_pod_network_put(rkl_db *s, const rkl_pod_network *n, rkl_error *reterr);
/* Oldest first. */
int rkl_db_pod_network_list(rkl_db *s, rkl_pod_network ***ret, size_t *ret_n, rkl_error *reterr);
/* Gone already is success. */
int rkl_db_pod_network_delete(rkl_db *s, const char *sandbox_id, rkl_error *reterr);

/* Sandboxes whose RunPodSandbox failed under --wait, from the failure until rktlet has
 * undone them (migrations/0007_sandbox_failure.sql). */

typedef struct rkl_pod_failure {
        char sandbox_id[RKL_ID_LEN + 1];
        int code;      /* -errno: the failure's gRPC code (api/status.c) */
        char *message; /* the last attempt's */
        char *sandbox; /* "namespace/name (attempt N)", for operators */
        int64_t failed_ns;
        int64_t undone_ns; /* the cache's only: when nothing of it was left (0: not yet) */
} rkl_pod_failure;

rkl_pod_failure *rkl_pod_failure_free(rkl_pod_failure *f);
RKL_DEFINE_CLEANUP(rkl_pod_failure *, rkl_pod_failure_free)
rkl_pod_failure **rkl_pod_failure_array_free(rkl_pod_failure **a, size_t n);

/* In one transaction: the failure recorded, and the sandbox's row deleted (its containers
 * with it). -ENOENT when the sandbox is gone already (nothing recorded then). */
int rkl_db_pod_withdraw(rkl_db *s, const rkl_pod_failure *f, rkl_error *reterr);
/* Oldest first. */
int rkl_db_pod_failure_list(rkl_db *s, rkl_pod_failure ***ret, size_t *ret_n, rkl_error *reterr);
/* Gone already is success. */
int rkl_db_pod_failure_delete(rkl_db *s, const char *sandbox_id, rkl_error *reterr);

/* Containers. */

typedef struct rkl_container_observed {
        rkl_container_phase phase;
        int64_t pid;
        bool has_exit_code;
        int32_t exit_code;
        int64_t created_ns, started_ns, finished_ns;
        char *reason, *message;
        char *image_ref;       /* the image rkt actually ran (sha512-… or digest) */
        rkl_timeline timeline; /* its start's steps (rkl_container_step), as a sandbox's */
} rkl_container_observed;

void rkl_container_observed_done(rkl_container_observed *o);

/* The reason of a container whose add or start failed for good (containerd's word). */
#define RKL_CONTAINER_START_ERROR "StartError"
/* The reason of a container stopped before rkt ever started it. */
#define RKL_CONTAINER_NOT_STARTED "NotStarted"
/* EXITED without having run, by rktlet's decision (failed for good, or stopped first): it
 * never will run, and what rkt shows of its leftover app no longer changes that. */
static inline bool rkl_container_never_ran(const rkl_container_observed *o)
{
        return o->phase == RKL_CONTAINER_PHASE_EXITED && o->reason &&
               (!strcmp(o->reason, RKL_CONTAINER_START_ERROR) ||
                !strcmp(o->reason, RKL_CONTAINER_NOT_STARTED));
}

typedef struct rkl_container_record {
        char id[RKL_ID_LEN + 1];
        char sandbox_id[RKL_ID_LEN + 1];
        rkl_container_spec spec;
        rkl_container_desired desired;
        rkl_container_observed observed;
        char *app_name;
        int64_t stop_deadline_ns; /* SIGKILL after this (realtime ns); 0: default grace */
        rkl_db_bookkeeping book;
} rkl_container_record;

rkl_container_record *rkl_container_record_free(rkl_container_record *r);
RKL_DEFINE_CLEANUP(rkl_container_record *, rkl_container_record_free)
rkl_container_record **rkl_container_record_array_free(rkl_container_record **a, size_t n);

typedef struct rkl_container_filter {
        const char *id;         /* exact ID */
        const char *sandbox_id; /* exact sandbox ID */
        bool by_desired;
        rkl_container_desired desired;
        bool by_phase;
        rkl_container_phase phase;
        const rkl_kvs *label_selector;
} rkl_container_filter;

/* Records a new container in an existing sandbox (-ENOENT if it is not there): desired
 * created, phase created. app_name is the rkt app name (an ACName: [a-z0-9]+(-[a-z0-9]+)*).
 * image_id is the rkt image ID the image resolved to at create (the container runs that image
 * even if its tag moves), or NULL when it is not known yet (the reconciler resolves it). */
int rkl_db_container_create(rkl_db *s, const char *container_id, const char *pod_id,
                            const char *app_name, const char *image_id, rkl_container_spec *spec,
                            rkl_container_record **ret, rkl_error *reterr);
int rkl_db_container_get(rkl_db *s, const char *container_id, rkl_container_record **ret,
                         rkl_error *reterr);
/* Sorted by accepted time, then ID. */
int rkl_db_container_list(rkl_db *s, const rkl_container_filter *filter,
                          rkl_container_record ***ret, size_t *ret_n, rkl_error *reterr);
/* StopContainer: desired stopped, and SIGKILL at deadline_ns (realtime) for an app still
 * running then. A repeated stop keeps the earliest deadline. */
int rkl_db_container_stop(rkl_db *s, const char *container_id, int64_t deadline_ns,
                          rkl_container_record **ret, rkl_error *reterr);
/* StartContainer: desired running, unless the container is stopped or has run and exited
 * (-EBADFD). Returns 1 when it changed, 0 when it was wanted running already. */
int rkl_db_container_start(rkl_db *s, const char *container_id, rkl_container_record **ret,
                           rkl_error *reterr);
int rkl_db_container_set_observed(rkl_db *s, const char *container_id,
                                  const rkl_container_observed *o, rkl_error *reterr);
int rkl_db_container_record_error(rkl_db *s, const char *container_id, const char *error,
                                  int64_t next_retry_ns, rkl_error *reterr);
int rkl_db_container_clear_error(rkl_db *s, const char *container_id, rkl_error *reterr);
/* UpdateContainerResources: the container's resources, in its config. */
int rkl_db_container_set_resources(rkl_db *s, const char *container_id, const rkl_resources *res,
                                   rkl_error *reterr);
int rkl_db_container_delete(rkl_db *s, const char *container_id, rkl_error *reterr);
int rkl_db_container_resolve(rkl_db *s, const char *prefix, char ret_id[static RKL_ID_LEN + 1],
                             rkl_error *reterr);
