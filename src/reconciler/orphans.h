/* Orphans (orphans.c): pods, apps, units and state directories that carry rktlet's marks
 * but that no record wants any more (a removal while rktlet was down, a crash between two
 * steps), and the sandboxes withdrawn after failing under --wait until nothing of them is
 * left. The state is r->orphans: the failures of the leftovers' steps, the pods that owe a
 * removal. Reconciler thread only. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

typedef struct rkl_reconciler rkl_reconciler;
typedef struct rkl_orphans rkl_orphans;
typedef struct rkl_poddir_pod rkl_poddir_pod;
typedef struct action action;

rkl_orphans *rkl_orphans_new(void);
rkl_orphans *rkl_orphans_free(rkl_orphans *o);

/* Whether an app add in p waits for the removal of a leftover app (an app of a removed
 * container): an add went there since the last one, and one is left to remove. Called for
 * adds only; rkl_orphans_add_submitted() after each. */
bool rkl_orphans_rm_due(rkl_reconciler *r, const rkl_poddir_pod *p);
void rkl_orphans_add_submitted(rkl_reconciler *r, const rkl_poddir_pod *p);
/* The pod no longer runs: nothing is owed there. */
void rkl_orphans_rm_forget(rkl_reconciler *r, const char *uuid);

/* Stops or removes the apps of running pod p whose container is gone. */
void rkl_orphans_reap_apps(rkl_reconciler *r, const rkl_poddir_pod *p, int64_t now);
/* Stops or removes the pods no record wants, and those whose preparation was cut short. */
void rkl_orphans_reap_pods(rkl_reconciler *r, int64_t now);
/* A leftover's action (a->orphan) ended: a failure is tried again after the backoff;
 * going_down: it is the pod's going down, no news. */
void rkl_orphans_result(rkl_reconciler *r, const action *a, bool going_down);
/* State directories (the uuid file, the sandbox's log) of sandboxes no record wants and no
 * pod of rktlet's still carries: a sandbox stopped (its pod removed) and then removed leaves
 * no pod for the orphan pass to find, so its directory goes here, at the next rescan. */
void rkl_orphans_reap_state_dirs(rkl_reconciler *r);
/* Units of sandboxes no record wants (deleted while rktlet was down, or between a delete
 * and its clean-up). Stopping one takes its pod down; the pod's directory is an orphan the
 * pass removes next. */
void rkl_orphans_reap_units(rkl_reconciler *r);
/* Sandboxes withdrawn after failing under --wait (pods.c): each failure is forgotten, which
 * answers its waiting RunPodSandbox, once nothing of the sandbox is left: no network held,
 * no state directory (which stays while a pod of its attempts or its unit's cgroups do).
 * Until then a rescan a second. */
void rkl_orphans_failures_sweep(rkl_reconciler *r);
/* A sandbox was just withdrawn: what is left of it is looked at with the next pass. */
void rkl_orphans_failures_look_now(rkl_reconciler *r);
