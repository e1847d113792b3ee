/* rktlet: a Kubernetes CRI runtime that runs pods with rkt. */
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>

#include "daemon.h"
#include "check/check.h"
#include "base/alloc.h"
#include "base/config.h"
#include "base/config-file.h"
#include "base/crash.h"
#include "base/fileio.h"
#include "base/log.h"
#include "base/parse.h"
#include "base/strv.h"
#include "base/time-util.h"
#include "exec/exec.h"
#include "rkt/sysctl.h"
#include "images/images.h"
#include "metrics/metrics.h"
#include "stream/stream.h"
#include "base/banned.h"

#define DEFAULT_CONFIG       "/etc/rktlet/rktlet.conf"
#define EXIT_USAGE           2
#define STATUS_INTERVAL_USEC (5 * USEC_PER_SEC)

/* The options as parsed: their defaults (rkl_config_init()), then the file, then the
 * flags. */
static rkl_config arg_config;

/* A default number of seconds, for --help. */
#define SEC(usec) ((unsigned)((usec) / USEC_PER_SEC))

static void help(void)
{
        _cleanup_free_ char *cni_bin_dirs =
            rkl_strv_join(RKL_STRV(RKL_CONFIG_DEFAULT_CNI_BIN_DIRS), ", then ");
        printf("Usage: rktlet [OPTIONS]\n"
               "       rktlet check [OPTIONS]\n"
               "\n"
               "A Kubernetes CRI (runtime.v1) runtime that runs pods with rkt. 'check' says,\n"
               "one line per check, whether this node can run pods with these options and\n"
               "what to do when not; it exits 1 when a check fails.\n"
               "\n"
               "  --listen PATH           CRI socket (default %s)\n"
               "  --socket-group GROUP    group that may use the socket (default: root's)\n"
               "  --state-dir DIR         where the database lives (default %s)\n"
               "  --sync-full             fsync every commit: survives power loss, not only\n"
               "                          crashes of the daemon (about 0.2 ms per write)\n"
               "  --wait                  answer RunPodSandbox, StartContainer and the stops\n"
               "                          once rkt has carried them out (a sandbox with its\n"
               "                          IP), not once recorded: what kubelet expects\n"
               "  --rkt-path PATH         the rkt binary (default: rkt in PATH)\n"
               "  --rkt-data-dir DIR      rkt's --dir (default %s)\n"
               "  --systemd-bus ADDRESS   D-Bus address of systemd (default: the system bus)\n"
               "  --cni-conf-dir DIR      the cluster's CNI network configuration: the first\n"
               "                          *.conflist, *.conf or *.json there (default\n"
               "                          %s)\n"
               "  --cni-bin-dir DIR       where CNI plugins are found (repeatable; default\n"
               "                          %s)\n"
               "  --cni-timeout SEC       a CNI plugin still running then is killed (default %u)\n"
               "  --net NAME              leave pod networking to rkt, on its network NAME\n"
               "                          ('default' for rkt's own) instead of CNI\n"
               "  --stage1-name IMAGE     rkt stage1 image for pods (default: rkt's own)\n"
               "  --max-actions N         rkt commands run at once (default %u)\n"
               "  --api-threads N         gRPC completion-queue threads (default %u)\n"
               "  --probe-interval SEC    how often rkt and systemd are checked (default %u)\n"
               "  --stats-interval SEC    how often container and pod stats are read (default %u)\n"
               "  --sandbox-ready-timeout SEC\n"
               "                          a sandbox not ready by then is retried (default %u)\n"
               "  --rkt-timeout SEC       a rkt command still running then is killed (default %u)\n"
               "  --registry-mirror HOST=URL\n"
               "                          pull HOST's images from URL first, e.g.\n"
               "                          registry.k8s.io=http://127.0.0.1:5000 (repeatable;\n"
               "                          http:// mirrors are fetched without TLS)\n"
               "  --metrics-address IPV4:PORT\n"
               "                          serve Prometheus metrics at http://IPV4:PORT/metrics,\n"
               "                          e.g. 127.0.0.1:9101 (default: off)\n"
               "  --stream-netns PATH     listen for streams in that network namespace instead\n"
               "                          of the daemon's own (e.g. /proc/PID/ns/net)\n"
               "  --stream-address IPV4:PORT\n"
               "                          serve Exec, Attach and PortForward streams there\n"
               "                          (default %s: a free port on loopback)\n"
               "  --log-level LEVEL       debug, info, notice, warning or err (default info)\n"
               "  --config FILE           read options from FILE, one 'name = value' a line\n"
               "                          (default " DEFAULT_CONFIG " if it exists; '' for\n"
               "                          none); flags override it\n"
               "  -h, --help              show this help\n"
               "  --version               show the version\n",
               RKL_CONFIG_DEFAULT_LISTEN_PATH, RKL_CONFIG_DEFAULT_STATE_DIR,
               RKL_CONFIG_DEFAULT_RKT_DATA_DIR, RKL_CONFIG_DEFAULT_CNI_CONF_DIR, cni_bin_dirs,
               SEC(RKL_CONFIG_DEFAULT_CNI_TIMEOUT_USEC), RKL_CONFIG_DEFAULT_MAX_ACTIONS,
               RKL_CONFIG_DEFAULT_API_THREADS, SEC(RKL_CONFIG_DEFAULT_PROBE_INTERVAL_USEC),
               SEC(RKL_CONFIG_DEFAULT_STATS_INTERVAL_USEC),
               SEC(RKL_CONFIG_DEFAULT_SANDBOX_READY_TIMEOUT_USEC),
               SEC(RKL_CONFIG_DEFAULT_RKT_TIMEOUT_USEC), RKL_CONFIG_DEFAULT_STREAM_ADDRESS);
}

