/*
 * util/bytes.h — the one byte-order code of the tree: loads and stores of
 * 16-, 32- and 64-bit values in little-endian (our wire formats, NVMe) and
 * big-endian (network) order, at any alignment.  Each is a memcpy and, when
 * the host's order differs, a byte swap: one instruction either way.
 * Everything that reads or writes a multi-byte field of a buffer calls
 * these (tests/primitives.py fails on a second definition).
 *
 * Threading: pure functions.
 */
#ifndef OC_UTIL_BYTES_H
#define OC_UTIL_BYTES_H

#include <stdint.h>
#include <string.h>

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define OC__HOST_LE 1
#else
#define OC__HOST_LE 0
#endif

/* little-endian */
static inline uint16_t oc__load_le16(const void *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof(v));
    return !OC__HOST_LE ? (uint16_t)__builtin_bswap16(v) : v;
}
static inline void oc__store_le16(void *p, uint16_t v)
{
    v = !OC__HOST_LE ? (uint16_t)__builtin_bswap16(v) : v;
    memcpy(p, &v, sizeof(v));
}
static inline uint32_t oc__load_le32(const void *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof(v));
    return !OC__HOST_LE ? (uint32_t)__builtin_bswap32(v) : v;
}
static inline void oc__store_le32(void *p, uint32_t v)
{
    v = !OC__HOST_LE ? (uint32_t)__builtin_bswap32(v) : v;
    memcpy(p, &v, sizeof(v));
}
static inline uint64_t oc__load_le64(const void *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof(v));
    return !OC__HOST_LE ? (uint64_t)__builtin_bswap64(v) : v;
}
static inline void oc__store_le64(void *p, uint64_t v)
{
    v = !OC__HOST_LE ? (uint64_t)__builtin_bswap64(v) : v;
    memcpy(p, &v, sizeof(v));
}

/* big-endian (network order) */
static inline uint16_t oc__load_be16(const void *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof(v));
    return OC__HOST_LE ? (uint16_t)__builtin_bswap16(v) : v;
}
static inline void oc__store_be16(void *p, uint16_t v)
{
    v = OC__HOST_LE ? (uint16_t)__builtin_bswap16(v) : v;
    memcpy(p, &v, sizeof(v));
}
static inline uint32_t oc__load_be32(const void *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof(v));
    return OC__HOST_LE ? (uint32_t)__builtin_bswap32(v) : v;
}
static inline void oc__store_be32(void *p, uint32_t v)
{
    v = OC__HOST_LE ? (uint32_t)__builtin_bswap32(v) : v;
    memcpy(p, &v, sizeof(v));
}
static inline uint64_t oc__load_be64(const void *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof(v));
    return OC__HOST_LE ? (uint64_t)__builtin_bswap64(v) : v;
}
static inline void oc__store_be64(void *p, uint64_t v)
{
    v = OC__HOST_LE ? (uint64_t)__builtin_bswap64(v) : v;
    memcpy(p, &v, sizeof(v));
}

#endif /* OC_UTIL_BYTES_H */
