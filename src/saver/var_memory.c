/* saver/var_memory.c - each registered variable has memory of its own: two
 * whose data overlap (one buffer registered under two names, or a
 * copy-paste slip that registers w1's memory as w2's, leaving w2 unsaved)
 * are refused by name when the variables are fixed and before a restore,
 * as TensorFlow refuses one variable under two names. */
#include "saver_internal.h"

#include "common/mem_ranges.h"

/* Whether the saver reads or writes `v`'s memory itself (a variable with
 * both callbacks never touches its data). */
static int uses_memory(const ckpt__var *v)
{
    return v->v.data && v->bytes > 0 && !(v->v.read && v->v.write);
}

int ckpt__saver_check_own_memory(ckpt_saver *s, const char *op)
{
    ckpt__mem_range *r;
    size_t n = 0, a, b;
    int found;
    if (s->memory_checked == s->nvars)
        return 0;
    r = ckpt__malloc((s->nvars ? s->nvars : 1) * sizeof(*r));
    if (!r)
        return ckpt__error_oom();
    for (size_t i = 0; i < s->nvars; i++)
        if (uses_memory(&s->vars[i])) {
            r[n].start = (uintptr_t)s->vars[i].v.data;
            r[n].end = r[n].start + (uintptr_t)s->vars[i].bytes;
            r[n].index = i;
            n++;
        }
    found = ckpt__mem_ranges_overlap(r, n, &a, &b);
    ckpt__free(r);
    if (!found) {
        s->memory_checked = s->nvars;
        return 0;
    }
    return ckpt__error(
        CKPT_EINVAL,
        "saver %s: %s: variables '%s' (%llu bytes at %p) and '%s' (%llu "
        "bytes at %p) share memory: give each variable its own (one memory "
        "under two names is saved twice and restored from either)",
        ckpt__saver_say(s), op, s->vars[a].name,
        (unsigned long long)s->vars[a].bytes, s->vars[a].v.data,
        s->vars[b].name, (unsigned long long)s->vars[b].bytes,
        s->vars[b].v.data);
}
