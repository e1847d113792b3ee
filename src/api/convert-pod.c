/* A PodSandboxConfig into the model's rkl_pod_spec: metadata, ports, DNS, namespaces,
 * security, sysctls, each field checked (convert.h). */
#include "convert-internal.h"

#include <arpa/inet.h>

#include "base/alloc.h"
#include "base/parse.h"
#include "base/strv.h"
#include "rkt/sysctl.h"
#include "base/banned.h"

static bool is_ip(const char *s)
{
        unsigned char buf[16];
        return inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1;
}

static int ports_from(const Runtime__V1__PodSandboxConfig *c, rkl_pod_spec *s, rkl_error *reterr)
{
        if (c->n_port_mappings > RKL_MAX_PORTS)
                return rkl_error_set(reterr, -EINVAL, "port_mappings: more than %d entries",
                                     RKL_MAX_PORTS);
        s->ports = rkl_xnew0(rkl_port_mapping, c->n_port_mappings);
        for (size_t i = 0; i < c->n_port_mappings; i++) {
                const Runtime__V1__PortMapping *p = c->port_mappings[i];
                if ((int)p->protocol < 0 || (int)p->protocol >= (int)_RKL_PROTOCOL_MAX)
                        return rkl_error_set(reterr, -EINVAL,
                                             "port_mappings[%zu].protocol: unknown value %d", i,
                                             (int)p->protocol);
                if (p->container_port < 0 || p->container_port > RKL_MAX_PORT || p->host_port < 0 ||
                    p->host_port > RKL_MAX_PORT)
                        return rkl_error_set(reterr, -EINVAL,
                                             "port_mappings[%zu]: ports are 0 to %d", i,
                                             RKL_MAX_PORT);
                if (!isempty(p->host_ip) && !is_ip(p->host_ip))
                        return rkl_error_set(reterr, -EINVAL,
                                             "port_mappings[%zu].host_ip: '%.64s' is not an IP "
                                             "address",
                                             i, p->host_ip);
                s->ports[s->n_ports++] = (rkl_port_mapping){
                    .protocol = (rkl_protocol)p->protocol,
                    .container_port = p->container_port,
                    .host_port = p->host_port,
                    .host_ip = isempty(p->host_ip) ? NULL : rkl_xstrdup(p->host_ip),
                };
        }
        return 0;
}

/* Only what a pod's own namespaces hold (rkt/sysctl.c sets them there), by plain names. */
static int sysctls_check(const rkl_kvs *l, rkl_error *reterr)
{
        for (size_t i = 0; i < l->n; i++) {
                const char *k = l->items[i].key, *v = l->items[i].value;
                bool plain = *k && k[0] != '.' && !strstr(k, "..") && k[strlen(k) - 1] != '.';
                for (const char *p = k; *p && plain; p++)
                        plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                                (*p >= '0' && *p <= '9') || *p == '_' || *p == '-' || *p == '.';
                if (!plain)
                        return rkl_error_set(reterr, -EINVAL,
                                             "config.linux.sysctls: '%.64s' is not a sysctl name",
                                             k);
                if (!rkl_rkt_sysctl_is_namespaced(k))
                        return rkl_error_set(reterr, -EINVAL,
                                             "config.linux.sysctls: '%.64s' is not namespaced: a "
                                             "pod cannot set it",
                                             k);
                if (strpbrk(v, "\n") || strlen(v) > 4096)
                        return rkl_error_set(reterr, -EINVAL,
                                             "config.linux.sysctls: the value of '%.64s' is not "
                                             "one line",
                                             k);
        }
        return 0;
}

static int pod_dns_from(const Runtime__V1__DNSConfig *d, rkl_pod_spec *s, rkl_error *reterr)
{
        const check_flags f = CHECK_REQUIRED | CHECK_NO_COMMA | CHECK_NO_DASH | CHECK_NO_SPACE;
        int r;
        if ((r = rkl_api__strv_from("config.dns_config.servers", d->servers, d->n_servers,
                                    RKL_MAX_DNS, RKL_MAX_NAME, f, &s->dns_servers, reterr)) < 0 ||
            (r = rkl_api__strv_from("config.dns_config.searches", d->searches, d->n_searches,
                                    RKL_MAX_DNS, RKL_MAX_NAME, f, &s->dns_searches, reterr)) < 0 ||
            (r = rkl_api__strv_from("config.dns_config.options", d->options, d->n_options,
                                    RKL_MAX_DNS, RKL_MAX_NAME, f, &s->dns_options, reterr)) < 0)
                return r;
        RKL_STRV_FOREACH (p, s->dns_servers)
                if (!is_ip(*p))
                        return rkl_error_set(reterr, -EINVAL,
                                             "config.dns_config.servers: '%s' is not an IP "
                                             "address",
                                             *p);
        return 0;
}

/* The labels and annotations, and the bandwidth annotations' values. */
static int pod_metadata_from(const Runtime__V1__PodSandboxConfig *c, rkl_pod_spec *s,
                             rkl_error *reterr)
{
        int r = KVS_FROM("config.labels", c->labels, c->n_labels, &s->labels, reterr);
        if (r >= 0)
                r = rkl_api__metadata_check("config.labels", &s->labels, reterr);
        if (r < 0)
                return r;
        r = KVS_FROM("config.annotations", c->annotations, c->n_annotations, &s->annotations,
                     reterr);
        if (r >= 0)
                r = rkl_api__metadata_check("config.annotations", &s->annotations, reterr);
        if (r < 0)
                return r;
        uint64_t ingress, egress;
        const char *key = NULL;
        if (rkl_pod_bandwidth(&s->annotations, &ingress, &egress, &key) < 0)
                return rkl_error_set(reterr, -EINVAL,
                                     "config.annotations: '%s' = '%.64s' is not a bandwidth from "
                                     "1k to 1P bits per second (e.g. 10M)",
                                     key, rkl_kvs_get(&s->annotations, key));
        return 0;
}

