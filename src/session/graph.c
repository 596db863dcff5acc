/* session/graph.c - the variable registry (TensorFlow's graph, reduced to
 * what checkpointing needs): named variables in registration order, the
 * global step, the frozen mark set after the last hook's begin (counted:
 * it holds while any session that froze it is open), the count of
 * monitored sessions over it (a graph freed before them is freed with the
 * last one), and what a monitored session and its hooks agree on while it
 * is created (checkpoint directory, basename, log). */
#include "session_internal.h"

#include <string.h>
#include <sys/stat.h>

#define GLOBAL_STEP_NAME "global_step"

int ckpt_graph_new(ckpt_graph **out)
{
    ckpt_graph *g;
    CKPT__CHECK_ARG(out);
    *out = NULL;
    g = ckpt__calloc(1, sizeof(*g));
    if (!g)
        return ckpt__error_oom();
    *out = g;
    return 0;
}

static void graph_dispose(ckpt_graph *g)
{
    for (size_t i = 0; i < g->num_vars; i++)
        ckpt__free((char *)g->vars[i].name);
    ckpt__free(g->vars);
    ckpt__name_index_dispose(&g->names);
    ckpt__graph_forget_agreement(g);
    ckpt__free(g);
}

void ckpt_graph_free(ckpt_graph *g)
{
    if (!g)
        return;
    if (g->sessions > 0) {
        /* A monitored session still runs over it: the last one freed
         * frees it. */
        g->free_requested = 1;
        return;
    }
    graph_dispose(g);
}

void ckpt__graph_hold(ckpt_graph *g, int hold)
{
    if (hold) {
        g->sessions++;
        return;
    }
    if (--g->sessions == 0 && g->free_requested)
        graph_dispose(g);
}

/* ---- the creation-time agreement ---------------------------------------- */

/* Length of `s` without trailing '/' (but "/" stays "/"). */
static size_t trimmed_len(const char *s)
{
    size_t n = strlen(s);
    while (n > 1 && s[n - 1] == '/')
        n--;
    return n;
}

/* Whether two directory paths name one directory: spelt alike once
 * repeated '/' and "." components are dropped ("m/a", "./m/a", "m//a/."),
 * or, where both exist, the same device and inode. A ".." is not taken
 * lexically ("link/.." need not be "."). */
static int same_dir_path(const char *a, const char *b)
{
    ckpt_buf x = CKPT_BUF_INIT, y = CKPT_BUF_INIT;
    struct stat sa, sb;
    int same = 0;
    if (!strstr(a, "..") && !strstr(b, "..")) {
        if (ckpt__path_normalize(&x, a) == 0 &&
            ckpt__path_normalize(&y, b) == 0)
            same = strcmp(x.ptr, y.ptr) == 0;
        else
            ckpt_error_clear(); /* no memory: compared by stat only */
    }
    ckpt_buf_dispose(&x);
    ckpt_buf_dispose(&y);
    if (!same && stat(a, &sa) == 0 && stat(b, &sb) == 0)
        same = S_ISDIR(sa.st_mode) && sa.st_dev == sb.st_dev &&
               sa.st_ino == sb.st_ino;
    return same;
}

static int agree(char **slot, const char **slot_from, const char *value,
                 const char *from, const char *what, int is_path)
{
    size_t n;
    if (!value)
        return 0;
    n = is_path ? trimmed_len(value) : strlen(value);
    if (*slot) {
        size_t m = is_path ? trimmed_len(*slot) : strlen(*slot);
        if (m == n && memcmp(*slot, value, n) == 0)
            return 0;
        if (is_path && same_dir_path(*slot, value))
            return 0;
        if (strcmp(from, *slot_from) == 0) /* two hooks' options, say */
            return ckpt__error(CKPT_EINVAL,
                               "%s '%s' disagrees with %s '%s', both from %s "
                               "(two of them on one graph): a graph has one "
                               "%s: set it in one place",
                               what, value, what, *slot, from, what);
        return ckpt__error(CKPT_EINVAL,
                           "%s '%s' of %s disagrees with %s '%s' of %s: set "
                           "it in one place",
                           what, value, from, what, *slot, *slot_from);
    }
    *slot = ckpt__strndup(value, n);
    if (!*slot)
        return ckpt__error_oom();
    *slot_from = from;
    return 0;
}

int ckpt__graph_agree_dir(ckpt_graph *g, const char *dir, const char *from)
{
    return agree(&g->agreed.dir, &g->agreed.dir_from, dir, from,
                 "checkpoint_dir", 1);
}

int ckpt__graph_agree_basename(ckpt_graph *g, const char *basename,
                               const char *from)
{
    return agree(&g->agreed.basename, &g->agreed.basename_from, basename, from,
                 "checkpoint basename", 0);
}

void ckpt__graph_note_scaffold_writer(ckpt_graph *g)
{
    g->agreed.scaffold_writer = 1;
}

void ckpt__graph_note_own_writer(ckpt_graph *g)
{
    g->agreed.own_writers++;
}

const ckpt__graph_agreement *ckpt__graph_agreement_of(const ckpt_graph *g)
{
    return &g->agreed;
}

void ckpt__graph_forget_agreement(ckpt_graph *g)
{
    ckpt__free(g->agreed.dir);
    ckpt__free(g->agreed.basename);
    memset(&g->agreed, 0, sizeof(g->agreed));
}

