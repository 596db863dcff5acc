/* tools/ckpt/cmd_repack.c - `ckpt repack SRC DST [--exclude REGEX]...
 * [--include REGEX]... [--json]`: copy a checkpoint's records (CRC-checked;
 * values and strings unchanged, a big-endian checkpoint's rewritten in
 * little-endian order) into a new bundle written by our writer: one data
 * shard, an uncompressed index. A record is held in memory once, as
 * stored (a string record too, unless its length words must be rewritten
 * in the other byte order). Used to drop tensors
 * (optimizer slots, say) or to merge shards. */
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int run(int argc, char **argv);

static const cli_option repack_options[] = {
    {"--include", "REGEX", NULL, 1,
     "  --include REGEX  keep only tensors whose name matches (POSIX extended\n"
     "                   regex; may be repeated: any match keeps). A\n"
     "                   REGEX matches the name as ckpt prints it: a byte\n"
     "                   that is not printable text as \\xHH, so a 0 byte\n"
     "                   is \\x00 ('^a\\\\x00x$' is the name a, 0, x)\n",
     "a POSIX extended regex, e.g. --include '^model/'"},
    {"--exclude", "REGEX", NULL, 1,
     "  --exclude REGEX  drop tensors whose name matches (may be repeated),\n"
     "                   e.g. --exclude '\\.OPTIMIZER_SLOT'\n"
     "                   A REGEX with a back-reference (\\1..\\9: matching\n"
     "                   can take exponential time), bounded repetitions\n"
     "                   ({m,n}) expanding to more than 65536 positions, or\n"
     "                   repetitions too costly to compile or to match\n"
     "                   (x{0,600}, (a?){600}) is a usage error.\n",
     "a POSIX extended regex, e.g. --exclude '\\.OPTIMIZER_SLOT'"},
    {"--json", NULL, NULL, 0,
     "  --json           print JSON: {\"source\", \"outside_directory\",\n"
     "                   \"destination\", \"ok\",\n"
     "                   \"tensors\" (copied), \"tensors_total\", \"bytes\"\n"
     "                   (written: the size of DST's data file),\n"
     "                   \"num_shards\"}\n",
     NULL},
};

const cli_command cli_cmd_repack = {
    "repack",
    "SRC DST",
    repack_options,
    CLI_NUM_OPTIONS(repack_options),
    "Rewrite a checkpoint with one data shard, optionally dropping tensors.",
    "SRC is a checkpoint prefix, its .index file, or a directory (its latest\n"
    "checkpoint; one its state file names outside the directory is read\n"
    "after a warning on stderr; when the one it names has no index, the\n"
    "newest listed one that has, after a warning naming both); DST is the\n"
    "prefix to write (its directory\n"
    "must exist and DST.index must not; a DST ending in .index or .data-*,\n"
    "a file's name rather than a prefix, is a usage error). Every record\n"
    "is read with its checksum checked and copied byte for byte (from a\n"
    "checkpoint written on a big-endian machine, values and string lengths\n"
    "in little-endian order, as the copy's header says).\n\n",
    "\n"
    "The summary's bytes are those written (DST's data file): a string\n"
    "record of a big-endian source is written again, an empty one with its\n"
    "length checksum. A record is held in memory once, as stored (a\n"
    "big-endian source's string record decoded: 16 bytes more a string).\n"
    "Temporary files an interrupted repack to the same DST left\n"
    "(DST.index.tempstate*, DST.data-*.tempstate*) are removed first.\n"
    "The files are fsynced and renamed into place (the index last), each\n"
    "rename made durable by a directory fsync, and DST's directory's own\n"
    "entry is synced in its parent (\"..\" when DST is in the current\n"
    "directory) before anything is written (it may just have been\n"
    "created): once repack exits 0 a power cut keeps DST.\n"
    "Exit status 0 when DST is written, 1 when the source is damaged (its\n"
    "index, a record, a data file missing, unreadable or not a regular\n"
    "file, or the state file of an SRC directory: nothing is written), 2 on a "
    "usage error, an SRC that cannot be read, an existing\n"
    "DST.index, a DST that cannot be written, or a kept tensor it cannot\n"
    "copy (nothing is written): a partitioned one, or one whose name holds\n"
    "a 0 byte (the copy would store it under the name's part before that\n"
    "byte); the message gives the --exclude that leaves out that tensor\n"
    "alone. Patterns that keep no tensor write a DST without tensors, with\n"
    "a warning on stderr.\n",
    run};

