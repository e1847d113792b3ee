/* The JSON codec of the config, labels and annotations columns (db-internal.h). JSON because
 * operators can json_extract() it from the sqlite3 shell and because a column per field of two
 * specs would churn the schema with every CRI field we add. The key names are part of the on-disk
 * format: renaming one needs a migration. */
#include "store/db-internal.h"

#include "base/json.h"
#include <inttypes.h>
#include <limits.h>

#include "base/alloc.h"
#include "base/strv.h"
#include "base/banned.h"

/* Writers: json-c returns NULL or -1 only on OOM, which we treat as rkl_xmalloc does. */

static json_object *checked(json_object *o)
{
        if (!o)
                rkl_oom();
        return o;
}

static void put(json_object *obj, const char *key, json_object *val)
{
        if (json_object_object_add(obj, key, checked(val)) < 0)
                rkl_oom();
}

static void append(json_object *arr, json_object *val)
{
        if (json_object_array_add(arr, checked(val)) < 0)
                rkl_oom();
}

static void put_str(json_object *obj, const char *key, const char *s)
{
        if (s)
                put(obj, key, json_object_new_string(s));
}

static void put_strv(json_object *obj, const char *key, char *const *l)
{
        if (!l)
                return;
        json_object *a = checked(json_object_new_array());
        RKL_STRV_FOREACH (i, l)
                append(a, json_object_new_string(*i));
        put(obj, key, a);
}

static void put_bool(json_object *obj, const char *key, bool b)
{
        put(obj, key, json_object_new_boolean(b));
}

static void put_int(json_object *obj, const char *key, int64_t i)
{
        put(obj, key, json_object_new_int64(i));
}

/* Ordered pairs as [[k, v], ...]: keeps order and duplicates, which an object would not. */
static void put_pairs(json_object *obj, const char *key, const rkl_kvs *l)
{
        json_object *a = checked(json_object_new_array());
        for (size_t i = 0; i < l->n; i++) {
                json_object *p = checked(json_object_new_array());
                append(p, json_object_new_string(l->items[i].key));
                append(p, json_object_new_string(l->items[i].value));
                append(a, p);
        }
        put(obj, key, a);
}

/* Unique keys as an object (json-c keeps insertion order), for json_extract('$."key"'). */
static json_object *map_new(const rkl_kvs *l)
{
        json_object *m = checked(json_object_new_object());
        for (size_t i = 0; i < l->n; i++)
                put(m, l->items[i].key, json_object_new_string(l->items[i].value));
        return m;
}

static void put_map(json_object *obj, const char *key, const rkl_kvs *l)
{
        put(obj, key, map_new(l));
}

/* The limits both specs carry, under the same keys. */
static void put_limits(json_object *obj, int64_t cpu_period, int64_t cpu_quota, int64_t cpu_shares,
                       int64_t memory_limit)
{
        put_int(obj, "cpu_period", cpu_period);
        put_int(obj, "cpu_quota", cpu_quota);
        put_int(obj, "cpu_shares", cpu_shares);
        put_int(obj, "memory_limit", memory_limit);
}

static const char *const protocols[] = {"TCP", "UDP", "SCTP"};
static const char *const propagations[] = {"private", "host_to_container", "bidirectional"};
static const char *const seccomps[] = {"runtime/default", "unconfined", "localhost"};

static const char *enum_name(const char *const *table, size_t n, int v)
{
        /* The store validated the spec before encoding it. */
        assert(v >= 0 && (size_t)v < n);
        return table[v];
}

static char *to_string(json_object *o)
{
        const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
                                                              JSON_C_TO_STRING_NOSLASHESCAPE);
        if (!s)
                rkl_oom();
        return rkl_xstrdup(s);
}

char *rkl_db__kvs_to_json(const rkl_kvs *l)
{
        _cleanup_(json_object_putp) json_object *m = map_new(l);
        return to_string(m);
}

