#include "log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <systemd/sd-journal.h>

#include "time-util.h"
#include "banned.h"

int rkl_log_max_level = LOG_INFO;

static const char *const level_names[] = {
    [LOG_EMERG] = "emerg",     [LOG_ALERT] = "alert",   [LOG_CRIT] = "crit", [LOG_ERR] = "err",
    [LOG_WARNING] = "warning", [LOG_NOTICE] = "notice", [LOG_INFO] = "info", [LOG_DEBUG] = "debug",
};

int rkl_log_level_from_string(const char *s)
{
        for (size_t i = 0; i < ELEMENTSOF(level_names); i++)
                if (streq(s, level_names[i]))
                        return (int)i;
        if (streq(s, "error"))
                return LOG_ERR;
        if (streq(s, "warn"))
                return LOG_WARNING;
        return -EINVAL;
}

static bool stderr_is_journal(void);

/* The monotonic clock's seconds, as `journalctl -o short-monotonic` and the kernel's log
 * print them: a log file (tests, benchmarks, a daemon run by hand) can then be read against
 * the pods' journals and the clock of a benchmark, and a step's duration read off it. The
 * journal stamps its entries itself: no stamp there. */
static void stamp(char *buf, size_t size)
{
        struct timespec ts;
        if (stderr_is_journal() || clock_gettime(CLOCK_MONOTONIC, &ts) < 0) {
                buf[0] = 0;
                return;
        }
        (void)snprintf(buf, size, "[%5lld.%06ld] ", (long long)ts.tv_sec,
                       ts.tv_nsec / (long)NSEC_PER_USEC);
}

static void write_stderr(int level, const char *msg, const char *file, int line)
{
        char ts[32];
        stamp(ts, sizeof(ts));
        /* One write per line so that lines from threads do not interleave. */
        if (rkl_log_max_level >= LOG_DEBUG)
                fprintf(stderr, "<%d>%s%s (%s:%d)\n", level, ts, msg, file, line);
        else
                fprintf(stderr, "<%d>%s%s\n", level, ts, msg);
}

int rkl_log_internal(int level, int error, const char *file, int line, const char *fmt, ...)
{
        int saved = errno;
        char buf[2048];
        va_list ap;

        error = abs(error);
        errno = error ? error : saved;
        va_start(ap, fmt);
        (void)vsnprintf(buf, sizeof(buf), fmt, ap);
        va_end(ap);
        write_stderr(level, buf, file, line);
        errno = error ? error : saved;
        return -error;
}

/* Is stderr journald's stream? systemd sets $JOURNAL_STREAM to its "DEV:INODE" (see
 * systemd.exec(5)); a redirected stderr no longer matches. Decided once. */
static bool stderr_is_journal(void)
{
        static atomic_int known = -1; /* the log's own cache of a fact fixed at start */
        int k = atomic_load(&known);
        if (k >= 0)
                return k;
        const char *e = getenv("JOURNAL_STREAM");
        struct stat st;
        unsigned long dev, ino;
        k = e && sscanf(e, "%lu:%lu", &dev, &ino) == 2 && fstat(STDERR_FILENO, &st) == 0 &&
            st.st_dev == (dev_t)dev && st.st_ino == (ino_t)ino;
        atomic_store(&known, k);
        return k;
}

int rkl_log_object_internal(int level, int error, const rkl_log_object *o, const char *file,
                            int line, const char *fmt, ...)
{
        int saved = errno;
        char msg[2048];
        va_list ap;

        error = abs(error);
        errno = error ? error : saved;
        va_start(ap, fmt);
        (void)vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        if (!stderr_is_journal()) {
                write_stderr(level, msg, file, line);
                errno = error ? error : saved;
                return -error;
        }

        char f[9][2200];
        struct iovec iov[9];
        size_t n = 0;
#define FIELD(...)                                                                                 \
        do {                                                                                       \
                int _k_ = snprintf(f[n], sizeof(f[n]), __VA_ARGS__);                               \
                iov[n] = (struct iovec){f[n], _k_ < 0                       ? 0                    \
                                              : (size_t)_k_ >= sizeof(f[n]) ? sizeof(f[n]) - 1     \
                                                                            : (size_t)_k_};        \
                n++;                                                                               \
        } while (0)
        FIELD("MESSAGE=%s", msg);
        FIELD("PRIORITY=%d", level);
        FIELD("CODE_FILE=%s", file);
        FIELD("CODE_LINE=%d", line);
        if (o && o->pod_id)
                FIELD("POD_ID=%s", o->pod_id);
        if (o && o->container_id)
                FIELD("CONTAINER_ID=%s", o->container_id);
        if (o && o->pod_name)
                FIELD("POD_NAME=%s", o->pod_name);
        if (o && o->pod_namespace)
                FIELD("POD_NAMESPACE=%s", o->pod_namespace);
        if (o && o->timeline)
                FIELD("TIMELINE=%s", o->timeline);
#undef FIELD
        if (sd_journal_sendv(iov, (int)n) < 0)
                write_stderr(level, msg, file, line); /* the journal went away: not the line */
        errno = error ? error : saved;
        return -error;
}
