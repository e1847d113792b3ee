/* rktlet: a Kubernetes CRI runtime that runs pods with rkt. */
#include <getopt.h>
#include <grp.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>

#include "daemon.h"
#include "base/alloc.h"
#include "base/crash.h"
#include "base/fileio.h"
#include "base/log.h"
#include "base/parse.h"
#include "base/strv.h"
#include "base/time-util.h"
#include "exec/exec.h"
#include "images/images.h"
#include "base/banned.h"

#define DEFAULT_LISTEN       "/run/rktlet/rktlet.sock"
#define DEFAULT_STATE_DIR    "/var/lib/rktlet"
#define DEFAULT_RKT_DATA_DIR "/var/lib/rktlet/data"
#define EXIT_USAGE           2

static char *arg_listen;
static char *arg_state_dir;
static char *arg_rkt_path;
static char *arg_rkt_data_dir;
static char *arg_systemd_bus;
static char *arg_net;
static char *arg_stage1_name;
static unsigned arg_max_actions = 4;
static gid_t arg_socket_gid = (gid_t)-1;
static unsigned arg_api_threads = 1;
static bool arg_sync_full;
static uint64_t arg_probe_interval_usec = 30 * USEC_PER_SEC;
static uint64_t arg_sandbox_ready_timeout_usec = 120 * USEC_PER_SEC;
static uint64_t arg_rkt_timeout_usec = 60 * USEC_PER_SEC;
static char **arg_registry_mirrors;

