/* The network configuration: which file of the directory is it, and is it usable. */
#include "cni-internal.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/fileio.h"
#include "base/strv.h"
#include "base/banned.h"

#define CONFIG_MAX  (1 << 20)
#define PLUGINS_MAX 32

static const char *const versions[] = {"0.3.0", "0.3.1", "0.4.0", "1.0.0"};

rkl_cni_config *rkl_cni_config_free(rkl_cni_config *c)
{
        if (!c)
                return NULL;
        json_object_put(c->list);
        free(c->source);
        free(c->json);
        free(c->types);
        free(c);
        return NULL;
}

const char *rkl_cni_config_name(const rkl_cni_config *c)
{
        return c->name;
}

const char *rkl_cni_config_version(const rkl_cni_config *c)
{
        return c->version;
}

const char *rkl_cni_config_source(const rkl_cni_config *c)
{
        return c->source;
}

const char *rkl_cni_config_json(const rkl_cni_config *c)
{
        return c->json;
}

const char *rkl_cni_config_types(const rkl_cni_config *c)
{
        return c->types;
}

static bool is_alnum(char c)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* The specification's rule for a network's name: an alphanumeric, then alphanumerics, '_',
 * '.' and '-'. */
static bool name_is_valid(const char *s)
{
        if (!is_alnum(s[0]) || strlen(s) > 253)
                return false;
        for (const char *p = s; *p; p++)
                if (!is_alnum(*p) && *p != '_' && *p != '.' && *p != '-')
                        return false;
        return true;
}

/* A plugin's type is a file name in the plugin directories: nothing that leaves them. */
static bool type_is_valid(const char *s)
{
        if (!s[0] || s[0] == '.' || strlen(s) > 255)
                return false;
        for (const char *p = s; *p; p++)
                if (!is_alnum(*p) && *p != '_' && *p != '.' && *p != '-')
                        return false;
        return true;
}

bool rkl_cni__version_at_least(const char *v, const char *min)
{
        size_t i = 0, j = 0;
        for (; i < ELEMENTSOF(versions) && !streq(versions[i], v); i++)
                ;
        for (; j < ELEMENTSOF(versions) && !streq(versions[j], min); j++)
                ;
        return i < ELEMENTSOF(versions) && i >= j;
}

static int get_string(json_object *o, const char *key, const char **ret, rkl_error *reterr)
{
        int r = rkl_json_get_string(o, key, 4096, ret, NULL);
        if (r < 0)
                return rkl_error_set(reterr, -EINVAL, "\"%s\" is not a string", key);
        if (!*ret || !**ret)
                return rkl_error_set(reterr, -EINVAL, "no \"%s\"", key);
        return 0;
}

static int check_plugin(json_object *p, size_t i, char **types, rkl_error *reterr)
{
        const char *type;
        if (!json_object_is_type(p, json_type_object))
                return rkl_error_set(reterr, -EINVAL, "plugins[%zu] is not an object", i);
        if (get_string(p, "type", &type, reterr) < 0)
                return rkl_error_prefix(reterr, "plugins[%zu]", i);
        if (!type_is_valid(type))
                return rkl_error_set(reterr, -EINVAL,
                                     "plugins[%zu]: type '%s' is not a plugin name", i, type);
        json_object *caps;
        if (json_object_object_get_ex(p, "capabilities", &caps) &&
            !json_object_is_type(caps, json_type_object))
                return rkl_error_set(reterr, -EINVAL, "plugins[%zu]: capabilities is not an object",
                                     i);
        char *t = *types ? rkl_xasprintf("%s,%s", *types, type) : rkl_xstrdup(type);
        free(*types);
        *types = t;
        return 0;
}

