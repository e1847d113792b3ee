/* Fault injection from the file named by $RKT_SIM_FAULTS, re-read at every use so that a test
 * can add or remove rules while pods run. One rule per line:
 *
 *   <command words> fail <code> <message...>   the command prints message, exits code
 *   <command words> hang                       the command sleeps until killed (or orphaned)
 *   <command words> crash-after <step>         SIGKILL at that step, after partial changes
 *   sandbox never-ready                        supervisor-status never appears
 *   sandbox slow-stop <ms>                     the pod begins to stop <ms> after its SIGTERM
 *   app <name> die <code> [after <ms>]         the app exits with code (instead of running)
 *   app <name> signal <N> [after <ms>]         the app is killed by signal N
 *
 * Command words are those of the invocation: "app add", "status", "image fetch", "sandbox"
 * (for `app sandbox`), ... Blank lines and lines starting with '#' are ignored. */
#include <signal.h>
#include <unistd.h>
#include <stdlib.h>

#include "base/alloc.h"
#include "base/parse.h"
#include "base/strv.h"
#include "sim.h"
#include "base/banned.h"

void sim_fault_done(sim_fault *f)
{
        free(f->message);
        free(f->step);
        *f = (sim_fault){0};
}

static const struct {
        const char *word;
        sim_fault_kind kind;
} actions[] = {
    {"fail", SIM_FAULT_FAIL},
    {"hang", SIM_FAULT_HANG},
    {"crash-after", SIM_FAULT_CRASH_AFTER},
    {"never-ready", SIM_FAULT_NEVER_READY},
    {"die", SIM_FAULT_APP_DIE},
    {"signal", SIM_FAULT_APP_SIGNAL},
    {"slow-stop", SIM_FAULT_SLOW_STOP},
};

static char **split_words(const char *line)
{
        char **l = rkl_xnew0(char *, 1);
        for (const char *p = line; *p;) {
                while (*p == ' ' || *p == '\t')
                        p++;
                if (!*p)
                        break;
                const char *e = p;
                while (*e && *e != ' ' && *e != '\t')
                        e++;
                rkl_strv_consume(&l, rkl_xstrndup(p, (size_t)(e - p)));
                p = e;
        }
        return l;
}

int sim_fault_parse_line(const char *line, char **ret_words, sim_fault *ret)
{
        _cleanup_strv_free_ char **w = split_words(line);
        size_t n = rkl_strv_length(w), i;
        sim_fault f = {0};

        for (i = 0; i < n; i++) {
                for (size_t k = 0; k < ELEMENTSOF(actions); k++)
                        if (streq(w[i], actions[k].word))
                                f.kind = actions[k].kind;
                if (f.kind != SIM_FAULT_NONE)
                        break;
        }
        if (f.kind == SIM_FAULT_NONE || i == 0)
                return -EINVAL;

        char **rest = w + i + 1;
        size_t nrest = n - i - 1;
        switch (f.kind) {
        case SIM_FAULT_FAIL:
                if (nrest < 1 || rkl_safe_atoi(rest[0], &f.code) < 0)
                        return -EINVAL;
                {
                        /* The message is the rest of the original line, spacing kept. */
                        const char *m = strstr(line, " fail ");
                        m = m ? m + 6 : "";
                        while (*m == ' ')
                                m++;
                        while (*m && *m != ' ')
                                m++;
                        while (*m == ' ')
                                m++;
                        f.message = rkl_xstrdup(m);
                }
                break;
        case SIM_FAULT_HANG:
        case SIM_FAULT_NEVER_READY:
                break;
        case SIM_FAULT_CRASH_AFTER:
                if (nrest < 1)
                        return -EINVAL;
                f.step = rkl_xstrdup(rest[0]);
                break;
        case SIM_FAULT_SLOW_STOP:
                if (nrest < 1 || rkl_safe_atoi(rest[0], &f.code) < 0 || f.code < 0)
                        return -EINVAL;
                break;
        case SIM_FAULT_APP_DIE:
        case SIM_FAULT_APP_SIGNAL:
                if (nrest < 1 || rkl_safe_atoi(rest[0], &f.code) < 0)
                        return -EINVAL;
                if (nrest >= 3 && streq(rest[1], "after")) {
                        uint64_t ms;
                        if (rkl_safe_atou64(rest[2], &ms) < 0)
                                return -EINVAL;
                        f.after_ms = ms;
                }
                break;
        default:
                return -EINVAL;
        }
        /* The words before the action, joined by single spaces. */
        size_t len = 0;
        for (size_t k = 0; k < i; k++)
                len += strlen(w[k]) + 1;
        char *words = rkl_xmalloc(len + 1);
        words[0] = 0;
        for (size_t k = 0; k < i; k++) {
                size_t l = strlen(words);
                snprintf(words + l, len + 1 - l, "%s%s", k ? " " : "", w[k]);
        }
        *ret_words = words;
        *ret = f;
        return 0;
}

