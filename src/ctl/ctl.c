/*
 * ctl.c — the control message codec.  One table describes every type as a
 * list of fields; encode and decode walk it, so a new type is a table row
 * (and a struct in ctl.h).  Both directions apply the same checks, in the
 * same order, and so return the same status for the same bad field.
 */
#include "ctl/ctl.h"

#include <limits.h>
#include <stddef.h>
#include <string.h>

#include "util/log.h"

enum {
    F_U32,   /* u32 in [min, max] */
    F_I32,   /* i32 in [min, max] */
    F_U64,   /* u64, any value */
    F_RAW,   /* exactly min bytes, stored in the struct */
    F_BYTES, /* u32 len in [min, max], then len bytes */
    F_TEXT,  /* as F_BYTES, printable ASCII only */
    F_ADDRS, /* u32 n in [min, max], then n x (u32 len, 1..OC_CTL_MAX_ADDR) */
    F_U32S,  /* u32 n in [min, max], then n x u32 */
};

typedef struct {
    const char *name;
    uint8_t     kind;
    uint16_t    off; /* into oc_ctl_msg_t */
    int64_t     min, max;
} field_t;

typedef struct {
    const char    *name;
    const field_t *fields;
    unsigned       nfields;
    /* rules between fields, after every field passed its own */
    oc_status_t (*check)(const oc_ctl_msg_t *m, const char **what);
} type_t;

#define OFF(f) ((uint16_t)offsetof(oc_ctl_msg_t, u.f))
#define U32(f, lo, hi)   {#f, F_U32, OFF(f), lo, hi}
#define ANY32(f)         U32(f, 0, UINT32_MAX)
#define RAW(f)           {#f, F_RAW, OFF(f), sizeof(((oc_ctl_msg_t *)0)->u.f), 0}
#define ADDR(f)          {#f, F_BYTES, OFF(f), 1, OC_CTL_MAX_ADDR}
#define N(a)             (unsigned)(sizeof(a) / sizeof((a)[0]))

/* Largest list of ranks that fits a payload beside job, size, node, n. */
#define MAX_LIST_RANKS ((OC_CTL_MAX_PAYLOAD - 16) / 4)

static const field_t f_hello[] = {
    ANY32(hello.job), U32(hello.rank, 0, OC_CTL_MAX_RANKS - 1),
    U32(hello.size, 1, OC_CTL_MAX_RANKS), U32(hello.pid, 1, INT32_MAX),
    U32(hello.flags, 0, OC_CTL_HELLO_F_ALL), RAW(hello.nonce),
    ADDR(hello.addr)};
static const field_t f_challenge[] = {RAW(challenge.nonce)};
static const field_t f_auth[] = {RAW(auth.mac)};
static const field_t f_welcome[] = {
    ANY32(welcome.node), U32(welcome.thread, 0, OC_CTL_MAX_THREADS - 1),
    ADDR(welcome.addr),
    U32(welcome.coll_thread, 0, OC_CTL_MAX_THREADS - 1),
    ADDR(welcome.coll_addr)};
static const field_t f_ready[] = {U32(ready.size, 1, OC_CTL_MAX_RANKS),
                                  U32(ready.nnodes, 1, OC_CTL_MAX_RANKS),
                                  U32(ready.coll, 0, OC_CTL_COLL_ALL)};
static const field_t f_error[] = {
    {"error.status", F_I32, OFF(error.status), INT32_MIN, -1},
    {"error.text", F_TEXT, OFF(error.text), 0, OC_CTL_MAX_TEXT}};
static const field_t f_bye[] = {U32(bye.reason, 0, OC_CTL_BYE_PEER_FAILED)};
static const field_t f_counts[] = {
    ANY32(counts.job), ANY32(counts.epoch), ANY32(counts.round),
    {"counts.sent", F_U64, OFF(counts.sent), 0, 0},
    {"counts.delivered", F_U64, OFF(counts.delivered), 0, 0}};
static const field_t f_quiesce[] = {ANY32(quiesce_done.job),
                                    ANY32(quiesce_done.epoch)};
static const field_t f_peer_hello[] = {
    ANY32(peer_hello.node), ANY32(peer_hello.cluster), RAW(peer_hello.nonce)};
