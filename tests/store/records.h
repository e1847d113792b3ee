/* Numbered records for the store's and the API's tests: object n's ID is n in hex followed
 * by zeros, so an app's name (made of its ID's first digits) differs from object to object.
 * Include after cmocka.h; an error fails the test. */
#pragma once

#include "store/store.h"

void records_id(unsigned n, char ret[static RKL_ID_LEN + 1]);
unsigned records_number(const char *id);

/* Sandbox n from p, whose unset name, uid and namespace become "pod-<n>", "uid-<n>" and
 * "default"; takes p's contents. */
void records_pod_create(rkl_store *st, unsigned n, rkl_pod_spec *p);

/* Container n in sandbox pod from c, whose unset name and image become "ctr-<n>" and
 * "busybox"; takes c's contents. */
void records_container_create(rkl_store *st, unsigned n, unsigned pod, rkl_container_spec *c);
