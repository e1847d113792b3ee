/* The rules from rkt's on-disk truth to what CRI reports. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/alloc.h"
#include "reconciler/observe.h"

static rkl_pod_record pod_rec(rkl_pod_desired d, rkl_pod_phase phase)
{
        return (rkl_pod_record){
            .id = "0000000000000000000000000000000000000000000000000000000000000001",
            .desired = d,
            .observed = {.phase = phase},
            .rkt_uuid = (char *)"11111111-2222-3333-4444-555555555555",
        };
}

static rkl_poddir_pod running_pod(bool ready)
{
        return (rkl_poddir_pod){
            .uuid = "11111111-2222-3333-4444-555555555555",
            .dir = RKL_PODDIR_RUN,
            .state = RKL_POD_STATE_RUNNING,
            .locked = true,
            .supervisor_ready = ready,
            .ppid = 4242,
            .created_ns = 1000,
            .started_ns = 2000,
            .ip = (char *)"172.16.28.7",
        };
}

static void test_pod_phases(void **state)
{
        rkl_pod_observed o;
        bool dead;

        rkl_pod_record rec = pod_rec(RKL_POD_DESIRED_READY, RKL_POD_PHASE_PENDING);
        rkl_poddir_pod p = running_pod(false);
        rkl_observe_pod(&rec, &p, true, 99, &o, &dead);
        assert_int_equal(o.phase, RKL_POD_PHASE_PENDING); /* not ready yet */
        assert_false(dead);
        assert_int_equal(o.pid, 4242);
        assert_string_equal(o.ip, "172.16.28.7");
        rkl_pod_observed_done(&o);

        p.supervisor_ready = true;
        /* Ready, but its network is not yet: still pending. */
        rkl_observe_pod(&rec, &p, false, 99, &o, &dead);
        assert_int_equal(o.phase, RKL_POD_PHASE_PENDING);
        rkl_pod_observed_done(&o);
        rkl_observe_pod(&rec, &p, true, 99, &o, &dead);
        assert_int_equal(o.phase, RKL_POD_PHASE_RUNNING);
        assert_int_equal(o.created_ns, 1000);
        assert_int_equal(o.started_ns, 2000);
        rkl_pod_observed_done(&o);

        /* A running pod that exits on its own: NOTREADY for good, kubelet recreates it. */
        rec = pod_rec(RKL_POD_DESIRED_READY, RKL_POD_PHASE_RUNNING);
        p.state = RKL_POD_STATE_EXITED;
        rkl_observe_pod(&rec, &p, true, 99, &o, &dead);
        assert_true(dead);
        assert_int_equal(o.phase, RKL_POD_PHASE_FAILED);
        assert_string_equal(o.reason, "PodExited");
        assert_int_equal(o.finished_ns, 99);
        rkl_pod_observed_done(&o);

        /* The same exit after a stop was asked for is just stopped. */
        rec = pod_rec(RKL_POD_DESIRED_STOPPED, RKL_POD_PHASE_RUNNING);
        rkl_observe_pod(&rec, &p, true, 99, &o, &dead);
        assert_int_equal(o.phase, RKL_POD_PHASE_STOPPED);
        rkl_pod_observed_done(&o);

        /* The directory vanished under a running pod. */
        rec = pod_rec(RKL_POD_DESIRED_READY, RKL_POD_PHASE_RUNNING);
        rkl_observe_pod(&rec, NULL, true, 77, &o, &dead);
        assert_true(dead);
        assert_int_equal(o.phase, RKL_POD_PHASE_FAILED);
        assert_string_equal(o.reason, "PodGone");
        rkl_pod_observed_done(&o);
}

static rkl_poddir_app app(rkl_pod_app_state st, bool known, int code)
{
        return (rkl_poddir_app){
            .name = (char *)"c1",
            .image_id = (char *)"sha512-abc",
            .in_manifest = true,
            .state = st,
            .created_ns = 10,
            .started_ns = st >= RKL_POD_APP_RUNNING ? 20 : 0,
            .finished_ns = st == RKL_POD_APP_EXITED ? 30 : 0,
            .exit_known = known,
            .exit_code = code,
        };
}

static rkl_container_observed container(rkl_container_desired d, rkl_pod_desired pd,
                                        rkl_poddir_app a, bool oom)
{
        rkl_container_record rec = {.app_name = (char *)"c1", .desired = d};
        rkl_pod_record pod = pod_rec(pd, RKL_POD_PHASE_RUNNING);
        rkl_poddir_pod p = running_pod(true);
        rkl_container_observed o;
        p.apps = &a;
        p.n_apps = 1;
        rkl_observe_container(&rec, &pod, &p, RKL_APP_PROC_SEEN, 77, oom, 0, &o);
        return o;
}

