/*
 * auth.c — keys, nonces and the HMAC-SHA256 proofs of the control
 * handshakes.  Keys never cross the wire: a rank proves it holds the job's
 * key by a MAC over the agent's fresh nonce (and the identity it claims);
 * agents prove the cluster key to each other the same way.
 */
#include "ctl/ctl.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "util/log.h"
#include "util/secret.h"

#define RANK_DOMAIN "offcore-rank-v1"
#define PEER_DOMAIN "offcore-peer-v1"
#define DOMAIN_LEN  15
/* A hex key file: 2 digits per byte and some white space. */
#define KEY_FILE_MAX (2 * OC_CTL_KEY_MAX + 64)

oc_status_t oc__ctl_random(void *buf, size_t len)
{
    uint8_t *p = buf;

    while (len > 0) {
        ssize_t n = getrandom(p, len, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            /* no getrandom (old kernel, seccomp): OpenSSL's own sources */
            if (len <= INT32_MAX && RAND_bytes(p, (int)len) == 1)
                return OC_OK;
            oc_error(OC_COMP_CTL, "ctl: no random source: %s",
                     strerror(errno));
            return OC_ERR_TRANSPORT;
        }
        p += n;
        len -= (size_t)n;
    }
    return OC_OK;
}

void oc__ctl_hmac_sha256(const void *key, size_t key_len, const void *data,
                        size_t len, uint8_t mac[OC_CTL_MAC_LEN])
{
    unsigned int n = OC_CTL_MAC_LEN;

    /* HMAC() only fails on allocation failure, with SHA-256 and these
     * sizes; a zero MAC then matches no real one. */
    if (HMAC(EVP_sha256(), key, (int)key_len, data, len, mac, &n) == NULL)
        memset(mac, 0, OC_CTL_MAC_LEN);
}

void oc__ctl_rank_mac(const oc_ctl_key_t *job_key,
                     const uint8_t server_nonce[OC_CTL_NONCE_LEN],
                     const uint8_t client_nonce[OC_CTL_CNONCE_LEN],
                     uint32_t job, uint32_t rank, uint32_t size,
                     uint8_t mac[OC_CTL_MAC_LEN])
{
    uint8_t m[DOMAIN_LEN + OC_CTL_NONCE_LEN + OC_CTL_CNONCE_LEN + 12], *p = m;

    memcpy(p, RANK_DOMAIN, DOMAIN_LEN);
    p += DOMAIN_LEN;
    memcpy(p, server_nonce, OC_CTL_NONCE_LEN);
    p += OC_CTL_NONCE_LEN;
    memcpy(p, client_nonce, OC_CTL_CNONCE_LEN);
    p += OC_CTL_CNONCE_LEN;
    oc__store_le32(p, job);
    oc__store_le32(p + 4, rank);
    oc__store_le32(p + 8, size);
    oc__ctl_hmac_sha256(job_key->bytes, job_key->len, m, sizeof(m), mac);
}

void oc__ctl_peer_mac(const oc_ctl_key_t *cluster_key,
                     const uint8_t peer_nonce[OC_CTL_NONCE_LEN],
                     const uint8_t own_nonce[OC_CTL_NONCE_LEN],
                     uint32_t own_node, uint8_t mac[OC_CTL_MAC_LEN])
{
    uint8_t m[DOMAIN_LEN + 2 * OC_CTL_NONCE_LEN + 4], *p = m;

    memcpy(p, PEER_DOMAIN, DOMAIN_LEN);
    p += DOMAIN_LEN;
    memcpy(p, peer_nonce, OC_CTL_NONCE_LEN);
    p += OC_CTL_NONCE_LEN;
    memcpy(p, own_nonce, OC_CTL_NONCE_LEN);
    p += OC_CTL_NONCE_LEN;
    oc__store_le32(p, own_node);
    oc__ctl_hmac_sha256(cluster_key->bytes, cluster_key->len, m, sizeof(m),
                       mac);
}

bool oc__ctl_mac_equal(const uint8_t a[OC_CTL_MAC_LEN],
                      const uint8_t b[OC_CTL_MAC_LEN])
{
    return CRYPTO_memcmp(a, b, OC_CTL_MAC_LEN) == 0;
}

