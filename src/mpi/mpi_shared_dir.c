/* mpi/mpi_shared_dir.c - the end of ckpt_mpi_saver_open: every rank must
 * have opened the one directory all ranks share, since rank 0 renames
 * every rank's data file into its own. Paths cannot say so (a relative
 * path, another mount point, a symbolic link), so rank 0 makes an empty
 * file there and every rank looks for it under its own path; then the
 * ranks agree on the outcome and rank 0 removes the file. Rank 0 sends its
 * options with the file's name, for every rank to compare with its own
 * (mpi_options_agree.c). The file is
 * named as a save's temporary file ("<basename>.ranks.tempstate<hex>"), so
 * the next open removes it if the job dies between the two. A directory
 * rank 0 cannot write to (opened to restore only) is not checked. */
#include "io/fs_internal.h"
#include "mpi_internal.h"

#include <stdio.h>
#include <string.h>

/* What rank 0 tells the others: the file's name in the directory (empty:
 * nothing to check), its own path, for the message, and its options. */
typedef struct shared_dir_note {
    char marker[256];
    char dir0[768];
    ckpt__mpi_agreed opts;
} shared_dir_note;

/* Rank 0: make the file, its name into note->marker (left empty when the
 * directory cannot be written: not checked). */
static void make_marker(ckpt_mpi_saver *s, const char *dir,
                        shared_dir_note *note)
{
    ckpt_buf final_path = CKPT_BUF_INIT, tmp = CKPT_BUF_INIT;
    ckpt_file *f = NULL;
    ckpt__saved_error kept;
    ckpt__error_save(&kept);
    if (ckpt__path_join(&final_path, dir, s->basename) == 0 &&
        ckpt__buf_puts(&final_path, ".ranks") == 0 &&
        ckpt__fs_create_temp(s->fs, &f, &tmp, final_path.ptr, "tempstate", 0) ==
            0) {
        const char *name = strrchr(tmp.ptr, '/');
        name = name ? name + 1 : tmp.ptr;
        if (ckpt__fs_close(s->fs, f, tmp.ptr) == 0 &&
            strlen(name) < sizeof(note->marker))
            snprintf(note->marker, sizeof(note->marker), "%s", name);
        else
            ckpt__fs_remove_quiet(s->fs, tmp.ptr);
    }
    ckpt__error_restore(&kept);
    ckpt_buf_dispose(&final_path);
    ckpt_buf_dispose(&tmp);
}

/* Any rank: 0 when rank 0's file is in this rank's `dir`. */
static int see_marker(ckpt_mpi_saver *s, const char *dir,
                      const shared_dir_note *note)
{
    ckpt_buf path = CKPT_BUF_INIT;
    int listed;
    int err = ckpt__path_join(&path, dir, note->marker);
    if (err == 0) {
        err = ckpt__fs_exists(s->fs, path.ptr);
        if (err == 0 && ckpt__fs_exists(s->fs, dir) == 0)
            err = ckpt__error(
                CKPT_ENOTFOUND,
                "mpi saver %s: no such directory on this rank (rank 0 opened "
                "%s); open the saver on one directory every rank shares",
                dir, note->dir0);
        else if (err == 0 &&
                 (listed = ckpt__saver_check_dir(s->fs, dir, s->basename)) < 0)
            err = listed == CKPT_ENOTFOUND
                      ? ckpt__error(CKPT_ENOTFOUND,
                                    "mpi saver %s: not a directory on this "
                                    "rank (rank 0 opened %s); open the saver "
                                    "on one directory every rank shares",
                                    dir, note->dir0)
                      : ckpt__error_prefix(listed,
                                           "mpi saver %s: on this rank (rank "
                                           "0 opened %s)",
                                           dir, note->dir0);
        else if (err == 0)
            err = ckpt__error(
                CKPT_EINVAL,
                "mpi saver %s: this is not rank 0's checkpoint directory "
                "(%s): %s, which rank 0 made there, is not here; open the "
                "saver on one directory every rank shares",
                dir, note->dir0, note->marker);
        else if (err == 1)
            err = 0;
    }
    ckpt_buf_dispose(&path);
    return err;
}

int ckpt__mpi_open_agree(ckpt_mpi_saver *s, const char *dir, int err)
{
    shared_dir_note note;
    MPI_Request req;
    memset(&note, 0, sizeof(note));
    if (s->size > 1) {
        if (s->rank == 0 && err == 0) {
            make_marker(s, dir, &note);
            snprintf(note.dir0, sizeof(note.dir0), "%s", dir);
            ckpt__mpi_options_pack(s, &note.opts);
        }
        MPI_Ibcast(&note, (int)sizeof(note), MPI_BYTE, 0, s->comm_ctl, &req);
        ckpt__mpi_wait_all(s, &req, 1, "opening the saver");
        if (err == 0 && note.marker[0])
            err = see_marker(s, dir, &note);
        if (err == 0)
            err = ckpt__mpi_options_compare(s, &note.opts);
    }
    err = ckpt__mpi_agree(s, s->comm_ctl, err, "opening the saver");
    if (s->rank == 0 && note.marker[0]) { /* every rank has looked */
        ckpt_buf path = CKPT_BUF_INIT;
        if (ckpt__path_join(&path, dir, note.marker) == 0)
            ckpt__fs_remove_quiet(s->fs, path.ptr);
        ckpt_buf_dispose(&path);
    }
    return err;
}