static void test_container_states(void **state)
{
        rkl_container_observed o;

        o = container(RKL_CONTAINER_DESIRED_CREATED, RKL_POD_DESIRED_READY,
                      app(RKL_POD_APP_CREATED, 0, 0), false);
        assert_int_equal(o.phase, RKL_CONTAINER_PHASE_CREATED);
        assert_int_equal(o.created_ns, 10);
        assert_string_equal(o.image_ref, "sha512-abc");
        rkl_container_observed_done(&o);

        o = container(RKL_CONTAINER_DESIRED_RUNNING, RKL_POD_DESIRED_READY,
                      app(RKL_POD_APP_RUNNING, 0, 0), false);
        assert_int_equal(o.phase, RKL_CONTAINER_PHASE_RUNNING);
        assert_int_equal(o.started_ns, 20);
        assert_false(o.has_exit_code);
        rkl_container_observed_done(&o);

        /* An app that exits by itself keeps its own code. */
        o = container(RKL_CONTAINER_DESIRED_RUNNING, RKL_POD_DESIRED_READY,
                      app(RKL_POD_APP_EXITED, 1, 7), false);
        assert_int_equal(o.phase, RKL_CONTAINER_PHASE_EXITED);
        assert_int_equal(o.exit_code, 7);
        assert_null(o.reason); /* the API names plain exits (Completed, Error) */
        assert_int_equal(o.finished_ns, 30);
        rkl_container_observed_done(&o);
}

static void test_running_only_with_a_process(void **state)
{
        rkl_container_record rec = {.app_name = (char *)"c1",
                                    .desired = RKL_CONTAINER_DESIRED_RUNNING,
                                    .observed = {.phase = RKL_CONTAINER_PHASE_CREATED}};
        rkl_poddir_app a = app(RKL_POD_APP_RUNNING, 0, 0);
        rkl_poddir_pod p = running_pod(true);
        rkl_container_observed o;
        p.apps = &a;
        p.n_apps = 1;

        /* rkt says started, the cgroup is still empty: not running yet. */
        rkl_observe_container(&rec, NULL, &p, RKL_APP_PROC_NONE, 0, false, 0, &o);
        assert_int_equal(o.phase, RKL_CONTAINER_PHASE_CREATED);
        rkl_container_observed_done(&o);
        rkl_observe_container(&rec, NULL, &p, RKL_APP_PROC_SEEN, 4321, false, 0, &o);
        assert_int_equal(o.phase, RKL_CONTAINER_PHASE_RUNNING);
        assert_int_equal(o.pid, 4321);
        rkl_container_observed_done(&o);
        /* No cgroup to ask (another layout): rkt's word is taken. */
        rkl_observe_container(&rec, NULL, &p, RKL_APP_PROC_UNKNOWN, 0, false, 0, &o);
        assert_int_equal(o.phase, RKL_CONTAINER_PHASE_RUNNING);
        rkl_container_observed_done(&o);
}

static void test_exit_codes(void **state)
{
        rkl_container_observed o;

        /* Our stop: rkt's bare signal number becomes Kubernetes' 128+N. */
        o = container(RKL_CONTAINER_DESIRED_STOPPED, RKL_POD_DESIRED_READY,
                      app(RKL_POD_APP_EXITED, 1, SIGTERM), false);
        assert_int_equal(o.exit_code, 143);
        rkl_container_observed_done(&o);
        o = container(RKL_CONTAINER_DESIRED_STOPPED, RKL_POD_DESIRED_READY,
                      app(RKL_POD_APP_EXITED, 1, SIGKILL), false);
        assert_int_equal(o.exit_code, 137);
        rkl_container_observed_done(&o);
        /* A stop of the whole pod counts too. */
        o = container(RKL_CONTAINER_DESIRED_RUNNING, RKL_POD_DESIRED_STOPPED,
                      app(RKL_POD_APP_EXITED, 1, SIGTERM), false);
        assert_int_equal(o.exit_code, 143);
        rkl_container_observed_done(&o);

        /* OOM: 137 and OOMKilled, whoever wanted what. */
        o = container(RKL_CONTAINER_DESIRED_RUNNING, RKL_POD_DESIRED_READY,
                      app(RKL_POD_APP_EXITED, 1, SIGKILL), true);
        assert_int_equal(o.exit_code, 137);
        assert_string_equal(o.reason, "OOMKilled");
        rkl_container_observed_done(&o);

        /* Unknown (the pod stopped first): 255, and says why. */
        o = container(RKL_CONTAINER_DESIRED_RUNNING, RKL_POD_DESIRED_READY,
                      app(RKL_POD_APP_EXITED, 0, 0), false);
        assert_true(o.has_exit_code);
        assert_int_equal(o.exit_code, 255);
        assert_non_null(strstr(o.message, "unknown"));
        rkl_container_observed_done(&o);
}