oc_status_t oc__ctl_rank_verify(const oc_ctl_key_t *job_key,
                               const uint8_t server_nonce[OC_CTL_NONCE_LEN],
                               const oc_ctl_msg_t *hello,
                               const uint8_t mac[OC_CTL_MAC_LEN])
{
    uint8_t want[OC_CTL_MAC_LEN];
    bool ok;

    if (job_key == NULL || hello == NULL || hello->type != OC_CTL_HELLO)
        return OC_ERR_INVALID_PARAM;
    oc__ctl_rank_mac(job_key, server_nonce, hello->u.hello.nonce,
                    hello->u.hello.job, hello->u.hello.rank,
                    hello->u.hello.size, want);
    ok = oc__ctl_mac_equal(want, mac);
    OPENSSL_cleanse(want, sizeof(want));
    return ok ? OC_OK : OC_ERR_CTL_AUTH;
}

oc_status_t oc__ctl_peer_verify(const oc_ctl_key_t *cluster_key,
                               uint32_t own_node,
                               const uint8_t own_nonce[OC_CTL_NONCE_LEN],
                               const oc_ctl_msg_t *peer_hello,
                               const uint8_t mac[OC_CTL_MAC_LEN])
{
    const uint8_t *peer_nonce;
    uint8_t want[OC_CTL_MAC_LEN];
    bool ok;

    if (cluster_key == NULL || peer_hello == NULL ||
        peer_hello->type != OC_CTL_PEER_HELLO)
        return OC_ERR_INVALID_PARAM;
    peer_nonce = peer_hello->u.peer_hello.nonce;
    /* A peer claiming our node id, or our nonce, could send back the proof
     * we gave it (on this or another connection) as its own. */
    if (peer_hello->u.peer_hello.node == own_node ||
        CRYPTO_memcmp(peer_nonce, own_nonce, OC_CTL_NONCE_LEN) == 0)
        return OC_ERR_CTL_AUTH;
    oc__ctl_peer_mac(cluster_key, own_nonce, peer_nonce,
                    peer_hello->u.peer_hello.node, want);
    ok = oc__ctl_mac_equal(want, mac);
    OPENSSL_cleanse(want, sizeof(want));
    return ok ? OC_OK : OC_ERR_CTL_AUTH;
}

/* ------------------------------------------------------------------ keys */

/* Key of hex digits s[0, n) (blanks allowed, util/secret.h); @p from
 * names the source in messages. */
static oc_status_t key_hex(const char *s, size_t n, const char *from,
                           oc_ctl_key_t *key)
{
    oc_ctl_key_t k;
    long got = oc__secret_hex((const uint8_t *)s, n, k.bytes, sizeof(k.bytes));

    if (got < OC_CTL_KEY_MIN) {
        oc_error(OC_COMP_CTL,
                 "ctl: key from %s: want %d to %d hex digits (%d to %d "
                 "bytes), got %zu characters or a non-hex one",
                 from, 2 * OC_CTL_KEY_MIN, 2 * OC_CTL_KEY_MAX, OC_CTL_KEY_MIN,
                 OC_CTL_KEY_MAX, n);
        OPENSSL_cleanse(&k, sizeof(k));
        return OC_ERR_CTL_KEY;
    }
    k.len = (uint32_t)got;
    *key = k;
    OPENSSL_cleanse(&k, sizeof(k));
    return OC_OK;
}

oc_status_t oc__ctl_key_from_hex(const char *hex, oc_ctl_key_t *key)
{
    if (hex == NULL || key == NULL)
        return OC_ERR_INVALID_PARAM;
    return key_hex(hex, strlen(hex), "a hex string", key);
}

oc_status_t oc__ctl_key_from_file(const char *path, oc_ctl_key_t *key)
{
    uint8_t buf[KEY_FILE_MAX + 1], probe[OC_CTL_KEY_MAX];
    char why[PATH_MAX + 128];
    oc_status_t st = OC_ERR_CTL_KEY;
    size_t n = 0;

    if (path == NULL || key == NULL)
        return OC_ERR_INVALID_PARAM;
    if (oc__secret_read(path, buf, sizeof(buf), &n, why, sizeof(why)) != OC_OK) {
        oc_error(OC_COMP_CTL, "ctl: %s", why);
        goto out;
    }
    /* hex text (what offcore keygen writes), else the raw key bytes */
    if (n > 0 && oc__secret_hex(buf, n, probe, sizeof(probe)) != -1) {
        char from[PATH_MAX + 8];
        snprintf(from, sizeof(from), "file %s", path);
        st = key_hex((const char *)buf, n, from, key);
    } else if (n < OC_CTL_KEY_MIN || n > OC_CTL_KEY_MAX) {
        oc_error(OC_COMP_CTL,
                 "ctl: key file %s: %zu bytes; a raw key has %d to %d, a hex "
                 "one %d to %d hex digits",
                 path, n, OC_CTL_KEY_MIN, OC_CTL_KEY_MAX, 2 * OC_CTL_KEY_MIN,
                 2 * OC_CTL_KEY_MAX);
    } else {
        memcpy(key->bytes, buf, n);
        key->len = (uint32_t)n;
        st = OC_OK;
    }
out:
    OPENSSL_cleanse(buf, sizeof(buf));
    OPENSSL_cleanse(probe, sizeof(probe));
    return st;
}

