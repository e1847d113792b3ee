/* Internals of the reconciler shared between its files: the reconciler's own state, the
 * action record, and each file's functions that the others call. Reconciler thread only,
 * except where a comment says otherwise. */
#pragma once

#include <pthread.h>
#include <stdatomic.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "reconciler.h"
#include "observe.h"
#include "ops.h"
#include "base/config.h"
#include "base/hashmap.h"
#include "base/log.h"
#include "base/workpool.h"
#include "rkt/build.h"
#include "rkt/poddir.h"
#include "rkt/rkt.h"
#include "rkt/watch.h"
#include "store/store.h"
#include "stats/oom.h"

/* Journal fields of a line about the sandbox rec. */
#define POD_OBJECT(rec)                                                                            \
        (&(rkl_log_object){.pod_id = (rec)->id,                                                    \
                           .pod_name = (rec)->spec.name,                                           \
                           .pod_namespace = (rec)->spec.namespace})
/* Journal fields of a line about the container rec: its ID and its sandbox's. */
#define CONTAINER_OBJECT(rec)                                                                      \
        (&(rkl_log_object){.pod_id = (rec)->sandbox_id, .container_id = (rec)->id})

#define MAX_ATTEMPTS                                                                               \
        5 /* failed sandbox creations or container adds/starts before the                          \
           * object fails for good */
#define CONTAINER_MAX_ATTEMPTS                                                                     \
        8 /* adds/starts, ~2 min of backoff, before a container fails for good */
#define START_ERROR_EXIT  128 /* containerd's exit code for a container that could not start */
#define BACKOFF_BASE_NS   (500 * (int64_t)NSEC_PER_MSEC)
#define BACKOFF_MAX_NS    (60 * (int64_t)NSEC_PER_SEC)
#define PENDING_POLL_USEC (50 * USEC_PER_MSEC)
/* How often a sandbox whose rkt pod has not appeared yet has its unit asked after (pods.c):
 * the first time that long after its start, then as often. */
#define UNIT_LOOK_NS (1 * (int64_t)NSEC_PER_SEC)
/* A pending pod not ready this long after its start has its boot looked at (pods.c), and
 * again as often. */
#define BOOT_LOOK_AFTER_NS (5 * (int64_t)NSEC_PER_SEC)
/* The longest an app's exit waits, from the exit, for its output to reach the log
 * (rkl_reconciler__exit_held); containerd waits up to 2 s, but rkt's writer comes later
 * under load. */
#define EXIT_HOLD_NS (5 * (int64_t)NSEC_PER_SEC)
/* How soon a pod is read again for what inotify does not show (a process on its way, a
 * held exit's writer). */
#define RECHECK_NS (20 * (int64_t)NSEC_PER_MSEC)

typedef struct rkl_reconciler_net rkl_reconciler_net;

typedef enum act_kind {
        ACT_APP_ADD,
        ACT_APP_START,
        ACT_APP_STOP,
        ACT_APP_RM,
        ACT_POD_STOP, /* rkt stop, wait for the pod to exit, --force after the grace */
        ACT_POD_RM,   /* rkt rm: frees the pod's network */
        ACT_POD_BOOT, /* a pending pod whose systemd dropped its boot: boot it again */
        ACT_NET_ADD,  /* CNI ADD of a sandbox's network (network.c) */
        ACT_NET_CHECK,
        ACT_NET_DEL,
} act_kind;

