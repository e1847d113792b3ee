#include "container.h"

#include "convert.h"
#include "pb.h"
#include "logs.h"
#include "lookup.h"
#include "views.h"
#include "wait.h"
#include "base/json.h"
#include "base/alloc.h"
#include "base/log.h"
#include "base/time-util.h"
#include "base/utf8.h"
#include "store/cache.h"
#include "images/images.h"
#include "rkt/command.h"
#include "store/store.h"
#include "base/banned.h"

_Static_assert((int)RKL_CONTAINER_CREATED == RUNTIME__V1__CONTAINER_STATE__CONTAINER_CREATED &&
                   (int)RKL_CONTAINER_RUNNING == RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING &&
                   (int)RKL_CONTAINER_EXITED == RUNTIME__V1__CONTAINER_STATE__CONTAINER_EXITED &&
                   (int)RKL_CONTAINER_UNKNOWN == RUNTIME__V1__CONTAINER_STATE__CONTAINER_UNKNOWN,
               "container states");

/* A StopContainer timeout beyond this is as good as never (and cannot overflow). */
#define MAX_STOP_TIMEOUT_SEC (10LL * 365 * 24 * 3600)

int rkl_api_create_container(rkl_api_ctx *ctx, const Runtime__V1__CreateContainerRequest *req,
                             Runtime__V1__CreateContainerResponse *resp, rkl_error *reterr)
{
        _cleanup_(rkl_container_spec_done) rkl_container_spec spec = {0};
        _cleanup_(rkl_pod_view_unrefp) rkl_pod_view *pod = NULL;
        _cleanup_free_ char *app = NULL;
        char id[RKL_ID_LEN + 1];
        int r;

        r = rkl_api_container_spec_from_pb(req->config, &spec, reterr);
        if (r < 0)
                return r;
        r = rkl_api_pod_lookup(ctx, "pod_sandbox_id", req->pod_sandbox_id, &pod, reterr);
        if (r < 0)
                return r;
        const Runtime__V1__LinuxContainerConfig *linux_ = req->config->linux;
        if (linux_ && linux_->security_context && linux_->security_context->namespace_options &&
            linux_->security_context->namespace_options->network ==
                RUNTIME__V1__NAMESPACE_MODE__NODE &&
            !pod->rec->spec.host_network)
                return rkl_error_set(reterr, -EINVAL,
                                     "config.linux.security_context.namespace_options.network: "
                                     "NODE, but sandbox %s is not on the host's network: a rkt "
                                     "app has its pod's network namespace only",
                                     pod->rec->id);
        r = rkl_api_log_path_check(ctx, pod->rec->spec.log_directory, spec.log_path, reterr);
        if (r < 0)
                return rkl_error_prefix(reterr, "config");
        r = rkl_rkt_container_spec_check(&spec, reterr);
        if (r < 0)
                return rkl_error_prefix(reterr, "config");
        /* Like containerd: a container joins a sandbox that is ready, not one that was
         * stopped or whose pod failed for good (kubelet makes a new sandbox then). */
        if (pod->state != RKL_POD_READY)
                return rkl_error_set(reterr, -EBADFD,
                                     "sandbox %s is not ready (%s, %s): cannot add a container",
                                     pod->rec->id, rkl_pod_desired_to_string(pod->rec->desired),
                                     rkl_pod_phase_to_string(pod->rec->observed.phase));

        /* The image is pinned at create, as containerd does: image_ref is its ID from now on,
         * and a tag that moves later does not change what this container runs. */
        _cleanup_free_ char *image_id = NULL;
        if (ctx->images && rkl_images_resolve(ctx->images, spec.image, &image_id) < 0)
                image_id = NULL; /* fetched behind rktlet's back: the reconciler looks it up */

        rkl_id_new(id);
        app = rkl_container_app_name(id);
        rkl_log_debug("container %s (%s) for sandbox %s", id, spec.name, pod->rec->id);
        r = rkl_store_container_create(ctx->store, id, pod->rec->id, app, image_id, &spec,
                                       reterr); /* spec moved in on success */
        if (r == -EEXIST)
                return rkl_error_set(reterr, -EEXIST,
                                     "config.metadata: a container named '%s' with attempt %u "
                                     "already exists in sandbox %s",
                                     spec.name, spec.attempt, pod->rec->id);
        if (r == -ENOENT)
                return rkl_error_set(reterr, -ENOENT, "sandbox %s not found", pod->rec->id);
        if (r < 0)
                return r;
        rkl_api_kick(ctx);
        resp->container_id = rkl_arena_strdup(ctx->arena, id);
        return 0;
}