/* Calls match(words, fault, userdata) for each rule until it returns true. */
static bool fault_scan(bool (*match)(const char *, const sim_fault *, const void *),
                       const void *userdata, sim_fault *ret)
{
        const char *path = getenv("RKT_SIM_FAULTS");
        if (isempty(path))
                return false;
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        if (!f)
                return false;
        char *line = NULL;
        size_t cap = 0;
        ssize_t len;
        bool found = false;
        while (!found && (len = getline(&line, &cap, f)) >= 0) {
                while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
                        line[--len] = 0;
                const char *p = line;
                while (*p == ' ' || *p == '\t')
                        p++;
                if (!*p || *p == '#')
                        continue;
                _cleanup_free_ char *words = NULL;
                sim_fault fault;
                if (sim_fault_parse_line(p, &words, &fault) < 0)
                        continue;
                if (match(words, &fault, userdata)) {
                        *ret = fault;
                        found = true;
                } else
                        sim_fault_done(&fault);
        }
        free(line);
        return found;
}

typedef struct cmd_match {
        const char *command;
        sim_fault_kind kind;
        const char *step;
} cmd_match;

static bool match_cmd(const char *words, const sim_fault *f, const void *ud)
{
        const cmd_match *m = ud;
        if (!streq(words, m->command) || f->kind != m->kind)
                return false;
        return !m->step || streq_ptr(f->step, m->step);
}

bool sim_fault_find(const char *command, sim_fault_kind kind, sim_fault *ret)
{
        cmd_match m = {.command = command, .kind = kind};
        return fault_scan(match_cmd, &m, ret);
}

static bool match_app(const char *words, const sim_fault *f, const void *ud)
{
        if (f->kind != SIM_FAULT_APP_DIE && f->kind != SIM_FAULT_APP_SIGNAL)
                return false;
        return strncmp(words, "app ", 4) == 0 && streq(words + 4, (const char *)ud);
}

bool sim_fault_find_app(const char *app, sim_fault *ret)
{
        return fault_scan(match_app, app, ret);
}

void sim_fault_check_command(const sim_ctx *c)
{
        sim_fault f = {0};
        if (sim_fault_find(c->command, SIM_FAULT_HANG, &f)) {
                /* Until killed, or until the process that ran us is gone: a test that
                 * SIGKILLs its daemon must not leave hung commands behind. */
                while (getppid() == c->parent)
                        (void)usleep(200 * 1000);
                _exit(137);
        }
        if (sim_fault_find(c->command, SIM_FAULT_FAIL, &f)) {
                if (!isempty(f.message))
                        sim_err("%s", f.message);
                fflush(NULL);
                _exit(f.code);
        }
}

void sim_fault_step(const sim_ctx *c, const char *step)
{
        sim_fault f = {0};
        cmd_match m = {.command = c->command, .kind = SIM_FAULT_CRASH_AFTER, .step = step};
        if (fault_scan(match_cmd, &m, &f)) {
                fflush(NULL);
                (void)raise(SIGKILL);
        }
}
