/* The one table from -errno to a gRPC status code (STYLE rule 8). */
#pragma once

#include <grpc/status.h>

grpc_status_code rkl_api_status_from_errno(int r);