typedef struct pattern_list {
    regex_t *re;
    int n;
} pattern_list;

/* Compile the value `expr` of option `opt` into `l`: 0, or the usage
 * error naming the option. */
static int add_pattern(pattern_list *l, const cli_option *opt, const char *expr)
{
    const cli_command *c = &cli_cmd_repack;
    char msg[256];
    int err;
    if (cli_pattern_check(expr, msg, sizeof(msg)) < 0)
        return cli_option_value_error(c, opt, expr, msg);
    err = regcomp(&l->re[l->n], expr, REG_EXTENDED | REG_NOSUB);
    if (err != 0) {
        regerror(err, &l->re[l->n], msg, sizeof(msg));
        return cli_option_value_error(c, opt, expr, msg);
    }
    l->n++;
    return 0;
}

static int matches_any(const pattern_list *l, const char *text)
{
    for (int i = 0; i < l->n; i++)
        if (regexec(&l->re[i], text, 0, NULL, 0) == 0)
            return 1;
    return 0;
}

/* The `n` bytes of a name as the tool prints it (malloc'd): printable
 * text as is, any other byte as \xHH (ckpt_text_printable_n), so a 0
 * byte is "\x00". The patterns match this text: a regex cannot hold a 0
 * byte, and as a C string the name would end at the first one ("a" and
 * "a\0x" would both match '^a$'). */
static char *name_text(const void *bytes, size_t n)
{
    char *text = cli_xmalloc(4 * n + 1);
    ckpt_text_printable_n(text, 4 * n + 1, bytes, n);
    return text;
}

/* "--exclude '^NAME$'" (malloc'd), NAME the name's text (name_text) with
 * each regex operator escaped, the whole quoted for a POSIX shell: the
 * option that leaves out exactly the tensor of that printed name. */
static char *exclude_advice(const void *bytes, size_t n)
{
    static const char head[] = "--exclude '^", tail[] = "$'";
    char *text = name_text(bytes, n);
    /* per byte at most 4: '\'' for a quote, "\" and the byte else */
    char *out = cli_xmalloc(sizeof(head) + 4 * strlen(text) + sizeof(tail));
    size_t k = sizeof(head) - 1;
    memcpy(out, head, k);
    for (const char *p = text; *p; p++) {
        if (*p == '\'') {
            memcpy(out + k, "'\\''", 4);
            k += 4;
            continue;
        }
        if (strchr("\\.[]()*+?{}|^$", *p))
            out[k++] = '\\';
        out[k++] = *p;
    }
    memcpy(out + k, tail, sizeof(tail));
    free(text);
    return out;
}

static void free_patterns(pattern_list *l)
{
    for (int i = 0; i < l->n; i++)
        regfree(&l->re[i]);
    free(l->re);
}

typedef struct repack_opts {
    const char *src, *dst;
    pattern_list include, exclude;
    int json;
} repack_opts;

static int parse_args(int argc, char **argv, repack_opts *o)
{
    const cli_command *c = &cli_cmd_repack;
    o->include.re = calloc((size_t)argc + 1, sizeof(regex_t));
    o->exclude.re = calloc((size_t)argc + 1, sizeof(regex_t));
    if (!o->include.re || !o->exclude.re)
        return cli_usage_error(c, "out of memory");
    int operands_only = 0;
    for (int i = 0; i < argc; i++) {
        const cli_option *opt;
        const char *v;
        int kind = cli_arg_kind(argv[i], &operands_only);
        int m, err;
        if (kind == CLI_ARG_END)
            continue;
        if (kind == CLI_ARG_OPTION) {
            const char *a = argv[i];
            m = cli_option_at(c, argc, argv, &i, &opt, &v);
            if (m <= 0)
                return cli_option_error(c, a, opt);
            if (strcmp(opt->name, "--json") == 0) {
                o->json = 1;
                continue;
            }
            err = add_pattern(strcmp(opt->name, "--include") == 0 ? &o->include
                                                                  : &o->exclude,
                              opt, v);
            if (err)
                return err;
            continue;
        }
        if (!o->src)
            o->src = argv[i];
        else if (!o->dst)
            o->dst = argv[i];
        else
            return cli_usage_error(c, "unexpected argument '%s'", argv[i]);
    }
    if (!o->src || !o->dst)
        return cli_usage_error(c, "missing %s", o->src ? "DST" : "SRC");
    cli_json_parsed(c, o->json);
    return 0;
}

/* Whether the tensor named by the `n` bytes at `name` is kept: its text
 * (name_text) matches an --include, when there are any, and no
 * --exclude. */
