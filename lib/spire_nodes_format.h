/*
 * spire_nodes_format.h: spire-nodes.json, defined once. fleetd writes the
 * file (fleetd/spire/), the root applier on the SPIRE host reads it
 * (spire-server-fleet-entries/), and the applier links nothing of fleetd
 * (docs/ARCHITECTURE.md): both sides use this module's struct, limits,
 * rules, encoder and decoder, so what one writes the other reads. The format
 * is docs/spire-nodes.md.
 *
 *   {"version": 1, "serial": 42, "generated_at": "2026-11-30T05:00:00Z",
 *    "trust_domain": "fleet.example",
 *    "eligible": [{"name", "ek_hash", "ek_hash_ecc" | null, "ldevid_sha1": [...]}],
 *    "revoked":  [{... the same ..., "not_after": "2027-01-01T00:00:00Z"}]}
 *
 * The rules (fleet_spire_nodes_check): every field present, no other field;
 * version 1; serial 0..2^53-1; times UTC YYYY-MM-DDTHH:MM:SSZ, 1970..9999; a
 * SPIFFE trust domain; names 1..63 of [A-Za-z0-9._-] starting with a letter
 * or digit, unique across both lists, none another's plus "-ecc" (the
 * applier's ECC entry ID); ek_hash 64 lowercase hex, ek_hash_ecc null or 64
 * lowercase hex other than ek_hash; no two eligible entries share an EK
 * hash; at most FLEET_SPIRE_LDEVID_MAX fingerprints of 40 lowercase hex, no
 * repeats; not_after in revoked entries only; each list at most
 * FLEET_SPIRE_LIST_MAX entries. The canonical form (what the encoder writes,
 * and so fleetd) also has both lists sorted by name and each entry's
 * fingerprints sorted, so equal content is equal bytes; the decoder accepts
 * any order and sorts.
 *
 * A rejection's sentence (in ec->detail, lib/fleet_err.h; ec may be NULL)
 * names the rule and where ("eligible[3].ek_hash must be ..."), never the
 * offending bytes, so it is safe to log.
 */
#ifndef FLEET_SPIRE_NODES_FORMAT_H
#define FLEET_SPIRE_NODES_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/fleet_err.h"

#define FLEET_SPIRE_NODES_VERSION 1
/* A SPIFFE trust domain name is at most 255 bytes. */
#define FLEET_SPIRE_TRUST_DOMAIN_MAX 255
/* Names the format carries: 1..63 of [A-Za-z0-9._-], starting with a
 * letter or digit (a SPIFFE path segment and a registration-ID suffix). */
#define FLEET_SPIRE_NAME_MAX 63
/* LDevID fingerprints in one entry: fleetd issues one LDevID at a time, so
 * more than a few is damage, not a fleet. */
#define FLEET_SPIRE_LDEVID_MAX 16
/* Serials stay integers every JSON reader holds exactly (2^53 - 1). */
#define FLEET_SPIRE_SERIAL_MAX INT64_C(9007199254740991)

/*
 * Entries per list. A large fleet is 50,000 machines (issue 10); each list
 * holds twice that, because a list is not only today's fleet: revoked keeps a
 * machine that left until its last certificate expires, so a fleet being
 * replaced has its old and its new machines listed at once. Past it the
 * writer refuses the whole document (the previous file stands, the pass
 * journals why) rather than write one the reader would refuse.
 */
#define FLEET_SPIRE_LIST_MAX 100000

/*
 * The file-size cap follows from the entry caps, so it never refuses a
 * document the entry caps allow. One entry at its longest, as the encoder
 * writes it (two-space indent, the entry at depth two), in bytes:
 *
 *     "    {\n"                                       6
 *     "      \"name\": \"<63>\",\n"                   81
 *     "      \"ek_hash\": \"<64>\",\n"                85
 *     "      \"ek_hash_ecc\": \"<64>\",\n"            89
 *     "      \"ldevid_sha1\": [\n"                    23
 *     16 x "        \"<40>\",\n", the last no ","    831
 *     "      ],\n"                                    9
 *     "      \"not_after\": \"<20>\"\n"               42
 *     "    },\n"                                      7   = 1173
 *
 * and the rest of the document at its longest (serial 16 digits, a
 * 255-byte trust domain, both lists' brackets) is 409 bytes, rounded up to
 * 512. Both lists full of such entries: 512 + 2 x 100,000 x 1173 bytes,
 * about 224 MiB. That worst case is damage (16 unexpired LDevIDs on every
 * machine); a real entry, one LDevID, is about 240 bytes, so 50,000
 * machines are about 12 MB (tests/e2e/test_spire_fleet_50k.c).
 */
#define FLEET_SPIRE_ENTRY_MAX_BYTES 1173
#define FLEET_SPIRE_HEAD_MAX_BYTES 512
#define FLEET_SPIRE_NODES_MAX_BYTES                                                          \
	((size_t)FLEET_SPIRE_HEAD_MAX_BYTES +                                                 \
	 2 * (size_t)FLEET_SPIRE_LIST_MAX * FLEET_SPIRE_ENTRY_MAX_BYTES)

