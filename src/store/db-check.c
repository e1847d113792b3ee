/* Validation of what callers hand the store: it refuses what it could not give back intact
 * or what breaks the schema's rules, with -EINVAL and the field's name. api/ validates
 * first with the protobuf names; this is the second line (model.h). Free text from the
 * machine is sanitized rather than refused. */
#include "store/db.h"

#include "base/alloc.h"
#include "base/parse.h"
#include "base/strv.h"
#include "store/db-internal.h"
#include "base/banned.h"

/* Free text from the machine (errors, reasons) is cut to this rather than refused. */
#define MAX_TEXT      RKL_MAX_STRING
#define UNIT_NAME_MAX 255
#define RKT_UUID_LEN  36

static bool utf8_is_valid(const char *s)
{
        const unsigned char *p = (const unsigned char *)s;
        while (*p) {
                unsigned c = *p, n;
                uint32_t cp;
                if (c < 0x80) {
                        p++;
                        continue;
                } else if ((c & 0xe0) == 0xc0) {
                        n = 1;
                        cp = c & 0x1f;
                } else if ((c & 0xf0) == 0xe0) {
                        n = 2;
                        cp = c & 0x0f;
                } else if ((c & 0xf8) == 0xf0) {
                        n = 3;
                        cp = c & 0x07;
                } else
                        return false;
                for (unsigned i = 1; i <= n; i++) {
                        if ((p[i] & 0xc0) != 0x80)
                                return false;
                        cp = (cp << 6) | (p[i] & 0x3f);
                }
                /* No overlong forms, surrogates or code points past U+10FFFF. */
                if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
                    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
                        return false;
                p += n + 1;
        }
        return true;
}

static bool str_ok(const char *v, size_t max, bool required)
{
        if (!v)
                return !required;
        return (!required || *v) && strnlen(v, max + 1) <= max && utf8_is_valid(v);
}

int rkl_db__check_str(const char *field, const char *v, size_t max, bool required,
                      rkl_error *reterr)
{
        if (!v) {
                if (required)
                        return rkl_error_set(reterr, -EINVAL, "%s: missing", field);
                return 0;
        }
        if (required && !*v)
                return rkl_error_set(reterr, -EINVAL, "%s: empty", field);
        size_t n = strnlen(v, max + 1);
        if (n > max)
                return rkl_error_set(reterr, -EINVAL, "%s: longer than %zu bytes", field, max);
        if (!utf8_is_valid(v))
                return rkl_error_set(reterr, -EINVAL, "%s: not valid UTF-8", field);
        return 0;
}

int rkl_db__check_id(const char *field, const char *id, rkl_error *reterr)
{
        if (!rkl_id_is_valid(id))
                return rkl_error_set(reterr, -EINVAL, "%s: not %d lowercase hex digits", field,
                                     RKL_ID_LEN);
        return 0;
}

static int check_strv(const char *field, char *const *l, size_t max_n, size_t max_len,
                      rkl_error *reterr)
{
        size_t n = rkl_strv_length(l);
        if (n > max_n)
                return rkl_error_set(reterr, -EINVAL, "%s: more than %zu entries", field, max_n);
        for (size_t i = 0; i < n; i++) {
                char name[64];
                if (str_ok(l[i], max_len, false))
                        continue; /* names are made for messages only: lists are long */
                /* A name for the message: cut short it still points at the entry. */
                (void)snprintf(name, sizeof(name), "%s[%zu]", field, i);
                return rkl_db__check_str(name, l[i], max_len, false, reterr);
        }
        return 0;
}