/* An absolute path for p, without requiring it to exist. */
static char *absolute(const char *p)
{
        if (p[0] == '/')
                return rkl_xstrdup(p);
        _cleanup_free_ char *cwd = getcwd(NULL, 0);
        if (!cwd)
                rkl_oom();
        return rkl_xasprintf("%s/%s", cwd, p);
}

/* rkt's path from PATH, like a shell would find it; NULL when there is none. */
static char *find_in_path(const char *name)
{
        const char *path = getenv("PATH");
        if (isempty(path))
                path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
        _cleanup_free_ char *copy = rkl_xstrdup(path);
        char *save = NULL;
        for (char *dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
                if (dir[0] != '/')
                        continue;
                _cleanup_free_ char *p = rkl_xasprintf("%s/%s", dir, name);
                if (access(p, X_OK) == 0)
                        return TAKE_PTR(p);
        }
        return NULL;
}

/* Every option, once: getopt's table and the configuration file's keys both come from
 * here, and apply() gives both their meaning. */
enum {
        ARG_LISTEN = 0x100,
        ARG_SOCKET_GROUP,
        ARG_STATE_DIR,
        ARG_SYNC_FULL,
        ARG_WAIT,
        ARG_RKT_PATH,
        ARG_RKT_DATA_DIR,
        ARG_SYSTEMD_BUS,
        ARG_API_THREADS,
        ARG_NET,
        ARG_CNI_CONF_DIR,
        ARG_CNI_BIN_DIR,
        ARG_CNI_TIMEOUT,
        ARG_STAGE1_NAME,
        ARG_MAX_ACTIONS,
        ARG_PROBE_INTERVAL,
        ARG_STATS_INTERVAL,
        ARG_SANDBOX_READY_TIMEOUT,
        ARG_RKT_TIMEOUT,
        ARG_REGISTRY_MIRROR,
        ARG_METRICS_ADDRESS,
        ARG_STREAM_ADDRESS,
        ARG_STREAM_NETNS,
        ARG_STREAM_TOKEN_TTL,
        ARG_LOG_LEVEL,
        ARG_CONFIG,
        ARG_VERSION,
};

typedef struct option_def {
        const char *name;
        int has_arg; /* getopt's no_argument or required_argument */
        int id;
        bool in_file; /* a key of the configuration file too */
        /* Where the value goes when it is a path (made absolute), a number of seconds
         * from 1 to 3600, or a count from 1 to max; NULL for the options apply() gives a
         * meaning case by case. */
        char **path;
        uint64_t *seconds;
        unsigned *count, max;
} option_def;

