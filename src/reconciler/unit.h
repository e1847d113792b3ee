/* systemd over sd-bus. The bus is thread-affine: only the reconciler thread uses it. */
#pragma once

#include "base/error.h"

typedef struct sd_bus sd_bus;

/* address: NULL or "system" for the system bus; otherwise a D-Bus address such as
 * "unix:path=/run/user/0/systemd/private" (a direct connection to a service manager, with
 * no bus daemon and no Hello). */
int rkl_unit_connect(const char *address, sd_bus **ret, rkl_error *reterr);
/* The manager's Version property; a cheap liveness probe. */
int rkl_unit_manager_version(sd_bus *bus, char **ret, rkl_error *reterr);