char *rkl_db__pod_config_to_json(const rkl_pod_spec *spec)
{
        _cleanup_(json_object_putp) json_object *o = checked(json_object_new_object());

        put_str(o, "hostname", spec->hostname);
        put_str(o, "log_directory", spec->log_directory);
        put_strv(o, "dns_servers", spec->dns_servers);
        put_strv(o, "dns_searches", spec->dns_searches);
        put_strv(o, "dns_options", spec->dns_options);
        if (spec->ports) {
                json_object *a = checked(json_object_new_array());
                for (size_t i = 0; i < spec->n_ports; i++) {
                        const rkl_port_mapping *p = &spec->ports[i];
                        json_object *m = checked(json_object_new_object());
                        put_str(m, "protocol",
                                enum_name(protocols, ELEMENTSOF(protocols), p->protocol));
                        put_int(m, "container_port", p->container_port);
                        put_int(m, "host_port", p->host_port);
                        put_str(m, "host_ip", p->host_ip);
                        append(a, m);
                }
                put(o, "port_mappings", a);
        }
        put_str(o, "cgroup_parent", spec->cgroup_parent);
        put_map(o, "sysctls", &spec->sysctls);
        put_bool(o, "host_network", spec->host_network);
        put_bool(o, "privileged", spec->privileged);
        put_str(o, "runtime_handler", spec->runtime_handler);
        put_limits(o, spec->cpu_period, spec->cpu_quota, spec->cpu_shares, spec->memory_limit);
        return to_string(o);
}

char *rkl_db__container_config_to_json(const rkl_container_spec *spec)
{
        _cleanup_(json_object_putp) json_object *o = checked(json_object_new_object());

        put_strv(o, "command", spec->command);
        put_strv(o, "args", spec->args);
        put_str(o, "user_specified_image", spec->user_image);
        put_str(o, "working_dir", spec->working_dir);
        put_pairs(o, "envs", &spec->envs);
        if (spec->mounts) {
                json_object *a = checked(json_object_new_array());
                for (size_t i = 0; i < spec->n_mounts; i++) {
                        const rkl_mount *m = &spec->mounts[i];
                        json_object *j = checked(json_object_new_object());
                        put_str(j, "container_path", m->container_path);
                        put_str(j, "host_path", m->host_path);
                        put_bool(j, "readonly", m->readonly);
                        put_bool(j, "selinux_relabel", m->selinux_relabel);
                        put_str(j, "propagation",
                                enum_name(propagations, ELEMENTSOF(propagations), m->propagation));
                        append(a, j);
                }
                put(o, "mounts", a);
        }
        put_str(o, "log_path", spec->log_path);
        put_bool(o, "stdin", spec->stdin_open);
        put_bool(o, "stdin_once", spec->stdin_once);
        put_bool(o, "tty", spec->tty);
        put_limits(o, spec->cpu_period, spec->cpu_quota, spec->cpu_shares, spec->memory_limit);
        put_int(o, "oom_score_adj", spec->oom_score_adj);
        put_str(o, "cpuset_cpus", spec->cpuset_cpus);
        /* Present only when set: absence is how "unset" round-trips. */
        if (spec->has_run_as_user)
                put_int(o, "run_as_user", spec->run_as_user);
        if (spec->has_run_as_group)
                put_int(o, "run_as_group", spec->run_as_group);
        put_str(o, "run_as_username", spec->run_as_username);
        if (spec->supplemental_groups) {
                json_object *a = checked(json_object_new_array());
                for (size_t i = 0; i < spec->n_supplemental_groups; i++)
                        append(a, json_object_new_int64(spec->supplemental_groups[i]));
                put(o, "supplemental_groups", a);
        }
        put_bool(o, "readonly_rootfs", spec->readonly_rootfs);
        put_bool(o, "privileged", spec->privileged);
        put_bool(o, "no_new_privs", spec->no_new_privs);
        put_bool(o, "supplemental_groups_strict", spec->supplemental_groups_strict);
        put_strv(o, "caps_add", spec->caps_add);
        put_strv(o, "caps_drop", spec->caps_drop);
        put_strv(o, "masked_paths", spec->masked_paths);
        put_strv(o, "readonly_paths", spec->readonly_paths);
        put_str(o, "seccomp", enum_name(seccomps, ELEMENTSOF(seccomps), spec->seccomp));
        put_str(o, "seccomp_localhost_ref", spec->seccomp_localhost_ref);
        put_str(o, "seccomp_unit", spec->seccomp_unit);
        return to_string(o);
}

/* Readers: the column is ours, so anything unexpected means a damaged or foreign file. */

static int bad(rkl_error *reterr, const char *key, const char *what)
{
        return rkl_error_set(reterr, -EUCLEAN, "config: '%s': %s", key, what);
}

/* A JSON string that is a C string: "\u0000" inside would silently truncate it. */
static bool is_c_string(json_object *v)
{
        return json_object_is_type(v, json_type_string) &&
               strlen(json_object_get_string(v)) == (size_t)json_object_get_string_len(v);
}