static int keep(const repack_opts *o, const void *name, size_t n)
{
    char *text = name_text(name, n);
    int kept = (o->include.n == 0 || matches_any(&o->include, text)) &&
               !matches_any(&o->exclude, text);
    free(text);
    return kept;
}

/* The name of the tensor a slice entry is a piece of, decoded from its key
 * into a malloc'd string (*len its length): TensorFlow's slice keys are
 * 00, the name with 00 written 00 FF and FF written FF 00, then 00 01 and
 * the extents. NULL when the key is not one. */
static char *slice_owner(const ckpt_tensor_entry *e, size_t *len)
{
    const unsigned char *k = (const unsigned char *)e->name;
    char *name;
    size_t n = 0;
    *len = 0;
    if (e->name_len < 3 || k[0] != 0)
        return NULL;
    name = malloc(e->name_len);
    if (!name)
        return NULL;
    for (size_t i = 1; i + 1 < e->name_len; i++) {
        if (k[i] != 0 && k[i] != 0xff) {
            name[n++] = (char)k[i];
            continue;
        }
        if (k[i] == 0 && k[i + 1] == 0x01) {
            name[n] = '\0';
            *len = n;
            return name;
        }
        if ((k[i] == 0 && k[i + 1] != 0xff) || (k[i] == 0xff && k[i + 1] != 0))
            break;
        name[n++] = (char)k[i];
        i++;
    }
    free(name);
    return NULL;
}

/* Whether entry `e` is kept: a slice entry goes with its tensor. */
static int keep_entry(const repack_opts *o, const ckpt_tensor_entry *e)
{
    size_t len;
    char *owner;
    int kept;
    if (!e->is_slice_key)
        return keep(o, e->name, e->name_len);
    owner = slice_owner(e, &len);
    kept = keep(o, owner ? owner : "", len);
    free(owner);
    return kept;
}

/* Whether `name` is a temporary file of a write to the prefix whose last
 * component is `base`: "<base>.index.tempstate<hex>" or
 * "<base>.data-<digits>-of-<digits>.tempstate<hex>". */
static int is_temp_of(const char *name, const char *base)
{
    size_t n = strlen(base);
    const char *p = name + n, *t;
    if (strncmp(name, base, n) != 0)
        return 0;
    if (strncmp(p, ".index", 6) == 0) {
        p += 6;
    } else if (strncmp(p, ".data-", 6) == 0) {
        p += 6 + strspn(p + 6, "0123456789");
        if (strncmp(p, "-of-", 4) != 0)
            return 0;
        p += 4 + strspn(p + 4, "0123456789");
    } else {
        return 0;
    }
    if (strncmp(p, ".tempstate", 10) != 0)
        return 0;
    t = p + 10;
    return *t && t[strspn(t, "0123456789abcdef")] == '\0';
}

/* The directory DST's files go in (malloc'd): "." for a DST without a
 * '/', "/" for "/x", else what comes before DST's last '/'. */
static char *destination_dir(const char *dst)
{
    const char *slash = strrchr(dst, '/');
    size_t dlen = slash ? (size_t)(slash - dst) : 0;
    char *dir = cli_xmalloc(dlen + 2);
    if (slash)
        snprintf(dir, dlen + 2, "%.*s", (int)(dlen ? dlen : 1), dst);
    else
        snprintf(dir, 2, ".");
    return dir;
}

/* Remove what an interrupted write to `dst` left (its temporaries, which
 * nothing else sweeps outside a saver's directory), saying so. */
static void remove_stale_temps(const char *dst)
{
    const char *slash = strrchr(dst, '/');
    const char *base = slash ? slash + 1 : dst;
    char *dir = destination_dir(dst);
    DIR *d;
    struct dirent *e;
    d = opendir(dir);
    while (d && (e = readdir(d)) != NULL) {
        char *path;
        if (!is_temp_of(e->d_name, base))
            continue;
        path = cli_join(dir, e->d_name);
        if (unlink(path) == 0)
            fprintf(stderr,
                    "ckpt repack: removed %s (left by an interrupted write)\n",
                    cli_safe(path));
        free(path);
    }
    if (d)
        closedir(d);
    free(dir);
}

/* Make the entry of DST's directory durable in that directory's parent,
 * before anything is written under it: whoever created the directory (a
 * `mkdir` just before) may have left its entry unsynced, and a power cut
 * would then take the new checkpoint away with it after repack reported
 * it written (the saver does the same for its directory at open). The
 * library's ckpt_fs_sync_entry decides which parent that is ("<dir>/.."
 * for a directory named "." or "..", none for "/"). A parent this process may
 * not read (EACCES) is passed over, as the saver passes it over; another
 * failure ends the repack before it writes. */
