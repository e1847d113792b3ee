/* The one table from -errno to a gRPC status code (CONTRIBUTING.md, 'Foreign errors at the
 * edge'). */
#pragma once

#include <grpc/status.h>

grpc_status_code rkl_api_status_from_errno(int r);
