#include "cgroup.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/stat.h>
#include <signal.h>

#include "base/alloc.h"
#include "base/cgroup.h"
#include "base/fileio.h"
#include "base/parse.h"
#include "base/banned.h"

#define CGROUP_ROOT "/sys/fs/cgroup"

static bool is_dir(const char *p)
{
        struct stat st;
        return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The pod unit's part of a supervisor's cgroup path: up to its last component that is a
 * service ("/system.slice/rktlet-X.service/supervisor" -> "/system.slice/rktlet-X.service";
 * under a user manager the path holds user@0.service too, above the pod's unit). */
static char *unit_part(const char *path)
{
        const char *unit_end = NULL;
        for (const char *c = path; *c;) {
                const char *end = strchrnul(c + 1, '/');
                if (end - c > 8 && !strncmp(end - 8, ".service", 8))
                        unit_end = end;
                c = end;
        }
        return unit_end ? rkl_xstrndup(path, (size_t)(unit_end - path)) : NULL;
}

/* Looks for a directory called name at most depth levels below dir; its path relative to
 * dir goes to *ret. Shallow first, so a shallower match wins. */
static int find_dir(const char *dir, const char *name, int depth, char **ret)
{
        _cleanup_free_ char *direct = rkl_xasprintf("%s/%s", dir, name);
        if (is_dir(direct)) {
                *ret = rkl_xstrdup(name);
                return 0;
        }
        if (depth <= 1)
                return -ENXIO;
        _cleanup_closedir_ DIR *d = opendir(dir);
        if (!d)
                return -errno;
        struct dirent *de;
        while ((de = readdir(d)))
                if (de->d_type == DT_DIR && de->d_name[0] != '.') {
                        _cleanup_free_ char *sub = rkl_xasprintf("%s/%s", dir, de->d_name);
                        _cleanup_free_ char *rel = NULL;
                        if (find_dir(sub, name, depth - 1, &rel) == 0) {
                                *ret = rkl_xasprintf("%s/%s", de->d_name, rel);
                                return 0;
                        }
                }
        return -ENXIO;
}

int rkl_cgroup_app_paths(pid_t supervisor, const char *app, char **ret_procs_dir,
                         char **ret_memory_dir)
{
        _cleanup_free_ char *own = NULL, *unit = NULL, *base = NULL, *rel = NULL;
        _cleanup_free_ char *name = rkl_xasprintf("%s.service", app);
        const char *root;
        bool v1 = rkl_cgroup_path_of(supervisor, "name=systemd", &own) == 0 &&
                  is_dir(CGROUP_ROOT "/systemd");
        int r;

        if (v1)
                root = CGROUP_ROOT "/systemd";
        else {
                r = rkl_cgroup_path_of(supervisor, "", &own);
                if (r < 0)
                        return r;
                root = CGROUP_ROOT;
        }
        unit = unit_part(own);
        if (!unit)
                return -ENXIO;
        base = rkl_xasprintf("%s%s", root, unit);
        /* <unit>/payload/system.slice/<app>.service is three levels down. */
        r = find_dir(base, name, 3, &rel);
        if (r < 0)
                return r == -ENOENT && kill(supervisor, 0) < 0 ? -ENOENT : -ENXIO;

        char *memory = NULL;
        if (v1) {
                _cleanup_free_ char *mem = NULL, *mem_unit = NULL;
                if (rkl_cgroup_path_of(supervisor, "memory", &mem) == 0 &&
                    (mem_unit = unit_part(mem)))
                        memory = rkl_xasprintf(CGROUP_ROOT "/memory%s/%s", mem_unit, rel);
        } else
                memory = rkl_xasprintf("%s/%s", base, rel);
        *ret_procs_dir = rkl_xasprintf("%s/%s", base, rel);
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

/* Writes one PID into a cgroup.procs file: -ESRCH when the process is gone. */
static int write_pid(const char *procs, const char *pid)
{
        _cleanup_close_ int fd = open(procs, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        return write(fd, pid, strlen(pid)) < 0 ? -errno : 0;
}

/* Whether pid is a line of a cgroup.procs text. */
static bool pid_listed(const char *text, unsigned pid)
{
        char key[16];
        int n = snprintf(key, sizeof(key), "%u\n", pid);
        for (const char *p = text; (p = strstr(p, key)); p += n)
                if (p == text || p[-1] == '\n')
                        return true;
        return false;
}

int rkl_cgroup_memory_adopt(const char *procs_dir, const char *memory_dir)
{
        if (!memory_dir || streq(procs_dir, memory_dir))
                return 0;
        int r = rkl_mkdir_p(memory_dir, 0755);
        if (r < 0)
                return r;
        _cleanup_free_ char *from = rkl_xasprintf("%s/cgroup.procs", procs_dir);
        _cleanup_free_ char *to = rkl_xasprintf("%s/cgroup.procs", memory_dir);
        int moved = 0;
        /* Each pass moves what it saw; a child forked meanwhile shows up in the next. */
        for (int pass = 0; pass < 16; pass++) {
                _cleanup_free_ char *text = NULL, *have = NULL;
                r = rkl_read_file_at(AT_FDCWD, from, 4 << 20, &text, NULL);
                if (r < 0)
                        return r;
                r = rkl_read_file_at(AT_FDCWD, to, 4 << 20, &have, NULL);
                if (r < 0)
                        return r;
                int n = 0;
                for (char *line = text, *next; line && *line; line = next) {
                        next = strchr(line, '\n');
                        if (next)
                                *next++ = 0;
                        unsigned pid;
                        if (rkl_safe_atou(line, &pid) < 0 || pid_listed(have, pid))
                                continue;
                        r = write_pid(to, line);
                        if (r == -ESRCH)
                                continue; /* it exited meanwhile */
                        if (r < 0)
                                return r;
                        n++;
                }
                if (n == 0)
                        return moved;
                moved += n;
        }
        return moved;
}

int rkl_cgroup_memory_release(const char *procs_dir, const char *memory_dir)
{
        if (!memory_dir || streq(procs_dir, memory_dir))
                return 0;
        return rmdir(memory_dir) < 0 && errno != ENOENT ? -errno : 0;
}

void rkl_cgroup_unit_remove(const char *unit_path)
{
        _cleanup_closedir_ DIR *d = opendir(CGROUP_ROOT);
        struct dirent *de;
        while (d && (de = readdir(d)))
                if (de->d_name[0] != '.') {
                        _cleanup_free_ char *p =
                            rkl_xasprintf(CGROUP_ROOT "/%s/%s", de->d_name, unit_path);
                        (void)rkl_cgroup_remove(
                            p); /* busy (processes left) or gone: nothing to do here */
                }
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
