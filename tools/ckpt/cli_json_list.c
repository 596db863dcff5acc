/* tools/ckpt/cli_json_list.c - a JSON list of a document that is printed
 * only when the command is done (diff's differences, verify's damaged and
 * unchecked tensors: an error on the way must leave room for the failure
 * document instead), kept as its printed text: each item is serialized as
 * it is added, so a list of 100,000 items costs their text, not a json-c
 * object each (about 1.4 KiB apiece). Also the top-level members of such a
 * document, printed one at a time. */
#include "cli.h"

#include <stdlib.h>

void cli_json_list_open(cli_json_list *l)
{
    l->text = NULL;
    l->len = 0;
    l->n = 0;
    l->f = open_memstream(&l->text, &l->len);
    if (!l->f)
        cli_out_of_memory();
}

void cli_json_list_add(cli_json_list *l, json_object *item)
{
    fputs(l->n++ ? ",\n    " : "\n    ", l->f);
    cli_put_json_to(l->f, item, 4);
}

void cli_json_list_put(cli_json_list *l)
{
    if (fflush(l->f) != 0)
        cli_out_of_memory();
    fputc('[', stdout);
    fwrite(l->text, 1, l->len, stdout);
    fputs("\n  ]", stdout);
}

void cli_json_list_dispose(cli_json_list *l)
{
    if (l->f)
        fclose(l->f);
    free(l->text);
    l->f = NULL;
    l->text = NULL;
}

void cli_put_member(const char *sep, const char *key, json_object *value)
{
    printf("%s  \"%s\": ", sep, key);
    cli_put_json(value, 2);
}
