/* Container logs at the API's edge: where a sandbox's and a container's logs may go, the
 * log file made at StartContainer, and ReopenContainerLog (src/logs/ does the work). */
#pragma once

#include "api.h"
#include "api.pb-c.h"
#include "base/model.h"

typedef struct rkl_container_view rkl_container_view;

/* log_directory: absolute, outside the daemon's own directories and the system's. */
int rkl_api_log_directory_check(rkl_api_ctx *ctx, const char *log_directory, rkl_error *reterr);
/* log_path: relative, inside log_directory through no symlink, not in the daemon's own
 * directories nor the system's. */
int rkl_api_log_path_check(rkl_api_ctx *ctx, const char *log_directory, const char *log_path,
                           rkl_error *reterr);
/* Makes the container's log file (empty, 0640) if it has one, so that it exists from
 * StartContainer on even when the app prints nothing, and records it as rktlet's. */
int rkl_api_log_file_make(rkl_api_ctx *ctx, const rkl_container_view *v, rkl_error *reterr);

int rkl_api_reopen_container_log(rkl_api_ctx *ctx,
                                 const Runtime__V1__ReopenContainerLogRequest *req,
                                 Runtime__V1__ReopenContainerLogResponse *resp, rkl_error *reterr);
