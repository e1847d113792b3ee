/* The identity a container runs with, as Docker and containerd resolve it: the user's primary
 * group and the groups that list it as a member, from the image's own /etc/passwd and
 * /etc/group. rkt resolves only a user name to a uid and leaves the group at the image
 * manifest's (0 for docker2aci images) and adds no group of the image's. */
#include "image-user.h"

#include <fcntl.h>
#include <inttypes.h>
#include <linux/openat2.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "rkt-internal.h"
#include "base/alloc.h"
#include "base/fileio.h"
#include "base/macro.h"
#include "base/banned.h"

#define MAX_ETC_FILE (4 << 20)

/* rkt's tree store ID of an image without dependencies, as store/treestore GetID makes it:
 * "deps-" + the first 256 bits of sha512 over the image key (docker2aci's images are
 * squashed: no dependencies). */
static char *tree_id(const char *image_id)
{
        unsigned char md[64];
        unsigned n = 0;
        if (!EVP_Digest(image_id, strlen(image_id), md, &n, EVP_sha512(), NULL) || n != 64)
                return NULL;
        char hex[65];
        for (size_t i = 0; i < 32; i++)
                (void)snprintf(hex + 2 * i, 3, "%02x", md[i]);
        return rkl_xasprintf("deps-sha512-%s", hex);
}

/* A file of the image, its symlinks resolved inside the image. */
static int read_in_root(int rootfd, const char *path, char **ret)
{
        struct open_how how = {
            .flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK,
            .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
        };
        long fd = syscall(SYS_openat2, rootfd, path, &how, sizeof(how));
        if (fd < 0)
                return -errno;
        _cleanup_close_ int f = (int)fd;
        struct stat st;
        if (fstat(f, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -ENOENT;
        char p[64];
        (void)snprintf(p, sizeof(p), "/proc/self/fd/%d", f);
        return rkl_read_file_at(AT_FDCWD, p, MAX_ETC_FILE, ret, NULL);
}

/* Field i (0-based) of a ':'-separated line, copied; NULL when the line has fewer. */
static char *field(const char *line, size_t i)
{
        for (; i > 0; i--) {
                line += strcspn(line, ":\n");
                if (*line != ':')
                        return NULL;
                line++;
        }
        return rkl_xstrndup(line, strcspn(line, ":\n"));
}

static bool parse_id(const char *s, int64_t *ret)
{
        char *end;
        if (!s || *s < '0' || *s > '9')
                return false;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (errno || *end || v > UINT32_MAX - 1)
                return false;
        *ret = (int64_t)v;
        return true;
}

/* The passwd entry whose name is name (or, with name NULL, whose uid is uid). */
static bool passwd_find(const char *passwd, const char *name, int64_t uid, char **ret_name,
                        int64_t *ret_uid, int64_t *ret_gid)
{
        for (const char *l = passwd; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
                _cleanup_free_ char *n = field(l, 0), *u = field(l, 2), *g = field(l, 3);
                int64_t lu, lg;
                if (!n || !parse_id(u, &lu) || !parse_id(g, &lg))
                        continue;
                if (name ? !streq(n, name) : lu != uid)
                        continue;
                *ret_name = TAKE_PTR(n);
                *ret_uid = lu;
                *ret_gid = lg;
                return true;
        }
        return false;
}

static bool member_of(const char *members, const char *name)
{
        for (const char *m = members; *m;) {
                size_t k = strcspn(m, ",");
                if (k == strlen(name) && strncmp(m, name, k) == 0)
                        return true;
                m += k;
                if (*m == ',')
                        m++;
        }
        return false;
}

void rkl_rkt_ids_done(rkl_rkt_ids *ids)
{
        free(ids->groups);
        *ids = (rkl_rkt_ids){0};
}

int rkl_rkt_ids_parse(const char *passwd, const char *group, const rkl_container_spec *spec,
                      rkl_rkt_ids *ret, rkl_error *reterr)
{
        _cleanup_(rkl_rkt_ids_done) rkl_rkt_ids ids = {0};
        _cleanup_free_ char *name = NULL;

        if (spec->run_as_username) {
                if (!passwd ||
                    !passwd_find(passwd, spec->run_as_username, 0, &name, &ids.uid, &ids.gid))
                        return rkl_error_set(reterr, -ENOENT,
                                             "linux.security_context.run_as_username: no user "
                                             "'%s' in the image's /etc/passwd",
                                             spec->run_as_username);
        } else {
                ids.uid = spec->run_as_user;
                /* A uid the image does not name runs with gid 0, as with Docker. */
                if (!passwd || !passwd_find(passwd, NULL, ids.uid, &name, &ids.uid, &ids.gid))
                        ids.gid = 0;
        }
        if (spec->has_run_as_group)
                ids.gid = spec->run_as_group;

        const char *image_groups = spec->supplemental_groups_strict ? NULL : group;
        for (const char *l = image_groups; name && l && *l;
             l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
                _cleanup_free_ char *g = field(l, 2), *members = field(l, 3);
                int64_t gid;
                if (!members || !parse_id(g, &gid) || !member_of(members, name))
                        continue;
                if (ids.n_groups >= 256)
                        break;
                ids.groups = rkl_xrealloc(ids.groups, (ids.n_groups + 1) * sizeof(int64_t));
                ids.groups[ids.n_groups++] = gid;
        }
        ids.set = true;
        *ret = ids;
        ids = (rkl_rkt_ids){0};
        return 0;
}

int rkl_rkt_image_ids(rkl_rkt *d, const char *image_id, const rkl_container_spec *spec,
                      rkl_rkt_ids *ret, rkl_error *reterr)
{
        _cleanup_free_ char *passwd = NULL, *group = NULL, *tree = NULL;
        int r;

        /* The image's own user: rkt uses the manifest's user and group as they are. */
        if (!spec->has_run_as_user && !spec->run_as_username)
                return 0;
        if (!image_id || strncmp(image_id, "sha512-", 7) != 0 || !(tree = tree_id(image_id)))
                return rkl_error_set(reterr, -EINVAL, "%s: not an image ID",
                                     image_id ? image_id : "(none)");
        _cleanup_free_ char *root =
            rkl_xasprintf("%s/cas/tree/%s/rootfs", rkl_rkt__data_dir(d), tree);
        _cleanup_close_ int rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        /* `rkt image gc` removed it (app add renders it again), or the simulator has none:
         * rkt's own way then (ret->set false). */
        if (rootfd < 0 && errno == ENOENT)
                return 0;
        if (rootfd < 0)
                return rkl_error_set(reterr, -errno, "image %s: %s: %s", image_id, root,
                                     strerror(errno));
        r = read_in_root(rootfd, "etc/passwd", &passwd);
        if (r < 0 && r != -ENOENT)
                return rkl_error_set(reterr, r, "image %s: /etc/passwd: %s", image_id,
                                     strerror(-r));
        r = read_in_root(rootfd, "etc/group", &group);
        if (r < 0 && r != -ENOENT)
                return rkl_error_set(reterr, r, "image %s: /etc/group: %s", image_id, strerror(-r));

        return rkl_rkt_ids_parse(passwd, group, spec, ret, reterr);
}