static const option_def option_defs[] = {
    {"listen", required_argument, ARG_LISTEN, true, .path = &arg_config.listen_path},
    {"socket-group", required_argument, ARG_SOCKET_GROUP, true},
    {"state-dir", required_argument, ARG_STATE_DIR, true, .path = &arg_config.state_dir},
    {"rkt-path", required_argument, ARG_RKT_PATH, true, .path = &arg_config.rkt_path},
    {"rkt-data-dir", required_argument, ARG_RKT_DATA_DIR, true, .path = &arg_config.rkt_data_dir},
    {"systemd-bus", required_argument, ARG_SYSTEMD_BUS, true},
    {"api-threads", required_argument, ARG_API_THREADS, true, .count = &arg_config.api_threads,
     .max = 64},
    {"sync-full", no_argument, ARG_SYNC_FULL, true},
    {"wait", no_argument, ARG_WAIT, true},
    {"net", required_argument, ARG_NET, true},
    {"cni-conf-dir", required_argument, ARG_CNI_CONF_DIR, true, .path = &arg_config.cni_conf_dir},
    {"cni-bin-dir", required_argument, ARG_CNI_BIN_DIR, true},
    {"cni-timeout", required_argument, ARG_CNI_TIMEOUT, true,
     .seconds = &arg_config.cni_timeout_usec},
    {"stage1-name", required_argument, ARG_STAGE1_NAME, true},
    {"max-actions", required_argument, ARG_MAX_ACTIONS, true, .count = &arg_config.max_actions,
     .max = 256},
    {"probe-interval", required_argument, ARG_PROBE_INTERVAL, true,
     .seconds = &arg_config.probe_interval_usec},
    {"stats-interval", required_argument, ARG_STATS_INTERVAL, true,
     .seconds = &arg_config.stats_interval_usec},
    {"sandbox-ready-timeout", required_argument, ARG_SANDBOX_READY_TIMEOUT, true,
     .seconds = &arg_config.sandbox_ready_timeout_usec},
    {"rkt-timeout", required_argument, ARG_RKT_TIMEOUT, true,
     .seconds = &arg_config.rkt_timeout_usec},
    {"registry-mirror", required_argument, ARG_REGISTRY_MIRROR, true},
    {"metrics-address", required_argument, ARG_METRICS_ADDRESS, true},
    {"stream-address", required_argument, ARG_STREAM_ADDRESS, true},
    {"stream-netns", required_argument, ARG_STREAM_NETNS, true},
    /* Hidden, for tests: how long a streaming URL stays good, in seconds. */
    {"stream-token-ttl", required_argument, ARG_STREAM_TOKEN_TTL, false},
    {"log-level", required_argument, ARG_LOG_LEVEL, true},
    {"config", required_argument, ARG_CONFIG, false},
    {"help", no_argument, 'h', false},
    {"version", no_argument, ARG_VERSION, false},
};

static const option_def *option_by_id(int id)
{
        for (size_t i = 0; i < ELEMENTSOF(option_defs); i++)
                if (option_defs[i].id == id)
                        return &option_defs[i];
        return NULL;
}

/* A flag without a value, or a file's "name = true|false". */
static int parse_switch(const char *name, const char *value, bool *ret, rkl_error *reterr)
{
        if (!value || streq(value, "true") || streq(value, "yes") || streq(value, "1"))
                *ret = true;
        else if (streq(value, "false") || streq(value, "no") || streq(value, "0"))
                *ret = false;
        else
                return rkl_error_set(reterr, -EINVAL, "%s takes true or false, not '%s'", name,
                                     value);
        return 0;
}

static int bad_seconds(const char *name, const char *value, rkl_error *reterr)
{
        return rkl_error_set(reterr, -EINVAL, "%s takes 1 to 3600 seconds, not '%s'", name, value);
}

/* Gives an option whose value goes where option_defs says (a path, seconds, a count) its
 * value: 1, or 0 when o is not one of those, or -errno. */
