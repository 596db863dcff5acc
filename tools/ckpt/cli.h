/* tools/ckpt/cli.h - what the subcommands of the `ckpt` tool share: exit
 * codes, messages on stderr, option parsing, opening a checkpoint named by a
 * prefix or a directory, and printing tensor values as text or JSON.
 * The tool uses only the public API (ckpt.h). */
#ifndef CKPT_TOOLS_CLI_H
#define CKPT_TOOLS_CLI_H

/* POSIX.1-2008 (gmtime_r, st_mtim, regcomp): included first by every file
 * of the tool, before any system header. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include "ckpt.h"

#include <json-c/json.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

#if defined(__GNUC__)
#define CLI_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define CLI_PRINTF(f, a)
#endif

/* Exit codes of every command. */
enum cli_exit {
    CLI_OK = 0,    /* success */
    CLI_FOUND = 1, /* the check found damage or differences */
    CLI_USAGE = 2  /* usage error, unreadable input, unwritable output */
};

/* One option of a command. The command's synopsis, the option's lines in
 * its help, its parser (cli_option_at) and main's look for --help and
 * --json (which steps over option values) all read this one table, so
 * they cannot disagree on which options there are or which take a
 * value. */
typedef struct cli_option {
    const char *name;     /* "--tensor" */
    const char *value;    /* "NAME": takes a value, the next argument or
                             after '=' ("--tensor=w"); NULL: takes none */
    const char *optional; /* "N|all": may take a value after '=' only
                             ("--values=5"); NULL: none */
    int repeats;          /* may be given again: "[--tensor NAME]..." */
    const char *help;     /* its lines in the help ("  --tensor NAME  ...\n") */
    const char *takes;    /* what its value is, with an example, for the
                             messages of a missing or bad one ("a number
                             >= 0, e.g. --atol=1e-6"): "--atol needs
                             <takes>"; NULL for an option without one */
} cli_option;

/* One subcommand. `run` gets the arguments after the command name.
 * `ckpt help CMD` prints "usage: ckpt <synopsis>", the summary, then
 * `help`, each option's lines and `help_after`. */
typedef struct cli_command {
    const char *name;
    const char *operands;      /* "DIR", "SRC DST" */
    const cli_option *options; /* in the synopsis' and the help's order */
    size_t num_options;
    const char *summary;    /* one line for `ckpt --help` */
    const char *help;       /* the help before the options' lines */
    const char *help_after; /* the help after them */
    int (*run)(int argc, char **argv);
} cli_command;

/* The number of options of a table. */
#define CLI_NUM_OPTIONS(table) (sizeof(table) / sizeof((table)[0]))

/* A command's synopsis: "inspect PATH [--json] [--tensor NAME]...
 * [--values[=N|all]]", made from its name, operands and option table. */
typedef struct cli_synopsis {
    char text[512];
} cli_synopsis;

const char *cli_synopsis_of(cli_synopsis *s, const cli_command *c);

extern const cli_command cli_cmd_ls;
extern const cli_command cli_cmd_inspect;
extern const cli_command cli_cmd_verify;
extern const cli_command cli_cmd_repack;
extern const cli_command cli_cmd_diff;

/* ---- untrusted text (cli_text.c) ----------------------------------------- */

/* Names and paths from files are data: these make them fit for a terminal
 * (printable ASCII and printable UTF-8 as is, every other byte as \xHH) and
 * for JSON (valid UTF-8 as is, otherwise each byte as U+0000..U+00FF). Every
 * name, path or message printed goes through them. */

/* `bytes` (n bytes followed by a NUL) fit for a terminal: `bytes` itself
 * when nothing needs escaping, else an escaped copy that lives until
 * cli_text_release(). */
const char *cli_safe_n(const void *bytes, size_t n);
/* The text cli_safe_n gives for the n bytes, printed on `out` (not when
 * NULL), keeping no copy; the columns it takes (cli_text_columns). For
 * what a walk prints once per index entry, where kept copies (up to 4
 * bytes a byte) would grow with the index. */
