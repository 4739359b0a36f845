/*
 * jobs.h — offcored's table of jobs (see jobs.c).  Used by the control
 * thread only.
 */
#ifndef OC_AGENT_JOBS_H
#define OC_AGENT_JOBS_H

#include <offcore/offcore.h>
#include <stdint.h>

#define OC_AJOB_UNKNOWN UINT32_MAX

struct oc_aconn;

/* One report in a termination wave. */
typedef struct {
    int      valid;
    uint32_t epoch, round;
    uint64_t sent, delivered;
} oc_wave_slot_t;

typedef struct oc_ajob {
    uint32_t          id;
    uint32_t          size;
    uint32_t          nnodes;
    uint32_t         *node_of;     /* [size], OC_AJOB_UNKNOWN until told */
    uint32_t          nknown;
    uint32_t         *node_ranks;  /* [nnodes] ranks known on each node */
    struct oc_aconn **local;       /* [size] connection of a local rank */
    uint32_t          nlocal;      /* local ranks connected (authenticated) */
    int               ready;       /* wire-up complete, routers know it */
    int               failed;
    /* termination waves: tree over the job's nodes */
    uint32_t          tree_nodes;
    uint32_t          parent;      /* node, or OC_AJOB_UNKNOWN at the root */
    uint32_t          children[4]; /* nodes */
    uint32_t          nchildren;
    uint32_t         *child_slot;  /* scratch */
    oc_wave_slot_t    child[4];
    uint32_t          epoch, round;
    int               sent_up;
    int               have_prev;
    uint64_t          prev_sent, prev_delivered;
    uint32_t          reported;    /* local ranks reported this round */
    uint64_t          sum_sent, sum_delivered;
    oc_wave_slot_t    down;        /* verdict from the parent */
    uint32_t          down_verdict;
    struct oc_ajob   *next;
} oc_ajob_t;

typedef struct {
    oc_ajob_t *head;
} oc_ajobs_t;

oc_ajob_t *oc__ajob_find(oc_ajobs_t *t, uint32_t id);
/** Find or create; OC_ERR_INVALID_PARAM in *st when the size disagrees. */
oc_ajob_t *oc__ajob_get(oc_ajobs_t *t, uint32_t id, uint32_t size,
                       uint32_t nnodes, oc_status_t *st);
void oc__ajob_remove(oc_ajobs_t *t, oc_ajob_t *j);
void oc__ajob_free(oc_ajob_t *j);
/** Record that @p rank runs on @p node. */
oc_status_t oc__ajob_place(oc_ajob_t *j, uint32_t rank, uint32_t node);
/** Compute this node's place in the job's wave tree. */
void oc__ajob_tree(oc_ajob_t *j, uint32_t me);
int oc__ajob_is_child(const oc_ajob_t *j, uint32_t node, uint32_t *idx);

#endif
