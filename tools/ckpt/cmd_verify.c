/* tools/ckpt/cmd_verify.c - `ckpt verify PATH [--json]`: read every tensor
 * of a checkpoint, check every checksum, and report each damaged tensor.
 * Exit 1 when anything is damaged (a bad index, a bad record, a missing or
 * short data file). Every record is checked in one pass per data file
 * (ckpt_bundle_reader_verify); tensors are checked one by one only to name
 * what that pass found damaged. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

static int run(int argc, char **argv);

static const cli_option verify_options[] = {
    {"--json", NULL, NULL, 0,
     "  --json   print JSON: {\"prefix\", \"outside_directory\",\n"
     "           \"num_shards\", \"tensors\", \"bytes\", \"ok\",\n"
     "           \"damaged\": [{\"name\", \"error\"}],\n"
     "           \"not_checked\": [{\"name\", \"reason\"}]}; when the\n"
     "           check cannot run: {\"command\", \"ok\": false, \"error\",\n"
     "           \"prefix\"?, \"named_checkpoint\"?, \"older\"?,\n"
     "           \"outside_directory\"?}. \"bytes\", as the text's \"bytes\n"
     "           checked\": the records read and found intact (a\n"
     "           partitioned tensor's are its pieces'; variant records,\n"
     "           whose checksums are not decoded, count none). The\n"
     "           lists are kept as their text until the end (memory of\n"
     "           the size of the document).\n",
     NULL},
};

const cli_command cli_cmd_verify = {
    "verify",
    "PATH",
    verify_options,
    CLI_NUM_OPTIONS(verify_options),
    "Read every tensor and check every checksum; report damaged tensors.",
    "PATH is a checkpoint prefix, its .index file, or a directory: the\n"
    "checkpoint its state file names (model_checkpoint_path; when that has\n"
    "no index, it is reported missing even if an older one is intact), or\n"
    "its only checkpoint when it has no state file. A state file may name\n"
    "a checkpoint outside the directory (an absolute path, \"..\"):\n"
    "TensorFlow reads it there and so does verify, after a warning on\n"
    "stderr naming it (\"outside_directory\": true with --json); the exit\n"
    "status is that of the check. The index is checked\n"
    "when it is opened; then every record is read from its data file and\n"
    "its CRC32C compared (strings: their length checksum too). Each damaged\n"
    "tensor is named on stderr, except those of a data file that cannot\n"
    "be opened (missing, unreadable, not a regular file): that file is\n"
    "named once, with its error and how many tensors it holds (--json\n"
    "still lists each); past the first 100 damaged pieces of partitioned\n"
    "tensors, only how many more there are. Records whose checksum this\n"
    "tool cannot compute (DT_VARIANT) are read but reported \"not\n"
    "checked\".\n"
    "Every byte is read once when nothing is damaged: each data file's\n"
    "fixed-size records (partitioned tensors' pieces among them) in one\n"
    "pass, front to back, the way a restore reads them, then the string\n"
    "records (string pieces among them); every partitioned tensor's\n"
    "coverage, a string one's too, comes from the index. When that finds\n"
    "any damage, every tensor is checked again on its own to name each\n"
    "damaged one.\n"
    "Records are read in pieces (256 KiB; requests of up to 32 MiB when a\n"
    "data file is not in the page cache and its device reads ahead less\n"
    "than 4 MiB) and partitioned tensors piece by piece: memory stays\n"
    "bounded whatever a tensor's size (string records are read whole;\n"
    "their data file bounds them).\n\n",
    "\n"
    "Exit status 0 when every tensor checks (those \"not checked\" included),\n"
    "1 when anything is damaged or missing (the state file, the index, a\n"
    "data file or record, the checkpoint a directory's state file names,\n"
    "or its index or a data file unreadable: not a regular file, a read\n"
    "error, permission denied),\n"
    "2 on a usage error, a PATH that cannot be read (a prefix with no\n"
    "index), or memory or file descriptors this machine lacks (the tensors\n"
    "concerned listed as not checked; with --json \"ok\" is false, as for\n"
    "every exit status but 0).\n",
    run};

/* Why the checksum of a tensor's record, or of its pieces' records, that
 * read back cleanly was not compared, or NULL when it was. A piece is said
 * with its tensor, not on its own. */
