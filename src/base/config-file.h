/* The configuration file's parser: "key = value" lines, '#' comments, blank lines. It knows
 * no option: the caller's callback gives each pair its meaning (main.c: a field of
 * rkl_config, config.h); every error, the parser's or the callback's, names the file and the
 * line. */
#pragma once

#include "error.h"

/* Called per pair, in file order. value is "" for "key =". Returns < 0 with reterr set to
 * refuse the pair (the parser prefixes "PATH:LINE: "). */
typedef int (*rkl_config_file_fn)(const char *key, const char *value, void *userdata,
                                  rkl_error *reterr);

/* Parses text, naming it path in errors. Stops at the first error. */
int rkl_config_file_parse(const char *path, const char *text, rkl_config_file_fn fn, void *userdata,
                          rkl_error *reterr);
/* Reads and parses the file at path; -ENOENT (with reterr set) when there is none. */
int rkl_config_file_load(const char *path, rkl_config_file_fn fn, void *userdata,
                         rkl_error *reterr);