static int get_str(json_object *obj, const char *key, char **ret, rkl_error *reterr)
{
        json_object *v;
        if (!json_object_object_get_ex(obj, key, &v) || !v)
                return 0;
        if (!is_c_string(v))
                return bad(reterr, key, "not a string");
        *ret = rkl_xstrdup(json_object_get_string(v));
        return 0;
}

/* The array under key and its length; *ret stays NULL when there is none. */
static int get_array(json_object *obj, const char *key, json_object **ret, size_t *ret_n,
                     rkl_error *reterr)
{
        json_object *v;
        if (!json_object_object_get_ex(obj, key, &v) || !v)
                return 0;
        if (!json_object_is_type(v, json_type_array))
                return bad(reterr, key, "not an array");
        *ret = v;
        *ret_n = json_object_array_length(v);
        return 0;
}

static int get_strv(json_object *obj, const char *key, char ***ret, rkl_error *reterr)
{
        json_object *v = NULL;
        size_t n = 0;
        int r = get_array(obj, key, &v, &n, reterr);
        if (r < 0 || !v)
                return r;
        char **l = rkl_xnew0(char *, n + 1);
        *ret = l; /* the caller frees it on failure with the rest of the spec */
        for (size_t i = 0; i < n; i++) {
                json_object *e = json_object_array_get_idx(v, i);
                if (!is_c_string(e))
                        return bad(reterr, key, "element not a string");
                l[i] = rkl_xstrdup(json_object_get_string(e));
        }
        return 0;
}

static int get_bool(json_object *obj, const char *key, bool *ret, rkl_error *reterr)
{
        json_object *v;
        if (!json_object_object_get_ex(obj, key, &v) || !v)
                return 0;
        if (!json_object_is_type(v, json_type_boolean))
                return bad(reterr, key, "not a boolean");
        *ret = json_object_get_boolean(v);
        return 0;
}

static int get_int(json_object *obj, const char *key, int64_t min, int64_t max, int64_t *ret,
                   bool *ret_present, rkl_error *reterr)
{
        json_object *v;
        if (!json_object_object_get_ex(obj, key, &v) || !v)
                return 0;
        if (!json_object_is_type(v, json_type_int))
                return bad(reterr, key, "not an integer");
        errno = 0;
        int64_t i = json_object_get_int64(v);
        if (errno != 0 || i < min || i > max)
                return bad(reterr, key, "out of range");
        *ret = i;
        if (ret_present)
                *ret_present = true;
        return 0;
}

static int get_i64(json_object *obj, const char *key, int64_t *ret, rkl_error *reterr)
{
        return get_int(obj, key, INT64_MIN, INT64_MAX, ret, NULL, reterr);
}

static int get_limits(json_object *obj, int64_t *cpu_period, int64_t *cpu_quota,
                      int64_t *cpu_shares, int64_t *memory_limit, rkl_error *reterr)
{
        int r;
        if ((r = get_i64(obj, "cpu_period", cpu_period, reterr)) < 0 ||
            (r = get_i64(obj, "cpu_quota", cpu_quota, reterr)) < 0 ||
            (r = get_i64(obj, "cpu_shares", cpu_shares, reterr)) < 0)
                return r;
        return get_i64(obj, "memory_limit", memory_limit, reterr);
}

static int get_enum(json_object *obj, const char *key, const char *const *table, size_t n, int *ret,
                    rkl_error *reterr)
{
        _cleanup_free_ char *s = NULL;
        int r = get_str(obj, key, &s, reterr);
        if (r < 0)
                return r;
        if (!s)
                return 0;
        for (size_t i = 0; i < n; i++)
                if (streq(table[i], s)) {
                        *ret = (int)i;
                        return 0;
                }
        return bad(reterr, key, "unknown value");
}

static int get_pair_list(json_object *obj, const char *key, rkl_kvs *ret, rkl_error *reterr)
{
        json_object *v = NULL;
        size_t n = 0;
        int r = get_array(obj, key, &v, &n, reterr);
        if (r < 0 || !v)
                return r;
        for (size_t i = 0; i < n; i++) {
                json_object *p = json_object_array_get_idx(v, i);
                if (!json_object_is_type(p, json_type_array) || json_object_array_length(p) != 2)
                        return bad(reterr, key, "element not a pair");
                json_object *k = json_object_array_get_idx(p, 0),
                            *val = json_object_array_get_idx(p, 1);
                if (!is_c_string(k) || !is_c_string(val))
                        return bad(reterr, key, "pair not of strings");
                rkl_kvs_add(ret, json_object_get_string(k), json_object_get_string(val));
        }
        return 0;
}