static int sync_destination_entry(const char *dst)
{
    char *dir = destination_dir(dst);
    int err = ckpt_fs_sync_entry(NULL, dir);
    if (err == CKPT_EACCES) {
        ckpt_error_clear();
        err = 0;
    }
    if (err == CKPT_ENOTFOUND) { /* its parent is missing, so is it */
        cli_error("repack",
                  "%s: its directory %s does not exist (DST's directory "
                  "must exist; nothing written)",
                  dst, cli_safe(dir));
        ckpt_error_clear();
        err = CLI_USAGE;
    } else if (err < 0) {
        cli_error("repack",
                  "%s: cannot make its directory's entry durable (nothing "
                  "written): %s",
                  dst, ckpt_error_last()->message);
        err = cli_exit_code(err);
    }
    free(dir);
    return err;
}

/* Refuse a DST that names a file or a directory rather than a prefix,
 * or whose index exists (never write over a checkpoint); else remove
 * what an interrupted repack to it left. 0 or CLI_USAGE. */
static int check_destination(const char *dst)
{
    char *index;
    struct stat st;
    int exists;
    /* DST "x.index" (a file name, as SRC may be given) would be written
     * as x.index.index and x.index.data-...: a checkpoint nobody meant */
    if (cli_names_checkpoint_file(dst)) {
        cli_error("repack",
                  "DST %s names a checkpoint's file; DST is the new "
                  "checkpoint's prefix (its files are DST.index and "
                  "DST.data-*), e.g. %.*s",
                  dst, (int)(strrchr(dst, '.') - dst), dst);
        return CLI_USAGE;
    }
    if (stat(dst, &st) == 0 && S_ISDIR(st.st_mode)) {
        /* DST names a prefix: files would land beside the directory */
        cli_error("repack",
                  "%s is a directory; DST is the new checkpoint's prefix, "
                  "e.g. %s%smodel.ckpt",
                  dst, dst, dst[strlen(dst) - 1] == '/' ? "" : "/");
        return CLI_USAGE;
    }
    index = cli_index_path(dst);
    exists = stat(index, &st) == 0;
    if (exists)
        cli_error("repack", "%s exists; remove it or choose another DST",
                  index);
    else
        remove_stale_temps(dst);
    free(index);
    return exists ? CLI_USAGE : 0;
}

/* The record of `e` read from the source, as the writer takes it. */
typedef struct record_copy {
    ckpt_buf rec;              /* a record as stored */
    void *host;                /* a fixed-size tensor in host order */
    ckpt_string_array strings; /* a string tensor's elements, decoded */
    int decoded;               /* `strings` holds the tensor */
    const void *data;          /* rec's or host's bytes */
    size_t n;                  /* their count */
} record_copy;

/* Whether this machine is big-endian: the byte order the writer writes
 * in, which a record copied as stored must already have. */
static int host_big_endian(void)
{
    const uint16_t one = 1;
    return *(const uint8_t *)&one == 0;
}

/* Read the record of `e` into `c`: a fixed-size tensor in host byte order
 * (a checkpoint written on a big-endian machine is rewritten
 * little-endian, as DST's header says); a string tensor as stored, its
 * checksums checked, when `src_host_order` (the source's byte order is
 * the host's, as for every checkpoint written on x86: the record's length
 * words and length checksum are already what the writer writes), else as
 * its elements, which the writer encodes again, the strings' bytes
 * unchanged; any other as stored. A string record copied as stored takes
 * its own size in memory; decoded, a slice of 16 bytes per element more
 * (17 times the record for 1-byte strings). */
static int read_for_copy(ckpt_bundle_reader *r, const ckpt_tensor_entry *e,
                         int src_host_order, record_copy *c)
{
    uint64_t bytes;
    int err;
    if (e->dtype == CKPT_DT_STRING && !src_host_order) {
        c->decoded = 1;
        return ckpt_bundle_reader_read_strings_entry(r, e, &c->strings);
    }
    if (e->dtype == CKPT_DT_STRING || ckpt_dtype_size(e->dtype) == 0 ||
        e->size <= 0) {
        err = ckpt_bundle_reader_read_record(r, e, &c->rec);
        c->data = c->rec.ptr;
        c->n = c->rec.size;
        return err;
    }
    /* The record must lie inside its data file before its size, which
     * the index alone gives, is allocated. */
    err = ckpt_bundle_reader_data_size(r, e, &bytes);
    if (err < 0)
        return err;
    c->host = malloc((size_t)e->size);
    if (!c->host)
        return ckpt_error_set(
            CKPT_ENOMEM, "out of memory reading its %" PRId64 " bytes to copy",
            e->size);
    c->data = c->host;
    c->n = (size_t)e->size;
    return ckpt_bundle_reader_read_entry(r, e, c->host, c->n);
}