size_t cli_put_safe_n(FILE *out, const void *bytes, size_t n);
/* cli_safe_n of a C string. */
const char *cli_safe(const char *s);
/* "" for 1, else "s": "%zu tensor%s" reads "1 tensor", "2 tensors". */
const char *cli_plural(size_t n);
/* cli_safe_n of an entry's whole name (NUL bytes included). */
const char *cli_safe_name(const ckpt_tensor_entry *e);
/* The widest a text table pads its name column (inspect's NAME, ls's
 * PREFIX and file names) to fit its longest name: a longer name, which
 * the files may make megabytes long, pushes only its own line's columns
 * right, so the output stays linear in what the files hold. */
#define CLI_NAME_COLUMN_MAX 72
/* `width` widened to fit `len` characters, at most CLI_NAME_COLUMN_MAX. */
static inline int cli_name_column(int width, size_t len)
{
    int w = len > CLI_NAME_COLUMN_MAX ? CLI_NAME_COLUMN_MAX : (int)len;
    return w > width ? w : width;
}
/* The terminal columns the first `n` bytes of `text` (already made safe:
 * printable ASCII and UTF-8) take: one per character, two for the wide
 * ones (CJK ideographs, Hangul, fullwidth forms, most emoji), so that a
 * table pads by what the eye sees rather than by bytes. */
size_t cli_text_columns(const char *text, size_t n);
/* Print the safe `text` on stdout, then spaces up to `width` columns. */
void cli_print_padded(const char *text, int width);
/* Format, then print the text escaped as cli_safe does, on `out`. */
void cli_vprint_safe(FILE *out, const char *fmt, va_list ap);
/* Free the escaped copies (at exit). */
void cli_text_release(void);

/* A JSON string of n bytes (valid UTF-8 as is, otherwise Latin-1). */
json_object *cli_json_bytes(const void *bytes, size_t n);
/* cli_json_bytes of a C string. */
json_object *cli_json_string(const char *s);
/* cli_json_bytes of an entry's whole name. */
json_object *cli_json_name(const ckpt_tensor_entry *e);

/* Length of the valid UTF-8 sequence at p (n > 0 bytes left), its code
 * point in *cp; 0 when the bytes there are not UTF-8. */
size_t cli_utf8_sequence(const unsigned char *p, size_t n, uint32_t *cp);
/* Write a serialized JSON document with the code points a terminal acts on
 * that json-c leaves raw (DEL, C1, line separators, direction marks)
 * \u-escaped (cli_text.c). */
void cli_json_write_safe(const char *doc, FILE *out);

/* `fmt` formatted into a malloc'd string (its length in *len when len is
 * not NULL); exits through cli_out_of_memory when memory runs out. */
char *cli_vformat(size_t *len, const char *fmt, va_list ap);

/* ---- messages ------------------------------------------------------------ */

/* Print "ckpt: out of memory" and end the run with CLI_USAGE (through
 * cli_exit). */
#if defined(__GNUC__)
__attribute__((noreturn))
#endif
_Noreturn void
cli_out_of_memory(void);

/* malloc that ends the run through cli_out_of_memory on failure (n == 0
 * allocates 1 byte). */
void *cli_xmalloc(size_t n);

/* Entry `i` (< count) of `r` filled into `*buf` (its name points into
 * the reader), which is returned: every walk of the tool fills entries in
 * its own memory, so the reader keeps nothing per entry
 * (ckpt_bundle_reader_entry_fill; docs/scaling.md). */
const ckpt_tensor_entry *cli_entry(const ckpt_bundle_reader *r, size_t i,
                                   ckpt_tensor_entry *buf);
/* calloc, realloc and strdup that fail the same way. */
void *cli_xcalloc(size_t n, size_t size);
void *cli_xrealloc(void *p, size_t n);
char *cli_xstrdup(const char *s);
/* "<dir>/<name>" (malloc'd, failing as cli_xmalloc does); no second '/'
 * after a `dir` ending in one. */
char *cli_join(const char *dir, const char *name);

/* "ckpt CMD: <message>\n" on stderr ("ckpt: <message>" when `cmd` is
 * NULL: an error of the tool, not of one command), the message escaped as
 * cli_safe does; one longer than 16 KiB is cut in its middle (start and end
 * kept,
 * "... (N more bytes) ..." between). */
void cli_error(const char *cmd, const char *fmt, ...) CLI_PRINTF(2, 3);

/* "ckpt CMD: [<context>: ]<the library's last error message>\n" on stderr;
 * the context is left out when the message already names it. Returns the
 * exit code for `err` (cli_exit_code). */