static int map_read(json_object *m, const char *column, const char *key, rkl_kvs *ret,
                    rkl_error *reterr)
{
        if (!json_object_is_type(m, json_type_object))
                return rkl_error_set(reterr, -EUCLEAN, "%s: '%s': not an object", column, key);
        json_object_object_foreach(m, k, val)
        {
                if (!is_c_string(val))
                        return rkl_error_set(reterr, -EUCLEAN, "%s: '%s': value not a string",
                                             column, key);
                rkl_kvs_add(ret, k, json_object_get_string(val));
        }
        return 0;
}

static int get_map(json_object *obj, const char *key, rkl_kvs *ret, rkl_error *reterr)
{
        json_object *v;
        if (!json_object_object_get_ex(obj, key, &v) || !v)
                return 0;
        return map_read(v, "config", key, ret, reterr);
}

static int parse(const char *json, const char *column, json_object **ret, rkl_error *reterr)
{
        enum json_tokener_error jerr;
        json_object *o = json_tokener_parse_verbose(json ? json : "", &jerr);
        if (!o)
                return rkl_error_set(reterr, -EUCLEAN, "%s: %s", column,
                                     json_tokener_error_desc(jerr));
        if (!json_object_is_type(o, json_type_object)) {
                json_object_put(o);
                return rkl_error_set(reterr, -EUCLEAN, "%s: not an object", column);
        }
        *ret = o;
        return 0;
}

int rkl_db__kvs_from_json(const char *json, const char *column, rkl_kvs *ret, rkl_error *reterr)
{
        _cleanup_(json_object_putp) json_object *o = NULL;
        int r = parse(json, column, &o, reterr);
        if (r < 0)
                return r;
        return map_read(o, column, "", ret, reterr);
}

int rkl_db__pod_config_from_json(const char *json, rkl_pod_spec *spec, rkl_error *reterr)
{
        _cleanup_(json_object_putp) json_object *o = NULL;
        int r = parse(json, "config", &o, reterr);
        if (r < 0)
                return r;

        if ((r = get_str(o, "hostname", &spec->hostname, reterr)) < 0 ||
            (r = get_str(o, "log_directory", &spec->log_directory, reterr)) < 0 ||
            (r = get_strv(o, "dns_servers", &spec->dns_servers, reterr)) < 0 ||
            (r = get_strv(o, "dns_searches", &spec->dns_searches, reterr)) < 0 ||
            (r = get_strv(o, "dns_options", &spec->dns_options, reterr)) < 0 ||
            (r = get_str(o, "cgroup_parent", &spec->cgroup_parent, reterr)) < 0 ||
            (r = get_map(o, "sysctls", &spec->sysctls, reterr)) < 0 ||
            (r = get_bool(o, "host_network", &spec->host_network, reterr)) < 0 ||
            (r = get_bool(o, "privileged", &spec->privileged, reterr)) < 0 ||
            (r = get_str(o, "runtime_handler", &spec->runtime_handler, reterr)) < 0 ||
            (r = get_limits(o, &spec->cpu_period, &spec->cpu_quota, &spec->cpu_shares,
                            &spec->memory_limit, reterr)) < 0)
                return r;

        json_object *ports = NULL;
        size_t n = 0;
        if ((r = get_array(o, "port_mappings", &ports, &n, reterr)) < 0)
                return r;
        if (ports) {
                spec->ports = rkl_xnew0(rkl_port_mapping, n ? n : 1);
                for (size_t i = 0; i < n; i++) {
                        json_object *m = json_object_array_get_idx(ports, i);
                        rkl_port_mapping *p = &spec->ports[i];
                        int proto = 0;
                        int64_t cport = 0, hport = 0;
                        if (!json_object_is_type(m, json_type_object))
                                return bad(reterr, "port_mappings", "element not an object");
                        spec->n_ports = i + 1; /* so that host_ip is freed on failure */
                        if ((r = get_enum(m, "protocol", protocols, ELEMENTSOF(protocols), &proto,
                                          reterr)) < 0 ||
                            (r = get_int(m, "container_port", INT32_MIN, INT32_MAX, &cport, NULL,
                                         reterr)) < 0 ||
                            (r = get_int(m, "host_port", INT32_MIN, INT32_MAX, &hport, NULL,
                                         reterr)) < 0 ||
                            (r = get_str(m, "host_ip", &p->host_ip, reterr)) < 0)
                                return r;
                        p->protocol = proto;
                        p->container_port = (int32_t)cport;
                        p->host_port = (int32_t)hport;
                }
        }
        return 0;
}