static void help(void)
{
        printf("Usage: rktlet [OPTIONS]\n"
               "\n"
               "A Kubernetes CRI (runtime.v1) runtime that runs pods with rkt.\n"
               "\n"
               "  --listen PATH           CRI socket (default " DEFAULT_LISTEN ")\n"
               "  --socket-group GROUP    group that may use the socket (default: root's)\n"
               "  --state-dir DIR         where the database lives (default " DEFAULT_STATE_DIR
               ")\n"
               "  --sync-full             fsync every commit: survives power loss, not only\n"
               "                          crashes of the daemon (about 0.2 ms per write)\n"
               "  --rkt-path PATH         the rkt binary (default: rkt in PATH)\n"
               "  --rkt-data-dir DIR      rkt's --dir (default " DEFAULT_RKT_DATA_DIR ")\n"
               "  --systemd-bus ADDRESS   D-Bus address of systemd (default: the system bus)\n"
               "  --net NAME              rkt network for pods (default: rkt's default network)\n"
               "  --stage1-name IMAGE     rkt stage1 image for pods (default: rkt's own)\n"
               "  --max-actions N         rkt commands run at once (default 4)\n"
               "  --api-threads N         gRPC completion-queue threads (default 1)\n"
               "  --probe-interval SEC    how often rkt and systemd are checked (default 30)\n"
               "  --sandbox-ready-timeout SEC\n"
               "                          a sandbox not ready by then is retried (default 120)\n"
               "  --rkt-timeout SEC       a rkt command still running then is killed (default 60)\n"
               "  --registry-mirror HOST=URL\n"
               "                          pull HOST's images from URL first, e.g.\n"
               "                          registry.k8s.io=http://127.0.0.1:5000 (repeatable;\n"
               "                          http:// mirrors are fetched without TLS)\n"
               "  --log-level LEVEL       debug, info, notice, warning or err (default info)\n"
               "  -h, --help              show this help\n"
               "  --version               show the version\n");
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

static int parse_argv(int argc, char *argv[])
{
        enum {
                ARG_LISTEN = 0x100,
                ARG_SOCKET_GROUP,
                ARG_STATE_DIR,
                ARG_SYNC_FULL,
                ARG_RKT_PATH,
                ARG_RKT_DATA_DIR,
                ARG_SYSTEMD_BUS,
                ARG_API_THREADS,
                ARG_NET,
                ARG_STAGE1_NAME,
                ARG_MAX_ACTIONS,
                ARG_PROBE_INTERVAL,
                ARG_SANDBOX_READY_TIMEOUT,
                ARG_RKT_TIMEOUT,
                ARG_REGISTRY_MIRROR,
                ARG_LOG_LEVEL,
                ARG_VERSION,
        };
        static const struct option options[] = {
            {"listen", required_argument, NULL, ARG_LISTEN},
            {"socket-group", required_argument, NULL, ARG_SOCKET_GROUP},
            {"state-dir", required_argument, NULL, ARG_STATE_DIR},
            {"rkt-path", required_argument, NULL, ARG_RKT_PATH},
            {"rkt-data-dir", required_argument, NULL, ARG_RKT_DATA_DIR},
            {"systemd-bus", required_argument, NULL, ARG_SYSTEMD_BUS},
            {"api-threads", required_argument, NULL, ARG_API_THREADS},
            {"sync-full", no_argument, NULL, ARG_SYNC_FULL},
            {"net", required_argument, NULL, ARG_NET},
            {"stage1-name", required_argument, NULL, ARG_STAGE1_NAME},
            {"max-actions", required_argument, NULL, ARG_MAX_ACTIONS},
            {"probe-interval", required_argument, NULL, ARG_PROBE_INTERVAL},
            {"sandbox-ready-timeout", required_argument, NULL, ARG_SANDBOX_READY_TIMEOUT},
            {"rkt-timeout", required_argument, NULL, ARG_RKT_TIMEOUT},
            {"registry-mirror", required_argument, NULL, ARG_REGISTRY_MIRROR},
            {"log-level", required_argument, NULL, ARG_LOG_LEVEL},
            {"help", no_argument, NULL, 'h'},
            {"version", no_argument, NULL, ARG_VERSION},
            {},
        };
        int c, r;
        unsigned u;

        opterr = 0;
        while ((c = getopt_long(argc, argv, ":h", options, NULL)) >= 0) {
                switch (c) {
                case ARG_LISTEN:
                        free(arg_listen);
                        arg_listen = absolute(optarg);
                        break;
                case ARG_SOCKET_GROUP: {
                        struct group *g = getgrnam(optarg);
                        if (g)
                                arg_socket_gid = g->gr_gid;
                        else if (rkl_safe_atou(optarg, &u) == 0)
                                arg_socket_gid = (gid_t)u;
                        else {
                                fprintf(stderr, "rktlet: unknown group '%s'\n", optarg);
                                return -EINVAL;
                        }
                        break;
                }
                case ARG_STATE_DIR:
                        free(arg_state_dir);
                        arg_state_dir = absolute(optarg);
                        break;
                case ARG_SYNC_FULL:
                        arg_sync_full = true;
                        break;
                case ARG_RKT_PATH:
                        free(arg_rkt_path);
                        arg_rkt_path = absolute(optarg);
                        break;
                case ARG_RKT_DATA_DIR:
                        free(arg_rkt_data_dir);
                        arg_rkt_data_dir = absolute(optarg);
                        break;
                case ARG_SYSTEMD_BUS:
                        free(arg_systemd_bus);
                        arg_systemd_bus = streq(optarg, "system") ? NULL : rkl_xstrdup(optarg);
                        break;
                case ARG_API_THREADS:
                        if (rkl_safe_atou(optarg, &u) < 0 || u < 1 || u > 64) {
                                fprintf(stderr, "rktlet: --api-threads takes 1 to 64, not '%s'\n",
                                        optarg);
                                return -EINVAL;
                        }
                        arg_api_threads = u;
                        break;
                case ARG_NET:
                case ARG_STAGE1_NAME:
                        /* They become rkt flag values: nothing that splits or reads as one. */
                        if (isempty(optarg) || optarg[0] == '-' || strpbrk(optarg, ", \t\n")) {
                                fprintf(stderr, "rktlet: invalid value '%s' for %s\n", optarg,
                                        argv[optind - 1]);
                                return -EINVAL;
                        }
                        free(c == ARG_NET ? arg_net : arg_stage1_name);
                        *(c == ARG_NET ? &arg_net : &arg_stage1_name) = rkl_xstrdup(optarg);
                        break;
                case ARG_MAX_ACTIONS:
                        if (rkl_safe_atou(optarg, &u) < 0 || u < 1 || u > 256) {
                                fprintf(stderr, "rktlet: --max-actions takes 1 to 256, not '%s'\n",
                                        optarg);
                                return -EINVAL;
                        }
                        arg_max_actions = u;
                        break;
                case ARG_PROBE_INTERVAL:
                        if (rkl_safe_atou(optarg, &u) < 0 || u < 1 || u > 3600) {
                                fprintf(stderr,
                                        "rktlet: --probe-interval takes 1 to 3600 seconds, "
                                        "not '%s'\n",
                                        optarg);
                                return -EINVAL;
                        }
                        arg_probe_interval_usec = u * USEC_PER_SEC;
                        break;
                case ARG_SANDBOX_READY_TIMEOUT:
                case ARG_RKT_TIMEOUT:
                        if (rkl_safe_atou(optarg, &u) < 0 || u < 1 || u > 3600) {
                                fprintf(stderr, "rktlet: %s takes 1 to 3600 seconds, not '%s'\n",
                                        argv[optind - 1], optarg);
                                return -EINVAL;
                        }
                        *(c == ARG_RKT_TIMEOUT ? &arg_rkt_timeout_usec
                                               : &arg_sandbox_ready_timeout_usec) =
                            u * USEC_PER_SEC;
                        break;
                case ARG_REGISTRY_MIRROR: {
                        rkl_error err = RKL_ERROR_INIT;
                        if (rkl_images_mirror_check(optarg, &err) < 0) {
                                fprintf(stderr, "rktlet: %s\n", err.msg);
                                return -EINVAL;
                        }
                        rkl_strv_push(&arg_registry_mirrors, optarg);
                        break;
                }
                case ARG_LOG_LEVEL:
                        r = rkl_log_level_from_string(optarg);
                        if (r < 0) {
                                fprintf(stderr, "rktlet: unknown log level '%s'\n", optarg);
                                return -EINVAL;
                        }
                        rkl_log_max_level = r;
                        break;
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        printf("rktlet %s\nCRI API: runtime.v1\n", RKL_VERSION);
                        return 0;
                case ':':
                        fprintf(stderr, "rktlet: option '%s' needs a value\n", argv[optind - 1]);
                        return -EINVAL;
                default:
                        fprintf(stderr, "rktlet: unknown option '%s' (see --help)\n",
                                argv[optind - 1]);
                        return -EINVAL;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "rktlet: unexpected argument '%s' (see --help)\n", argv[optind]);
                return -EINVAL;
        }
        return 1;
}

static void args_free(void)
{
        free(arg_listen);
        free(arg_state_dir);
        free(arg_rkt_path);
        free(arg_rkt_data_dir);
        free(arg_systemd_bus);
        free(arg_net);
        free(arg_stage1_name);
        rkl_strv_free(arg_registry_mirrors);
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

        /* The socket's parent, for the default path under /run. */
        _cleanup_free_ char *parent = rkl_xstrdup(arg_listen);
        *strrchr(parent, '/') = 0;
        if (!isempty(parent) && (r = rkl_mkdir_p(parent, 0755)) < 0)
                return rkl_log_error_errno(r, "cannot create '%s': %m", parent);

        if (!arg_rkt_path)
                rkl_log_warning("no rkt binary in PATH: the runtime reports not ready until "
                                "--rkt-path names one");

        rkl_daemon_config cfg = {
            .listen_path = arg_listen,
            .state_dir = arg_state_dir,
            .sync_full = arg_sync_full,
            .rkt_path = arg_rkt_path,
            .rkt_data_dir = arg_rkt_data_dir,
            .systemd_bus = arg_systemd_bus,
            .net = arg_net,
            .stage1_name = arg_stage1_name,
            .max_actions = arg_max_actions,
            .api_threads = arg_api_threads,
            .socket_gid = arg_socket_gid,
            .probe_interval_usec = arg_probe_interval_usec,
            .sandbox_ready_timeout_usec = arg_sandbox_ready_timeout_usec,
            .rkt_timeout_usec = arg_rkt_timeout_usec,
            .registry_mirrors = arg_registry_mirrors,
        };
        r = rkl_daemon_new(&cfg, &d, &err);
        if (r >= 0)
                r = rkl_daemon_start(d, &err);
        if (r < 0)
                return rkl_log_error_errno(r, "cannot start: %s", err.msg);

        rkl_log_info("rktlet %s serving CRI runtime.v1 on '%s'", RKL_VERSION, arg_listen);
        (void)sd_notify(0, "READY=1\nSTATUS=serving");

        for (;;) {
                struct signalfd_siginfo si;
                ssize_t n = read(sfd, &si, sizeof(si));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n != sizeof(si))
                        return rkl_log_error_errno(errno, "signalfd read: %m");
                rkl_log_info("received %s, shutting down", strsignal((int)si.ssi_signo));
                break;
        }
        (void)sd_notify(0, "STOPPING=1");
        rkl_daemon_stop(d);
        if (rkl_daemon_failed(d))
                return -EUCLEAN;
        return 0;
}

int main(int argc, char *argv[])
{
        int r;

        /* The ExecSync helper (exec/exec.h): the daemon runs it as /proc/self/exe, and it
         * becomes the command inside a container. Hidden, and ahead of all of the daemon's
         * set-up, which it needs none of. */
        if (argc > 1 && streq(argv[1], RKL_EXEC_IN_COMMAND))
                return rkl_exec_in_main(argc - 1, argv + 1);

        umask(0077);
        rkl_crash_points_init();
        arg_listen = rkl_xstrdup(DEFAULT_LISTEN);
        arg_state_dir = rkl_xstrdup(DEFAULT_STATE_DIR);
        arg_rkt_data_dir = rkl_xstrdup(DEFAULT_RKT_DATA_DIR);

        r = parse_argv(argc, argv);
        if (r <= 0) {
                args_free();
                return r < 0 ? EXIT_USAGE : EXIT_SUCCESS;
        }
        if (!arg_rkt_path)
                arg_rkt_path = find_in_path("rkt");

        r = run();
        args_free();
        return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