static int apply_field(const option_def *o, const char *name, const char *value, rkl_error *reterr)
{
        unsigned u;

        if (o->path) {
                free(*o->path);
                *o->path = absolute(value);
                return 1;
        }
        if (o->seconds) {
                if (rkl_safe_atou(value, &u) < 0 || u < 1 || u > 3600)
                        return bad_seconds(name, value, reterr);
                *o->seconds = u * USEC_PER_SEC;
                return 1;
        }
        if (o->count) {
                if (rkl_safe_atou(value, &u) < 0 || u < 1 || u > o->max)
                        return rkl_error_set(reterr, -EINVAL, "%s takes 1 to %u, not '%s'", name,
                                             o->max, value);
                *o->count = u;
                return 1;
        }
        return 0;
}

/* Gives option id its value (NULL for a flag without one; "true"/"false" in a file). name
 * is how the user wrote it, for errors. */
static int apply(int id, const char *name, const char *value, rkl_error *reterr)
{
        const option_def *o = option_by_id(id);
        unsigned u;
        int r = o ? apply_field(o, name, value, reterr) : 0;

        if (r != 0)
                return r < 0 ? r : 0;
        switch (id) {
        case ARG_SOCKET_GROUP: {
                struct group *g = getgrnam(value);
                if (g)
                        arg_config.socket_gid = g->gr_gid;
                else if (rkl_safe_atou(value, &u) == 0)
                        arg_config.socket_gid = (gid_t)u;
                else
                        return rkl_error_set(reterr, -EINVAL, "unknown group '%s'", value);
                break;
        }
        case ARG_SYNC_FULL:
                return parse_switch(name, value, &arg_config.sync_full, reterr);
        case ARG_WAIT:
                return parse_switch(name, value, &arg_config.wait, reterr);
        case ARG_SYSTEMD_BUS:
                free(arg_config.systemd_bus);
                arg_config.systemd_bus = streq(value, "system") ? NULL : rkl_xstrdup(value);
                break;
        case ARG_NET:
        case ARG_STAGE1_NAME:
                /* They become rkt flag values: nothing that splits or reads as one. */
                if (isempty(value) || value[0] == '-' || strpbrk(value, ", \t\n"))
                        return rkl_error_set(reterr, -EINVAL, "invalid value '%s' for %s", value,
                                             name);
                free(id == ARG_NET ? arg_config.net : arg_config.stage1_name);
                *(id == ARG_NET ? &arg_config.net : &arg_config.stage1_name) = rkl_xstrdup(value);
                break;
        case ARG_CNI_BIN_DIR:
                /* CNI_PATH is ':'-separated: a directory holding one cannot be passed on. */
                if (isempty(value) || strchr(value, ':'))
                        return rkl_error_set(reterr, -EINVAL, "invalid directory '%s' for %s",
                                             value, name);
                rkl_strv_consume(&arg_config.cni_bin_dirs, absolute(value));
                break;
        case ARG_REGISTRY_MIRROR:
                r = rkl_images_mirror_check(value, reterr);
                if (r < 0)
                        return r;
                rkl_strv_push(&arg_config.registry_mirrors, value);
                break;
        case ARG_METRICS_ADDRESS:
                free(arg_config.metrics_address);
                arg_config.metrics_address = NULL;
                if (isempty(value) || streq(value, "off"))
                        break;
                r = rkl_metrics_address_check(value, reterr);
                if (r < 0)
                        return r;
                arg_config.metrics_address = rkl_xstrdup(value);
                break;
        case ARG_STREAM_NETNS:
                free(arg_config.stream_netns);
                arg_config.stream_netns = isempty(value) ? NULL : absolute(value);
                break;
        case ARG_STREAM_ADDRESS:
                r = rkl_stream_address_check(value, reterr);
                if (r < 0)
                        return r;
                free(arg_config.stream_address);
                arg_config.stream_address = rkl_xstrdup(value);
                break;
        case ARG_STREAM_TOKEN_TTL:
                if (rkl_safe_atou(value, &u) < 0 || u == 0)
                        return bad_seconds(name, value, reterr);
                arg_config.stream_token_ttl_usec = u * USEC_PER_SEC;
                break;
        case ARG_LOG_LEVEL:
                r = rkl_log_level_from_string(value);
                if (r < 0)
                        return rkl_error_set(reterr, -EINVAL, "unknown log level '%s'", value);
                rkl_log_max_level = r;
                break;
        default:
                assert(!"an option without a meaning");
                return -EINVAL;
        }
        return 0;
}

