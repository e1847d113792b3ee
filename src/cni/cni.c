/* ADD, CHECK and DEL through a configuration's chain of plugins, and what a pod gives them. */
#include "cni-internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/strv.h"
#include "base/banned.h"

#define RESULT_MAX (1 << 20)

/* ---- What a pod gives the plugins ---- */

static const char *protocol_name(rkl_protocol p)
{
        return p == RKL_PROTOCOL_UDP ? "udp" : p == RKL_PROTOCOL_SCTP ? "sctp" : "tcp";
}

static json_object *capabilities_of(const rkl_cni_pod *pod)
{
        json_object *caps = json_object_new_object();

        json_object *ports = json_object_new_array();
        for (size_t i = 0; i < pod->n_ports; i++) {
                const rkl_port_mapping *p = &pod->ports[i];
                if (p->host_port <= 0 || p->container_port <= 0)
                        continue; /* nothing to map: the port is reachable on the pod's IP */
                json_object *m = json_object_new_object();
                json_object_object_add(m, "hostPort", json_object_new_int(p->host_port));
                json_object_object_add(m, "containerPort", json_object_new_int(p->container_port));
                json_object_object_add(m, "protocol",
                                       json_object_new_string(protocol_name(p->protocol)));
                json_object_object_add(m, "hostIP",
                                       json_object_new_string(p->host_ip ? p->host_ip : ""));
                json_object_array_add(ports, m);
        }
        if (json_object_array_length(ports) > 0)
                json_object_object_add(caps, "portMappings", ports);
        else
                json_object_put(ports);

        /* As kubelet and containerd give it: rates in bits per second, and a burst as large
         * as the plugin takes, so that only the rate limits. */
        if (pod->ingress_bps || pod->egress_bps) {
                json_object *b = json_object_new_object();
                if (pod->ingress_bps) {
                        json_object_object_add(b, "ingressRate",
                                               json_object_new_uint64(pod->ingress_bps));
                        json_object_object_add(b, "ingressBurst",
                                               json_object_new_uint64(UINT32_MAX));
                }
                if (pod->egress_bps) {
                        json_object_object_add(b, "egressRate",
                                               json_object_new_uint64(pod->egress_bps));
                        json_object_object_add(b, "egressBurst",
                                               json_object_new_uint64(UINT32_MAX));
                }
                json_object_object_add(caps, "bandwidth", b);
        }

        if (pod->dns_servers || pod->dns_searches || pod->dns_options) {
                json_object *d = json_object_new_object();
                json_object_object_add(d, "servers", rkl_json_new_strv(pod->dns_servers));
                json_object_object_add(d, "searches", rkl_json_new_strv(pod->dns_searches));
                json_object_object_add(d, "options", rkl_json_new_strv(pod->dns_options));
                json_object_object_add(caps, "dns", d);
        }
        return caps;
}

/* CNI_ARGS is "K=V;K=V": a value that holds either separator is left out rather than let it
 * pass for other keys. */
static void push_arg(char **args, const char *key, const char *value)
{
        if (isempty(value) || strpbrk(value, ";="))
                return;
        char *s = rkl_xasprintf("%s;%s=%s", *args, key, value);
        free(*args);
        *args = s;
}

void rkl_cni_runtime_for_pod(const rkl_cni_pod *pod, rkl_cni_runtime *ret)
{
        char *args = rkl_xstrdup("IgnoreUnknown=1");
        push_arg(&args, "K8S_POD_NAMESPACE", pod->namespace);
        push_arg(&args, "K8S_POD_NAME", pod->name);
        push_arg(&args, "K8S_POD_INFRA_CONTAINER_ID", pod->sandbox_id);
        push_arg(&args, "K8S_POD_UID", pod->uid);
        json_object *caps = capabilities_of(pod);
        *ret = (rkl_cni_runtime){
            .container_id = rkl_xstrdup(pod->sandbox_id),
            .netns = rkl_xstrdup(pod->netns),
            .ifname = rkl_xstrdup(RKL_CNI_IFNAME),
            .args = args,
            .capabilities = rkl_xstrdup(json_object_to_json_string_ext(
                caps, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)),
        };
        json_object_put(caps);
}

