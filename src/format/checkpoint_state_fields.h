/* format/checkpoint_state_fields.h - the fields of TensorFlow's
 * CheckpointState message (docs/format.md §8), shared by the state file's
 * parser (checkpoint_state_parse.c) and its writer (checkpoint_state.c). */
#ifndef CKPT_FORMAT_CHECKPOINT_STATE_FIELDS_H
#define CKPT_FORMAT_CHECKPOINT_STATE_FIELDS_H

/* Field numbers of CheckpointState. */
enum ckpt__state_field {
    CKPT__STATE_MODEL_PATH = 1,
    CKPT__STATE_ALL_PATHS = 2,
    CKPT__STATE_TIMESTAMPS = 3,
    CKPT__STATE_LAST_PRESERVED = 4,
    CKPT__STATE_FIELD_COUNT /* one past the last */
};

/* Each field's name in the text format, by number (entry 0 is NULL). */
extern const char *const ckpt__state_field_names[CKPT__STATE_FIELD_COUNT];

#endif