typedef struct action {
        struct action *next;
        rkl_reconciler *r;
        act_kind kind;
        char key[RKL_ID_LEN + 1]; /* the object in flight: a container or sandbox ID */
        bool is_pod;
        bool orphan; /* no record: nothing to write back */
        char uuid[RKL_POD_UUID_LEN + 1];
        char *app;       /* the app verbs */
        char *unit_name; /* ACT_POD_RM: "system.slice/<unit>", whose leftover cgroups go */
        /* ACT_APP_ADD: the container (a reference: views never change), the image ID rkt
         * gets and the app's log file name. */
        rkl_container_view *container;
        char *image, *log_file;
        char **entrypoint; /* ACT_APP_ADD: the image's own, for a spec of args alone */
        rkl_kvs sysctls;   /* ACT_APP_ADD: the pod's */
        uint32_t pod_pid;  /* ACT_APP_ADD, ACT_POD_BOOT: the pod's nspawn */
        bool node_hosts;   /* ACT_APP_ADD: a host-network pod's app sees the node's /etc/hosts */
        uint64_t timeout_usec;
        int64_t deadline_ns; /* ACT_APP_STOP: SIGKILL then */
        pid_t supervisor;    /* ACT_APP_STOP, ACT_APP_RM: where the app's cgroup is */
        bool force;          /* ACT_POD_STOP: SIGKILL at once */
        /* The ACT_NET_ verbs: the sandbox's network as recorded (a copy), and what ADD
         * answered. */
        rkl_pod_network *net;
        char *net_result;
        int result;
        char error[512];
} action;

struct rkl_reconciler {
        /* The options, the defaults of their zeros filled in: a copy whose strings are
         * still the daemon's, never freed here. */
        rkl_config cfg;
        rkl_images *images;
        rkl_logs *logs;
        rkl_stats *stats;
        uint64_t resync_interval_usec, stop_grace_usec;
        char *pods_dir;
        rkl_cache *cache;
        rkl_rkt *rkt;
        /* How rkt, the system manager, the pod directories, the clock and the pool are
         * reached (ops.h), and their userdata: the real table and the reconciler, or a
         * test's doubles. */
        const rkl_reconciler_ops *ops;
        void *ops_userdata;
        int kick_fd, quit_fd, done_fd;
        pthread_t thread;
        bool running;

        pthread_mutex_t lock;
        pthread_cond_t cond;
        bool started;
        int thread_error;
        atomic_bool images_unlisted; /* the last image list failed: again at the next probe */
        atomic_bool images_listing;  /* one is on the pool now */
        atomic_bool probe_asked;     /* a listing finished: the stage1 in rkt's store to check */
        /* The stage1 rkt's build names is missing from its store and imported on the pool
         * now: sandboxes wait rather than each import it (reconciler.c, import_stage1()). */
        atomic_bool stage1_importing;
        atomic_bool stage1_import_failed; /* then pods import it, as rkt does by itself */
        bool store_refused;               /* the store failed its check at start: act on nothing */
        atomic_bool checkpoint_asked;     /* by the API's connections: their WAL grew */
        action *done;                     /* finished actions, under lock */

        rkl_workpool *pool;

        /* Stats (rkl_reconciler_get_stats): the oldest kick not yet passed over
         * (CLOCK_MONOTONIC usec, 0: none), a copy of n_in_flight, passes run. */
        _Atomic uint64_t kick_since_usec;
        atomic_uint in_flight_seen;
        _Atomic uint64_t n_passes;

