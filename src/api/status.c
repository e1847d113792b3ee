#include "status.h"

#include <errno.h>

#include "base/banned.h"

grpc_status_code rkl_api_status_from_errno(int r)
{
        switch (r) {
        case 0:
                return GRPC_STATUS_OK;
        case -ENOENT:
        case -ESRCH:
                return GRPC_STATUS_NOT_FOUND;
        case -EEXIST:
                return GRPC_STATUS_ALREADY_EXISTS;
        case -EINVAL:
        case -E2BIG:
        case -ENAMETOOLONG:
        case -EBADMSG:
        case -ERANGE:
                return GRPC_STATUS_INVALID_ARGUMENT;
        case -EOPNOTSUPP:
        case -ENOSYS:
                return GRPC_STATUS_UNIMPLEMENTED;
        case -EPERM:
        case -EACCES:
                return GRPC_STATUS_PERMISSION_DENIED;
        case -EBUSY:
        case -EAGAIN:
        case -ENOTCONN:
        case -ECONNREFUSED:
        case -EHOSTUNREACH:
        case -ESHUTDOWN: /* the daemon is stopping */
                return GRPC_STATUS_UNAVAILABLE;
        case -ETIMEDOUT:
        case -ETIME:
                return GRPC_STATUS_DEADLINE_EXCEEDED;
        case -ECANCELED:
                return GRPC_STATUS_CANCELLED;
        case -ENOSPC:
        case -EDQUOT:
        case -EMSGSIZE: /* a request larger than its method takes */
        case -EMFILE:
        case -ENFILE:
        case -ENOMEM:
                return GRPC_STATUS_RESOURCE_EXHAUSTED;
        case -ENOTEMPTY:
        case -ENOTUNIQ:
        case -EBADFD:  /* an object in the wrong state: StartContainer on a stopped one */
        case -ETXTBSY: /* an image a container uses: not transient, unlike -EBUSY */
                return GRPC_STATUS_FAILED_PRECONDITION;
        default:
                return GRPC_STATUS_INTERNAL;
        }
}
