/*
 * median.h — the median the C benchmarks report (the .c files of
 * bench/): the runs' values sorted in place, the middle one (the mean of
 * the two middle ones for an even count).
 */
#ifndef OC_BENCH_MEDIAN_H
#define OC_BENCH_MEDIAN_H

#include <stdlib.h>

/** qsort's order of doubles, ascending. */
static inline int oc_bench_cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/** The median of @p v[0..n) (n > 0); sorts @p v. */
static inline double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), oc_bench_cmp_d);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#endif
