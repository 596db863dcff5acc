/* tools/ckpt/main.c - the `ckpt` command: global options (--help,
 * --version, each with --json too), `ckpt help [CMD] [--json]`, and dispatch to
 * the subcommands in cmd_*.c. Exit codes: 0 success, 1 the check found damage
 * or differences, 2 usage error, input that cannot be read or output that
 * cannot be written. */
#include "cli.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

static const cli_command *const commands[] = {&cli_cmd_ls, &cli_cmd_inspect,
                                              &cli_cmd_verify, &cli_cmd_repack,
                                              &cli_cmd_diff};

#define NUM_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static const cli_command *find_command(const char *name)
{
    for (size_t i = 0; i < NUM_COMMANDS; i++)
        if (strcmp(commands[i]->name, name) == 0)
            return commands[i];
    return NULL;
}

static void print_usage(FILE *out)
{
    fprintf(out, "usage: ckpt <command> [arguments]\n"
                 "       ckpt help <command> | ckpt --help | ckpt "
                 "--version\n\n"
                 "Inspect, verify and rewrite TensorFlow checkpoints "
                 "(tensor bundle V2).\nOptions go after the command, "
                 "before, between or after its operands; a \"--\"\nends "
                 "them: every argument after it is a path, even one "
                 "starting with '-'.\n\ncommands:\n");
    for (size_t i = 0; i < NUM_COMMANDS; i++)
        fprintf(out, "  %-8s %s\n", commands[i]->name, commands[i]->summary);
    fprintf(out, "\nExit status: 0 success, 1 damage or differences found, "
                 "2 usage error, unreadable input\nor output that "
                 "could not be written. Like other tools, ckpt ends quietly "
                 "by SIGPIPE\n(status 141 in a shell) when what reads its "
                 "output stops first (| head).\n"
                 "With --json, stdout holds one JSON document, a usage "
                 "error's too: a run that\nfails before printing its own "
                 "prints {\"command\", \"ok\": false, \"error\"}\n"
                 "(and \"usage\", the synopsis, for a usage error;\n"
                 "\"command\" is null when the arguments start with an "
                 "option: options go\nafter the command, as in ckpt ls DIR "
                 "--json).\nWith --json, --help and help print {\"command\", "
                 "\"usage\", \"help\", \"ok\": true},\nand --version "
                 "{\"version\", \"ok\": true}.\n");
}

/* The index of the first argument from `from` that is `option` itself
 * (not past a "--", not an option's value: 'inspect P --tensor --json'
 * looks up a tensor), or argc when none. */
static int find_option(const cli_command *c, int from, int argc, char **argv,
                       int (*is)(const char *))
{
    for (int i = from; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (is(argv[i]))
            return i;
        if (cli_option_takes_next(c, argv[i]))
            i++;
    }
    return argc;
}

static int is_json(const char *arg)
{
    return strcmp(arg, "--json") == 0;
}

/* A usage error of a form without a command: `message` on stderr after
 * `who` ("ckpt" or "ckpt help"), then the usage; with --json the failure
 * document, the top-level synopsis as its "usage". */
static int top_usage_error(const char *who, const char *message)
{
    fprintf(stderr, "%s: %s\n", who, cli_safe(message));
    print_usage(stderr);
    cli_json_usage_failure(message, strlen(message), NULL);
    return CLI_USAGE;
}

static int unknown_command(const char *who, const char *name)
{
    const char *hint = name[0] == '-' ? " (options go after the command, "
                                        "e.g. ckpt ls DIR --json)"
                                      : "";
    size_t cap = strlen(name) + strlen(hint) + sizeof("unknown command ''");
    char *text = cli_xmalloc(cap);
    int rc;
    snprintf(text, cap, "unknown command '%s'%s", name, hint);
    rc = top_usage_error(who, text);
    free(text);
    return rc;
}

static int unexpected_argument(const char *who, const char *arg)
{
    size_t cap = strlen(arg) + sizeof("unexpected argument ''");
    char *text = cli_xmalloc(cap);
    int rc;
    snprintf(text, cap, "unexpected argument '%s'", arg);
    rc = top_usage_error(who, text);
    free(text);
    return rc;
}

/* The help of `c` (NULL: the usage) on stdout: the text, or with --json
 * {"command", "usage", "help": the text, "ok": true}, so that a --json
 * run prints JSON on stdout whatever it asks for. */
