/* Validation at the boundary: good configs convert field for field, bad ones are refused
 * with the field named and nothing half-built. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "api/convert.h"
#include "base/macro.h"

static Runtime__V1__PodSandboxMetadata pod_md = {
    PROTOBUF_C_MESSAGE_INIT(&runtime__v1__pod_sandbox_metadata__descriptor), (char *)"web",
    (char *)"uid-1", (char *)"default", 2};

static Runtime__V1__PodSandboxConfig__LabelsEntry label_app = {
    PROTOBUF_C_MESSAGE_INIT(&runtime__v1__pod_sandbox_config__labels_entry__descriptor),
    (char *)"app", (char *)"web ☃"};
static Runtime__V1__PodSandboxConfig__LabelsEntry label_empty = {
    PROTOBUF_C_MESSAGE_INIT(&runtime__v1__pod_sandbox_config__labels_entry__descriptor),
    (char *)"io.kubernetes.pod.empty", (char *)""};

static void pod_config(Runtime__V1__PodSandboxConfig *c)
{
        static Runtime__V1__PodSandboxConfig__LabelsEntry *labels[2];
        runtime__v1__pod_sandbox_config__init(c);
        labels[0] = &label_app;
        labels[1] = &label_empty;
        c->metadata = &pod_md;
        c->hostname = (char *)"web-0";
        c->log_directory = (char *)"/var/log/pods/default_web_uid-1";
        c->labels = labels;
        c->n_labels = 2;
}

static void test_pod_ok(void **state)
{
        Runtime__V1__PodSandboxConfig c;
        rkl_pod_spec s;
        rkl_error err = RKL_ERROR_INIT;

        pod_config(&c);
        assert_int_equal(rkl_api_pod_spec_from_pb(&c, &s, &err), 0);
        assert_string_equal(s.name, "web");
        assert_string_equal(s.uid, "uid-1");
        assert_string_equal(s.namespace, "default");
        assert_int_equal(s.attempt, 2);
        assert_string_equal(s.hostname, "web-0");
        assert_int_equal(s.labels.n, 2);
        assert_string_equal(rkl_kvs_get(&s.labels, "app"), "web ☃");
        assert_string_equal(rkl_kvs_get(&s.labels, "io.kubernetes.pod.empty"), "");
        assert_false(s.host_network);
        rkl_pod_spec_done(&s);
}

static void expect_pod_error(Runtime__V1__PodSandboxConfig *c, const char *field)
{
        rkl_pod_spec s = {0};
        rkl_error err = RKL_ERROR_INIT;
        assert_int_equal(rkl_api_pod_spec_from_pb(c, &s, &err), -EINVAL);
        if (!strstr(err.msg, field))
                fail_msg("expected '%s' in '%s'", field, err.msg);
        assert_null(s.name); /* nothing half-built reaches the caller */
}