int rkl_api_start_container(rkl_api_ctx *ctx, const Runtime__V1__StartContainerRequest *req,
                            Runtime__V1__StartContainerResponse *resp, rkl_error *reterr)
{
        char id[RKL_ID_LEN + 1];

        int r = rkl_api_container_resolve(ctx, "container_id", req->container_id, id, reterr);
        if (r < 0)
                return r;
        /* The log file is there from the start on (kubelet may read it at once). */
        {
                _cleanup_(rkl_container_view_unrefp) rkl_container_view *v =
                    rkl_cache_container_get(ctx->cache, id);
                if (v && v->state == RKL_CONTAINER_CREATED &&
                    (r = rkl_api_log_file_make(ctx, v, reterr)) < 0)
                        return r;
        }
        /* The store, not the cache, decides, in the transaction that writes: the checks
         * are about what was committed. */
        r = rkl_store_container_start(ctx->store, id, reterr);
        if (r == -ENOENT)
                return rkl_error_set(reterr, -ENOENT, "container %s not found", id);
        if (r < 0)
                return r;
        if (r > 0) /* 0: a repeated start, already asked for */
                rkl_api_kick(ctx);
        return rkl_api_wait(ctx, RKL_API_WAIT_CONTAINER_STARTED, id, 0);
}

int rkl_api_stop_container(rkl_api_ctx *ctx, const Runtime__V1__StopContainerRequest *req,
                           Runtime__V1__StopContainerResponse *resp, rkl_error *reterr)
{
        char id[RKL_ID_LEN + 1];

        /* CRI: stopping a container that is gone succeeds. */
        int r = rkl_api_unless_gone(
            rkl_api_container_resolve(ctx, "container_id", req->container_id, id, reterr), reterr);
        if (r <= 0)
                return r;
        /* SIGTERM now, SIGKILL at the deadline: timeout 0 (or less) means kill at once. */
        int64_t timeout = req->timeout < 0 ? 0 : req->timeout;
        if (timeout > MAX_STOP_TIMEOUT_SEC)
                timeout = MAX_STOP_TIMEOUT_SEC;
        int64_t deadline = rkl_realtime_ns() + timeout * (int64_t)NSEC_PER_SEC;

        r = rkl_api_unless_gone(rkl_store_container_stop(ctx->store, id, deadline, reterr), reterr);
        if (r <= 0)
                return r;
        rkl_api_kick(ctx);
        return rkl_api_wait(ctx, RKL_API_WAIT_CONTAINER_STOPPED, id,
                            (uint64_t)timeout * USEC_PER_SEC);
}

int rkl_api_remove_container(rkl_api_ctx *ctx, const Runtime__V1__RemoveContainerRequest *req,
                             Runtime__V1__RemoveContainerResponse *resp, rkl_error *reterr)
{
        char id[RKL_ID_LEN + 1];

        /* CRI: removing a container that is gone succeeds. */
        int r = rkl_api_unless_gone(
            rkl_api_container_resolve(ctx, "container_id", req->container_id, id, reterr), reterr);
        if (r <= 0)
                return r;
        /* A running app is stopped and removed by the reconciler: the store no longer
         * wants it. */
        r = rkl_store_container_delete(ctx->store, id, reterr);
        if (r < 0 && r != -ENOENT)
                return r;
        rkl_error_clear(reterr);
        rkl_api_kick(ctx);
        return 0;
}

