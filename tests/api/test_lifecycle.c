/* Sandbox and container handlers called as plain functions over a real store (a database
 * in a temporary file and a cache), without a reconciler: what the API guarantees on its
 * own. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "api/api.h"
#include "api/container.h"
#include "api/lookup.h"
#include "api/sandbox.h"
#include "api/stats.h"
#include "api/status.h"
#include "base/alloc.h"
#include "base/config.h"
#include "base/fileio.h"
#include "base/time-util.h"
#include "base/utf8.h"
#include "store/cache.h"
#include "store/store.h"
#include "store/db.h"

typedef struct fixture {
        char dir[64], db_path[96];
        char *state, *logs; /* the daemon's state directory; where pods' logs go */
        rkl_config options;
        rkl_api_config cfg;
        rkl_cache *cache;
        rkl_store *store;
        rkl_db *db; /* the store's: what the reconciler would write directly */
        rkl_arena *arena;
        rkl_api_ctx ctx;
} fixture;

/* A new cache and state over the fixture's database, loaded from it: a restart. */
static void state_open(fixture *f)
{
        rkl_error err = RKL_ERROR_INIT;
        rkl_db *db = NULL;
        f->cache = rkl_cache_new();
        assert_int_equal(rkl_db_open(f->db_path, NULL, &db, &err), 0);
        f->store = rkl_store_new(db, f->cache);
        f->db = db;
        assert_int_equal(rkl_store_load(f->store, NULL, NULL, &err), 0);
        f->ctx.cache = f->cache;
        f->ctx.store = f->store;
}

static void state_close(fixture *f)
{
        f->store = rkl_store_free(f->store);
        f->cache = rkl_cache_free(f->cache);
}

static int setup(void **state)
{
        fixture *f = rkl_xnew0(fixture, 1);
        (void)snprintf(f->dir, sizeof(f->dir), "/tmp/rkl-test-lifecycle-XXXXXX");
        assert_non_null(mkdtemp(f->dir));
        (void)snprintf(f->db_path, sizeof(f->db_path), "%s/rktlet.db", f->dir);
        f->arena = rkl_arena_new();
        f->state = rkl_xasprintf("%s/state", f->dir);
        f->logs = rkl_xasprintf("%s/logs", f->dir);
        f->options = (rkl_config){.state_dir = f->state};
        f->cfg = (rkl_api_config){.config = &f->options, .version = "9.9.9"};
        f->ctx = (rkl_api_ctx){.cfg = &f->cfg, .arena = f->arena};
        state_open(f);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        fixture *f = *state;
        state_close(f);
        assert_int_equal(rkl_rm_rf_at(AT_FDCWD, f->dir), 0);
        free(f->state);
        free(f->logs);
        rkl_arena_free(f->arena);
        free(f);
        return 0;
}

/* Every reply must pack and unpack: a NULL where protobuf-c wants a string would not. */
static void packs(const void *msg)
{
        const ProtobufCMessage *m = msg;
        size_t n = protobuf_c_message_get_packed_size(m);
        uint8_t *buf = rkl_xmalloc(n + 1);
        assert_int_equal(protobuf_c_message_pack(m, buf), n);
        ProtobufCMessage *u = protobuf_c_message_unpack(m->descriptor, NULL, n, buf);
        assert_non_null(u);
        protobuf_c_message_free_unpacked(u, NULL);
        free(buf);
}