static int apply_file_pair(const char *key, const char *value, void *userdata, rkl_error *reterr)
{
        (void)userdata;
        for (size_t i = 0; i < ELEMENTSOF(option_defs); i++) {
                const option_def *o = &option_defs[i];
                if (!streq(o->name, key))
                        continue;
                if (!o->in_file)
                        return rkl_error_set(reterr, -EINVAL,
                                             "'%s' is a command-line flag only, not a key", key);
                return apply(o->id, key, value, reterr);
        }
        return rkl_error_set(reterr, -EINVAL,
                             "unknown key '%s' (see rktlet --help; keys are the "
                             "flags without their '--')",
                             key);
}

typedef struct given {
        int id;
        const char *name, *value;
} given;

/* Flags are read first, then the configuration file is applied, then the flags over it:
 * a flag always wins, and a repeatable flag replaces the file's list. */
static int parse_argv(int argc, char *argv[])
{
        struct option options[ELEMENTSOF(option_defs) + 1];
        _cleanup_free_ given *flags = rkl_xnew0(given, (size_t)argc + 1);
        size_t n_flags = 0;
        const char *config = NULL;
        bool config_given = false, show_help = false, show_version = false;
        rkl_error err = RKL_ERROR_INIT;
        int c;

        for (size_t i = 0; i < ELEMENTSOF(option_defs); i++)
                options[i] = (struct option){option_defs[i].name, option_defs[i].has_arg, NULL,
                                             option_defs[i].id};
        options[ELEMENTSOF(option_defs)] = (struct option){0};

        opterr = 0;
        while ((c = getopt_long(argc, argv, ":h", options, NULL)) >= 0) {
                switch (c) {
                case 'h':
                        show_help = true;
                        break;
                case ARG_VERSION:
                        show_version = true;
                        break;
                case ARG_CONFIG:
                        config = optarg;
                        config_given = true;
                        break;
                case ':':
                        fprintf(stderr, "rktlet: option '%s' needs a value\n", argv[optind - 1]);
                        return -EINVAL;
                case '?':
                        fprintf(stderr, "rktlet: unknown option '%s' (see --help)\n",
                                argv[optind - 1]);
                        return -EINVAL;
                default:
                        assert(option_by_id(c));
                        flags[n_flags++] = (given){c, argv[optind - 1], optarg};
                }
        }
        if (optind < argc) {
                fprintf(stderr, "rktlet: unexpected argument '%s' (see --help)\n", argv[optind]);
                return -EINVAL;
        }

        /* --help and --version still check the flags given, but read no file. */
        if (!config_given)
                config = DEFAULT_CONFIG;
        if (!isempty(config) && !show_help && !show_version) {
                int r = rkl_config_file_load(config, apply_file_pair, NULL, &err);
                if (r == -ENOENT && !config_given)
                        ; /* the default file is optional */
                else if (r < 0) {
                        fprintf(stderr, "rktlet: %s\n", err.msg);
                        return -EINVAL;
                }
        }

        /* A repeatable option given as flags replaces what the file said. */
        bool mirrors_replaced = false, bin_dirs_replaced = false;
        for (size_t i = 0; i < n_flags; i++) {
                if (flags[i].id == ARG_REGISTRY_MIRROR && !mirrors_replaced) {
                        arg_config.registry_mirrors = rkl_strv_free(arg_config.registry_mirrors);
                        mirrors_replaced = true;
                }
                if (flags[i].id == ARG_CNI_BIN_DIR && !bin_dirs_replaced) {
                        arg_config.cni_bin_dirs = rkl_strv_free(arg_config.cni_bin_dirs);
                        bin_dirs_replaced = true;
                }
                /* getopt's argv[optind - 1] is "--name=value" or "--name": the name only. */
                _cleanup_free_ char *name = rkl_xasprintf("--%s", option_by_id(flags[i].id)->name);
                if (apply(flags[i].id, name, flags[i].value, &err) < 0) {
                        fprintf(stderr, "rktlet: %s\n", err.msg);
                        return -EINVAL;
                }
        }
        if (show_help) {
                help();
                return 0;
        }
        if (show_version) {
                printf("rktlet %s\nCRI API: runtime.v1\n", RKL_VERSION);
                return 0;
        }
        return 1;
}