/* The image as rkt ran it once known, else as the client named it. */
static char *image_ref(rkl_arena *a, const rkl_container_record *c, char *image)
{
        return isempty(c->observed.image_ref) ? image : rkl_api_pb_text(a, c->observed.image_ref);
}

/* CRI's reason of an exited container that rkt's exit gave none: containerd's and CRI-O's
 * words, which kubelet shows as they are (it derives none itself). */
static const char *exit_reason(const rkl_container_view *v)
{
        const rkl_container_observed *o = &v->rec->observed;
        if (o->reason || v->state != RKL_CONTAINER_EXITED)
                return o->reason;
        return o->has_exit_code && o->exit_code == 0 ? "Completed" : "Error";
}

static int64_t created_at(const rkl_container_record *c)
{
        return c->observed.created_ns > 0 ? c->observed.created_ns : c->book.accepted_ns;
}

static Runtime__V1__ContainerMetadata *metadata_pb(rkl_arena *a, Runtime__V1__ContainerMetadata *m,
                                                   const rkl_container_spec *s)
{
        *m = (Runtime__V1__ContainerMetadata)RUNTIME__V1__CONTAINER_METADATA__INIT;
        m->name = rkl_api_pb_str(a, s->name);
        m->attempt = s->attempt;
        return m;
}

/* The image by the name the pod's spec gives it when the client said: kubelet shows this
 * one as the container's image, and names the image by its ID in CreateContainer. */
static Runtime__V1__ImageSpec *image_pb(rkl_arena *a, const rkl_container_spec *s)
{
        Runtime__V1__ImageSpec *img = rkl_arena_newa(Runtime__V1__ImageSpec, a, 1);
        *img = (Runtime__V1__ImageSpec)RUNTIME__V1__IMAGE_SPEC__INIT;
        img->image = img->user_specified_image =
            rkl_api_pb_str(a, rkl_container_spec_image_name(s));
        return img;
}

/* What the reconciler knows and kubelet's fields cannot say: for people debugging. The
 * environment is left out: it often carries secrets. */
static json_object *container_info(const rkl_container_view *v)
{
        const rkl_container_record *c = v->rec;
        const rkl_container_observed *o = &c->observed;
        json_object *j = json_object_new_object();

        json_object_object_add(j, "id", json_object_new_string(c->id));
        json_object_object_add(j, "sandboxId", json_object_new_string(c->sandbox_id));
        json_object_object_add(j, "desired",
                               rkl_api_json_str(rkl_container_desired_to_string(c->desired)));
        json_object_object_add(j, "phase",
                               rkl_api_json_str(rkl_container_phase_to_string(o->phase)));
        json_object_object_add(j, "appName", rkl_api_json_str(c->app_name));
        json_object_object_add(j, "pid", o->pid > 0 ? json_object_new_int64(o->pid) : NULL);
        json_object_object_add(j, "exitCode",
                               o->has_exit_code ? json_object_new_int(o->exit_code) : NULL);
        json_object_object_add(j, "reason", rkl_api_json_str(o->reason));
        json_object_object_add(j, "message", rkl_api_json_str(o->message));
        json_object_object_add(j, "image", rkl_api_json_str(c->spec.image));
        json_object_object_add(j, "imageRef", rkl_api_json_str(o->image_ref));
        json_object_object_add(j, "command", rkl_json_new_strv(c->spec.command));
        json_object_object_add(j, "args", rkl_json_new_strv(c->spec.args));
        json_object_object_add(j, "logPath", rkl_api_json_str(v->log_path));
        json_object_object_add(j, "createdAt", rkl_api_json_ns(o->created_ns));
        json_object_object_add(j, "startedAt", rkl_api_json_ns(o->started_ns));
        json_object_object_add(j, "finishedAt", rkl_api_json_ns(o->finished_ns));
        json_object_object_add(j, "stopDeadline", rkl_api_json_ns(c->stop_deadline_ns));
        rkl_api_json_book(j, &c->book, &o->timeline, false);
        return j;
}

