/* The project's own model of CRI objects: what api/ converts protobuf into, what store/
 * persists and what reconciler/ acts on. Plain value types with _done()/_free(). */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Limits enforced at the API boundary (CONTRIBUTING.md, 'Validation') and again by the store. */
#define RKL_ID_LEN    64  /* CRI IDs are 64 lowercase hex */
#define RKL_MAX_NAME  253 /* names, namespaces, uids (DNS subdomain) */
#define RKL_MAX_KEY   317 /* label/annotation keys: prefix 253 + '/' + name 63 */
#define RKL_MAX_VALUE 65536
#define RKL_MAX_KV    1024 /* labels or annotations per object */
/* Keys and values of an object's labels, and of its annotations, together: Kubernetes' own
 * limit on an object's annotations (256 KiB), applied to its labels too. */
#define RKL_MAX_KV_BYTES (256 * 1024)
#define RKL_MAX_PATH     4096
#define RKL_MAX_ARGS     4096
#define RKL_MAX_ARG      (128 * 1024)
#define RKL_MAX_ENVS     4096
#define RKL_MAX_MOUNTS   256
#define RKL_MAX_PORTS    256
#define RKL_MAX_DNS      64
#define RKL_MAX_STRING   65536 /* any other client string */

typedef struct rkl_kv {
        char *key;
        char *value;
} rkl_kv;

/* An ordered list of key/value pairs; keys are unique. */
typedef struct rkl_kvs {
        rkl_kv *items;
        size_t n;
} rkl_kvs;

void rkl_kvs_done(rkl_kvs *l);
void rkl_kvs_add(rkl_kvs *l, const char *key, const char *value); /* copies */
const char *rkl_kvs_get(const rkl_kvs *l, const char *key);
void rkl_kvs_copy(rkl_kvs *dst, const rkl_kvs *src);

typedef enum rkl_protocol {
        RKL_PROTOCOL_TCP = 0,
        RKL_PROTOCOL_UDP = 1,
        RKL_PROTOCOL_SCTP = 2,
        _RKL_PROTOCOL_MAX,
} rkl_protocol;

typedef struct rkl_port_mapping {
        rkl_protocol protocol;
        int32_t container_port;
        int32_t host_port;
        char *host_ip;
} rkl_port_mapping;

typedef enum rkl_propagation {
        RKL_PROPAGATION_PRIVATE = 0,
        RKL_PROPAGATION_HOST_TO_CONTAINER = 1,
        RKL_PROPAGATION_BIDIRECTIONAL = 2,
        _RKL_PROPAGATION_MAX,
} rkl_propagation;

typedef struct rkl_mount {
        char *container_path;
        char *host_path;
        bool readonly;
        bool selinux_relabel;
        rkl_propagation propagation;
} rkl_mount;

/* What RunPodSandbox asked for. */
typedef struct rkl_pod_spec {
        char *name, *uid, *namespace;
        uint32_t attempt;
        char *hostname;
        char *log_directory;
        char **dns_servers, **dns_searches, **dns_options;
        rkl_port_mapping *ports;
        size_t n_ports;
        rkl_kvs labels, annotations;
        char *cgroup_parent;
        rkl_kvs sysctls;
        bool host_network;
        bool privileged;
        char *runtime_handler;
        /* The pod's own limits (UpdatePodSandboxResources), on the pod's cgroup; 0: unset. */
        int64_t cpu_period, cpu_quota, cpu_shares, memory_limit;
} rkl_pod_spec;

void rkl_pod_spec_done(rkl_pod_spec *s);

/* A pod's bandwidth limits, from the annotations kubelet reads them from. */
#define RKL_ANNOTATION_INGRESS_BANDWIDTH "kubernetes.io/ingress-bandwidth"
#define RKL_ANNOTATION_EGRESS_BANDWIDTH  "kubernetes.io/egress-bandwidth"
#define RKL_BANDWIDTH_MIN                1000ULL             /* 1k, as kubelet bounds them */
#define RKL_BANDWIDTH_MAX                1000000000000000ULL /* 1P */
/* In bits per second, 0 where the annotation is absent. -EINVAL for a value that is no
 * quantity or out of bounds, with *ret_key naming its annotation. */
int rkl_pod_bandwidth(const rkl_kvs *annotations, uint64_t *ret_ingress, uint64_t *ret_egress,
                      const char **ret_key);

