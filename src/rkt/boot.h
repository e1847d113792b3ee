/* rkt 1.30's pods on systemd 252 sometimes never get ready: the pod's own systemd idles with
 * no job left and default.target inactive, its boot transaction dropped (docs/rkt.md,
 * 'Quirks'; about one sandbox in seven on a loaded 2-core machine). This boots such a pod again. */
#pragma once

#include <stdint.h>

#include "base/error.h"

/* Starts default.target in the pod whose nspawn has PID nspawn_pid, through its own
 * systemctl (in the pod's mount and PID namespaces: its systemd's private socket takes no
 * client from outside them). -EAGAIN when the pod's systemd still has jobs (booting, only
 * slowly: nothing done), -ESRCH when the pod's systemd is not running. Blocks up to 20 s. */
int rkl_rkt_pod_restart_boot(uint32_t nspawn_pid, rkl_error *reterr);