static void test_pod_bad(void **state)
{
        Runtime__V1__PodSandboxConfig c;
        Runtime__V1__PodSandboxMetadata md = pod_md;

        expect_pod_error(NULL, "config");
        pod_config(&c);
        c.metadata = NULL;
        expect_pod_error(&c, "config.metadata");

        pod_config(&c);
        md.name = (char *)"";
        c.metadata = &md;
        expect_pod_error(&c, "config.metadata.name");

        pod_config(&c);
        c.log_directory = (char *)"relative/dir";
        expect_pod_error(&c, "config.log_directory");
        c.log_directory = (char *)"/var/log/../../etc";
        expect_pod_error(&c, "config.log_directory");

        pod_config(&c);
        c.hostname = (char *)"--net=host";
        expect_pod_error(&c, "config.hostname");

        pod_config(&c);
        Runtime__V1__PodSandboxConfig__LabelsEntry bad = label_app;
        bad.value = (char *)"\xff\xfe";
        Runtime__V1__PodSandboxConfig__LabelsEntry *labels[] = {&bad};
        c.labels = labels;
        c.n_labels = 1;
        expect_pod_error(&c, "config.labels key 'app'");

        pod_config(&c);
        Runtime__V1__DNSConfig dns = RUNTIME__V1__DNSCONFIG__INIT;
        char *servers[] = {(char *)"8.8.8.8,1.1.1.1"};
        dns.servers = servers;
        dns.n_servers = 1;
        c.dns_config = &dns;
        expect_pod_error(&c, "config.dns_config.servers[0]");
        servers[0] = (char *)"dns.example.com";
        expect_pod_error(&c, "not an IP address");

        pod_config(&c);
        Runtime__V1__PortMapping pm = RUNTIME__V1__PORT_MAPPING__INIT;
        Runtime__V1__PortMapping *pms[] = {&pm};
        pm.container_port = 80;
        pm.host_port = 70000;
        c.port_mappings = pms;
        c.n_port_mappings = 1;
        expect_pod_error(&c, "port_mappings[0]");
        pm.host_port = 8080;
        pm.host_ip = (char *)"localhost";
        expect_pod_error(&c, "port_mappings[0].host_ip");

        pod_config(&c);
        Runtime__V1__LinuxPodSandboxConfig l = RUNTIME__V1__LINUX_POD_SANDBOX_CONFIG__INIT;
        Runtime__V1__LinuxSandboxSecurityContext sc =
            RUNTIME__V1__LINUX_SANDBOX_SECURITY_CONTEXT__INIT;
        Runtime__V1__NamespaceOption ns = RUNTIME__V1__NAMESPACE_OPTION__INIT;
        ns.pid = RUNTIME__V1__NAMESPACE_MODE__NODE;
        sc.namespace_options = &ns;
        l.security_context = &sc;
        c.linux = &l;
        expect_pod_error(&c, "namespace_options.pid");
}

static void test_pod_host_network(void **state)
{
        Runtime__V1__PodSandboxConfig c;
        Runtime__V1__LinuxPodSandboxConfig l = RUNTIME__V1__LINUX_POD_SANDBOX_CONFIG__INIT;
        Runtime__V1__LinuxSandboxSecurityContext sc =
            RUNTIME__V1__LINUX_SANDBOX_SECURITY_CONTEXT__INIT;
        Runtime__V1__NamespaceOption ns = RUNTIME__V1__NAMESPACE_OPTION__INIT;
        rkl_pod_spec s;
        rkl_error err = RKL_ERROR_INIT;

        pod_config(&c);
        ns.network = RUNTIME__V1__NAMESPACE_MODE__NODE;
        sc.namespace_options = &ns;
        sc.privileged = true;
        l.security_context = &sc;
        l.cgroup_parent = (char *)"/kubepods.slice/kubepods-pod1.slice";
        c.linux = &l;
        assert_int_equal(rkl_api_pod_spec_from_pb(&c, &s, &err), 0);
        assert_true(s.host_network);
        assert_true(s.privileged);
        assert_string_equal(s.cgroup_parent, "/kubepods.slice/kubepods-pod1.slice");
        rkl_pod_spec_done(&s);
}

static Runtime__V1__ContainerMetadata container_md = {
    PROTOBUF_C_MESSAGE_INIT(&runtime__v1__container_metadata__descriptor), (char *)"app", 1};
static Runtime__V1__ImageSpec image = {
    PROTOBUF_C_MESSAGE_INIT(&runtime__v1__image_spec__descriptor), (char *)"busybox"};

static void container_config(Runtime__V1__ContainerConfig *c)
{
        runtime__v1__container_config__init(c);
        c->metadata = &container_md;
        c->image = &image;
}