typedef enum rkl_seccomp {
        RKL_SECCOMP_RUNTIME_DEFAULT = 0,
        RKL_SECCOMP_UNCONFINED = 1,
        RKL_SECCOMP_LOCALHOST = 2,
        _RKL_SECCOMP_MAX,
} rkl_seccomp;

/* What CreateContainer asked for. */
typedef struct rkl_container_spec {
        char *name;
        uint32_t attempt;
        char *image;      /* the image as the client named it */
        char *user_image; /* as the pod's spec names it (user_specified_image), or NULL */
        char **command, **args;
        char *working_dir;
        rkl_kvs envs;
        rkl_mount *mounts;
        size_t n_mounts;
        rkl_kvs labels, annotations;
        char *log_path; /* relative to the sandbox's log_directory */
        bool stdin_open, stdin_once, tty;
        /* Linux resources; 0 means unset. */
        int64_t cpu_period, cpu_quota, cpu_shares, memory_limit;
        int64_t oom_score_adj;
        char *cpuset_cpus; /* cpuset's list format ("0-1,3"); NULL: unset */
        /* Security context. */
        bool has_run_as_user, has_run_as_group;
        int64_t run_as_user, run_as_group;
        char *run_as_username;
        int64_t *supplemental_groups;
        size_t n_supplemental_groups;
        bool supplemental_groups_strict; /* none of the image's groups for the user */
        bool readonly_rootfs, privileged, no_new_privs;
        char **caps_add, **caps_drop;
        char **masked_paths, **readonly_paths;
        rkl_seccomp seccomp;
        char *seccomp_localhost_ref;
        char *seccomp_unit; /* Localhost: the profile as systemd unit lines, read at create */
} rkl_container_spec;

void rkl_container_spec_done(rkl_container_spec *s);
/* The image by the name a user gave it: user_image when the client said, else image. */
const char *rkl_container_spec_image_name(const rkl_container_spec *s);

/* The kernel's bounds for a container's resources: cgroup v1's cpu.shares (cgroup2's
 * cpu.weight is mapped from them), CFS's period and quota in microseconds, oom_score_adj. */
#define RKL_MIN_CPU_SHARES          2
#define RKL_MAX_CPU_SHARES          262144
#define RKL_MIN_CPU_QUOTA_USEC      1000
#define RKL_MIN_CPU_PERIOD_USEC     1000
#define RKL_MAX_CPU_PERIOD_USEC     1000000
#define RKL_DEFAULT_CPU_PERIOD_USEC 100000 /* CFS's, for a quota given without a period */
#define RKL_MAX_OOM_SCORE_ADJ       1000

/* A container's resources as UpdateContainerResources gives them (the same fields as the
 * spec's; cpuset_cpus is borrowed). */
typedef struct rkl_resources {
        int64_t cpu_period, cpu_quota, cpu_shares, memory_limit, oom_score_adj;
        const char *cpuset_cpus;
} rkl_resources;

/* Desired states: what kubelet last asked for. */
typedef enum rkl_pod_desired {
        RKL_POD_DESIRED_READY = 0,   /* RunPodSandbox accepted */
        RKL_POD_DESIRED_STOPPED = 1, /* StopPodSandbox accepted */
        _RKL_POD_DESIRED_MAX,
        _RKL_POD_DESIRED_INVALID = -EINVAL,
} rkl_pod_desired;

typedef enum rkl_container_desired {
        RKL_CONTAINER_DESIRED_CREATED = 0, /* CreateContainer accepted */
        RKL_CONTAINER_DESIRED_RUNNING = 1, /* StartContainer accepted */
        RKL_CONTAINER_DESIRED_STOPPED = 2, /* StopContainer (or a stop of its pod) accepted */
        _RKL_CONTAINER_DESIRED_MAX,
        _RKL_CONTAINER_DESIRED_INVALID = -EINVAL,
} rkl_container_desired;

/* Observed phases: what the reconciler last saw. */
typedef enum rkl_pod_phase {
        RKL_POD_PHASE_PENDING = 0, /* accepted, not yet running */
        RKL_POD_PHASE_RUNNING = 1, /* supervisor ready */
        RKL_POD_PHASE_FAILED = 2,  /* creation failed for good, or the pod died */
        RKL_POD_PHASE_STOPPED = 3, /* stopped on request */
        _RKL_POD_PHASE_MAX,
        _RKL_POD_PHASE_INVALID = -EINVAL,
} rkl_pod_phase;

