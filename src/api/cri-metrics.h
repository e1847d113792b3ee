/* CRI's metrics (kubelet's PodAndContainerStatsFromCRI: /metrics/cadvisor served by the
 * runtime): ListMetricDescriptors, ListPodSandboxMetrics and StreamPodSandboxMetrics, with
 * cAdvisor's metric names and labels, made from the stats cache's snapshot (stats/stats.h)
 * and the status cache's records. No call reads a cgroup. */
#pragma once

#include "api.h"
#include "api.pb-c.h"

int rkl_api_list_metric_descriptors(rkl_api_ctx *ctx,
                                    const Runtime__V1__ListMetricDescriptorsRequest *req,
                                    Runtime__V1__ListMetricDescriptorsResponse *resp,
                                    rkl_error *reterr);
int rkl_api_list_pod_sandbox_metrics(rkl_api_ctx *ctx,
                                     const Runtime__V1__ListPodSandboxMetricsRequest *req,
                                     Runtime__V1__ListPodSandboxMetricsResponse *resp,
                                     rkl_error *reterr);
/* The same in pages (page.h). */
int rkl_api_stream_pod_sandbox_metrics(rkl_api_ctx *ctx,
                                       const Runtime__V1__StreamPodSandboxMetricsRequest *req,
                                       Runtime__V1__StreamPodSandboxMetricsResponse *resp,
                                       rkl_error *reterr);

typedef struct rkl_pod_view rkl_pod_view;
typedef struct rkl_container_view rkl_container_view;
typedef struct rkl_stats_snapshot rkl_stats_snapshot;
/* One sandbox's metrics and its containers', in a (every string copied): what both calls
 * answer for it. The samples come from snapshot (NULL: none), the limits, start times and
 * OOM kills from the records. Containers that never ran are left out. */
Runtime__V1__PodSandboxMetrics *rkl_api_pod_metrics_pb(rkl_arena *a, const rkl_pod_view *pod,
                                                       rkl_container_view *const *containers,
                                                       size_t n_containers,
                                                       const rkl_stats_snapshot *snapshot);
