#include "cgroup.h"

#include <dirent.h>
#include <sys/stat.h>
#include <signal.h>

#include "base/alloc.h"
#include "base/fileio.h"
#include "base/parse.h"
#include "base/banned.h"

#define CGROUP_ROOT "/sys/fs/cgroup"

/* The path of pid's cgroup in the hierarchy whose /proc/PID/cgroup line starts with key
 * ("0::" for cgroup2, "name=systemd" or "memory" for v1 controllers). */
static int cgroup_of(pid_t pid, const char *controller, char **ret)
{
        _cleanup_free_ char *path = rkl_xasprintf("/proc/%d/cgroup", (int)pid);
        _cleanup_free_ char *text = NULL;
        int r = rkl_read_file_at(AT_FDCWD, path, 64 * 1024, &text, NULL);
        if (r < 0)
                return r;
        for (char *line = text, *next; line && *line; line = next) {
                next = strchr(line, '\n');
                if (next)
                        *next++ = 0;
                /* hierarchy-ID:controller-list:path */
                char *c = strchr(line, ':');
                char *p = c ? strchr(c + 1, ':') : NULL;
                if (!p)
                        continue;
                *p++ = 0;
                c++;
                bool match = false;
                if (!*controller)
                        match = !*c && streq(line, "0");
                else
                        for (char *tok = c, *end; tok && !match; tok = end ? end + 1 : NULL) {
                                end = strchr(tok, ',');
                                size_t n = end ? (size_t)(end - tok) : strlen(tok);
                                match = n == strlen(controller) && !strncmp(tok, controller, n);
                        }
                if (match) {
                        *ret = rkl_xstrdup(p);
                        return 0;
                }
        }
        return -ENODATA;
}

static bool is_dir(const char *p)
{
        struct stat st;
        return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

int rkl_cgroup_app_paths(pid_t supervisor, const char *app, char **ret_procs_dir,
                         char **ret_memory_dir)
{
        _cleanup_free_ char *sd = NULL, *mem = NULL, *unified = NULL;
        char *procs = NULL, *memory = NULL;

        /* A v1 or hybrid host: name=systemd holds the processes, memory the counters. */
        if (cgroup_of(supervisor, "name=systemd", &sd) == 0 && is_dir(CGROUP_ROOT "/systemd")) {
                procs = rkl_xasprintf(CGROUP_ROOT "/systemd%s/system.slice/%s.service", sd, app);
                if (cgroup_of(supervisor, "memory", &mem) == 0)
                        memory = rkl_xasprintf(CGROUP_ROOT "/memory%s/system.slice/%s.service", mem,
                                               app);
        } else {
                int r = cgroup_of(supervisor, "", &unified);
                if (r < 0)
                        return r == -ENOENT ? -ENOENT : r;
                procs = rkl_xasprintf(CGROUP_ROOT "%s/system.slice/%s.service", unified, app);
                memory = rkl_xstrdup(procs);
        }
        *ret_procs_dir = procs;
        *ret_memory_dir = memory;
        return 0;
}

int rkl_cgroup_first_pid(const char *dir, pid_t *ret)
{
        _cleanup_free_ char *procs = rkl_xasprintf("%s/cgroup.procs", dir);
        _cleanup_free_ char *text = NULL;
        int r = rkl_read_file_at(AT_FDCWD, procs, 4 << 20, &text, NULL);
        if (r < 0)
                return r;
        unsigned pid = 0;
        text[strcspn(text, "\n")] = 0;
        *ret = *text && rkl_safe_atou(text, &pid) == 0 ? (pid_t)pid : 0;
        return 0;
}

int rkl_cgroup_kill(const char *dir, int sig)
{
        int n = 0;
        _cleanup_free_ char *procs = rkl_xasprintf("%s/cgroup.procs", dir);
        _cleanup_free_ char *text = NULL;
        if (rkl_read_file_at(AT_FDCWD, procs, 4 << 20, &text, NULL) == 0)
                for (char *line = text, *next; line && *line; line = next) {
                        next = strchr(line, '\n');
                        if (next)
                                *next++ = 0;
                        unsigned pid;
                        if (rkl_safe_atou(line, &pid) == 0 && pid > 1 && kill((pid_t)pid, sig) == 0)
                                n++;
                }
        _cleanup_closedir_ DIR *d = opendir(dir);
        if (!d)
                return n;
        struct dirent *de;
        while ((de = readdir(d)))
                if (de->d_type == DT_DIR && de->d_name[0] != '.') {
                        _cleanup_free_ char *sub = rkl_xasprintf("%s/%s", dir, de->d_name);
                        n += rkl_cgroup_kill(sub, sig);
                }
        return n;
}

int rkl_cgroup_oom_kills(const char *memory_dir, unsigned *ret)
{
        static const char *const files[] = {"memory.events", "memory.oom_control"};
        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                _cleanup_free_ char *p = rkl_xasprintf("%s/%s", memory_dir, files[i]);
                _cleanup_free_ char *text = NULL;
                if (rkl_read_file_at(AT_FDCWD, p, 64 * 1024, &text, NULL) < 0)
                        continue;
                char *k = strstr(text, "oom_kill ");
                if (!k)
                        continue;
                k += strlen("oom_kill ");
                k[strcspn(k, "\n")] = 0;
                return rkl_safe_atou(k, ret);
        }
        return is_dir(memory_dir) ? -ENODATA : -ENOENT;
}