static int check_kvs(const char *field, const rkl_kvs *l, size_t max_n, size_t max_key,
                     size_t max_value, bool unique, rkl_error *reterr)
{
        if (l->n > max_n)
                return rkl_error_set(reterr, -EINVAL, "%s: more than %zu entries", field, max_n);
        if (l->n > 0 && !l->items)
                return rkl_error_set(reterr, -EINVAL, "%s: entries missing", field);
        for (size_t i = 0; i < l->n; i++) {
                char name[64]; /* for the message: snprintf() may cut it short */
                if (!str_ok(l->items[i].key, max_key, true)) {
                        (void)snprintf(name, sizeof(name), "%s[%zu].key", field, i);
                        return rkl_db__check_str(name, l->items[i].key, max_key, true, reterr);
                }
                if (!l->items[i].value || !str_ok(l->items[i].value, max_value, false)) {
                        (void)snprintf(name, sizeof(name), "%s['%.20s'].value", field,
                                       l->items[i].key);
                        if (!l->items[i].value)
                                return rkl_error_set(reterr, -EINVAL, "%s: missing", name);
                        return rkl_db__check_str(name, l->items[i].value, max_value, false, reterr);
                }
                for (size_t j = 0; unique && j < i; j++)
                        if (streq(l->items[j].key, l->items[i].key))
                                return rkl_error_set(reterr, -EINVAL, "%s: duplicate key '%s'",
                                                     field, l->items[i].key);
        }
        return 0;
}

static int check_labels(const rkl_kvs *labels, const rkl_kvs *annotations, rkl_error *reterr)
{
        int r = check_kvs("labels", labels, RKL_MAX_KV, RKL_MAX_KEY, RKL_MAX_VALUE, true, reterr);
        if (r < 0)
                return r;
        return check_kvs("annotations", annotations, RKL_MAX_KV, RKL_MAX_KEY, RKL_MAX_VALUE, true,
                         reterr);
}

int rkl_db__check_pod_spec(const rkl_pod_spec *p, rkl_error *reterr)
{
        int r;
        if (!p)
                return rkl_error_set(reterr, -EINVAL, "config: missing");
        if ((r = rkl_db__check_str("metadata.name", p->name, RKL_MAX_NAME, true, reterr)) < 0 ||
            (r = rkl_db__check_str("metadata.namespace", p->namespace, RKL_MAX_NAME, true,
                                   reterr)) < 0 ||
            (r = rkl_db__check_str("metadata.uid", p->uid, RKL_MAX_NAME, true, reterr)) < 0 ||
            (r = rkl_db__check_str("hostname", p->hostname, RKL_MAX_NAME, false, reterr)) < 0 ||
            (r = rkl_db__check_str("log_directory", p->log_directory, RKL_MAX_PATH, false,
                                   reterr)) < 0 ||
            (r = check_strv("dns_config.servers", p->dns_servers, RKL_MAX_DNS, RKL_MAX_NAME,
                            reterr)) < 0 ||
            (r = check_strv("dns_config.searches", p->dns_searches, RKL_MAX_DNS, RKL_MAX_NAME,
                            reterr)) < 0 ||
            (r = check_strv("dns_config.options", p->dns_options, RKL_MAX_DNS, RKL_MAX_NAME,
                            reterr)) < 0 ||
            (r = check_labels(&p->labels, &p->annotations, reterr)) < 0 ||
            (r = rkl_db__check_str("cgroup_parent", p->cgroup_parent, RKL_MAX_PATH, false,
                                   reterr)) < 0 ||
            (r = check_kvs("sysctls", &p->sysctls, RKL_MAX_KV, RKL_MAX_NAME, RKL_MAX_STRING, true,
                           reterr)) < 0 ||
            (r = rkl_db__check_str("runtime_handler", p->runtime_handler, RKL_MAX_NAME, false,
                                   reterr)) < 0)
                return r;
        if (p->n_ports > RKL_MAX_PORTS)
                return rkl_error_set(reterr, -EINVAL, "port_mappings: more than %d entries",
                                     RKL_MAX_PORTS);
        if (p->n_ports > 0 && !p->ports)
                return rkl_error_set(reterr, -EINVAL, "port_mappings: entries missing");
        for (size_t i = 0; i < p->n_ports; i++) {
                const rkl_port_mapping *m = &p->ports[i];
                if ((unsigned)m->protocol >= _RKL_PROTOCOL_MAX)
                        return rkl_error_set(reterr, -EINVAL,
                                             "port_mappings[%zu].protocol: unknown", i);
                if (m->container_port < 0 || m->container_port > RKL_MAX_PORT || m->host_port < 0 ||
                    m->host_port > RKL_MAX_PORT)
                        return rkl_error_set(reterr, -EINVAL,
                                             "port_mappings[%zu]: port out of range", i);
                r = rkl_db__check_str("port_mappings.host_ip", m->host_ip, RKL_MAX_NAME, false,
                                      reterr);
                if (r < 0)
                        return r;
        }
        return 0;
}

