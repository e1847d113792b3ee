/* Pod networking through CNI. Pods boot with rkt's --net=none (a namespace with loopback
 * only); the cluster's network configuration (--cni-conf-dir, watched) is run against that
 * namespace here:
 *
 * - ADD once the pod's namespace exists, recorded first as "adding" with everything a DEL
 *   needs (the configuration list, the plugins' arguments), then "ready" with ADD's result,
 *   whose addresses become the sandbox's; only then does the sandbox count as running.
 * - CHECK once per network after the daemon started, for the pods it adopted.
 * - DEL, with ADD's configuration and result, once no sandbox wants the network: stopped
 *   (after its pod exited, before rkt removes the namespace), removed, an earlier creation
 *   attempt's, or an ADD that may not have finished (a crash). The record goes once DEL
 *   succeeded, so every ADD is followed by exactly one DEL that succeeds, whenever the
 *   daemon dies in between.
 *
 * A failed ADD is undone by a DEL at once and fails the sandbox's creation attempt, which is
 * retried like any other. */
#include "network.h"

#include <sys/inotify.h>
#include <sys/stat.h>

#include "reconciler-internal.h"
#include "actions.h"
#include "backoff.h"
#include "observing.h"
#include "pods.h"
#include "base/alloc.h"
#include "base/crash.h"
#include "base/fileio.h"
#include "base/hashmap.h"
#include "base/log.h"
#include "base/strv.h"
#include "base/time-util.h"
#include "cni/cni.h"
#include "store/db.h"
#include "store/store.h"
#include "base/banned.h"

/* DEL failures after which a stopped sandbox's pod is removed all the same. */
#define DEL_HOLDS_POD 3

struct rkl_network {
        rkl_cni_config *config; /* the directory's; NULL when none is usable */
        char *why;              /* why none is, for Status and the sandboxes' errors */
        rkl_cni_exec exec;
        int inotify_fd;
        sd_event_source *source;
        rkl_hashmap *records; /* sandbox ID -> rkl_pod_network*: sandbox_network's rows */
        rkl_backoff *retries; /* sandbox ID: DELs that failed */
        /* Sandboxes whose ready network was found at the start: their records, whose IDs
         * are the keys (a record is dropped from here before it is freed). */
        rkl_hashmap *unchecked;
};

/* Journal fields of a line about the sandbox id, whose record may be gone. */
#define NET_OBJECT(id, rec) ((rec) ? POD_OBJECT(rec) : &(rkl_log_object){.pod_id = (id)})

static const char *const verb_names[] = {
    [ACT_NET_ADD] = "ADD",
    [ACT_NET_CHECK] = "CHECK",
    [ACT_NET_DEL] = "DEL",
};

/* ---- The configuration ---- */

static void health_update(rkl_reconciler *r)
{
        rkl_health h = {0};
        rkl_cache_get_health(r->cache, &h);
        /* Before the first probe, the probe itself fills it in. */
        if (h.probed_ns != 0) {
                rkl_network_health(r, &h);
                rkl_cache_set_health(r->cache, &h);
        }
        rkl_health_done(&h);
}

/* Reads the directory's configuration into r->net, saying what changed. */
static void config_read(rkl_reconciler *r)
{
        rkl_network *n = r->net;
        rkl_error err = RKL_ERROR_INIT;
        rkl_cni_config *c = NULL;

        (void)rkl_cni_config_load_dir(r->cfg.cni_conf_dir, &c, &err);
        bool same = c && n->config &&
                    streq(rkl_cni_config_json(c), rkl_cni_config_json(n->config)) &&
                    streq(rkl_cni_config_source(c), rkl_cni_config_source(n->config));
        if (c && !same)
                rkl_log_info("network '%s' from %s (CNI %s: %s)", rkl_cni_config_name(c),
                             rkl_cni_config_source(c), rkl_cni_config_version(c),
                             rkl_cni_config_types(c));
        else if (!c && (n->config || !streq_ptr(n->why, err.msg)))
                rkl_log_warning("no pod network: %s", err.msg);
        rkl_cni_config_free(n->config);
        n->config = c;
        free(n->why);
        n->why = c ? NULL : rkl_xstrdup(err.msg);
}

/* Reads it and tells Status. */
static void config_load(rkl_reconciler *r)
{
        config_read(r);
        health_update(r);
}