/* The namespaces a pod may have: its own PID and IPC namespaces (rkt's app sandbox cannot
 * share the host's: refused rather than pretended), its own network or the host's. */
static int pod_namespaces_from(const Runtime__V1__NamespaceOption *ns, rkl_pod_spec *s,
                               rkl_error *reterr)
{
        s->host_network = ns->network == RUNTIME__V1__NAMESPACE_MODE__NODE;
        for (size_t i = 0; s->host_network && i < s->sysctls.n; i++)
                if (strncmp(s->sysctls.items[i].key, "net.", 4) == 0)
                        return rkl_error_set(reterr, -EINVAL,
                                             "config.linux.sysctls: '%.64s' would be the host's: "
                                             "the pod uses the host's network",
                                             s->sysctls.items[i].key);
        if (ns->pid == RUNTIME__V1__NAMESPACE_MODE__NODE)
                return rkl_error_set(reterr, -EINVAL,
                                     "config.linux.security_context.namespace_options.pid: rkt "
                                     "cannot run a pod in the host's PID namespace");
        if (ns->ipc == RUNTIME__V1__NAMESPACE_MODE__NODE)
                return rkl_error_set(reterr, -EINVAL,
                                     "config.linux.security_context.namespace_options.ipc: rkt "
                                     "cannot run a pod in the host's IPC namespace");
        return 0;
}

static int pod_security_from(const Runtime__V1__LinuxSandboxSecurityContext *sc, rkl_pod_spec *s,
                             rkl_error *reterr)
{
        int r;
        s->privileged = sc->privileged;
        /* The sandbox's own profiles are for an infra container rkt does not have: checked,
         * nothing to apply. */
        rkl_seccomp kind;
        const char *ref;
        if ((r = rkl_api__seccomp_kind(sc->seccomp, sc->seccomp_profile_path,
                                       "config.linux.security_context", &kind, &ref, reterr)) < 0 ||
            (r = rkl_api__apparmor_check(sc->apparmor, NULL, "config.linux.security_context",
                                         reterr)) < 0)
                return r;
        if (rkl_api__selinux_refused(sc->selinux_options))
                return rkl_error_set(reterr, -EINVAL,
                                     "config.linux.security_context.selinux_options: rkt's "
                                     "stage1 applies no SELinux labels, and this machine "
                                     "enforces them");
        return sc->namespace_options ? pod_namespaces_from(sc->namespace_options, s, reterr) : 0;
}

static int pod_linux_from(const Runtime__V1__LinuxPodSandboxConfig *l, rkl_pod_spec *s,
                          rkl_error *reterr)
{
        int r = rkl_api__check("config.linux.cgroup_parent", l->cgroup_parent, RKL_MAX_PATH,
                               CHECK_NO_DOTDOT, reterr);
        if (r < 0)
                return r;
        s->cgroup_parent = isempty(l->cgroup_parent) ? NULL : rkl_xstrdup(l->cgroup_parent);
        r = KVS_FROM("config.linux.sysctls", l->sysctls, l->n_sysctls, &s->sysctls, reterr);
        if (r < 0)
                return r;
        r = sysctls_check(&s->sysctls, reterr);
        if (r < 0)
                return r;
        return l->security_context ? pod_security_from(l->security_context, s, reterr) : 0;
}

int rkl_api_pod_spec_from_pb(const Runtime__V1__PodSandboxConfig *c, rkl_pod_spec *ret,
                             rkl_error *reterr)
{
        _cleanup_(rkl_pod_spec_done) rkl_pod_spec s = {0};
        int r;

        if (!c)
                return rkl_error_set(reterr, -EINVAL, "config: required");
        if (!c->metadata)
                return rkl_error_set(reterr, -EINVAL, "config.metadata: required");
        const Runtime__V1__PodSandboxMetadata *m = c->metadata;
        if ((r = rkl_api__check("config.metadata.name", m->name, RKL_MAX_NAME, CHECK_REQUIRED,
                                reterr)) < 0 ||
            (r = rkl_api__check("config.metadata.uid", m->uid, RKL_MAX_NAME, CHECK_REQUIRED,
                                reterr)) < 0 ||
            (r = rkl_api__check("config.metadata.namespace", m->namespace_, RKL_MAX_NAME,
                                CHECK_REQUIRED, reterr)) < 0)
                return r;
        s.name = rkl_xstrdup(m->name);
        s.uid = rkl_xstrdup(m->uid);
        s.namespace = rkl_xstrdup(m->namespace_);
        s.attempt = m->attempt;

        r = rkl_api__check("config.hostname", c->hostname, RKL_MAX_NAME,
                           CHECK_NO_DASH | CHECK_NO_SPACE | CHECK_NO_COMMA, reterr);
        if (r < 0)
                return r;
        s.hostname = isempty(c->hostname) ? NULL : rkl_xstrdup(c->hostname);
        r = rkl_api__check("config.log_directory", c->log_directory, RKL_MAX_PATH,
                           CHECK_ABSOLUTE | CHECK_NO_DOTDOT, reterr);
        if (r < 0)
                return r;
        s.log_directory = isempty(c->log_directory) ? NULL : rkl_xstrdup(c->log_directory);

        if ((c->dns_config && (r = pod_dns_from(c->dns_config, &s, reterr)) < 0) ||
            (r = ports_from(c, &s, reterr)) < 0 || (r = pod_metadata_from(c, &s, reterr)) < 0 ||
            (c->linux && (r = pod_linux_from(c->linux, &s, reterr)) < 0))
                return r;
        *ret = s;
        s = (rkl_pod_spec){0};
        return 0;
}
