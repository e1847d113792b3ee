#include "crash.h"

#include <signal.h>
#include <stdatomic.h>

#include "macro.h"
#include "parse.h"
#include "banned.h"

/* A test hook, read-only after init but for its hit counter: the one exception to "no
 * mutable globals" besides logging and arg_*, and it does nothing unless a test set it. */
static char target[128];
static unsigned target_hit = 1;
static atomic_uint hits;

void rkl_crash_points_init(void)
{
        const char *e = getenv("RKL_CRASH_AT");
        if (isempty(e))
                return;
        (void)snprintf(target, sizeof(target), "%s", e);
        char *colon = strchr(target, ':');
        if (colon) {
                *colon = 0;
                if (rkl_safe_atou(colon + 1, &target_hit) < 0 || target_hit == 0)
                        target_hit = 1;
        }
}

void rkl_crash_point(const char *name)
{
        if (_likely_(!target[0]) || !streq(name, target))
                return;
        if (atomic_fetch_add(&hits, 1) + 1 != target_hit)
                return;
        static const char msg[] = "<2>rktlet: crashing at a forced crash point (RKL_CRASH_AT)\n";
        (void)!write(STDERR_FILENO, msg, sizeof(msg) - 1);
        /* SIGKILL, not abort(): like the OOM killer, nothing runs on the way out. */
        raise(SIGKILL);
}
