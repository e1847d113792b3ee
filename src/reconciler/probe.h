/* The probe of rkt and systemd for Status (probe.c): rkt's version and build record, the
 * stage1 in rkt's store (imported once on the pool when it is missing), the system manager's
 * version, the network's state; and the listing of rkt's images into the image cache, at the
 * start and again with every probe until it worked once. The state is r->probe, whose flags
 * the pool's jobs set. */
#pragma once

#include <stdbool.h>

typedef struct rkl_reconciler rkl_reconciler;
typedef struct rkl_probe rkl_probe;

rkl_probe *rkl_probe_new(void);
rkl_probe *rkl_probe_free(rkl_probe *p);
/* Probes now and writes the cache's health, logging what changed. */
void rkl_probe_run(rkl_reconciler *r);
/* Probes when an image listing or the stage1's import asked for it since the last call. */
void rkl_probe_run_if_asked(rkl_reconciler *r);
/* The probe timer: a probe, and the image listing again when the last one failed. */
void rkl_probe_tick(rkl_reconciler *r);
/* Lists rkt's images into the image cache on the pool, unless a listing runs. */
void rkl_probe_list_images(rkl_reconciler *r);
/* Whether the stage1 is being imported: sandboxes wait for it rather than each import it
 * (its end kicks a pass). */
bool rkl_probe_stage1_importing(rkl_reconciler *r);
