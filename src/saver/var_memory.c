/* saver/var_memory.c - each registered variable has memory of its own: two
 * whose data overlap (one buffer registered under two names, or a
 * copy-paste slip that registers w1's memory as w2's, leaving w2 unsaved)
 * are refused by name when the variables are fixed and before a restore,
 * as TensorFlow refuses one variable under two names. */
#include "saver_internal.h"

#include "common/mem_ranges.h"

/* The memory `i` of the saver's variables uses, for the check (a variable
 * with both callbacks never touches its data). */
static int memory_of(const void *vars, size_t i, const char **name,
                     const void **data, uint64_t *bytes)
{
    const ckpt__var *v = (const ckpt__var *)vars + i;
    *name = v->name;
    *data = v->v.data;
    *bytes = v->bytes;
    return v->v.data && v->bytes > 0 && !(v->v.read && v->v.write);
}

int ckpt__saver_check_own_memory(ckpt_saver *s, const char *op)
{
    int err;
    if (s->memory_checked == s->nvars)
        return 0;
    err = ckpt__check_own_memory(s->vars, s->nvars, memory_of);
    if (err < 0)
        return ckpt__error_prefix(err, "saver %s: %s", ckpt__saver_say(s), op);
    s->memory_checked = s->nvars;
    return 0;
}