int cli_lib_error(const char *cmd, int err, const char *context);

/* CLI_FOUND for damage (CKPT_ECORRUPT), CLI_USAGE for anything else. */
int cli_exit_code(int err);

/* The exit code for a tensor whose values could not be read from a
 * checkpoint whose index opened: its data file is damage (CLI_FOUND) when
 * it is corrupt, missing, not a regular file or unreadable (CKPT_ECORRUPT,
 * _ENOTFOUND, _EIO, _EACCES), as `verify` counts it; anything else
 * (memory, a dtype this build cannot print) CLI_USAGE. */
int cli_values_exit_code(int err);

/* 0 when the POSIX extended regex `expr` is one regcomp and regexec
 * handle in bounded memory and polynomial time (cli_pattern.c); else -1
 * with the reason in `why` (`n` bytes): a back-reference (\1..\9),
 * bounded repetitions ({m,n}) expanding to more than 65536 positions, or
 * repetitions whose positions reach too many others (regcomp's memory and
 * time, and regexec's time for each character of a name). */
int cli_pattern_check(const char *expr, char *why, size_t n);

/* Print "ckpt CMD: <message>" and the command's synopsis on stderr;
 * returns CLI_USAGE. */
int cli_usage_error(const cli_command *c, const char *fmt, ...)
    CLI_PRINTF(2, 3);

/* Print the full help of `c` on `out`. */
void cli_print_help(const cli_command *c, FILE *out);

/* ---- a --json run that fails (cli_json_fail.c) --------------------------- */

/* A `--json` run prints one JSON document on stdout whatever happens after
 * its arguments are parsed. Once a command calls cli_json_failures_on, the
 * messages of cli_error and cli_lib_error are kept as well as printed on
 * stderr; when the run then ends with a non-zero status and has printed no
 * document of its own (cli_print_json), cli_finish prints
 *   {"command": CMD, "ok": false, "error": "<the messages, one a line>",
 *    <the details added>}
 * with every string escaped as cli_json_bytes does. main turns this on
 * before a command parses its arguments when they hold --json as an
 * option (not past "--", not the value of an option its synopsis shows
 * as "[--opt VALUE]"), so that a usage error prints the document too
 * (with "usage": the synopsis).
 * `cmd` "" means that no command was named (the arguments start with an
 * option, as in `ckpt --json ls`): "command" is then null. */
void cli_json_failures_on(const char *cmd);

/* A command has parsed its arguments: with --json (`json` non-zero) the
 * failure document is on for `c`; without, it is off again, which main
 * turned on because "--json" was among the arguments as an option's value
 * (`inspect P --tensor --json`): a text run prints no JSON. */
void cli_json_parsed(const cli_command *c, int json);

/* Keep `n` bytes of message text (what cli_error does). */
void cli_json_failure_note(const char *message, size_t n);

/* A usage error under --json: keep its message and add the field
 * "usage": "ckpt <synopsis>" (synopsis NULL: the general usage). */
void cli_json_usage_failure(const char *message, size_t n,
                            const char *synopsis);

/* Add the field `key` to the failure document (takes `value`; dropped when
 * the run is not a --json one). */
void cli_json_failure_detail(const char *key, json_object *value);

/* Record that the command printed its own document. */
void cli_json_printed(void);

/* End of a run (main): print the failure document when it is due; returns
 * rc. */
int cli_finish(int rc);

/* cli_finish, then exit with rc: how a command ends the run early. */
#if defined(__GNUC__)
__attribute__((noreturn))
#endif
_Noreturn void
cli_exit(int rc);

/* ---- options ------------------------------------------------------------- */

/* The option of `c` that `arg` names, as its table reads it: "--name",
 * or "--name=..." for one that takes a value or an optional one; NULL
 * for none. */
const cli_option *cli_option_named(const cli_command *c, const char *arg);

/* Whether `arg` is an option of `c` whose value is the next argument
 * ("--tensor NAME"): what a scan of the arguments steps over. */
int cli_option_takes_next(const cli_command *c, const char *arg);

/* The option argv[*i] is (an argument cli_arg_kind calls an option):
 * *opt is its entry in c's table, *value its value (after '=', or the
 * next argument, *i then advanced past it; NULL when it has none).
 * Returns 1, 0 when `c` has no such option (*opt NULL), -1 when its
 * value is missing (*opt set). */
