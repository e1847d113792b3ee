/* Forced crash points for the chaos tests (docs/reliability.md): RKL_CRASH_AT=<name>[:<n>] in
 * the environment makes the daemon abort() the n-th time (default: the first) it reaches
 * rkl_crash_point(name), so that a test can prove every step is safe to repeat after a crash at
 * that very point. */
#pragma once

/* Reads RKL_CRASH_AT once; call from main() before threads start. */
void rkl_crash_points_init(void);
/* Aborts here if the environment asked for it. Cheap when it did not. */
void rkl_crash_point(const char *name);