        /* Reconciler thread only. */
        rkl_store *store; /* this thread's connection, and the shared cache */
        sd_event *event;
        sd_event_source *pass_source, *wake_source;
        sd_bus *bus;
        rkl_rkt_build_memo rkt_memo; /* the rkt binary's sha256, for its build record */
        rkl_poddir_watch *watch;
        int pods_dirfd;
        rkl_hashmap *seen;        /* uuid -> rkl_poddir_pod*: each pod as last read */
        rkl_hashmap *in_flight;   /* object ID -> action* */
        unsigned n_in_flight;     /* rkt's commands (and the boot check) */
        unsigned n_net_in_flight; /* CNI plugin runs: slots of their own */
        /* Container ID -> its own copy: the last add or start failed and may have left a
         * half-made app that no start can run, to rm before the next start. Memory only: after
         * a crash the first start that fails sets it again, one attempt later. */
        rkl_hashmap *undo;
        rkl_hashmap *limits;     /* container ID -> the resources last applied (resources.c) */
        rkl_hashmap *pod_limits; /* sandbox ID -> the pod's own limits last applied (the same) */
        rkl_hashmap *rm_owed;    /* uuid -> its copy: pods whose next app add waits for an rm */
        /* Key of a leftover's action (a pod's uuid, an app's container ID) -> step_retry*:
         * its failures, and when it is tried again (orphans.c). */
        rkl_hashmap *orphan_retries;
        rkl_hashmap *boot_looks; /* uuid -> boot_look*: pending pods whose boot was checked */
        rkl_hashmap *unit_looks; /* sandbox ID -> unit_look*: when its unit is next asked after */
        /* rktlet's units as the manager last listed them (pods.c): name -> its state in
         * unit_active, both owned by unit_names; when. */
        rkl_hashmap *unit_states;
        char **unit_names;
        int *unit_active;
        int64_t unit_states_ns;
        /* Object ID -> step_marks*: the timeline of each start under way, ahead of the store
         * (observing.c, 'Timelines'). */
        rkl_hashmap *steps;
        rkl_oom_log *oom_log;    /* the kernel's OOM kills; NULL when /dev/kmsg cannot be read */
        rkl_reconciler_net *net; /* pod networking (network.c); NULL with rkt's own (--net) */
        int64_t wake_at_ns;      /* earliest time a pass must run again; 0: none */
        char **recheck;          /* pods to read again at the next pass: what inotify cannot see */
        uint64_t logs_told; /* what the log follower was last told (rkl_reconciler__sync_logs) */
        bool rescan;
        bool stats_new;           /* something started running: refresh the stats after the pass */
        int64_t failures_look_ns; /* the next rescan for withdrawn sandboxes' leftovers */
};

/* reconciler.c */
/* The operations of ops.h, called with their userdata. */
#define RKL_OPS(r, verb, ...) ((r)->ops->verb((r)->ops_userdata, ##__VA_ARGS__))
/* Now, by the reconciler's clock (ops.h's now_ns). */
int64_t rkl_reconciler__now(rkl_reconciler *r);
int64_t rkl_reconciler__backoff_ns(uint32_t attempts);
void rkl_reconciler__schedule_pass(rkl_reconciler *r);
void rkl_reconciler__wake_at(rkl_reconciler *r, int64_t t);
/* A step with no record to keep its failures (a leftover's rm, a forgotten sandbox's
 * network DEL): its failures in a map keyed by an object's ID or a pod's uuid, which
 * borrows the key inside the entry. */
typedef struct step_retry {
        char key[RKL_ID_LEN + 1];
        uint32_t attempts;
        int64_t next_ns; /* tried again from then on (after the backoff) */
} step_retry;
/* Counts a failure of key's step in m, puts its next try off by the backoff and wakes a
 * pass then; returns the entry. Forget it with free(rkl_hashmap_remove(m, key)). */
step_retry *rkl_reconciler__retry_failed(rkl_reconciler *r, rkl_hashmap *m, const char *key);
/* Whether key's step waits for its next try (a pass is woken then). */
bool rkl_reconciler__retry_waits(rkl_reconciler *r, const rkl_hashmap *m, const char *key,
                                 int64_t now);

/* observing.c */
/* ---- Writing observations and errors back ---- */

/* A write that failed: the object keeps its recorded state, and the next pass, seeing
 * the same difference, tries again. Gone is no failure: its removal ends the work. */
void rkl_reconciler__write_failed(const char *kind, const char *id, const char *what, int k,
                                  const rkl_error *err);
void rkl_reconciler__pod_set_observed(rkl_reconciler *r, const rkl_pod_record *rec,
                                      const rkl_pod_observed *o);
/* The container's observed state written through the store, with its timeline. */
void rkl_reconciler__container_set_observed(rkl_reconciler *r, const rkl_container_record *rec,
                                            const rkl_container_observed *o);
/* ---- Timelines ---- */
/* A step of a start seen now: kept in memory and written with the object's next observation
 * (never in a commit of its own). The first step of an attempt (the unit's start, an app
 * add) begins its timeline anew, an app start its own steps; any other step counts once. */
void rkl_reconciler__pod_step(rkl_reconciler *r, const rkl_pod_record *rec, rkl_pod_step step);
void rkl_reconciler__container_step(rkl_reconciler *r, const rkl_container_record *rec,
                                    rkl_container_step step);