static int on_conf_dir(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
        rkl_reconciler *r = userdata;
        char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
        while (read(fd, buf, sizeof(buf)) > 0)
                ;
        config_load(r);
        rkl_reconciler__schedule_pass(r);
        return 0;
}

/* Watched for the configuration's arrival and changes, as containerd does; a directory that
 * does not exist is made first, since a cluster network's installer only adds a file. */
static void watch_conf_dir(rkl_reconciler *r)
{
        rkl_network *n = r->net;
        struct stat st;
        int k = 0;
        if (stat(r->cfg.cni_conf_dir, &st) < 0) {
                /* World-readable, as every tool that reads it expects: the daemon's own umask
                 * (0077) would take that away. */
                k = rkl_mkdir_p(r->cfg.cni_conf_dir, 0755);
                if (k >= 0 && chmod(r->cfg.cni_conf_dir, 0755) < 0)
                        k = -errno;
        }
        if (k < 0)
                rkl_log_warning("cannot create '%s': %s: a configuration put there is seen at the "
                                "next probe only",
                                r->cfg.cni_conf_dir, strerror(-k));
        n->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (n->inotify_fd < 0 ||
            inotify_add_watch(n->inotify_fd, r->cfg.cni_conf_dir,
                              IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_CLOSE_WRITE |
                                  IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF) < 0 ||
            sd_event_add_io(r->event, &n->source, n->inotify_fd, EPOLLIN, on_conf_dir, r) < 0) {
                rkl_log_warning("cannot watch '%s': %m: a configuration put there is seen at the "
                                "next probe only",
                                r->cfg.cni_conf_dir);
                n->inotify_fd = safe_close(n->inotify_fd);
        }
}

void rkl_network_health(rkl_reconciler *r, rkl_health *h)
{
        rkl_network *n = r->net;
        free(h->net_reason);
        free(h->net_detail);
        free(h->net_config);
        h->net_reason = h->net_detail = h->net_config = NULL;
        if (!n) {
                /* rkt sets each pod's network up itself: it is as ready as rkt is. */
                h->net_ok = h->rkt_ok;
                if (!h->rkt_ok) {
                        h->net_reason = rkl_xstrdup("RktUnavailable");
                        h->net_detail = rkl_xstrdup(h->rkt_detail);
                }
                h->net_config = rkl_xasprintf("rkt's network '%s'", r->cfg.net);
                return;
        }
        /* A configuration read again at every probe: a change the watch missed (none can be
         * set up) shows within the probe interval. */
        if (n->inotify_fd < 0)
                config_read(r); /* not config_load(): its health update comes here */
        h->net_ok = n->config != NULL;
        if (n->config)
                h->net_config =
                    rkl_xasprintf("%s (network '%s': %s)", rkl_cni_config_source(n->config),
                                  rkl_cni_config_name(n->config), rkl_cni_config_types(n->config));
        else {
                /* containerd's reason: kubelet keeps the node NotReady on it. */
                h->net_reason = rkl_xstrdup("NetworkPluginNotReady");
                h->net_detail = rkl_xasprintf("cni: %s", n->why);
        }
}

/* ---- Records ---- */

static void record_free(void *v)
{
        rkl_pod_network_free(v);
}

static rkl_pod_network *record_get(rkl_reconciler *r, const char *id)
{
        return r->net ? rkl_hashmap_get(r->net->records, id) : NULL;
}

bool rkl_network_held(rkl_reconciler *r, const char *sandbox_id)
{
        return record_get(r, sandbox_id) != NULL;
}

static rkl_pod_network *record_copy(const rkl_pod_network *src)
{
        rkl_pod_network *c = rkl_xnew0(rkl_pod_network, 1);
        memcpy(c->sandbox_id, src->sandbox_id, sizeof(c->sandbox_id));
        c->rkt_uuid = rkl_xstrdup(src->rkt_uuid);
        c->state = src->state;
        c->network = rkl_xstrdup(src->network);
        c->config = rkl_xstrdup(src->config);
        c->netns = rkl_xstrdup(src->netns);
        c->ifname = rkl_xstrdup(src->ifname);
        c->args = rkl_xstrdup(src->args);
        c->capabilities = rkl_xstrdup(src->capabilities);
        c->result = rkl_xstrdup(src->result);
        c->check_error = rkl_xstrdup(src->check_error);
        c->created_ns = src->created_ns;
        c->updated_ns = src->updated_ns;
        return c;
}

