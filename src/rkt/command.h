/* argv builders for the rkt commands that take rktlet's model types (`app sandbox`, `app add`).
 * Pure functions: nothing here runs rkt (action.h does). */
#pragma once

#include <stdbool.h>

#include "base/error.h"
#include "base/model.h"

/* User annotations rktlet puts on every pod it creates, so that it can adopt its own pods
 * after a crash and leave every other pod alone. */
#define RKL_MARK_SANDBOX_ID    "rktlet.io/sandbox-id"
#define RKL_MARK_POD_UID       "rktlet.io/pod-uid"
#define RKL_MARK_POD_NAME      "rktlet.io/pod-name"
#define RKL_MARK_POD_NAMESPACE "rktlet.io/pod-namespace"
#define RKL_MARK_CONTAINER_ID  "rktlet.io/container-id"

typedef struct rkl_rkt_sandbox_opts {
        const char *sandbox_id;
        const char *uuid_file;     /* --uuid-file-save */
        const char *log_dir;       /* private dir where rkt writes app logs (k8s-plain) */
        const char *net;           /* rkt's --net for non-host pods; NULL: none (rktlet's CNI) */
        const char *stage1_name;   /* --stage1-name; NULL: rkt's default stage1 */
        const char *node_hostname; /* hostname of host-network pods */
} rkl_rkt_sandbox_opts;

/* The arguments after the rkt binary and global flags for `rkt app sandbox`, which the
 * sandbox's systemd unit runs. -EINVAL (with the reason in reterr) for what rkt cannot
 * express. *ret_insecure gets extra --insecure-options (privileged pods) or NULL. */
int rkl_rkt_sandbox_args(const rkl_pod_spec *spec, const rkl_rkt_sandbox_opts *o, char ***ret,
                         const char **ret_insecure, rkl_error *reterr);

/* Who the app runs as, resolved from the image (image-user.h). */
typedef struct rkl_rkt_ids {
        bool set; /* false: the image's own user and group, as rkt takes them */
        int64_t uid, gid;
        int64_t *groups; /* the image's groups that list the user as a member */
        size_t n_groups;
} rkl_rkt_ids;

typedef struct rkl_rkt_app_opts {
        const char *container_id;
        const char *app_name;
        const char *image;             /* image ID (sha512-...) or reference */
        char *const *image_entrypoint; /* the image's own entrypoint, for args-only specs */
        const char *log_file;          /* flat file name under the sandbox's log_dir */
        const rkl_rkt_ids *ids;        /* NULL or unset: run_as_* as the spec says */
        const rkl_kvs *pod_sysctls;    /* set in the pod's namespaces before the app is added */
        const char *pod_hostname;      /* the pod's, as its spec gives it */
        uint32_t pod_pid;              /* the pod's nspawn (its ppid file) */
        const char *hosts_file;        /* NULL, or bound read-only at /etc/hosts unless the
                                        * spec mounts a file there (host-network pods) */
} rkl_rkt_app_opts;

/* What `rkt app add` has no flag for, as a systemd drop-in for the app's unit in the pod
 * (CapabilityBoundingSet=, NoNewPrivileges=, a localhost seccomp profile), or NULL when the
 * spec needs none. */
char *rkl_rkt_app_dropin(const rkl_container_spec *spec);

/* A localhost seccomp profile (OCI JSON) as the lines of a [Service] section, in *ret;
 * -EINVAL with the reason for what systemd's SystemCallFilter= cannot express exactly. */
int rkl_rkt_seccomp_profile_to_unit(const char *json, size_t len, char **ret, rkl_error *reterr);

/* The seccomp filter the spec's app runs under (rktlet's or rkt's, not nspawn's on the whole
 * pod), as the systemd unit lines the exec helper takes (rkl_exec_opts.seccomp); NULL when
 * none. */
char *rkl_rkt_exec_seccomp(const rkl_container_spec *spec);

/* -EINVAL, naming the field, for a container spec rkt cannot run as asked (checked when
 * CreateContainer is accepted, and again when the arguments are built). */
int rkl_rkt_container_spec_check(const rkl_container_spec *spec, rkl_error *reterr);

/* `rkt app add UUID IMAGE ...` arguments. */
int rkl_rkt_app_add_args(const char *uuid, const rkl_container_spec *spec,
                         const rkl_rkt_app_opts *o, char ***ret, rkl_error *reterr);
