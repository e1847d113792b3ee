#include "log.h"

#include <stdarg.h>

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

const char *rkl_log_level_to_string(int level)
{
        if (level < 0 || (size_t)level >= ELEMENTSOF(level_names))
                return NULL;
        return level_names[level];
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
        /* One write per line so that lines from threads do not interleave. */
        if (rkl_log_max_level >= LOG_DEBUG)
                fprintf(stderr, "<%d>%s (%s:%d)\n", level, buf, file, line);
        else
                fprintf(stderr, "<%d>%s\n", level, buf);
        errno = error ? error : saved;
        return -error;
}
