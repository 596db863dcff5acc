/* tests/format/python_repr_cases.h - doubles and the text Python's repr()
 * gives each, which the state file's writer must print for a timestamp:
 * test_checkpoint_state.c holds the writer to this table and
 * test_state_doubles.c its reference (every case in both). */
#ifndef CKPT_TESTS_FORMAT_PYTHON_REPR_CASES_H
#define CKPT_TESTS_FORMAT_PYTHON_REPR_CASES_H

#include <math.h>

static const struct python_repr_case {
    double v;
    const char *want;
} python_repr_cases[] = {
    {1673735799.685766, "1673735799.685766"},
    {1e-05, "1e-05"},
    {0.0001, "0.0001"},
    {1673735591.0, "1673735591.0"},
    {1e16, "1e+16"},
    {1e15, "1000000000000000.0"},
    {0.1, "0.1"},
    {1.5e300, "1.5e+300"},
    {5e-324, "5e-324"},
    {-2.5, "-2.5"},
    {123456789.123, "123456789.123"},
    {100.0, "100.0"},
    {1.7976931348623157e308, "1.7976931348623157e+308"},
    {2.0 / 3.0, "0.6666666666666666"},
    {-0.0, "-0.0"},
    {0.0, "0.0"},
    {1e22, "1e+22"},
    {1.0, "1.0"},
    {12345678901234567890.0, "1.2345678901234567e+19"},
    {0.001234, "0.001234"},
    {9.999999999999999e-5, "9.999999999999999e-05"},
    {INFINITY, "inf"},
    {-INFINITY, "-inf"},
    {NAN, "nan"},
};

#endif