/* Writes n and keeps it (taking it over) as the sandbox's record; on a failed write the old
 * record stays and n is freed. */
static int record_put(rkl_reconciler *r, rkl_pod_network *n)
{
        rkl_error err = RKL_ERROR_INIT;
        n->updated_ns = rkl_reconciler__now(r);
        int k = rkl_db_pod_network_put(rkl_store_db(r->store), n, &err);
        if (k < 0) {
                rkl_reconciler__write_failed("sandbox", n->sandbox_id, "its network", k, &err);
                rkl_pod_network_free(n);
                return k;
        }
        /* The maps borrow their keys from the record: the old one leaves both first. */
        bool unchecked = rkl_hashmap_remove(r->net->unchecked, n->sandbox_id) != NULL;
        rkl_pod_network_free(rkl_hashmap_remove(r->net->records, n->sandbox_id));
        rkl_hashmap_put(r->net->records, n->sandbox_id, n);
        if (unchecked)
                rkl_hashmap_put(r->net->unchecked, n->sandbox_id, n);
        return 0;
}

static int record_forget(rkl_reconciler *r, const char *id)
{
        rkl_error err = RKL_ERROR_INIT;
        int k = rkl_db_pod_network_delete(rkl_store_db(r->store), id, &err);
        if (k < 0) {
                rkl_reconciler__write_failed("sandbox", id, "that its network is gone", k, &err);
                return k;
        }
        /* The maps borrow their keys from their entries: out of both before either goes. */
        rkl_hashmap_remove(r->net->unchecked, id);
        rkl_backoff_forget(r->net->retries, id);
        rkl_pod_network_free(rkl_hashmap_remove(r->net->records, id));
        return 0;
}

rkl_network *rkl_network_new(const rkl_config *cfg)
{
        if (cfg->net)
                return NULL;
        rkl_network *net = rkl_xnew0(rkl_network, 1);
        net->inotify_fd = -EBADF;
        net->why = rkl_xstrdup("the configuration has not been read yet");
        net->records = rkl_hashmap_new();
        net->retries = rkl_backoff_new();
        net->unchecked = rkl_hashmap_new();
        net->exec = (rkl_cni_exec){
            .bin_dirs = cfg->cni_bin_dirs,
            .timeout_usec = cfg->cni_timeout_usec,
        };
        return net;
}

void rkl_network_start(rkl_reconciler *r)
{
        rkl_error err = RKL_ERROR_INIT;
        rkl_pod_network **a = NULL;
        size_t n = 0;

        if (!r->net)
                return;
        if (r->store && rkl_db_pod_network_list(rkl_store_db(r->store), &a, &n, &err) < 0)
                rkl_log_error("cannot read the sandboxes' networks: %s: those recorded are "
                              "released when their sandbox is",
                              err.msg);
        for (size_t i = 0; i < n; i++) {
                rkl_pod_network *rec = a[i];
                if (rec->state == RKL_POD_NETWORK_READY)
                        rkl_hashmap_put(r->net->unchecked, rec->sandbox_id, rec);
                rkl_hashmap_put(r->net->records, rec->sandbox_id, rec);
        }
        free(a);
        /* Without the event loop (a test's passes: rkl_reconciler_run_pass()), the
         * configuration is read once and not watched. */
        if (r->event)
                watch_conf_dir(r);
        config_load(r);
}

void rkl_network_stop(rkl_network *n)
{
        if (!n)
                return;
        n->source = sd_event_source_unref(n->source);
        n->inotify_fd = safe_close(n->inotify_fd);
}

rkl_network *rkl_network_free(rkl_network *n)
{
        if (!n)
                return NULL;
        rkl_network_stop(n);
        rkl_hashmap_free_values(n->records, record_free);
        rkl_backoff_free(n->retries);
        rkl_hashmap_free(n->unchecked);
        rkl_cni_config_free(n->config);
        free(n->why);
        free(n);
        return NULL;
}

/* ---- Sandboxes ---- */

static bool needs_network(rkl_reconciler *r, const rkl_pod_record *rec)
{
        return r->net && !rec->spec.host_network;
}

const char *rkl_network_unavailable(rkl_reconciler *r, const rkl_pod_record *rec)
{
        if (!needs_network(r, rec) || r->net->config)
                return NULL;
        return r->net->why;
}

