/* tools/ckpt/main.c - the `ckpt` command: global options (--help,
 * --version), `ckpt help [CMD]`, and dispatch to the subcommands in
 * cmd_*.c. Exit codes: 0 success, 1 the check found damage or
 * differences, 2 usage error, input that cannot be read or output that
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
                 "--json).\n");
}

static int help(int argc, char **argv)
{
    const cli_command *c;
    /* "ckpt help help" and "ckpt help --help": help is the usage's */
    if (argc < 1 || strcmp(argv[0], "help") == 0 || cli_is_help(argv[0])) {
        print_usage(stdout);
        return CLI_OK;
    }
    c = find_command(argv[0]);
    if (!c) {
        fprintf(stderr, "ckpt help: unknown command '%s'\n", cli_safe(argv[0]));
        print_usage(stderr);
        return CLI_USAGE;
    }
    cli_print_help(c, stdout);
    return CLI_OK;
}

/* Whether `arg` is an option of `c` that takes the next argument as its
 * value: its synopsis shows it as "[<arg> VALUE]" ("[--tensor NAME]"). */
static int takes_value(const cli_command *c, const char *arg)
{
    size_t n = strlen(arg);
    const char *at = c && n > 0 ? c->synopsis : NULL;
    while (at && (at = strstr(at, arg)) != NULL) {
        if (at > c->synopsis && at[-1] == '[' && at[n] == ' ' &&
            at[n + 1] >= 'A' && at[n + 1] <= 'Z')
            return 1;
        at += n;
    }
    return 0;
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
        if (takes_value(c, argv[i]))
            i++;
    }
    return argc;
}

static int is_json(const char *arg)
{
    return strcmp(arg, "--json") == 0;
}

static int unknown_command(const char *name)
{
    const char *hint = name[0] == '-' ? " (options go after the command, "
                                        "e.g. ckpt ls DIR --json)"
                                      : "";
    size_t cap = strlen(name) + strlen(hint) + sizeof("unknown command ''");
    char *text = cli_xmalloc(cap);
    int len = snprintf(text, cap, "unknown command '%s'%s", name, hint);
    fprintf(stderr, "ckpt: %s\n", cli_safe(text));
    print_usage(stderr);
    cli_json_usage_failure(text, len > 0 ? (size_t)len : 0, NULL);
    free(text);
    return CLI_USAGE;
}

static int dispatch(int argc, char **argv)
{
    const cli_command *c;
    if (argc < 2) {
        print_usage(stderr);
        return CLI_USAGE;
    }
    if (cli_is_help(argv[1])) {
        print_usage(stdout);
        return CLI_OK;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("ckpt %s\n", ckpt_version_string());
        return CLI_OK;
    }
    if (strcmp(argv[1], "help") == 0)
        return help(argc - 2, argv + 2);
    c = find_command(argv[1]);
    /* With --json a usage error prints the JSON failure document too.
     * "ckpt --json ls": no command named, "command": null (not "--json") */
    if (find_option(c, 1, argc, argv, is_json) < argc)
        cli_json_failures_on(c ? c->name : argv[1][0] == '-' ? "" : argv[1]);
    if (!c)
        return unknown_command(argv[1]);
    if (find_option(c, 2, argc, argv, cli_is_help) < argc) {
        cli_print_help(c, stdout);
        return CLI_OK;
    }
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
