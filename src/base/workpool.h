/* A fixed set of threads running submitted jobs in order of submission. What a job does
 * with its result (post it to a queue, finish a call) is the job's business. */
#pragma once

#include <stddef.h>

#include "macro.h"

typedef struct rkl_workpool rkl_workpool;
typedef void (*rkl_work_fn)(void *userdata);

/* Starts n threads (n >= 1). Returns NULL only on OOM... which aborts: never NULL. */
rkl_workpool *rkl_workpool_new(unsigned n, const char *name);
/* Queues fn(userdata); never blocks for long. */
void rkl_workpool_submit(rkl_workpool *p, rkl_work_fn fn, void *userdata);
/* The same, unless max_pending jobs are queued or running already: -EBUSY then, and fn is
 * not queued. */
int rkl_workpool_submit_bounded(rkl_workpool *p, size_t max_pending, rkl_work_fn fn,
                                void *userdata);
/* Jobs queued or running. */
size_t rkl_workpool_pending(rkl_workpool *p);
/* Runs every queued job to completion, then joins the threads and frees the pool. */
rkl_workpool *rkl_workpool_free(rkl_workpool *p);

RKL_DEFINE_CLEANUP(rkl_workpool *, rkl_workpool_free)