/* The app's exit with its pod's end, which rktlet did not ask for (the unit stopped, the
 * pod's nspawn or systemd killed): EXITED with a reason, which stays. Not for an app that
 * exited before, nor for one rktlet stopped. */
static void test_ended_with_pod(void **state)
{
        rkl_container_record rec = {.app_name = (char *)"c1",
                                    .desired = RKL_CONTAINER_DESIRED_RUNNING,
                                    .observed = {.phase = RKL_CONTAINER_PHASE_RUNNING}};
        rkl_pod_record pod = pod_rec(RKL_POD_DESIRED_READY, RKL_POD_PHASE_RUNNING);
        rkl_poddir_app a = app(RKL_POD_APP_EXITED, 1, SIGTERM);
        rkl_poddir_pod p = running_pod(true);
        rkl_container_observed o;
        p.apps = &a;
        p.n_apps = 1;

        /* The pod is still up and ready: an exit of the app's own. */
        rkl_observe_container(&rec, &pod, &p, RKL_APP_PROC_UNKNOWN, 0, false, 0, &o);
        assert_null(o.reason);
        rkl_container_observed_done(&o);
        /* Going down (its supervisor no longer ready), then exited. */
        p.supervisor_ready = false;
        rkl_observe_container(&rec, &pod, &p, RKL_APP_PROC_UNKNOWN, 0, false, 0, &o);
        assert_string_equal(o.reason, RKL_CONTAINER_POD_EXITED);
        assert_int_equal(o.exit_code, SIGTERM); /* rkt's record: not rktlet's signal */
        rkl_container_observed_done(&o);
        p.state = RKL_POD_STATE_EXITED;
        a = app(RKL_POD_APP_EXITED, 0, 0); /* killed: no exit recorded */
        rkl_observe_container(&rec, &pod, &p, RKL_APP_PROC_UNKNOWN, 0, false, 0, &o);
        assert_string_equal(o.reason, RKL_CONTAINER_POD_EXITED);
        assert_non_null(strstr(o.message, "unknown"));
        /* Once given, it stays. */
        rec.observed = o;
        rkl_container_observed o2;
        rkl_observe_container(&rec, &pod, &p, RKL_APP_PROC_UNKNOWN, 0, false, 0, &o2);
        assert_string_equal(o2.reason, RKL_CONTAINER_POD_EXITED);
        rkl_container_observed_done(&o2);
        rkl_container_observed_done(&o);

        /* Exited before its pod went: its own exit. */
        rec.observed = (rkl_container_observed){.phase = RKL_CONTAINER_PHASE_EXITED};
        rkl_observe_container(&rec, &pod, &p, RKL_APP_PROC_UNKNOWN, 0, false, 0, &o);
        assert_null(o.reason);
        rkl_container_observed_done(&o);
        /* Stopped by rktlet, or its sandbox: no. */
        rec.observed = (rkl_container_observed){.phase = RKL_CONTAINER_PHASE_RUNNING};
        rec.desired = RKL_CONTAINER_DESIRED_STOPPED;
        rkl_observe_container(&rec, &pod, &p, RKL_APP_PROC_UNKNOWN, 0, false, 0, &o);
        assert_null(o.reason);
        rkl_container_observed_done(&o);
        rec.desired = RKL_CONTAINER_DESIRED_RUNNING;
        pod.desired = RKL_POD_DESIRED_STOPPED;
        rkl_observe_container(&rec, &pod, &p, RKL_APP_PROC_UNKNOWN, 0, false, 0, &o);
        assert_null(o.reason);
        rkl_container_observed_done(&o);
}

/* The pod's directory removed outside rktlet while the container ran: it ended then. Gone
 * after rktlet's own stop and rm while the container was last seen running: it ended too,
 * its exit unknown. */
/* A directory emptied from outside while a process of the pod still holds it (and rkt's
 * lock): the pod is gone all the same, once it was seen running. */