static const char *unchecked_reason(const ckpt_tensor_entry *e)
{
    if (e->dtype != CKPT_DT_VARIANT || e->is_slice_key)
        return NULL;
    if (e->num_slices > 0)
        return "its pieces are variant records, whose per-element checksums "
               "this tool does not decode";
    return "variant records carry per-element checksums this tool does not "
           "decode";
}

/* The bytes of `e`'s own record read and found intact: none for a
 * partitioned tensor's entry, whose data are its pieces, entries of their
 * own counted as they pass (so a string tensor's pieces count too, whose
 * records have no size the shape gives), nor for a variant record, whose
 * checksums are not decoded. */
static int64_t record_bytes_checked(const ckpt_tensor_entry *e)
{
    if (e->num_slices > 0 || e->dtype == CKPT_DT_VARIANT)
        return 0;
    return e->size;
}

/* Why the data file `shard` of `prefix` cannot be opened (malloc'd), or
 * NULL when it opens. Also NULL when the open runs out of descriptors or
 * memory (CKPT_ENOMEM): that says nothing of the file (the reader may hold
 * every descriptor ulimit -n leaves), and its tensors are checked one by
 * one through the reader, which closes the files it holds to open one. */
static char *open_failure(const char *prefix, int shard, int num_shards)
{
    const ckpt_fs *fs = ckpt_fs_posix();
    ckpt_buf path = CKPT_BUF_INIT;
    ckpt_file *f = NULL;
    char *why = NULL;
    if (ckpt_bundle_data_path(&path, prefix, shard, num_shards) == 0) {
        int err = fs->open_read(&f, path.ptr, fs->payload);
        if (err == 0)
            (void)fs->close(f, fs->payload);
        else if (err != CKPT_ENOMEM)
            why = cli_xstrdup(ckpt_error_last()->message);
    }
    ckpt_buf_dispose(&path);
    return why;
}

/* Where an entry's record lies, and what the walk in data-file order needs
 * to know of it without the entry: 24 bytes an entry (the entry itself is
 * filled again when it is checked, so the tool keeps no entry per entry). */
typedef struct placed {
    int64_t offset;
    size_t index; /* in key order */
    int shard_id;
    unsigned char record;    /* num_slices == 0: it has a record */
    unsigned char slice_key; /* is_slice_key */
} placed;

/* Data files that cannot be opened fail every tensor in them alike, so
 * each is said once, with its error and how many listed tensors it holds,
 * not once per tensor. After the one pass found damage: try each data
 * file that holds a record (`order` is sorted by shard; only the shards
 * the entries name, whatever the index says their number is), say those
 * that cannot be opened, and return per entry of `order` whether its
 * record lies in one of them (its own error is then not printed). */
static unsigned char *said_unopened(ckpt_bundle_reader *r, const char *prefix,
                                    const placed *order, size_t n)
{
    int num_shards = ckpt_bundle_reader_num_shards(r);
    unsigned char *quiet = cli_xcalloc(n ? n : 1, 1);
    for (size_t i = 0, j; i < n; i = j) {
        int shard = order[i].shard_id;
        size_t records = 0, pieces = 0;
        char *why;
        for (j = i; j < n && order[j].shard_id == shard; j++) {
            records += order[j].record;
            pieces += order[j].record && order[j].slice_key;
        }
        if (records == 0 || shard < 0 || shard >= num_shards)
            continue;
        why = open_failure(prefix, shard, num_shards);
        if (!why)
            continue;
        if (pieces == 0)
            cli_error("verify",
                      "%s (it holds %zu tensor%s; --json names each damaged "
                      "one)",
                      why, records, records == 1 ? "" : "s");
        else
            cli_error("verify",
                      "%s (it holds %zu record%s, %zu of them pieces of "
                      "partitioned tensors; --json names each damaged one)",
                      why, records, records == 1 ? "" : "s", pieces);
        free(why);
        for (size_t k = i; k < j; k++)
            quiet[k] = order[k].record;
    }
    return quiet;
}

/* The damage found, said once the check is done: a piece of a partitioned
 * tensor whose message the tensor's own already ends with (the tensor's
 * check reads its pieces) is not said again. Above DEDUP_MAX findings
 * every one is said (the comparison is quadratic). Past PIECE_LINES_MAX
 * damaged pieces only their number is said (a tensor of 10^5 pieces, all
 * damaged, printed 10^5 lines); --json lists each. */
