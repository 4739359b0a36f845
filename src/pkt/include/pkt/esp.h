/*
 * esp.h — IPsec ESP (RFC 4303) in tunnel mode with AES-256-GCM (RFC 4106),
 * for offcore-dp's ESP stage (esp_stage.c) and its tests: security
 * associations (key, salt, tunnel endpoints, outbound sequence counter,
 * inbound anti-replay window), OpenSSL EVP contexts keyed once per worker
 * thread and SA (the packet path never allocates), the 64-bit sequence
 * number as the explicit IV (never repeated under one key; the packet after
 * 2^32-1 is refused: rekey).  docs/esp-ipfix.md has the operator's side.
 *
 * Threading: an outbound SA's counter is one atomic add per packet; an
 * inbound SA's window is updated under a spinlock after the ICV checks.
 * Keys are never logged.  Trust: decapsulated packets are hostile: every
 * length is checked before it is read, the ICV before the plaintext is
 * used (fuzzed: tests/fuzz/fuzz_esp.c).
 */
#ifndef OC_PKT_ESP_H
#define OC_PKT_ESP_H

#include <offcore/offcore.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define OC_ESP_KEY_LEN   32
#define OC_ESP_SALT_LEN  4
#define OC_ESP_IV_LEN    8
#define OC_ESP_ICV_LEN   16
#define OC_ESP_HDR_LEN   8     /* SPI + sequence number */
#define OC_ESP_WINDOW    1024  /* anti-replay window, packets */
/** Bytes added in front of the inner IP packet: outer IPv4, ESP, IV. */
#define OC_ESP_HEAD      (20 + OC_ESP_HDR_LEN + OC_ESP_IV_LEN)
/** Most bytes added behind it: 3 padding, pad length, next header, ICV. */
#define OC_ESP_TAIL_MAX  (3 + 2 + OC_ESP_ICV_LEN)
/** Most bytes ESP tunnel mode adds to an IPv4 packet (57). */
#define OC_ESP_OVERHEAD  (OC_ESP_HEAD + OC_ESP_TAIL_MAX)

/** Why a packet was not encapsulated or decapsulated (counted per reason). */
typedef enum {
    OC_ESP_OK = 0,
    OC_ESP_E_SHORT,        /**< outer or ESP part shorter than its minimum */
    OC_ESP_E_MALFORMED,    /**< outer IPv4 header bad, a fragment, or not ESP */
    OC_ESP_E_UNKNOWN_SPI,  /**< no inbound SA with that SPI and these addresses */
    OC_ESP_E_REPLAY,       /**< sequence number seen, or left of the window */
    OC_ESP_E_ICV,          /**< authentication failed (ICV mismatch) */
    OC_ESP_E_BAD_PAD,      /**< pad length past the data or padding not 1,2,3.. */
    OC_ESP_E_BAD_NEXT_HDR, /**< next header neither IPv4 (4) nor IPv6 (41) */
    OC_ESP_E_BAD_INNER,    /**< inner packet's version or length inconsistent */
    OC_ESP_E_DUMMY,        /**< next header 59: a dummy packet (RFC 4303 2.6) */
    OC_ESP_E_SEQ_OVERFLOW, /**< outbound: 2^32-1 packets sent, rekey */
    OC_ESP_E_TOO_BIG,      /**< outbound: larger than the path MTU allows */
    OC_ESP_E_NO_ROOM,      /**< outbound: no head- or tailroom in the buffer */
    OC_ESP_E_CRYPTO,       /**< OpenSSL failed (should not happen) */
    OC_ESP_E_MAX
} oc_esp_result_t;

/** "icv", "replay", ... (the Prometheus label); static string. */
const char *oc__esp_result_name(oc_esp_result_t r);

typedef struct {
    uint32_t spi;
    uint32_t local, peer;  /**< tunnel endpoints, IPv4, host order */
    uint8_t  key[OC_ESP_KEY_LEN];
    uint8_t  salt[OC_ESP_SALT_LEN];
    bool     outbound;
} oc_esp_sa_conf_t;

typedef struct oc_esp_sa {
    oc_esp_sa_conf_t c;
    uint64_t seq;          /**< outbound: last sequence number sent (atomic) */
    /* inbound */
    int      lock;         /**< spinlock over top and bitmap */
    uint64_t top;          /**< highest sequence number accepted */
    uint64_t bitmap[OC_ESP_WINDOW / 64];
} oc_esp_sa_t;

/** Per thread per SA: the keyed cipher context. */
typedef struct {
    void    *ctx;          /**< EVP_CIPHER_CTX */
    uint64_t gen;          /**< the SA generation it was keyed for */
} oc_esp_ctx_t;