Runtime__V1__ContainerStatus *rkl_api_container_status_pb(rkl_arena *a, const rkl_container_view *v)
{
        const rkl_container_record *c = v->rec;
        const rkl_container_observed *o = &c->observed;

        Runtime__V1__ContainerStatus *st = rkl_arena_newa(Runtime__V1__ContainerStatus, a, 1);
        runtime__v1__container_status__init(st);
        st->id = rkl_api_pb_str(a, c->id);
        st->metadata =
            metadata_pb(a, rkl_arena_newa(Runtime__V1__ContainerMetadata, a, 1), &c->spec);
        st->state = (Runtime__V1__ContainerState)v->state;
        st->created_at = created_at(c);
        st->started_at = o->started_ns;
        st->finished_at = o->finished_ns;
        st->exit_code = o->has_exit_code ? o->exit_code : 0;
        char *image = rkl_api_pb_str(a, c->spec.image);
        st->image = image_pb(a, &c->spec);
        st->image_ref = st->image_id = image_ref(a, c, image);
        st->reason = rkl_api_pb_text(a, exit_reason(v));
        st->message = rkl_api_pb_text(a, o->message);
        if (o->phase == RKL_CONTAINER_PHASE_CREATED && !o->reason && c->book.last_error) {
                /* Still created because rkt keeps failing: say why, before it gives up. */
                st->reason = rkl_api_pb_str(a, RKL_CONTAINER_START_ERROR);
                st->message = rkl_arena_printf(a, "attempt %u failed, retrying: %s",
                                               c->book.attempts, c->book.last_error);
        }
        RKL_API_PB_KVS(a, &c->spec.labels, Runtime__V1__ContainerStatus__LabelsEntry,
                       RUNTIME__V1__CONTAINER_STATUS__LABELS_ENTRY__INIT, st->labels, st->n_labels);
        RKL_API_PB_KVS(a, &c->spec.annotations, Runtime__V1__ContainerStatus__AnnotationsEntry,
                       RUNTIME__V1__CONTAINER_STATUS__ANNOTATIONS_ENTRY__INIT, st->annotations,
                       st->n_annotations);

        Runtime__V1__Mount *mounts = rkl_arena_newa(Runtime__V1__Mount, a, c->spec.n_mounts);
        st->mounts = rkl_arena_newa(Runtime__V1__Mount *, a, c->spec.n_mounts);
        for (size_t i = 0; i < c->spec.n_mounts; i++) {
                const rkl_mount *m = &c->spec.mounts[i];
                Runtime__V1__Mount *pm = &mounts[i];
                *pm = (Runtime__V1__Mount)RUNTIME__V1__MOUNT__INIT;
                pm->container_path = rkl_api_pb_str(a, m->container_path);
                pm->host_path = rkl_api_pb_str(a, m->host_path);
                pm->readonly = m->readonly;
                pm->selinux_relabel = m->selinux_relabel;
                pm->propagation = (Runtime__V1__MountPropagation)m->propagation;
                st->mounts[st->n_mounts++] = pm;
        }
        /* kubelet and critest open it directly: the full host path. */
        st->log_path = rkl_api_pb_str(a, v->log_path);
        return st;
}

int rkl_api_container_status(rkl_api_ctx *ctx, const Runtime__V1__ContainerStatusRequest *req,
                             Runtime__V1__ContainerStatusResponse *resp, rkl_error *reterr)
{
        _cleanup_(rkl_container_view_unrefp) rkl_container_view *v = NULL;
        rkl_arena *a = ctx->arena;

        int r = rkl_api_container_lookup(ctx, "container_id", req->container_id, &v, reterr);
        if (r < 0)
                return r;
        resp->status = rkl_api_container_status_pb(a, v);

        if (req->verbose)
                RKL_API_PB_SET_INFO(a, resp, Runtime__V1__ContainerStatusResponse__InfoEntry,
                                    runtime__v1__container_status_response__info_entry__init,
                                    container_info(v));
        return 0;
}

