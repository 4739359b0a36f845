/*
 * test_cores.c — oc__router_cpus_shared (src/agent/router/cores.c), which decides
 * whether offcored's router gives its core up for a local rank: a rank
 * pinned to another CPU than the caller's does not share it, one pinned
 * to the same does, and what cannot be read (pid 0, a pid that is gone)
 * counts as sharing, the safe side (the router then yields as before).
 * Needs 2 CPUs for the "not shared" case (skipped otherwise).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/router/router.h"

/* A child pinned to @p cpu, waiting to be killed; its pid. */
static pid_t pinned_child(int cpu)
{
    int fds[2];
    char c;
    pid_t pid;

    assert_int_equal(pipe(fds), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        cpu_set_t s;
        CPU_ZERO(&s);
        CPU_SET(cpu, &s);
        if (sched_setaffinity(0, sizeof(s), &s) != 0)
            _exit(1);
        (void)!write(fds[1], "x", 1);
        pause();
        _exit(0);
    }
    close(fds[1]);
    assert_int_equal(read(fds[0], &c, 1), 1); /* pinned */
    close(fds[0]);
    return pid;
}

static void reap(pid_t pid)
{
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

static void test_unknown_counts_as_shared(void **state)
{
    pid_t gone;

    (void)state;
    assert_int_equal(oc__router_cpus_shared(0), 1);
    assert_int_equal(oc__router_cpus_shared((uint32_t)getpid()), 1);
    gone = fork();
    assert_true(gone >= 0);
    if (gone == 0)
        _exit(0);
    waitpid(gone, NULL, 0);
    assert_int_equal(oc__router_cpus_shared((uint32_t)gone), 1);
}

static void test_other_cpu_not_shared(void **state)
{
    cpu_set_t all, me;
    int a = -1, b = -1;
    pid_t p;

    (void)state;
    assert_int_equal(sched_getaffinity(0, sizeof(all), &all), 0);
    for (int i = 0; i < CPU_SETSIZE && b < 0; i++)
        if (CPU_ISSET(i, &all)) {
            if (a < 0)
                a = i;
            else
                b = i;
        }
    if (b < 0)
        skip(); /* one CPU: every rank shares it */
    CPU_ZERO(&me);
    CPU_SET(a, &me);
    assert_int_equal(sched_setaffinity(0, sizeof(me), &me), 0);
    p = pinned_child(b);
    assert_int_equal(oc__router_cpus_shared((uint32_t)p), 0);
    reap(p);
    p = pinned_child(a);
    assert_int_equal(oc__router_cpus_shared((uint32_t)p), 1);
    reap(p);
    assert_int_equal(sched_setaffinity(0, sizeof(all), &all), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unknown_counts_as_shared),
        cmocka_unit_test(test_other_cpu_not_shared),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