void ckpt__graph_set_session_defaults(ckpt_graph *g, const ckpt_fs *fs,
                                      const ckpt_clock *clock, ckpt_log_fn log,
                                      void *payload, int level)
{
    g->agreed.fs = fs;
    g->agreed.clock = clock;
    g->agreed.log = log;
    g->agreed.log_payload = payload;
    g->agreed.log_level = level;
}

static int check_var(const ckpt_var *var)
{
    int64_t bytes;
    int err;
    err = ckpt__check_var_name("graph", var->name);
    if (err < 0)
        return err;
    if (ckpt_dtype_size(var->dtype) == 0)
        return ckpt__error(CKPT_ENOTSUP,
                           "graph: variable '%s': dtype %d (%s) is not a "
                           "fixed-size type",
                           var->name, var->dtype,
                           ckpt__dtype_label(var->dtype));
    err = ckpt_tensor_byte_size(&bytes, var->dtype, &var->shape);
    if (err < 0) /* keeps the reason: the rank, the dim, the overflow */
        return ckpt__error_prefix(err, "graph: variable '%s'", var->name);
    if (!var->data && !var->read)
        return ckpt__error(CKPT_EINVAL,
                           "graph: variable '%s': neither data nor a read "
                           "callback",
                           var->name);
    return 0;
}

int ckpt_graph_add_var(ckpt_graph *g, const ckpt_var *var)
{
    char *name;
    int err;
    CKPT__CHECK_ARG(g);
    CKPT__CHECK_ARG(var);
    if (g->frozen)
        return ckpt__error(CKPT_ESTATE,
                           "graph: cannot add variable '%s': the graph is "
                           "frozen (after the hooks' begin)",
                           var->name ? var->name : "(null)");
    err = check_var(var);
    if (err < 0)
        return err;
    if (ckpt_graph_find(g, var->name))
        return ckpt__error(CKPT_EEXISTS, "graph: variable '%s' already exists",
                           var->name);
    if (ckpt__name_index_reserve(&g->names, g->num_vars + 1) < 0)
        return ckpt_error_last()->code;
    if (g->num_vars == g->cap_vars) {
        size_t cap = g->cap_vars ? g->cap_vars * 2 : 8;
        ckpt_var *vars = ckpt__realloc(g->vars, cap * sizeof(*vars));
        if (!vars)
            return ckpt__error_oom();
        g->vars = vars;
        g->cap_vars = cap;
    }
    name = ckpt__strdup(var->name);
    if (!name)
        return ckpt__error_oom();
    g->vars[g->num_vars] = *var;
    g->vars[g->num_vars].name = name;
    ckpt__name_index_put(&g->names, name, g->num_vars);
    g->num_vars++;
    return 0;
}

int ckpt_graph_create_global_step(ckpt_graph *g, int64_t *storage)
{
    ckpt_var var;
    int err;
    CKPT__CHECK_ARG(g);
    CKPT__CHECK_ARG(storage);
    if (g->global_step)
        return ckpt__error(CKPT_EEXISTS, "graph: a global step already exists");
    if (ckpt_graph_find(g, GLOBAL_STEP_NAME))
        return ckpt__error(CKPT_EEXISTS,
                           "graph: variable '%s' was added with "
                           "ckpt_graph_add_var, which does not make it the "
                           "global step: create it with "
                           "ckpt_graph_create_global_step only",
                           GLOBAL_STEP_NAME);
    memset(&var, 0, sizeof(var));
    var.name = GLOBAL_STEP_NAME;
    var.dtype = CKPT_DT_INT64;
    var.shape.rank = 0;
    var.data = storage;
    err = ckpt_graph_add_var(g, &var);
    if (err < 0)
        return err;
    g->global_step = storage;
    return 0;
}

int ckpt__graph_need_global_step(const ckpt_graph *g, const char *who)
{
    if (g && g->global_step)
        return 0;
    if (g && ckpt_graph_find(g, GLOBAL_STEP_NAME))
        return ckpt__error(CKPT_ESTATE,
                           "%s: the graph has no global step: its variable "
                           "'%s' was added with ckpt_graph_add_var; create it "
                           "with ckpt_graph_create_global_step instead",
                           who, GLOBAL_STEP_NAME);
    return ckpt__error(CKPT_ESTATE,
                       "%s: the graph has no global step (create one with "
                       "ckpt_graph_create_global_step)",
                       who);
}

int64_t *ckpt_graph_global_step(const ckpt_graph *g)
{
    return g ? g->global_step : NULL;
}

size_t ckpt_graph_num_vars(const ckpt_graph *g)
{
    return g ? g->num_vars : 0;
}

const ckpt_var *ckpt_graph_var(const ckpt_graph *g, size_t i)
{
    if (!g || i >= g->num_vars)
        return NULL;
    return &g->vars[i];
}

const ckpt_var *ckpt_graph_find(const ckpt_graph *g, const char *name)
{
    if (!g || !name)
        return NULL;
    {
        size_t i = ckpt__name_index_find(&g->names, name);
        return i < g->num_vars ? &g->vars[i] : NULL;
    }
}

int ckpt_graph_is_frozen(const ckpt_graph *g)
{
    return g ? g->frozen > 0 : 0;
}

void ckpt__graph_set_frozen(ckpt_graph *g, int frozen)
{
    g->frozen += frozen ? 1 : -1;
}
