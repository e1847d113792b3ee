/* rkt-sim: a test double of rkt 1.30.0 (stage1 "host"). Internal declarations shared by the
 * simulator's translation units; nothing outside tests/rkt-sim/ includes this. */
#pragma once

#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <json-c/json.h>

#include "base/macro.h"

/* rkt's exit code for every failure (rkt 1.30 uses 254 throughout). */
#define SIM_EXIT_ERROR 254

/* The stage1 tree id every simulated pod records in stage1TreeStoreID. */
#define SIM_STAGE1_TREE                                                                            \
        "deps-sha512-7a3ee81cbd4c8d6ef4e7cde6a3e9d1b3a58ea9b2c8e4b64b7a4bbf6e0ab3b2d1"
#define SIM_STAGE1_NAME    "coreos.com/rkt/stage1-host"
#define SIM_RKT_VERSION    "1.30.0"
#define SIM_APPC_VERSION   "0.8.11"
#define SIM_DEFAULT_DIR    "/var/lib/rkt"
#define SIM_DEFAULT_SUBNET "172.16.28"
/* The bridge that pods attach to in the test's namespace ($RKT_SIM_NETNS), with the subnet's
 * .1 as its address. */
#define SIM_POD_BRIDGE "rklsim0"

/* Parsed global flags and process-wide facts of one invocation. */
typedef struct sim_ctx {
        char *dir;           /* --dir */
        char **insecure;     /* --insecure-options, split on ',' */
        bool debug;          /* --debug */
        char *exe;           /* absolute path of this binary, for re-exec */
        const char *command; /* "app add", "status", ...: what fault rules match */
        bool profile_real;   /* RKT_SIM_PROFILE=real */
        uint64_t start_usec; /* CLOCK_MONOTONIC at start, for latency padding */
        pid_t parent;        /* who ran us, as soon as we ran: a hang ends when it is gone */
} sim_ctx;

/* ---- flags.c: Go pflag/cobra style parsing ---- */
typedef enum sim_flag_type {
        SIM_FLAG_BOOL,   /* --f, --f=true|false */
        SIM_FLAG_STRING, /* --f=v, --f v */
        SIM_FLAG_STRV,   /* repeatable string; with split, also comma separated */
        SIM_FLAG_OPT,    /* optional value: --f (= "true"), --f=v; never takes the next word */
} sim_flag_type;

typedef struct sim_flag {
        const char *name;
        sim_flag_type type;
        void *ptr;          /* bool *, char **, char *** */
        bool split;         /* SIM_FLAG_STRV: split values on ',' */
        bool hidden_attach; /* needs RKT_EXPERIMENT_ATTACH=true */
        bool seen;
} sim_flag;

typedef struct sim_args {
        char **pos;      /* positional arguments */
        char **app_args; /* app add: words between "--" and "---" */
} sim_args;

void sim_args_done(sim_args *a);
/* Parses a command's flags plus rkt's global flags into c; prints cobra's error. */
int sim_cmd_parse(sim_ctx *c, char **argv, sim_flag *flags, size_t n, size_t stop_after,
                  bool app_args, sim_args *ret);
/* Parses argv against flags (n entries). After stop_after positional words (0: never) all
 * remaining words are positional (cobra's SetInterspersed(false) after the pod UUID).
 * app_args enables "-- args ---". On error writes cobra's message to *ret_err. */
int sim_flags_parse(char **argv, sim_flag *flags, size_t n, size_t stop_after, bool app_args,
                    bool attach_enabled, sim_args *ret, char **ret_err);
int sim_parse_bool(const char *s, bool *ret);
bool sim_env_true(const char *name); /* the variable parses as a true Go bool */
/* Go time.ParseDuration subset (ns, us, ms, s, m, h, combined "1m30s"); -EINVAL if invalid. */
int sim_parse_duration(const char *s, int64_t *ret_ns);
/* Kubernetes-style byte quantity as rkt's isolators read it: 64M = 64000000, 64Mi = 2^26. */
int sim_parse_bytes(const char *s, uint64_t *ret);
/* CPU quantity: "500m" -> 500 millicores, "2" -> 2000. */
int sim_parse_millicores(const char *s, uint64_t *ret);
/* Docker reference normalisation as docker2aci does it: "busybox" ->
 * registry "registry-1.docker.io", repo "library/busybox", tag "latest". */
typedef struct sim_docker_ref {
        char *registry, *repo, *tag, *digest;
} sim_docker_ref;
int sim_docker_ref_parse(const char *ref, sim_docker_ref *ret);
void sim_docker_ref_done(sim_docker_ref *r);
/* A strict UUID (8-4-4-4-12 lowercase hex). */
bool sim_uuid_is_valid(const char *s);
/* App names are appc ACNames: [a-z0-9]+ separated by single '-'. */
bool sim_acname_is_valid(const char *s);