static void test_container_ok(void **state)
{
        Runtime__V1__ContainerConfig c;
        Runtime__V1__KeyValue env = RUNTIME__V1__KEY_VALUE__INIT;
        Runtime__V1__KeyValue *envs[] = {&env};
        char *args[] = {(char *)"-c", (char *)"", (char *)"echo"};
        Runtime__V1__LinuxContainerConfig l = RUNTIME__V1__LINUX_CONTAINER_CONFIG__INIT;
        Runtime__V1__LinuxContainerResources res = RUNTIME__V1__LINUX_CONTAINER_RESOURCES__INIT;
        Runtime__V1__LinuxContainerSecurityContext sc =
            RUNTIME__V1__LINUX_CONTAINER_SECURITY_CONTEXT__INIT;
        Runtime__V1__Int64Value uid = RUNTIME__V1__INT64_VALUE__INIT;
        rkl_container_spec s;
        rkl_error err = RKL_ERROR_INIT;

        container_config(&c);
        env.key = (char *)"GREETING";
        env.value = (char *)"a=b,c";
        c.envs = envs;
        c.n_envs = 1;
        c.args = args;
        c.n_args = 3;
        c.log_path = (char *)"app/1.log";
        c.tty = true;
        res.memory_limit_in_bytes = 1 << 26;
        res.oom_score_adj = -998;
        l.resources = &res;
        uid.value = 1000;
        sc.run_as_user = &uid;
        l.security_context = &sc;
        c.linux = &l;
        assert_int_equal(rkl_api_container_spec_from_pb(&c, &s, &err), 0);
        assert_string_equal(s.name, "app");
        assert_int_equal(s.attempt, 1);
        assert_string_equal(s.image, "busybox");
        assert_null(s.user_image); /* not said: the image is shown as named */
        assert_string_equal(rkl_container_spec_image_name(&s), "busybox");
        assert_string_equal(s.args[1], "");
        assert_string_equal(rkl_kvs_get(&s.envs, "GREETING"), "a=b,c");
        assert_string_equal(s.log_path, "app/1.log");
        assert_true(s.tty);
        assert_int_equal(s.memory_limit, 1 << 26);
        assert_int_equal(s.oom_score_adj, -998);
        assert_true(s.has_run_as_user);
        assert_int_equal(s.run_as_user, 1000);
        rkl_container_spec_done(&s);
}

static void expect_container_error(Runtime__V1__ContainerConfig *c, const char *field)
{
        rkl_container_spec s = {0};
        rkl_error err = RKL_ERROR_INIT;
        assert_int_equal(rkl_api_container_spec_from_pb(c, &s, &err), -EINVAL);
        if (!strstr(err.msg, field))
                fail_msg("expected '%s' in '%s'", field, err.msg);
        assert_null(s.name);
}

static void test_container_bad(void **state)
{
        Runtime__V1__ContainerConfig c;

        container_config(&c);
        c.image = NULL;
        expect_container_error(&c, "config.image");

        container_config(&c);
        Runtime__V1__Mount m = RUNTIME__V1__MOUNT__INIT;
        Runtime__V1__Mount *ms[] = {&m};
        m.container_path = (char *)"/data";
        m.host_path = (char *)"/srv/a,kind=empty";
        c.mounts = ms;
        c.n_mounts = 1;
        expect_container_error(&c, "mounts[0].host_path");
        m.host_path = (char *)"srv";
        expect_container_error(&c, "mounts[0].host_path");
        m.host_path = (char *)"/srv";
        m.propagation = RUNTIME__V1__MOUNT_PROPAGATION__PROPAGATION_BIDIRECTIONAL;
        expect_container_error(&c, "mounts[0].propagation");

        container_config(&c);
        Runtime__V1__KeyValue env = RUNTIME__V1__KEY_VALUE__INIT;
        Runtime__V1__KeyValue *envs[] = {&env};
        env.key = (char *)"A=B";
        c.envs = envs;
        c.n_envs = 1;
        expect_container_error(&c, "config.envs[0].key");

        container_config(&c);
        c.log_path = (char *)"../../etc/passwd";
        expect_container_error(&c, "config.log_path");

        container_config(&c);
        char *cmd[] = {(char *)""};
        c.command = cmd;
        c.n_command = 1;
        expect_container_error(&c, "config.command[0]");

        container_config(&c);
        Runtime__V1__LinuxContainerConfig l = RUNTIME__V1__LINUX_CONTAINER_CONFIG__INIT;
        Runtime__V1__LinuxContainerSecurityContext sc =
            RUNTIME__V1__LINUX_CONTAINER_SECURITY_CONTEXT__INIT;
        Runtime__V1__Int64Value gid = RUNTIME__V1__INT64_VALUE__INIT;
        sc.run_as_group = &gid;
        l.security_context = &sc;
        c.linux = &l;
        expect_container_error(&c, "run_as_group");

        Runtime__V1__Capability caps = RUNTIME__V1__CAPABILITY__INIT;
        char *add[] = {(char *)"NET_ADMIN; rm -rf /"};
        caps.add_capabilities = add;
        caps.n_add_capabilities = 1;
        sc.run_as_group = NULL;
        sc.capabilities = &caps;
        expect_container_error(&c, "is not a capability");

        Runtime__V1__LinuxContainerResources res = RUNTIME__V1__LINUX_CONTAINER_RESOURCES__INIT;
        sc.capabilities = NULL;
        res.oom_score_adj = 5000;
        l.resources = &res;
        expect_container_error(&c, "oom_score_adj");
}