/* When the current attempt reached step, by the steps kept or stored (realtime ns; 0: not
 * reached). After a restart of the daemon it may be an earlier attempt's, older than the
 * current attempt's start. */
int64_t rkl_reconciler__pod_step_ns(rkl_reconciler *r, const rkl_pod_record *rec,
                                    rkl_pod_step step);
/* Forgets the steps of objects no longer in the cache (removed while starting). */
void rkl_reconciler__steps_sweep(rkl_reconciler *r);
void rkl_reconciler__steps_free(rkl_reconciler *r);
/* Is the app's process there yet? (see rkl_app_proc) */
rkl_app_proc rkl_reconciler__app_process(rkl_reconciler *r, const rkl_container_record *rec,
                                         const rkl_poddir_pod *p, pid_t *ret_pid);
/* ---- Observing pod directories ---- */
int rkl_reconciler__pods_dirfd(rkl_reconciler *r);
/* When the current creation attempt of a sandbox began: a retry starts once the backoff of
 * the last failure ran out. */
int64_t rkl_reconciler__attempt_start_ns(const rkl_pod_record *rec);
/* A live pod marked for a sandbox being created, whose UUID is not recorded yet, is that
 * creation's (the daemon crashed, or the uuid file was not read yet), unless it was made
 * before the current attempt began: an earlier attempt's pod on its way down, which must
 * not count against the new attempt, nor live on in a sandbox that failed for good. */
bool rkl_reconciler__pod_adoptable(const rkl_pod_record *rec, const rkl_poddir_pod *p);
void rkl_reconciler__observe_uuid(rkl_reconciler *r, const char *uuid);
void rkl_reconciler__rescan(rkl_reconciler *r);

/* containers.c */
/* Tells the log follower which containers to follow: those that ran, the exited ones to
 * finish. Only when the containers changed since it was last told. */
void rkl_reconciler__sync_logs(rkl_reconciler *r);
/* Whether c's exit (co, just observed) is to wait before it is recorded: until rkt's writer
 * of its output is gone and the follower has copied all of it, bounded (docs/logs.md). */
bool rkl_reconciler__exit_held(rkl_reconciler *r, const rkl_pod_record *pod,
                               const rkl_poddir_pod *p, const rkl_container_record *c,
                               const rkl_container_observed *co);

/* Whether rkt's writer of c's output (iottymux) is gone while c runs (co, just observed,
 * and before): the log follower says so then, once. */
void rkl_reconciler__log_writer_look(rkl_reconciler *r, const rkl_poddir_pod *p,
                                     const rkl_container_record *c,
                                     const rkl_container_observed *co);

/* resources.c */
/* Writes a running container's resources into its cgroups unless these very values were
 * written already (since the start of the daemon). */
void rkl_reconciler__limits_sync(rkl_reconciler *r, const rkl_container_record *c,
                                 const rkl_poddir_pod *p);
void rkl_reconciler__limits_forget(rkl_reconciler *r, const char *id);
/* The app's own memory cgroup as last seen running (NULL: not seen since the start). */
const char *rkl_reconciler__app_memory_dir(rkl_reconciler *r, const char *id);
/* Both maps: the containers' and the pods'. */
void rkl_reconciler__limits_free_all(rkl_reconciler *r);
/* Puts a running sandbox's own limits (UpdatePodSandboxResources) on its unit, unless these
 * very values were put there already since the start of the daemon. */
void rkl_reconciler__pod_limits_sync(rkl_reconciler *r, const rkl_pod_record *rec);
void rkl_reconciler__pod_limits_forget(rkl_reconciler *r, const char *id);
/* Hands the stats collector what runs now. */
void rkl_reconciler__stats_refresh(rkl_reconciler *r);

/* orphans.c */
/* Stops a unit no record wants (no wait for the job); a failure is logged, since the next
 * pass finds the unit again and retries. Gone already is success. */
void rkl_reconciler__unit_stop(rkl_reconciler *r, const char *unit);

/* actions.c */
/* ---- Actions on the worker pool ---- */

