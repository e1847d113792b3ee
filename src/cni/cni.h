/* Pod networking through CNI plugins, as the CNI specification 1.0.0 has a runtime do it
 * (configurations of cniVersion 0.3.0, 0.3.1 and 0.4.0 are run as that version): the
 * network configuration of a directory, and ADD, CHECK and DEL of a pod's network namespace
 * through the configuration's chain of plugins.
 *
 * Library code: errors come back as -errno with a message in reterr, nothing is logged. A
 * configuration is immutable once made, so threads may share one. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "base/macro.h"
#include "base/model.h"

/* The interface a pod's network gets inside its namespace. */
#define RKL_CNI_IFNAME "eth0"

typedef struct rkl_cni_config rkl_cni_config;

/* The network configuration in dir: its first file named *.conf, *.conflist or *.json, in
 * byte order of the names. -ENOENT when there is none (or no dir), -EINVAL when that first
 * file is not a usable configuration; either way reterr names the directory or the file
 * and says why. */
int rkl_cni_config_load_dir(const char *dir, rkl_cni_config **ret, rkl_error *reterr);
/* A configuration list, or one plugin's configuration (a .conf file), from text; source
 * names it in messages. -EINVAL with the reason when it is not usable. */
int rkl_cni_config_parse(const char *text, size_t len, const char *source, rkl_cni_config **ret,
                         rkl_error *reterr);
rkl_cni_config *rkl_cni_config_free(rkl_cni_config *c);
RKL_DEFINE_CLEANUP(rkl_cni_config *, rkl_cni_config_free)

const char *rkl_cni_config_name(const rkl_cni_config *c);
const char *rkl_cni_config_version(const rkl_cni_config *c);
const char *rkl_cni_config_source(const rkl_cni_config *c);
/* The configuration as a list, in JSON: what a sandbox keeps from its ADD, so that its DEL
 * runs the very same chain whatever the directory holds by then. */
const char *rkl_cni_config_json(const rkl_cni_config *c);
/* The plugins' types in chain order ("bridge,portmap"): for messages. */
const char *rkl_cni_config_types(const rkl_cni_config *c);

/* What a pod asks of the network. */
typedef struct rkl_cni_pod {
        const char *sandbox_id;             /* CNI's container ID */
        const char *netns;                  /* the path of the pod's network namespace */
        const char *namespace, *name, *uid; /* Kubernetes' pod, for CNI_ARGS */
        const rkl_port_mapping *ports;      /* those with a host port become portMappings */
        size_t n_ports;
        char *const *dns_servers, *const *dns_searches, *const *dns_options;
        uint64_t ingress_bps, egress_bps; /* bits per second; 0: no limit */
} rkl_cni_pod;

/* Everything a plugin is given besides the configuration: made once for a pod's ADD and
 * kept with it, so that CHECK and DEL need nothing else of the pod. */
typedef struct rkl_cni_runtime {
        char *container_id;
        char *netns;
        char *ifname;
        char *args;         /* CNI_ARGS */
        char *capabilities; /* JSON object: each capability's runtimeConfig value */
} rkl_cni_runtime;

void rkl_cni_runtime_for_pod(const rkl_cni_pod *pod, rkl_cni_runtime *ret);
void rkl_cni_runtime_done(rkl_cni_runtime *rt);

/* How plugins run. */
typedef struct rkl_cni_exec {
        char *const *bin_dirs; /* searched in order for a plugin; CNI_PATH too */
        uint64_t timeout_usec; /* each plugin's deadline: SIGTERM then, SIGKILL 2 s later */
} rkl_cni_exec;

/* ADD through the chain, each plugin given its predecessor's result; ret_result is the last
 * one's, in JSON. Plugins that ran before a failure are not undone here: DEL does it. */
int rkl_cni_add(const rkl_cni_config *c, const rkl_cni_exec *x, const rkl_cni_runtime *rt,
                char **ret_result, rkl_error *reterr);
/* CHECK through the chain with ADD's result. -EOPNOTSUPP, with nothing run, for
 * configurations older than 0.4.0 or with disableCheck. */
int rkl_cni_check(const rkl_cni_config *c, const rkl_cni_exec *x, const rkl_cni_runtime *rt,
                  const char *result, rkl_error *reterr);
/* DEL through the chain in reverse, with ADD's result when there is one (NULL: the ADD did
 * not finish). Every plugin is run even when one fails, so that each releases what it
 * holds; the first failure is returned. A plugin that is not installed is skipped: it holds
 * nothing it could release (it never ran, or it went with its resources); the count of
 * those skipped is returned, their names in reterr's message. Safe to repeat, as the
 * specification requires of plugins. */
int rkl_cni_del(const rkl_cni_config *c, const rkl_cni_exec *x, const rkl_cni_runtime *rt,
                const char *result, rkl_error *reterr);

/* The pod's addresses in a result (without their prefix length), IPv4 first, each family in
 * the result's order; ret is NULL-terminated, NULL when there are none. -EBADMSG when the
 * result cannot be read. */
int rkl_cni_result_ips(const char *result, char ***ret, rkl_error *reterr);