/* The seccomp forms CRI has (the profile and the deprecated path), and what is refused. */
static void test_container_seccomp(void **state)
{
        Runtime__V1__ContainerConfig c;
        Runtime__V1__LinuxContainerConfig l = RUNTIME__V1__LINUX_CONTAINER_CONFIG__INIT;
        Runtime__V1__LinuxContainerSecurityContext sc =
            RUNTIME__V1__LINUX_CONTAINER_SECURITY_CONTEXT__INIT;
        rkl_error err = RKL_ERROR_INIT;
        static const struct {
                const char *path;
                rkl_seccomp want;
        } paths[] = {
            {"", RKL_SECCOMP_UNCONFINED},
            {"unconfined", RKL_SECCOMP_UNCONFINED},
            {"runtime/default", RKL_SECCOMP_RUNTIME_DEFAULT},
            {"docker/default", RKL_SECCOMP_RUNTIME_DEFAULT},
        };

        container_config(&c);
        rkl_container_spec s = {0};
        assert_int_equal(rkl_api_container_spec_from_pb(&c, &s, &err), 0);
        assert_int_equal(s.seccomp, RKL_SECCOMP_UNCONFINED); /* no security context at all */
        rkl_container_spec_done(&s);

        l.security_context = &sc;
        c.linux = &l;
        for (size_t i = 0; i < ELEMENTSOF(paths); i++) {
                sc.seccomp_profile_path = (char *)paths[i].path;
                assert_int_equal(rkl_api_container_spec_from_pb(&c, &s, &err), 0);
                assert_int_equal(s.seccomp, paths[i].want);
                rkl_container_spec_done(&s);
        }
        sc.seccomp_profile_path = (char *)"block.json";
        expect_container_error(&c, "seccomp_profile_path");
        sc.seccomp_profile_path = (char *)"localhost/relative.json";
        expect_container_error(&c, "localhost_ref");
        sc.seccomp_profile_path = (char *)"localhost/nonexistent/profile.json";
        expect_container_error(&c, "localhost_ref");
        sc.seccomp_profile_path = (char *)"";
        sc.apparmor_profile = (char *)"localhost/deny-write";
        expect_container_error(&c, "apparmor_profile");
        sc.apparmor_profile = (char *)"unconfined";
        char *masked[] = {(char *)"/proc/%n"};
        sc.masked_paths = masked;
        sc.n_masked_paths = 1;
        expect_container_error(&c, "masked_paths");
}

/* n entries of map type d (a string-to-string map's entry), keys "k<i>", values of
 * value_len bytes. */
