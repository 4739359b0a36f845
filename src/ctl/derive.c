/*
 * derive.c — values both ends of a handshake compute from what they share,
 * so they never cross the wire: a job's key from the cluster key, and the
 * 64-bit tokens that name a connection on the data path (the header of
 * every bundle it sends, checked by the receiving router).
 */
#include "ctl/ctl.h"

#include <string.h>

void oc__ctl_job_key(const oc_ctl_key_t *cluster_key, uint32_t job,
                    oc_ctl_key_t *job_key)
{
    uint8_t msg[14 + 4];
    memcpy(msg, "offcore-job-v1", 14);
    oc__store_le32(msg + 14, job);
    oc__ctl_hmac_sha256(cluster_key->bytes, cluster_key->len, msg, sizeof(msg),
                       job_key->bytes);
    job_key->len = OC_CTL_MAC_LEN;
}

static uint64_t trunc64(const uint8_t mac[OC_CTL_MAC_LEN])
{
    uint64_t t = 0;
    for (int i = 7; i >= 0; i--)
        t = t << 8 | mac[i];
    return t ? t : 1; /* 0 means "no token" */
}

uint64_t oc__ctl_rank_token(const oc_ctl_key_t *job_key,
                           const uint8_t server_nonce[OC_CTL_NONCE_LEN],
                           const uint8_t client_nonce[OC_CTL_CNONCE_LEN])
{
    uint8_t msg[16 + OC_CTL_NONCE_LEN + OC_CTL_CNONCE_LEN], mac[OC_CTL_MAC_LEN];
    memcpy(msg, "offcore-token-v1", 16);
    memcpy(msg + 16, server_nonce, OC_CTL_NONCE_LEN);
    memcpy(msg + 16 + OC_CTL_NONCE_LEN, client_nonce, OC_CTL_CNONCE_LEN);
    oc__ctl_hmac_sha256(job_key->bytes, job_key->len, msg, sizeof(msg), mac);
    return trunc64(mac);
}

uint64_t oc__ctl_peer_token(const oc_ctl_key_t *cluster_key,
                           const uint8_t sender_nonce[OC_CTL_NONCE_LEN],
                           const uint8_t receiver_nonce[OC_CTL_NONCE_LEN],
                           uint32_t sender_node)
{
    uint8_t msg[17 + 2 * OC_CTL_NONCE_LEN + 4], mac[OC_CTL_MAC_LEN];
    memcpy(msg, "offcore-ptoken-v1", 17);
    memcpy(msg + 17, sender_nonce, OC_CTL_NONCE_LEN);
    memcpy(msg + 17 + OC_CTL_NONCE_LEN, receiver_nonce, OC_CTL_NONCE_LEN);
    oc__store_le32(msg + 17 + 2 * OC_CTL_NONCE_LEN, sender_node);
    oc__ctl_hmac_sha256(cluster_key->bytes, cluster_key->len, msg, sizeof(msg),
                       mac);
    return trunc64(mac);
}
