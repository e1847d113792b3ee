/* Whether the machine enforces SELinux labels, as containerd and CRI-O ask before they label
 * a container: without it a pod's SELinux options have nothing to apply to. */
#pragma once

#include <stdbool.h>

/* selinuxfs is mounted and says enforce or permissive. Read once: a machine does not turn
 * SELinux on without a reboot. root (tests) is where selinuxfs is looked for, NULL: "/". */
bool rkl_selinux_enabled(void);
bool rkl_selinux_enabled_at(const char *root);