static void **big_map(const ProtobufCMessageDescriptor *d, size_t n, size_t value_len)
{
        void **l = calloc(n + 1, sizeof(*l));
        char *value = malloc(value_len + 1);
        assert_non_null(l);
        assert_non_null(value);
        memset(value, 'v', value_len);
        value[value_len] = 0;
        for (size_t i = 0; i < n; i++) {
                ProtobufCMessage *e = calloc(1, d->sizeof_message);
                assert_non_null(e);
                protobuf_c_message_init(d, e);
                char *key = malloc(16);
                assert_non_null(key);
                (void)snprintf(key, 16, "k%zu", i);
                *(char **)((char *)e + d->fields[0].offset) = key;
                *(char **)((char *)e + d->fields[1].offset) = value;
                l[i] = e;
        }
        l[n] = value; /* freed last */
        return l;
}

static void big_map_free(const ProtobufCMessageDescriptor *d, void **l, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                free(*(char **)((char *)l[i] + d->fields[0].offset));
                free(l[i]);
        }
        free(l[n]);
        free(l);
}

/* A sandbox's or a container's labels and annotations: 256 KiB each at most, keys and values
 * counted as Kubernetes counts an object's annotations (five sandboxes of 4 MiB of annotations
 * once broke every unfiltered ListPodSandbox). */
static void test_metadata_bytes(void **state)
{
        const ProtobufCMessageDescriptor
            *pl = &runtime__v1__pod_sandbox_config__labels_entry__descriptor,
            *pa = &runtime__v1__pod_sandbox_config__annotations_entry__descriptor,
            *cl = &runtime__v1__container_config__labels_entry__descriptor,
            *ca = &runtime__v1__container_config__annotations_entry__descriptor;
        Runtime__V1__PodSandboxConfig c;
        Runtime__V1__ContainerConfig cc;
        rkl_pod_spec s = {0};
        rkl_error err = RKL_ERROR_INIT;

        /* 63 entries of 4 KiB and their keys: 258,227 bytes, just under; in both maps, since
         * the cap is per map. */
        void **l = big_map(pl, 63, 4096), **a = big_map(pa, 63, 4096);
        pod_config(&c);
        c.labels = (Runtime__V1__PodSandboxConfig__LabelsEntry **)l;
        c.n_labels = 63;
        c.annotations = (Runtime__V1__PodSandboxConfig__AnnotationsEntry **)a;
        c.n_annotations = 63;
        assert_int_equal(rkl_api_pod_spec_from_pb(&c, &s, &err), 0);
        rkl_pod_spec_done(&s);
        big_map_free(pl, l, 63);
        big_map_free(pa, a, 63);

        /* 64 of them: 262,326 bytes, over; refused naming the field and the limit. */
        l = big_map(pl, 64, 4096);
        a = big_map(pa, 64, 4096);
        pod_config(&c);
        c.annotations = (Runtime__V1__PodSandboxConfig__AnnotationsEntry **)a;
        c.n_annotations = 64;
        expect_pod_error(&c, "config.annotations");
        assert_int_equal(rkl_api_pod_spec_from_pb(&c, &s, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "262144"));
        pod_config(&c);
        c.labels = (Runtime__V1__PodSandboxConfig__LabelsEntry **)l;
        c.n_labels = 64;
        expect_pod_error(&c, "config.labels");
        big_map_free(pl, l, 64);
        big_map_free(pa, a, 64);

        /* A container's, the same. */
        l = big_map(cl, 64, 4096);
        a = big_map(ca, 64, 4096);
        container_config(&cc);
        cc.annotations = (Runtime__V1__ContainerConfig__AnnotationsEntry **)a;
        cc.n_annotations = 64;
        expect_container_error(&cc, "config.annotations");
        container_config(&cc);
        cc.labels = (Runtime__V1__ContainerConfig__LabelsEntry **)l;
        cc.n_labels = 64;
        expect_container_error(&cc, "config.labels");
        big_map_free(cl, l, 64);
        big_map_free(ca, a, 64);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_pod_ok),           cmocka_unit_test(test_pod_bad),
            cmocka_unit_test(test_pod_host_network), cmocka_unit_test(test_container_ok),
            cmocka_unit_test(test_container_bad),    cmocka_unit_test(test_container_seccomp),
            cmocka_unit_test(test_metadata_bytes),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