static const field_t f_peer_info[] = {
    ANY32(peer_info.node),
    {"peer_info.addrs", F_ADDRS, OFF(peer_info.addrs), 1, OC_CTL_MAX_THREADS}};
static const field_t f_job_ranks[] = {
    ANY32(job_ranks.job), U32(job_ranks.size, 1, OC_CTL_MAX_RANKS),
    ANY32(job_ranks.node),
    {"job_ranks.ranks", F_U32S, OFF(job_ranks.ranks), 0, MAX_LIST_RANKS}};
static const field_t f_job_fail[] = {
    ANY32(job_fail.job),
    {"job_fail.status", F_I32, OFF(job_fail.status), INT32_MIN, -1}};

static oc_status_t check_hello(const oc_ctl_msg_t *m, const char **what)
{
    *what = "hello.rank < size";
    return m->u.hello.rank < m->u.hello.size ? OC_OK : OC_ERR_CTL_VALUE;
}

static oc_status_t check_ready(const oc_ctl_msg_t *m, const char **what)
{
    *what = "ready.nnodes <= size";
    if (m->u.ready.nnodes > m->u.ready.size)
        return OC_ERR_CTL_VALUE;
    *what = "ready.coll only OC_CTL_COLL_ALL bits";
    return (m->u.ready.coll & ~OC_CTL_COLL_ALL) == 0 ? OC_OK : OC_ERR_CTL_VALUE;
}

static oc_status_t check_job_ranks(const oc_ctl_msg_t *m, const char **what)
{
    const oc_ctl_u32s_t *l = &m->u.job_ranks.ranks;
    uint32_t prev = 0;

    *what = "job_ranks.ranks increasing and < size";
    for (uint32_t i = 0; i < l->count; i++) {
        uint32_t r = oc__ctl_u32s_get(l, i);
        if (r >= m->u.job_ranks.size || (i > 0 && r <= prev))
            return OC_ERR_CTL_VALUE;
        prev = r;
    }
    return OC_OK;
}

#define T(name, f, chk) {name, f, N(f), chk}
static const type_t types[OC_CTL_TYPE_END] = {
    [OC_CTL_HELLO] = T("HELLO", f_hello, check_hello),
    [OC_CTL_CHALLENGE] = T("CHALLENGE", f_challenge, NULL),
    [OC_CTL_AUTH] = T("AUTH", f_auth, NULL),
    [OC_CTL_WELCOME] = T("WELCOME", f_welcome, NULL),
    [OC_CTL_READY] = T("READY", f_ready, check_ready),
    [OC_CTL_ERROR] = T("ERROR", f_error, NULL),
    [OC_CTL_BYE] = T("BYE", f_bye, NULL),
    [OC_CTL_COUNTS] = T("COUNTS", f_counts, NULL),
    [OC_CTL_COUNTS_REQ] = T("COUNTS_REQ", f_counts, NULL),
    [OC_CTL_QUIESCE_DONE] = T("QUIESCE_DONE", f_quiesce, NULL),
    [OC_CTL_PEER_HELLO] = T("PEER_HELLO", f_peer_hello, NULL),
    [OC_CTL_PEER_AUTH] = T("PEER_AUTH", f_auth, NULL),
    [OC_CTL_PEER_INFO] = T("PEER_INFO", f_peer_info, NULL),
    [OC_CTL_JOB_RANKS] = T("JOB_RANKS", f_job_ranks, check_job_ranks),
    [OC_CTL_JOB_FAIL] = T("JOB_FAIL", f_job_fail, NULL),
};

static const type_t *type_of(int type)
{
    if (type <= 0 || type >= OC_CTL_TYPE_END || types[type].name == NULL)
        return NULL;
    return &types[type];
}

const char *oc__ctl_type_name(int type)
{
    const type_t *t = type_of(type);
    return t != NULL ? t->name : "UNKNOWN";
}

static bool printable(const uint8_t *p, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (p[i] < 0x20 || p[i] > 0x7e)
            return false;
    return true;
}

static inline bool in_range(int64_t v, const field_t *f)
{
    return v >= f->min && v <= f->max;
}

/* ---------------------------------------------------------------- encode */

