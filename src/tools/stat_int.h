/*
 * stat_int.h — what the two halves of `offcore stat` share (private to
 * src/tools): stat.c fetches and parses an agent's /metrics into a
 * snapshot; stat_print.c prints snapshots as tables or JSON.
 */
#ifndef OC_TOOLS_STAT_INT_H
#define OC_TOOLS_STAT_INT_H

#include "metrics/metrics.h"

#include <stdint.h>
#include <stdio.h>

typedef struct {
    const char *metric;
    const char *sel; /* second label selecting the column, or NULL */
    const char *sel_val;
    const char *heading;
    const char *show; /* a label whose value is the cell (text, not a
                         number; never summed), or NULL */
} col_t;

typedef struct {
    const char *title;
    const char *key; /* the label whose values are the rows */
    const col_t *cols;
    size_t ncols;
    const char *key2; /* NULL, or a second key label: rows "KEY/KEY2" */
} view_t;

typedef struct {
    char *name;
    oc_prom_label_t *labels; /* as received (JSON escapes them itself) */
    char **shown;            /* [nlabels] values safe for a terminal */
    size_t nlabels;
    char *key; /* name and sorted labels: matches across scrapes */
    double value;
    uint64_t u64;
    int is_u64;
    oc_prom_type_t type;
    int used; /* shown in a table */
} smp_t;

typedef struct {
    smp_t *v;
    size_t n, cap;
    smp_t **by_key; /* sorted by key, for rates */
    double t;       /* CLOCK_MONOTONIC seconds when fetched */
    double wall;    /* CLOCK_REALTIME seconds */
} snap_t;

typedef struct {
    FILE *out;
    snap_t *cur; /* its samples' used flags are set as tables take them */
    const snap_t *prev; /* NULL: no rates */
    double watch;       /* refresh period, 0 without --watch */
} render_t;

/** Label @p name of @p s as received, or NULL. */
const char *oc__stat_label(const smp_t *s, const char *name);
/** The same, escaped for a terminal (stat.c: oc__stat_escape), or NULL. */
const char *oc__stat_shown(const smp_t *s, const char *name);
/** The sample of @p sn with key @p key, or NULL. */
const smp_t *oc__stat_find(const snap_t *sn, const char *key);
/** Exact integers stay exact; other values get 6 significant digits. */
void oc__stat_fmt_value(char *o, size_t n, int is_u64, uint64_t u, double v);
/** The tables; -1 out of memory. */
int oc__stat_print_tables(render_t *r, const char *url);
void oc__stat_print_json(FILE *out, const snap_t *sn, const char *url);
/** @p v with every control character (C0, DEL, C1) written as \xNN /
 *  \u00NN, so that an exporter cannot drive the operator's terminal;
 *  malloc'd, NULL when out of memory. */
char *oc__stat_escape(const char *v);

#endif
