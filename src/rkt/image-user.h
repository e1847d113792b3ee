/* The uid, gid and image groups a container runs with, from the image's /etc/passwd and
 * /etc/group in rkt's tree store (rkt itself resolves only a user name to a uid). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "command.h"
#include "rkt.h"
#include "base/error.h"
#include "base/model.h"

void rkl_rkt_ids_done(rkl_rkt_ids *ids);

/* The rules below over the texts of /etc/passwd and /etc/group (NULL: the image has none). */
int rkl_rkt_ids_parse(const char *passwd, const char *group, const rkl_container_spec *spec,
                      rkl_rkt_ids *ret, rkl_error *reterr);

/* For a spec with run_as_user or run_as_username: the uid (a name looked up in the image's
 * /etc/passwd, -ENOENT naming the field when it is not there), the gid (run_as_group, else the
 * user's own from /etc/passwd, else 0) and the user's groups in /etc/group. image_id is the
 * rkt image ID, already pulled (rkt renders its tree at fetch). *ret untouched (set false)
 * for other specs, and when the image's tree is not rendered (after `rkt image gc`). */
int rkl_rkt_image_ids(rkl_rkt *d, const char *image_id, const rkl_container_spec *spec,
                      rkl_rkt_ids *ret, rkl_error *reterr);
