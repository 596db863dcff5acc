/* saver/snapshot.c - staging images for async saves and the snapshot copy
 * into them: the only part of an async save the training loop waits for.
 *
 * An image is laid out exactly as the data file will be: each variable's
 * record at its offset, contiguous (TensorFlow's alignment 1). It is mapped
 * page-aligned (so it can be written with O_DIRECT) and pre-faulted with
 * MAP_POPULATE once, then reused for every save, so a snapshot costs one
 * memcpy into warm memory and no page faults. When the writer thread is
 * idle it shares the copy (ckpt__snapshot_work): one core's copy does not
 * use all the memory bandwidth, so two nearly halve the wait. */
#include "saver_internal.h"
#include "util/crc32c.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static size_t page_size(void)
{
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096;
}

int ckpt__image_alloc(ckpt__image *img, uint64_t bytes, size_t nvars)
{
    size_t page = page_size();
    size_t len;
    void *p;
    if (bytes > SIZE_MAX - page)
        return ckpt__error(CKPT_ENOMEM,
                           "staging image of %llu bytes is too "
                           "large",
                           (unsigned long long)bytes);
    len = ((size_t)bytes + page - 1) / page * page;
    if (len == 0)
        len = page;
    /* mmap, not ckpt__malloc: the image must be page-aligned (it is
     * written with O_DIRECT), pre-faulted once (MAP_POPULATE) and handed
     * back to the system whole when freed; a ckpt_allocator offers none of
     * that (malloc/realloc/free only). Its crc array below, and everything
     * else of a saver, still goes through the allocator; a mapping refused
     * for lack of memory is CKPT_ENOMEM, as a failed allocation is. */
    p = mmap(NULL, len, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (p == MAP_FAILED)
        return ckpt__error_errno(errno, "mapping a staging image of %zu bytes",
                                 len);
    img->crcs = ckpt__calloc(nvars ? nvars : 1, sizeof(*img->crcs));
    if (!img->crcs) {
        munmap(p, len);
        return ckpt__error_oom();
    }
    img->ptr = p;
    img->mapped = len;
    return 0;
}

void ckpt__image_free(ckpt__image *img)
{
    if (img->ptr)
        munmap(img->ptr, img->mapped);
    ckpt__free(img->crcs);
    img->crcs = NULL;
    img->ptr = NULL;
    img->mapped = 0;
}

int ckpt__snapshot_vars(const ckpt__var *vars, size_t n, ckpt__image *img)
{
    return ckpt__snapshot_range(vars, 0, n, img);
}

void ckpt__snapshot_claim_plain(ckpt__snapshot_work *w)
{
    for (;;) {
        size_t k = atomic_fetch_add(&w->next, 1);
        if (k >= w->nplain)
            return;
        (void)ckpt__snapshot_range(w->vars, w->plain[k], w->plain[k] + 1,
                                   w->img);
    }
}

int ckpt__snapshot_run_caller(ckpt__snapshot_work *w)
{
    for (size_t i = 0; i < w->nvars; i++) {
        int err;
        if (!w->vars[i].v.read)
            continue;
        err = ckpt__snapshot_range(w->vars, i, i + 1, w->img);
        if (err < 0) {
            atomic_store(&w->next, w->nplain); /* nothing more to claim */
            return err;
        }
    }
    ckpt__snapshot_claim_plain(w);
    return 0;
}

int ckpt__snapshot_range(const ckpt__var *vars, size_t begin, size_t end,
                         ckpt__image *img)
{
    for (size_t i = begin; i < end; i++) {
        const ckpt__var *v = &vars[i];
        uint8_t *dst = img->ptr + v->offset;
        if (v->v.read) {
            int rc = v->v.read(dst, 0, (size_t)v->bytes, v->v.payload);
            if (rc != 0)
                return ckpt__error(CKPT_EUSER,
                                   "variable '%s': read callback failed (%d)",
                                   v->name, rc);
            img->crcs[i] = ckpt__crc32c(dst, (size_t)v->bytes);
        } else {
            /* One pass: the copy and its checksum. */
            img->crcs[i] =
                ckpt__crc32c_copy(0, dst, v->v.data, (size_t)v->bytes);
        }
    }
    return 0;
}