typedef enum rkl_container_phase {
        RKL_CONTAINER_PHASE_CREATED = 0, /* CRI CONTAINER_CREATED */
        RKL_CONTAINER_PHASE_RUNNING = 1, /* CRI CONTAINER_RUNNING */
        RKL_CONTAINER_PHASE_EXITED = 2,  /* CRI CONTAINER_EXITED */
        RKL_CONTAINER_PHASE_UNKNOWN = 3, /* CRI CONTAINER_UNKNOWN */
        _RKL_CONTAINER_PHASE_MAX,
        _RKL_CONTAINER_PHASE_INVALID = -EINVAL,
} rkl_container_phase;

/* The steps of a start as the reconciler sees them happen, in the order they happen: each
 * object's timeline (docs/performance.md, 'Where a start's time goes'). */
typedef enum rkl_pod_step {
        RKL_POD_STEP_UNIT_STARTED = 0,  /* systemd started the unit of `rkt app sandbox` */
        RKL_POD_STEP_POD_SEEN = 1,      /* rkt's pod, its uuid, recorded: prepared, stage1 next */
        RKL_POD_STEP_NETNS_SEEN = 2,    /* the pod's network namespace seen: nspawn is up */
        RKL_POD_STEP_NET_ADD_BEGUN = 3, /* the CNI ADD began, on an action slot */
        RKL_POD_STEP_NET_ADD_DONE = 4,
        RKL_POD_STEP_STAGE1_READY = 5, /* the pod's systemd booted: rkt's supervisor is ready */
        RKL_POD_STEP_RUNNING = 6,      /* ready with its network: READY, what --wait waits for */
        _RKL_POD_STEP_MAX,
        _RKL_POD_STEP_INVALID = -EINVAL,
} rkl_pod_step;

typedef enum rkl_container_step {
        RKL_CONTAINER_STEP_ADD_BEGUN = 0, /* `rkt app add` began, on an action slot */
        RKL_CONTAINER_STEP_ADD_DONE = 1,
        RKL_CONTAINER_STEP_START_BEGUN = 2, /* `rkt app start` began */
        RKL_CONTAINER_STEP_START_DONE = 3,
        RKL_CONTAINER_STEP_RUNNING = 4, /* its process exec'd the program: RUNNING */
        _RKL_CONTAINER_STEP_MAX,
        _RKL_CONTAINER_STEP_INVALID = -EINVAL,
} rkl_container_step;

#define RKL_TIMELINE_STEPS 8 /* room for either kind's steps */

/* When each step of an object's start happened: microseconds after the object was recorded
 * (its accepted time), by rktlet's clock, indexed by step; 0 for a step not reached in the
 * current attempt. */
typedef struct rkl_timeline {
        int64_t usec[RKL_TIMELINE_STEPS];
} rkl_timeline;

const char *rkl_pod_step_to_string(rkl_pod_step s);
rkl_pod_step rkl_pod_step_from_string(const char *s);
const char *rkl_container_step_to_string(rkl_container_step s);
rkl_container_step rkl_container_step_from_string(const char *s);

const char *rkl_pod_desired_to_string(rkl_pod_desired d);
rkl_pod_desired rkl_pod_desired_from_string(const char *s);
const char *rkl_container_desired_to_string(rkl_container_desired d);
rkl_container_desired rkl_container_desired_from_string(const char *s);
const char *rkl_pod_phase_to_string(rkl_pod_phase p);
rkl_pod_phase rkl_pod_phase_from_string(const char *s);
const char *rkl_container_phase_to_string(rkl_container_phase p);
rkl_container_phase rkl_container_phase_from_string(const char *s);

/* True for exactly 64 lowercase hex digits. */
bool rkl_id_is_valid(const char *id);
/* A fresh random ID (64 lowercase hex) from getrandom(). */
void rkl_id_new(char ret[static RKL_ID_LEN + 1]);
/* The rkt app name of a container: a valid ACName derived from its ID, so that two CRI
 * names can never collide in one pod (rkt lowercases and folds names). */
char *rkl_container_app_name(const char *container_id);
