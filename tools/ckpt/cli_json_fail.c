/* tools/ckpt/cli_json_fail.c - the JSON document of a `--json` run that
 * fails: once a command has parsed `--json`, every message it prints on
 * stderr is also kept, and when the run ends with a non-zero status without
 * having printed its own document, {"command", "ok": false, "error", ...}
 * is printed on stdout instead, so that a script reading stdout always
 * gets one JSON document; and the end of every run, where output that
 * could not be written becomes exit status 2. */
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *json_command; /* NULL: not a --json run */
static int json_printed;
static char *messages; /* the messages, one a line (malloc'd) */
static size_t messages_len, messages_cap;
static json_object *details; /* fields the command added */

void cli_json_failures_on(const char *cmd)
{
    json_command = cmd;
}

void cli_json_parsed(const cli_command *c, int json)
{
    json_command = json ? c->name : NULL;
}

void cli_json_failure_note(const char *message, size_t n)
{
    size_t need;
    if (!json_command || n > SIZE_MAX / 2 - 2 - messages_len)
        return;
    need = messages_len + n + 2;
    if (need > messages_cap) { /* doubling: many messages cost linear time */
        size_t cap = messages_cap ? messages_cap : 256;
        char *grown;
        while (cap < need)
            cap *= 2;
        grown = realloc(messages, cap);
        if (!grown)
            return; /* the messages kept so far still say what failed */
        messages = grown;
        messages_cap = cap;
    }
    if (messages_len > 0)
        messages[messages_len++] = '\n';
    memcpy(messages + messages_len, message, n);
    messages_len += n;
    messages[messages_len] = '\0';
}

void cli_json_usage_failure(const char *message, size_t n, const char *synopsis)
{
    char usage[512];
    if (!json_command)
        return;
    cli_json_failure_note(message, n);
    snprintf(usage, sizeof(usage), "ckpt %s",
             synopsis ? synopsis : "<command> [arguments]");
    cli_json_failure_detail("usage", cli_json_string(usage));
}

void cli_json_failure_detail(const char *key, json_object *value)
{
    if (!json_command) {
        json_object_put(value);
        return;
    }
    if (!details)
        details = json_object_new_object();
    json_object_object_add(details, key, value);
}

void cli_json_printed(void)
{
    json_printed = 1;
}

/* Output that could not be written (a full disk, a closed descriptor) is
 * a failure like unreadable input: said on stderr, exit status 2. */
static int stdout_written(int rc)
{
    int failed = fflush(stdout) != 0;
    int err = errno;
    if (!failed && !ferror(stdout))
        return rc;
    fprintf(stderr, "ckpt: write error on standard output: %s\n",
            failed ? strerror(err) : "the output is incomplete");
    return rc == CLI_OK || rc == CLI_FOUND ? CLI_USAGE : rc;
}

int cli_finish(int rc)
{
    if (json_command && rc != CLI_OK && !json_printed) {
        json_object *root = json_object_new_object();
        json_object_object_add(
            root, "command",
            json_command[0] ? json_object_new_string(json_command) : NULL);
        json_object_object_add(root, "ok", json_object_new_boolean(0));
        json_object_object_add(
            root, "error",
            cli_json_bytes(messages ? messages : "", messages_len));
        if (details) {
            json_object_object_foreach(details, key, value)
            {
                json_object_object_add(root, key, json_object_get(value));
            }
        }
        cli_print_json(root);
        json_object_put(root);
    }
    json_object_put(details);
    details = NULL;
    free(messages);
    messages = NULL;
    messages_len = 0;
    messages_cap = 0;
    json_command = NULL;
    return stdout_written(rc);
}

_Noreturn void cli_exit(int rc)
{
    exit(cli_finish(rc));
}

_Noreturn void cli_out_of_memory(void)
{
    static const char oom[] = "out of memory";
    fprintf(stderr, "ckpt: %s\n", oom);
    cli_json_failure_note(oom, sizeof(oom) - 1);
    cli_exit(CLI_USAGE);
}