int cli_option_at(const cli_command *c, int argc, char **argv, int *i,
                  const cli_option **opt, const char **value);

/* The usage error for the option argument `arg` that cli_option_at did
 * not take: `opt` NULL (it returned 0): "unknown option 'ARG'", or for
 * "--json=1", an option without a value given one, "--json takes no
 * value (given '--json=1')"; `opt` set (it returned -1, the value is
 * missing): "OPT needs <takes>". Returns CLI_USAGE. */
int cli_option_error(const cli_command *c, const char *arg,
                     const cli_option *opt);

/* The usage error for a bad `value` of `opt`: "bad OPT 'VALUE': needs
 * <takes>", with `why` (may be NULL) before "needs" ("bad --exclude '(':
 * <regcomp's reason>; needs ..."). Returns CLI_USAGE. */
int cli_option_value_error(const cli_command *c, const cli_option *opt,
                           const char *value, const char *why);

/* Whether `arg` is -h or --help. */
int cli_is_help(const char *arg);

/* What a command's argument is, read in order with `*operands_only` 0 at
 * the start: the first "--" ends the options (CLI_ARG_END: skip it) and
 * every argument after it is an operand however it starts, as POSIX
 * utilities do; before it "-" alone is an operand (a path) and any other
 * argument starting with '-' an option. main's --json and --help look
 * stop at the same "--", so every command reads it one way. */
enum { CLI_ARG_OPERAND, CLI_ARG_OPTION, CLI_ARG_END };
int cli_arg_kind(const char *arg, int *operands_only);

/* The arguments of a command that takes one path and --json (`ls DIR
 * [--json]`, `verify PATH [--json]`), "--" read by cli_arg_kind; `what` names
 * the path when it is missing
 * ("DIR"). With --json, turns on cli_json_failures_on for the command.
 * Returns 0, or CLI_USAGE after printing the usage error. */
int cli_parse_path_and_json(const cli_command *c, const char *what, int argc,
                            char **argv, const char **path, int *json);

/* ---- checkpoints --------------------------------------------------------- */

/* Whether s ends with suffix. */
int cli_ends_with(const char *s, const char *suffix);
/* Whether the n bytes at s are all ASCII digits. */
int cli_all_digits(const char *s, size_t n);
/* For "<p>.data-SSSSS-of-NNNNN" (each number as %05d writes it: five
 * digits, or more past 99999): the length of <p> (0 when the name is not
 * a data file's), with the shard and the shard count stored where `shard`
 * and `count` are not NULL. */
size_t cli_parse_data_name(const char *s, int *shard, int *count);
/* "<prefix>.index" (malloc'd, failing as cli_xmalloc does). */
char *cli_index_path(const char *prefix);
/* Whether the last component of `path` is named like a checkpoint's file
 * rather than its prefix: "<name>.index" or "<name>.data-..." (<name> not
 * empty). */
int cli_names_checkpoint_file(const char *path);

/* Turn PATH into a checkpoint prefix (malloc'd into *out): a directory
 * gives its latest checkpoint (or its only .index file when it has no
 * state file), warned about when it lies outside the directory
 * (cli_warn_outside) or is not the one the state file names, whose index
 * is missing (cli_warn_named_missing); "<prefix>.index" and "<prefix>.data-*"
 * give the prefix, anything else is taken as a prefix. Prints the error and
 * returns an exit code on failure, 0 on success. */
int cli_resolve_prefix(char **out, const char *cmd, const char *path);

/* Like cli_resolve_prefix, except that a directory with a state file gives
 * exactly the checkpoint the state file names (its model_checkpoint_path),
 * whether or not that one's index exists, and sets *named to 1; *outside
 * to 1 when that checkpoint lies outside the directory (warned about). */
int cli_resolve_named_prefix(char **out, int *named, int *outside,
                             const char *cmd, const char *path);

/* ---- where a state file leads (cli_state_path.c) ------------------------ */

/* A state file may name a checkpoint anywhere (an absolute path, "..");
 * TensorFlow and the library read it there, and the library's saver never
 * deletes it. The commands read it too, after a warning: resolving a
 * directory (cli_resolve_prefix, cli_resolve_named_prefix) calls
 * cli_warn_outside when the checkpoint lies outside it. */

