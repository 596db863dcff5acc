/* common/name_index.c - tensor names as writers take them: the length
 * limit (and the name check that registering a variable makes, one for the
 * savers and the graph), a graph tensor's output suffix (":0") and a
 * partitioned variable's part suffix ("/part_0") that keys lack,
 * and a name -> position index (open addressing, FNV-1a) over names the caller
 * keeps alive, so registering n variables and looking names up cost O(1) each
 * instead of a scan of everything registered (the savers' variable lists, the
 * graph). */
#include "internal.h"

#include "ckpt/tensor.h"

#include <string.h>

size_t ckpt__without_output_suffix(const char *name, size_t n)
{
    size_t i = n;
    while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9')
        i--;
    return i > 1 && i < n && name[i - 1] == ':' ? i - 1 : n;
}

size_t ckpt__without_part_suffix(const char *name, size_t n)
{
    static const char part[] = "/part_";
    size_t np = sizeof(part) - 1;
    size_t i = n;
    while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9')
        i--;
    if (i == n || i < np + 1 || memcmp(name + i - np, part, np) != 0)
        return n;
    return i - np;
}

int ckpt__check_name_length(const char *who, const char *name)
{
    size_t n = strlen(name);
    if (n <= CKPT_MAX_NAME_BYTES)
        return 0;
    return ckpt__error(CKPT_EINVAL,
                       "%s: a tensor name of %zu bytes (starting '%.40s'): "
                       "at most CKPT_MAX_NAME_BYTES (%u)",
                       who, n, name, CKPT_MAX_NAME_BYTES);
}

int ckpt__check_var_name(const char *who, const char *name)
{
    if (!name || !*name)
        return ckpt__error(CKPT_EINVAL,
                           "%s: variable without a name (its name is %s)", who,
                           name ? "empty" : "NULL");
    return ckpt__check_name_length(who, name);
}

static size_t name_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return (size_t)h;
}

/* The slot holding `name`, or the empty slot where it would go. */
static size_t slot_of(const ckpt__name_index *x, const char *name)
{
    size_t i = name_hash(name) & (x->nslots - 1);
    while (x->slots[i].name && strcmp(x->slots[i].name, name) != 0)
        i = (i + 1) & (x->nslots - 1);
    return i;
}

size_t ckpt__name_index_find(const ckpt__name_index *x, const char *name)
{
    size_t i;
    if (x->nslots == 0)
        return SIZE_MAX;
    i = slot_of(x, name);
    return x->slots[i].name ? x->slots[i].pos : SIZE_MAX;
}

int ckpt__name_index_reserve(ckpt__name_index *x, size_t count)
{
    size_t n = x->nslots ? x->nslots : 32;
    ckpt__name_slot *old = x->slots;
    size_t old_n = x->nslots;
    if (x->nslots && 2 * count <= x->nslots)
        return 0;
    while (2 * count > n)
        n *= 2;
    x->slots = ckpt__calloc(n, sizeof(*x->slots));
    if (!x->slots) {
        x->slots = old;
        return ckpt__error_oom();
    }
    x->nslots = n;
    for (size_t i = 0; i < old_n; i++)
        if (old[i].name)
            x->slots[slot_of(x, old[i].name)] = old[i];
    ckpt__free(old);
    return 0;
}

void ckpt__name_index_put(ckpt__name_index *x, const char *name, size_t pos)
{
    size_t i = slot_of(x, name);
    x->slots[i].name = name;
    x->slots[i].pos = pos;
}

void ckpt__name_index_dispose(ckpt__name_index *x)
{
    ckpt__free(x->slots);
    x->slots = NULL;
    x->nslots = 0;
}
