/* fuzz/entry.c - libFuzzer's entry point for one target: compiled into each
 * fuzz_<target> binary with CKPT_FUZZ_TARGET naming the target function
 * (ckpt_fuzz_table, ckpt_fuzz_bundle, ...). */
#include "fuzz.h"

#ifndef CKPT_FUZZ_TARGET
#error "define CKPT_FUZZ_TARGET to the target function"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return CKPT_FUZZ_TARGET(data, size);
}