/* Socket activation (rktlet.socket): systemd made and listens on the socket, and keeps it
 * while rktlet restarts. The socket it passed goes in arg_config (listen_fd, and its path);
 * without one, the daemon binds listen_path, in a directory made here. */
static int take_socket(void)
{
        int r = sd_listen_fds(1);
        if (r < 0)
                return rkl_log_error_errno(r, "LISTEN_FDS: %m");
        if (r > 1)
                return rkl_log_error("systemd passed %d sockets, rktlet takes one (rktlet.socket "
                                     "with one ListenStream=)",
                                     r);
        if (r == 0) {
                /* The socket's parent, for the default path under /run. */
                _cleanup_free_ char *parent = rkl_xstrdup(arg_config.listen_path);
                *strrchr(parent, '/') = 0;
                if (!isempty(parent) && (r = rkl_mkdir_p(parent, 0755)) < 0)
                        return rkl_log_error_errno(r, "cannot create '%s': %m", parent);
                return 0;
        }
        int fd = SD_LISTEN_FDS_START;
        if (sd_is_socket_unix(fd, SOCK_STREAM, 1, NULL, 0) <= 0)
                return rkl_log_error("the socket systemd passed (fd %d) is not a listening "
                                     "unix stream socket",
                                     fd);
        (void)fcntl(fd, F_SETFD, FD_CLOEXEC); /* rkt never inherits it */
        arg_config.listen_fd = fd;
        struct sockaddr_un sa = {0};
        socklen_t len = sizeof(sa);
        if (getsockname(fd, (struct sockaddr *)&sa, &len) == 0 && sa.sun_path[0] == '/') {
                free(arg_config.listen_path);
                arg_config.listen_path = rkl_xstrndup(sa.sun_path, sizeof(sa.sun_path));
        }
        return 0;
}

/* Until SIGTERM or SIGINT comes on sfd: STATUS= every few seconds, and the watchdog when the
 * unit has WatchdogSec=: a ping says the main thread runs and the reconciler has not sat on
 * a change for a whole watchdog period (its passes are short; its rkt commands run on a
 * pool). */
static int serve(rkl_daemon *d, int sfd)
{
        uint64_t watchdog_usec = 0;
        if (sd_watchdog_enabled(0, &watchdog_usec) <= 0)
                watchdog_usec = 0;
        uint64_t tick_usec = STATUS_INTERVAL_USEC;
        if (watchdog_usec > 0 && watchdog_usec / 2 < tick_usec)
                tick_usec = watchdog_usec / 2;
        for (;;) {
                struct pollfd p = {.fd = sfd, .events = POLLIN};
                int k = poll(&p, 1, (int)(tick_usec / USEC_PER_MSEC));
                if (k < 0 && errno != EINTR)
                        return rkl_log_error_errno(errno, "poll: %m");
                if (k > 0) {
                        struct signalfd_siginfo si;
                        ssize_t n = read(sfd, &si, sizeof(si));
                        if (n < 0 && errno == EINTR)
                                continue;
                        if (n != sizeof(si))
                                return rkl_log_error_errno(errno, "signalfd read: %m");
                        rkl_log_info("received %s, shutting down", strsignal((int)si.ssi_signo));
                        return 0;
                }
                rkl_daemon_status st;
                rkl_daemon_get_status(d, &st);
                bool alive = watchdog_usec == 0 || st.reconcile_lag_usec < watchdog_usec;
                if (!alive)
                        rkl_log_error("the reconciler has not looked at a change for %.1f s: "
                                      "not pinging the watchdog",
                                      (double)st.reconcile_lag_usec / USEC_PER_SEC);
                (void)sd_notifyf(0,
                                 "STATUS=serving: %zu pods (%zu running), %zu containers (%zu "
                                 "running), reconcile lag %.1f s%s",
                                 st.pods, st.pods_running, st.containers, st.containers_running,
                                 (double)st.reconcile_lag_usec / USEC_PER_SEC,
                                 alive && watchdog_usec ? "\nWATCHDOG=1" : "");
        }
}

