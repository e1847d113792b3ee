/* The density scenario: N pods started at once the way kubelet's pod workers start them, one
 * worker a pod (RunPodSandbox, then CreateContainer and StartContainer for each container; a
 * daemon run with --wait answers each once it is carried out), at most W workers at once (W = 1:
 * one pod after the other). It reports the client's latency of each call and of each pod's
 * whole start, the time until every container runs, the daemon's own timeline of each start
 * (verbose status's timelineUs: which step took the time), reads during the batch and after
 * it, the daemon's memory, and its CPU while idle with kubelet's relist every second. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <json-c/json.h>

#include "client.h"
#include "cri.h"

typedef struct rkb_density_opts {
        const rkb_cri_opts *cri;
        unsigned pods, containers, workers;
        uint64_t call_timeout_usec;
        unsigned read_interval_ms; /* a reader's pace while the batch starts; 0: none */
        unsigned read_iterations;  /* Status calls after it (a fifth as many lists) */
        double idle_s;             /* then relist every second this long, the daemon's CPU
                                    * measured; 0: not */
        double settle_s;           /* the longest wait for every container to run */
        pid_t daemon_pid;          /* 0: neither memory nor CPU */
        const char *on_running;    /* sh -c this once every pod runs, before the teardown */
        bool keep;                 /* leave the pods behind */
} rkb_density_opts;

typedef struct rkb_density rkb_density;

/* Runs the scenario on c's channel (its workers each have a queue of their own). Returns 0
 * when every pod's calls succeeded and every container ran, else -errno; *ret holds what was
 * measured either way. */
int rkb_density_run(rkb_client *c, const rkb_density_opts *o, rkb_density **ret);
void rkb_density_print(const rkb_density *d, FILE *f);
/* The "density" object of rkl-bench's JSON (the caller's). */
json_object *rkb_density_json(const rkb_density *d);
rkb_density *rkb_density_free(rkb_density *d);