/* Check one field of a message to encode and return its wire size. */
static oc_status_t enc_check(const field_t *f, const uint8_t *base,
                             size_t *size)
{
    const void *v = base + f->off;

    switch (f->kind) {
    case F_U32:
        *size = 4;
        return in_range(*(const uint32_t *)v, f) ? OC_OK : OC_ERR_CTL_VALUE;
    case F_I32:
        *size = 4;
        return in_range(*(const int32_t *)v, f) ? OC_OK : OC_ERR_CTL_VALUE;
    case F_U64:
        *size = 8;
        return OC_OK;
    case F_RAW:
        *size = (size_t)f->min;
        return OC_OK;
    case F_BYTES:
    case F_TEXT: {
        const oc_ctl_bytes_t *b = v;
        *size = 4 + (size_t)b->len;
        if (b->len != 0 && b->data == NULL)
            return OC_ERR_INVALID_PARAM;
        if (!in_range(b->len, f))
            return OC_ERR_CTL_VALUE;
        if (f->kind == F_TEXT && !printable(b->data, b->len))
            return OC_ERR_CTL_VALUE;
        return OC_OK;
    }
    case F_ADDRS: {
        const oc_ctl_addrs_t *a = v;
        if (a->count > f->max)
            return OC_ERR_WIRE_COUNT;
        if (a->count < f->min)
            return OC_ERR_CTL_VALUE;
        *size = 4;
        for (uint32_t i = 0; i < a->count; i++) {
            if (a->item[i].len != 0 && a->item[i].data == NULL)
                return OC_ERR_INVALID_PARAM;
            if (a->item[i].len < 1 || a->item[i].len > OC_CTL_MAX_ADDR)
                return OC_ERR_CTL_VALUE;
            *size += 4 + (size_t)a->item[i].len;
        }
        return OC_OK;
    }
    case F_U32S: {
        const oc_ctl_u32s_t *l = v;
        if (l->count > f->max)
            return OC_ERR_WIRE_COUNT;
        if (l->count != 0 && l->host == NULL && l->wire == NULL)
            return OC_ERR_INVALID_PARAM;
        *size = 4 + 4 * (size_t)l->count;
        return OC_OK;
    }
    }
    return OC_ERR_INVALID_PARAM;
}

static uint8_t *enc_field(const field_t *f, const uint8_t *base, uint8_t *p)
{
    const void *v = base + f->off;

    switch (f->kind) {
    case F_U32:
    case F_I32:
        oc__store_le32(p, *(const uint32_t *)v);
        return p + 4;
    case F_U64: {
        uint64_t x = *(const uint64_t *)v;
        oc__store_le32(p, (uint32_t)x);
        oc__store_le32(p + 4, (uint32_t)(x >> 32));
        return p + 8;
    }
    case F_RAW:
        memcpy(p, v, (size_t)f->min);
        return p + f->min;
    case F_BYTES:
    case F_TEXT: {
        const oc_ctl_bytes_t *b = v;
        oc__store_le32(p, b->len);
        if (b->len != 0)
            memcpy(p + 4, b->data, b->len);
        return p + 4 + b->len;
    }
    case F_ADDRS: {
        const oc_ctl_addrs_t *a = v;
        oc__store_le32(p, a->count);
        p += 4;
        for (uint32_t i = 0; i < a->count; i++) {
            oc__store_le32(p, a->item[i].len);
            memcpy(p + 4, a->item[i].data, a->item[i].len);
            p += 4 + a->item[i].len;
        }
        return p;
    }
    case F_U32S: {
        const oc_ctl_u32s_t *l = v;
        oc__store_le32(p, l->count);
        p += 4;
        for (uint32_t i = 0; i < l->count; i++, p += 4)
            oc__store_le32(p, oc__ctl_u32s_get(l, i));
        return p;
    }
    }
    return p;
}

