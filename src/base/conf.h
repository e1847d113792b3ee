/* Configuration files: "key = value" lines, '#' comments, blank lines. The caller's
 * callback gives each pair a meaning; every error, the parser's or the callback's, names
 * the file and the line. */
#pragma once

#include "error.h"

/* Called per pair, in file order. value is "" for "key =". Returns < 0 with reterr set to
 * refuse the pair (the parser prefixes "PATH:LINE: "). */
typedef int (*rkl_conf_fn)(const char *key, const char *value, void *userdata, rkl_error *reterr);

/* Parses text, naming it path in errors. Stops at the first error. */
int rkl_conf_parse(const char *path, const char *text, rkl_conf_fn fn, void *userdata,
                   rkl_error *reterr);
/* Reads and parses the file at path; -ENOENT (with reterr set) when there is none. */
int rkl_conf_load(const char *path, rkl_conf_fn fn, void *userdata, rkl_error *reterr);
