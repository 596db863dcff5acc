/* tests/tools/cli_json.h - reading the `ckpt` tool's --json output in the
 * CLI tests: the one strict parse every test applies (a single document,
 * valid UTF-8, no raw terminal control in it) and a member lookup that
 * fails the test, naming the key, when the member is missing. */
#ifndef CKPT_TESTS_TOOLS_CLI_JSON_H
#define CKPT_TESTS_TOOLS_CLI_JSON_H

#include "test_util.h"

#include <json-c/json.h>

/* Whether the n bytes at p are valid UTF-8. */
int cli_valid_utf8(const unsigned char *p, size_t n);

/* `text` as one JSON document (owned by the caller: json_object_put).
 * Fails the test when it is not JSON, holds anything but white space
 * after the document, is not UTF-8, or holds a raw DEL, C1 control,
 * direction mark or line separator (the tool \u-escapes them). */
json_object *parse_json(const char *text);

/* Member `key` of object `o`; fails the test when there is none. */
json_object *jget(json_object *o, const char *key);

#endif