/* ---- util.c ---- */
_printf_(1, 2) void sim_err(const char *fmt, ...);                     /* stderr line */
_printf_(1, 2) void sim_out(const char *fmt, ...);                     /* stdout line */
char *sim_path(const sim_ctx *c, const char *fmt, ...) _printf_(2, 3); /* <dir>/... */
int sim_write_file(const char *path, const char *content, mode_t mode);
int sim_write_file_atomic(const char *path, const char *content);
int sim_touch_new(const char *path); /* create/truncate empty file: CREATE + CLOSE_WRITE */
int sim_read_file(const char *path, char **ret);
int64_t sim_mtime_ns(const char *path); /* -errno when missing */
int64_t sim_ctime_ns(const char *path);
bool sim_exists(const char *path);
char *sim_uuid_new(void);
char *sim_sha512_file(const char *path);       /* "sha512-<64 hex>" or NULL */
void sim_random_hex(char *buf, size_t nbytes); /* 2*nbytes hex + NUL */
/* Go's time.Format("2006-01-02 15:04:05.999 -0700 MST") in UTC. */
char *sim_format_time_ms(int64_t ns);
/* Go's time.Time String(): "2006-01-02 15:04:05.999999999 +0000 UTC". */
char *sim_format_time_go(int64_t ns);
/* RFC3339Nano with trailing zeros trimmed, UTC ("Z"). */
char *sim_format_rfc3339nano(int64_t ns);
void sim_sleep_ms(uint64_t ms);
/* RKT_SIM_PROFILE=real: sleep until the command has taken at least ms since start. */
void sim_profile_pad(const sim_ctx *c, uint64_t ms);
bool sim_lock_held(const char *dir_path); /* flock(LOCK_SH|LOCK_NB) says EWOULDBLOCK */
/* json-c helpers: compact output the way Go's encoding/json writes it. */
const char *sim_json_str(struct json_object *o, const char *key);
char *sim_json_go(struct json_object *o, bool pretty);
struct json_object *sim_json_read(const char *path);
/* appc's [{"name": ..., "value": ...}] lists (labels, annotations, environment). */
struct json_object *sim_json_kv(const char *name, const char *value);
const char *sim_json_kv_get(struct json_object *arr, const char *name);
int sim_json_write_atomic(const char *path, struct json_object *o);
/* Copies a tree (files, dirs, symlinks, modes, owners) like cp -a; runs /bin/cp. */
int sim_copy_tree(const char *src, const char *dst);
int sim_run(char *const argv[]); /* runs argv to completion, stdio inherited; exit status */
/* A child that starts with no signal blocked and every disposition at its default (the
 * supervisor blocks the ones it reads from a signalfd), plus the flags in extra. */
void sim_spawnattr_clean_signals(posix_spawnattr_t *attr, short extra);

/* ---- faults.c ---- */
typedef enum sim_fault_kind {
        SIM_FAULT_NONE,
        SIM_FAULT_FAIL,
        SIM_FAULT_HANG,
        SIM_FAULT_CRASH_AFTER,
        SIM_FAULT_NEVER_READY,
        SIM_FAULT_APP_DIE,
        SIM_FAULT_APP_SIGNAL,
        SIM_FAULT_SLOW_STOP,
} sim_fault_kind;

typedef struct sim_fault {
        sim_fault_kind kind;
        int code;      /* fail: exit code; die: exit code; signal: signal number; slow-stop: ms */
        char *message; /* fail */
        char *step;    /* crash-after */
        uint64_t after_ms;
} sim_fault;

void sim_fault_done(sim_fault *f);
/* Finds the first rule in $RKT_SIM_FAULTS for command words `command` ("app add") and one of
 * the given kinds; returns true and fills *ret when found. Re-read at every call. */
bool sim_fault_find(const char *command, sim_fault_kind kind, sim_fault *ret);
bool sim_fault_find_app(const char *app, sim_fault *ret);
/* fail/hang rules for the current command: called once at start. */
void sim_fault_check_command(const sim_ctx *c);
/* crash-after rules: SIGKILLs this process when a rule names this step. */
void sim_fault_step(const sim_ctx *c, const char *step);
/* Parses one rule line (tests): returns 0 and fills words (space-joined) and fault. */
int sim_fault_parse_line(const char *line, char **ret_words, sim_fault *ret);

/* ---- pod.c: the pod directory as rkt keeps it ---- */
typedef enum sim_pod_state {
        SIM_POD_EMBRYO,
        SIM_POD_PREPARING,
        SIM_POD_ABORTED_PREPARE,
        SIM_POD_PREPARED,
        SIM_POD_RUNNING,
        SIM_POD_EXITED,
        SIM_POD_EXITED_GARBAGE,
        SIM_POD_EXITED_DELETING,
        SIM_POD_GARBAGE,
        SIM_POD_DELETING,
} sim_pod_state;

typedef struct sim_pod {
        char *uuid;
        char *path;     /* <dir>/pods/<state dir>/<uuid> */
        char *statedir; /* "run", "prepare", ... */
        sim_pod_state state;
} sim_pod;

