# Turns migrations/NNNN_name.sql into a C file holding an array of {version, name, sql}.
# Run at build time: cmake -DDIR=<migrations dir> -DOUT=<file.c> -P embed-migrations.cmake
# The SQL is embedded as hex bytes, so no quoting or escaping can go wrong.
file(GLOB files RELATIVE ${DIR} ${DIR}/*.sql)
list(SORT files)
set(body "")
set(table "")
set(expect 1)
foreach(f IN LISTS files)
  if(NOT f MATCHES "^([0-9][0-9][0-9][0-9])_([a-z0-9_]+)\\.sql$")
    message(FATAL_ERROR "migrations/${f}: name must be NNNN_lowercase_name.sql")
  endif()
  math(EXPR version "${CMAKE_MATCH_1}")  # drops leading zeros
  if(NOT version EQUAL expect)
    message(FATAL_ERROR "migrations/${f}: expected number ${expect}; numbers must run 1, 2, 3... without gaps")
  endif()
  math(EXPR expect "${expect} + 1")
  file(READ ${DIR}/${f} hex HEX)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
  string(REGEX REPLACE "((0x..,){16})" "\\1\n        " bytes "${bytes}")
  string(APPEND body "static const char sql_${version}[] = {\n        ${bytes}0x00};\n")
  string(APPEND table "        {${version}, \"${f}\", sql_${version}},\n")
endforeach()
if(expect EQUAL 1)
  message(FATAL_ERROR "no migrations in ${DIR}")
endif()
set(content "/* Generated from migrations/NNNN_name.sql by src/store/embed-migrations.cmake: do not edit. */
#include \"store/db-internal.h\"

${body}
const rkl_db__migration rkl_db__migrations[] = {
${table}};
const size_t rkl_db__n_migrations = sizeof(rkl_db__migrations) / sizeof(rkl_db__migrations[0]);
")
# Rewrite only on change, so an unchanged migration does not force a rebuild.
if(EXISTS ${OUT})
  file(READ ${OUT} old)
endif()
if(NOT old STREQUAL content)
  file(WRITE ${OUT} "${content}")
endif()