void rkl_cni_runtime_done(rkl_cni_runtime *rt)
{
        free(rt->container_id);
        free(rt->netns);
        free(rt->ifname);
        free(rt->args);
        free(rt->capabilities);
        *rt = (rkl_cni_runtime){0};
}

/* ---- The chain ---- */

/* A plugin's stdin: its object from the list, with the list's name and version, the
 * runtime's values of the capabilities it declares, and the previous result. */
static json_object *plugin_conf(const rkl_cni_config *c, json_object *plugin, json_object *caps,
                                json_object *prev)
{
        json_object *conf = NULL, *declared;
        if (json_object_deep_copy(plugin, &conf, NULL) < 0)
                rkl_oom();
        json_object_object_add(conf, "name", json_object_new_string(c->name));
        json_object_object_add(conf, "cniVersion", json_object_new_string(c->version));
        if (json_object_object_get_ex(plugin, "capabilities", &declared)) {
                json_object *rc = json_object_new_object();
                json_object_object_foreach(declared, key, on)
                {
                        json_object *v;
                        if (json_object_get_boolean(on) && json_object_object_get_ex(caps, key, &v))
                                json_object_object_add(rc, key, json_object_get(v));
                }
                if (json_object_object_length(rc) > 0)
                        json_object_object_add(conf, "runtimeConfig", rc);
                else
                        json_object_put(rc);
        }
        if (prev)
                json_object_object_add(conf, "prevResult", json_object_get(prev));
        return conf;
}

static json_object *plugins_of(const rkl_cni_config *c)
{
        return json_object_object_get(c->list, "plugins");
}

static const char *type_of(json_object *plugin)
{
        return json_object_get_string(json_object_object_get(plugin, "type"));
}

static int parse_caps(const rkl_cni_runtime *rt, json_object **ret, rkl_error *reterr)
{
        const char *s = rt->capabilities ? rt->capabilities : "{}";
        int r = rkl_json_parse(s, strlen(s), RESULT_MAX, ret, reterr);
        if (r < 0)
                return rkl_error_prefix(reterr, "the runtime's capabilities");
        return 0;
}

static int parse_result(const char *text, size_t len, json_object **ret, rkl_error *reterr)
{
        json_object *o = NULL;
        int r = rkl_json_parse(text, len, RESULT_MAX, &o, reterr);
        if (r < 0)
                return r;
        if (!json_object_is_type(o, json_type_object)) {
                json_object_put(o);
                return rkl_error_set(reterr, -EBADMSG, "not a JSON object");
        }
        *ret = o;
        return 0;
}