static int print_help(const cli_command *c, int json)
{
    char *text = NULL;
    size_t n = 0;
    FILE *mem;
    json_object *root;
    if (!json) {
        if (c)
            cli_print_help(c, stdout);
        else
            print_usage(stdout);
        return CLI_OK;
    }
    mem = open_memstream(&text, &n);
    if (!mem)
        cli_out_of_memory();
    if (c)
        cli_print_help(c, mem);
    else
        print_usage(mem);
    if (fclose(mem) != 0 || !text)
        cli_out_of_memory();
    root = json_object_new_object();
    json_object_object_add(root, "command",
                           c ? json_object_new_string(c->name) : NULL);
    if (c) {
        cli_synopsis syn;
        size_t cap = sizeof(syn.text) + sizeof("ckpt ");
        char *usage = cli_xmalloc(cap);
        snprintf(usage, cap, "ckpt %s", cli_synopsis_of(&syn, c));
        json_object_object_add(root, "usage", json_object_new_string(usage));
        free(usage);
    } else {
        json_object_object_add(
            root, "usage",
            json_object_new_string("ckpt <command> [arguments]"));
    }
    json_object_object_add(root, "help", cli_json_bytes(text, n));
    json_object_object_add(root, "ok", json_object_new_boolean(1));
    cli_print_json(root);
    json_object_put(root);
    free(text);
    return CLI_OK;
}

/* "ckpt help [CMD] [--json]": CMD's help, or the usage ("ckpt help",
 * "ckpt help help", "ckpt help --help"). A "--" ends the options, as for
 * every command: "ckpt help -- ls" is ls's help (it took "--" for the
 * command's name and refused "ls"). */
static int help(int argc, char **argv)
{
    const char *name = NULL;
    const cli_command *c = NULL;
    int json = 0, end = argc;
    for (int i = 0; i < argc && end == argc; i++)
        if (strcmp(argv[i], "--") == 0)
            end = i;
    for (int i = 0; i < end; i++)
        json |= is_json(argv[i]);
    if (json)
        cli_json_failures_on("help");
    for (int i = 0; i < argc; i++) {
        if (i == end || (i < end && is_json(argv[i])))
            continue;
        if (name)
            return unexpected_argument("ckpt help", argv[i]);
        name = argv[i];
    }
    if (name && strcmp(name, "help") != 0 && !cli_is_help(name)) {
        c = find_command(name);
        if (!c)
            return unknown_command("ckpt help", name);
    }
    return print_help(c, json);
}

/* "ckpt --help [--json]" and "ckpt --version [--json]": any other
 * argument is a usage error ("command": null in the JSON document, as
 * the arguments start with an option). */
static int top_option(int argc, char **argv)
{
    int json = 0;
    for (int i = 2; i < argc; i++)
        json |= is_json(argv[i]);
    if (json)
        cli_json_failures_on("");
    for (int i = 2; i < argc; i++)
        if (!is_json(argv[i]))
            return unexpected_argument("ckpt", argv[i]);
    if (cli_is_help(argv[1]))
        return print_help(NULL, json);
    if (json) {
        json_object *root = json_object_new_object();
        json_object_object_add(root, "version",
                               json_object_new_string(ckpt_version_string()));
        json_object_object_add(root, "ok", json_object_new_boolean(1));
        cli_print_json(root);
        json_object_put(root);
    } else {
        printf("ckpt %s\n", ckpt_version_string());
    }
    return CLI_OK;
}

static int dispatch(int argc, char **argv)
{
    const cli_command *c;
    if (argc < 2) {
        print_usage(stderr);
        return CLI_USAGE;
    }
    if (cli_is_help(argv[1]) || strcmp(argv[1], "--version") == 0)
        return top_option(argc, argv);
    if (strcmp(argv[1], "help") == 0)
        return help(argc - 2, argv + 2);
    c = find_command(argv[1]);
    /* With --json a usage error prints the JSON failure document too.
     * "ckpt --json ls": no command named, "command": null (not "--json") */
    if (find_option(c, 1, argc, argv, is_json) < argc)
        cli_json_failures_on(c ? c->name : argv[1][0] == '-' ? "" : argv[1]);
    if (!c)
        return unknown_command("ckpt", argv[1]);
    if (find_option(c, 2, argc, argv, cli_is_help) < argc)
        return print_help(c, find_option(c, 2, argc, argv, is_json) < argc);
    return c->run(argc - 2, argv + 2);
}

int main(int argc, char **argv)
{
    int rc;
    /* Past a file-size limit (ulimit -f) a write fails with EFBIG, named
     * in the error, instead of the signal killing the tool silently. */
    signal(SIGXFSZ, SIG_IGN);
    rc = cli_finish(dispatch(argc, argv));
    cli_text_release();
    return rc;
}