bool rkl_network_ready(rkl_reconciler *r, const rkl_pod_record *rec)
{
        if (!needs_network(r, rec))
                return true;
        const rkl_pod_network *n = record_get(r, rec->id);
        return n && n->state == RKL_POD_NETWORK_READY && rec->rkt_uuid &&
               streq_ptr(n->rkt_uuid, rec->rkt_uuid);
}

static void submit(rkl_reconciler *r, act_kind kind, const rkl_pod_network *n)
{
        action *a = rkl_action_new(r, kind, n->sandbox_id, n->rkt_uuid ? n->rkt_uuid : "", NULL);
        a->net = record_copy(n);
        a->is_pod = true;
        rkl_action_submit(r, a);
}

bool rkl_network_step_pending(rkl_reconciler *r, const rkl_pod_record *rec, const rkl_poddir_pod *p)
{
        if (!needs_network(r, rec) || !rec->rkt_uuid || !p || p->state != RKL_POD_STATE_RUNNING ||
            !p->netns || record_get(r, rec->id) || !rkl_action_can_start_net(r, rec->id))
                return false; /* done, on its way, not possible yet, or an earlier DEL first */
        rkl_network *net = r->net;
        if (!net->config) {
                /* The configuration went after the unit started: this attempt fails. */
                rkl_pods_network_failed(r, rec, net->why);
                return true;
        }

        uint64_t ingress = 0, egress = 0;
        (void)rkl_pod_bandwidth(&rec->spec.annotations, &ingress, &egress, NULL);
        rkl_cni_pod pod = {
            .sandbox_id = rec->id,
            .netns = p->netns,
            .namespace = rec->spec.namespace,
            .name = rec->spec.name,
            .uid = rec->spec.uid,
            .ports = rec->spec.ports,
            .n_ports = rec->spec.n_ports,
            .dns_servers = rec->spec.dns_servers,
            .dns_searches = rec->spec.dns_searches,
            .dns_options = rec->spec.dns_options,
            .ingress_bps = ingress,
            .egress_bps = egress,
        };
        rkl_cni_runtime rt;
        rkl_cni_runtime_for_pod(&pod, &rt);
        int64_t now = rkl_reconciler__now(r);
        rkl_pod_network *n = rkl_xnew0(rkl_pod_network, 1);
        *n = (rkl_pod_network){
            .rkt_uuid = rkl_xstrdup(rec->rkt_uuid),
            .state = RKL_POD_NETWORK_ADDING,
            .network = rkl_xstrdup(rkl_cni_config_name(net->config)),
            .config = rkl_xstrdup(rkl_cni_config_json(net->config)),
            .netns = TAKE_PTR(rt.netns),
            .ifname = TAKE_PTR(rt.ifname),
            .args = TAKE_PTR(rt.args),
            .capabilities = TAKE_PTR(rt.capabilities),
            .created_ns = now,
        };
        memcpy(n->sandbox_id, rec->id, sizeof(n->sandbox_id));
        rkl_cni_runtime_done(&rt);
        /* Recorded before the plugins run: from here on a DEL is owed, crash or not. */
        if (record_put(r, n) < 0)
                return false;
        rkl_crash_point("net-recorded");
        rkl_observing_pod_step(r, rec, RKL_POD_STEP_NET_ADD_BEGUN);
        submit(r, ACT_NET_ADD, n);
        return false;
}

void rkl_network_step_running(rkl_reconciler *r, const rkl_pod_record *rec, const rkl_poddir_pod *p)
{
        const rkl_pod_network *n = record_get(r, rec->id);
        if (!n || !rkl_hashmap_get(r->net->unchecked, rec->id) ||
            !streq_ptr(n->rkt_uuid, p->uuid) || !rkl_action_can_start_net(r, rec->id))
                return;
        rkl_hashmap_remove(r->net->unchecked, rec->id);
        submit(r, ACT_NET_CHECK, n);
}

bool rkl_network_holds_pod(rkl_reconciler *r, const rkl_pod_record *rec)
{
        if (!record_get(r, rec->id))
                return false;
        return rkl_backoff_attempts(r->net->retries, rec->id) < DEL_HOLDS_POD;
}

