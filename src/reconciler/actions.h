/* Actions: rkt's commands and CNI's plugins run on the worker pool, at most one per object
 * and --max-actions of each kind at once, their results handed back through a queue and
 * applied on the reconciler thread (actions.c). Reconciler thread only, but where a comment
 * says otherwise. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/model.h"
#include "rkt/poddir.h"

typedef struct rkl_reconciler rkl_reconciler;
typedef struct rkl_container_view rkl_container_view;
typedef struct rkl_pod_network rkl_pod_network;

typedef enum act_kind {
        ACT_APP_ADD,
        ACT_APP_START,
        ACT_APP_STOP,
        ACT_APP_RM,
        ACT_POD_STOP, /* rkt stop, wait for the pod to exit, --force after the grace */
        ACT_POD_RM,   /* rkt rm: frees the pod's network */
        ACT_POD_BOOT, /* a pending pod whose systemd dropped its boot: boot it again */
        ACT_NET_ADD,  /* CNI ADD of a sandbox's network (network.c) */
        ACT_NET_CHECK,
        ACT_NET_DEL,
} act_kind;

#define ACT_MASK(kind) (1u << (kind))
#define ACT_ANY        (~0u)

typedef struct action {
        struct action *next;
        rkl_reconciler *r;
        act_kind kind;
        char key[RKL_ID_LEN + 1]; /* the object in flight: a container or sandbox ID */
        bool is_pod;
        bool orphan; /* no record: nothing to write back */
        char uuid[RKL_POD_UUID_LEN + 1];
        char *app;       /* the app verbs */
        char *unit_name; /* ACT_POD_RM: "system.slice/<unit>", whose leftover cgroups go */
        /* ACT_APP_ADD: the container (a reference: views never change), the image ID rkt
         * gets and the app's log file name. */
        rkl_container_view *container;
        char *image, *log_file;
        char **entrypoint;  /* ACT_APP_ADD: the image's own, for a spec of args alone */
        rkl_kvs sysctls;    /* ACT_APP_ADD: the pod's */
        char *pod_hostname; /* ACT_APP_ADD: the pod's, as its spec gives it */
        uint32_t pod_pid;   /* ACT_APP_ADD, ACT_POD_BOOT: the pod's nspawn */
        bool node_hosts;    /* ACT_APP_ADD: a host-network pod's app sees the node's /etc/hosts */
        uint64_t timeout_usec;
        int64_t deadline_ns; /* ACT_APP_STOP: SIGKILL then */
        pid_t supervisor;    /* ACT_APP_START, _STOP, _RM: where the app's cgroup is */
        bool force;          /* ACT_POD_STOP: SIGKILL at once */
        /* The ACT_NET_ verbs: the sandbox's network as recorded (a copy), and what ADD
         * answered. */
        rkl_pod_network *net;
        char *net_result;
        int result;
        char error[512];
} action;

/* The actions in flight and the queue of those done (r->actions). */
typedef struct rkl_action_queue rkl_action_queue;
rkl_action_queue *rkl_action_queue_new(void);
/* Frees the results no pass applied; the pool must be gone. */
rkl_action_queue *rkl_action_queue_free(rkl_action_queue *q);

/* app: the app verbs' app, else NULL. */
action *rkl_action_new(rkl_reconciler *r, act_kind kind, const char *key, const char *uuid,
                       const char *app);
void rkl_action_free(action *a);
/* Puts a in flight under its key and runs it on the pool. */
void rkl_action_submit(rkl_reconciler *r, action *a);
/* The eventfd the workers write when an action is done (-errno when it could not be made). */
int rkl_action_done_fd(rkl_reconciler *r);
/* Applies the results of the actions finished since the last call. */
void rkl_action_apply_done(rkl_reconciler *r);
/* Frees the results of those finished since, applying nothing (the loop's end: the next
 * start resumes). */
void rkl_action_drop_done(rkl_reconciler *r);
/* The actions under way, rkt's and CNI's; callable from any thread, takes no lock. */
unsigned rkl_action_count(rkl_reconciler *r);
/* Its verb, for the log: "app add", "network DEL"... */
const char *rkl_action_name(act_kind kind);

/* Whether an action runs under key (an object's ID, a leftover pod's uuid). */
bool rkl_action_in_flight(rkl_reconciler *r, const char *key);
/* Whether an action of one of kinds (a mask of ACT_MASK()s) runs on the pod with uuid, under
 * whatever key (a container's, its sandbox's, the pod's own as an orphan). */
bool rkl_action_pod_in_flight(rkl_reconciler *r, const char *uuid, unsigned kinds);
/* rkt's app add, start and rm each rewrite the pod's manifest and reload the pod's systemd;
 * two at once in one pod make one fail with a bare "exit status 254" (seen on rkt 1.30 with
 * two containers created together). One at a time per pod; app stop may overlap them. An
 * add also waits for the removal it owes (rkl_orphans_rm_due()). */
bool rkl_action_app_busy(rkl_reconciler *r, const char *uuid);
/* Whether an rkt command may start under key: rkt is there, a slot is free, nothing runs
 * under key. */
bool rkl_action_can_start(rkl_reconciler *r, const char *key);
/* The same for a CNI verb (ACT_NET_*): plugins are no rkt command, and have max_actions slots
 * of their own, so that a sandbox's network is not queued behind other pods' app adds. */
bool rkl_action_can_start_net(rkl_reconciler *r, const char *key);
