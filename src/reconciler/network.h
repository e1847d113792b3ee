/* Pod networking through CNI (network.c, docs/networking.md). Each sandbox's network is
 * recorded (sandbox_network) before its ADD runs and forgotten once its DEL succeeded; in
 * between, whatever happens to the sandbox or the daemon, the record says a DEL is owed.
 * The state is r->net, NULL with rkt's own networking (--net): then every sandbox counts as
 * having its network and nothing here acts. Reconciler thread only, but rkl_network_run(). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "actions.h"

typedef struct rkl_network rkl_network;
typedef struct rkl_config rkl_config;
typedef struct rkl_health rkl_health;
typedef struct rkl_pod_record rkl_pod_record;
typedef struct rkl_poddir_pod rkl_poddir_pod;

/* The state when the reconciler runs CNI, NULL with --net. */
rkl_network *rkl_network_new(const rkl_config *cfg);
/* On the reconciler thread, before the first probe: loads the recorded networks and the
 * configuration, and watches its directory when the event loop runs. */
void rkl_network_start(rkl_reconciler *r);
/* Drops the directory's watch (before the event loop goes); free() does the rest. */
void rkl_network_stop(rkl_network *n);
rkl_network *rkl_network_free(rkl_network *n);
/* What Status says of the network. */
void rkl_network_health(rkl_reconciler *r, rkl_health *h);
/* Why the sandbox cannot have a network now (no usable configuration), or NULL. */
const char *rkl_network_unavailable(rkl_reconciler *r, const rkl_pod_record *rec);
/* Whether a network of the sandbox's is recorded, still to be deleted or in use. */
bool rkl_network_held(rkl_reconciler *r, const char *sandbox_id);
/* Whether the sandbox's current pod has its network (or needs none). */
bool rkl_network_ready(rkl_reconciler *r, const rkl_pod_record *rec);
/* A pending sandbox whose pod has its namespace: its ADD, when due. True when this attempt
 * failed instead (no configuration to add). */
bool rkl_network_step_pending(rkl_reconciler *r, const rkl_pod_record *rec,
                              const rkl_poddir_pod *p);
/* A running sandbox: its network CHECKed once after the daemon started. */
void rkl_network_step_running(rkl_reconciler *r, const rkl_pod_record *rec,
                              const rkl_poddir_pod *p);
/* Whether a stopped sandbox's pod must stay until its DEL: the namespace the DEL works in
 * goes with the pod. False once the DEL failed a few times: its pod goes then, and the
 * DEL goes on without the namespace, as plugins must allow. */
bool rkl_network_holds_pod(rkl_reconciler *r, const rkl_pod_record *rec);
/* DELs of networks no sandbox wants any more: removed, stopped, an earlier attempt's. */
void rkl_network_reap(rkl_reconciler *r, int64_t now);
/* The worker's part of an ACT_NET_ verb (on the pool), and its result on the reconciler
 * thread. */
int rkl_network_run(action *a);
void rkl_network_apply(rkl_reconciler *r, action *a);