void sim_pod_done(sim_pod *p);
const char *sim_pod_state_to_string(sim_pod_state s);
bool sim_pod_after_run(const sim_pod *p);
/* Resolves a UUID or unique prefix; prints rkt's message and returns -errno on failure. */
int sim_pod_find(const sim_ctx *c, const char *uuid, sim_pod *ret, char **ret_err);
char *sim_pod_upper(const sim_pod *p); /* overlay/<stage1 tree>/upper */
bool sim_pod_ready(const sim_pod *p);  /* rkt/supervisor-status -> ready */
char *sim_pod_status_path(const sim_pod *p, const char *app, const char *suffix);
struct json_object *sim_pod_manifest(const sim_pod *p);
int sim_pod_manifest_write(const sim_pod *p, struct json_object *m);
struct json_object *sim_manifest_app(struct json_object *m, const char *app);
/* The v1.App JSON of `rkt app status` (mutable rules) or of status/list (immutable rules). */
struct json_object *sim_app_json(const sim_pod *p, struct json_object *ra, bool mutable_rules);
struct json_object *sim_pod_json(const sim_pod *p);
/* The app's volumes as [{source, target, readonly}]; creates empty volumes' dirs. */
struct json_object *sim_app_mounts(const sim_pod *p, struct json_object *m, struct json_object *ra);
/* The abstract socket name the supervisor of this pod listens on. */
void sim_supervisor_addr(const char *uuid, char *buf, size_t n, size_t *ret_len);
/* Sends one request line to the pod's supervisor and waits for its one-line answer. */
int sim_supervisor_call(const char *uuid, const char *request, char **ret_reply);
/* Frees the pod's IP in the data dir's allocation directory. */
void sim_net_free(const sim_ctx *c, const char *uuid);

int sim_cmd_status(sim_ctx *c, char **argv);
int sim_cmd_list(sim_ctx *c, char **argv);
int sim_cmd_stop(sim_ctx *c, char **argv);
int sim_cmd_rm(sim_ctx *c, char **argv);
int sim_cmd_gc(sim_ctx *c, char **argv);

/* ---- sandbox.c ---- */
int sim_cmd_sandbox(sim_ctx *c, char **argv);

/* ---- podnet.c: the pod's network namespace, with $RKT_SIM_NETNS ---- */
typedef struct sim_podnet {
        pid_t holder; /* the process holding the pod's namespace; 0: none */
        char *path;   /* /proc/<holder>/ns/net */
        char *outer;  /* the test's namespace the bridge is in ($RKT_SIM_NETNS) */
        char *veth;   /* the outer end of the pod's veth pair, once created */
} sim_podnet;

/* Gives the pod a network namespace with eth0 = ip/24 on a veth whose outer end is on the
 * test's bridge. On failure, what was made is left in n for sim_podnet_teardown(). */
int sim_podnet_setup(sim_podnet *n, const char *exe, const char *outer, const char *uuid,
                     const char *ip, char **ret_err);
/* The supervisor reaped pid: forget the holder if it was it (its PID may be reused). */
void sim_podnet_holder_gone(sim_podnet *n, pid_t pid);
/* Deletes the veth pair and ends the holder; the namespace goes with its last process. */
void sim_podnet_teardown(sim_podnet *n);
/* setns() into the network namespace at path. */
int sim_podnet_join(const char *path);
/* Hidden: the process that holds a pod's network namespace. */
int sim_cmd_netns_holder(int argc, char **argv);

/* ---- app.c ---- */
int sim_cmd_app_add(sim_ctx *c, char **argv);
int sim_cmd_app_start(sim_ctx *c, char **argv);
int sim_cmd_app_stop(sim_ctx *c, char **argv);
int sim_cmd_app_rm(sim_ctx *c, char **argv);
int sim_cmd_app_status(sim_ctx *c, char **argv);
int sim_cmd_app_list(sim_ctx *c, char **argv);
int sim_cmd_enter(sim_ctx *c, char **argv); /* also `app exec` */
/* Hidden: the process that becomes an app (cgroups, mounts, chroot, ids, exec). */
int sim_cmd_stage2(int argc, char **argv);

/* ---- image.c ---- */
int sim_cmd_image_fetch(sim_ctx *c, char **argv);
int sim_cmd_image_list(sim_ctx *c, char **argv);
int sim_cmd_image_cat_manifest(sim_ctx *c, char **argv);
int sim_cmd_image_rm(sim_ctx *c, char **argv);
/* Finds an image in the store by id (or prefix) or docker/appc name; returns the full id. */
int sim_image_lookup(const sim_ctx *c, const char *ref, char **ret_id);
struct json_object *sim_image_manifest(const sim_ctx *c, const char *id);
char *sim_image_tree(const sim_ctx *c, const char *id); /* cas/tree/<treeStoreID> */
void sim_image_touch(const sim_ctx *c, const char *id); /* updates last_used_time */

/* Cleanup helpers, so that early returns release everything (CONTRIBUTING.md, 'Cleanup'). */
static inline void sim_json_putp(struct json_object **o)
{
        if (*o)
                json_object_put(*o);
}
#define _cleanup_json_ _cleanup_(sim_json_putp)
static inline void sim_pod_donep(sim_pod *p)
{
        sim_pod_done(p);
}
static inline void sim_args_donep(sim_args *a)
{
        sim_args_done(a);
}
#define _cleanup_pod_  _cleanup_(sim_pod_donep)
#define _cleanup_args_ _cleanup_(sim_args_donep)
