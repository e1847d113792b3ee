/* rkt-sim: a test double of rkt 1.30.0 with the host stage1. It is invoked exactly like rkt
 * (`rkt [global flags] <command> [flags] args`) and keeps rkt's on-disk pod layout, so that
 * rktlet's tests can run against it. See README.md for what it does and does not reproduce. */
#include <limits.h>
#include <signal.h>

#include "base/alloc.h"
#include "base/strv.h"
#include "base/time-util.h"
#include "sim.h"
#include "base/banned.h"

typedef struct sim_command {
        const char *words;
        int (*run)(sim_ctx *c, char **argv);
        bool app_experiment;
} sim_command;

static int cmd_version(sim_ctx *c, char **argv);

static const sim_command commands[] = {
    {"app sandbox", sim_cmd_sandbox, true},
    {"app add", sim_cmd_app_add, true},
    {"app start", sim_cmd_app_start, true},
    {"app stop", sim_cmd_app_stop, true},
    {"app rm", sim_cmd_app_rm, true},
    {"app status", sim_cmd_app_status, true},
    {"app list", sim_cmd_app_list, true},
    {"app exec", sim_cmd_enter, true},
    {"enter", sim_cmd_enter, false},
    {"status", sim_cmd_status, false},
    {"list", sim_cmd_list, false},
    {"stop", sim_cmd_stop, false},
    {"rm", sim_cmd_rm, false},
    {"gc", sim_cmd_gc, false},
    {"version", cmd_version, false},
    {"image fetch", sim_cmd_image_fetch, false},
    {"fetch", sim_cmd_image_fetch, false},
    {"image list", sim_cmd_image_list, false},
    {"image cat-manifest", sim_cmd_image_cat_manifest, false},
    {"image rm", sim_cmd_image_rm, false},
};

/* Global flags that take a separate value word when written without '='. */
static bool global_takes_value(const char *w)
{
        static const char *const names[] = {"--dir", "--insecure-options", "--user-config",
                                            "--local-config", "--system-config"};
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (streq(w, names[i]))
                        return true;
        return false;
}

static int cmd_version(sim_ctx *c, char **argv)
{
        sim_args a = {0};
        if (sim_cmd_parse(c, argv, NULL, 0, 0, false, &a) < 0)
                return SIM_EXIT_ERROR;
        sim_args_done(&a);
        sim_out("rkt Version: %s", SIM_RKT_VERSION);
        sim_out("appc Version: %s", SIM_APPC_VERSION);
        sim_out("Go Version: go1.10.3");
        sim_out("Go OS/Arch: linux/amd64");
        sim_out("Features: -TPM +SDJOURNAL");
        sim_out("Simulator: rkt-sim (test double, not rkt)");
        return 0;
}

static void ctx_done(sim_ctx *c)
{
        free(c->dir);
        free(c->exe);
        rkl_strv_free(c->insecure);
}

int main(int argc, char **argv)
{
        if (argc >= 2 && streq(argv[1], "__stage2"))
                return sim_cmd_stage2(argc, argv);
        if (argc >= 2 && streq(argv[1], "__netns-holder"))
                return sim_cmd_netns_holder(argc, argv);

        _cleanup_(ctx_done) sim_ctx c = {
            .dir = rkl_xstrdup(SIM_DEFAULT_DIR),
            .start_usec = rkl_now_usec(CLOCK_MONOTONIC),
            .parent = getppid(),
        };
        const char *profile = getenv("RKT_SIM_PROFILE");
        c.profile_real = profile && streq(profile, "real");
        char exe[PATH_MAX];
        ssize_t k = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        if (k < 0) {
                sim_err("cannot resolve /proc/self/exe: %m");
                return SIM_EXIT_ERROR;
        }
        exe[k] = 0;
        c.exe = rkl_xstrdup(exe);
        /* A parent that ignores SIGPIPE or blocks signals must not change how we die. */
        signal(SIGPIPE, SIG_DFL);

        /* Find the command words the way cobra does: skip flags (and their values). */
        size_t word_idx[2] = {0, 0}, nwords = 0;
        for (int i = 1; i < argc && nwords < 2; i++) {
                if (argv[i][0] == '-') {
                        if (global_takes_value(argv[i]))
                                i++;
                        continue;
                }
                if (nwords == 1 && !streq(argv[word_idx[0]], "app") &&
                    !streq(argv[word_idx[0]], "image"))
                        break;
                word_idx[nwords++] = (size_t)i;
        }
        if (nwords == 0) {
                sim_err("Usage: rkt [command]  (rkt-sim, a test double of rkt %s)",
                        SIM_RKT_VERSION);
                return SIM_EXIT_ERROR;
        }
        _cleanup_free_ char *words =
            nwords == 2 ? rkl_xasprintf("%s %s", argv[word_idx[0]], argv[word_idx[1]])
                        : rkl_xstrdup(argv[word_idx[0]]);
        const sim_command *cmd = NULL;
        for (size_t i = 0; i < ELEMENTSOF(commands); i++)
                if (streq(commands[i].words, words))
                        cmd = &commands[i];
        bool is_app = streq(argv[word_idx[0]], "app");
        if (is_app && !sim_env_true("RKT_EXPERIMENT_APP")) {
                sim_err("Error: unknown command \"app\" for \"rkt\"");
                sim_err("Run 'rkt --help' for usage.");
                return SIM_EXIT_ERROR;
        }
        if (!cmd) {
                const char *bad = nwords == 2 ? argv[word_idx[1]] : argv[word_idx[0]];
                sim_err("Error: unknown command \"%s\" for \"rkt%s%s\"", bad,
                        nwords == 2 ? " " : "", nwords == 2 ? argv[word_idx[0]] : "");
                sim_err("Run 'rkt --help' for usage.");
                return SIM_EXIT_ERROR;
        }
        /* `fetch` is rkt's old spelling of `image fetch`: same fault rules. */
        c.command = streq(cmd->words, "fetch")         ? "image fetch"
                    : streq(cmd->words, "app sandbox") ? "sandbox"
                                                       : cmd->words;

        _cleanup_strv_free_ char **rest = rkl_xnew0(char *, 1);
        for (int i = 1; i < argc; i++)
                if ((size_t)i != word_idx[0] && (nwords < 2 || (size_t)i != word_idx[1]))
                        rkl_strv_push(&rest, argv[i]);

        sim_fault_check_command(&c);
        int r = cmd->run(&c, rest);
        fflush(NULL);
        return r;
}