oc_status_t oc__ctl_encode(const oc_ctl_msg_t *msg, uint8_t *buf, size_t cap,
                          size_t *len_out)
{
    const uint8_t *base = (const uint8_t *)msg;
    const type_t *t;
    const char *what = NULL;
    size_t payload = 0, size;
    oc_status_t st;
    uint8_t *p;

    if (msg == NULL || len_out == NULL)
        return OC_ERR_INVALID_PARAM;
    if ((t = type_of((int)msg->type)) == NULL)
        return OC_ERR_CTL_TYPE;
    for (unsigned i = 0; i < t->nfields; i++) {
        if ((st = enc_check(&t->fields[i], base, &size)) != OC_OK) {
            what = t->fields[i].name;
            goto err;
        }
        payload += size;
    }
    if (t->check != NULL && (st = t->check(msg, &what)) != OC_OK)
        goto err;
    if (payload > OC_CTL_MAX_PAYLOAD) {
        st = OC_ERR_MSG_TOO_LONG;
        what = "payload";
        goto err;
    }
    if (buf != NULL) {
        if (cap < OC_CTL_HDR_LEN + payload)
            return OC_ERR_INVALID_PARAM;
        oc__store_le32(buf, OC_CTL_MAGIC);
        buf[4] = OC_CTL_VERSION;
        buf[5] = 0;
        buf[6] = (uint8_t)msg->type;
        buf[7] = (uint8_t)(msg->type >> 8);
        oc__store_le32(buf + 8, (uint32_t)payload);
        oc__store_le32(buf + 12, 0);
        p = buf + OC_CTL_HDR_LEN;
        for (unsigned i = 0; i < t->nfields; i++)
            p = enc_field(&t->fields[i], base, p);
    }
    *len_out = OC_CTL_HDR_LEN + payload;
    return OC_OK;

err:
    oc_debug(OC_COMP_CTL, "ctl: cannot encode %s: %s: %s", t->name, what,
             oc_status_string(st));
    return st;
}

/* ---------------------------------------------------------------- decode */

oc_status_t oc__ctl_frame_len(const uint8_t *buf, size_t len, size_t *frame_len)
{
    uint32_t payload;

    if (len < OC_CTL_HDR_LEN)
        return OC_INPROGRESS;
    if (oc__load_le32(buf) != OC_CTL_MAGIC)
        return OC_ERR_WIRE_MAGIC;
    if (oc__load_le16(buf + 4) != OC_CTL_VERSION)
        return OC_ERR_WIRE_VERSION;
    if (type_of(oc__load_le16(buf + 6)) == NULL)
        return OC_ERR_CTL_TYPE;
    if (oc__load_le32(buf + 12) != 0)
        return OC_ERR_WIRE_FLAGS;
    payload = oc__load_le32(buf + 8);
    if (payload > OC_CTL_MAX_PAYLOAD)
        return OC_ERR_WIRE_LENGTH;
    *frame_len = OC_CTL_HDR_LEN + (size_t)payload;
    return OC_OK;
}