#define DEDUP_MAX 4096
#define PIECE_LINES_MAX 100

typedef struct finding {
    size_t index; /* the entry's, in key order */
    int slice_key;
    int code;
    char *msg;
} finding;

static int said_by_another(const finding *f, size_t n, size_t k)
{
    size_t len = strlen(f[k].msg);
    if (!f[k].slice_key || n > DEDUP_MAX)
        return 0;
    for (size_t j = 0; j < n; j++) {
        size_t jl = strlen(f[j].msg);
        if (j != k && !f[j].slice_key && jl > len + 2 &&
            strcmp(f[j].msg + jl - len, f[k].msg) == 0 &&
            f[j].msg[jl - len - 2] == ':')
            return 1;
    }
    return 0;
}

static void say_findings(const ckpt_bundle_reader *r, const char *prefix,
                         finding *f, size_t n)
{
    size_t piece_lines = 0, pieces_unsaid = 0;
    for (size_t k = 0; k < n; k++) {
        ckpt_tensor_entry buf;
        if (said_by_another(f, n, k))
            continue;
        if (f[k].slice_key && piece_lines == PIECE_LINES_MAX) {
            pieces_unsaid++;
            continue;
        }
        piece_lines += f[k].slice_key != 0;
        ckpt_error_set(f[k].code, "%s", f[k].msg);
        cli_tensor_error("verify", prefix, cli_entry(r, f[k].index, &buf));
    }
    if (pieces_unsaid > 0)
        cli_error("verify",
                  "%s: %zu more damaged piece%s of partitioned tensors, not "
                  "named here (the first %d are; --json names each)",
                  prefix, pieces_unsaid, pieces_unsaid == 1 ? "" : "s",
                  PIECE_LINES_MAX);
    for (size_t k = 0; k < n; k++)
        free(f[k].msg);
    free(f);
}

/* An entry's name for --json: a piece of a partitioned tensor (whose key
 * is binary) as "<name> (piece <spec>)", as messages show it. */
static json_object *json_entry_name(const ckpt_tensor_entry *e)
{
    char shown[1024];
    if (!e->is_slice_key)
        return cli_json_name(e);
    return cli_json_string(
        ckpt_tensor_entry_shown_name(shown, sizeof(shown), e));
}

/* Entries in data-file order (shard, then offset, then key order), so
 * that the checks read each file front to back and its read-ahead keeps
 * up; damaged tensors are reported in that order. */
