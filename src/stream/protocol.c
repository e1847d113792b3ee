/* Names on the wire: URL paths, the channel protocols and v4's exit status. */
#include "stream-internal.h"

#include "base/alloc.h"
#include "base/banned.h"

static const char *const kind_names[_RKL_STREAM_KIND_MAX] = {
    [RKL_STREAM_EXEC] = "exec",
    [RKL_STREAM_ATTACH] = "attach",
    [RKL_STREAM_PORT_FORWARD] = "portforward",
};

const char *rkl_stream__kind_name(rkl_stream_kind k)
{
        return k >= 0 && k < _RKL_STREAM_KIND_MAX ? kind_names[k] : NULL;
}

rkl_stream_kind rkl_stream__kind_from_name(const char *name, size_t len)
{
        for (int k = 0; k < _RKL_STREAM_KIND_MAX; k++)
                if (strlen(kind_names[k]) == len && memcmp(kind_names[k], name, len) == 0)
                        return (rkl_stream_kind)k;
        return _RKL_STREAM_KIND_INVALID;
}

static const char *const proto_names[_RKL_STREAM_PROTO_MAX] = {
    [RKL_STREAM_PROTO_V4] = "v4.channel.k8s.io",
    [RKL_STREAM_PROTO_V3] = "v3.channel.k8s.io",
    [RKL_STREAM_PROTO_V2] = "v2.channel.k8s.io",
    [RKL_STREAM_PROTO_V1] = "channel.k8s.io",
    [RKL_STREAM_PROTO_PORT_FORWARD] = "portforward.k8s.io",
};

const char *rkl_stream__proto_name(rkl_stream_proto p)
{
        return p >= 0 && p < _RKL_STREAM_PROTO_MAX ? proto_names[p] : NULL;
}

rkl_stream_proto rkl_stream__proto_choose(rkl_stream_kind kind, const char *const *offered,
                                          size_t n)
{
        int first =
            kind == RKL_STREAM_PORT_FORWARD ? RKL_STREAM_PROTO_PORT_FORWARD : RKL_STREAM_PROTO_V4;
        int last =
            kind == RKL_STREAM_PORT_FORWARD ? RKL_STREAM_PROTO_PORT_FORWARD : RKL_STREAM_PROTO_V1;
        if (n == 0)
                return (rkl_stream_proto)last;
        for (int p = first; p <= last; p++)
                for (size_t i = 0; i < n; i++)
                        if (streq(offered[i], proto_names[p]))
                                return (rkl_stream_proto)p;
        return _RKL_STREAM_PROTO_INVALID;
}

/* metav1.Status as client-go's errorDecoderV4 reads it. */
char *rkl_stream__status_json(int exit_code)
{
        if (exit_code == 0)
                return rkl_xstrdup("{\"metadata\":{},\"status\":\"Success\"}");
        return rkl_xasprintf(
            "{\"metadata\":{},\"status\":\"Failure\","
            "\"message\":\"command terminated with non-zero exit code: exit status %d\","
            "\"reason\":\"NonZeroExitCode\",\"details\":{\"causes\":[{\"reason\":\"ExitCode\","
            "\"message\":\"%d\"}]}}",
            exit_code, exit_code);
}
