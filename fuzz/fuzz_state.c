/* fuzz/fuzz_state.c - fuzz target for the `checkpoint` state file parser
 * (ckpt/state.h): the input is the file's text.
 *
 * Checks beyond "no crash": a rejected text gives CKPT_ECORRUPT with a
 * message; an accepted one has a model path and 0 or one timestamp per
 * path; it formats (except the one case the writer refuses: the model path
 * is not the last listed path while timestamps are present), the
 * formatted text parses back to the same state (with the model path
 * appended to the list when the writer appends it; doubles equal bit for
 * bit, any NaN matching any NaN), and formatting that again gives the same
 * bytes; no allocation above the cap, no leak.
 *
 * Every path it lists also goes through ckpt__path_normalize, the key the
 * saver compares a checkpoint's spellings by: the key is no longer than
 * the path, has no empty or "." component and no trailing '/' (but "/"),
 * has ".." only leading a relative key (never in an absolute one), stays
 * absolute or relative as the path was, and normalises to itself. */
#include "fuzz.h"

#include "ckpt/state.h"
#include "common/internal.h"

#include <math.h>
#include <string.h>

static int same_double(double a, double b)
{
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b);
    return memcmp(&a, &b, sizeof(a)) == 0;
}

/* Whether the writer adds model_checkpoint_path to the list. */
static int appends_model(const ckpt_state *st)
{
    return st->num_paths == 0 || strcmp(st->all_paths[st->num_paths - 1],
                                        st->model_checkpoint_path) != 0;
}

/* The invariants of ckpt__path_normalize's key for `path`. */
static void check_normalized(const char *path)
{
    ckpt_buf key = CKPT_BUF_INIT, again = CKPT_BUF_INIT;
    const char *p;
    int leading = 1; /* still in a relative key's leading ".."s */
    CKPT_FUZZ_CHECK(ckpt__path_normalize(&key, path) == 0);
    CKPT_FUZZ_CHECK(key.size == strlen(key.ptr));
    CKPT_FUZZ_CHECK(key.size <= strlen(path) || key.size == 0);
    CKPT_FUZZ_CHECK((path[0] == '/') == (key.ptr[0] == '/'));
    p = key.ptr[0] == '/' ? key.ptr + 1 : key.ptr;
    CKPT_FUZZ_CHECK(key.ptr[0] != '/' || key.size == 1 || *p != '\0');
    while (*p) {
        size_t n = strcspn(p, "/");
        int up = n == 2 && p[0] == '.' && p[1] == '.';
        CKPT_FUZZ_CHECK(n > 0 && !(n == 1 && p[0] == '.'));
        CKPT_FUZZ_CHECK(!up || (leading && key.ptr[0] != '/'));
        leading = leading && up;
        p += n;
        if (*p == '/') {
            p++;
            CKPT_FUZZ_CHECK(*p != '\0');
        }
    }
    CKPT_FUZZ_CHECK(ckpt__path_normalize(&again, key.ptr) == 0);
    CKPT_FUZZ_CHECK(strcmp(again.ptr, key.ptr) == 0);
    ckpt_buf_dispose(&key);
    ckpt_buf_dispose(&again);
}

static void check_reparsed(const ckpt_state *a, const ckpt_state *b)
{
    size_t extra = appends_model(a) ? 1 : 0;
    CKPT_FUZZ_CHECK(
        strcmp(a->model_checkpoint_path, b->model_checkpoint_path) == 0);
    CKPT_FUZZ_CHECK(b->num_paths == a->num_paths + extra);
    for (size_t i = 0; i < a->num_paths; i++)
        CKPT_FUZZ_CHECK(strcmp(a->all_paths[i], b->all_paths[i]) == 0);
    if (extra)
        CKPT_FUZZ_CHECK(
            strcmp(b->all_paths[a->num_paths], a->model_checkpoint_path) == 0);
    CKPT_FUZZ_CHECK(b->num_timestamps == a->num_timestamps);
    for (size_t i = 0; i < a->num_timestamps; i++)
        CKPT_FUZZ_CHECK(same_double(a->timestamps[i], b->timestamps[i]));
    CKPT_FUZZ_CHECK(
        same_double(a->last_preserved_timestamp, b->last_preserved_timestamp));
}

int ckpt_fuzz_state(const uint8_t *data, size_t size)
{
    ckpt_state st = CKPT_STATE_INIT;
    ckpt_state st2 = CKPT_STATE_INIT;
    ckpt_buf text = CKPT_BUF_INIT, text2 = CKPT_BUF_INIT;
    int rc;

    ckpt_fuzz_begin();
    rc = ckpt_state_parse(&st, (const char *)data, size, "fuzz/checkpoint");
    if (rc != 0) {
        CKPT_FUZZ_CHECK(rc == CKPT_ECORRUPT);
        CKPT_FUZZ_CHECK(ckpt_error_last()->code == rc);
        CKPT_FUZZ_CHECK(ckpt_error_last()->message[0] != '\0');
        CKPT_FUZZ_CHECK(st.model_checkpoint_path == NULL &&
                        st.all_paths == NULL && st.timestamps == NULL);
        goto done;
    }
    CKPT_FUZZ_CHECK(st.model_checkpoint_path != NULL &&
                    st.model_checkpoint_path[0] != '\0');
    CKPT_FUZZ_CHECK(st.num_timestamps == 0 ||
                    st.num_timestamps == st.num_paths);
    for (size_t i = 0; i < st.num_paths; i++) {
        CKPT_FUZZ_CHECK(st.all_paths[i] != NULL);
        check_normalized(st.all_paths[i]);
    }
    check_normalized(st.model_checkpoint_path);

    rc = ckpt_state_format(&text, &st);
    if (rc != 0) {
        CKPT_FUZZ_CHECK(rc == CKPT_EINVAL);
        CKPT_FUZZ_CHECK(appends_model(&st) && st.num_timestamps != 0);
        goto done;
    }
    rc = ckpt_state_parse(&st2, text.ptr, text.size, "formatted");
    CKPT_FUZZ_CHECK(rc == 0);
    check_reparsed(&st, &st2);
    rc = ckpt_state_format(&text2, &st2);
    CKPT_FUZZ_CHECK(rc == 0);
    CKPT_FUZZ_CHECK(text2.size == text.size &&
                    memcmp(text.ptr, text2.ptr, text.size) == 0);
done:
    ckpt_state_dispose(&st);
    ckpt_state_dispose(&st2);
    ckpt_buf_dispose(&text);
    ckpt_buf_dispose(&text2);
    ckpt_fuzz_end("state");
    return 0;
}