/* Whether canonical path `p` is canonical directory `dir` or lies under
 * it. */
int cli_path_within(const char *p, const char *dir);

/* Where directory `sub` lies relative to directory `dir`. */
enum cli_dir_place {
    CLI_DIR_UNKNOWN, /* `sub` (or `dir`) cannot be opened */
    CLI_DIR_SAME,
    CLI_DIR_INSIDE, /* a subdirectory of `dir`, at any depth */
    CLI_DIR_OUTSIDE
};

/* Where `sub` lies relative to `dir` (dir_real: realpath of `dir`, or NULL
 * when it has none), symbolic links resolved: by the canonical paths when
 * realpath(3) gives both, else (a path longer than PATH_MAX) by walking up
 * from `sub` through ".." and comparing device and inode numbers. */
enum cli_dir_place cli_dir_place(const char *sub, const char *dir,
                                 const char *dir_real);

/* Whether checkpoint `prefix`, resolved from the state file of directory
 * `dir`, lies outside it: its directory, symbolic links resolved, is not
 * `dir` or under it (cli_dir_place). When its directory is not there,
 * decided by the text of `stored` (the path as the state file has it;
 * NULL: inside). */
int cli_outside_dir(const char *dir, const char *prefix, const char *stored);

/* "ckpt CMD: warning: DIR/checkpoint names a checkpoint outside DIR:
 * PREFIX (read all the same, ...)" on stderr (as cli_error), and the
 * detail "outside_directory": true for a --json failure document. */
void cli_warn_outside(const char *cmd, const char *dir, const char *prefix);

/* "ckpt CMD: warning: DIR/checkpoint names PREFIX, which has no index:
 * reading the newest listed checkpoint that has one instead, CHOSEN" on
 * stderr when `chosen` (ckpt_latest_checkpoint of `dir`) is not the
 * checkpoint the state file names, because that one's index is missing:
 * a command given DIR says which checkpoint it fell back to. */
void cli_warn_named_missing(const char *cmd, const char *dir,
                            const char *chosen);

/* How many warnings cli_warn_outside has printed so far: a command compares
 * the count before and after resolving a path to say in its --json output
 * whether that path led outside its directory. */
unsigned cli_outside_warnings(void);

/* cli_resolve_prefix, then open the bundle. Prints the error and returns an
 * exit code on failure, 0 on success (*prefix_out malloc'd). */
int cli_open_bundle(ckpt_bundle_reader **out, char **prefix_out,
                    const char *cmd, const char *path);

/* Report a failure to read entry `e` of `prefix`: the library's message,
 * prefixed with "<prefix>: tensor '<name>': " unless it names the tensor
 * (quoted, as the library shows names) already. */
void cli_tensor_error(const char *cmd, const char *prefix,
                      const ckpt_tensor_entry *e);

/* Whether the entry is a real tensor to list (not a slice entry). */
int cli_entry_listed(const ckpt_tensor_entry *e);

/* The dtype's TensorFlow name, or "dtype(N)" in `tmp`. */
const char *cli_dtype_name(int dtype, char tmp[24]);

/* The entry's shape as a JSON array of integers. */
json_object *cli_json_shape(const ckpt_shape *shape);

/* Print `obj` as pretty JSON on stdout followed by a newline (the run's
 * document: see cli_json_printed). */
void cli_print_json(json_object *obj);

/* Print `o` (NULL: null) as pretty JSON with every line after the first
 * indented by `indent` spaces (it sits that deep in a document printed a
 * piece at a time), and free it. */
void cli_put_json(json_object *o, size_t indent);

/* cli_put_json to `f` (a document assembled before it is printed). */
void cli_put_json_to(FILE *f, json_object *o, size_t indent);

/* Output held back until it may be printed (cli_held.c): in memory up
 * to CLI_HELD_IN_MEMORY bytes, past that in an unnamed temporary file in
 * $TMPDIR (else /tmp), so that its size costs disk, not memory; in memory
 * after all when no such file can be made or written (a full file
 * system, a file-size limit). */