int rkl_db__check_container_spec(const rkl_container_spec *c, rkl_error *reterr)
{
        int r;
        if (!c)
                return rkl_error_set(reterr, -EINVAL, "config: missing");
        if ((r = rkl_db__check_str("metadata.name", c->name, RKL_MAX_NAME, true, reterr)) < 0 ||
            (r = rkl_db__check_str("image", c->image, RKL_MAX_STRING, true, reterr)) < 0 ||
            (r = rkl_db__check_str("user_specified_image", c->user_image, RKL_MAX_STRING, false,
                                   reterr)) < 0 ||
            (r = check_strv("command", c->command, RKL_MAX_ARGS, RKL_MAX_ARG, reterr)) < 0 ||
            (r = check_strv("args", c->args, RKL_MAX_ARGS, RKL_MAX_ARG, reterr)) < 0 ||
            (r = rkl_db__check_str("working_dir", c->working_dir, RKL_MAX_PATH, false, reterr)) <
                0 ||
            (r = check_kvs("envs", &c->envs, RKL_MAX_ENVS, RKL_MAX_STRING, RKL_MAX_ARG, false,
                           reterr)) < 0 ||
            (r = check_labels(&c->labels, &c->annotations, reterr)) < 0 ||
            (r = rkl_db__check_str("log_path", c->log_path, RKL_MAX_PATH, false, reterr)) < 0 ||
            (r = rkl_db__check_str("run_as_username", c->run_as_username, RKL_MAX_NAME, false,
                                   reterr)) < 0 ||
            (r = check_strv("capabilities.add", c->caps_add, RKL_MAX_KV, RKL_MAX_NAME, reterr)) <
                0 ||
            (r = check_strv("capabilities.drop", c->caps_drop, RKL_MAX_KV, RKL_MAX_NAME, reterr)) <
                0 ||
            (r = check_strv("masked_paths", c->masked_paths, RKL_MAX_KV, RKL_MAX_PATH, reterr)) <
                0 ||
            (r = check_strv("readonly_paths", c->readonly_paths, RKL_MAX_KV, RKL_MAX_PATH,
                            reterr)) < 0 ||
            (r = rkl_db__check_str("seccomp.localhost_ref", c->seccomp_localhost_ref, RKL_MAX_PATH,
                                   false, reterr)) < 0 ||
            (r = rkl_db__check_str("seccomp_unit", c->seccomp_unit, 2 << 20, false, reterr)) < 0)
                return r;
        if ((unsigned)c->seccomp >= _RKL_SECCOMP_MAX)
                return rkl_error_set(reterr, -EINVAL, "seccomp.profile_type: unknown");
        if (c->n_mounts > RKL_MAX_MOUNTS)
                return rkl_error_set(reterr, -EINVAL, "mounts: more than %d entries",
                                     RKL_MAX_MOUNTS);
        if (c->n_mounts > 0 && !c->mounts)
                return rkl_error_set(reterr, -EINVAL, "mounts: entries missing");
        for (size_t i = 0; i < c->n_mounts; i++) {
                const rkl_mount *m = &c->mounts[i];
                char name[64]; /* "mounts[N].container_path" always fits */
                (void)snprintf(name, sizeof(name), "mounts[%zu].container_path", i);
                if ((r = rkl_db__check_str(name, m->container_path, RKL_MAX_PATH, true, reterr)) <
                    0)
                        return r;
                (void)snprintf(name, sizeof(name), "mounts[%zu].host_path", i);
                if ((r = rkl_db__check_str(name, m->host_path, RKL_MAX_PATH, false, reterr)) < 0)
                        return r;
                if ((unsigned)m->propagation >= _RKL_PROPAGATION_MAX)
                        return rkl_error_set(reterr, -EINVAL, "mounts[%zu].propagation: unknown",
                                             i);
        }
        if (c->n_supplemental_groups > RKL_MAX_KV)
                return rkl_error_set(reterr, -EINVAL, "supplemental_groups: more than %d entries",
                                     RKL_MAX_KV);
        if (c->n_supplemental_groups > 0 && !c->supplemental_groups)
                return rkl_error_set(reterr, -EINVAL, "supplemental_groups: entries missing");
        return 0;
}

