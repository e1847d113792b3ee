/* What rkl-bench's parts share: the run (its pods and containers, the rows measured, the
 * scenarios' own results) and the options it was given. rkl-bench.c reads the command line
 * and runs the scenarios in order; phase.c has the calls, the phases and the pods they
 * measure on; scenarios.c and restart.c the scenarios; report.c the tables and the JSON. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <grpc/grpc.h>
#include <json-c/json.h>

#include "api.pb-c.h"
#include "client.h"
#include "cri.h"
#include "density.h"
#include "stats.h"
#include "base/time-util.h"

#define RKB_MAX_ROWS          512
#define RKB_CALL_TIMEOUT_USEC (120 * USEC_PER_SEC)

/* The command line (rkl-bench --help). */
typedef struct rkb_args {
        const char *endpoint, *json, *scenarios, *scales, *restart_cmd, *command, *image;
        const char *log_dir, *inflight, *exec_command;
        const char *on_running; /* density: sh -c this while every pod runs */
        unsigned exec_iterations, exec_inflight, iterations, per_pod, pods, containers_per_pod;
        unsigned max_actions, restart_containers, thr_containers;
        unsigned workers;          /* density: 0 = one per pod */
        unsigned read_interval_ms; /* density: the reader's pace while starting */
        double idle_s;             /* density: CPU while idle, seconds */
        double call_timeout_s;     /* density: a call's deadline */
        double duration, settle, ready_s, add_s, start_s, uuid_s;
        long daemon_pid;
        bool pull, no_start, keep;
} rkb_args;

typedef struct rkb_lat_row {
        rkb_rpc rpc;
        char phase[32];
        size_t containers; /* of this run, when the phase was measured */
        rkb_summary s;
        double ref_p50_usec; /* Version p50 of the same phase; 0 if none */
} rkb_lat_row;

typedef struct rkb_thr_row {
        rkb_rpc rpc;
        unsigned inflight;
        size_t containers;
        rkb_pipeline_result res;
        rkb_summary s;
} rkb_thr_row;

typedef struct rkb_rss_row {
        char phase[32];
        size_t containers;
        long rss_kib, hwm_kib;
} rkb_rss_row;

typedef struct rkb_err_row {
        uint64_t n;
        int status;
        char *details;
} rkb_err_row;

typedef struct rkb_pod {
        char *id, *name, *uid;
        char **containers;
        size_t n_containers;
} rkb_pod;

typedef struct rkb_bench {
        const rkb_args *args;
        rkb_client *cli;
        rkb_cri_opts cri;
        char *endpoint;
        pid_t daemon_pid;
        unsigned iterations;
        size_t per_pod;
        bool start_containers;
        bool keep; /* leave the pods behind: --keep, or pods that are not the run's */
        uint64_t settle_usec;

        /* the run's pods and containers */
        rkb_pod *pods;
        size_t n_pods, n_containers;
        unsigned seq;

        /* the phase being measured: mutation samples and their interleaved Version reference */
        char phase[32];
        rkb_samples mut[_RKB_RPC_MAX];

        rkb_lat_row lat[RKB_MAX_ROWS];
        size_t n_lat;
        rkb_thr_row thr[64];
        size_t n_thr;
        rkb_rss_row rss[32];
        size_t n_rss;
        rkb_err_row err[_RKB_RPC_MAX];
        struct {
                char phase[32];
                size_t containers;
                double seconds; /* < 0: not settled within --settle */
        } settled[16];
        size_t n_settled;

        struct {
                bool done;
                unsigned pods, per_pod, max_actions;
                double ready_s, add_s, start_s;
                double issued_s, converged_s, model_s, work_s, critical_s;
                double uuid_s, overlap_model_s; /* readiness off the action slots */
                bool timed_out;
        } conv;
        rkb_density *density;
        struct {
                bool done;
                size_t containers, running; /* running: before the kill */
                double answer_ms, list_complete_ms, list_correct_ms, converged_ms;
                bool timed_out;
                long rss_before_kib, rss_after_kib;
        } rst;
} rkb_bench;

/* phase.c: helpers. */
/* ns as seconds and as milliseconds. */
double rkb_s(uint64_t ns);
double rkb_ms(uint64_t ns);
const char *rkb_status_name(int s);
/* "a b c" as a NULL-terminated vector (freed with rkl_strv_free()). */
char **rkb_split_command(const char *s);
int rkb_read_rss(pid_t pid, long *ret_rss, long *ret_hwm);

/* phase.c: calls, rows and phases. */
/* One call; an OK call's latency goes to *lat when given. Returns the grpc status, or
 * -errno when it could not be made. */
int rkb_call(rkb_bench *b, rkb_rpc rpc, const rkb_request *req, bool want_resp, rkb_samples *lat,
             rkb_reply *ret);
/* Fills in every row's Version reference from its own phase. */
void rkb_set_refs(rkb_bench *b);
void rkb_record_rss(rkb_bench *b, const char *phase);
/* Phases: mutations are timed with one Version call after each, so that the reference ran
 * under the same load (the reconciler busy with rkt). */
void rkb_phase_begin(rkb_bench *b, const char *fmt, const char *arg);
void rkb_phase_end(rkb_bench *b);
/* Times iterations calls spread over reqs[] round-robin; a row in the current phase. */
void rkb_measure(rkb_bench *b, rkb_rpc rpc, rkb_request **reqs, size_t n_reqs, unsigned iterations);
void rkb_measure_one(rkb_bench *b, rkb_rpc rpc, rkb_request *req, unsigned iterations);
/* Reads at the current population: Version first, as this phase's reference. */
void rkb_measure_reads(rkb_bench *b, const char *phase);

/* phase.c: the run's pods and containers. */
/* Grows the run to n containers, per_pod to a pod, as kubelet would: pod, then its
 * containers. */
int rkb_populate(rkb_bench *b, size_t n, size_t per_pod);
/* Polls ListContainers until every container of the run is RUNNING (CREATED when they are not
 * started). Returns the time it took in ns, or -ETIMEDOUT. */
int64_t rkb_wait_settled(rkb_bench *b, uint64_t timeout_usec, unsigned interval_ms);
void rkb_note_settled(rkb_bench *b, const char *phase, int64_t t);
/* Stops and removes every pod and container of the run, timed as a phase. */
void rkb_teardown(rkb_bench *b);

/* scenarios.c and restart.c: each 0 or -errno. */
int rkb_scenario_reads(rkb_bench *b);
int rkb_scenario_latency(rkb_bench *b);
int rkb_scenario_stats(rkb_bench *b);
int rkb_scenario_throughput(rkb_bench *b);
int rkb_scenario_exec(rkb_bench *b);
int rkb_scenario_converge(rkb_bench *b);
int rkb_scenario_density(rkb_bench *b);
int rkb_scenario_restart(rkb_bench *b);

/* report.c */
void rkb_report_print(const rkb_bench *b);
/* Every figure as JSON at path (written whole, or -errno with nothing left there). */
int rkb_report_json(const rkb_bench *b, const char *path);