int rkl_db__container_config_from_json(const char *json, rkl_container_spec *spec,
                                       rkl_error *reterr)
{
        _cleanup_(json_object_putp) json_object *o = NULL;
        int seccomp = 0;
        int r = parse(json, "config", &o, reterr);
        if (r < 0)
                return r;

        if ((r = get_strv(o, "command", &spec->command, reterr)) < 0 ||
            (r = get_strv(o, "args", &spec->args, reterr)) < 0 ||
            (r = get_str(o, "user_specified_image", &spec->user_image, reterr)) < 0 ||
            (r = get_str(o, "working_dir", &spec->working_dir, reterr)) < 0 ||
            (r = get_pair_list(o, "envs", &spec->envs, reterr)) < 0 ||
            (r = get_str(o, "log_path", &spec->log_path, reterr)) < 0 ||
            (r = get_bool(o, "stdin", &spec->stdin_open, reterr)) < 0 ||
            (r = get_bool(o, "stdin_once", &spec->stdin_once, reterr)) < 0 ||
            (r = get_bool(o, "tty", &spec->tty, reterr)) < 0 ||
            (r = get_limits(o, &spec->cpu_period, &spec->cpu_quota, &spec->cpu_shares,
                            &spec->memory_limit, reterr)) < 0 ||
            (r = get_i64(o, "oom_score_adj", &spec->oom_score_adj, reterr)) < 0 ||
            (r = get_str(o, "cpuset_cpus", &spec->cpuset_cpus, reterr)) < 0 ||
            (r = get_int(o, "run_as_user", INT64_MIN, INT64_MAX, &spec->run_as_user,
                         &spec->has_run_as_user, reterr)) < 0 ||
            (r = get_int(o, "run_as_group", INT64_MIN, INT64_MAX, &spec->run_as_group,
                         &spec->has_run_as_group, reterr)) < 0 ||
            (r = get_str(o, "run_as_username", &spec->run_as_username, reterr)) < 0 ||
            (r = get_bool(o, "readonly_rootfs", &spec->readonly_rootfs, reterr)) < 0 ||
            (r = get_bool(o, "privileged", &spec->privileged, reterr)) < 0 ||
            (r = get_bool(o, "no_new_privs", &spec->no_new_privs, reterr)) < 0 ||
            (r = get_bool(o, "supplemental_groups_strict", &spec->supplemental_groups_strict,
                          reterr)) < 0 ||
            (r = get_strv(o, "caps_add", &spec->caps_add, reterr)) < 0 ||
            (r = get_strv(o, "caps_drop", &spec->caps_drop, reterr)) < 0 ||
            (r = get_strv(o, "masked_paths", &spec->masked_paths, reterr)) < 0 ||
            (r = get_strv(o, "readonly_paths", &spec->readonly_paths, reterr)) < 0 ||
            (r = get_enum(o, "seccomp", seccomps, ELEMENTSOF(seccomps), &seccomp, reterr)) < 0 ||
            (r = get_str(o, "seccomp_localhost_ref", &spec->seccomp_localhost_ref, reterr)) < 0 ||
            (r = get_str(o, "seccomp_unit", &spec->seccomp_unit, reterr)) < 0)
                return r;
        spec->seccomp = seccomp;

        json_object *groups = NULL, *mounts = NULL;
        size_t n = 0;
        if ((r = get_array(o, "supplemental_groups", &groups, &n, reterr)) < 0)
                return r;
        if (groups) {
                spec->supplemental_groups = rkl_xnew0(int64_t, n ? n : 1);
                spec->n_supplemental_groups = n;
                for (size_t i = 0; i < n; i++) {
                        json_object *g = json_object_array_get_idx(groups, i);
                        if (!json_object_is_type(g, json_type_int))
                                return bad(reterr, "supplemental_groups", "not an integer");
                        spec->supplemental_groups[i] = json_object_get_int64(g);
                }
        }

        if ((r = get_array(o, "mounts", &mounts, &n, reterr)) < 0)
                return r;
        if (mounts) {
                spec->mounts = rkl_xnew0(rkl_mount, n ? n : 1);
                for (size_t i = 0; i < n; i++) {
                        json_object *j = json_object_array_get_idx(mounts, i);
                        rkl_mount *m = &spec->mounts[i];
                        int prop = 0;
                        if (!json_object_is_type(j, json_type_object))
                                return bad(reterr, "mounts", "element not an object");
                        spec->n_mounts = i + 1; /* so that the paths are freed on failure */
                        if ((r = get_str(j, "container_path", &m->container_path, reterr)) < 0 ||
                            (r = get_str(j, "host_path", &m->host_path, reterr)) < 0 ||
                            (r = get_bool(j, "readonly", &m->readonly, reterr)) < 0 ||
                            (r = get_bool(j, "selinux_relabel", &m->selinux_relabel, reterr)) < 0 ||
                            (r = get_enum(j, "propagation", propagations, ELEMENTSOF(propagations),
                                          &prop, reterr)) < 0)
                                return r;
                        m->propagation = prop;
                }
        }
        return 0;
}