int rkl_cni_add(const rkl_cni_config *c, const rkl_cni_exec *x, const rkl_cni_runtime *rt,
                char **ret_result, rkl_error *reterr)
{
        _cleanup_(json_object_putp) json_object *caps = NULL, *prev = NULL;
        json_object *plugins = plugins_of(c);
        int r;

        if ((r = parse_caps(rt, &caps, reterr)) < 0)
                return r;
        for (size_t i = 0; i < json_object_array_length(plugins); i++) {
                json_object *p = json_object_array_get_idx(plugins, i);
                _cleanup_(json_object_putp) json_object *conf = plugin_conf(c, p, caps, prev);
                _cleanup_free_ char *out = NULL;
                if ((r = rkl_cni__plugin_run(x, rt, "ADD", type_of(p), conf, &out, reterr)) < 0)
                        return r;
                json_object *result = NULL;
                rkl_error e = RKL_ERROR_INIT;
                if (parse_result(out, strlen(out), &result, &e) < 0)
                        return rkl_error_set(reterr, -EBADMSG,
                                             "plugin '%s' (ADD) answered no result: %s", type_of(p),
                                             e.msg);
                json_object_put(prev);
                prev = result;
        }
        *ret_result = rkl_xstrdup(json_object_to_json_string_ext(
            prev, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
        return 0;
}

int rkl_cni_check(const rkl_cni_config *c, const rkl_cni_exec *x, const rkl_cni_runtime *rt,
                  const char *result, rkl_error *reterr)
{
        _cleanup_(json_object_putp) json_object *caps = NULL, *prev = NULL;
        json_object *plugins = plugins_of(c);
        int r;

        if (!rkl_cni__version_at_least(c->version, "0.4.0"))
                return rkl_error_set(reterr, -EOPNOTSUPP, "CNI %s has no CHECK", c->version);
        if (c->disable_check)
                return rkl_error_set(reterr, -EOPNOTSUPP, "the configuration disables CHECK");
        if ((r = parse_caps(rt, &caps, reterr)) < 0)
                return r;
        rkl_error e = RKL_ERROR_INIT;
        if (!result || parse_result(result, strlen(result), &prev, &e) < 0)
                return rkl_error_set(reterr, -EBADMSG, "no usable result of the ADD to check%s%s",
                                     result ? ": " : "", result ? e.msg : "");
        for (size_t i = 0; i < json_object_array_length(plugins); i++) {
                json_object *p = json_object_array_get_idx(plugins, i);
                _cleanup_(json_object_putp) json_object *conf = plugin_conf(c, p, caps, prev);
                if ((r = rkl_cni__plugin_run(x, rt, "CHECK", type_of(p), conf, NULL, reterr)) < 0)
                        return r;
        }
        return 0;
}

int rkl_cni_del(const rkl_cni_config *c, const rkl_cni_exec *x, const rkl_cni_runtime *rt,
                const char *result, rkl_error *reterr)
{
        _cleanup_(json_object_putp) json_object *caps = NULL, *prev = NULL;
        json_object *plugins = plugins_of(c);
        int r, first = 0;

        if ((r = parse_caps(rt, &caps, reterr)) < 0)
                return r;
        /* prevResult in DEL came with 0.4.0; a result that cannot be read is not passed,
         * since the plugins must clean up without one anyway. */
        if (result && rkl_cni__version_at_least(c->version, "0.4.0")) {
                rkl_error ignored = RKL_ERROR_INIT;
                (void)parse_result(result, strlen(result), &prev, &ignored);
        }
        _cleanup_free_ char *skipped = NULL;
        int n_skipped = 0;
        for (size_t i = json_object_array_length(plugins); i-- > 0;) {
                json_object *p = json_object_array_get_idx(plugins, i);
                _cleanup_(json_object_putp) json_object *conf = plugin_conf(c, p, caps, prev);
                rkl_error e = RKL_ERROR_INIT;
                r = rkl_cni__plugin_run(x, rt, "DEL", type_of(p), conf, NULL, &e);
                if (r == -ENOENT) {
                        char *s = skipped ? rkl_xasprintf("%s, %s", skipped, type_of(p))
                                          : rkl_xstrdup(type_of(p));
                        free(skipped);
                        skipped = s;
                        n_skipped++;
                } else if (r < 0 && first == 0) {
                        first = r;
                        rkl_error_set(reterr, r, "%s", e.msg);
                }
        }
        if (first < 0)
                return first;
        if (n_skipped > 0)
                rkl_error_set(reterr, -ENOENT, "not installed, skipped: %s", skipped);
        return n_skipped;
}

/* ---- Results ---- */

int rkl_cni_result_ips(const char *result, char ***ret, rkl_error *reterr)
{
        _cleanup_(json_object_putp) json_object *o = NULL;
        _cleanup_strv_free_ char **v4 = NULL, **v6 = NULL;
        json_object *ips;
        rkl_error e = RKL_ERROR_INIT;

        if (!result || parse_result(result, strlen(result), &o, &e) < 0)
                return rkl_error_set(reterr, -EBADMSG, "the CNI result: %s",
                                     result ? e.msg : "none");
        if (json_object_object_get_ex(o, "ips", &ips) &&
            json_object_is_type(ips, json_type_array)) {
                for (size_t i = 0; i < json_object_array_length(ips); i++) {
                        json_object *ip = json_object_array_get_idx(ips, i);
                        const char *a = NULL;
                        if (!json_object_is_type(ip, json_type_object) ||
                            rkl_json_get_string(ip, "address", 128, &a, NULL) < 0 || isempty(a))
                                continue;
                        _cleanup_free_ char *addr = rkl_xstrndup(a, strcspn(a, "/"));
                        if (!*addr)
                                continue; /* "/24": no address */
                        rkl_strv_push(strchr(addr, ':') ? &v6 : &v4, addr);
                }
        }
        char **all = TAKE_PTR(v4);
        RKL_STRV_FOREACH (s, v6)
                rkl_strv_push(&all, *s);
        *ret = all;
        return 0;
}
