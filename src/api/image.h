/* ImageService handlers. List and status answer from the image cache; pull, remove and
 * filesystem usage run on the server's worker pool (rkl_api_defer()). */
#pragma once

#include "api.h"
#include "api.pb-c.h"

int rkl_api_list_images(rkl_api_ctx *ctx, const Runtime__V1__ListImagesRequest *req,
                        Runtime__V1__ListImagesResponse *resp, rkl_error *reterr);
int rkl_api_image_status(rkl_api_ctx *ctx, const Runtime__V1__ImageStatusRequest *req,
                         Runtime__V1__ImageStatusResponse *resp, rkl_error *reterr);
int rkl_api_pull_image(rkl_api_ctx *ctx, const Runtime__V1__PullImageRequest *req,
                       Runtime__V1__PullImageResponse *resp, rkl_error *reterr);
int rkl_api_remove_image(rkl_api_ctx *ctx, const Runtime__V1__RemoveImageRequest *req,
                         Runtime__V1__RemoveImageResponse *resp, rkl_error *reterr);
/* ListImages' answer in pages (page.h). */
int rkl_api_stream_images(rkl_api_ctx *ctx, const Runtime__V1__StreamImagesRequest *req,
                          Runtime__V1__StreamImagesResponse *resp, rkl_error *reterr);
int rkl_api_image_fs_info(rkl_api_ctx *ctx, const Runtime__V1__ImageFsInfoRequest *req,
                          Runtime__V1__ImageFsInfoResponse *resp, rkl_error *reterr);

typedef struct rkl_images rkl_images;

/* Whether a container rktlet manages uses image_id (rkl_images_container_uses() over the
 * status cache). *ret_user names those that do (the first 8, and how many more). */
bool rkl_api_image_in_use(rkl_cache *cache, rkl_images *images, const char *image_id,
                          char **ret_user);