/* The container (an rkl_container_view) as a ListContainers item, at a trim level
 * (pb.h; 0: whole), in a: its strings point into the view or into a. */
static const ProtobufCMessage *container_item(rkl_arena *a, const void *view, unsigned level)
{
        const rkl_container_view *v = view;
        const rkl_container_record *c = v->rec;
        Runtime__V1__Container *p = rkl_arena_newa(Runtime__V1__Container, a, 1);
        Runtime__V1__ContainerMetadata *m = rkl_arena_newa(Runtime__V1__ContainerMetadata, a, 1);
        *p = (Runtime__V1__Container)RUNTIME__V1__CONTAINER__INIT;
        *m = (Runtime__V1__ContainerMetadata)RUNTIME__V1__CONTAINER_METADATA__INIT;
        p->id = (char *)c->id;
        p->pod_sandbox_id = (char *)c->sandbox_id;
        m->name = (char *)c->spec.name;
        m->attempt = c->spec.attempt;
        p->metadata = m;
        p->image = image_pb(a, &c->spec);
        p->image_ref = p->image_id = isempty(c->observed.image_ref)
                                         ? (char *)c->spec.image
                                         : rkl_api_pb_text(a, c->observed.image_ref);
        p->state = (Runtime__V1__ContainerState)v->state;
        p->created_at = created_at(c);
        RKL_API_PB_KVS(a, rkl_api_trim_labels(a, &c->spec.labels, level),
                       Runtime__V1__Container__LabelsEntry,
                       RUNTIME__V1__CONTAINER__LABELS_ENTRY__INIT, p->labels, p->n_labels);
        RKL_API_PB_KVS(a, rkl_api_trim_annotations(a, &c->spec.annotations, level),
                       Runtime__V1__Container__AnnotationsEntry,
                       RUNTIME__V1__CONTAINER__ANNOTATIONS_ENTRY__INIT, p->annotations,
                       p->n_annotations);
        return &p->base;
}

static _Atomic uint64_t containers_warned;

static const rkl_api_views_kind containers = {
    .pods = false,
    .method = "ListContainers",
    .noun = "containers",
    .list_field = 1,   /* ListContainersResponse.containers */
    .stream_field = 1, /* StreamContainersResponse.containers */
    .item = container_item,
    .last_warned = &containers_warned,
};

/* The cache's filter of a List or Stream request's (cf may be NULL): the selector's
 * strings stay the request's. */
static void container_filter(rkl_arena *a, const Runtime__V1__ContainerFilter *cf,
                             rkl_view_filter *f, rkl_kvs *selector)
{
        RKL_API_VIEW_FILTER_FROM_PB(a, cf, f, selector);
        if (cf)
                f->sandbox_id = cf->pod_sandbox_id;
}

int rkl_api_list_containers(rkl_api_ctx *ctx, const Runtime__V1__ListContainersRequest *req,
                            Runtime__V1__ListContainersResponse *resp, rkl_error *reterr)
{
        rkl_view_filter f;
        rkl_kvs selector;

        container_filter(ctx->arena, req->filter, &f, &selector);
        return rkl_api_views_list(ctx, &containers, &f, reterr);
}

int rkl_api_stream_containers(rkl_api_ctx *ctx, const Runtime__V1__StreamContainersRequest *req,
                              Runtime__V1__StreamContainersResponse *resp, rkl_error *reterr)
{
        rkl_view_filter f;
        rkl_kvs selector;

        /* The containers as ListContainers takes them, items as it encodes them. */
        container_filter(ctx->arena, req->filter, &f, &selector);
        return rkl_api_views_stream(ctx, &containers, &f, reterr);
}
