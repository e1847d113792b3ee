/* rkl-bench: CRI latency, throughput, convergence and restart figures for any CRI endpoint.
 *
 * Every latency is reported beside the Version round trip measured in the same phase of the
 * same run: on a shared 2-core machine absolute times are noise, ratios are not. This file
 * reads the command line and runs the scenarios in order (bench.h). */
#include <getopt.h>
#include <time.h>
#include <unistd.h>

#include <grpc/grpc.h>

#include "bench.h"
#include "base/parse.h"
#include "base/strv.h"
#include "base/banned.h"

/* The scenarios, in the order they run on one growing set of pods. */
static const struct {
        const char *name;
        int (*run)(rkb_bench *b);
} scenarios[] = {
    {"reads", rkb_scenario_reads},           {"density", rkb_scenario_density},
    {"converge", rkb_scenario_converge},     {"latency", rkb_scenario_latency},
    {"throughput", rkb_scenario_throughput}, {"exec", rkb_scenario_exec},
    {"restart", rkb_scenario_restart},       {"stats", rkb_scenario_stats},
};

/* The options, at their defaults. */
static rkb_args arg = {
    .scenarios = "latency",
    .scales = "10,100,1000",
    .command = "/bin/sleep 100000",
    .image = "docker.io/library/busybox:latest",
    .log_dir = "/tmp/rkl-bench/logs",
    .inflight = "1,8,32",
    .exec_command = "true",
    .exec_iterations = 200,
    .exec_inflight = 8,
    .iterations = 1000,
    .per_pod = 10,
    .pods = 50,
    .containers_per_pod = 2,
    .max_actions = 4,
    .restart_containers = 1000,
    .thr_containers = 100,
    .read_interval_ms = 100,
    .call_timeout_s = 600,
    .duration = 2.0,
    .settle = 300.0,
    .ready_s = 1.33,
    .add_s = 0.12,
    .start_s = 0.12,
    .uuid_s = 0.08,
};

static void help(void)
{
        printf("Usage: rkl-bench --endpoint unix:///path.sock [OPTIONS]\n\n"
               "CRI latency, throughput, convergence and restart figures, for any CRI endpoint.\n\n"
               "  --scenario LIST          latency,throughput,converge,exec,restart,stats\n"
               "                           (default latency);\n"
               "                           run in this order on one growing set of pods; or\n"
               "                           reads: the read calls on what the endpoint has; or\n"
               "                           density: --pods P x --containers C started at once,\n"
               "                           one worker a pod, as kubelet does (run the daemon\n"
               "                           with --wait)\n"
               "  --json FILE              write every number as JSON\n"
               "  --daemon-pid PID         read the daemon's VmRSS; restart kills it\n"
               "  --iterations N           calls per RPC and phase (default 1000)\n"
               "  --scales LIST            latency: container counts (default 10,100,1000)\n"
               "  --per-pod N              containers per pod (default 10: 1,000 containers in\n"
               "                           100 pods, under kubelet's 110-pod limit and rkt's /24)\n"
               "  --no-start               create containers without starting them\n"
               "  --inflight LIST          throughput: calls in flight (default 1,8,32)\n"
               "  --duration SEC           throughput: seconds per measurement (default 2)\n"
               "  --throughput-containers N  throughput: at least N containers (default 100)\n"
               "  --exec-command CMD       exec: what ExecSync runs, split on spaces (default %s)\n"
               "  --exec-iterations N      exec: calls one at a time (default %u)\n"
               "  --exec-inflight N        exec: then N in flight for --duration (default %u)\n"
               "  --pods P --containers C  converge: P pods x C containers (default 50 x 2)\n"
               "  --max-actions N          converge model: the daemon's --max-actions (default 4)\n"
               "  --ready-s S --add-s S --start-s S\n"
               "                           converge model: rkt's latencies (1.33, 0.12, 0.12)\n"
               "  --uuid-s S               converge: app sandbox until its uuid file (0.08)\n"
               "  --workers W              density: at most W pods starting at once (default:\n"
               "                           one per pod; 1: one after the other)\n"
               "  --read-interval MS       density: a reader lists and asks one pod's status\n"
               "                           every MS while the pods start (default 100; 0: no)\n"
               "  --idle-s S               density: then a relist every second for S seconds,\n"
               "                           the daemon's CPU measured (needs --daemon-pid)\n"
               "  --call-timeout S         density: each call's deadline (default 600)\n"
               "  --on-running CMD         density: sh -c CMD once every pod runs, before the\n"
               "                           teardown (bench/density measures the pods' cost)\n"
               "  --restart-containers N   restart: containers before the kill (default 1000)\n"
               "  --restart-cmd CMD        restart: sh command that starts the daemon again and\n"
               "                           prints its PID\n"
               "  --settle SEC             wait at most this for containers to run (default 300)\n"
               "  --image REF              container image (default %s)\n"
               "  --pull                   PullImage the image first\n"
               "  --command CMD            container command, split on spaces (default %s)\n"
               "  --log-dir DIR            parent of the pods' log directories (default %s)\n"
               "  --keep                   leave the pods and containers behind\n",
               arg.exec_command, arg.exec_iterations, arg.exec_inflight, arg.image, arg.command,
               arg.log_dir);
}