/* Whether the recorded network n is one its sandbox still wants. */
static bool wanted(rkl_reconciler *r, const rkl_pod_network *n)
{
        if (rkl_action_in_flight(r, n->sandbox_id))
                return true; /* its ADD, CHECK or DEL, or the pod's own verb, runs: later */
        _cleanup_(rkl_pod_view_unrefp) rkl_pod_view *v = rkl_cache_pod_get(r->cache, n->sandbox_id);
        if (!v)
                return false; /* removed */
        const rkl_pod_record *rec = v->rec;
        if (!streq_ptr(rec->rkt_uuid, n->rkt_uuid))
                return false; /* an earlier attempt's */
        if (n->state == RKL_POD_NETWORK_ADDING)
                return false; /* an ADD that may not have finished: undone, then done again */
        if (rec->desired == RKL_POD_DESIRED_STOPPED) {
                /* Released once the pod is down, before rkt removes the namespace. */
                const rkl_poddir_pod *p = rkl_observing_pod(r, n->rkt_uuid);
                return p && p->state == RKL_POD_STATE_RUNNING;
        }
        return true;
}

void rkl_network_reap(rkl_reconciler *r, int64_t now)
{
        if (!r->net)
                return;
        size_t i = 0;
        void *v;
        while (rkl_hashmap_iterate(r->net->records, &i, NULL, &v)) {
                const rkl_pod_network *n = v;
                if (wanted(r, n))
                        continue;
                int64_t next;
                if (rkl_backoff_waits(r->net->retries, n->sandbox_id, now, &next)) {
                        rkl_reconciler__wake_at(r, next);
                        continue;
                }
                if (!rkl_action_can_start_net(r, n->sandbox_id))
                        continue;
                submit(r, ACT_NET_DEL, n);
        }
}

/* ---- The plugins' runs ---- */

int rkl_network_run(action *a)
{
        rkl_reconciler *r = a->r;
        const rkl_pod_network *n = a->net;
        _cleanup_(rkl_cni_config_freep) rkl_cni_config *c = NULL;
        rkl_error err = RKL_ERROR_INIT;
        int k;

        /* The configuration as recorded: a DEL runs what its ADD ran. */
        k = rkl_cni_config_parse(n->config, strlen(n->config), "the recorded configuration", &c,
                                 &err);
        if (k < 0)
                goto fail;
        rkl_cni_runtime rt = {
            .container_id = (char *)n->sandbox_id,
            .netns = n->netns,
            .ifname = n->ifname,
            .args = n->args,
            .capabilities = n->capabilities,
        };
        switch (a->kind) {
        case ACT_NET_ADD:
                k = RKL_OPS(r, cni_add, c, &r->net->exec, &rt, &a->net_result, &err);
                if (k < 0) {
                        /* Undone at once, while the namespace is surely there. */
                        rkl_error e2 = RKL_ERROR_INIT;
                        if (RKL_OPS(r, cni_del, c, &r->net->exec, &rt, NULL, &e2) >= 0)
                                a->force = true; /* the record may go */
                        else
                                rkl_log_debug("sandbox %.12s: DEL after the failed ADD: %s", a->key,
                                              e2.msg);
                }
                break;
        case ACT_NET_CHECK:
                k = RKL_OPS(r, cni_check, c, &r->net->exec, &rt, n->result, &err);
                break;
        default:
                k = RKL_OPS(r, cni_del, c, &r->net->exec, &rt, n->result, &err);
                if (k > 0) /* plugins not installed, skipped: said in apply_del() */
                        (void)snprintf(a->error, sizeof(a->error), "%s", err.msg);
                break;
        }
        if (k >= 0)
                return k;
fail:
        (void)snprintf(a->error, sizeof(a->error), "%s", err.msg);
        return k;
}

/* The addresses of ADD's result become the sandbox's. */
static void addresses_set(rkl_reconciler *r, const rkl_pod_record *rec, const char *result)
{
        rkl_error err = RKL_ERROR_INIT;
        _cleanup_strv_free_ char **ips = NULL;
        if (rkl_cni_result_ips(result, &ips, &err) < 0 || !ips) {
                rkl_log_object_warning(POD_OBJECT(rec),
                                       "sandbox %.12s: the network's result gives no address%s%s",
                                       rec->id, ips ? "" : ": ", ips ? "" : err.msg);
                return;
        }
        rkl_pod_observed o;
        rkl_pod_observed_copy(&o, &rec->observed);
        free(o.ip);
        rkl_strv_free(o.additional_ips);
        o.ip = rkl_xstrdup(ips[0]);
        o.additional_ips = ips[1] ? rkl_strv_copy(ips + 1) : NULL;
        rkl_observing_set_pod(r, rec, &o);
        rkl_pod_observed_done(&o);
}

