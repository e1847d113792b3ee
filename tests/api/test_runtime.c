/* RuntimeService handlers called as plain functions, without a socket. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "api/api.h"
#include "api/runtime.h"
#include "base/alloc.h"
#include "base/config.h"
#include "store/cache.h"

static char listen_path[] = "/run/test.sock", rkt_path[] = "/usr/bin/rkt",
            rkt_data_dir[] = "/var/lib/rktlet/data", state_dir[] = "/var/lib/rktlet";
static const rkl_config options = {
    .listen_path = listen_path,
    .rkt_path = rkt_path,
    .rkt_data_dir = rkt_data_dir,
    .state_dir = state_dir,
};
static const rkl_api_config cfg = {.config = &options, .version = "9.9.9"};

typedef struct fixture {
        rkl_cache *cache;
        rkl_arena *arena;
        rkl_api_ctx ctx;
} fixture;

static int setup(void **state)
{
        fixture *f = rkl_xnew0(fixture, 1);
        f->cache = rkl_cache_new();
        f->arena = rkl_arena_new();
        f->ctx = (rkl_api_ctx){.cfg = &cfg, .cache = f->cache, .arena = f->arena};
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        fixture *f = *state;
        rkl_cache_free(f->cache);
        rkl_arena_free(f->arena);
        free(f);
        return 0;
}

static void set_health_net(fixture *f, bool rkt, bool systemd, bool net)
{
        rkl_health h = {
            .rkt_ok = rkt,
            .rkt_version = rkt ? (char *)"1.30.0" : NULL,
            .rkt_detail = rkt ? (char *)"rkt Version: 1.30.0" : (char *)"no rkt \xff here",
            .rkt_patched = rkt,
            .rkt_patches = rkt ? (char *)"8 patches" : NULL,
            .systemd_ok = systemd,
            .systemd_version = systemd ? (char *)"252" : NULL,
            .systemd_detail = systemd ? NULL : (char *)"cannot connect",
            .net_ok = net,
            .net_reason = net ? NULL : (char *)"NetworkPluginNotReady",
            .net_detail = net ? NULL : (char *)"cni: no network configuration in '/etc/cni/net.d'",
            .net_config = net ? (char *)"/etc/cni/net.d/10-podnet.conflist" : NULL,
            .probed_ns = 1,
        };
        rkl_cache_set_health(f->cache, &h);
}

static void set_health(fixture *f, bool rkt, bool systemd)
{
        set_health_net(f, rkt, systemd, true);
}

static void test_version(void **state)
{
        fixture *f = *state;
        Runtime__V1__VersionRequest req = RUNTIME__V1__VERSION_REQUEST__INIT;
        Runtime__V1__VersionResponse resp = RUNTIME__V1__VERSION_RESPONSE__INIT;
        rkl_error err = RKL_ERROR_INIT;

        set_health(f, true, true);
        assert_int_equal(rkl_api_version(&f->ctx, &req, &resp, &err), 0);
        assert_string_equal(resp.runtime_name, "rktlet");
        assert_string_equal(resp.runtime_api_version, "v1");
        assert_string_equal(resp.runtime_version, "9.9.9+rkt.1.30.0");
        assert_string_equal(resp.version, "0.1.0");

        set_health(f, false, true);
        assert_int_equal(rkl_api_version(&f->ctx, &req, &resp, &err), 0);
        assert_string_equal(resp.runtime_version, "9.9.9");
}

static const Runtime__V1__RuntimeCondition *find(const Runtime__V1__StatusResponse *r,
                                                 const char *type)
{
        for (size_t i = 0; i < r->status->n_conditions; i++)
                if (streq(r->status->conditions[i]->type, type))
                        return r->status->conditions[i];
        return NULL;
}

static void test_status_ready(void **state)
{
        fixture *f = *state;
        Runtime__V1__StatusRequest req = RUNTIME__V1__STATUS_REQUEST__INIT;
        Runtime__V1__StatusResponse resp = RUNTIME__V1__STATUS_RESPONSE__INIT;
        rkl_error err = RKL_ERROR_INIT;

        set_health(f, true, true);
        assert_int_equal(rkl_api_status(&f->ctx, &req, &resp, &err), 0);
        assert_int_equal(resp.status->n_conditions, 2);
        assert_true(find(&resp, "RuntimeReady")->status);
        assert_true(find(&resp, "NetworkReady")->status);
        assert_int_equal(resp.n_info, 0);
}

static void test_status_not_ready(void **state)
{
        fixture *f = *state;
        Runtime__V1__StatusRequest req = RUNTIME__V1__STATUS_REQUEST__INIT;
        Runtime__V1__StatusResponse resp = RUNTIME__V1__STATUS_RESPONSE__INIT;
        rkl_error err = RKL_ERROR_INIT;

        set_health(f, true, false);
        assert_int_equal(rkl_api_status(&f->ctx, &req, &resp, &err), 0);
        assert_false(find(&resp, "RuntimeReady")->status);
        assert_string_equal(find(&resp, "RuntimeReady")->reason, "SystemdUnreachable");
        assert_string_equal(find(&resp, "RuntimeReady")->message, "cannot connect");
        assert_true(find(&resp, "NetworkReady")->status);

        set_health(f, false, true);
        req.verbose = true;
        assert_int_equal(rkl_api_status(&f->ctx, &req, &resp, &err), 0);
        assert_string_equal(find(&resp, "RuntimeReady")->reason, "RktUnavailable");
        /* Bytes that are not UTF-8 never reach a Go client. */
        assert_string_equal(find(&resp, "RuntimeReady")->message, "no rkt ? here");
        assert_int_equal(resp.n_info, 4);
        assert_string_equal(resp.info[0]->key, "config");
        assert_non_null(strstr(resp.info[0]->value, "\"rktPath\":\"/usr/bin/rkt\""));
        assert_string_equal(resp.info[3]->key, "network");
        assert_non_null(strstr(resp.info[3]->value, "10-podnet.conflist"));

        /* The network on its own: what the reconciler found in the configuration directory
         * (kubelet keeps the node NotReady on containerd's reason). */
        set_health_net(f, true, true, false);
        req.verbose = false;
        assert_int_equal(rkl_api_status(&f->ctx, &req, &resp, &err), 0);
        assert_true(find(&resp, "RuntimeReady")->status);
        assert_false(find(&resp, "NetworkReady")->status);
        assert_string_equal(find(&resp, "NetworkReady")->reason, "NetworkPluginNotReady");
        assert_non_null(strstr(find(&resp, "NetworkReady")->message, "/etc/cni/net.d"));
}

