/* The pod and app verbs rktlet runs, one function each: the caller says what (start app X in
 * pod U), this module says how (rkt's command line, through rkl_rkt_exec()).
 *
 * Every verb returns 0 when rkt exited 0, or one of these -errno codes, with rkt's own words
 * in reterr ("rkt app start: exit status 254: ..."):
 *   -ENOENT     rkt said there is no such pod (or app, for the app verbs);
 *   -EALREADY   rkt said the pod is already stopped;
 *   -EAGAIN     rkt said not now: the pod's supervisor is not yet ready, the pod is not
 *               running, its lock is taken;
 *   -ETIMEDOUT  rkt did not finish within timeout_usec and was killed: the verb may have been
 *               carried out in part or in whole;
 *   -EIO        anything else: rkt failed otherwise, was killed by a signal, or could not be
 *               run at all (so -ENOENT never means a missing rkt binary).
 * The doc comment of each verb says what the codes mean for it. timeout_usec 0: no deadline.
 * The verbs block; run them off any event loop. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "command.h"

typedef struct rkl_rkt rkl_rkt;

/* `rkt app add UUID IMAGE ...` (rkl_rkt_app_add_args()): adds the app, not started.
 *   -EINVAL     the spec asks what rkt cannot do (a localhost seccomp profile); rkt not run
 *   -ENOENT     no such pod
 *   -EAGAIN     the pod's supervisor is not yet ready (a pod just started): retry
 *   -EIO        the pod is not running, the image is not in rkt's store, an app of that name
 *               exists, or stage1 failed; a failed add can leave a half-made app that no
 *               start can run: remove it before adding again (docs/rkt.md, 'Quirks')
 *   -ETIMEDOUT  the same as -EIO, only more likely half-made. */
int rkl_rkt_app_add(rkl_rkt *d, const char *uuid, const rkl_container_spec *spec,
                    const rkl_rkt_app_opts *o, uint64_t timeout_usec, rkl_error *reterr);

/* `rkt app start UUID --app=APP`: starts an added app, or restarts an exited one.
 *   -ENOENT     no such pod, or no app APP in it
 *   -EAGAIN     the pod's supervisor is not yet ready
 *   -EIO        the pod is not running, or the start failed (APP-started may exist all the
 *               same: rkt writes it first)
 *   -ETIMEDOUT  the app may or may not have started. */
int rkl_rkt_app_start(rkl_rkt *d, const char *uuid, const char *app, uint64_t timeout_usec,
                      rkl_error *reterr);

/* `rkt app stop UUID --app=APP`: stops the app and waits until it exited (rkt has no stop
 * timeout of its own: the app's unit may take systemd's 90 s). 0 too when the pod is no
 * longer running (rkt prints that it "is already stopped" and exits 0).
 *   -EALREADY   rkt reported the pod stopped as an error: the app is not running
 *   -ENOENT     no such pod, or no app APP in it
 *   -EAGAIN     the pod's supervisor is not yet ready
 *   -EIO        the pod is not running yet (prepared), or the stop failed
 *   -ETIMEDOUT  the app was still stopping at the deadline. */
int rkl_rkt_app_stop(rkl_rkt *d, const char *uuid, const char *app, uint64_t timeout_usec,
                     rkl_error *reterr);

/* `rkt app rm UUID --app=APP`: stops the app if it runs, then removes it from the pod (its
 * status file, rootfs and the overlay of its image, which other apps of the same image in
 * the pod share: docs/rkt.md, 'Quirks'). Works on an exited pod.
 *   -ENOENT     no such pod, or no app APP in it: an app already removed gives this (rkt's
 *               app rm is not idempotent), which is what a removal wants
 *   -EAGAIN     the pod's supervisor is not yet ready
 *   -EIO        the stop or the removal failed
 *   -ETIMEDOUT  the app may be stopped, removed in part or in whole. */
int rkl_rkt_app_rm(rkl_rkt *d, const char *uuid, const char *app, uint64_t timeout_usec,
                   rkl_error *reterr);

/* `rkt stop [--force=true] UUID`: signals the pod (SIGTERM to its supervisor, which stops
 * the apps; force: SIGKILL to everything in it) and returns: 0 means signalled, not exited;
 * watch the pod directory for the exit. 0 too when the pod already exited (rkt prints that
 * it "is already stopped" and exits 0).
 *   -ENOENT     no such pod
 *   -EALREADY   rkt reported the pod stopped as an error
 *   -EAGAIN     the pod is not running and has not run (prepared, being prepared)
 *   -EIO        the signal could not be sent, e.g. to a pod on its way down ("cannot get
 *               child processes ...: process does not have children")
 *   -ETIMEDOUT  rkt hung; the pod may have been signalled. */
int rkl_rkt_pod_stop(rkl_rkt *d, const char *uuid, bool force, uint64_t timeout_usec,
                     rkl_error *reterr);

/* `rkt rm UUID`: removes an exited (or never started) pod: its network (which frees its IP),
 * mounts and directory.
 *   -ENOENT     no such pod: already removed, which is what a removal wants
 *   -EAGAIN     the pod's lock is taken (someone else is removing it)
 *   -EIO        the pod is running, being prepared or being deleted, or the removal failed
 *   -ETIMEDOUT  the pod may be removed in part (it then sits in exited-garbage/). */
int rkl_rkt_pod_rm(rkl_rkt *d, const char *uuid, uint64_t timeout_usec, rkl_error *reterr);

/* The command line of a sandbox, which its systemd unit runs (not rktlet): the whole argv
 * (`rkt <global flags> app sandbox ...`, rkl_rkt_sandbox_args()) and the environment the unit
 * needs (rkl_rkt_unit_env()). -EINVAL (reason in reterr) for what rkt cannot express, e.g.
 * an SCTP port mapping. Both strvs are the caller's. */
int rkl_rkt_sandbox_command(rkl_rkt *d, const rkl_pod_spec *spec, const rkl_rkt_sandbox_opts *o,
                            char ***ret_argv, char ***ret_env, rkl_error *reterr);
