/*
 * derive.h — keys and tokens derived from handshake secrets (derive.c).
 */
#ifndef OC_CTL_DERIVE_H
#define OC_CTL_DERIVE_H

#include "ctl.h"

/** A job's key: HMAC-SHA256(cluster key, "offcore-job-v1" || job LE).
 *  Agents derive it to check ranks; launchers hand it to the job's ranks
 *  as OC_JOB_KEY (offcore job-key).  A rank of one job cannot compute
 *  another's. */
void oc__ctl_job_key(const oc_ctl_key_t *cluster_key, uint32_t job,
                    oc_ctl_key_t *job_key);

/** The token of a rank's connection: the first 8 bytes (LE) of
 *  HMAC(job key, "offcore-token-v1" || server nonce || client nonce),
 *  never 0.  Known only to that rank and its agent. */
uint64_t oc__ctl_rank_token(const oc_ctl_key_t *job_key,
                           const uint8_t server_nonce[OC_CTL_NONCE_LEN],
                           const uint8_t client_nonce[OC_CTL_CNONCE_LEN]);

/** The token an agent's bundles to a peer carry: HMAC(cluster key,
 *  "offcore-ptoken-v1" || sender's nonce || receiver's nonce || sender's
 *  node), first 8 bytes, never 0. */
uint64_t oc__ctl_peer_token(const oc_ctl_key_t *cluster_key,
                           const uint8_t sender_nonce[OC_CTL_NONCE_LEN],
                           const uint8_t receiver_nonce[OC_CTL_NONCE_LEN],
                           uint32_t sender_node);

#endif
