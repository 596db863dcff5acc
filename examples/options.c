/* examples/options.c - how options structs behave: start from the INIT
 * macro (or the *_options_init function) and set what you need; every
 * field left 0 or NULL means its default. A zeroed struct has version 0
 * and is refused with a message naming the macro; a struct from an older
 * header (an older version number) is accepted. docs/guide.md section 9.
 *
 * Usage: options [DIR]   (default: ckpts-options) */
#include <ckpt.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "ckpts-options";
    ckpt_checkpoint_hook_options zeroed, o = CKPT_CHECKPOINT_HOOK_OPTIONS_INIT;
    ckpt_saver_options so;
    ckpt_hook hook;
    int err;

    memset(&zeroed, 0, sizeof(zeroed));
    zeroed.checkpoint_dir = dir, zeroed.save_steps = 10;
    err = ckpt_checkpoint_hook_new(&hook, &zeroed);
    printf("zeroed struct: %s: %s\n", ckpt_error_name(err),
           ckpt_error_last()->message);

    o.checkpoint_dir = dir, o.save_steps = 10; /* the rest: defaults */
    err = ckpt_checkpoint_hook_new(&hook, &o);
    printf("from INIT: %s\n", err ? ckpt_error_last()->message : "ok");
    ckpt_hook_free(&hook); /* never handed to a session */

    o.version = 1; /* built against the first version of the header */
    err = err ? err : ckpt_checkpoint_hook_new(&hook, &o);
    printf("version 1: %s\n", err ? ckpt_error_last()->message : "ok");
    ckpt_hook_free(&hook);

    err = err ? err : ckpt_saver_options_init(&so, CKPT_SAVER_OPTIONS_VERSION);
    printf("saver defaults: max_to_keep=%d (5), busy_policy=%d (SKIP), "
           "log_level=%d (INFO), direct_io=%d (timed: O_DIRECT unless the page "
           "cache is clearly faster)\n",
           so.max_to_keep, so.busy_policy, so.log_level, so.direct_io);
    return err != 0;
}