static int run(void)
{
        rkl_error err = RKL_ERROR_INIT;
        _cleanup_(rkl_daemon_freep) rkl_daemon *d = NULL;
        sigset_t mask;
        int r;

        /* Signals are taken by this thread only: block them before any thread starts. */
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        pthread_sigmask(SIG_BLOCK, &mask, NULL);
        signal(SIGPIPE, SIG_IGN);
        _cleanup_close_ int sfd = signalfd(-1, &mask, SFD_CLOEXEC);
        if (sfd < 0)
                return rkl_log_error_errno(errno, "signalfd: %m");

        r = take_socket();
        if (r < 0)
                return r;
        if (!arg_config.rkt_path)
                rkl_log_warning("no rkt binary in PATH: the runtime reports not ready until "
                                "--rkt-path names one");

        r = rkl_daemon_new(&arg_config, &d, &err);
        if (r >= 0)
                r = rkl_daemon_start(d, &err);
        if (r < 0)
                return rkl_log_error_errno(r, "cannot start: %s", err.msg);

        rkl_log_info("rktlet %s serving CRI runtime.v1 on '%s'%s", RKL_VERSION,
                     arg_config.listen_path, arg_config.listen_fd > 0 ? " (socket-activated)" : "");
        (void)sd_notify(0, "READY=1\nSTATUS=serving");
        r = serve(d, sfd);
        if (r < 0)
                return r;
        (void)sd_notify(0, "STOPPING=1");
        rkl_daemon_stop(d);
        if (rkl_daemon_failed(d))
                return -EUCLEAN;
        return 0;
}

/* `rktlet check`: the node against the options the daemon would run with. */
static int check(void)
{
        rkl_check_config c = {
            .config = &arg_config,
            .proc = "/proc",
            .cgroup = "/sys/fs/cgroup",
        };
        rkl_check_result *l = NULL;
        size_t n = 0;
        bool failed = false;

        rkl_check_all(&c, &l, &n);
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *line = rkl_check_format(&l[i]);
                puts(line);
                failed = failed || l[i].level == RKL_CHECK_FAIL;
                rkl_check_result_done(&l[i]);
        }
        free(l);
        (void)fflush(stdout);
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

int main(int argc, char *argv[])
{
        bool check_only = false;
        int r;

        /* The ExecSync helper (exec/exec.h): the daemon runs it as /proc/self/exe, and it
         * becomes the command inside a container. Hidden, and ahead of all of the daemon's
         * set-up, which it needs none of. */
        if (argc > 1 && streq(argv[1], RKL_EXEC_IN_COMMAND))
                return rkl_exec_in_main(argc - 1, argv + 1);
        if (argc > 1 && streq(argv[1], RKL_SYSCTL_COMMAND))
                return rkl_rkt_sysctl_main(argc - 1, argv + 1);

        if (argc > 1 && streq(argv[1], "check")) {
                check_only = true;
                argc--;
                argv++;
        }

        umask(0077);
        rkl_crash_points_init();
        rkl_config_init(&arg_config);

        r = parse_argv(argc, argv);
        if (r <= 0) {
                rkl_config_done(&arg_config);
                return r < 0 ? EXIT_USAGE : EXIT_SUCCESS;
        }
        if (!arg_config.rkt_path)
                arg_config.rkt_path = find_in_path("rkt");
        /* A repeatable option's default applies only when neither flags nor file gave it. */
        if (!arg_config.cni_bin_dirs)
                arg_config.cni_bin_dirs = rkl_strv_copy(RKL_STRV(RKL_CONFIG_DEFAULT_CNI_BIN_DIRS));

        if (check_only) {
                r = check();
                rkl_config_done(&arg_config);
                return r;
        }
        r = run();
        rkl_config_done(&arg_config);
        return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