static int parse_u(const char *s, unsigned *ret)
{
        uint64_t v;
        if (rkl_safe_atou64(s, &v) < 0 || v > UINT32_MAX)
                return -EINVAL;
        *ret = (unsigned)v;
        return 0;
}

static int parse_d(const char *s, double *ret)
{
        char *end;
        double v;

        errno = 0;
        v = strtod(s, &end);
        if (errno || end == s || *end || v < 0)
                return -EINVAL;
        *ret = v;
        return 0;
}

/* The options, each with where its value goes: text as given, a count, a number of seconds
 * (or any non-negative number), a flag that sets true, or a PID. */
typedef struct bench_option {
        const char *name;
        const char **text;
        unsigned *count;
        double *seconds;
        bool *flag;
        long *pid;
} bench_option;

static const bench_option bench_options[] = {
    {"endpoint", .text = &arg.endpoint},
    {"scenario", .text = &arg.scenarios},
    {"json", .text = &arg.json},
    {"daemon-pid", .pid = &arg.daemon_pid},
    {"iterations", .count = &arg.iterations},
    {"scales", .text = &arg.scales},
    {"per-pod", .count = &arg.per_pod},
    {"no-start", .flag = &arg.no_start},
    {"inflight", .text = &arg.inflight},
    {"duration", .seconds = &arg.duration},
    {"throughput-containers", .count = &arg.thr_containers},
    {"pods", .count = &arg.pods},
    {"containers", .count = &arg.containers_per_pod},
    {"max-actions", .count = &arg.max_actions},
    {"ready-s", .seconds = &arg.ready_s},
    {"add-s", .seconds = &arg.add_s},
    {"start-s", .seconds = &arg.start_s},
    {"uuid-s", .seconds = &arg.uuid_s},
    {"restart-containers", .count = &arg.restart_containers},
    {"restart-cmd", .text = &arg.restart_cmd},
    {"settle", .seconds = &arg.settle},
    {"image", .text = &arg.image},
    {"pull", .flag = &arg.pull},
    {"command", .text = &arg.command},
    {"log-dir", .text = &arg.log_dir},
    {"keep", .flag = &arg.keep},
    {"exec-command", .text = &arg.exec_command},
    {"exec-iterations", .count = &arg.exec_iterations},
    {"exec-inflight", .count = &arg.exec_inflight},
    {"workers", .count = &arg.workers},
    {"read-interval", .count = &arg.read_interval_ms},
    {"idle-s", .seconds = &arg.idle_s},
    {"call-timeout", .seconds = &arg.call_timeout_s},
    {"on-running", .text = &arg.on_running},
};

static int bench_option_apply(const bench_option *o, const char *value)
{
        unsigned u;
        int r = 0;

        if (o->text)
                *o->text = value;
        else if (o->count)
                r = parse_u(value, o->count);
        else if (o->seconds)
                r = parse_d(value, o->seconds);
        else if (o->flag)
                *o->flag = true;
        else if ((r = parse_u(value, &u)) >= 0)
                *o->pid = u;
        return r;
}

