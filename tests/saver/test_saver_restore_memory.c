/* tests/saver/test_saver_restore_memory.c - what ckpt_saver_restore
 * allocates per variable beyond the bundle reader it opens, counted
 * through the allocator hook (tests/support/count_alloc.h, installed
 * before the library allocates), never timed. The restore's peak of live
 * bytes, less the peak of opening the checkpoint's reader alone (its index
 * of entries), divided by VARS, must stay below PER_VAR_LIMIT: checking and
 * reading a variable by name fills an entry of the restore's own, and
 * makes no public entry kept until the reader is freed. The restored
 * values are checked. */
#include "support/count_alloc.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VARS 2000
/* Bytes per variable a restore may add to its reader's peak: the
 * read_many requests and plan, the extents of one read: 46 here. Each
 * check and read by name made a public entry (336 bytes, in chunks grown
 * by doubling) before: 379. */
#define PER_VAR_LIMIT 150

typedef struct model {
    char names[VARS][16];
    float values[VARS];
    ckpt_var vars[VARS];
} model;

static void model_register(model *m, ckpt_saver *s)
{
    for (int i = 0; i < VARS; i++) {
        snprintf(m->names[i], sizeof(m->names[i]), "v%05d", i);
        m->vars[i] = test_float_var(m->names[i], &m->values[i], 1);
        assert_ckpt_ok(ckpt_saver_add_var(s, &m->vars[i]));
    }
}

static void test_restore_keeps_nothing_per_variable(void **state)
{
    char *dir = test_make_temp_dir();
    model *m = calloc(1, sizeof(*m));
    ckpt_saver *s = NULL;
    ckpt_bundle_reader *r = NULL;
    ckpt_buf prefix = CKPT_BUF_INIT;
    long long before, open_peak, restore_peak, per_var;
    (void)state;
    assert_non_null(m);
    assert_ckpt_ok(ckpt_saver_open(&s, dir, NULL));
    model_register(m, s);
    for (int i = 0; i < VARS; i++)
        m->values[i] = (float)i + 0.5f;
    assert_ckpt_ok(ckpt_saver_save(s, 1, &prefix));
    memset(m->values, 0, sizeof(m->values));

    before = count_alloc_live();
    count_alloc_reset_peak();
    assert_ckpt_ok(ckpt_bundle_reader_open(&r, prefix.ptr, NULL));
    open_peak = count_alloc_peak() - before;
    ckpt_bundle_reader_free(r);

    before = count_alloc_live();
    count_alloc_reset_peak();
    assert_ckpt_ok(ckpt_saver_restore(s, prefix.ptr));
    restore_peak = count_alloc_peak() - before;
    for (int i = 0; i < VARS; i++)
        assert_true(m->values[i] == (float)i + 0.5f);
    per_var = (restore_peak - open_peak) / VARS;
    print_message("restoring %d variables: peak %lld bytes, the reader's "
                  "open %lld, %lld more per variable\n",
                  VARS, restore_peak, open_peak, per_var);
    if (per_var > PER_VAR_LIMIT)
        fail_msg("a restore adds %lld bytes per variable to its reader's, "
                 "more than %d",
                 per_var, PER_VAR_LIMIT);
    ckpt_saver_free(s);
    ckpt_buf_dispose(&prefix);
    free(m);
    test_remove_tree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_restore_keeps_nothing_per_variable)};
    /* before any allocation of the library */
    if (ckpt_set_allocator(&count_alloc) != 0)
        return 1;
    return cmocka_run_group_tests(tests, NULL, NULL);
}
