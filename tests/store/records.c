#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "records.h"
#include "base/alloc.h"
#include "base/model.h"

void records_id(unsigned n, char ret[static RKL_ID_LEN + 1])
{
        (void)snprintf(ret, RKL_ID_LEN + 1, "%08x%056x", n, 0u);
}

unsigned records_number(const char *id)
{
        char head[9];
        memcpy(head, id, 8);
        head[8] = 0;
        return (unsigned)strtoul(head, NULL, 16);
}

void records_pod_create(rkl_store *st, unsigned n, rkl_pod_spec *p)
{
        rkl_error err = RKL_ERROR_INIT;
        char id[RKL_ID_LEN + 1];
        records_id(n, id);
        if (!p->name)
                p->name = rkl_xasprintf("pod-%u", n);
        if (!p->uid)
                p->uid = rkl_xasprintf("uid-%u", n);
        if (!p->namespace)
                p->namespace = rkl_xstrdup("default");
        if (rkl_store_pod_create(st, id, p, &err) < 0)
                fail_msg("pod create: %s", err.msg);
        rkl_pod_spec_done(p);
}

void records_container_create(rkl_store *st, unsigned n, unsigned pod, rkl_container_spec *c)
{
        rkl_error err = RKL_ERROR_INIT;
        char id[RKL_ID_LEN + 1], pid[RKL_ID_LEN + 1];
        records_id(n, id);
        records_id(pod, pid);
        if (!c->name)
                c->name = rkl_xasprintf("ctr-%u", n);
        if (!c->image)
                c->image = rkl_xstrdup("busybox");
        _cleanup_free_ char *app = rkl_container_app_name(id);
        if (rkl_store_container_create(st, id, pid, app, NULL, c, &err) < 0)
                fail_msg("container create: %s", err.msg);
        rkl_container_spec_done(c);
}
