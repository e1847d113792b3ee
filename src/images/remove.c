/* Removing an image: from rkt's store (never while a container uses it, nor inside a fetch),
 * then from the cache with its recorded tags. */
#include "images-internal.h"

#include "base/alloc.h"
#include "base/imageref.h"
#include "base/strv.h"
#include "rkt/image.h"
#include "base/banned.h"

int rkl_images_remove(rkl_images *im, const char *ref, rkl_images_in_use_fn in_use, void *userdata,
                      rkl_error *reterr)
{
        _cleanup_(rkl_imageref_done) rkl_imageref parsed = {0};
        _cleanup_free_ char *id = NULL, *user = NULL;
        int r;

        r = rkl_imageref_parse(ref, &parsed, reterr);
        if (r < 0)
                return r;
        r = rkl_images_resolve(im, ref, &id);
        if (r == -ENOENT)
                return 0; /* CRI: removing what is gone succeeds */
        if (r == -ENOTUNIQ)
                return rkl_error_set(reterr, r, "image ID prefix '%s' is ambiguous", ref);
        if (r < 0)
                return rkl_error_set(reterr, r, "image '%s': %s", ref, strerror(-r));
        /* Not transient (UNAVAILABLE would have clients retry it as such): the client
         * removes the containers first, or keeps the image. */
        if (in_use && in_use(userdata, id, &user))
                return rkl_error_set(reterr, -ETXTBSY,
                                     "image '%s' (%s) is in use by %s: remove them first", ref, id,
                                     user ? user : "a container");
        if (!im->rkt)
                return rkl_images__no_rkt(reterr);

        /* All of rkt's images for it: one per tag pulled of the same registry manifest. */
        _cleanup_strv_free_ char **members = rkl_images__members(im, id);
        pthread_rwlock_wrlock(&im->store_lock);
        RKL_GUARD(&im->op_lock);
        RKL_STRV_FOREACH (m, members) {
                r = rkl_rkt_image_rm(im->rkt, *m, im->cmd_timeout_usec, reterr);
                if (r < 0 && r != -ENOENT) {
                        pthread_rwlock_unlock(&im->store_lock);
                        return rkl_error_prefix(reterr, "cannot remove image '%s'", ref);
                }
                rkl_images__forget(im, *m);
        }
        pthread_rwlock_unlock(&im->store_lock);
        return 0;
}
