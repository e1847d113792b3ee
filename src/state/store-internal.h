/* Internals of src/state shared between its files: the embedded migrations and the
 * JSON codec of the config, labels and annotations columns. Nothing outside src/state includes
 * this. */
#pragma once

#include <stddef.h>

#include "base/error.h"
#include "base/model.h"

/* One migrations/NNNN_name.sql file, embedded at build time (embed-migrations.cmake). */
typedef struct rkl_store__migration {
        unsigned version; /* NNNN: PRAGMA user_version after it ran */
        const char *name; /* file name, for messages */
        const char *sql;
} rkl_store__migration;

/* Ordered by version, which runs 1..n without gaps (the generator enforces it). */
extern const rkl_store__migration rkl_store__migrations[];
extern const size_t rkl_store__n_migrations;

/* The config column: the spec minus what has its own columns (name, uid, namespace,
 * attempt, image, labels, annotations). NULL strings, string vectors and arrays
 * are left out and come back NULL; empty ones come back empty: the spec round-trips
 * exactly. The _to_ functions abort on OOM like rkl_xmalloc. The _from_ functions fill
 * only those fields of *spec, which the caller has zeroed; on failure (-EUCLEAN: the column
 * is not what this binary wrote) the caller frees *spec. */
char *rkl_store__pod_config_to_json(const rkl_pod_spec *spec);
int rkl_store__pod_config_from_json(const char *json, rkl_pod_spec *spec, rkl_error *reterr);
char *rkl_store__container_config_to_json(const rkl_container_spec *spec);
int rkl_store__container_config_from_json(const char *json, rkl_container_spec *spec,
                                          rkl_error *reterr);

/* The labels and annotations columns: one JSON object, keys in the given order (the
 * store refuses duplicate keys before encoding). Same contract as the config codec; column
 * names the column in messages. */
char *rkl_store__kvs_to_json(const rkl_kvs *l);
int rkl_store__kvs_from_json(const char *json, const char *column, rkl_kvs *ret, rkl_error *reterr);

typedef struct rkl_store rkl_store;

/* Test hook: runs the given migrations instead of the embedded ones, exactly as
 * rkl_store_open() does (one IMMEDIATE transaction each, keyed by user_version). */
int rkl_store__migrate(rkl_store *s, const rkl_store__migration *migrations, size_t n,
                       rkl_error *reterr);
