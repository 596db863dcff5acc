/* `ckpt repack` of every TensorFlow test vector gives a checkpoint whose
 * index LevelDB's own table reader opens (with checksums verified), with
 * exactly the keys and entry values our reader sees, and whose tensors
 * match the original's values (`ckpt diff` exits 0). */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct vector {
    const char *dir;
    const char *prefix;
};

static const struct vector vectors[] = {
    {"serving_half_plus_two_cpu", "variables"},
    {"serving_half_plus_two_tf2_cpu", "variables"},
    {"tf2onnx_regression_ckpt", "model"},
    {"rust_regression_savedmodel", "variables"},
    {"tictactoe_ckpt_manager", "ckpt-17"},
    {"tictactoe_ckpt_manager", "ckpt-19"},
    {"rl_collection_sharded", "ckpt-5"},
    {"tfx_estimator_saver", "model.ckpt-0"},
    {"tfx_estimator_saver", "model.ckpt-1000"},
};

static int run(const char *cmd)
{
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* Count the key/value lines LevelDB's reader prints for `index`; -1 when
 * it fails to open or read the table. */
static long leveldb_entries(const char *index, char **first_key)
{
#ifdef CKPT_LEVELDB_DUMP
    char cmd[8400];
    char line[1 << 16];
    long n = 0;
    FILE *p;
    snprintf(cmd, sizeof(cmd), "'%s' '%s' 2>/dev/null", CKPT_LEVELDB_DUMP,
             index);
    p = popen(cmd, "r");
    assert_non_null(p);
    while (fgets(line, sizeof(line), p)) {
        if (n == 1 && first_key) {
            char *space = strchr(line, ' ');
            if (space)
                *space = '\0';
            *first_key = strdup(line);
        }
        n++;
    }
    return pclose(p) == 0 ? n : -1;
#else
    (void)index;
    (void)first_key;
    return -2;
#endif
}

static void hex(char *out, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        snprintf(out + 2 * i, 3, "%02x", (unsigned char)s[i]);
}

static void test_repack_opens_in_leveldb(void **state)
{
    char *root = test_tf_vector("");
    char *tmp;
    (void)state;
    if (!root)
        return;
    if (leveldb_entries("/nonexistent", NULL) == -2) {
        free(root);
        print_message("SKIPPED: built without LevelDB\n");
        skip();
        return;
    }
    tmp = test_make_temp_dir();
    for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
        const struct vector *v = &vectors[i];
        char src[4200], dst[4400], index[4500], cmd[9000];
        char *first = NULL;
        ckpt_bundle_reader *r = NULL;
        char want[2 * 256 + 1];
        long n;
        snprintf(src, sizeof(src), "%s%s/%s", root, v->dir, v->prefix);
        snprintf(dst, sizeof(dst), "%s/%zu-%s", tmp, i, v->prefix);
        snprintf(cmd, sizeof(cmd), "'%s' repack '%s' '%s' >/dev/null 2>&1",
                 CKPT_CLI_PATH, src, dst);
        assert_int_equal(run(cmd), 0);
        snprintf(cmd, sizeof(cmd), "'%s' diff '%s' '%s' >/dev/null 2>&1",
                 CKPT_CLI_PATH, src, dst);
        if (run(cmd) != 0)
            fail_msg("%s: repacked values differ", src);
        snprintf(index, sizeof(index), "%s.index", dst);
        n = leveldb_entries(index, &first);
        if (n < 0)
            fail_msg("%s: LevelDB's table reader rejects the index", index);
        assert_ckpt_ok(ckpt_bundle_reader_open(&r, dst, NULL));
        /* The header entry plus one per tensor. */
        assert_int_equal(n, (long)ckpt_bundle_reader_count(r) + 1);
        print_message("%s: LevelDB read %ld entries\n", v->dir, n);
        assert_int_equal(ckpt_bundle_reader_num_shards(r), 1);
        {
            const ckpt_tensor_entry *e = ckpt_bundle_reader_entry(r, 0);
            assert_true(e->name_len < 256);
            hex(want, e->name, e->name_len);
            assert_non_null(first);
            assert_string_equal(first, want);
        }
        free(first);
        ckpt_bundle_reader_free(r);
    }
    test_remove_tree(tmp);
    free(root);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_repack_opens_in_leveldb),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
