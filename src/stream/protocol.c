/* Names on the wire: URL paths, the channel protocols (and what each carries) and v4's exit
 * status. */
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

static const struct proto_info {
        const char *name;
        rkl_stream_kind kind;
        bool websocket, base64, json_status, resize, close_channel;
} protos[_RKL_STREAM_PROTO_MAX] = {
    [RKL_STREAM_PROTO_V4] = {"v4.channel.k8s.io", RKL_STREAM_EXEC, .json_status = true,
                             .resize = true},
    [RKL_STREAM_PROTO_V3] = {"v3.channel.k8s.io", RKL_STREAM_EXEC, .resize = true},
    [RKL_STREAM_PROTO_V2] = {"v2.channel.k8s.io", RKL_STREAM_EXEC},
    [RKL_STREAM_PROTO_V1] = {"channel.k8s.io", RKL_STREAM_EXEC},
    [RKL_STREAM_PROTO_PORT_FORWARD] = {"portforward.k8s.io", RKL_STREAM_PORT_FORWARD},
    /* kubelet's library serves no v5 (the API server turns it into SPDY for kubelet), but a
     * client that reaches the runtime with v5 alone would find nothing else. */
    [RKL_STREAM_PROTO_WS_V5] = {"v5.channel.k8s.io", RKL_STREAM_EXEC, true, false, true, true,
                                true},
    [RKL_STREAM_PROTO_WS_V4] = {"v4.channel.k8s.io", RKL_STREAM_EXEC, true, false, true, true},
    [RKL_STREAM_PROTO_WS_V4_BASE64] = {"v4.base64.channel.k8s.io", RKL_STREAM_EXEC, true, true,
                                       true, true},
    [RKL_STREAM_PROTO_WS_V1] = {"channel.k8s.io", RKL_STREAM_EXEC, true, false, false, true},
    [RKL_STREAM_PROTO_WS_V1_BASE64] = {"base64.channel.k8s.io", RKL_STREAM_EXEC, true, true, false,
                                       true},
    [RKL_STREAM_PROTO_WS_PORT_FORWARD] = {"v4.channel.k8s.io", RKL_STREAM_PORT_FORWARD, true},
    [RKL_STREAM_PROTO_WS_PORT_FORWARD_BASE64] = {"v4.base64.channel.k8s.io",
                                                 RKL_STREAM_PORT_FORWARD, true, true},
};

static bool valid(rkl_stream_proto p)
{
        return p >= 0 && p < _RKL_STREAM_PROTO_MAX;
}

const char *rkl_stream__proto_name(rkl_stream_proto p)
{
        return valid(p) ? protos[p].name : NULL;
}

/* Attach serves what exec does. */
static bool serves(rkl_stream_proto p, rkl_stream_kind kind, bool websocket)
{
        rkl_stream_kind k = kind == RKL_STREAM_ATTACH ? RKL_STREAM_EXEC : kind;
        return protos[p].kind == k && protos[p].websocket == websocket;
}

rkl_stream_proto rkl_stream__proto_choose(rkl_stream_kind kind, const char *const *offered,
                                          size_t n)
{
        int oldest = _RKL_STREAM_PROTO_INVALID;
        for (int p = 0; p < _RKL_STREAM_PROTO_MAX; p++)
                if (serves((rkl_stream_proto)p, kind, false))
                        oldest = p;
        if (n == 0)
                return (rkl_stream_proto)oldest;
        for (int p = 0; p < _RKL_STREAM_PROTO_MAX; p++)
                for (size_t i = 0; i < n; i++)
                        if (serves((rkl_stream_proto)p, kind, false) &&
                            streq(offered[i], protos[p].name))
                                return (rkl_stream_proto)p;
        return _RKL_STREAM_PROTO_INVALID;
}

rkl_stream_proto rkl_stream__proto_choose_ws(rkl_stream_kind kind, const char *const *offered,
                                             size_t n)
{
        if (n == 0)
                return kind == RKL_STREAM_PORT_FORWARD ? RKL_STREAM_PROTO_WS_PORT_FORWARD
                                                       : RKL_STREAM_PROTO_WS_V1;
        for (size_t i = 0; i < n; i++)
                for (int p = 0; p < _RKL_STREAM_PROTO_MAX; p++)
                        if (serves((rkl_stream_proto)p, kind, true) &&
                            streq(offered[i], protos[p].name))
                                return (rkl_stream_proto)p;
        return _RKL_STREAM_PROTO_INVALID;
}

bool rkl_stream__proto_websocket(rkl_stream_proto p)
{
        return valid(p) && protos[p].websocket;
}

bool rkl_stream__proto_base64(rkl_stream_proto p)
{
        return valid(p) && protos[p].base64;
}

bool rkl_stream__proto_json_status(rkl_stream_proto p)
{
        return valid(p) && protos[p].json_status;
}

bool rkl_stream__proto_resize(rkl_stream_proto p)
{
        return valid(p) && protos[p].resize;
}

bool rkl_stream__proto_close_channel(rkl_stream_proto p)
{
        return valid(p) && protos[p].close_channel;
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
