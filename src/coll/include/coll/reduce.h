/*
 * coll/reduce.h — the collectives' element-wise reduction kernels and
 * 16-bit float conversions (reduce.c): pure functions on caller buffers,
 * thread-safe.  Exported to the tree because offcored's agent placement
 * of the collectives reduces its node's ranks with the same kernels
 * (bitwise the same results as the inline placement).
 */
#ifndef OC_COLL_REDUCE_H
#define OC_COLL_REDUCE_H

#include <offcore/coll.h>
#include <stddef.h>
#include <stdint.h>

/* How many oc_dtype_t and oc_op_t values there are (the public header
 * keeps them out of its enums: oc_dtype_count(), oc_op_count()). */
#define OC__DTYPE_COUNT (OC_FLOAT16 + 1)
#define OC__OP_COUNT    (OC_PROD + 1)

size_t oc__dtype_size(int dtype);
/* dst[i] = ((srcs[0][i] op srcs[1][i]) op srcs[2][i]) ...; a source may
 * be dst itself, else none may overlap it.  The _ref form is the scalar
 * oracle the tests check the fast one against, bit for bit. */
void oc__reduce_ordered(int dtype, int op, void *dst, const void *const *srcs,
                        uint32_t n, size_t count);
void oc__reduce_ordered_ref(int dtype, int op, void *dst,
                            const void *const *srcs, uint32_t n, size_t count);
void oc__reduce2(int dtype, int op, void *dst, const void *a, const void *b,
                 size_t count);
float oc__bf16_to_f32(uint16_t h);
uint16_t oc__f32_to_bf16(float f);
float oc__f16_to_f32(uint16_t h);
uint16_t oc__f32_to_f16(float f);


#endif
