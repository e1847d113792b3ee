#include "unit.h"

#include <systemd/sd-bus.h>

#include "base/alloc.h"
#include "base/banned.h"

#define SD_DEST  "org.freedesktop.systemd1"
#define SD_PATH  "/org/freedesktop/systemd1"
#define SD_IFACE "org.freedesktop.systemd1.Manager"

int rkl_unit_connect(const char *address, sd_bus **ret, rkl_error *reterr)
{
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        int r;

        if (isempty(address) || streq(address, "system")) {
                r = sd_bus_open_system(&bus);
                if (r < 0)
                        return rkl_error_set(reterr, r, "cannot connect to the system bus: %s",
                                             strerror(-r));
                *ret = TAKE_PTR(bus);
                return 0;
        }

        r = sd_bus_new(&bus);
        if (r < 0)
                return rkl_error_set(reterr, r, "sd_bus_new: %s", strerror(-r));
        r = sd_bus_set_address(bus, address);
        if (r < 0)
                return rkl_error_set(reterr, r, "bad bus address '%s': %s", address, strerror(-r));
        r = sd_bus_start(bus);
        if (r < 0)
                return rkl_error_set(reterr, r, "cannot connect to '%s': %s", address,
                                     strerror(-r));
        *ret = TAKE_PTR(bus);
        return 0;
}

int rkl_unit_manager_version(sd_bus *bus, char **ret, rkl_error *reterr)
{
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        char *v = NULL;
        int r = sd_bus_get_property_string(bus, SD_DEST, SD_PATH, SD_IFACE, "Version", &e, &v);
        if (r < 0)
                return rkl_error_set(reterr, r, "systemd Version: %s",
                                     e.message ? e.message : strerror(-r));
        *ret = v;
        return 0;
}
