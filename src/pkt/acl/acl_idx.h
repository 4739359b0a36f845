/*
 * acl_idx.h — the classifier's index from rule ids to positions (acl.c's
 * rules by id and each state's id -> tree rank, acl6.c's rules by id):
 * open addressing over a power of two of uint32_t slots holding position
 * + 1 (0: empty), linear probing, backward-shift deletion (no tombstones,
 * so a table that churns never fills with them).  The caller owns the
 * slots, keeps at least one empty, and says which id a position holds
 * (@p id_of: a static function, inlined at each use).
 */
#ifndef OC_ACL_IDX_H
#define OC_ACL_IDX_H

#include <stddef.h>
#include <stdint.h>

typedef uint32_t (*oc__acl_idx_id_fn)(const void *ctx, uint32_t pos);

static inline size_t oc__acl_idx_slot(uint32_t id, size_t mask)
{
    return (size_t)((id * 0x9e3779b1u) >> 7) & mask;
}

/** The slot holding @p id, or SIZE_MAX. */
static inline size_t oc__acl_idx_find(const uint32_t *slots, size_t mask,
                                      uint32_t id, oc__acl_idx_id_fn id_of,
                                      const void *ctx)
{
    for (size_t s = oc__acl_idx_slot(id, mask);; s = (s + 1) & mask) {
        uint32_t v = slots[s];
        if (v == 0)
            return SIZE_MAX;
        if (id_of(ctx, v - 1) == id)
            return s;
    }
}

static inline void oc__acl_idx_put(uint32_t *slots, size_t mask, uint32_t id,
                                   uint32_t pos)
{
    size_t s = oc__acl_idx_slot(id, mask);
    while (slots[s] != 0)
        s = (s + 1) & mask;
    slots[s] = pos + 1;
}

/** Empty slot @p s, moving back the entries its probe chain displaced. */
static inline void oc__acl_idx_del(uint32_t *slots, size_t mask, size_t s,
                                   oc__acl_idx_id_fn id_of, const void *ctx)
{
    size_t j = s;
    slots[s] = 0;
    for (;;) {
        size_t home;
        j = (j + 1) & mask;
        if (slots[j] == 0)
            return;
        home = oc__acl_idx_slot(id_of(ctx, slots[j] - 1), mask);
        if (((j - home) & mask) >= ((j - s) & mask)) {
            slots[s] = slots[j];
            slots[j] = 0;
            s = j;
        }
    }
}

#endif
