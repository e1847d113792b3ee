/* The recorded tags: each pull records the reference the client pulled (normalised) as a tag
 * of the image it got, kept in memory (lock held) and persisted in <state dir>/images.json,
 * so that an image pulled through a mirror lists the reference the client asked for. */
#include "images-internal.h"

#include <fcntl.h>
#include "base/json.h"

#include "base/alloc.h"
#include "base/fileio.h"
#include "base/hashmap.h"
#include "base/imageref.h"
#include "base/banned.h"

#define TAGS_FILE_MAX (4u << 20)

static void alias_drop_at(rkl_images *im, size_t i)
{
        free(im->aliases[i].ref);
        free(im->aliases[i].id);
        im->aliases[i] = im->aliases[--im->n_aliases];
}

static void alias_set(rkl_images *im, const char *ref, const char *id, int64_t at_ns)
{
        for (size_t i = 0; i < im->n_aliases; i++)
                if (streq(im->aliases[i].ref, ref)) {
                        free(im->aliases[i].id);
                        im->aliases[i].id = rkl_xstrdup(id);
                        im->aliases[i].at_ns = at_ns;
                        return;
                }
        im->aliases = rkl_xrealloc(im->aliases, (im->n_aliases + 1) * sizeof(rkl_images__alias));
        im->aliases[im->n_aliases++] =
            (rkl_images__alias){rkl_xstrdup(ref), rkl_xstrdup(id), at_ns};
}

static int save(rkl_images *im)
{
        _cleanup_(json_object_putp) json_object *root = json_object_new_object();
        json_object *arr = json_object_new_array();
        json_object_object_add(root, "tags", arr);
        for (size_t i = 0; i < im->n_aliases; i++) {
                json_object *o = json_object_new_object();
                json_object_object_add(o, "ref", json_object_new_string(im->aliases[i].ref));
                json_object_object_add(o, "id", json_object_new_string(im->aliases[i].id));
                json_object_object_add(o, "at", json_object_new_int64(im->aliases[i].at_ns));
                json_object_array_add(arr, o);
        }
        json_object *rel = json_object_new_array();
        json_object_object_add(root, "released", rel);
        for (size_t i = 0; i < im->n_released; i++) {
                json_object *o = json_object_new_object();
                json_object_object_add(o, "ref", json_object_new_string(im->released[i].ref));
                json_object_object_add(o, "at", json_object_new_int64(im->released[i].at_ns));
                json_object_array_add(rel, o);
        }
        const char *s = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN);
        return rkl_write_file_atomic_at(AT_FDCWD, im->tags_path, s, strlen(s), 0600);
}

/* A failed save is dropped: the tags in memory stay right and the pull, refresh or removal
 * that changed them did happen, so it does not fail for it. The file keeps its older tags
 * until a later save, which writes the whole list; a restart in between brings them back,
 * and then a refresh drops those of removed images and a pull of a tag moves it again. */
static void save_or_keep(rkl_images *im)
{
        (void)save(im);
}

void rkl_images__tags_record(rkl_images *im, const char *ref, const char *id, int64_t at_ns)
{
        alias_set(im, ref, id, at_ns);
        save_or_keep(im);
}

/* Drops the aliases drop() picks (id: the image an alias names) and saves if any went. */
static void aliases_drop_if(rkl_images *im,
                            bool (*drop)(rkl_images *im, const char *id, const void *arg),
                            const void *arg)
{
        bool dropped = false;
        for (size_t i = 0; i < im->n_aliases;)
                if (drop(im, im->aliases[i].id, arg)) {
                        alias_drop_at(im, i);
                        dropped = true;
                } else
                        i++;
        if (dropped)
                save_or_keep(im);
}

static bool names_image(rkl_images *im, const char *id, const void *image_id)
{
        return streq(id, image_id);
}

static bool names_unlisted(rkl_images *im, const char *id, const void *arg)
{
        return !rkl_hashmap_get(im->by_id, id);
}

void rkl_images__tags_drop_image(rkl_images *im, const char *id)
{
        aliases_drop_if(im, names_image, id);
}

void rkl_images__tags_drop_unlisted(rkl_images *im)
{
        aliases_drop_if(im, names_unlisted, NULL);
}