static int parse_args(int argc, char **argv)
{
        enum { FIRST = 0x100 }; /* getopt's values for bench_options[i]: FIRST + i */
        struct option opts[ELEMENTSOF(bench_options) + 2];
        int c;

        for (size_t i = 0; i < ELEMENTSOF(bench_options); i++)
                opts[i] = (struct option){bench_options[i].name,
                                          bench_options[i].flag ? no_argument : required_argument,
                                          NULL, FIRST + (int)i};
        opts[ELEMENTSOF(bench_options)] = (struct option){"help", no_argument, NULL, 'h'};
        opts[ELEMENTSOF(bench_options) + 1] = (struct option){0};

        while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
                if (c == 'h') {
                        help();
                        exit(EXIT_SUCCESS);
                }
                if (c < FIRST || c >= FIRST + (int)ELEMENTSOF(bench_options))
                        return -EINVAL;
                int r = bench_option_apply(&bench_options[c - FIRST], optarg);
                if (r < 0) {
                        fprintf(stderr, "rkl-bench: bad value '%s'\n", optarg);
                        return r;
                }
        }
        if (!arg.endpoint || optind < argc || arg.per_pod == 0 || arg.max_actions == 0 ||
            arg.containers_per_pod == 0 || arg.iterations == 0) {
                fprintf(stderr,
                        "rkl-bench: --endpoint is required (and counts must be > 0); see --help\n");
                return -EINVAL;
        }
        return 0;
}

static bool has_scenario(const char *name)
{
        size_t n = strlen(name);
        for (const char *p = arg.scenarios; (p = strstr(p, name)); p += n)
                if ((p == arg.scenarios || p[-1] == ',') && (p[n] == 0 || p[n] == ','))
                        return true;
        return false;
}

int main(int argc, char **argv)
{
        static rkb_bench b;
        char run_id[32];
        int r, ret = EXIT_SUCCESS;

        if (parse_args(argc, argv) < 0)
                return 2;
        for (const char *p = arg.scenarios; *p;) {
                size_t n = strcspn(p, ",");
                bool ok = false;
                for (size_t i = 0; i < ELEMENTSOF(scenarios); i++)
                        ok = ok || (strlen(scenarios[i].name) == n &&
                                    strncmp(p, scenarios[i].name, n) == 0);
                if (!ok) {
                        fprintf(stderr, "rkl-bench: unknown scenario in '%s'\n", arg.scenarios);
                        return 2;
                }
                p += n + (p[n] == ',');
        }
        /* Tells this run's objects apart from anything else on the endpoint. */
        snprintf(run_id, sizeof(run_id), "%x%04x", (unsigned)time(NULL),
                 (unsigned)getpid() & 0xffff);
        b.args = &arg;
        b.keep = arg.keep;
        b.endpoint = (char *)arg.endpoint;
        b.daemon_pid = (pid_t)arg.daemon_pid;
        b.iterations = arg.iterations;
        b.per_pod = arg.per_pod;
        b.start_containers = !arg.no_start;
        b.settle_usec = (uint64_t)(arg.settle * USEC_PER_SEC);
        b.cri = (rkb_cri_opts){
            .image = arg.image,
            .log_dir = arg.log_dir,
            .namespace_ = "bench",
            .run_id = run_id,
            .command = rkb_split_command(arg.command),
            .stop_timeout = 2,
        };

        grpc_init();
        r = rkb_client_new(arg.endpoint, &b.cli);
        if (r < 0) {
                fprintf(stderr, "rkl-bench: bad endpoint '%s'\n", arg.endpoint);
                return 2;
        }
        if (arg.pull) {
                _cleanup_(rkb_request_freep) rkb_request *req = rkb_cri_pull(&b.cri);
                if (rkb_call(&b, RKB_PULL_IMAGE, req, false, NULL, NULL) != GRPC_STATUS_OK)
                        ret = EXIT_FAILURE;
        }
        for (size_t i = 0; ret == EXIT_SUCCESS && i < ELEMENTSOF(scenarios); i++)
                if (has_scenario(scenarios[i].name) && scenarios[i].run(&b) < 0)
                        ret = EXIT_FAILURE;
        if (!b.keep && b.cli && b.n_pods > 0)
                rkb_teardown(&b);
        rkb_set_refs(&b);
        rkb_report_print(&b);
        if (arg.json && (r = rkb_report_json(&b, arg.json)) < 0) {
                fprintf(stderr, "rkl-bench: cannot write '%s': %s\n", arg.json, strerror(-r));
                ret = EXIT_FAILURE;
        }
        b.density = rkb_density_free(b.density);
        b.cli = rkb_client_free(b.cli);
        rkl_strv_free(b.cri.command);
        for (size_t i = 0; i < _RKB_RPC_MAX; i++)
                free(b.err[i].details);
        grpc_shutdown();
        return ret;
}
