/* tests/install/consumer/main.c - a program built out of tree against an
 * installed ckpt (through find_package(ckpt) and through pkg-config). It
 * checks that the installed headers match the installed library and that
 * a few calls work, and prints what it saw for run_install_test.sh. */
#include <ckpt.h>

#include <stdio.h>
#include <string.h>

static int fail(const char *what, const char *got)
{
    fprintf(stderr, "consumer: %s (got \"%s\")\n", what, got ? got : "NULL");
    return 1;
}

int main(void)
{
    const char *version = ckpt_version_string();
    const char *corrupt = ckpt_strerror(CKPT_ECORRUPT);
    const char *unknown = ckpt_strerror(12345);
    const char *dtype = ckpt_dtype_name(CKPT_DT_FLOAT);

    if (!version || strcmp(version, CKPT_VERSION_STRING) != 0)
        return fail("library version differs from the header's", version);
    if (ckpt_version_number() != CKPT_VERSION_NUMBER)
        return fail("library version number differs from the header's",
                    version);
    if (!corrupt || !*corrupt || !unknown || strcmp(corrupt, unknown) == 0)
        return fail("ckpt_strerror(CKPT_ECORRUPT) is not specific", corrupt);
    if (!dtype || strcmp(dtype, "float32") != 0)
        return fail("ckpt_dtype_name(1) is not float32", dtype);

    printf("version=%s\n", version);
    printf("dtype1=%s\n", dtype);
    printf("strerror=%s\n", corrupt);
    return 0;
}
