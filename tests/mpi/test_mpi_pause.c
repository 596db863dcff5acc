/* tests/mpi/test_mpi_pause.c - the schedule of the MPI polling wait
 * (ckpt__mpi_pause_ns, src/mpi/mpi_collective.c): the first rounds only
 * yield, later ones sleep an eighth of the time waited so far, never less
 * than 10 us nor more than 1 ms. Values at and around both bounds; no MPI
 * call is made (no MPI_Init), so the program runs as a singleton. */
#include "test_util.h"

#include "mpi/mpi_internal.h"

#include <math.h>
#include <stdlib.h>

typedef struct pause_case {
    long round;
    double waited_s;
    long want_ns;
} pause_case;

static void test_pause_schedule(void **state)
{
    static const pause_case cases[] = {
        /* the first 200 rounds yield, however long the wait */
        {0, 0.0, 0},
        {0, 10.0, 0},
        {199, 1e-3, 0},
        {199, 3600.0, 0},
        /* from round 200 on: waited / 8, at least 10 us */
        {200, 0.0, 10000},
        {200, -1.0, 10000}, /* a clock that went back: the shortest */
        {200, 8e-5, 10000}, /* exactly the lower bound */
        {200, 7.9e-5, 10000},
        {200, 8.8e-5, 11000},
        {200, 4e-3, 500000},
        {201, 8e-3, 1000000}, /* exactly the upper bound */
        {201, 7.2e-3, 900000},
        {201, 8.8e-3, 1000000},
        {100000, 3600.0, 1000000}, /* a long wait: at most 1 ms */
    };
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        long got = ckpt__mpi_pause_ns(cases[i].round, cases[i].waited_s);
        /* the division and the conversion may lose a nanosecond */
        if (labs(got - cases[i].want_ns) > 1)
            fail_msg("case %zu: round %ld, waited %g s: %ld ns, want %ld", i,
                     cases[i].round, cases[i].waited_s, got, cases[i].want_ns);
    }
    assert_int_equal(ckpt__mpi_pause_ns(200, NAN), CKPT__MPI_PAUSE_MIN_NS);
    assert_int_equal(CKPT__MPI_PAUSE_MIN_NS, 10000);
    assert_int_equal(CKPT__MPI_PAUSE_MAX_NS, 1000000);
    assert_int_equal(CKPT__MPI_PAUSE_YIELDS, 200);
}

/* Within the clamp the sleep grows with the wait, one nanosecond per 8. */
static void test_pause_grows_with_the_wait(void **state)
{
    long last = 0;
    (void)state;
    for (double w = 8e-5; w <= 8e-3; w += 1e-4) {
        long got = ckpt__mpi_pause_ns(500, w);
        assert_true(got >= last);
        assert_true(labs(got - (long)(w / 8 * 1e9)) <= 1);
        last = got;
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pause_schedule),
        cmocka_unit_test(test_pause_grows_with_the_wait),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