/** Initialise @p sa from @p c (counters and window zero). */
void oc__esp_sa_init(oc_esp_sa_t *sa, const oc_esp_sa_conf_t *c);

/** Key @p x for @p sa (allocates the EVP context the first time; the same
 *  context is re-keyed after).  @return OC_OK; OC_ERR_NO_MEMORY. */
oc_status_t oc__esp_ctx_key(oc_esp_ctx_t *x, const oc_esp_sa_t *sa);
void oc__esp_ctx_free(oc_esp_ctx_t *x);

/**
 * Encapsulate the IPv4 or IPv6 packet at @p ip (@p len bytes) in place:
 * the outer IPv4 header, ESP header and IV go into the @p headroom bytes
 * in front of it, the trailer and ICV into the @p tailroom bytes behind.
 * @p mtu bounds the outer packet (0: no bound).
 * @return OC_ESP_OK with *out_ip (= ip - OC_ESP_HEAD) and *out_len; a
 *   reason (SEQ_OVERFLOW, TOO_BIG, NO_ROOM, BAD_INNER, CRYPTO) otherwise,
 *   with the packet unchanged except on CRYPTO.
 */
oc_esp_result_t oc__esp_encap(oc_esp_sa_t *sa, oc_esp_ctx_t *x, uint8_t *ip,
                             uint32_t len, uint32_t headroom,
                             uint32_t tailroom, uint32_t mtu,
                             uint8_t **out_ip, uint32_t *out_len);

/** SPI of an outer IPv4 ESP packet, or 0 with a reason (SHORT, MALFORMED). */
oc_esp_result_t oc__esp_peek(const uint8_t *ip, uint32_t len, uint32_t *spi,
                            uint32_t *src, uint32_t *dst);

/**
 * Decapsulate the outer IPv4 ESP packet at @p ip (@p len bytes, possibly
 * followed by Ethernet padding) for inbound @p sa, in place: checks the
 * outer header, the window, the ICV, then the trailer; updates the window
 * only for an authenticated packet.
 * @return OC_ESP_OK with *inner and *inner_len (inside the buffer), or the
 *   reason it was refused.
 */
oc_esp_result_t oc__esp_decap(oc_esp_sa_t *sa, oc_esp_ctx_t *x, uint8_t *ip,
                             uint32_t len, uint8_t **inner,
                             uint32_t *inner_len);

/**
 * Read a key file: 72 hex digits (key then salt, optionally "0x"-prefixed,
 * blanks and a trailing newline ignored), as `ip xfrm` and tshark write
 * them.  The file must be a regular file owned by root or by the caller
 * with no group or other permission bits.  @p why gets the reason; the
 * key never appears in it.
 * @return OC_OK; OC_ERR_CONFIG.
 */
oc_status_t oc__esp_key_file(const char *path, uint8_t key[OC_ESP_KEY_LEN],
                            uint8_t salt[OC_ESP_SALT_LEN], char *why,
                            size_t whylen);

/** An SA as the operator writes it (config `sa ...`, `offcore dp sa add`). */
typedef struct {
    oc_esp_sa_conf_t sa;
    uint32_t match_ip;     /**< outbound: inner destinations it protects */
    uint8_t  match_len;    /**< prefix length (0: every IPv4 destination) */
    char     key_path[256];
} oc_esp_sa_spec_t;

/**
 * Parse `in|out spi=N local=A.B.C.D peer=A.B.C.D key=FILE [match=PREFIX]`
 * (tokens after the direction in any order; spi decimal or 0x-hex, 256 ..
 * 2^32-1; match only for out, default any) and read the key file (a
 * relative path is taken from @p base_dir when not NULL).  @p why gets the
 * reason (never key material).  @return 0, or -1.
 */
int oc__esp_sa_parse(const char *text, const char *base_dir,
                    oc_esp_sa_spec_t *out, char *why, size_t whylen);

/** Write @p s in the syntax oc__esp_sa_parse() reads, without the key. */
int oc__esp_sa_format(const oc_esp_sa_spec_t *s, char *buf, size_t cap);

struct oc_pkt_pool;
struct oc_pkt;
/** Bytes free in front of and behind @p pkt's frame in its buffer of
 *  @p pool (0 and 0 for a buffer that is not the pool's: DPDK mbufs).
 *  In libpkt (esp_room.c). */
void oc__esp_room(const struct oc_pkt_pool *pool, const struct oc_pkt *pkt,
                 uint32_t *head, uint32_t *tail);

/** Clamp the MSS option of an IPv4 TCP SYN at @p ip to @p mss, fixing the
 *  checksum.  @return true when it changed the packet. */
bool oc__esp_mss_clamp(uint8_t *ip, uint32_t len, uint16_t mss);

#endif
