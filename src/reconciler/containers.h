/* Containers (containers.c): the step from a container's desired state to rkt's app add,
 * start, stop and rm, the undo of a half-made app, the failures that make a container never
 * run, and what the log follower is told of them. The state is r->containers. Reconciler
 * thread only. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "base/time-util.h"

typedef struct rkl_reconciler rkl_reconciler;
typedef struct rkl_containers rkl_containers;
typedef struct rkl_pod_record rkl_pod_record;
typedef struct rkl_container_record rkl_container_record;
typedef struct rkl_container_observed rkl_container_observed;
typedef struct rkl_poddir_pod rkl_poddir_pod;

/* The longest an app's exit waits, from the exit, for its output to reach the log
 * (rkl_containers_exit_held()); containerd waits up to 2 s, but rkt's writer comes later
 * under load. */
#define EXIT_HOLD_NS (5 * (int64_t)NSEC_PER_SEC)

rkl_containers *rkl_containers_new(void);
rkl_containers *rkl_containers_free(rkl_containers *c);

/* The step of container c of the running sandbox pod, whose pod p runs and is ready. */
void rkl_containers_step(rkl_reconciler *r, const rkl_pod_record *pod, const rkl_poddir_pod *p,
                         const rkl_container_record *c, int64_t now);
/* A failed add or start: retried with backoff, and after CONTAINER_MAX_ATTEMPTS the
 * container fails for good, EXITED with containerd's StartError and 128, so that kubelet
 * sees it and acts (its restart policy) instead of waiting on a container that never runs. */
void rkl_containers_failed_attempt(rkl_reconciler *r, const rkl_container_record *rec,
                                   const char *msg);
/* The last add or start of container id failed and may have left a half-made app that no
 * start can run: it is rm'd before the next start (mark), or no longer (clear). Memory
 * only: after a crash the first start that fails marks it again, one attempt later. */
void rkl_containers_undo_mark(rkl_reconciler *r, const char *id);
void rkl_containers_undo_clear(rkl_reconciler *r, const char *id);

/* Tells the log follower which containers to follow: those that ran, the exited ones to
 * finish. Only when the containers changed since it was last told. */
void rkl_containers_sync_logs(rkl_reconciler *r);
/* Whether c's exit (co, just observed) is to wait before it is recorded: until rkt's writer
 * of its output is gone and the follower has copied all of it, bounded (docs/logs.md). */
bool rkl_containers_exit_held(rkl_reconciler *r, const rkl_pod_record *pod, const rkl_poddir_pod *p,
                              const rkl_container_record *c, const rkl_container_observed *co);
/* Whether rkt's writer of c's output (iottymux) is gone while c runs (co, just observed,
 * and before): the log follower says so then, once. */
void rkl_containers_log_writer_look(rkl_reconciler *r, const rkl_poddir_pod *p,
                                    const rkl_container_record *c,
                                    const rkl_container_observed *co);