/* The timeline codec: hand-written, since every record loaded at start carries one and
 * json-c's parse is most of that load already (docs/performance.md). */

static const char *step_name(bool pod, size_t i)
{
        return pod ? rkl_pod_step_to_string((rkl_pod_step)i)
                   : rkl_container_step_to_string((rkl_container_step)i);
}

static size_t n_steps(bool pod)
{
        return pod ? _RKL_POD_STEP_MAX : _RKL_CONTAINER_STEP_MAX;
}

char *rkl_db__timeline_to_json(const rkl_timeline *t, bool pod)
{
        char buf[RKL_TIMELINE_STEPS * 48 + 4];
        size_t n = 0;
        for (size_t i = 0; i < n_steps(pod); i++) {
                if (t->usec[i] <= 0)
                        continue;
                int k = snprintf(buf + n, sizeof(buf) - n, "%s\"%s\":%" PRId64, n ? "," : "{",
                                 step_name(pod, i), t->usec[i]);
                assert(k > 0 && (size_t)k < sizeof(buf) - n); /* names are short */
                n += (size_t)k;
        }
        if (n == 0)
                return NULL;
        buf[n++] = '}';
        buf[n] = 0;
        return rkl_xstrdup(buf);
}

static const char *skip_space(const char *p)
{
        while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
                p++;
        return p;
}

/* Past a JSON string whose opening quote p is at; NULL when it does not end. */
static const char *skip_string(const char *p)
{
        for (p++; *p && *p != '"'; p++)
                if (*p == '\\' && !*++p)
                        return NULL;
        return *p == '"' ? p + 1 : NULL;
}

/* Past the value p is at (an unknown step's, from a newer rktlet: any JSON); NULL when it
 * does not end. */
static const char *skip_value(const char *p)
{
        unsigned depth = 0;
        while (*p) {
                if (*p == '"') {
                        if (!(p = skip_string(p)))
                                return NULL;
                        continue;
                }
                if (*p == '[' || *p == '{')
                        depth++;
                else if ((*p == ']' || *p == '}') && depth > 0)
                        depth--;
                else if ((*p == ',' || *p == '}') && depth == 0)
                        return p;
                p++;
        }
        return NULL;
}

void rkl_db__timeline_from_json(const char *json, bool pod, rkl_timeline *ret)
{
        rkl_timeline t = {0};
        const char *p = json ? skip_space(json) : "";

        *ret = (rkl_timeline){0};
        if (*p++ != '{')
                return;
        p = skip_space(p);
        if (*p == '}')
                return;
        for (;;) {
                if (*p != '"')
                        return;
                const char *key = p + 1, *end_key = skip_string(p);
                if (!end_key)
                        return;
                size_t len = (size_t)(end_key - 1 - key);
                p = skip_space(end_key);
                if (*p++ != ':')
                        return;
                p = skip_space(p);
                int step = -1;
                for (size_t i = 0; i < n_steps(pod); i++) {
                        const char *name = step_name(pod, i);
                        if (strlen(name) == len && memcmp(name, key, len) == 0)
                                step = (int)i;
                }
                if (step < 0) {
                        if (!(p = skip_value(p)))
                                return;
                } else {
                        /* A step's value is an integer: anything else is not ours. */
                        if (!((*p >= '0' && *p <= '9') || *p == '-'))
                                return;
                        char *end;
                        errno = 0;
                        long long v = strtoll(p, &end, 10);
                        if (errno != 0 || end == p)
                                return;
                        t.usec[step] = v > 0 ? v : 0;
                        p = skip_space(end);
                }
                if (*p == '}')
                        break;
                if (*p++ != ',')
                        return;
                p = skip_space(p);
        }
        *ret = t;
}

char *rkl_db_timeline_json(const rkl_timeline *t, bool pod)
{
        return rkl_db__timeline_to_json(t, pod);
}
