#include "model.h"

#include <sys/random.h>

#include "alloc.h"
#include "parse.h"
#include "strv.h"
#include "banned.h"

void rkl_kvs_done(rkl_kvs *l)
{
        for (size_t i = 0; i < l->n; i++) {
                free(l->items[i].key);
                free(l->items[i].value);
        }
        free(l->items);
        *l = (rkl_kvs){0};
}

void rkl_kvs_add(rkl_kvs *l, const char *key, const char *value)
{
        l->items = rkl_xrealloc(l->items, (l->n + 1) * sizeof(rkl_kv));
        l->items[l->n++] = (rkl_kv){rkl_xstrdup(key), rkl_xstrdup(value)};
}

const char *rkl_kvs_get(const rkl_kvs *l, const char *key)
{
        for (size_t i = 0; i < l->n; i++)
                if (streq(l->items[i].key, key))
                        return l->items[i].value;
        return NULL;
}

void rkl_kvs_copy(rkl_kvs *dst, const rkl_kvs *src)
{
        *dst = (rkl_kvs){0};
        for (size_t i = 0; i < src->n; i++)
                rkl_kvs_add(dst, src->items[i].key, src->items[i].value);
}

void rkl_pod_spec_done(rkl_pod_spec *s)
{
        if (!s)
                return;
        free(s->name);
        free(s->uid);
        free(s->namespace);
        free(s->hostname);
        free(s->log_directory);
        rkl_strv_free(s->dns_servers);
        rkl_strv_free(s->dns_searches);
        rkl_strv_free(s->dns_options);
        for (size_t i = 0; i < s->n_ports; i++)
                free(s->ports[i].host_ip);
        free(s->ports);
        rkl_kvs_done(&s->labels);
        rkl_kvs_done(&s->annotations);
        free(s->cgroup_parent);
        rkl_kvs_done(&s->sysctls);
        free(s->runtime_handler);
        *s = (rkl_pod_spec){0};
}

const char *rkl_container_spec_image_name(const rkl_container_spec *s)
{
        return s->user_image ? s->user_image : s->image;
}

void rkl_container_spec_done(rkl_container_spec *s)
{
        if (!s)
                return;
        free(s->name);
        free(s->image);
        free(s->user_image);
        rkl_strv_free(s->command);
        rkl_strv_free(s->args);
        free(s->working_dir);
        rkl_kvs_done(&s->envs);
        for (size_t i = 0; i < s->n_mounts; i++) {
                free(s->mounts[i].container_path);
                free(s->mounts[i].host_path);
        }
        free(s->mounts);
        rkl_kvs_done(&s->labels);
        rkl_kvs_done(&s->annotations);
        free(s->log_path);
        free(s->cpuset_cpus);
        free(s->run_as_username);
        free(s->supplemental_groups);
        rkl_strv_free(s->caps_add);
        rkl_strv_free(s->caps_drop);
        rkl_strv_free(s->masked_paths);
        rkl_strv_free(s->readonly_paths);
        free(s->seccomp_localhost_ref);
        free(s->seccomp_unit);
        *s = (rkl_container_spec){0};
}

static const char *const pod_desired[] = {"ready", "stopped"};
static const char *const container_desired[] = {"created", "running", "stopped"};
static const char *const pod_phase[] = {"pending", "running", "failed", "stopped"};
static const char *const container_phase[] = {"created", "running", "exited", "unknown"};

static const char *const pod_step[] = {"unit_started",  "pod_seen",     "netns_seen",
                                       "net_add_begun", "net_add_done", "stage1_ready",
                                       "running"};
static const char *const container_step[] = {"add_begun", "add_done", "start_begun", "start_done",
                                             "running"};

_Static_assert(ELEMENTSOF(pod_step) == _RKL_POD_STEP_MAX &&
                   ELEMENTSOF(container_step) == _RKL_CONTAINER_STEP_MAX &&
                   _RKL_POD_STEP_MAX <= RKL_TIMELINE_STEPS &&
                   _RKL_CONTAINER_STEP_MAX <= RKL_TIMELINE_STEPS,
               "a name for every step, and room for each in a timeline");

static const char *to_string(const char *const *table, size_t n, int v)
{
        return v >= 0 && (size_t)v < n ? table[v] : NULL;
}

static int from_string(const char *const *table, size_t n, const char *s)
{
        for (size_t i = 0; s && i < n; i++)
                if (streq(table[i], s))
                        return (int)i;
        return -EINVAL;
}

#define DEFINE_STRING_TABLE(name, type, table)                                                     \
        const char *name##_to_string(type v)                                                       \
        {                                                                                          \
                return to_string(table, ELEMENTSOF(table), (int)v);                                \
        }                                                                                          \
        type name##_from_string(const char *s)                                                     \
        {                                                                                          \
                return (type)from_string(table, ELEMENTSOF(table), s);                             \
        }

DEFINE_STRING_TABLE(rkl_pod_desired, rkl_pod_desired, pod_desired)
DEFINE_STRING_TABLE(rkl_container_desired, rkl_container_desired, container_desired)
DEFINE_STRING_TABLE(rkl_pod_phase, rkl_pod_phase, pod_phase)
DEFINE_STRING_TABLE(rkl_container_phase, rkl_container_phase, container_phase)
DEFINE_STRING_TABLE(rkl_pod_step, rkl_pod_step, pod_step)
DEFINE_STRING_TABLE(rkl_container_step, rkl_container_step, container_step)

bool rkl_id_is_valid(const char *id)
{
        if (!id)
                return false;
        size_t i = 0;
        for (; id[i]; i++)
                if (i >= RKL_ID_LEN ||
                    !((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
                        return false;
        return i == RKL_ID_LEN;
}

void rkl_id_new(char ret[static RKL_ID_LEN + 1])
{
        static const char hex[] = "0123456789abcdef";
        unsigned char buf[RKL_ID_LEN / 2];
        size_t got = 0;
        while (got < sizeof(buf)) {
                ssize_t k = getrandom(buf + got, sizeof(buf) - got, 0);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        abort(); /* the kernel's random source is not optional */
                }
                got += (size_t)k;
        }
        for (size_t i = 0; i < sizeof(buf); i++) {
                ret[2 * i] = hex[buf[i] >> 4];
                ret[2 * i + 1] = hex[buf[i] & 15];
        }
        ret[RKL_ID_LEN] = 0;
}

char *rkl_container_app_name(const char *container_id)
{
        /* 64 random bits: unique within a pod, short enough for unit and cgroup names. */
        return rkl_xasprintf("c%.16s", container_id);
}

int rkl_pod_bandwidth(const rkl_kvs *annotations, uint64_t *ret_ingress, uint64_t *ret_egress,
                      const char **ret_key)
{
        static const char *const keys[] = {RKL_ANNOTATION_INGRESS_BANDWIDTH,
                                           RKL_ANNOTATION_EGRESS_BANDWIDTH};
        uint64_t v[2] = {0, 0};
        for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
                const char *s = rkl_kvs_get(annotations, keys[i]);
                if (!s)
                        continue;
                if (rkl_parse_quantity(s, &v[i]) < 0 || v[i] < RKL_BANDWIDTH_MIN ||
                    v[i] > RKL_BANDWIDTH_MAX) {
                        if (ret_key)
                                *ret_key = keys[i];
                        return -EINVAL;
                }
        }
        *ret_ingress = v[0];
        *ret_egress = v[1];
        return 0;
}