void rkl_images__tags_clear(rkl_images *im)
{
        while (im->n_aliases > 0)
                alias_drop_at(im, 0);
        free(im->aliases);
        im->aliases = NULL;
        for (size_t i = 0; i < im->n_released; i++)
                free(im->released[i].ref);
        free(im->released);
        im->released = NULL;
        im->n_released = 0;
}

static void released_set(rkl_images *im, const char *ref, int64_t at_ns)
{
        for (size_t i = 0; i < im->n_released; i++)
                if (streq(im->released[i].ref, ref)) {
                        if (at_ns > im->released[i].at_ns)
                                im->released[i].at_ns = at_ns;
                        return;
                }
        im->released =
            rkl_xrealloc(im->released, (im->n_released + 1) * sizeof(rkl_images__released));
        im->released[im->n_released++] = (rkl_images__released){rkl_xstrdup(ref), at_ns, true};
}

void rkl_images__tags_release(rkl_images *im, const char *ref, int64_t at_ns)
{
        released_set(im, ref, at_ns);
        save_or_keep(im);
}

bool rkl_images__tags_released(rkl_images *im, const char *ref, int64_t at_ns)
{
        for (size_t i = 0; i < im->n_released; i++)
                if (streq(im->released[i].ref, ref)) {
                        if (at_ns > im->released[i].at_ns)
                                return false;
                        im->released[i].used = true;
                        return true;
                }
        return false;
}

void rkl_images__tags_released_unuse(rkl_images *im)
{
        for (size_t i = 0; i < im->n_released; i++)
                im->released[i].used = false;
}

void rkl_images__tags_released_prune(rkl_images *im)
{
        bool dropped = false;
        for (size_t i = 0; i < im->n_released;)
                if (!im->released[i].used) {
                        free(im->released[i].ref);
                        im->released[i] = im->released[--im->n_released];
                        dropped = true;
                } else
                        i++;
        if (dropped)
                save_or_keep(im);
}

/* A damaged file loses the recorded tags, not the images: they keep their own tags. */
void rkl_images__tags_load(rkl_images *im)
{
        _cleanup_free_ char *buf = NULL;
        size_t n = 0;
        if (rkl_read_file_at(AT_FDCWD, im->tags_path, TAGS_FILE_MAX, &buf, &n) < 0)
                return;
        _cleanup_(json_object_putp) json_object *root = json_tokener_parse(buf);
        json_object *arr = NULL;
        if (!root || !json_object_object_get_ex(root, "tags", &arr) ||
            !json_object_is_type(arr, json_type_array))
                return;
        for (size_t i = 0; i < json_object_array_length(arr); i++) {
                json_object *o = json_object_array_get_idx(arr, i), *ref, *id, *at;
                if (!o || !json_object_object_get_ex(o, "ref", &ref) ||
                    !json_object_object_get_ex(o, "id", &id) ||
                    !json_object_object_get_ex(o, "at", &at))
                        continue;
                const char *rs = json_object_get_string(ref), *is = json_object_get_string(id);
                rkl_imageref r = {0};
                if (!rkl_image_id_is_valid(is) || rkl_imageref_parse(rs, &r, NULL) < 0 || r.id) {
                        rkl_imageref_done(&r);
                        continue;
                }
                _cleanup_free_ char *norm = rkl_imageref_to_string(&r);
                rkl_imageref_done(&r);
                if (streq(norm, rs))
                        alias_set(im, rs, is, json_object_get_int64(at));
        }
        json_object *rel = NULL;
        if (!json_object_object_get_ex(root, "released", &rel) ||
            !json_object_is_type(rel, json_type_array))
                return;
        for (size_t i = 0; i < json_object_array_length(rel); i++) {
                json_object *o = json_object_array_get_idx(rel, i), *ref, *at;
                if (!o || !json_object_object_get_ex(o, "ref", &ref) ||
                    !json_object_object_get_ex(o, "at", &at))
                        continue;
                const char *rs = json_object_get_string(ref);
                rkl_imageref r = {0};
                if (rkl_imageref_parse(rs, &r, NULL) < 0 || r.id) {
                        rkl_imageref_done(&r);
                        continue;
                }
                rkl_imageref_done(&r);
                released_set(im, rs, json_object_get_int64(at));
        }
}