static void test_pod_removed_leaving_dir(void **state)
{
        rkl_pod_record rec = pod_rec(RKL_POD_DESIRED_READY, RKL_POD_PHASE_RUNNING);
        rkl_poddir_pod p = running_pod(true);
        assert_false(rkl_observe_pod_removed(&rec, &p));

        p.manifest_error = -ENOENT;
        assert_true(rkl_observe_pod_removed(&rec, &p));
        /* Unreadable is not gone: rkt rewrites it whole, so a bad one is someone's edit. */
        p.manifest_error = -EBADMSG;
        assert_false(rkl_observe_pod_removed(&rec, &p));
        p.manifest_error = -ENOENT;

        /* Not yet seen running: a pod on its way in (rkt writes the manifest before it
         * moves the pod to run, but a first look may be early). */
        rec.observed.phase = RKL_POD_PHASE_PENDING;
        assert_false(rkl_observe_pod_removed(&rec, &p));
        /* Taken for removed at the first look, it stays so at the next ones. */
        rec.observed.phase = RKL_POD_PHASE_FAILED;
        assert_true(rkl_observe_pod_removed(&rec, &p));
        rec.observed.phase = RKL_POD_PHASE_RUNNING;

        /* An exited pod whose rm is under way loses its files first: that is rkt's own. */
        p.state = RKL_POD_STATE_EXITED;
        assert_false(rkl_observe_pod_removed(&rec, &p));
        p.state = RKL_POD_STATE_RUNNING;
        p.dir = RKL_PODDIR_GARBAGE;
        assert_false(rkl_observe_pod_removed(&rec, &p));
}

static void test_pod_dir_removed(void **state)
{
        rkl_container_record rec = {.app_name = (char *)"c1",
                                    .desired = RKL_CONTAINER_DESIRED_RUNNING,
                                    .observed = {.phase = RKL_CONTAINER_PHASE_RUNNING, .pid = 77}};
        rkl_pod_record pod = pod_rec(RKL_POD_DESIRED_READY, RKL_POD_PHASE_RUNNING);
        rkl_container_observed o;

        rkl_observe_container(&rec, &pod, NULL, RKL_APP_PROC_UNKNOWN, 0, false, 555, &o);
        assert_int_equal(o.phase, RKL_CONTAINER_PHASE_EXITED);
        assert_int_equal(o.pid, 0);
        assert_int_equal(o.exit_code, 255);
        assert_int_equal(o.finished_ns, 555);
        assert_string_equal(o.reason, RKL_CONTAINER_POD_EXITED);
        assert_non_null(strstr(o.message, "removed outside rktlet"));
        rkl_container_observed_done(&o);

        pod.desired = RKL_POD_DESIRED_STOPPED;
        rkl_observe_container(&rec, &pod, NULL, RKL_APP_PROC_UNKNOWN, 0, false, 555, &o);
        assert_int_equal(o.phase, RKL_CONTAINER_PHASE_EXITED);
        assert_int_equal(o.exit_code, 255);
        assert_non_null(strstr(o.message, "before its exit was recorded"));
        rkl_container_observed_done(&o);

        /* One that had exited keeps what was seen. */
        rec.observed = (rkl_container_observed){
            .phase = RKL_CONTAINER_PHASE_EXITED, .has_exit_code = true, .exit_code = 143};
        rkl_observe_container(&rec, &pod, NULL, RKL_APP_PROC_UNKNOWN, 0, false, 555, &o);
        assert_true(rkl_container_observed_equal(&o, &rec.observed));
        rkl_container_observed_done(&o);
}

static void test_not_added_keeps_last(void **state)
{
        rkl_container_record rec = {.app_name = (char *)"c9",
                                    .desired = RKL_CONTAINER_DESIRED_RUNNING,
                                    .observed = {.phase = RKL_CONTAINER_PHASE_EXITED,
                                                 .has_exit_code = true,
                                                 .exit_code = 3}};
        rkl_container_observed o;
        /* The pod is gone (rkt rm after a stop): what was seen last still holds. */
        rkl_observe_container(&rec, NULL, NULL, RKL_APP_PROC_UNKNOWN, 0, false, 0, &o);
        assert_int_equal(o.phase, RKL_CONTAINER_PHASE_EXITED);
        assert_int_equal(o.exit_code, 3);
        assert_true(rkl_container_observed_equal(&o, &rec.observed));
        rkl_container_observed_done(&o);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_pod_phases),
            cmocka_unit_test(test_pod_removed_leaving_dir),
            cmocka_unit_test(test_container_states),
            cmocka_unit_test(test_running_only_with_a_process),
            cmocka_unit_test(test_exit_codes),
            cmocka_unit_test(test_ended_with_pod),
            cmocka_unit_test(test_pod_dir_removed),
            cmocka_unit_test(test_not_added_keeps_last),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