static void apply_add(rkl_reconciler *r, action *a, const rkl_pod_record *rec)
{
        if (a->result < 0) {
                /* Undone by the action's own DEL: nothing is owed. Otherwise the record
                 * stays, "adding", and the reaper's DEL follows. */
                if (a->force)
                        (void)record_forget(r, a->key);
                if (rec)
                        rkl_pods_network_failed(r, rec, a->error);
                return;
        }
        rkl_pod_network *n = record_copy(a->net);
        n->state = RKL_POD_NETWORK_READY;
        n->result = TAKE_PTR(a->net_result);
        /* The result is in the store before the sandbox can count as running. */
        if (record_put(r, n) < 0)
                return; /* still "adding": the reaper undoes it, and the pass adds again */
        rkl_crash_point("net-added");
        if (rec && streq_ptr(rec->rkt_uuid, a->net->rkt_uuid)) {
                const rkl_pod_network *kept = record_get(r, a->key);
                rkl_observing_pod_step(r, rec, RKL_POD_STEP_NET_ADD_DONE);
                rkl_log_object_info(POD_OBJECT(rec), "sandbox %.12s: network '%s' added", rec->id,
                                    kept->network);
                addresses_set(r, rec, kept->result);
        }
}

static void apply_check(rkl_reconciler *r, action *a, const rkl_pod_record *rec)
{
        const rkl_pod_network *cur = record_get(r, a->key);
        if (a->result == -EOPNOTSUPP || !cur)
                return;
        /* A failed CHECK is recorded and told, not acted on: plugins' CHECK can fail where
         * the network works (Debian's plugins 1.1.1: portmap's for every pod without IPv6
         * while ip6tables works, bandwidth's crashes without limits to check), and a working
         * pod is not to be killed on a false alarm. */
        const char *msg = a->result < 0 ? a->error : NULL;
        if (a->result < 0)
                rkl_log_object_full(LOG_NOTICE, NET_OBJECT(a->key, rec),
                                    "sandbox %.12s: network CHECK failed (the pod goes on): %s",
                                    a->key, msg);
        else
                rkl_log_object_full(LOG_INFO, NET_OBJECT(a->key, rec),
                                    "sandbox %.12s: network CHECK passed", a->key);
        if (streq_ptr(cur->check_error, msg))
                return;
        rkl_pod_network *n = record_copy(cur);
        free(n->check_error);
        n->check_error = rkl_xstrdup(msg);
        (void)record_put(r, n);
}

static void apply_del(rkl_reconciler *r, action *a, const rkl_pod_record *rec)
{
        if (a->result >= 0) {
                /* Plugins gone since an ADD that went through them leave what they held. */
                if (a->result > 0 && a->net->state == RKL_POD_NETWORK_READY)
                        rkl_log_object_warning(NET_OBJECT(a->key, rec),
                                               "sandbox %.12s: network '%s' DEL: plugins %s: "
                                               "what they set up for it stays",
                                               a->key, a->net->network, a->error);
                if (record_forget(r, a->key) == 0)
                        rkl_log_object_info(NET_OBJECT(a->key, rec),
                                            "sandbox %.12s: network '%s' deleted", a->key,
                                            a->net->network);
                return;
        }
        const rkl_backoff_entry *d =
            rkl_backoff_failed(r->net->retries, a->key, rkl_reconciler__now(r));
        rkl_reconciler__wake_at(r, d->next_ns);
        rkl_log_object_warning(NET_OBJECT(a->key, rec),
                               "sandbox %.12s: network DEL failed (attempt %u, again later): %s",
                               a->key, d->attempts, a->error);
}

void rkl_network_apply(rkl_reconciler *r, action *a)
{
        _cleanup_(rkl_pod_view_unrefp) rkl_pod_view *v = rkl_cache_pod_get(r->cache, a->key);
        const rkl_pod_record *rec = v ? v->rec : NULL;

        rkl_log_debug("sandbox %.12s: network %s: %s", a->key, verb_names[a->kind],
                      a->result < 0 ? a->error : "done");
        if (!r->net)
                return;
        switch (a->kind) {
        case ACT_NET_ADD:
                apply_add(r, a, rec);
                break;
        case ACT_NET_CHECK:
                apply_check(r, a, rec);
                break;
        default:
                apply_del(r, a, rec);
                break;
        }
}