oc_status_t oc__ctl_key_load(const char *path, const char *env,
                            oc_ctl_key_t *key)
{
    const char *v;

    if (key == NULL)
        return OC_ERR_INVALID_PARAM;
    if (path != NULL && path[0] != '\0')
        return oc__ctl_key_from_file(path, key);
    if (env != NULL && (v = getenv(env)) != NULL && v[0] != '\0')
        return key_hex(v, strlen(v), env, key);
    oc_error(OC_COMP_CTL, "ctl: no key: give a key file or set %s",
             env != NULL ? env : "a key variable");
    return OC_ERR_CTL_KEY;
}

oc_status_t oc__ctl_cluster_key_load(const char *flag_file, oc_ctl_key_t *key,
                                    char *source, size_t source_cap)
{
    const char *v, *file;
    char src[OC_CTL_ADDR_STRLEN + 64];
    oc_status_t st;

    if (key == NULL)
        return OC_ERR_INVALID_PARAM;
    if (flag_file != NULL && flag_file[0] != '\0') {
        file = flag_file;
        snprintf(src, sizeof(src), "--cluster-key %s", file);
        goto from_file;
    }
    if (flag_file != NULL) {
        oc_error(OC_COMP_CTL, "ctl: --cluster-key is empty: give a key file");
        return OC_ERR_CTL_KEY;
    }
    v = getenv(OC_CTL_CLUSTER_KEY_ENV);
    if (v != NULL && v[0] == '\0')
        oc_warn(OC_COMP_CTL, "ctl: %s is set but empty: ignored (treated as "
                "unset)", OC_CTL_CLUSTER_KEY_ENV);
    else if (v != NULL) {
        snprintf(src, sizeof(src), "%s", OC_CTL_CLUSTER_KEY_ENV);
        st = key_hex(v, strlen(v), OC_CTL_CLUSTER_KEY_ENV, key);
        goto out;
    }
    v = getenv(OC_CTL_CLUSTER_KEY_FILE_ENV);
    if (v != NULL && v[0] == '\0')
        oc_warn(OC_COMP_CTL, "ctl: %s is set but empty: ignored (treated as "
                "unset)", OC_CTL_CLUSTER_KEY_FILE_ENV);
    else if (v != NULL) {
        file = v;
        snprintf(src, sizeof(src), "%s=%s", OC_CTL_CLUSTER_KEY_FILE_ENV, v);
        goto from_file;
    }
    file = OC_CTL_CLUSTER_KEY_DEFAULT;
    snprintf(src, sizeof(src), "%s (the default)", file);
from_file:
    st = oc__ctl_key_from_file(file, key);
out:
    if (source != NULL && source_cap > 0)
        snprintf(source, source_cap, "%s", src);
    return st;
}

oc_status_t oc__ctl_key_generate(oc_ctl_key_t *key)
{
    oc_status_t st;

    if (key == NULL)
        return OC_ERR_INVALID_PARAM;
    if ((st = oc__ctl_random(key->bytes, 32)) != OC_OK)
        return st;
    key->len = 32;
    return OC_OK;
}

oc_status_t oc__ctl_key_hex(const oc_ctl_key_t *key, char *buf, size_t cap)
{
    static const char digits[] = "0123456789abcdef";

    if (key == NULL || buf == NULL || key->len > OC_CTL_KEY_MAX ||
        cap < 2 * (size_t)key->len + 1)
        return OC_ERR_INVALID_PARAM;
    for (uint32_t i = 0; i < key->len; i++) {
        buf[2 * i] = digits[key->bytes[i] >> 4];
        buf[2 * i + 1] = digits[key->bytes[i] & 15];
    }
    buf[2 * key->len] = '\0';
    return OC_OK;
}

void oc__ctl_key_clear(oc_ctl_key_t *key)
{
    if (key != NULL)
        OPENSSL_cleanse(key, sizeof(*key));
}