int rkl_cni_config_parse(const char *text, size_t len, const char *source, rkl_cni_config **ret,
                         rkl_error *reterr)
{
        _cleanup_(json_object_putp) json_object *o = NULL;
        _cleanup_free_ char *types = NULL;
        const char *name, *version;
        rkl_error e = RKL_ERROR_INIT;
        int r;

        if ((r = rkl_json_parse(text, len, CONFIG_MAX, &o, &e)) < 0)
                return rkl_error_set(reterr, -EINVAL, "'%s': %s", source, e.msg);
        if (!json_object_is_type(o, json_type_object))
                return rkl_error_set(reterr, -EINVAL, "'%s': not a JSON object", source);
        if (get_string(o, "cniVersion", &version, &e) < 0 || get_string(o, "name", &name, &e) < 0)
                return rkl_error_set(reterr, -EINVAL, "'%s': %s", source, e.msg);
        size_t v = 0;
        for (; v < ELEMENTSOF(versions) && !streq(versions[v], version); v++)
                ;
        if (v == ELEMENTSOF(versions))
                return rkl_error_set(reterr, -EINVAL,
                                     "'%s': cniVersion '%s' is not supported (0.3.0, 0.3.1, "
                                     "0.4.0 and 1.0.0 are)",
                                     source, version);
        if (!name_is_valid(name))
                return rkl_error_set(reterr, -EINVAL,
                                     "'%s': name '%s' is not a network name (an alphanumeric, "
                                     "then alphanumerics, '_', '.' or '-')",
                                     source, name);

        json_object *plugins, *list;
        if (json_object_object_get_ex(o, "plugins", &plugins)) {
                if (!json_object_is_type(plugins, json_type_array))
                        return rkl_error_set(reterr, -EINVAL, "'%s': plugins is not an array",
                                             source);
                size_t n = json_object_array_length(plugins);
                if (n == 0 || n > PLUGINS_MAX)
                        return rkl_error_set(reterr, -EINVAL,
                                             "'%s': %zu plugins (1 to %d are allowed)", source, n,
                                             PLUGINS_MAX);
                for (size_t i = 0; i < n; i++)
                        if (check_plugin(json_object_array_get_idx(plugins, i), i, &types, &e) < 0)
                                return rkl_error_set(reterr, -EINVAL, "'%s': %s", source, e.msg);
                list = json_object_get(o);
        } else {
                /* One plugin's configuration: the list of it alone, as libcni makes it. */
                if (check_plugin(o, 0, &types, &e) < 0)
                        return rkl_error_set(reterr, -EINVAL, "'%s': %s", source,
                                             e.msg + strlen("plugins[0]: "));
                list = json_object_new_object();
                plugins = json_object_new_array();
                json_object_object_add(list, "cniVersion", json_object_new_string(version));
                json_object_object_add(list, "name", json_object_new_string(name));
                json_object_array_add(plugins, json_object_get(o));
                json_object_object_add(list, "plugins", plugins);
        }
        json_object *dc;
        bool disable_check = json_object_object_get_ex(o, "disableCheck", &dc) &&
                             json_object_is_type(dc, json_type_boolean) &&
                             json_object_get_boolean(dc);

        rkl_cni_config *c = rkl_xnew0(rkl_cni_config, 1);
        c->list = list;
        c->source = rkl_xstrdup(source);
        c->name = json_object_get_string(json_object_object_get(list, "name"));
        c->version = versions[v];
        c->types = TAKE_PTR(types);
        c->disable_check = disable_check;
        c->json = rkl_xstrdup(json_object_to_json_string_ext(
            list, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
        *ret = c;
        return 0;
}

static bool is_config_name(const char *n)
{
        static const char *const exts[] = {".conf", ".conflist", ".json"};
        size_t l = strlen(n);
        if (n[0] == '.')
                return false;
        for (size_t i = 0; i < ELEMENTSOF(exts); i++) {
                size_t e = strlen(exts[i]);
                if (l > e && streq(n + l - e, exts[i]))
                        return true;
        }
        return false;
}

static int cmp_str(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

int rkl_cni_config_load_dir(const char *dir, rkl_cni_config **ret, rkl_error *reterr)
{
        _cleanup_closedir_ DIR *d = opendir(dir);
        _cleanup_strv_free_ char **names = NULL;

        if (!d)
                return rkl_error_set(reterr, errno == ENOENT ? -ENOENT : -errno,
                                     "no network configuration: cannot open '%s': %s", dir,
                                     strerror(errno));
        for (struct dirent *e; (e = readdir(d));) {
                if (e->d_type != DT_REG && e->d_type != DT_LNK && e->d_type != DT_UNKNOWN)
                        continue;
                if (is_config_name(e->d_name))
                        rkl_strv_push(&names, e->d_name);
        }
        size_t n = rkl_strv_length(names);
        if (n == 0)
                return rkl_error_set(reterr, -ENOENT,
                                     "no network configuration in '%s' (a *.conflist, *.conf or "
                                     "*.json file)",
                                     dir);
        qsort(names, n, sizeof(char *), cmp_str);

        _cleanup_free_ char *path = rkl_xasprintf("%s/%s", dir, names[0]);
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        int r = rkl_read_file_at(AT_FDCWD, path, CONFIG_MAX + 1, &text, &len);
        if (r < 0)
                return rkl_error_set(reterr, -EINVAL, "'%s': cannot read: %s", path, strerror(-r));
        if (rkl_cni_config_parse(text, len, path, ret, reterr) < 0)
                return -EINVAL;
        return 0;
}
