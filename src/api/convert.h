/* protobuf-c CRI configs -> the project's model, with every client field validated and
 * bounded (CONTRIBUTING.md, 'Validation'). Errors are -EINVAL with the offending field named. */
#pragma once

#include "api.pb-c.h"
#include "base/error.h"
#include "base/model.h"

int rkl_api_pod_spec_from_pb(const Runtime__V1__PodSandboxConfig *c, rkl_pod_spec *ret,
                             rkl_error *reterr);
/* CRI's LinuxContainerResources checked (-EINVAL: negative values, a CFS quota below 1 ms,
 * CPUs this machine does not have) into the model's; cpuset_cpus stays borrowed. */
int rkl_api_resources_from_pb(const Runtime__V1__LinuxContainerResources *res, rkl_resources *ret,
                              rkl_error *reterr);
int rkl_api_container_spec_from_pb(const Runtime__V1__ContainerConfig *c, rkl_container_spec *ret,
                                   rkl_error *reterr);

/* A client string that becomes part of a reply or a store record. */
int rkl_api_check_string(const char *field, const char *s, size_t max, bool required,
                         rkl_error *reterr);