/* rkt pod UUIDs as rkt prints them: 8-4-4-4-12 lowercase hex. */
int rkl_db__check_rkt_uuid(const char *uuid, rkl_error *reterr)
{
        size_t i = 0;
        for (; uuid[i]; i++) {
                bool dash = i == 8 || i == 13 || i == 18 || i == 23;
                char c = uuid[i];
                if (i >= RKT_UUID_LEN ||
                    (dash ? c != '-' : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))))
                        break;
        }
        if (i != RKT_UUID_LEN || uuid[i])
                return rkl_error_set(reterr, -EINVAL, "rkt_uuid: not a lowercase rkt pod UUID");
        return 0;
}

int rkl_db__check_unit_name(const char *unit, rkl_error *reterr)
{
        size_t n = strnlen(unit, UNIT_NAME_MAX + 1);
        if (n == 0 || n > UNIT_NAME_MAX || unit[0] == '-' ||
            strspn(unit, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789:_.@\\-") !=
                n)
                return rkl_error_set(reterr, -EINVAL, "unit_name: not a systemd unit name");
        return 0;
}

/* ACName (appc spec): [a-z0-9]+(-[a-z0-9]+)*. */
int rkl_db__check_app_name(const char *app, rkl_error *reterr)
{
        size_t n = app ? strnlen(app, RKL_MAX_NAME + 1) : 0;
        bool ok = n > 0 && n <= RKL_MAX_NAME && app[0] != '-' && app[n - 1] != '-' &&
                  !strstr(app, "--") && strspn(app, "abcdefghijklmnopqrstuvwxyz0123456789-") == n;
        if (!ok)
                return rkl_error_set(reterr, -EINVAL, "app_name: not an ACName");
        return 0;
}

int rkl_db__check_time(const char *field, int64_t t, rkl_error *reterr)
{
        if (t < 0)
                return rkl_error_set(reterr, -EINVAL, "%s: negative", field);
        return 0;
}

int rkl_db__check_observed(int64_t pid, int64_t created_ns, int64_t started_ns, int64_t finished_ns,
                           const rkl_timeline *timeline, rkl_error *reterr)
{
        int r;
        if (pid < 0)
                return rkl_error_set(reterr, -EINVAL, "pid: negative");
        if ((r = rkl_db__check_time("created_at", created_ns, reterr)) < 0 ||
            (r = rkl_db__check_time("started_at", started_ns, reterr)) < 0 ||
            (r = rkl_db__check_time("finished_at", finished_ns, reterr)) < 0)
                return r;
        for (size_t i = 0; i < RKL_TIMELINE_STEPS; i++)
                if ((r = rkl_db__check_time("timeline", timeline->usec[i], reterr)) < 0)
                        return r;
        return 0;
}

/* Free text from the reconciler (errors, reasons, messages) may carry a tool's raw output:
 * it is cut to MAX_TEXT and invalid UTF-8 becomes '?', because refusing to record a failure
 * would only hide it. Returns NULL for NULL. */
char *rkl_db__sanitize_text(const char *s)
{
        if (!s)
                return NULL;
        size_t n = strnlen(s, MAX_TEXT);
        char *t = rkl_xstrndup(s, n);
        /* Walk character by character; a byte that starts no valid sequence is replaced. */
        for (size_t i = 0; i < n;) {
                unsigned char c = (unsigned char)t[i];
                size_t len = c < 0x80             ? 1
                             : (c & 0xe0) == 0xc0 ? 2
                             : (c & 0xf0) == 0xe0 ? 3
                             : (c & 0xf8) == 0xf0 ? 4
                                                  : 0;
                char buf[5] = {0};
                if (len > 0 && i + len <= n) {
                        memcpy(buf, t + i, len);
                        if (utf8_is_valid(buf)) {
                                i += len;
                                continue;
                        }
                }
                t[i++] = '?';
        }
        return t;
}

int rkl_db__check_selector(const rkl_kvs *sel, rkl_error *reterr)
{
        if (!sel)
                return 0;
        return check_kvs("label_selector", sel, RKL_MAX_KV, RKL_MAX_KEY, RKL_MAX_VALUE, false,
                         reterr);
}