/* Decode one field at *pp (end: payload end) into the struct at base. */
static oc_status_t dec_field(const field_t *f, const uint8_t **pp,
                             const uint8_t *end, uint8_t *base)
{
    const uint8_t *p = *pp;
    size_t left = (size_t)(end - p);
    void *v = base + f->off;
    uint32_t n;

    switch (f->kind) {
    case F_U32:
    case F_I32:
        if (left < 4)
            return OC_ERR_WIRE_LENGTH;
        n = oc__load_le32(p);
        if (f->kind == F_U32 ? !in_range(n, f) : !in_range((int32_t)n, f))
            return OC_ERR_CTL_VALUE;
        memcpy(v, &n, 4);
        p += 4;
        break;
    case F_U64: {
        uint64_t x;
        if (left < 8)
            return OC_ERR_WIRE_LENGTH;
        x = (uint64_t)oc__load_le32(p) | (uint64_t)oc__load_le32(p + 4) << 32;
        memcpy(v, &x, 8);
        p += 8;
        break;
    }
    case F_RAW:
        if (left < (size_t)f->min)
            return OC_ERR_WIRE_LENGTH;
        memcpy(v, p, (size_t)f->min);
        p += f->min;
        break;
    case F_BYTES:
    case F_TEXT: {
        oc_ctl_bytes_t *b = v;
        if (left < 4)
            return OC_ERR_WIRE_LENGTH;
        n = oc__load_le32(p);
        if (n > left - 4)
            return OC_ERR_WIRE_LENGTH;
        if (!in_range(n, f) || (f->kind == F_TEXT && !printable(p + 4, n)))
            return OC_ERR_CTL_VALUE;
        b->len = n;
        b->data = n != 0 ? p + 4 : NULL;
        p += 4 + n;
        break;
    }
    case F_ADDRS: {
        oc_ctl_addrs_t *a = v;
        if (left < 4)
            return OC_ERR_WIRE_LENGTH;
        n = oc__load_le32(p);
        if (n > f->max)
            return OC_ERR_WIRE_COUNT;
        if (n < f->min)
            return OC_ERR_CTL_VALUE;
        p += 4;
        a->count = n;
        for (uint32_t i = 0; i < n; i++) {
            uint32_t len;
            if ((size_t)(end - p) < 4)
                return OC_ERR_WIRE_LENGTH;
            len = oc__load_le32(p);
            if (len > (size_t)(end - p) - 4)
                return OC_ERR_WIRE_LENGTH;
            if (len < 1 || len > OC_CTL_MAX_ADDR)
                return OC_ERR_CTL_VALUE;
            a->item[i].data = p + 4;
            a->item[i].len = len;
            p += 4 + len;
        }
        break;
    }
    case F_U32S: {
        oc_ctl_u32s_t *l = v;
        if (left < 4)
            return OC_ERR_WIRE_LENGTH;
        n = oc__load_le32(p);
        if (n > f->max)
            return OC_ERR_WIRE_COUNT;
        if (n > (left - 4) / 4)
            return OC_ERR_WIRE_LENGTH;
        l->count = n;
        l->host = NULL;
        l->wire = n != 0 ? p + 4 : NULL;
        p += 4 + 4 * (size_t)n;
        break;
    }
    }
    *pp = p;
    return OC_OK;
}

oc_status_t oc__ctl_decode(const uint8_t *buf, size_t len, oc_ctl_msg_t *out)
{
    const uint8_t *p, *end;
    const type_t *t = NULL;
    const char *what = "header";
    oc_ctl_msg_t m;
    size_t frame_len;
    oc_status_t st;

    if (buf == NULL || out == NULL)
        return OC_ERR_INVALID_PARAM;
    if (len < OC_CTL_HDR_LEN)
        return OC_ERR_WIRE_TRUNCATED;
    st = oc__ctl_frame_len(buf, len, &frame_len);
    if (st == OC_OK && frame_len != len)
        st = OC_ERR_WIRE_LENGTH;
    if (st != OC_OK)
        goto err;

    memset(&m, 0, sizeof(m));
    m.type = (oc_ctl_type_t)oc__load_le16(buf + 6);
    t = type_of((int)m.type);
    p = buf + OC_CTL_HDR_LEN;
    end = buf + len;
    for (unsigned i = 0; i < t->nfields; i++) {
        st = dec_field(&t->fields[i], &p, end, (uint8_t *)&m);
        if (st != OC_OK) {
            what = t->fields[i].name;
            goto err;
        }
    }
    if (p != end) {
        st = OC_ERR_WIRE_LENGTH;
        what = "bytes after the last field";
        goto err;
    }
    if (t->check != NULL && (st = t->check(&m, &what)) != OC_OK)
        goto err;
    *out = m;
    return OC_OK;

err:
    oc_debug(OC_COMP_CTL, "ctl: rejected %s frame (%zu bytes): %s: %s",
             t != NULL ? t->name : "a", len, what, oc_status_string(st));
    return st;
}

void oc__ctl_set_error(oc_ctl_msg_t *msg, oc_status_t status, const char *text,
                      char *scratch)
{
    size_t n = 0;

    memset(msg, 0, sizeof(*msg));
    msg->type = OC_CTL_ERROR;
    msg->u.error.status = status < 0 ? (int32_t)status : OC_ERR_STATE;
    if (text != NULL)
        for (; n < OC_CTL_MAX_TEXT && text[n] != '\0'; n++)
            scratch[n] = (text[n] >= 0x20 && text[n] <= 0x7e) ? text[n] : '?';
    msg->u.error.text.data = (const uint8_t *)scratch;
    msg->u.error.text.len = (uint32_t)n;
}