/* Add the copy `c` of `e` to `w`. */
static int write_copy(ckpt_bundle_writer *w, const ckpt_tensor_entry *e,
                      const record_copy *c)
{
    if (c->decoded)
        return ckpt_bundle_writer_add_strings(
            w, e->name, &e->shape, c->strings.strings, c->strings.count);
    return ckpt_bundle_writer_add_record(w, e->name, e->dtype, &e->shape,
                                         c->data, c->n);
}

static void record_copy_dispose(record_copy *c)
{
    free(c->host);
    ckpt_buf_dispose(&c->rec);
    ckpt_string_array_dispose(&c->strings);
}

/* Refuse the kept entry `e` of an ordinary tensor whose name holds a 0
 * byte: the writer takes names as C strings, so it would be stored under
 * the part before that byte, another tensor's name. CLI_USAGE, or 0. */
static int refuse_zero_byte_name(const char *prefix, const ckpt_tensor_entry *e)
{
    char *advice;
    if (e->is_slice_key || strlen(e->name) == e->name_len)
        return 0;
    advice = exclude_advice(e->name, e->name_len);
    cli_error("repack",
              "%s: tensor '%s': its name holds a 0 byte, which the new "
              "checkpoint cannot store (it would be renamed '%s'); leave it "
              "out with %s",
              prefix, cli_safe_name(e), cli_safe(e->name), advice);
    free(advice);
    return CLI_USAGE;
}

/* The bytes repack wrote: the size of DST's one data file, which holds
 * the records and nothing else (the writer pads nothing at alignment 1).
 * What the copy holds, not what the source's records took: a string
 * record written again may differ in size (an empty record, which
 * TensorFlow reads as no strings, is written with its length checksum). */
static int written_bytes(const char *dst, int64_t *bytes)
{
    ckpt_buf path = CKPT_BUF_INIT;
    struct stat st;
    int err = ckpt_bundle_data_path(&path, dst, 0, 1);
    if (err < 0)
        return cli_lib_error("repack", err, dst);
    if (stat(path.ptr, &st) != 0) {
        cli_error("repack", "%s: cannot read its size: %s", path.ptr,
                  strerror(errno));
        ckpt_buf_dispose(&path);
        return CLI_USAGE;
    }
    *bytes = (int64_t)st.st_size;
    ckpt_buf_dispose(&path);
    return 0;
}

/* Copy the kept records of `r` into a new bundle at `dst`; *bytes: what
 * it wrote (written_bytes). */
