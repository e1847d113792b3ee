#include "json.h"

#include "base/alloc.h"
#include "base/banned.h"

#define JSON_DEPTH 32

static bool is_ws(char c)
{
        return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

int rkl_json_parse(const char *buf, size_t len, size_t max, json_object **ret, rkl_error *reterr)
{
        if (len > max)
                return rkl_error_set(reterr, -EFBIG, "%zu bytes, more than %zu", len, max);
        while (len > 0 && is_ws(buf[len - 1]))
                len--;
        if (len == 0)
                return rkl_error_set(reterr, -EBADMSG, "empty");

        _cleanup_(json_tokener_freep) json_tokener *tok = json_tokener_new_ex(JSON_DEPTH);
        if (!tok)
                rkl_oom();
        json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
        _cleanup_(json_object_putp) json_object *o = json_tokener_parse_ex(tok, buf, (int)len);
        enum json_tokener_error jerr = json_tokener_get_error(tok);
        size_t end = json_tokener_get_parse_end(tok);
        /* A bare top-level literal ("null", "12") may go on in the next chunk as far as the
         * tokener knows: a NUL byte tells it that the input ended. */
        if (jerr == json_tokener_continue && end == len) {
                o = json_tokener_parse_ex(tok, "", 1);
                jerr = json_tokener_get_error(tok);
        }
        if (jerr != json_tokener_success)
                return rkl_error_set(reterr, -EBADMSG, "invalid JSON: %s",
                                     jerr == json_tokener_continue ? "truncated"
                                                                   : json_tokener_error_desc(jerr));
        if (end != len)
                return rkl_error_set(reterr, -EBADMSG, "invalid JSON: trailing bytes");
        *ret = TAKE_PTR(o);
        return 0;
}

int rkl_json_get_string(json_object *o, const char *key, size_t max, const char **ret,
                        rkl_error *reterr)
{
        json_object *v = NULL;
        *ret = NULL;
        if (!json_object_object_get_ex(o, key, &v) || !v)
                return 0;
        if (!json_object_is_type(v, json_type_string))
                return rkl_error_set(reterr, -EBADMSG, "'%s' is not a string", key);
        size_t n = (size_t)json_object_get_string_len(v);
        const char *s = json_object_get_string(v);
        if (n > max || strlen(s) != n)
                return rkl_error_set(reterr, -EBADMSG, "'%s' is too long or holds NUL", key);
        *ret = s;
        return 0;
}

int rkl_json_get_int(json_object *o, const char *key, int64_t *ret, rkl_error *reterr)
{
        json_object *v = NULL;
        *ret = 0;
        if (!json_object_object_get_ex(o, key, &v) || !v)
                return 0;
        if (!json_object_is_type(v, json_type_int))
                return rkl_error_set(reterr, -EBADMSG, "'%s' is not an integer", key);
        errno = 0;
        *ret = json_object_get_int64(v);
        if (errno != 0)
                return rkl_error_set(reterr, -EBADMSG, "'%s' is out of range", key);
        return 0;
}

json_object *rkl_json_new_strv(char *const *l)
{
        json_object *a = json_object_new_array();
        if (!a)
                rkl_oom();
        for (char *const *s = l; s && *s; s++)
                json_object_array_add(a, json_object_new_string(*s));
        return a;
}