#define expect_error(expr, code, grpc_code, needle)                                                \
        do {                                                                                       \
                rkl_error_clear(&err);                                                             \
                int _r = (expr);                                                                   \
                if (_r != (code))                                                                  \
                        fail_msg("%s: got %d (%s), wanted %d", #expr, _r, err.msg, (code));        \
                assert_int_equal(rkl_api_status_from_errno(_r), (grpc_code));                      \
                if (!strstr(err.msg, (needle)))                                                    \
                        fail_msg("expected '%s' in '%s'", (needle), err.msg);                      \
        } while (0)

#define expect_ok(expr)                                                                            \
        do {                                                                                       \
                rkl_error_clear(&err);                                                             \
                int _r = (expr);                                                                   \
                if (_r != 0)                                                                       \
                        fail_msg("%s: %d (%s)", #expr, _r, err.msg);                               \
        } while (0)

/* Map entries from NULL-terminated key, value pairs, in the arena. */
#define ENTRIES(a, Entry, INIT, pairs, ret, ret_n)                                                 \
        do {                                                                                       \
                size_t _n = 0;                                                                     \
                while ((pairs) && (pairs)[2 * _n])                                                 \
                        _n++;                                                                      \
                Entry **_p = rkl_arena_newa(Entry *, (a), _n);                                     \
                for (size_t _i = 0; _i < _n; _i++) {                                               \
                        _p[_i] = rkl_arena_newa(Entry, (a), 1);                                    \
                        *_p[_i] = (Entry)INIT;                                                     \
                        _p[_i]->key = (char *)(pairs)[2 * _i];                                     \
                        _p[_i]->value = (char *)(pairs)[2 * _i + 1];                               \
                }                                                                                  \
                (ret) = _p;                                                                        \
                (ret_n) = _n;                                                                      \
        } while (0)

typedef struct podcfg {
        const char *name, *uid, *ns;
        uint32_t attempt;
        const char *const *labels; /* key, value, ..., NULL */
        const char *const *annotations;
        const char *log_directory;
        bool host_network;
} podcfg;

/* p as a PodSandboxConfig; its log directory, when p names none, below logs. */
static Runtime__V1__PodSandboxConfig *pod_config(rkl_arena *a, const char *logs, const podcfg *p)
{
        Runtime__V1__PodSandboxConfig *c = rkl_arena_newa(Runtime__V1__PodSandboxConfig, a, 1);
        runtime__v1__pod_sandbox_config__init(c);
        Runtime__V1__PodSandboxMetadata *m = rkl_arena_newa(Runtime__V1__PodSandboxMetadata, a, 1);
        runtime__v1__pod_sandbox_metadata__init(m);
        m->name = (char *)(p->name ? p->name : "web");
        m->uid = (char *)(p->uid ? p->uid : "uid-1");
        m->namespace_ = (char *)(p->ns ? p->ns : "default");
        m->attempt = p->attempt;
        c->metadata = m;
        c->log_directory = p->log_directory ? (char *)p->log_directory
                                            : rkl_arena_printf(a, "%s/default_web_uid-1", logs);
        ENTRIES(a, Runtime__V1__PodSandboxConfig__LabelsEntry,
                RUNTIME__V1__POD_SANDBOX_CONFIG__LABELS_ENTRY__INIT, p->labels, c->labels,
                c->n_labels);
        ENTRIES(a, Runtime__V1__PodSandboxConfig__AnnotationsEntry,
                RUNTIME__V1__POD_SANDBOX_CONFIG__ANNOTATIONS_ENTRY__INIT, p->annotations,
                c->annotations, c->n_annotations);
        if (p->host_network) {
                Runtime__V1__NamespaceOption *ns =
                    rkl_arena_newa(Runtime__V1__NamespaceOption, a, 1);
                runtime__v1__namespace_option__init(ns);
                ns->network = RUNTIME__V1__NAMESPACE_MODE__NODE;
                Runtime__V1__LinuxSandboxSecurityContext *sc =
                    rkl_arena_newa(Runtime__V1__LinuxSandboxSecurityContext, a, 1);
                runtime__v1__linux_sandbox_security_context__init(sc);
                sc->namespace_options = ns;
                c->linux = rkl_arena_newa(Runtime__V1__LinuxPodSandboxConfig, a, 1);
                runtime__v1__linux_pod_sandbox_config__init(c->linux);
                c->linux->security_context = sc;
        }
        return c;
}

static int run_pod_r(fixture *f, const podcfg *p, char **ret_id, rkl_error *err)
{
        Runtime__V1__RunPodSandboxRequest req = RUNTIME__V1__RUN_POD_SANDBOX_REQUEST__INIT;
        Runtime__V1__RunPodSandboxResponse resp = RUNTIME__V1__RUN_POD_SANDBOX_RESPONSE__INIT;
        req.config = pod_config(f->arena, f->logs, p);
        int r = rkl_api_run_pod_sandbox(&f->ctx, &req, &resp, err);
        if (r >= 0) {
                packs(&resp);
                *ret_id = resp.pod_sandbox_id;
        }
        return r;
}

static char *run_pod(fixture *f, const podcfg *p)
{
        rkl_error err = RKL_ERROR_INIT;
        char *id = NULL;
        expect_ok(run_pod_r(f, p, &id, &err));
        assert_true(rkl_id_is_valid(id));
        return id;
}

typedef struct containercfg {
        const char *name;
        uint32_t attempt;
        const char *image;
        const char *user_image; /* user_specified_image */
        const char *const *labels;
        const char *const *annotations;
        const char *log_path;
} containercfg;

static Runtime__V1__ContainerConfig *container_config(rkl_arena *a, const containercfg *p)
{
        Runtime__V1__ContainerConfig *c = rkl_arena_newa(Runtime__V1__ContainerConfig, a, 1);
        runtime__v1__container_config__init(c);
        Runtime__V1__ContainerMetadata *m = rkl_arena_newa(Runtime__V1__ContainerMetadata, a, 1);
        runtime__v1__container_metadata__init(m);
        m->name = (char *)(p->name ? p->name : "app");
        m->attempt = p->attempt;
        c->metadata = m;
        c->image = rkl_arena_newa(Runtime__V1__ImageSpec, a, 1);
        runtime__v1__image_spec__init(c->image);
        c->image->image = (char *)(p->image ? p->image : "busybox:1.36");
        c->image->user_specified_image = (char *)p->user_image;
        static char *cmd[] = {(char *)"sleep", (char *)"1000"};
        c->command = cmd;
        c->n_command = 2;
        /* kubelet's: <name>/<restart count>.log, one file a container. */
        c->log_path = p->log_path ? (char *)p->log_path
                                  : rkl_arena_printf(a, "%s/%u.log", m->name, p->attempt);
        ENTRIES(a, Runtime__V1__ContainerConfig__LabelsEntry,
                RUNTIME__V1__CONTAINER_CONFIG__LABELS_ENTRY__INIT, p->labels, c->labels,
                c->n_labels);
        ENTRIES(a, Runtime__V1__ContainerConfig__AnnotationsEntry,
                RUNTIME__V1__CONTAINER_CONFIG__ANNOTATIONS_ENTRY__INIT, p->annotations,
                c->annotations, c->n_annotations);
        return c;
}

static int create_container_r(fixture *f, const char *pod, const containercfg *p, char **ret_id,
                              rkl_error *err)
{
        Runtime__V1__CreateContainerRequest req = RUNTIME__V1__CREATE_CONTAINER_REQUEST__INIT;
        Runtime__V1__CreateContainerResponse resp = RUNTIME__V1__CREATE_CONTAINER_RESPONSE__INIT;
        req.pod_sandbox_id = (char *)pod;
        req.config = container_config(f->arena, p);
        int r = rkl_api_create_container(&f->ctx, &req, &resp, err);
        if (r >= 0) {
                packs(&resp);
                *ret_id = resp.container_id;
        }
        return r;
}

static char *create_container(fixture *f, const char *pod, const containercfg *p)
{
        rkl_error err = RKL_ERROR_INIT;
        char *id = NULL;
        expect_ok(create_container_r(f, pod, p, &id, &err));
        assert_true(rkl_id_is_valid(id));
        return id;
}

static int stop_pod(fixture *f, const char *id, rkl_error *err)
{
        Runtime__V1__StopPodSandboxRequest req = RUNTIME__V1__STOP_POD_SANDBOX_REQUEST__INIT;
        Runtime__V1__StopPodSandboxResponse resp = RUNTIME__V1__STOP_POD_SANDBOX_RESPONSE__INIT;
        req.pod_sandbox_id = (char *)id;
        return rkl_api_stop_pod_sandbox(&f->ctx, &req, &resp, err);
}

static int remove_pod(fixture *f, const char *id, rkl_error *err)
{
        Runtime__V1__RemovePodSandboxRequest req = RUNTIME__V1__REMOVE_POD_SANDBOX_REQUEST__INIT;
        Runtime__V1__RemovePodSandboxResponse resp = RUNTIME__V1__REMOVE_POD_SANDBOX_RESPONSE__INIT;
        req.pod_sandbox_id = (char *)id;
        return rkl_api_remove_pod_sandbox(&f->ctx, &req, &resp, err);
}

static int pod_status(fixture *f, const char *id, bool verbose,
                      Runtime__V1__PodSandboxStatusResponse *resp, rkl_error *err)
{
        Runtime__V1__PodSandboxStatusRequest req = RUNTIME__V1__POD_SANDBOX_STATUS_REQUEST__INIT;
        *resp =
            (Runtime__V1__PodSandboxStatusResponse)RUNTIME__V1__POD_SANDBOX_STATUS_RESPONSE__INIT;
        req.pod_sandbox_id = (char *)id;
        req.verbose = verbose;
        int r = rkl_api_pod_sandbox_status(&f->ctx, &req, resp, err);
        if (r >= 0)
                packs(resp);
        return r;
}

static void *arena_alloc(void *data, size_t size)
{
        return rkl_arena_alloc(data, size);
}

static void arena_free(void *data, void *p)
{
}

/* List handlers answer with bytes they assembled (ctx->raw), as the server sends them:
 * decode them as a client would. */
static void *decode_raw(fixture *f, const ProtobufCMessageDescriptor *d)
{
        ProtobufCAllocator alloc = {arena_alloc, arena_free, f->arena};
        assert_non_null(f->ctx.raw);
        void *m = protobuf_c_message_unpack(d, &alloc, f->ctx.raw_len, f->ctx.raw);
        assert_non_null(m);
        free(f->ctx.raw); /* the server's to free once sent; unpack copied what it needs */
        f->ctx.raw = NULL;
        f->ctx.raw_len = 0;
        return m;
}

static Runtime__V1__ListPodSandboxResponse list_pods(fixture *f,
                                                     const Runtime__V1__PodSandboxFilter *filter)
{
        Runtime__V1__ListPodSandboxRequest req = RUNTIME__V1__LIST_POD_SANDBOX_REQUEST__INIT;
        Runtime__V1__ListPodSandboxResponse resp = RUNTIME__V1__LIST_POD_SANDBOX_RESPONSE__INIT;
        rkl_error err = RKL_ERROR_INIT;
        req.filter = (Runtime__V1__PodSandboxFilter *)filter;
        expect_ok(rkl_api_list_pod_sandbox(&f->ctx, &req, &resp, &err));
        return *(Runtime__V1__ListPodSandboxResponse *)decode_raw(
            f, &runtime__v1__list_pod_sandbox_response__descriptor);
}

static int start_container(fixture *f, const char *id, rkl_error *err)
{
        Runtime__V1__StartContainerRequest req = RUNTIME__V1__START_CONTAINER_REQUEST__INIT;
        Runtime__V1__StartContainerResponse resp = RUNTIME__V1__START_CONTAINER_RESPONSE__INIT;
        req.container_id = (char *)id;
        return rkl_api_start_container(&f->ctx, &req, &resp, err);
}

static int stop_container(fixture *f, const char *id, int64_t timeout, rkl_error *err)
{
        Runtime__V1__StopContainerRequest req = RUNTIME__V1__STOP_CONTAINER_REQUEST__INIT;
        Runtime__V1__StopContainerResponse resp = RUNTIME__V1__STOP_CONTAINER_RESPONSE__INIT;
        req.container_id = (char *)id;
        req.timeout = timeout;
        return rkl_api_stop_container(&f->ctx, &req, &resp, err);
}

static int remove_container(fixture *f, const char *id, rkl_error *err)
{
        Runtime__V1__RemoveContainerRequest req = RUNTIME__V1__REMOVE_CONTAINER_REQUEST__INIT;
        Runtime__V1__RemoveContainerResponse resp = RUNTIME__V1__REMOVE_CONTAINER_RESPONSE__INIT;
        req.container_id = (char *)id;
        return rkl_api_remove_container(&f->ctx, &req, &resp, err);
}

static int container_status(fixture *f, const char *id, bool verbose,
                            Runtime__V1__ContainerStatusResponse *resp, rkl_error *err)
{
        Runtime__V1__ContainerStatusRequest req = RUNTIME__V1__CONTAINER_STATUS_REQUEST__INIT;
        *resp = (Runtime__V1__ContainerStatusResponse)RUNTIME__V1__CONTAINER_STATUS_RESPONSE__INIT;
        req.container_id = (char *)id;
        req.verbose = verbose;
        int r = rkl_api_container_status(&f->ctx, &req, resp, err);
        if (r >= 0)
                packs(resp);
        return r;
}

static Runtime__V1__ListContainersResponse
list_containers(fixture *f, const Runtime__V1__ContainerFilter *filter)
{
        Runtime__V1__ListContainersRequest req = RUNTIME__V1__LIST_CONTAINERS_REQUEST__INIT;
        Runtime__V1__ListContainersResponse resp = RUNTIME__V1__LIST_CONTAINERS_RESPONSE__INIT;
        rkl_error err = RKL_ERROR_INIT;
        req.filter = (Runtime__V1__ContainerFilter *)filter;
        expect_ok(rkl_api_list_containers(&f->ctx, &req, &resp, &err));
        return *(Runtime__V1__ListContainersResponse *)decode_raw(
            f, &runtime__v1__list_containers_response__descriptor);
}

static size_t store_pods(fixture *f)
{
        rkl_error err = RKL_ERROR_INIT;
        rkl_pod_record **a = NULL;
        size_t n = 0;
        expect_ok(rkl_db_pod_list(f->db, NULL, &a, &n, &err));
        rkl_pod_record_array_free(a, n);
        return n;
}

static size_t store_containers(fixture *f)
{
        rkl_error err = RKL_ERROR_INIT;
        rkl_container_record **a = NULL;
        size_t n = 0;
        expect_ok(rkl_db_container_list(f->db, NULL, &a, &n, &err));
        rkl_container_record_array_free(a, n);
        return n;
}

/* Map fields of any of the label/annotation entry types: {base, key, value}. */
#define assert_kvs(entries, n, pairs)                                                              \
        do {                                                                                       \
                size_t _n = 0;                                                                     \
                while ((pairs)[2 * _n])                                                            \
                        _n++;                                                                      \
                assert_int_equal((n), _n);                                                         \
                for (size_t _i = 0; _i < _n; _i++) {                                               \
                        assert_string_equal((entries)[_i]->key, (pairs)[2 * _i]);                  \
                        assert_string_equal((entries)[_i]->value, (pairs)[2 * _i + 1]);            \
                }                                                                                  \
        } while (0)

static const char *const web_labels[] = {
    "io.kubernetes.pod.name", "web", "app", "web ☃", "empty", "", NULL};
static const char *const web_annotations[] = {"kubernetes.io/config.seen", "2026-11-21T07:00:00Z",
                                              "note", "naïve — “quoted” 日本語", NULL};

static void test_run_pod(void **state)
{
        fixture *f = *state;
        rkl_error err = RKL_ERROR_INIT;
        Runtime__V1__PodSandboxStatusResponse st;
        int64_t before = rkl_realtime_ns();

        char *id = run_pod(
            f, &(podcfg){.attempt = 3, .labels = web_labels, .annotations = web_annotations});
        /* Committed and cached before the reply. */
        assert_int_equal(store_pods(f), 1);
        Runtime__V1__ListPodSandboxResponse l = list_pods(f, NULL);
        assert_int_equal(l.n_items, 1);
        Runtime__V1__PodSandbox *p = l.items[0];
        assert_string_equal(p->id, id);
        assert_string_equal(p->metadata->name, "web");
        assert_string_equal(p->metadata->uid, "uid-1");
        assert_string_equal(p->metadata->namespace_, "default");
        assert_int_equal(p->metadata->attempt, 3);
        assert_int_equal(p->state, RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_READY);
        assert_true(p->created_at >= before && p->created_at <= rkl_realtime_ns());
        assert_string_equal(p->runtime_handler, "");
        assert_kvs(p->labels, p->n_labels, web_labels);
        assert_kvs(p->annotations, p->n_annotations, web_annotations);

        expect_ok(pod_status(f, id, false, &st, &err));
        assert_string_equal(st.status->id, id);
        assert_int_equal(st.status->state, RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_READY);
        assert_int_equal(st.status->created_at, p->created_at);
        assert_string_equal(st.status->network->ip, "");
        assert_int_equal(st.status->linux->namespaces->options->network,
                         RUNTIME__V1__NAMESPACE_MODE__POD);
        assert_int_equal(st.status->linux->namespaces->options->pid,
                         RUNTIME__V1__NAMESPACE_MODE__POD);
        assert_int_equal(st.status->linux->namespaces->options->ipc,
                         RUNTIME__V1__NAMESPACE_MODE__POD);
        assert_kvs(st.status->labels, st.status->n_labels, web_labels);
        assert_kvs(st.status->annotations, st.status->n_annotations, web_annotations);
        assert_int_equal(st.n_info, 0);
        assert_true(st.timestamp > 0);

        expect_ok(pod_status(f, id, true, &st, &err));
        assert_int_equal(st.n_info, 1);
        assert_string_equal(st.info[0]->key, "info");
        assert_non_null(strstr(st.info[0]->value, "\"phase\":\"pending\""));
        assert_non_null(strstr(st.info[0]->value, "\"desired\":\"ready\""));
        assert_non_null(strstr(st.info[0]->value, "\"lastError\":null"));
        assert_non_null(strstr(st.info[0]->value, id));

        /* Host network shows as NODE. */
        char *host = run_pod(f, &(podcfg){.name = "host", .host_network = true});
        expect_ok(pod_status(f, host, false, &st, &err));
        assert_int_equal(st.status->linux->namespaces->options->network,
                         RUNTIME__V1__NAMESPACE_MODE__NODE);
}

static void test_run_pod_invalid(void **state)
{
        fixture *f = *state;
        rkl_error err = RKL_ERROR_INIT;
        Runtime__V1__RunPodSandboxRequest req = RUNTIME__V1__RUN_POD_SANDBOX_REQUEST__INIT;
        Runtime__V1__RunPodSandboxResponse resp = RUNTIME__V1__RUN_POD_SANDBOX_RESPONSE__INIT;
        char *id;

        req.config = pod_config(f->arena, f->logs, &(podcfg){0});
        req.runtime_handler = (char *)"runc";
        expect_error(rkl_api_run_pod_sandbox(&f->ctx, &req, &resp, &err), -EINVAL,
                     GRPC_STATUS_INVALID_ARGUMENT, "runtime_handler");

        req.runtime_handler = (char *)"";
        req.config = NULL;
        expect_error(rkl_api_run_pod_sandbox(&f->ctx, &req, &resp, &err), -EINVAL,
                     GRPC_STATUS_INVALID_ARGUMENT, "config");

        expect_error(run_pod_r(f, &(podcfg){.name = ""}, &id, &err), -EINVAL,
                     GRPC_STATUS_INVALID_ARGUMENT, "config.metadata.name");
        expect_error(run_pod_r(f, &(podcfg){.log_directory = "relative"}, &id, &err), -EINVAL,
                     GRPC_STATUS_INVALID_ARGUMENT, "config.log_directory");
        const char *const bad_key[] = {"", "v", NULL};
        expect_error(run_pod_r(f, &(podcfg){.labels = bad_key}, &id, &err), -EINVAL,
                     GRPC_STATUS_INVALID_ARGUMENT, "config.labels");
        const char *const bad_utf8[] = {"k", "\xff\xfe", NULL};
        expect_error(run_pod_r(f, &(podcfg){.annotations = bad_utf8}, &id, &err), -EINVAL,
                     GRPC_STATUS_INVALID_ARGUMENT, "config.annotations");

        /* Nothing half-stored. */
        assert_int_equal(store_pods(f), 0);
        assert_int_equal(list_pods(f, NULL).n_items, 0);
}

static void test_run_pod_twice(void **state)
{
        fixture *f = *state;
        rkl_error err = RKL_ERROR_INIT;
        char *id2;

        char *id = run_pod(f, &(podcfg){.attempt = 1});
        expect_error(run_pod_r(f, &(podcfg){.attempt = 1}, &id2, &err), -EEXIST,
                     GRPC_STATUS_ALREADY_EXISTS, id);
        assert_non_null(strstr(err.msg, "already exists"));
        assert_int_equal(store_pods(f), 1);
        /* The next attempt is another sandbox. */
        run_pod(f, &(podcfg){.attempt = 2});
        assert_int_equal(list_pods(f, NULL).n_items, 2);
}

static void test_stop_remove_pod(void **state)
{
        fixture *f = *state;
        rkl_error err = RKL_ERROR_INIT;
        Runtime__V1__PodSandboxStatusResponse st;
        Runtime__V1__ContainerStatusResponse cst;

        char *id = run_pod(f, &(podcfg){0});
        char *c1 = create_container(f, id, &(containercfg){.name = "a"});
        char *c2 = create_container(f, id, &(containercfg){.name = "b"});
        expect_ok(start_container(f, c1, &err));

        expect_ok(stop_pod(f, id, &err));
        expect_ok(pod_status(f, id, true, &st, &err));
        assert_int_equal(st.status->state, RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_NOTREADY);
        assert_non_null(strstr(st.info[0]->value, "\"desired\":\"stopped\""));
        /* Its containers are wanted stopped too, and the cache says so at once. */
        expect_ok(container_status(f, c1, true, &cst, &err));
        assert_non_null(strstr(cst.info[0]->value, "\"desired\":\"stopped\""));
        expect_ok(container_status(f, c2, true, &cst, &err));
        assert_non_null(strstr(cst.info[0]->value, "\"desired\":\"stopped\""));
        /* No container joins a stopped sandbox. */
        char *c3;
        expect_error(create_container_r(f, id, &(containercfg){.name = "c"}, &c3, &err), -EBADFD,
                     GRPC_STATUS_FAILED_PRECONDITION, "not ready");
        expect_error(start_container(f, c2, &err), -EBADFD, GRPC_STATUS_FAILED_PRECONDITION,
                     "stopped");

        /* Idempotent. */
        expect_ok(stop_pod(f, id, &err));
        expect_ok(remove_pod(f, id, &err));
        expect_error(pod_status(f, id, false, &st, &err), -ENOENT, GRPC_STATUS_NOT_FOUND, id);
        expect_error(container_status(f, c1, false, &cst, &err), -ENOENT, GRPC_STATUS_NOT_FOUND,
                     c1);
        assert_int_equal(list_pods(f, NULL).n_items, 0);
        assert_int_equal(list_containers(f, NULL).n_containers, 0);
        assert_int_equal(store_pods(f), 0);
        assert_int_equal(store_containers(f), 0);
        expect_ok(remove_pod(f, id, &err));
        expect_ok(stop_pod(f, id, &err));
        expect_ok(stop_container(f, c1, 0, &err));
        expect_ok(remove_container(f, c2, &err));

        /* Unknown IDs, full or not: nothing to do. Empty: a malformed request. */
        const char *unknown = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
        expect_ok(stop_pod(f, unknown, &err));
        expect_ok(remove_pod(f, unknown, &err));
        expect_ok(stop_pod(f, "no-such-pod", &err));
        expect_ok(remove_pod(f, "no-such-pod", &err));
        expect_error(pod_status(f, unknown, false, &st, &err), -ENOENT, GRPC_STATUS_NOT_FOUND,
                     unknown);
        expect_error(pod_status(f, "\xff", false, &st, &err), -ENOENT, GRPC_STATUS_NOT_FOUND,
                     "not found");
        assert_non_null(strstr(err.msg, "'?'")); /* echoed as valid UTF-8 */
        expect_error(stop_pod(f, "", &err), -EINVAL, GRPC_STATUS_INVALID_ARGUMENT,
                     "pod_sandbox_id");
        expect_error(remove_pod(f, NULL, &err), -EINVAL, GRPC_STATUS_INVALID_ARGUMENT,
                     "pod_sandbox_id");
        expect_error(pod_status(f, "", false, &st, &err), -EINVAL, GRPC_STATUS_INVALID_ARGUMENT,
                     "pod_sandbox_id");
}

/* Two IDs that share their first hex digit (17 sandboxes always have two). */
static void shared_prefix(char **ids, size_t n, char ret[2], size_t *ret_i, size_t *ret_j)
{
        for (size_t i = 0; i < n; i++)
                for (size_t j = i + 1; j < n; j++)
                        if (ids[i][0] == ids[j][0]) {
                                ret[0] = ids[i][0];
                                ret[1] = 0;
                                *ret_i = i;
                                *ret_j = j;
                                return;
                        }
        fail();
}

static void test_prefixes(void **state)
{
        fixture *f = *state;
        rkl_error err = RKL_ERROR_INIT;
        Runtime__V1__PodSandboxStatusResponse st;
        Runtime__V1__ContainerStatusResponse cst;
        char *ids[17], *containers[17], prefix[2];
        size_t i, j;

        char *pod = run_pod(f, &(podcfg){.name = "holder"});
        for (size_t k = 0; k < 17; k++) {
                char name[16];
                (void)snprintf(name, sizeof(name), "p%zu", k);
                ids[k] = run_pod(f, &(podcfg){.name = rkl_arena_strdup(f->arena, name)});
                containers[k] = create_container(
                    f, pod, &(containercfg){.name = rkl_arena_strdup(f->arena, name)});
        }

        /* A unique prefix is as good as the full ID. */
        expect_ok(pod_status(f, rkl_arena_strndup(f->arena, ids[0], 12), false, &st, &err));
        assert_string_equal(st.status->id, ids[0]);
        expect_ok(
            container_status(f, rkl_arena_strndup(f->arena, containers[0], 12), false, &cst, &err));
        assert_string_equal(cst.status->id, containers[0]);

        shared_prefix(ids, 17, prefix, &i, &j);
        expect_error(pod_status(f, prefix, false, &st, &err), -ENOTUNIQ,
                     GRPC_STATUS_FAILED_PRECONDITION, "ambiguous");
        expect_error(stop_pod(f, prefix, &err), -ENOTUNIQ, GRPC_STATUS_FAILED_PRECONDITION,
                     "ambiguous");
        expect_error(remove_pod(f, prefix, &err), -ENOTUNIQ, GRPC_STATUS_FAILED_PRECONDITION,
                     "ambiguous");
        /* A list filter by an ambiguous prefix matches nothing. */
        Runtime__V1__PodSandboxFilter pf = RUNTIME__V1__POD_SANDBOX_FILTER__INIT;
        pf.id = prefix;
        assert_int_equal(list_pods(f, &pf).n_items, 0);

        /* Stop and remove by prefix. */
        char *p = rkl_arena_strndup(f->arena, ids[i], 20);
        expect_ok(stop_pod(f, p, &err));
        expect_ok(pod_status(f, ids[i], false, &st, &err));
        assert_int_equal(st.status->state, RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_NOTREADY);
        expect_ok(remove_pod(f, p, &err));
        expect_error(pod_status(f, ids[i], false, &st, &err), -ENOENT, GRPC_STATUS_NOT_FOUND,
                     "not found");
        /* Now the shared digit names one sandbox. */
        pf.id = prefix;
        bool more = pod[0] == prefix[0]; /* the holder is a sandbox too (1 run in 16) */
        for (size_t k = 0; k < 17; k++)
                more |= k != i && k != j && ids[k][0] == prefix[0];
        if (!more) {
                expect_ok(pod_status(f, prefix, false, &st, &err));
                assert_string_equal(st.status->id, ids[j]);
        }

        shared_prefix(containers, 17, prefix, &i, &j);
        expect_error(start_container(f, prefix, &err), -ENOTUNIQ, GRPC_STATUS_FAILED_PRECONDITION,
                     "ambiguous");
        expect_error(stop_container(f, prefix, 1, &err), -ENOTUNIQ, GRPC_STATUS_FAILED_PRECONDITION,
                     "ambiguous");
        expect_error(container_status(f, prefix, false, &cst, &err), -ENOTUNIQ,
                     GRPC_STATUS_FAILED_PRECONDITION, "ambiguous");
        expect_ok(start_container(f, rkl_arena_strndup(f->arena, containers[i], 8), &err));
        expect_ok(stop_container(f, rkl_arena_strndup(f->arena, containers[i], 8), 5, &err));
        expect_ok(remove_container(f, rkl_arena_strndup(f->arena, containers[i], 8), &err));
        expect_error(container_status(f, containers[i], false, &cst, &err), -ENOENT,
                     GRPC_STATUS_NOT_FOUND, "not found");

        /* CreateContainer takes a sandbox prefix too. */
        char *c =
            create_container(f, rkl_arena_strndup(f->arena, pod, 10), &(containercfg){.name = "x"});
        expect_ok(container_status(f, c, false, &cst, &err));
}

static void test_pod_filters(void **state)
{
        fixture *f = *state;
        rkl_error err = RKL_ERROR_INIT;
        Runtime__V1__PodSandboxFilter pf;
        Runtime__V1__PodSandboxStateValue sv = RUNTIME__V1__POD_SANDBOX_STATE_VALUE__INIT;
        Runtime__V1__PodSandboxFilter__LabelSelectorEntry sel[2] = {
            RUNTIME__V1__POD_SANDBOX_FILTER__LABEL_SELECTOR_ENTRY__INIT,
            RUNTIME__V1__POD_SANDBOX_FILTER__LABEL_SELECTOR_ENTRY__INIT};
        Runtime__V1__PodSandboxFilter__LabelSelectorEntry *selp[2] = {&sel[0], &sel[1]};

        const char *const la[] = {"io.kubernetes.pod.uid", "ua", "tier", "web", NULL};
        const char *const lb[] = {"io.kubernetes.pod.uid", "ub", "tier", "web", NULL};
        const char *const lc[] = {"io.kubernetes.pod.uid", "uc", "tier", "", NULL};
        char *a = run_pod(f, &(podcfg){.name = "a", .uid = "ua", .labels = la});
        char *b = run_pod(f, &(podcfg){.name = "b", .uid = "ub", .labels = lb});
        char *c = run_pod(f, &(podcfg){.name = "c", .uid = "uc", .labels = lc});
        expect_ok(stop_pod(f, b, &err));

        /* Oldest first. */
        Runtime__V1__ListPodSandboxResponse l = list_pods(f, NULL);
        assert_int_equal(l.n_items, 3);
        assert_string_equal(l.items[0]->id, a);
        assert_string_equal(l.items[1]->id, b);
        assert_string_equal(l.items[2]->id, c);

        runtime__v1__pod_sandbox_filter__init(&pf);
        pf.id = a;
        l = list_pods(f, &pf);
        assert_int_equal(l.n_items, 1);
        assert_string_equal(l.items[0]->id, a);
        pf.id = rkl_arena_strndup(f->arena, c, 30);
        l = list_pods(f, &pf);
        assert_int_equal(l.n_items, 1);
        assert_string_equal(l.items[0]->id, c);
        pf.id = (char *)"0000000000000000000000000000000000000000000000000000000000000000";
        assert_int_equal(list_pods(f, &pf).n_items, 0);

        runtime__v1__pod_sandbox_filter__init(&pf);
        sv.state = RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_NOTREADY;
        pf.state = &sv;
        l = list_pods(f, &pf);
        assert_int_equal(l.n_items, 1);
        assert_string_equal(l.items[0]->id, b);
        sv.state = RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_READY;
        assert_int_equal(list_pods(f, &pf).n_items, 2);

        /* kubelet's GetPodStatus: by pod uid. */
        runtime__v1__pod_sandbox_filter__init(&pf);
        sel[0].key = (char *)"io.kubernetes.pod.uid";
        sel[0].value = (char *)"ub";
        pf.label_selector = selp;
        pf.n_label_selector = 1;
        l = list_pods(f, &pf);
        assert_int_equal(l.n_items, 1);
        assert_string_equal(l.items[0]->id, b);
        sel[0].key = (char *)"tier";
        sel[0].value = (char *)"web";
        assert_int_equal(list_pods(f, &pf).n_items, 2);
        sel[1].key = (char *)"io.kubernetes.pod.uid";
        sel[1].value = (char *)"ua";
        pf.n_label_selector = 2;
        l = list_pods(f, &pf);
        assert_int_equal(l.n_items, 1);
        assert_string_equal(l.items[0]->id, a);
        /* An empty value selects the label with an empty value, not "any". */
        sel[0].value = (char *)"";
        pf.n_label_selector = 1;
        l = list_pods(f, &pf);
        assert_int_equal(l.n_items, 1);
        assert_string_equal(l.items[0]->id, c);
        /* All together. */
        sel[0].value = (char *)"web";
        pf.state = &sv;
        pf.id = rkl_arena_strndup(f->arena, a, 5);
        l = list_pods(f, &pf);
        assert_int_equal(l.n_items, 1);
        assert_string_equal(l.items[0]->id, a);
        sv.state = RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_NOTREADY;
        assert_int_equal(list_pods(f, &pf).n_items, 0);
}

static void test_many_labels(void **state)
{
        fixture *f = *state;
        rkl_error err = RKL_ERROR_INIT;
        Runtime__V1__PodSandboxStatusResponse st;
        Runtime__V1__ContainerStatusResponse cst;
        const char *pairs[2 * 100 + 1];

        /* 100 labels, in an order that is not sorted, with a long unicode value. */
        for (size_t i = 0; i < 100; i++) {
                pairs[2 * i] = rkl_arena_printf(f->arena, "example.com/k%03zu", (i * 37) % 100);
                pairs[2 * i + 1] =
                    i % 10 == 0 ? "" : rkl_arena_printf(f->arena, "välue %zu ✓ 🚀", i);
        }
        pairs[200] = NULL;
        char *pod = run_pod(f, &(podcfg){.labels = pairs, .annotations = pairs});
        char *c = create_container(f, pod, &(containercfg){.labels = pairs, .annotations = pairs});

        expect_ok(pod_status(f, pod, false, &st, &err));
        assert_kvs(st.status->labels, st.status->n_labels, pairs);
        assert_kvs(st.status->annotations, st.status->n_annotations, pairs);
        Runtime__V1__ListPodSandboxResponse l = list_pods(f, NULL);
        assert_kvs(l.items[0]->labels, l.items[0]->n_labels, pairs);
        expect_ok(container_status(f, c, false, &cst, &err));
        assert_kvs(cst.status->labels, cst.status->n_labels, pairs);
        assert_kvs(cst.status->annotations, cst.status->n_annotations, pairs);
        Runtime__V1__ListContainersResponse lc = list_containers(f, NULL);
        assert_kvs(lc.containers[0]->labels, lc.containers[0]->n_labels, pairs);
        assert_kvs(lc.containers[0]->annotations, lc.containers[0]->n_annotations, pairs);

        /* And again from a cache rebuilt from the store, as after a restart. */
        state_close(f);
        state_open(f);
        expect_ok(pod_status(f, pod, false, &st, &err));
        assert_kvs(st.status->annotations, st.status->n_annotations, pairs);
        expect_ok(container_status(f, c, false, &cst, &err));
        assert_kvs(cst.status->labels, cst.status->n_labels, pairs);
        assert_string_equal(cst.status->log_path,
                            rkl_arena_printf(f->arena, "%s/default_web_uid-1/app/0.log", f->logs));
}

static void test_container_lifecycle(void **state)
{
        fixture *f = *state;
        rkl_error err = RKL_ERROR_INIT;
        Runtime__V1__ContainerStatusResponse st;
        const char *const labels[] = {"io.kubernetes.container.name", "app", "e", "", NULL};
        const char *const annotations[] = {"io.kubernetes.container.hash", "1a2b",
                                           "io.kubernetes.container.restartCount", "0", NULL};
        int64_t before = rkl_realtime_ns();

        char *pod = run_pod(
            f, &(podcfg){.log_directory = rkl_arena_printf(f->arena, "%s/ns_web_u", f->logs)});
        char *c = create_container(f, pod,
                                   &(containercfg){.name = "app",
                                                   .attempt = 2,
                                                   .image = "busybox",
                                                   .labels = labels,
                                                   .annotations = annotations,
                                                   .log_path = "app/2.log"});
        assert_int_equal(store_containers(f), 1);

        expect_ok(container_status(f, c, false, &st, &err));
        Runtime__V1__ContainerStatus *s = st.status;
        assert_string_equal(s->id, c);
        assert_string_equal(s->metadata->name, "app");
        assert_int_equal(s->metadata->attempt, 2);
        assert_int_equal(s->state, RUNTIME__V1__CONTAINER_STATE__CONTAINER_CREATED);
        assert_true(s->created_at >= before && s->created_at <= rkl_realtime_ns());
        assert_int_equal(s->started_at, 0);
        assert_int_equal(s->finished_at, 0);
        assert_int_equal(s->exit_code, 0);
        assert_string_equal(s->image->image, "busybox");
        assert_string_equal(s->image_ref, "busybox");
        assert_string_equal(s->image_id, "busybox");
        assert_string_equal(s->reason, "");
        assert_string_equal(s->log_path,
                            rkl_arena_printf(f->arena, "%s/ns_web_u/app/2.log", f->logs));
        assert_kvs(s->labels, s->n_labels, labels);
        assert_kvs(s->annotations, s->n_annotations, annotations);
        assert_int_equal(st.n_info, 0);

        Runtime__V1__ListContainersResponse l = list_containers(f, NULL);
        assert_int_equal(l.n_containers, 1);
        Runtime__V1__Container *lc = l.containers[0];
        assert_string_equal(lc->id, c);
        assert_string_equal(lc->pod_sandbox_id, pod);
        assert_string_equal(lc->metadata->name, "app");
        assert_string_equal(lc->image->image, "busybox");
        assert_string_equal(lc->image_ref, "busybox");
        assert_string_equal(lc->image_id, "busybox");
        assert_int_equal(lc->state, RUNTIME__V1__CONTAINER_STATE__CONTAINER_CREATED);
        assert_int_equal(lc->created_at, s->created_at);
        assert_kvs(lc->labels, lc->n_labels, labels);
        assert_kvs(lc->annotations, lc->n_annotations, annotations);

        /* Started: wanted running, but reported created until rkt has really run it. */
        expect_ok(start_container(f, c, &err));
        expect_ok(container_status(f, c, true, &st, &err));
        assert_int_equal(st.status->state, RUNTIME__V1__CONTAINER_STATE__CONTAINER_CREATED);
        assert_non_null(strstr(st.info[0]->value, "\"desired\":\"running\""));
        assert_non_null(strstr(st.info[0]->value, "\"phase\":\"created\""));
        assert_non_null(strstr(st.info[0]->value, "\"appName\":\"c"));
        assert_non_null(strstr(st.info[0]->value, "\"stopDeadline\":null"));
        expect_ok(start_container(f, c, &err)); /* again: fine */

        /* Stop with a grace period: the deadline is kept for the reconciler. */
        int64_t t0 = rkl_realtime_ns();
        expect_ok(stop_container(f, c, 30, &err));
        rkl_container_record *rec = NULL;
        expect_ok(rkl_db_container_get(f->db, c, &rec, &err));
        assert_int_equal(rec->desired, RKL_CONTAINER_DESIRED_STOPPED);
        assert_true(rec->stop_deadline_ns >= t0 + 30 * (int64_t)NSEC_PER_SEC);
        assert_true(rec->stop_deadline_ns <= rkl_realtime_ns() + 30 * (int64_t)NSEC_PER_SEC);
        rkl_container_record_free(rec);
        expect_ok(container_status(f, c, true, &st, &err));
        assert_non_null(strstr(st.info[0]->value, "\"desired\":\"stopped\""));
        assert_null(strstr(st.info[0]->value, "\"stopDeadline\":null"));
        /* A second stop with 0 moves the deadline to now; stop stays idempotent. */
        expect_ok(stop_container(f, c, 0, &err));
        expect_ok(rkl_db_container_get(f->db, c, &rec, &err));
        assert_true(rec->stop_deadline_ns <= rkl_realtime_ns());
        rkl_container_record_free(rec);
        expect_ok(stop_container(f, c, -5, &err));
        expect_error(start_container(f, c, &err), -EBADFD, GRPC_STATUS_FAILED_PRECONDITION,
                     "is stopped");

        expect_ok(remove_container(f, c, &err));
        expect_error(container_status(f, c, false, &st, &err), -ENOENT, GRPC_STATUS_NOT_FOUND, c);
        assert_int_equal(list_containers(f, NULL).n_containers, 0);
        assert_int_equal(store_containers(f), 0);
        expect_ok(remove_container(f, c, &err));
        expect_ok(stop_container(f, c, 10, &err));
        expect_error(start_container(f, c, &err), -ENOENT, GRPC_STATUS_NOT_FOUND, "not found");
        /* The sandbox is untouched. */
        assert_int_equal(list_pods(f, NULL).n_items, 1);
}

static void test_container_invalid(void **state)
{
        fixture *f = *state;
        rkl_error err = RKL_ERROR_INIT;
        Runtime__V1__ContainerStatusResponse st;
        char *id;

        char *pod = run_pod(f, &(podcfg){0});
        const char *unknown = "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210";
        expect_error(create_container_r(f, unknown, &(containercfg){0}, &id, &err), -ENOENT,
                     GRPC_STATUS_NOT_FOUND, "sandbox");
        expect_error(create_container_r(f, "", &(containercfg){0}, &id, &err), -EINVAL,
                     GRPC_STATUS_INVALID_ARGUMENT, "pod_sandbox_id");
        expect_error(create_container_r(f, pod, &(containercfg){.name = ""}, &id, &err), -EINVAL,
                     GRPC_STATUS_INVALID_ARGUMENT, "config.metadata.name");
        expect_error(create_container_r(f, pod, &(containercfg){.image = "-rf"}, &id, &err),
                     -EINVAL, GRPC_STATUS_INVALID_ARGUMENT, "config.image.image");
        expect_error(
            create_container_r(f, pod, &(containercfg){.log_path = "../../etc/passwd"}, &id, &err),
            -EINVAL, GRPC_STATUS_INVALID_ARGUMENT, "config.log_path");
        const char *const bad[] = {"k", "\xc3", NULL};
        expect_error(create_container_r(f, pod, &(containercfg){.labels = bad}, &id, &err), -EINVAL,
                     GRPC_STATUS_INVALID_ARGUMENT, "config.labels");
        Runtime__V1__CreateContainerRequest req = RUNTIME__V1__CREATE_CONTAINER_REQUEST__INIT;
        Runtime__V1__CreateContainerResponse resp = RUNTIME__V1__CREATE_CONTAINER_RESPONSE__INIT;
        req.pod_sandbox_id = pod;
        expect_error(rkl_api_create_container(&f->ctx, &req, &resp, &err), -EINVAL,
                     GRPC_STATUS_INVALID_ARGUMENT, "config");
        assert_int_equal(store_containers(f), 0);
        assert_int_equal(list_containers(f, NULL).n_containers, 0);

        /* One name and attempt per sandbox. */
        char *c = create_container(f, pod, &(containercfg){.name = "app", .attempt = 1});
        expect_error(
            create_container_r(f, pod, &(containercfg){.name = "app", .attempt = 1}, &id, &err),
            -EEXIST, GRPC_STATUS_ALREADY_EXISTS, "already exists");
        create_container(f, pod, &(containercfg){.name = "app", .attempt = 2});
        assert_int_equal(store_containers(f), 2);

        expect_error(start_container(f, unknown, &err), -ENOENT, GRPC_STATUS_NOT_FOUND, unknown);
        expect_error(start_container(f, "abc", &err), -ENOENT, GRPC_STATUS_NOT_FOUND, "abc");
        expect_error(start_container(f, "", &err), -EINVAL, GRPC_STATUS_INVALID_ARGUMENT,
                     "container_id");
        expect_error(container_status(f, unknown, false, &st, &err), -ENOENT, GRPC_STATUS_NOT_FOUND,
                     unknown);
        expect_error(stop_container(f, NULL, 0, &err), -EINVAL, GRPC_STATUS_INVALID_ARGUMENT,
                     "container_id");
        expect_ok(stop_container(f, unknown, 0, &err));
        expect_ok(remove_container(f, unknown, &err));
        expect_ok(remove_container(f, "zzz", &err));
        expect_ok(container_status(f, c, false, &st, &err));
}

static void test_container_filters(void **state)
{
        fixture *f = *state;
        rkl_error err = RKL_ERROR_INIT;
        Runtime__V1__ContainerFilter cf;
        Runtime__V1__ContainerStateValue sv = RUNTIME__V1__CONTAINER_STATE_VALUE__INIT;
        Runtime__V1__ContainerFilter__LabelSelectorEntry sel =
            RUNTIME__V1__CONTAINER_FILTER__LABEL_SELECTOR_ENTRY__INIT;
        Runtime__V1__ContainerFilter__LabelSelectorEntry *selp[1] = {&sel};

        char *p1 = run_pod(f, &(podcfg){.name = "one"});
        char *p2 = run_pod(f, &(podcfg){.name = "two"});
        const char *const la[] = {"io.kubernetes.container.name", "a", NULL};
        const char *const lb[] = {"io.kubernetes.container.name", "b", NULL};
        char *a1 = create_container(f, p1, &(containercfg){.name = "a", .labels = la});
        char *b1 = create_container(f, p1, &(containercfg){.name = "b", .labels = lb});
        char *a2 = create_container(f, p2, &(containercfg){.name = "a", .labels = la});

        /* The reconciler reports one running and one exited. */
        rkl_container_observed o = {.phase = RKL_CONTAINER_PHASE_RUNNING, .started_ns = 5};
        expect_ok(rkl_store_container_set_observed(f->store, a1, &o, &err));
        o = (rkl_container_observed){.phase = RKL_CONTAINER_PHASE_EXITED,
                                     .has_exit_code = true,
                                     .exit_code = 137,
                                     .started_ns = 5,
                                     .finished_ns = 6};
        expect_ok(rkl_store_container_set_observed(f->store, a2, &o, &err));

        Runtime__V1__ListContainersResponse l = list_containers(f, NULL);
        assert_int_equal(l.n_containers, 3);
        assert_string_equal(l.containers[0]->id, a1);
        assert_string_equal(l.containers[1]->id, b1);
        assert_string_equal(l.containers[2]->id, a2);

        runtime__v1__container_filter__init(&cf);
        cf.pod_sandbox_id = p1;
        assert_int_equal(list_containers(f, &cf).n_containers, 2);
        cf.pod_sandbox_id = rkl_arena_strndup(f->arena, p2, 16);
        l = list_containers(f, &cf);
        assert_int_equal(l.n_containers, 1);
        assert_string_equal(l.containers[0]->id, a2);
        cf.pod_sandbox_id =
            (char *)"ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff";
        assert_int_equal(list_containers(f, &cf).n_containers, 0);

        runtime__v1__container_filter__init(&cf);
        cf.id = rkl_arena_strndup(f->arena, b1, 9);
        l = list_containers(f, &cf);
        assert_int_equal(l.n_containers, 1);
        assert_string_equal(l.containers[0]->id, b1);
        cf.id = a2;
        cf.pod_sandbox_id = p1; /* both must hold */
        assert_int_equal(list_containers(f, &cf).n_containers, 0);

        runtime__v1__container_filter__init(&cf);
        cf.state = &sv;
        sv.state = RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING;
        l = list_containers(f, &cf);
        assert_int_equal(l.n_containers, 1);
        assert_string_equal(l.containers[0]->id, a1);
        sv.state = RUNTIME__V1__CONTAINER_STATE__CONTAINER_EXITED;
        l = list_containers(f, &cf);
        assert_int_equal(l.n_containers, 1);
        assert_string_equal(l.containers[0]->id, a2);
        sv.state = RUNTIME__V1__CONTAINER_STATE__CONTAINER_CREATED;
        l = list_containers(f, &cf);
        assert_int_equal(l.n_containers, 1);
        assert_string_equal(l.containers[0]->id, b1);

        runtime__v1__container_filter__init(&cf);
        sel.key = (char *)"io.kubernetes.container.name";
        sel.value = (char *)"a";
        cf.label_selector = selp;
        cf.n_label_selector = 1;
        assert_int_equal(list_containers(f, &cf).n_containers, 2);
        cf.pod_sandbox_id = p2;
        l = list_containers(f, &cf);
        assert_int_equal(l.n_containers, 1);
        assert_string_equal(l.containers[0]->id, a2);

        /* Removing a sandbox takes its containers out of every answer. */
        expect_ok(remove_pod(f, p1, &err));
        l = list_containers(f, NULL);
        assert_int_equal(l.n_containers, 1);
        assert_string_equal(l.containers[0]->id, a2);
        assert_int_equal(store_containers(f), 1);
}

static void test_observed(void **state)
{
        fixture *f = *state;
        rkl_error err = RKL_ERROR_INIT;
        Runtime__V1__ContainerStatusResponse st;
        Runtime__V1__PodSandboxStatusResponse ps;

        char *pod = run_pod(f, &(podcfg){0});
        char *c = create_container(f, pod, &(containercfg){.image = "docker://busybox"});

        /* What the reconciler records shows at once, made valid UTF-8 where rkt said it. */
        rkl_pod_observed po = {.phase = RKL_POD_PHASE_RUNNING, .ip = (char *)"10.1.2.3"};
        expect_ok(rkl_store_pod_set_observed(f->store, pod, &po, &err));
        expect_ok(rkl_store_pod_set_rkt_uuid(f->store, pod, "0b7a5c8e-1d2f-4a3b-9c8d-7e6f5a4b3c2d",
                                             &err));
        expect_ok(pod_status(f, pod, true, &ps, &err));
        assert_string_equal(ps.status->network->ip, "10.1.2.3");
        assert_int_equal(ps.status->state, RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_READY);
        assert_non_null(strstr(ps.info[0]->value, "\"phase\":\"running\""));
        assert_non_null(strstr(ps.info[0]->value, "0b7a5c8e-1d2f-4a3b-9c8d-7e6f5a4b3c2d"));

        assert_int_equal(rkl_store_pod_record_error(f->store, pod, "rkt app add: exit status 254",
                                                    rkl_realtime_ns() + 1000, &err),
                         1);
        expect_ok(pod_status(f, pod, true, &ps, &err));
        assert_non_null(strstr(ps.info[0]->value, "\"attempts\":1"));
        assert_non_null(strstr(ps.info[0]->value, "rkt app add: exit status 254"));
        assert_null(strstr(ps.info[0]->value, "\"nextRetryAt\":null"));

        rkl_container_observed o = {
            .phase = RKL_CONTAINER_PHASE_EXITED,
            .has_exit_code = true,
            .exit_code = 137,
            .created_ns = 100,
            .started_ns = 200,
            .finished_ns = 300,
            .reason = (char *)"OOMKilled",
            .message = (char *)"bad \xff byte",
            .image_ref = (char *)"sha512-0123abcd",
        };
        expect_ok(rkl_store_container_set_observed(f->store, c, &o, &err));
        expect_ok(container_status(f, c, true, &st, &err));
        assert_int_equal(st.status->state, RUNTIME__V1__CONTAINER_STATE__CONTAINER_EXITED);
        assert_int_equal(st.status->created_at, 100);
        assert_int_equal(st.status->started_at, 200);
        assert_int_equal(st.status->finished_at, 300);
        assert_int_equal(st.status->exit_code, 137);
        assert_string_equal(st.status->reason, "OOMKilled");
        assert_true(rkl_utf8_is_valid(st.status->message, strlen(st.status->message)));
        assert_string_equal(st.status->image->image, "docker://busybox");
        assert_string_equal(st.status->image_ref, "sha512-0123abcd");
        assert_string_equal(st.status->image_id, "sha512-0123abcd");
        assert_non_null(strstr(st.info[0]->value, "\"exitCode\":137"));
        Runtime__V1__ListContainersResponse l = list_containers(f, NULL);
        assert_string_equal(l.containers[0]->image_ref, "sha512-0123abcd");
        assert_int_equal(l.containers[0]->created_at, 100);
        /* An exited container does not start again (kubelet makes a new one). */
        expect_error(start_container(f, c, &err), -EBADFD, GRPC_STATUS_FAILED_PRECONDITION,
                     "exited");

        /* A sandbox whose pod failed for good is NOTREADY and takes no container. */
        po = (rkl_pod_observed){.phase = RKL_POD_PHASE_FAILED, .reason = (char *)"Died"};
        expect_ok(rkl_store_pod_set_observed(f->store, pod, &po, &err));
        expect_ok(pod_status(f, pod, false, &ps, &err));
        assert_int_equal(ps.status->state, RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_NOTREADY);
        char *id;
        expect_error(create_container_r(f, pod, &(containercfg){.name = "late"}, &id, &err),
                     -EBADFD, GRPC_STATUS_FAILED_PRECONDITION, "not ready");
}

/* kubelet names the image by its ID and gives the pod's spec's name beside it; the name is
 * what it shows as the container's image (and compares to the spec on an image update). */
static void test_user_specified_image(void **state)
{
        fixture *f = *state;
        rkl_error err = RKL_ERROR_INIT;
        Runtime__V1__ContainerStatusResponse cst;
        char *pod = run_pod(f, &(podcfg){0});
        char *named = create_container(
            f, pod, &(containercfg){.name = "a", .image = "sha512-0123", .user_image = "busybox"});
        char *plain =
            create_container(f, pod, &(containercfg){.name = "b", .image = "busybox:1.36"});

        expect_ok(container_status(f, named, false, &cst, &err));
        assert_string_equal(cst.status->image->image, "busybox");
        assert_string_equal(cst.status->image->user_specified_image, "busybox");
        assert_string_equal(cst.status->image_ref, "sha512-0123"); /* not run yet: as named */
        expect_ok(container_status(f, plain, false, &cst, &err));
        assert_string_equal(cst.status->image->image, "busybox:1.36");

        Runtime__V1__ListContainersResponse l = list_containers(f, NULL);
        assert_int_equal(l.n_containers, 2);
        for (size_t i = 0; i < l.n_containers; i++)
                assert_string_equal(l.containers[i]->image->image,
                                    streq(l.containers[i]->id, named) ? "busybox" : "busybox:1.36");
}

/* An exit rkt gave no reason for is named as containerd and CRI-O name it: kubelet shows the
 * runtime's reason as it is. */
static void test_exit_reasons(void **state)
{
        fixture *f = *state;
        rkl_error err = RKL_ERROR_INIT;
        Runtime__V1__ContainerStatusResponse st;
        char *pod = run_pod(f, &(podcfg){0});
        static const struct {
                rkl_container_phase phase;
                bool has_exit_code;
                int32_t exit_code;
                const char *reason, *want;
        } cases[] = {
            {RKL_CONTAINER_PHASE_EXITED, true, 0, NULL, "Completed"},
            {RKL_CONTAINER_PHASE_EXITED, true, 3, NULL, "Error"},
            {RKL_CONTAINER_PHASE_EXITED, true, 137, NULL, "Error"},
            {RKL_CONTAINER_PHASE_EXITED, false, 0, NULL, "Error"},
            {RKL_CONTAINER_PHASE_EXITED, true, 137, "OOMKilled", "OOMKilled"},
            {RKL_CONTAINER_PHASE_RUNNING, false, 0, NULL, ""},
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                char name[16];
                snprintf(name, sizeof(name), "c%zu", i);
                char *c = create_container(f, pod, &(containercfg){.name = name});
                rkl_container_observed o = {.phase = cases[i].phase,
                                            .has_exit_code = cases[i].has_exit_code,
                                            .exit_code = cases[i].exit_code,
                                            .reason = (char *)cases[i].reason};
                expect_ok(rkl_store_container_set_observed(f->store, c, &o, &err));
                expect_ok(container_status(f, c, false, &st, &err));
                assert_string_equal(st.status->reason, cases[i].want);
        }
}

/* PodSandboxStatus carries its containers' statuses, newest first, and when they were read:
 * kubelet's Evented PLEG takes them from there alone (a sandbox without them looked empty to
 * it: it started every container again) and reads the first of a name as the latest attempt
 * (oldest first, it made an attempt that existed already). Only the sandbox's own. */
static void test_pod_status_containers(void **state)
{
        fixture *f = *state;
        rkl_error err = RKL_ERROR_INIT;
        Runtime__V1__PodSandboxStatusResponse ps;
        char *pod = run_pod(f, &(podcfg){0});
        char *other = run_pod(f, &(podcfg){.name = "other"});
        char *a = create_container(f, pod, &(containercfg){.name = "a"});
        char *b = create_container(f, pod, &(containercfg){.name = "b"});
        create_container(f, other, &(containercfg){.name = "elsewhere"});
        rkl_container_observed o = {.phase = RKL_CONTAINER_PHASE_RUNNING, .started_ns = 5};
        expect_ok(rkl_store_container_set_observed(f->store, b, &o, &err));
        char *b2 = create_container(f, pod, &(containercfg){.name = "b", .attempt = 1});

        int64_t before = rkl_realtime_ns();
        expect_ok(pod_status(f, pod, false, &ps, &err));
        assert_true(ps.timestamp >= before);
        assert_int_equal(ps.n_containers_statuses, 3);
        assert_string_equal(ps.containers_statuses[0]->id, b2);
        assert_int_equal(ps.containers_statuses[0]->metadata->attempt, 1);
        assert_int_equal(ps.containers_statuses[0]->state,
                         RUNTIME__V1__CONTAINER_STATE__CONTAINER_CREATED);
        assert_string_equal(ps.containers_statuses[1]->id, b);
        assert_int_equal(ps.containers_statuses[1]->state,
                         RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING);
        assert_string_equal(ps.containers_statuses[2]->id, a);
        assert_int_equal(ps.containers_statuses[2]->state,
                         RUNTIME__V1__CONTAINER_STATE__CONTAINER_CREATED);
}

static void test_update_runtime_config(void **state)
{
        fixture *f = *state;
        rkl_error err = RKL_ERROR_INIT;
        Runtime__V1__UpdateRuntimeConfigRequest req =
            RUNTIME__V1__UPDATE_RUNTIME_CONFIG_REQUEST__INIT;
        Runtime__V1__UpdateRuntimeConfigResponse resp =
            RUNTIME__V1__UPDATE_RUNTIME_CONFIG_RESPONSE__INIT;
        Runtime__V1__RuntimeConfig rc = RUNTIME__V1__RUNTIME_CONFIG__INIT;
        Runtime__V1__NetworkConfig nc = RUNTIME__V1__NETWORK_CONFIG__INIT;

        expect_ok(rkl_api_update_runtime_config(&f->ctx, &req, &resp, &err));
        req.runtime_config = &rc;
        rc.network_config = &nc;
        nc.pod_cidr = (char *)"10.244.0.0/24,fd00:10:244::/64";
        expect_ok(rkl_api_update_runtime_config(&f->ctx, &req, &resp, &err));
        nc.pod_cidr = (char *)"10.0.0.0/8\xff";
        expect_error(rkl_api_update_runtime_config(&f->ctx, &req, &resp, &err), -EINVAL,
                     GRPC_STATUS_INVALID_ARGUMENT, "pod_cidr");
        char *big = rkl_arena_alloc(f->arena, 1000);
        memset(big, '1', 999);
        nc.pod_cidr = big;
        expect_error(rkl_api_update_runtime_config(&f->ctx, &req, &resp, &err), -EINVAL,
                     GRPC_STATUS_INVALID_ARGUMENT, "pod_cidr");
}

/* The store has the last word for writes; the cache follows it. */
static void test_cache_follows_store(void **state)
{
        fixture *f = *state;
        rkl_error err = RKL_ERROR_INIT;
        Runtime__V1__PodSandboxStatusResponse ps;
        Runtime__V1__ContainerStatusResponse cs;
        _cleanup_(rkl_pod_spec_done) rkl_pod_spec spec = {0};
        char id[RKL_ID_LEN + 1];

        /* In the store but not (yet) in the cache: a write by full ID still reaches it, and
         * publishes it. */
        spec.name = rkl_xstrdup("n");
        spec.uid = rkl_xstrdup("u");
        spec.namespace = rkl_xstrdup("ns");
        rkl_id_new(id);
        expect_ok(rkl_db_pod_create(f->db, id, &spec, NULL, &err));
        expect_error(pod_status(f, id, false, &ps, &err), -ENOENT, GRPC_STATUS_NOT_FOUND, id);
        expect_ok(stop_pod(f, id, &err));
        expect_ok(pod_status(f, id, false, &ps, &err));
        assert_int_equal(ps.status->state, RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_NOTREADY);

        /* Gone from the store behind the cache's back: a write that finds it gone
         * tombstones it. */
        char *pod = run_pod(f, &(podcfg){0});
        char *c = create_container(f, pod, &(containercfg){0});
        expect_ok(rkl_db_pod_delete(f->db, pod, &err));
        rkl_container_observed o = {.phase = RKL_CONTAINER_PHASE_RUNNING};
        assert_int_equal(rkl_store_container_set_observed(f->store, c, &o, &err), -ENOENT);
        rkl_error_clear(&err);
        expect_error(container_status(f, c, false, &cs, &err), -ENOENT, GRPC_STATUS_NOT_FOUND, c);
        rkl_pod_observed po = {.phase = RKL_POD_PHASE_RUNNING};
        assert_int_equal(rkl_store_pod_set_observed(f->store, pod, &po, &err), -ENOENT);
        rkl_error_clear(&err);
        expect_error(pod_status(f, pod, false, &ps, &err), -ENOENT, GRPC_STATUS_NOT_FOUND, pod);
        /* A stale view put after the tombstone does not bring it back. */
        rkl_container_record *rec = rkl_xnew0(rkl_container_record, 1);
        memcpy(rec->id, c, RKL_ID_LEN + 1);
        memcpy(rec->sandbox_id, pod, RKL_ID_LEN + 1);
        rec->book.version = 1;
        assert_false(rkl_cache_container_put(f->cache, rkl_container_view_new(rec, NULL)));
        assert_int_equal(list_containers(f, NULL).n_containers, 0);
}

/* A kubelet-sized node: lists stay complete and well-formed (speed is for bench/). */
static void test_list_many(void **state)
{
        fixture *f = *state;
        const char *const labels[] = {"io.kubernetes.container.name",
                                      "app",
                                      "io.kubernetes.pod.name",
                                      "web",
                                      "io.kubernetes.pod.namespace",
                                      "default",
                                      "io.kubernetes.pod.uid",
                                      "uid-1",
                                      NULL};
        char *pods[20];

        for (size_t i = 0; i < 20; i++) {
                pods[i] = run_pod(f, &(podcfg){.name = rkl_arena_printf(f->arena, "p%zu", i)});
                for (size_t j = 0; j < 50; j++)
                        create_container(
                            f, pods[i],
                            &(containercfg){.name = rkl_arena_printf(f->arena, "c%zu", j),
                                            .labels = labels,
                                            .annotations = labels});
        }
        Runtime__V1__ListContainersResponse l = list_containers(f, NULL);
        assert_int_equal(l.n_containers, 1000);
        for (size_t i = 0; i < l.n_containers; i++) {
                assert_true(rkl_id_is_valid(l.containers[i]->id));
                assert_string_equal(l.containers[i]->pod_sandbox_id, pods[i / 50]);
                assert_kvs(l.containers[i]->labels, l.containers[i]->n_labels, labels);
        }
        assert_int_equal(list_pods(f, NULL).n_items, 20);
}

/* The value of key in a map field's n entries, or NULL. */
#define KV_GET(entries, n_entries, wanted)                                                         \
        ({                                                                                         \
                const char *_v = NULL;                                                             \
                for (size_t _i = 0; _i < (n_entries) && !_v; _i++)                                 \
                        if (streq((entries)[_i]->key, (wanted)))                                   \
                                _v = (entries)[_i]->value;                                         \
                _v;                                                                                \
        })

/* A List's answer fits what a client takes, whatever the objects hold: the largest items
 * go out with less of their labels and annotations, kubelet's own kept longest (five sandboxes
 * of 4 MiB of annotations once made every unfiltered ListPodSandbox too large to send). */
static void test_list_fits(void **state)
{
        fixture *f = *state;
        rkl_api_config small = f->cfg;
        rkl_error err = RKL_ERROR_INIT;
        char *big = rkl_arena_alloc(f->arena, 8193);
        memset(big, 'x', 8192);
        big[8192] = 0;
        const char *const annotations[] = {"io.kubernetes.pod.terminationGracePeriod", "30", "big",
                                           big, NULL};
        char *ids[8];
        for (size_t i = 0; i < 8; i++) {
                const char *labels[] = {"io.kubernetes.pod.name",
                                        rkl_arena_printf(f->arena, "p%zu", i), "app", "web", NULL};
                ids[i] = run_pod(f, &(podcfg){.name = rkl_arena_printf(f->arena, "p%zu", i),
                                              .labels = labels,
                                              .annotations = annotations});
                const char *clabels[] = {"io.kubernetes.container.name", "c", "app", "web", NULL};
                create_container(
                    f, ids[i],
                    &(containercfg){.name = "c", .labels = clabels, .annotations = annotations});
        }
        /* Whole, 8 items of 8 KiB fit 16 MiB. */
        Runtime__V1__ListPodSandboxResponse l = list_pods(f, NULL);
        assert_int_equal(l.n_items, 8);
        for (size_t i = 0; i < 8; i++)
                assert_non_null(KV_GET(l.items[i]->annotations, l.items[i]->n_annotations, "big"));

        /* 40 KiB: about half go without the big annotation, every one with kubelet's. */
        small.max_reply = 40 * 1024;
        f->ctx.cfg = &small;
        Runtime__V1__ListPodSandboxRequest req = RUNTIME__V1__LIST_POD_SANDBOX_REQUEST__INIT;
        Runtime__V1__ListPodSandboxResponse resp = RUNTIME__V1__LIST_POD_SANDBOX_RESPONSE__INIT;
        expect_ok(rkl_api_list_pod_sandbox(&f->ctx, &req, &resp, &err));
        assert_true(f->ctx.raw_len <= small.max_reply);
        l = *(Runtime__V1__ListPodSandboxResponse *)decode_raw(
            f, &runtime__v1__list_pod_sandbox_response__descriptor);
        assert_int_equal(l.n_items, 8);
        size_t without = 0;
        for (size_t i = 0; i < 8; i++) {
                Runtime__V1__PodSandbox__AnnotationsEntry **a = l.items[i]->annotations;
                size_t n = l.items[i]->n_annotations;
                without += !KV_GET(a, n, "big");
                assert_string_equal(KV_GET(a, n, "io.kubernetes.pod.terminationGracePeriod"), "30");
                assert_int_equal(l.items[i]->n_labels, 2);
        }
        assert_true(without >= 4 && without < 8);

        /* The 8 items take 1,528 bytes with kubelet's annotations only, 1,144 without any,
         * 1,048 with kubelet's labels only, 800 without any. 1,100: no annotations, and some
         * with kubelet's labels only. */
        small.max_reply = 1100;
        l = list_pods(f, NULL);
        assert_int_equal(l.n_items, 8);
        size_t kubelets_only = 0;
        for (size_t i = 0; i < 8; i++) {
                assert_int_equal(l.items[i]->n_annotations, 0);
                assert_true(l.items[i]->n_labels == 1 || l.items[i]->n_labels == 2);
                assert_string_equal(l.items[i]->labels[0]->key, "io.kubernetes.pod.name");
                kubelets_only += l.items[i]->n_labels == 1;
        }
        assert_true(kubelets_only > 0);
        /* 1,000: some with no labels either, every one there with its ID. */
        small.max_reply = 1000;
        l = list_pods(f, NULL);
        assert_int_equal(l.n_items, 8);
        size_t bare = 0;
        for (size_t i = 0; i < 8; i++) {
                assert_true(rkl_id_is_valid(l.items[i]->id));
                bare += l.items[i]->n_labels == 0;
        }
        assert_true(bare > 0);

        /* Containers the same way: at 40 KiB, every one with kubelet's annotation. */
        small.max_reply = 40 * 1024;
        Runtime__V1__ListContainersResponse c = list_containers(f, NULL);
        assert_int_equal(c.n_containers, 8);
        without = 0;
        for (size_t i = 0; i < 8; i++) {
                Runtime__V1__Container__AnnotationsEntry **a = c.containers[i]->annotations;
                size_t n = c.containers[i]->n_annotations;
                without += !KV_GET(a, n, "big");
                assert_string_equal(KV_GET(a, n, "io.kubernetes.pod.terminationGracePeriod"), "30");
        }
        assert_true(without >= 4 && without < 8);

        /* And the stats Lists, which the server packs: a sandbox's entry holds its
         * containers' too. */
        Runtime__V1__ListContainerStatsRequest csreq =
            RUNTIME__V1__LIST_CONTAINER_STATS_REQUEST__INIT;
        Runtime__V1__ListContainerStatsResponse csresp =
            RUNTIME__V1__LIST_CONTAINER_STATS_RESPONSE__INIT;
        expect_ok(rkl_api_list_container_stats(&f->ctx, &csreq, &csresp, &err));
        assert_int_equal(csresp.n_stats, 8);
        assert_true(runtime__v1__list_container_stats_response__get_packed_size(&csresp) <=
                    small.max_reply);
        without = 0;
        for (size_t i = 0; i < 8; i++) {
                Runtime__V1__ContainerAttributes *at = csresp.stats[i]->attributes;
                without += !KV_GET(at->annotations, at->n_annotations, "big");
                assert_non_null(KV_GET(at->annotations, at->n_annotations,
                                       "io.kubernetes.pod.terminationGracePeriod"));
        }
        assert_true(without >= 4 && without < 8);
        Runtime__V1__ListPodSandboxStatsRequest psreq =
            RUNTIME__V1__LIST_POD_SANDBOX_STATS_REQUEST__INIT;
        Runtime__V1__ListPodSandboxStatsResponse psresp =
            RUNTIME__V1__LIST_POD_SANDBOX_STATS_RESPONSE__INIT;
        expect_ok(rkl_api_list_pod_sandbox_stats(&f->ctx, &psreq, &psresp, &err));
        assert_int_equal(psresp.n_stats, 8);
        assert_true(runtime__v1__list_pod_sandbox_stats_response__get_packed_size(&psresp) <=
                    small.max_reply);
        for (size_t i = 0; i < 8; i++)
                assert_non_null(KV_GET(psresp.stats[i]->attributes->annotations,
                                       psresp.stats[i]->attributes->n_annotations,
                                       "io.kubernetes.pod.terminationGracePeriod"));

        /* Not even the IDs fit: RESOURCE_EXHAUSTED, saying so. */
        small.max_reply = 100;
        expect_error(rkl_api_list_pod_sandbox(&f->ctx, &req, &resp, &err), -EMSGSIZE,
                     GRPC_STATUS_RESOURCE_EXHAUSTED, "even without labels and annotations");
        assert_null(f->ctx.raw);

        /* A filtered List (kubelet's, for one pod) is small: whole. */
        small.max_reply = 40 * 1024;
        Runtime__V1__PodSandboxFilter filter = RUNTIME__V1__POD_SANDBOX_FILTER__INIT;
        filter.id = ids[3];
        l = list_pods(f, &filter);
        assert_int_equal(l.n_items, 1);
        assert_non_null(KV_GET(l.items[0]->annotations, l.items[0]->n_annotations, "big"));
        f->ctx.cfg = &f->cfg;
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(test_run_pod, setup, teardown),
            cmocka_unit_test_setup_teardown(test_run_pod_invalid, setup, teardown),
            cmocka_unit_test_setup_teardown(test_run_pod_twice, setup, teardown),
            cmocka_unit_test_setup_teardown(test_stop_remove_pod, setup, teardown),
            cmocka_unit_test_setup_teardown(test_prefixes, setup, teardown),
            cmocka_unit_test_setup_teardown(test_pod_filters, setup, teardown),
            cmocka_unit_test_setup_teardown(test_many_labels, setup, teardown),
            cmocka_unit_test_setup_teardown(test_container_lifecycle, setup, teardown),
            cmocka_unit_test_setup_teardown(test_container_invalid, setup, teardown),
            cmocka_unit_test_setup_teardown(test_container_filters, setup, teardown),
            cmocka_unit_test_setup_teardown(test_observed, setup, teardown),
            cmocka_unit_test_setup_teardown(test_user_specified_image, setup, teardown),
            cmocka_unit_test_setup_teardown(test_exit_reasons, setup, teardown),
            cmocka_unit_test_setup_teardown(test_pod_status_containers, setup, teardown),
            cmocka_unit_test_setup_teardown(test_update_runtime_config, setup, teardown),
            cmocka_unit_test_setup_teardown(test_cache_follows_store, setup, teardown),
            cmocka_unit_test_setup_teardown(test_list_many, setup, teardown),
            cmocka_unit_test_setup_teardown(test_list_fits, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
