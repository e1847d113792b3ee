#include "pb.h"

#include "base/utf8.h"
#include "base/banned.h"

char *rkl_api_pb_str(rkl_arena *a, const char *s)
{
        return rkl_arena_strdup(a, s ? s : "");
}

char *rkl_api_pb_text(rkl_arena *a, const char *s)
{
        return rkl_utf8_sanitize(rkl_api_pb_str(a, s));
}

char *rkl_api_pb_json(rkl_arena *a, json_object *o)
{
        char *s =
            rkl_api_pb_text(a, json_object_to_json_string_ext(
                                   o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(o);
        return s;
}

json_object *rkl_api_json_str(const char *s)
{
        return s ? json_object_new_string(s) : NULL;
}

json_object *rkl_api_json_ns(int64_t ns)
{
        return ns != 0 ? json_object_new_int64(ns) : NULL;
}