static int copy_records(const repack_opts *o, ckpt_bundle_reader *r,
                        const char *prefix, size_t *kept, int64_t *bytes)
{
    ckpt_bundle_writer *w = NULL;
    size_t n = ckpt_bundle_reader_count(r);
    int err, rc = 0, host_order;
    for (size_t i = 0; i < n; i++) {
        ckpt_tensor_entry buf;
        const ckpt_tensor_entry *e = cli_entry(r, i, &buf);
        size_t len = 0;
        char *owner;
        if (!keep_entry(o, e))
            continue;
        rc = refuse_zero_byte_name(prefix, e);
        if (rc != 0)
            return rc;
        if (e->num_slices == 0 && !e->is_slice_key)
            continue;
        /* a slice entry must be a piece of a partitioned tensor the index
         * holds: the library's check says so, or names the damage */
        err = e->is_slice_key ? ckpt_bundle_reader_check(r, e) : 0;
        if (err < 0)
            return cli_lib_error("repack", err, prefix);
        owner = e->is_slice_key ? slice_owner(e, &len) : NULL;
        if (!e->is_slice_key || owner) {
            const char *name =
                owner ? cli_safe_n(owner, len) : cli_safe_name(e);
            char *advice = owner ? exclude_advice(owner, len)
                                 : exclude_advice(e->name, e->name_len);
            cli_error("repack",
                      "%s: tensor '%s' is partitioned; repacking "
                      "partitioned tensors is not supported (leave it out "
                      "with %s)",
                      prefix, name, advice);
            free(advice);
        } else {
            cli_error("repack",
                      "%s: a piece of a partitioned tensor (slice entry "
                      "%s); repacking partitioned tensors is not supported",
                      prefix, cli_safe_name(e));
        }
        free(owner);
        return CLI_USAGE;
    }
    err = ckpt_bundle_writer_open(&w, o->dst, NULL);
    if (err < 0)
        return cli_lib_error("repack", err, o->dst);
    host_order = ckpt_bundle_reader_big_endian(r) == host_big_endian();
    for (size_t i = 0; i < n && rc == 0; i++) {
        ckpt_tensor_entry buf;
        const ckpt_tensor_entry *e = cli_entry(r, i, &buf);
        record_copy c;
        if (!keep_entry(o, e))
            continue;
        memset(&c, 0, sizeof(c));
        err = read_for_copy(r, e, host_order, &c);
        if (err < 0) {
            cli_tensor_error("repack", prefix, e);
            /* a data file missing, unreadable or not a regular file is
             * damage, as for verify and inspect --values */
            rc = cli_values_exit_code(err);
        } else {
            err = write_copy(w, e, &c);
            if (err < 0) {
                /* the writer names DST; the tensor comes from PREFIX */
                cli_error("repack", "copying tensor '%s' of %s: %s",
                          cli_safe_name(e), prefix, ckpt_error_last()->message);
                rc = cli_exit_code(err);
            } else {
                *kept += 1;
            }
        }
        record_copy_dispose(&c);
    }
    if (rc == 0) {
        err = ckpt_bundle_writer_finish(w);
        if (err < 0)
            rc = cli_lib_error("repack", err, o->dst);
        else
            rc = written_bytes(o->dst, bytes);
    }
    ckpt_bundle_writer_free(w);
    return rc;
}

static void print_json(const char *prefix, int outside, const char *dst,
                       size_t kept, size_t total, int64_t bytes)
{
    json_object *root = cli_json_or_oom(json_object_new_object());
    cli_json_add(root, "source", cli_json_string(prefix));
    cli_json_add(root, "outside_directory", json_object_new_boolean(outside));
    cli_json_add(root, "destination", cli_json_string(dst));
    cli_json_add(root, "ok", json_object_new_boolean(1));
    cli_json_add(root, "tensors", json_object_new_int64((int64_t)kept));
    cli_json_add(root, "tensors_total", json_object_new_int64((int64_t)total));
    cli_json_add(root, "bytes", json_object_new_int64(bytes));
    cli_json_add(root, "num_shards", json_object_new_int(1));
    cli_print_json(root);
    json_object_put(root);
}

static int run(int argc, char **argv)
{
    repack_opts o;
    ckpt_bundle_reader *r = NULL;
    char *prefix = NULL;
    size_t kept = 0, total = 0;
    int64_t bytes = 0;
    int rc;
    memset(&o, 0, sizeof(o));
    rc = parse_args(argc, argv, &o);
    if (rc != 0)
        goto done;
    rc = cli_open_bundle(&r, &prefix, "repack", o.src);
    if (rc != 0)
        goto done;
    rc = check_destination(o.dst);
    if (rc == 0)
        rc = sync_destination_entry(o.dst);
    if (rc != 0)
        goto done;
    for (size_t i = 0; i < ckpt_bundle_reader_count(r); i++) {
        ckpt_tensor_entry buf;
        total += cli_entry_listed(cli_entry(r, i, &buf)) != 0;
    }
    rc = copy_records(&o, r, prefix, &kept, &bytes);
    if (rc == 0 && kept == 0 && total > 0) /* a pattern that keeps nothing */
        fprintf(stderr,
                "ckpt repack: warning: no tensor of %s was kept (the "
                "--include/--exclude patterns left none of its %zu); %s "
                "holds no tensors\n",
                cli_safe(prefix), total, cli_safe(o.dst));
    if (rc == 0 && o.json)
        print_json(prefix, cli_outside_warnings() > 0, o.dst, kept, total,
                   bytes);
    else if (rc == 0)
        printf("%s -> %s: %zu of %zu tensor%s, %lld byte%s, 1 shard\n",
               cli_safe(prefix), cli_safe(o.dst), kept, total,
               cli_plural(total), (long long)bytes, cli_plural((size_t)bytes));
done:
    ckpt_bundle_reader_free(r);
    free(prefix);
    free_patterns(&o.include);
    free_patterns(&o.exclude);
    return rc;
}