/* Where the system manager puts a sandbox's unit (transient units go to system.slice). */
char *rkl_reconciler__unit_cgroup_path(const char *sandbox_id);
void rkl_reconciler__action_free(action *a);
#define ACT_MASK(kind) (1u << (kind))
#define ACT_ANY        (~0u)
/* Whether an action of one of kinds (a mask of ACT_MASK()s) runs on the pod with uuid, under
 * whatever key (a container's, its sandbox's, the pod's own as an orphan). */
bool rkl_reconciler__pod_in_flight(rkl_reconciler *r, const char *uuid, unsigned kinds);
bool rkl_reconciler__can_start(rkl_reconciler *r, const char *key);
/* The same for a CNI verb (ACT_NET_*): plugins are no rkt command, and have max_actions slots
 * of their own, so that a sandbox's network is not queued behind other pods' app adds. */
bool rkl_reconciler__can_start_net(rkl_reconciler *r, const char *key);
/* app: the app verbs' app, else NULL. */
action *rkl_reconciler__action_new(rkl_reconciler *r, act_kind kind, const char *key,
                                   const char *uuid, const char *app);
void rkl_reconciler__submit(rkl_reconciler *r, action *a);
/* The result of a finished action, back on the reconciler thread. */
void rkl_reconciler__apply_result(rkl_reconciler *r, action *a);

/* pods.c */
/* A failed attempt: shown in Status and the database, retried after a backoff. */
void rkl_reconciler__pod_failed_attempt(rkl_reconciler *r, const rkl_pod_record *rec,
                                        const char *msg);
/* A failed ADD of the sandbox's network (or no configuration to add): this creation attempt
 * fails and is undone, as one whose pod did not come up. */
void rkl_reconciler__pod_network_failed(rkl_reconciler *r, const rkl_pod_record *rec,
                                        const char *msg);
/* ---- Sandboxes ---- */
char *rkl_reconciler__pod_state_path(rkl_reconciler *r, const char *id, const char *name);
void rkl_reconciler__boot_look_forget(rkl_reconciler *r, const char *uuid);
/* Forgets when the units of sandboxes that no longer wait for their pod are to be asked
 * after. */
void rkl_reconciler__unit_looks_sweep(rkl_reconciler *r);
void rkl_reconciler__unit_states_free(rkl_reconciler *r);
void rkl_reconciler__step_pending(rkl_reconciler *r, const rkl_pod_record *rec,
                                  const rkl_poddir_pod *p, int64_t now);
void rkl_reconciler__step_stopping(rkl_reconciler *r, const rkl_pod_record *rec,
                                   const rkl_poddir_pod *p);

/* containers.c */
void rkl_reconciler__undo_mark(rkl_reconciler *r, const char *id);
void rkl_reconciler__undo_clear(rkl_reconciler *r, const char *id);
/* A failed add or start: retried with backoff, and after MAX_ATTEMPTS the container fails
 * for good, EXITED with containerd's StartError and 128, so that kubelet sees it and acts
 * (its restart policy) instead of waiting on a container that never runs. */
void rkl_reconciler__container_failed_attempt(rkl_reconciler *r, const rkl_container_record *rec,
                                              const char *msg);
/* rkt's app add, start and rm each rewrite the pod's manifest and reload the pod's systemd;
 * two at once in one pod make one fail with a bare "exit status 254" (seen on rkt 1.30 with
 * two containers created together). One at a time per pod; app stop may overlap them. */
bool rkl_reconciler__pod_app_busy(rkl_reconciler *r, const char *uuid);
void rkl_reconciler__step_container(rkl_reconciler *r, const rkl_pod_record *pod,
                                    const rkl_poddir_pod *p, const rkl_container_record *c,
                                    int64_t now);

/* orphans.c */
/* Whether an app add in p waits for the removal of a leftover app (an app of a removed
 * container): an add went there since the last one, and one is left to remove. Called for
 * adds only; rkl_reconciler__pod_add_submitted() after each. */