/* One machine in either list. */
struct fleet_spire_node {
	char name[FLEET_SPIRE_NAME_MAX + 1];
	char ek_hash[65];     /* 64 lowercase hex */
	char ek_hash_ecc[65]; /* "": null, the TPM has no ECC EK */
	size_t n_ldevid;
	char (*ldevid_sha1)[41]; /* malloc'd; lowercase hex, sorted */
	int64_t not_after;       /* revoked only (0 in eligible): the latest notAfter */
};

/* The document. */
struct fleet_spire_nodes {
	int version; /* FLEET_SPIRE_NODES_VERSION */
	int64_t serial;
	int64_t generated_at; /* seconds since the epoch, UTC */
	char trust_domain[FLEET_SPIRE_TRUST_DOMAIN_MAX + 1];
	struct fleet_spire_node *eligible; /* by name */
	size_t n_eligible;
	struct fleet_spire_node *revoked; /* by name */
	size_t n_revoked;
};

/* True when s is a name the format carries (FLEET_SPIRE_NAME_MAX). */
bool fleet_spire_name_ok(const char *s);
/* True when s is a trust domain the format carries: 1..255 of [a-z0-9._-]
 * (SPIFFE's trust domain characters). */
bool fleet_spire_trust_domain_ok(const char *s);

/* t as "2026-11-30T05:00:00Z"; false for a time outside years 1970..9999. */
bool fleet_spire_time_format(int64_t t, char out[21]);
/* The inverse: exactly YYYY-MM-DDTHH:MM:SSZ, a real UTC time of years
 * 1970..9999 (no leap second: POSIX time has none). */
bool fleet_spire_time_parse(const char *s, int64_t *t);

/* Every rule above, the canonical order included: FLEET_OK, or
 * FLEET_E_MALFORMED with the first one broken in ec (FLEET_E_NOMEM when out
 * of memory checking). What the encoder writes and the writer puts in
 * place. */
fleet_err fleet_spire_nodes_check(const struct fleet_spire_nodes *doc, struct fleet_errctx *ec);

/* The canonical bytes of doc (checked first: FLEET_E_MALFORMED, ec says
 * which rule), ending in a newline; *out malloc'd and NUL-terminated, *len
 * without the NUL. FLEET_E_NOMEM when out of memory. */
fleet_err fleet_spire_nodes_encode(const struct fleet_spire_nodes *doc, char **out, size_t *len,
				   struct fleet_errctx *ec);

/* The canonical head: the bytes the encoder writes before the trust domain,
 *
 *     {\n  "version": 1,\n  "serial": <digits>,\n  "generated_at": "<time>",\n
 *
 * read from the first bytes of buf alone (at most FLEET_SPIRE_HEAD_SCAN of
 * them, so it costs nothing however large the file): true when buf starts
 * with exactly that, the serial in the encoder's form (decimal, no sign, no
 * leading zero, 0..FLEET_SPIRE_SERIAL_MAX) and the time one
 * fleet_spire_time_parse takes; then *serial, *generated_at and *body (the
 * offset of what follows: the trust domain's line) are set. The writer
 * compares a file it wrote with a new encoding from *body on, so that an
 * unchanged file is known without decoding it. True says nothing of the
 * rest of the bytes: only the decoder judges a whole file. */
#define FLEET_SPIRE_HEAD_SCAN 96
bool fleet_spire_nodes_head(const char *buf, size_t len, int64_t *serial, int64_t *generated_at,
			    size_t *body);

/* Parse the bytes of a file into *out (zeroed first), strictly: every rule
 * above but the order, which it puts right (lists by name, fingerprints
 * sorted), so *out passes fleet_spire_nodes_check. More than
 * FLEET_SPIRE_NODES_MAX_BYTES is refused before parsing. On failure
 * (FLEET_E_MALFORMED, FLEET_E_NOMEM) out holds nothing to free and ec
 * says what is wrong. */
fleet_err fleet_spire_nodes_decode(const uint8_t *buf, size_t len, struct fleet_spire_nodes *out,
				   struct fleet_errctx *ec);

/* Frees both lists and zeroes doc. */
void fleet_spire_nodes_free(struct fleet_spire_nodes *doc);
/* Frees n nodes and the array. */
void fleet_spire_node_list_free(struct fleet_spire_node *v, size_t n);

/* The same content: everything but serial and generated_at. */
bool fleet_spire_nodes_same_content(const struct fleet_spire_nodes *a,
				    const struct fleet_spire_nodes *b);

/* The entry of that name in a sorted list (a checked or decoded document),
 * or NULL. */
const struct fleet_spire_node *fleet_spire_nodes_find(const struct fleet_spire_node *v, size_t n,
						      const char *name);

#endif
