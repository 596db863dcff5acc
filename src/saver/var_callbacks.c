/* saver/var_callbacks.c - calling a variable's read or write callback
 * (ckpt_var.read, ckpt_var.write) over its whole value, for the savers
 * (snapshots, writing, restoring; the MPI saver's restore too) and the
 * session's step context: the last error cleared first, so that a message
 * the callback sets is told apart from an older one, and a non-zero
 * return reported as CKPT_EUSER naming the variable
 * (ckpt__error_callback). */
#include "saver_internal.h"

int ckpt__var_read(const ckpt_var *v, const char *name, void *dst, size_t bytes)
{
    int rc;
    ckpt_error_clear();
    rc = v->read(dst, 0, bytes, v->payload);
    if (rc != 0)
        return ckpt__error_callback(rc, "variable '%s': read callback failed",
                                    name);
    return 0;
}

int ckpt__var_write(const ckpt_var *v, const char *name, const void *src,
                    size_t bytes)
{
    int rc;
    ckpt_error_clear();
    rc = v->write(src, 0, bytes, v->payload);
    if (rc != 0)
        return ckpt__error_callback(rc, "variable '%s': write callback failed",
                                    name);
    return 0;
}