/* An rkt without rktlet's fixes runs, and Status says it must not be used. */
static void test_status_unpatched(void **state)
{
        fixture *f = *state;
        Runtime__V1__StatusRequest req = RUNTIME__V1__STATUS_REQUEST__INIT;
        Runtime__V1__StatusResponse resp = RUNTIME__V1__STATUS_RESPONSE__INIT;
        rkl_error err = RKL_ERROR_INIT;
        rkl_health h = {
            .rkt_ok = true,
            .rkt_version = (char *)"1.30.0",
            .rkt_patched = false,
            .rkt_patches = (char *)"rkt '/usr/bin/rkt' lacks fixes rktlet relies on: built "
                                   "without stderr-fd",
            .systemd_ok = true,
            .net_ok = true,
            .probed_ns = 1,
        };

        rkl_cache_set_health(f->cache, &h);
        req.verbose = true;
        assert_int_equal(rkl_api_status(&f->ctx, &req, &resp, &err), 0);
        assert_false(find(&resp, "RuntimeReady")->status);
        assert_string_equal(find(&resp, "RuntimeReady")->reason, "RktUnpatched");
        assert_non_null(strstr(find(&resp, "RuntimeReady")->message, "without stderr-fd"));
        assert_non_null(strstr(resp.info[1]->value, "\"patched\":false"));
}

static void test_runtime_config(void **state)
{
        fixture *f = *state;
        Runtime__V1__RuntimeConfigRequest req = RUNTIME__V1__RUNTIME_CONFIG_REQUEST__INIT;
        Runtime__V1__RuntimeConfigResponse resp = RUNTIME__V1__RUNTIME_CONFIG_RESPONSE__INIT;
        rkl_error err = RKL_ERROR_INIT;

        assert_int_equal(rkl_api_runtime_config(&f->ctx, &req, &resp, &err), 0);
        assert_non_null(resp.linux);
        assert_int_equal(resp.linux->cgroup_driver, RUNTIME__V1__CGROUP_DRIVER__SYSTEMD);
}

static void test_every_method_known(void **state)
{
        const ProtobufCServiceDescriptor *svcs[] = {&runtime__v1__runtime_service__descriptor,
                                                    &runtime__v1__image_service__descriptor};
        assert_int_equal(svcs[0]->n_methods + svcs[1]->n_methods, 43);
        assert_non_null(rkl_api_handler_lookup("RuntimeService", "Version"));
        assert_null(rkl_api_handler_lookup("RuntimeService", "NoSuchMethod"));
        assert_null(rkl_api_handler_lookup("ImageService", "Version"));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(test_version, setup, teardown),
            cmocka_unit_test_setup_teardown(test_status_ready, setup, teardown),
            cmocka_unit_test_setup_teardown(test_status_not_ready, setup, teardown),
            cmocka_unit_test_setup_teardown(test_status_unpatched, setup, teardown),
            cmocka_unit_test_setup_teardown(test_runtime_config, setup, teardown),
            cmocka_unit_test(test_every_method_known),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