static int by_file_position(const void *a, const void *b)
{
    const placed *x = a, *y = b;
    if (x->shard_id != y->shard_id)
        return x->shard_id < y->shard_id ? -1 : 1;
    if (x->offset != y->offset)
        return x->offset < y->offset ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Every entry of `r` placed, in data-file order (malloc'd, n of them). */
static placed *in_file_order(const ckpt_bundle_reader *r, size_t n)
{
    placed *order = cli_xmalloc((n ? n : 1) * sizeof(*order));
    for (size_t i = 0; i < n; i++) {
        ckpt_tensor_entry buf;
        const ckpt_tensor_entry *e = cli_entry(r, i, &buf);
        order[i].offset = e->offset;
        order[i].index = i;
        order[i].shard_id = e->shard_id;
        order[i].record = e->num_slices == 0;
        order[i].slice_key = e->is_slice_key != 0;
    }
    qsort(order, n, sizeof(*order), by_file_position);
    return order;
}

/* Open the checkpoint PATH names. The one a state file names must be
 * there: a missing or unreadable index is damage (exit 1), and the newest
 * older listed checkpoint with an index, if any, is mentioned. *outside:
 * whether it lies outside the directory PATH (warned about, then read). */
static int open_checkpoint(ckpt_bundle_reader **r, char **prefix, int *outside,
                           const char *path)
{
    ckpt_buf older = CKPT_BUF_INIT;
    int named = 0, rc, err;
    rc = cli_resolve_named_prefix(prefix, &named, outside, "verify", path);
    if (rc != 0)
        return rc;
    if (!named) {
        free(*prefix);
        *prefix = NULL;
        return cli_open_bundle(r, prefix, "verify", path);
    }
    err = ckpt_bundle_reader_open(r, *prefix, NULL);
    if (err == 0)
        return 0;
    rc = cli_lib_error("verify", err, *prefix);
    cli_json_failure_detail("prefix", cli_json_string(*prefix));
    /* an index that cannot be read (a read error, permission denied) or is
     * not a regular file (damaged) is damage to the checkpoint named, as a
     * data file's is */
    if (err == CKPT_ENOTFOUND || err == CKPT_ECORRUPT || err == CKPT_EIO ||
        err == CKPT_EACCES) {
        const char *what = err == CKPT_ENOTFOUND  ? "missing"
                           : err == CKPT_ECORRUPT ? "damaged"
                                                  : "unreadable";
        cli_error("verify",
                  "%s: the checkpoint its state file names (%s) is %s", path,
                  *prefix, what);
        cli_json_failure_detail("named_checkpoint",
                                json_object_new_string(what));
        if (ckpt_latest_checkpoint(&older, NULL, path) == 0 &&
            strcmp(older.ptr, *prefix) != 0) {
            cli_error("verify",
                      "note: an older listed checkpoint has its index: %s "
                      "(ckpt verify %s checks it)",
                      older.ptr, older.ptr);
            cli_json_failure_detail("older", cli_json_string(older.ptr));
        }
        rc = CLI_FOUND;
    }
    ckpt_buf_dispose(&older);
    *r = NULL;
    free(*prefix);
    *prefix = NULL;
    return rc;
}

static int run(int argc, char **argv)
{
    const cli_command *c = &cli_cmd_verify;
    const char *path = NULL;
    ckpt_bundle_reader *r = NULL;
    placed *order = NULL;
    unsigned char *quiet = NULL; /* per entry: its error is said already */
    finding *found = NULL;       /* the damage to say, once checked */
    size_t num_found = 0;
    char *prefix = NULL;
    cli_json_list damaged = {0, NULL, 0}, unchecked = damaged;
    size_t n, num_damaged = 0, num_tensors = 0, num_unchecked = 0;
    size_t num_stray = 0; /* damaged entries of no listed tensor */
    int any_damage = 0;
    int64_t bytes = 0;
    int json = 0, rc = 0, pass_ok, outside = 0;
    rc = cli_parse_path_and_json(c, "PATH", argc, argv, &path, &json);
    if (rc != 0)
        return rc;
    rc = open_checkpoint(&r, &prefix, &outside, path);
    if (rc != 0)
        return rc;
    if (json) { /* kept as their text: see cli_json_list.c */
        cli_json_list_open(&damaged, 2);
        cli_json_list_open(&unchecked, 2);
    }
    n = ckpt_bundle_reader_count(r);
    order = in_file_order(r, n);
    /* One stream per data file (a restore's reads: one choice between the
     * page cache and O_DIRECT, one read-ahead ramp); only when it finds
     * something is every tensor checked alone, to name each damaged one. */
    pass_ok = ckpt_bundle_reader_verify(r) == 0;
    if (!pass_ok)
        quiet = said_unopened(r, prefix, order, n);
    for (size_t i = 0; i < n; i++) {
        ckpt_tensor_entry buf;
        const ckpt_tensor_entry *e = cli_entry(r, order[i].index, &buf);
        /* each entry the way that checks the most, in memory bounded by
         * the files: records streamed with their CRCs, strings with their
         * length checksum, partitioned tensors of any dtype piece by piece
         * (their pieces must cover them) */
        int err = pass_ok ? 0 : ckpt_bundle_reader_check(r, e);
        /* out of memory or file descriptors: this machine's limit, not a
         * finding about the checkpoint (exit 2, the tensor not checked);
         * a data file missing, unreadable (permission denied included) or
         * not a regular file is damage, as for inspect --values */
        int not_finding = err < 0 && err != CKPT_ECORRUPT &&
                          err != CKPT_ENOTFOUND && err != CKPT_EIO &&
                          err != CKPT_EINVAL && err != CKPT_EACCES;
        const char *why =
            not_finding ? ckpt_error_last()->message : unchecked_reason(e);
        num_tensors += cli_entry_listed(e) != 0;
        if ((err == 0 || not_finding) && why) {
            num_unchecked++;
            if (not_finding)
                rc = CLI_USAGE;
            if (json) {
                json_object *u = json_object_new_object();
                json_object_object_add(u, "name", json_entry_name(e));
                json_object_object_add(u, "reason", cli_json_string(why));
                cli_json_list_add(&unchecked, u);
            } else {
                /* printed as it goes: an escaped copy of each name
                 * (cli_safe_name) would be kept until exit */
                cli_put_safe_n(stdout, e->name, e->name_len);
                fputs(": not checked (", stdout);
                cli_put_safe_n(stdout, why, strlen(why));
                fputs(")\n", stdout);
            }
            continue;
        }
        if (err == 0) {
            bytes += record_bytes_checked(e);
            continue;
        }
        /* the summary counts tensors; a damaged piece of a partitioned
         * one damages that tensor too, which is checked as well */
        num_damaged += cli_entry_listed(e);
        num_stray += !cli_entry_listed(e);
        any_damage = 1;
        if (!quiet[i]) {
            if (num_found % 64 == 0)
                found = cli_xrealloc(found, (num_found + 64) * sizeof(*found));
            found[num_found].index = order[i].index;
            found[num_found].slice_key = e->is_slice_key != 0;
            found[num_found].code = err;
            found[num_found++].msg = cli_xstrdup(ckpt_error_last()->message);
        }
        if (json) {
            json_object *d = json_object_new_object();
            json_object_object_add(d, "name", json_entry_name(e));
            json_object_object_add(d, "error",
                                   cli_json_string(ckpt_error_last()->message));
            cli_json_list_add(&damaged, d);
        }
    }
    say_findings(r, prefix, found, num_found);
    if (rc == 0 && any_damage)
        rc = CLI_FOUND;
    if (json) {
        cli_json_printed();
        cli_put_member("{\n", "prefix", cli_json_string(prefix));
        cli_put_member(",\n", "outside_directory",
                       json_object_new_boolean(outside));
        cli_put_member(",\n", "num_shards",
                       json_object_new_int(ckpt_bundle_reader_num_shards(r)));
        cli_put_member(",\n", "tensors",
                       json_object_new_int64((int64_t)num_tensors));
        cli_put_member(",\n", "bytes", json_object_new_int64(bytes));
        /* "ok": the exit status is 0 (a tensor this machine could not
         * check, exit 2, leaves it false without damage) */
        cli_put_member(",\n", "ok", json_object_new_boolean(rc == 0));
        fputs(",\n  \"damaged\": ", stdout);
        cli_json_list_put(&damaged);
        fputs(",\n  \"not_checked\": ", stdout);
        cli_json_list_put(&unchecked);
        fputs("\n}\n", stdout);
    } else if (!any_damage && num_unchecked == 0) {
        printf("%s: OK, %zu tensor%s, %lld byte%s checked\n", cli_safe(prefix),
               num_tensors, cli_plural(num_tensors), (long long)bytes,
               cli_plural((size_t)bytes));
    } else if (!any_damage && rc != 0) {
        printf("%s: NOT VERIFIED: no damage found in %zu of %zu tensor%s "
               "(%lld byte%s checked); %zu not checked, some of them for "
               "want of memory or file descriptors here\n",
               cli_safe(prefix), num_tensors - num_unchecked, num_tensors,
               cli_plural(num_tensors), (long long)bytes,
               cli_plural((size_t)bytes), num_unchecked);
    } else if (!any_damage) {
        printf("%s: no damage found in %zu of %zu tensor%s (%lld byte%s "
               "checked); %zu not checked\n",
               cli_safe(prefix), num_tensors - num_unchecked, num_tensors,
               cli_plural(num_tensors), (long long)bytes,
               cli_plural((size_t)bytes), num_unchecked);
    } else if (num_damaged > 0) {
        printf("%s: DAMAGED, %zu of %zu tensor%s\n", cli_safe(prefix),
               num_damaged, num_tensors, cli_plural(num_tensors));
    } else { /* only slice entries whose tensor has no entry, or stray keys */
        printf("%s: DAMAGED, 0 of %zu tensor%s; %zu index %s of no "
               "tensor\n",
               cli_safe(prefix), num_tensors, cli_plural(num_tensors),
               num_stray, num_stray == 1 ? "entry" : "entries");
    }
    cli_json_list_dispose(&damaged);
    cli_json_list_dispose(&unchecked);
    ckpt_bundle_reader_free(r);
    free(quiet);
    free(order);
    free(prefix);
    return rc;
}