bool rkl_reconciler__pod_rm_due(rkl_reconciler *r, const rkl_poddir_pod *p);
void rkl_reconciler__pod_add_submitted(rkl_reconciler *r, const rkl_poddir_pod *p);
/* The pod no longer runs: nothing is owed there. */
void rkl_reconciler__pod_rm_forget(rkl_reconciler *r, const char *uuid);
void rkl_reconciler__reap_orphan_apps(rkl_reconciler *r, const rkl_poddir_pod *p, int64_t now);
void rkl_reconciler__reap_orphan_pods(rkl_reconciler *r, int64_t now);
/* State directories (the uuid file, the sandbox's log) of sandboxes no record wants and no
 * pod of rktlet's still carries: a sandbox stopped (its pod removed) and then removed leaves
 * no pod for the orphan pass to find, so its directory goes here, at the next rescan. */
void rkl_reconciler__reap_orphan_state_dirs(rkl_reconciler *r);
/* Sandboxes withdrawn after failing under --wait (pods.c): each failure is forgotten, which
 * answers its waiting RunPodSandbox, once nothing of the sandbox is left: no network held,
 * no state directory (which stays while a pod of its attempts or its unit's cgroups do).
 * Until then a rescan a second. */
void rkl_reconciler__failures_sweep(rkl_reconciler *r);
/* Units of sandboxes no record wants (deleted while rktlet was down, or between a delete
 * and its clean-up). Stopping one takes its pod down; the pod's directory is an orphan the
 * pass removes next. */
void rkl_reconciler__reap_orphan_units(rkl_reconciler *r);

/* network.c: pod networking through CNI (docs/networking.md). Each sandbox's network is
 * recorded (sandbox_network) before its ADD runs and forgotten once its DEL succeeded; in
 * between, whatever happens to the sandbox or the daemon, the record says a DEL is owed. */

/* Sets pod networking up when the reconciler runs CNI (not --net): new() at creation; start()
 * on the reconciler thread, before the first probe, loads the recorded networks and the
 * configuration and watches its directory. */
void rkl_reconciler__net_new(rkl_reconciler *r);
void rkl_reconciler__net_start(rkl_reconciler *r);
/* Drops the directory's watch (before the event loop goes); free() does the rest. */
void rkl_reconciler__net_stop(rkl_reconciler *r);
void rkl_reconciler__net_free(rkl_reconciler *r);
/* What Status says of the network. */
void rkl_reconciler__net_health(rkl_reconciler *r, rkl_health *h);
/* Why the sandbox cannot have a network now (no usable configuration), or NULL. */
const char *rkl_reconciler__net_unavailable(rkl_reconciler *r, const rkl_pod_record *rec);
/* Whether a network of the sandbox's is recorded, still to be deleted or in use. */
bool rkl_reconciler__net_held(rkl_reconciler *r, const char *sandbox_id);
/* Whether the sandbox's current pod has its network (or needs none). */
bool rkl_reconciler__net_ready(rkl_reconciler *r, const rkl_pod_record *rec);
/* A pending sandbox whose pod has its namespace: its ADD, when due. True when this attempt
 * failed instead (no configuration to add). */
bool rkl_reconciler__net_step_pending(rkl_reconciler *r, const rkl_pod_record *rec,
                                      const rkl_poddir_pod *p);
/* A running sandbox: its network CHECKed once after the daemon started. */
void rkl_reconciler__net_step_running(rkl_reconciler *r, const rkl_pod_record *rec,
                                      const rkl_poddir_pod *p);
/* Whether a stopped sandbox's pod must stay until its DEL: the namespace the DEL works in
 * goes with the pod. False once the DEL failed a few times: its pod goes then, and the
 * DEL goes on without the namespace, as plugins must allow. */
bool rkl_reconciler__net_holds_pod(rkl_reconciler *r, const rkl_pod_record *rec);
/* DELs of networks no sandbox wants any more: removed, stopped, an earlier attempt's. */
void rkl_reconciler__net_reap(rkl_reconciler *r, int64_t now);
/* The worker's part of an ACT_NET_ verb, and its result on the reconciler thread. */
int rkl_reconciler__net_run(action *a);
void rkl_reconciler__net_apply(rkl_reconciler *r, action *a);
