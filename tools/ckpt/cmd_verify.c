/* tools/ckpt/cmd_verify.c - `ckpt verify PATH [--json]`: read every tensor
 * of a checkpoint, check every checksum, and report each damaged tensor.
 * Exit 1 when anything is damaged (a bad index, a bad record, a missing or
 * short data file). */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

static int run(int argc, char **argv);

const cli_command cli_cmd_verify = {
    "verify", "verify PATH [--json]",
    "Read every tensor and check every checksum; report damaged tensors.",
    "PATH is a checkpoint prefix, its .index file, or a directory (its\n"
    "latest checkpoint). The index is checked when it is opened; then every\n"
    "record is read from its data file and its CRC32C compared (strings:\n"
    "their length checksum too). Each damaged tensor is named on stderr.\n"
    "Records are read in pieces of 1 MiB and partitioned tensors piece by\n"
    "piece: memory stays bounded whatever a tensor's size (string records\n"
    "are read whole; their data file bounds them).\n\n"
    "  --json   print JSON: {\"prefix\", \"num_shards\", \"tensors\", "
    "\"bytes\",\n"
    "           \"ok\", \"damaged\": [{\"name\", \"error\"}]}\n\n"
    "Exit status 1 when anything is damaged.\n",
    run};

/* Check one entry the way that checks the most, in memory bounded by the
 * files (ckpt_bundle_reader_check): records streamed with their CRCs,
 * strings with their length checksum, partitioned tensors piece by piece
 * (their pieces must cover them). */
static int check_entry(ckpt_bundle_reader *r, const ckpt_tensor_entry *e)
{
    if (e->num_slices > 0 &&
        (e->dtype == CKPT_DT_STRING || !ckpt_dtype_is_supported(e->dtype)))
        return 0; /* cannot be assembled; its slice entries are checked */
    return ckpt_bundle_reader_check(r, e);
}

static int run(int argc, char **argv)
{
    const cli_command *c = &cli_cmd_verify;
    const char *path = NULL;
    ckpt_bundle_reader *r = NULL;
    char *prefix = NULL;
    json_object *root = NULL, *damaged = NULL;
    size_t n, num_damaged = 0, num_tensors = 0;
    int64_t bytes = 0;
    int json = 0, rc = 0;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0)
            json = 1;
        else if (strcmp(argv[i], "--") == 0 && i + 1 < argc && !path)
            path = argv[++i];
        else if (argv[i][0] == '-' && argv[i][1] != '\0')
            return cli_usage_error(c, "unknown option '%s'", argv[i]);
        else if (path)
            return cli_usage_error(c, "unexpected argument '%s'", argv[i]);
        else
            path = argv[i];
    }
    if (!path)
        return cli_usage_error(c, "missing PATH");
    rc = cli_open_bundle(&r, &prefix, "verify", path);
    if (rc != 0)
        return rc;
    if (json)
        damaged = json_object_new_array();
    n = ckpt_bundle_reader_count(r);
    for (size_t i = 0; i < n; i++) {
        const ckpt_tensor_entry *e = ckpt_bundle_reader_entry(r, i);
        int err = check_entry(r, e);
        num_tensors += cli_entry_listed(e) != 0;
        if (err == 0) {
            bytes += cli_entry_listed(e) ? cli_entry_bytes(e) : 0;
            continue;
        }
        num_damaged++;
        cli_tensor_error("verify", prefix, e->name);
        if (json) {
            json_object *d = json_object_new_object();
            json_object_object_add(d, "name", json_object_new_string(e->name));
            json_object_object_add(
                d, "error", json_object_new_string(ckpt_error_last()->message));
            json_object_array_add(damaged, d);
        }
        if (err != CKPT_ECORRUPT && err != CKPT_ENOTFOUND && err != CKPT_EIO &&
            err != CKPT_EINVAL)
            rc = CLI_USAGE; /* e.g. out of memory: not a finding */
    }
    if (rc == 0 && num_damaged > 0)
        rc = CLI_FOUND;
    if (json) {
        root = json_object_new_object();
        json_object_object_add(root, "prefix", json_object_new_string(prefix));
        json_object_object_add(
            root, "num_shards",
            json_object_new_int(ckpt_bundle_reader_num_shards(r)));
        json_object_object_add(root, "tensors",
                               json_object_new_int64((int64_t)num_tensors));
        json_object_object_add(root, "bytes", json_object_new_int64(bytes));
        json_object_object_add(root, "ok",
                               json_object_new_boolean(num_damaged == 0));
        json_object_object_add(root, "damaged", damaged);
        cli_print_json(root);
        json_object_put(root);
    } else if (num_damaged == 0) {
        printf("%s: OK, %zu tensors, %lld bytes checked\n", prefix, num_tensors,
               (long long)bytes);
    } else {
        printf("%s: DAMAGED, %zu of %zu tensors\n", prefix, num_damaged,
               num_tensors);
    }
    ckpt_bundle_reader_free(r);
    free(prefix);
    return rc;
}
