/* Sandboxes (pods.c): starting a pod's unit (`rkt app sandbox` under systemd), waiting for
 * it to be ready, counting failed creations, and stopping and removing a pod no longer
 * wanted. The state is r->pods: when pending pods' boots and units were looked at, and the
 * manager's last list of rktlet's units. Reconciler thread only. */
#pragma once

#include <stdint.h>

typedef struct rkl_reconciler rkl_reconciler;
typedef struct rkl_pods rkl_pods;
typedef struct rkl_pod_record rkl_pod_record;
typedef struct rkl_poddir_pod rkl_poddir_pod;

rkl_pods *rkl_pods_new(void);
rkl_pods *rkl_pods_free(rkl_pods *p);

/* A pending sandbox (p: its pod as last read, or NULL): its unit started, its pod adopted,
 * its network added, its failure counted, as far as it has come. */
void rkl_pods_step_pending(rkl_reconciler *r, const rkl_pod_record *rec, const rkl_poddir_pod *p,
                           int64_t now);
/* A sandbox wanted stopped: its pod stopped, then removed once its network is released. */
void rkl_pods_step_stopping(rkl_reconciler *r, const rkl_pod_record *rec, const rkl_poddir_pod *p);
/* A failed attempt: shown in Status and the database, retried after a backoff. */
void rkl_pods_failed_attempt(rkl_reconciler *r, const rkl_pod_record *rec, const char *msg);
/* A failed ADD of the sandbox's network (or no configuration to add): this creation attempt
 * fails and is undone, as one whose pod did not come up. */
void rkl_pods_network_failed(rkl_reconciler *r, const rkl_pod_record *rec, const char *msg);
/* <state>/pods/<id>/<name> (name NULL: the directory). */
char *rkl_pods_state_path(rkl_reconciler *r, const char *id, const char *name);
/* The pod with uuid is no longer pending: its boot is not looked at again. */
void rkl_pods_boot_look_forget(rkl_reconciler *r, const char *uuid);
/* Forgets when the units of sandboxes that no longer wait for their pod are to be asked
 * after. */
void rkl_pods_looks_sweep(rkl_reconciler *r);
