/*
 * jobs.c — what offcored knows of each job: which node every rank is on,
 * which ranks are local, whether wire-up is complete, and the state of
 * its termination wave.  Pure bookkeeping: no I/O (agent.c does that).
 */
#include "jobs.h"

#include <stdlib.h>
#include <string.h>

oc_ajob_t *oc__ajob_find(oc_ajobs_t *t, uint32_t id)
{
    for (oc_ajob_t *j = t->head; j != NULL; j = j->next)
        if (j->id == id)
            return j;
    return NULL;
}

oc_ajob_t *oc__ajob_get(oc_ajobs_t *t, uint32_t id, uint32_t size,
                       uint32_t nnodes, oc_status_t *st)
{
    oc_ajob_t *j = oc__ajob_find(t, id);
    if (j != NULL) {
        *st = j->size == size ? OC_OK : OC_ERR_INVALID_PARAM;
        return *st == OC_OK ? j : NULL;
    }
    if (size == 0 || size > (1u << 24) - 2) {
        *st = OC_ERR_INVALID_PARAM;
        return NULL;
    }
    j = calloc(1, sizeof(*j));
    if (j == NULL)
        goto nomem;
    j->node_of = malloc(sizeof(*j->node_of) * size);
    j->local = calloc(size, sizeof(*j->local));
    j->node_ranks = calloc(nnodes, sizeof(*j->node_ranks));
    j->child_slot = calloc(nnodes, sizeof(*j->child_slot));
    if (j->node_of == NULL || j->local == NULL || j->node_ranks == NULL ||
        j->child_slot == NULL) {
        oc__ajob_free(j);
        goto nomem;
    }
    for (uint32_t i = 0; i < size; i++)
        j->node_of[i] = OC_AJOB_UNKNOWN;
    j->id = id;
    j->size = size;
    j->nnodes = nnodes;
    j->next = t->head;
    t->head = j;
    *st = OC_OK;
    return j;
nomem:
    *st = OC_ERR_NO_MEMORY;
    return NULL;
}

void oc__ajob_free(oc_ajob_t *j)
{
    if (j == NULL)
        return;
    free(j->node_of);
    free(j->local);
    free(j->node_ranks);
    free(j->child_slot);
    free(j);
}

void oc__ajob_remove(oc_ajobs_t *t, oc_ajob_t *j)
{
    for (oc_ajob_t **pp = &t->head; *pp != NULL; pp = &(*pp)->next)
        if (*pp == j) {
            *pp = j->next;
            oc__ajob_free(j);
            return;
        }
}

oc_status_t oc__ajob_place(oc_ajob_t *j, uint32_t rank, uint32_t node)
{
    if (rank >= j->size || node >= j->nnodes)
        return OC_ERR_RANK_RANGE;
    if (j->node_of[rank] == node)
        return OC_OK; /* told twice: fine */
    if (j->node_of[rank] != OC_AJOB_UNKNOWN)
        return OC_ERR_INVALID_PARAM; /* a rank on two nodes */
    j->node_of[rank] = node;
    j->node_ranks[node]++;
    j->nknown++;
    return OC_OK;
}

/* The wave tree is over the job's nodes in index order: position k's
 * parent is (k-1)/4.  Computed once at wire-up. */
void oc__ajob_tree(oc_ajob_t *j, uint32_t me)
{
    uint32_t k = 0, pos = 0, n = 0;
    uint32_t *order = j->child_slot; /* reuse as scratch: node by position */

    for (uint32_t node = 0; node < j->nnodes; node++)
        if (j->node_ranks[node] > 0) {
            if (node == me)
                pos = n;
            order[n++] = node;
        }
    j->tree_nodes = n;
    j->parent = pos == 0 ? OC_AJOB_UNKNOWN : order[(pos - 1) / 4];
    j->nchildren = 0;
    for (k = 4 * pos + 1; k <= 4 * pos + 4 && k < n; k++)
        j->children[j->nchildren++] = order[k];
    memset(j->child_slot, 0, sizeof(*j->child_slot) * j->nnodes);
}

int oc__ajob_is_child(const oc_ajob_t *j, uint32_t node, uint32_t *idx)
{
    for (uint32_t i = 0; i < j->nchildren; i++)
        if (j->children[i] == node) {
            *idx = i;
            return 1;
        }
    return 0;
}