#define CLI_HELD_IN_MEMORY ((size_t)8 << 20)
typedef struct cli_held cli_held;
/* A new empty holder; exits through cli_out_of_memory on failure. */
cli_held *cli_held_open(void);
/* The stream to write the held output to. */
FILE *cli_held_stream(const cli_held *h);
/* Write everything held so far to `out`; exits with status 2 (the
 * failure document under --json) when it could not be held. */
void cli_held_put(cli_held *h, FILE *out);
/* Free the holder and its temporary file; NULL is ignored. */
void cli_held_dispose(cli_held *h);

/* A list member of a top-level JSON object printed when the command is
 * done, kept meanwhile as its text (cli_json_list.c). */
typedef struct cli_json_list {
    size_t indent;  /* of the line the list's "]" goes on */
    cli_held *text; /* the items so far */
    size_t n;       /* items */
} cli_json_list;

/* Start an empty list whose "]" goes `indent` spaces deep (2 for a
 * member of the top-level object); exits through cli_out_of_memory on
 * failure. */
void cli_json_list_open(cli_json_list *l, size_t indent);
/* Serialize `item` (freed) as the list's next element. */
void cli_json_list_add(cli_json_list *l, json_object *item);
/* Print the list on stdout: "[", each item on its own line indented by
 * indent + 2, "]" indented by indent (json-c's pretty form at that
 * depth). */
void cli_json_list_put(cli_json_list *l);
/* Free the list; one never opened (zeroed) is ignored. */
void cli_json_list_dispose(cli_json_list *l);

/* Print `key` and `value` (freed) as a member of the top-level object of
 * a document printed a member at a time, after `sep` ("{\n" for the first,
 * ",\n" for the others). */
void cli_put_member(const char *sep, const char *key, json_object *value);
/* The same for a member of an object whose members are `indent` spaces
 * deep (`key` escaped as JSON). */
void cli_put_member_at(const char *sep, size_t indent, const char *key,
                       json_object *value);

/* `o`, or the end of the run with "out of memory" (status 2) when a json-c
 * constructor returned NULL. */
json_object *cli_json_or_oom(json_object *o);

/* Add `value` to the object `to` under `key` (NULL: append to the array
 * `to`); a NULL value or a failed add (out of memory) ends the run as
 * cli_json_or_oom. For a JSON null, call json_object_object_add. */
void cli_json_add(json_object *to, const char *key, json_object *value);

/* ---- values -------------------------------------------------------------- */

/* The integer of `size` bytes (1, 2, 4 or 8) at `p`, in host order, read
 * as signed or as unsigned. */
int64_t cli_int_at(const uint8_t *p, size_t size);
uint64_t cli_uint_at(const uint8_t *p, size_t size);

/* Read tensor `e` and format its first `limit` elements (SIZE_MAX: all):
 * as text on `text` ("[v, v, ...]") when `text` is not NULL, else as the
 * items of the open list `json`. *count receives the element count of the
 * tensor.
 * Returns 0 or the library's error code (last error set). */
int cli_tensor_values(ckpt_bundle_reader *r, const ckpt_tensor_entry *e,
                      size_t limit, FILE *text, cli_json_list *json,
                      int64_t *count);

/* ---- reading data in bounded memory (cli_read.c) ------------------------ */

/* Called with each piece of a record (see ckpt_record_stream_next). */
typedef void (*cli_piece_cb)(const void *data, size_t n, void *payload);

/* Read the record of `e` (not partitioned, not DT_STRING) to its end
 * through a ckpt_record_stream, giving each piece to `cb` (may be NULL);
 * the CRC is checked at the end. Returns 0 or the library's error. */
int cli_stream_record(ckpt_bundle_reader *r, const ckpt_tensor_entry *e,
                      cli_piece_cb cb, void *payload);

/* Read the partitioned tensor `e` (fixed-size dtype) assembled into a
 * malloc'd buffer (*out, *nbytes bytes, host order), allocated only after
 * ckpt_bundle_reader_data_size checked it against the data files. Exits
 * with CLI_USAGE, naming the tensor, when memory runs out. */
int cli_read_assembled(ckpt_bundle_reader *r, const ckpt_tensor_entry *e,
                       const char *cmd, uint8_t **out, size_t *nbytes);

/* Write `n` bytes as a double-quoted C-escaped string on `out`. */
void cli_print_escaped(FILE *out, const void *bytes, size_t n);

#endif
