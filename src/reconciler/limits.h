/* Resource limits (limits.c): a running container's written into its cgroups, a running
 * sandbox's own put on its unit, each only when these very values were not applied already
 * since the start of the daemon. The state is r->limits. Reconciler thread only. */
#pragma once

typedef struct rkl_reconciler rkl_reconciler;
typedef struct rkl_limits rkl_limits;
typedef struct rkl_pod_record rkl_pod_record;
typedef struct rkl_container_record rkl_container_record;
typedef struct rkl_poddir_pod rkl_poddir_pod;

rkl_limits *rkl_limits_new(void);
rkl_limits *rkl_limits_free(rkl_limits *l);
/* The container's resources, into the cgroups of its app in pod p. */
void rkl_limits_sync(rkl_reconciler *r, const rkl_container_record *c, const rkl_poddir_pod *p);
void rkl_limits_forget(rkl_reconciler *r, const char *id);
/* The app's own memory cgroup as last seen running (NULL: not seen since the start). */
const char *rkl_limits_app_memory_dir(rkl_reconciler *r, const char *id);
/* The sandbox's own limits (UpdatePodSandboxResources), on its unit. */
void rkl_limits_pod_sync(rkl_reconciler *r, const rkl_pod_record *rec);
void rkl_limits_pod_forget(rkl_reconciler *r, const char *id);
