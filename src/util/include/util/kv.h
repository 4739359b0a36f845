/*
 * kv.h — the one tokenizer of the operator's text: configuration lines of
 * blank-separated words, KEY=VALUE options checked against a table of
 * keys, strict numbers and IPv4 prefixes, and the list of "FILE:LINE:
 * reason" errors that every config parser reports through.  Used by
 * offcore-dp's config file, rule syntax, tenants and SAs (src/dp,
 * src/pkt/esp_conf.c) and offcore-nvmf's config file (src/nvmf).
 *
 * Trust: the input is the operator's but handled as untrusted (fuzzed
 * through fuzz_pkt and fuzz_nvmf_conf): every length is bounded, nothing
 * is read past a NUL.  Threading: pure functions on the caller's memory;
 * an error list belongs to one thread at a time.
 */
#ifndef OC_UTIL_KV_H
#define OC_UTIL_KV_H

#include <stdint.h>
#include <stdio.h>

/** Collected errors, every one "FILE:LINE: reason" (or "FILE: reason"
 *  for what belongs to no line), escaped (util/esc.h: what a reason
 *  quotes of the file never reaches a terminal raw).  Zero it before use; @c echo may then be
 *  set to have each error also written there as it is found. */
typedef struct {
    unsigned count;      /* errors added, including any cut from text */
    FILE    *echo;       /* NULL, or where each error is written at once */
    char     text[8192]; /* newline-separated, cut when full */
} oc_conf_errors_t;

/** Add one error: @p file, @p line (0: none) and the printf-style reason;
 *  @p file NULL: the reason alone (it names its file itself, as the file
 *  loader's messages do).
 *  Thread-safety: not for one @p e from two threads at once. */
void oc__conf_error(oc_conf_errors_t *e, const char *file, unsigned line,
                   const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/**
 * The next line of @p text (@p len bytes, read from *@p pos on), copied
 * into @p buf without its '\n' (nor a '\r' before it); *@p pos moves past
 * it and *@p line counts it.  A line that does not fit @p cap bytes, or
 * holds a NUL byte (which would cut it short unseen), is an error added
 * to @p e as @p file:LINE and skipped.
 * @return 1 and the line in @p buf; 0 at the end of @p text; -1 for a
 *         line skipped (the error added).
 */
int oc__kv_next_line(const char *text, size_t len, size_t *pos, char *buf,
                    size_t cap, const char *file, unsigned *line,
                    oc_conf_errors_t *e);

/**
 * Split @p line in place into words: runs of characters other than
 * space, tab, CR and LF.  A word that starts with '#' begins a comment:
 * it and the rest of the line are dropped.
 * @return the number of words (0: a blank or comment line), stored in
 *         @p word (pointers into @p line); -1 when there are more than
 *         @p max (the first @p max are stored).
 */
int oc__kv_split(char *line, char **word, int max);

/** oc__kv_split() of a copy of @p text's first line (up to its first '\n'
 *  or its end) made in @p buf of @p cap bytes; for parsers handed one
 *  line of const text (a rule, an SA).
 *  @return as oc__kv_split(), or -2 when the line does not fit @p buf. */
int oc__kv_split_text(const char *text, char *buf, size_t cap, char **word,
                     int max);

/** At most this many keys in one table (one bit each in @c seen). */
#define OC_KV_MAX_KEYS 32

/**
 * Take @p word as KEY=VALUE, KEY one of @p keys (NULL-terminated, at most
 * OC_KV_MAX_KEYS).  Splits @p word in place at its first '='.  With
 * @p seen, bit i records that keys[i] was taken, and a key taken twice is
 * an error; with NULL, repeats are allowed (the last one counts).
 * @return the key's index, *@p value pointing after the '='; or -1 with
 *         @p why holding one of "'WORD': expected KEY=VALUE",
 *         "unknown key 'KEY' (KEY1 KEY2 ...)", "'KEY' given twice".
 */
int oc__kv_key(char *word, const char *const *keys, unsigned *seen,
              char **value, char *why, size_t whylen);

/** The whole of @p s as a decimal number in [@p lo, @p hi] (no sign, no
 *  blanks, no 0x).  @return 0 and *@p out; -1 and @p out untouched. */
int oc__kv_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out);

/** The whole of @p s as a dotted IPv4 address, stored in host byte
 *  order.  @return 0 and *@p ip; -1 and @p ip untouched. */
int oc__kv_ipv4(const char *s, uint32_t *ip);

/** A.B.C.D[/0..32] (no length: /32) or "any" (length 0): the address is
 *  stored masked to the length, in host byte order.
 *  @return 0 and *@p ip, *@p len; -1 and both untouched. */
int oc__kv_prefix(const char *s, uint32_t *ip, uint8_t *len);

/** An IPv6 prefix ADDR[/0..128] (no length: /128): the address (network
 *  byte order, as inet_pton writes it) is stored with the bits past the
 *  length cleared.  "any" is not accepted (the family would be unknown).
 *  @return 0 and *@p a, *@p len; -1 and both untouched. */
int oc__kv_prefix6(const char *s, uint8_t a[16], uint8_t *len);

#endif
