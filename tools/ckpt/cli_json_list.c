/* tools/ckpt/cli_json_list.c - a JSON list of a document that is printed
 * only when the list is complete (diff's differences, verify's damaged and
 * unchecked tensors, inspect's values of a tensor: an error on the way
 * must leave room for the failure document or the tensor's "error"
 * instead), kept as its printed text: each item is serialized as it is
 * added, so a list of 100,000 items costs their text, not a json-c object
 * each (about 1.4 KiB a difference, 120 bytes a float), held by cli_held
 * (past 8 MiB in a temporary file, not in memory). Also the members
 * of such a document's objects, printed one at a time. */
#include "cli.h"

#include <stdlib.h>

void cli_json_list_open(cli_json_list *l, size_t indent)
{
    l->indent = indent;
    l->n = 0;
    l->text = cli_held_open();
}

void cli_json_list_add(cli_json_list *l, json_object *item)
{
    FILE *f = cli_held_stream(l->text);
    fprintf(f, "%s\n%*s", l->n++ ? "," : "", (int)l->indent + 2, "");
    cli_put_json_to(f, item, l->indent + 2);
}

void cli_json_list_put(cli_json_list *l)
{
    fputc('[', stdout);
    cli_held_put(l->text, stdout);
    printf("\n%*s]", (int)l->indent, "");
}

void cli_json_list_dispose(cli_json_list *l)
{
    cli_held_dispose(l->text);
    l->text = NULL;
}

void cli_put_member(const char *sep, const char *key, json_object *value)
{
    cli_put_member_at(sep, 2, key, value);
}

void cli_put_member_at(const char *sep, size_t indent, const char *key,
                       json_object *value)
{
    json_object *k = cli_json_string(key);
    printf("%s%*s", sep, (int)indent, "");
    cli_put_json(k, 0);
    fputs(": ", stdout);
    cli_put_json(value, indent);
}
