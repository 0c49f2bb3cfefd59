/*
 * token_seal.h: a small secret (a join token) sealed to the join service's
 * P-256 encryption key (issue 13; spec "join-token": tokens are sealed to
 * the join service's encryption key). ECDH-ES with a fresh ephemeral key,
 * HKDF-SHA256, AES-256-GCM: the shape of HPKE's DHKEM(P-256, HKDF-SHA256)
 * with AES-256-GCM in base mode, built from what OpenSSL 3.0 has (it has no
 * HPKE API; 3.2 added one). docs/join-tokens.md is the construction, its
 * bytes, what it binds, its limits and the reasons.
 *
 * The sealed bytes:
 *
 *     "fsl1" (4) || key id (8) || ephemeral point (65, uncompressed SEC1)
 *     || GCM nonce (12, random) || ciphertext (1..4096) || GCM tag (16)
 *
 *     key id = SHA-256(recipient SPKI DER)[0..8]
 *     Z      = ECDH(ephemeral, recipient), the x-coordinate (32)
 *     key    = HKDF-SHA256(IKM = Z,
 *                          salt = ephemeral point || SHA-256(recipient SPKI),
 *                          info = "fleetd seal v1" 0x00 purpose, L = 32)
 *     AAD    = the header ("fsl1" .. nonce, 89 bytes) 0x00 purpose
 *
 * The rules (each traced to a test in tests/unit/test_token_seal.c, named
 * after it; tests/fuzz/fuzz_token_seal.c holds TS6..TS11 on any bytes):
 *
 * TS1  A key is an EC P-256 key and nothing else. fleet_seal_key_load_pem
 *      reads one unencrypted PKCS#8 PEM block ("PRIVATE KEY", at most
 *      FLEET_SEAL_MAX_PEM bytes; "seal-key-pem"), of an EC key on P-256
 *      ("seal-key-type": RSA, P-384, ... are FLEET_E_UNSUPPORTED) whose
 *      private and public halves agree ("seal-key-invalid").
 *      test_key_pem_roundtrip, test_key_load_refused.
 * TS2  A key's SPKI is the one canonical DER (named curve, uncompressed
 *      point, FLEET_SEAL_SPKI_LEN bytes) and its id is the first 8 bytes of
 *      SHA-256 over it, whichever way the key came (generated, loaded from
 *      a PEM that held a compressed point or none). test_key_pem_roundtrip,
 *      test_key_id.
 * TS3  fleet_seal_key_private_pem writes a secret: out must be a wiping
 *      buffer (fb_init_secret), else FLEET_E_INVALID_ARG and nothing
 *      written; the PEM is built in OpenSSL's wiping memory BIO.
 *      test_key_pem_roundtrip.
 * TS4  fleet_seal seals only to a P-256 SPKI in the canonical form of TS2,
 *      whose point is on the curve and not the identity: RSA, P-384 and
 *      other curves are FLEET_E_UNSUPPORTED, as are a compressed point or
 *      explicit curve parameters (not what fleet_seal_key_public_spki
 *      writes, and the key id would differ); bytes that are no SPKI are
 *      FLEET_E_MALFORMED. test_seal_recipient_refused.
 * TS5  fleet_seal's purpose is 1..FLEET_SEAL_MAX_PURPOSE bytes of 0x21..0x7E
 *      (no space, no controls) and the plaintext 1..FLEET_SEAL_MAX_PLAINTEXT
 *      bytes: else FLEET_E_INVALID_ARG (a bad purpose or empty plaintext)
 *      or FLEET_E_TOO_LARGE (past the cap), and out empty. Each seal has a
 *      fresh ephemeral key and a fresh random nonce, so sealing the same
 *      token twice gives unrelated bytes. test_roundtrip, test_seal_args.
 * TS6  fleet_unseal reads untrusted bytes. Their length is exactly
 *      FLEET_SEAL_OVERHEAD plus 1..FLEET_SEAL_MAX_PLAINTEXT, else
 *      FLEET_E_MALFORMED "seal-malformed"; the first 3 bytes are "fsl"
 *      ("seal-malformed") and the 4th '1' ("seal-version").
 *      test_truncations, test_header_flips.
 * TS7  The key id is k's, else FLEET_E_VERIFY "seal-key-id" (sealed to
 *      another key; no ECDH is done). test_other_key.
 * TS8  The ephemeral point is an uncompressed SEC1 point on P-256 that is
 *      not the identity (decoded by EVP_PKEY_fromdata, then
 *      EVP_PKEY_public_check), else FLEET_E_MALFORMED "seal-point": ECDH is
 *      never run on a point off the curve. test_point_off_curve.
 * TS9  The GCM tag verifies (OpenSSL's constant-time check) over the AAD of
 *      the exact header and the purpose, under the key derived for k and
 *      the purpose, else FLEET_E_VERIFY "seal-tag": any changed bit of the
 *      nonce, ciphertext or tag, another purpose, or a forged header that
 *      names k's id over another key's sealing. test_header_flips,
 *      test_ciphertext_flips, test_wrong_purpose, test_forged_key_id.
 * TS10 pt_out must be a wiping buffer able to hold FLEET_SEAL_MAX_PLAINTEXT
 *      (fb_init_secret(b, n >= FLEET_SEAL_MAX_PLAINTEXT)), else
 *      FLEET_E_INVALID_ARG and it is not touched. Past that, every failure
 *      leaves pt_out empty (wiped), whatever it held; the refusals of
 *      TS6..TS9 name their reason in ec->reason, and OpenSSL's error queue
 *      is left empty. A caller's mistake (no key, no input, a bad purpose)
 *      is FLEET_E_INVALID_ARG; a failure of this side (memory, the crypto
 *      library) is FLEET_E_NOMEM or FLEET_E_CRYPTO; neither has a reason.
 *      test_unseal_args, and every refusal test above.
 * TS11 The ECDH secret, the derived key and every copy of the plaintext
 *      this file makes are wiped (OPENSSL_cleanse) on every path; a key is
 *      wiped when freed. (By construction; not observable by a test.)
 * TS12 The construction is pinned by a known-answer vector computed
 *      independently (Python's cryptography package; its HKDF step also by
 *      `openssl kdf`): tests/unit/token_seal_vectors.py. test_kat.
 *
 * Every out buffer is emptied first (fb_reset) and holds exactly the result
 * on success, nothing on failure.
 */
#ifndef FLEET_TOKEN_SEAL_H
#define FLEET_TOKEN_SEAL_H

#include <stddef.h>
#include <stdint.h>

#include "lib/buf.h"
#include "lib/fleet_err.h"

#define FLEET_SEAL_KEY_ID_LEN 8
#define FLEET_SEAL_MAX_PLAINTEXT 4096
#define FLEET_SEAL_MAX_PURPOSE 64
/* A P-256 SPKI in its one canonical DER form (TS2). */
#define FLEET_SEAL_SPKI_LEN 91
/* A PKCS#8 PEM of a P-256 key is about 240 bytes. */
#define FLEET_SEAL_MAX_PEM 4096

#define FLEET_SEAL_MAGIC_LEN 4
#define FLEET_SEAL_POINT_LEN 65
#define FLEET_SEAL_NONCE_LEN 12
#define FLEET_SEAL_TAG_LEN 16
/* "fsl1" || key id || ephemeral point || nonce. */
#define FLEET_SEAL_HEADER_LEN \
	(FLEET_SEAL_MAGIC_LEN + FLEET_SEAL_KEY_ID_LEN + FLEET_SEAL_POINT_LEN + FLEET_SEAL_NONCE_LEN)
/* Sealed bytes = FLEET_SEAL_OVERHEAD + plaintext length. */
#define FLEET_SEAL_OVERHEAD (FLEET_SEAL_HEADER_LEN + FLEET_SEAL_TAG_LEN)
#define FLEET_SEAL_MAX_SEALED (FLEET_SEAL_OVERHEAD + FLEET_SEAL_MAX_PLAINTEXT)

/* The join service's P-256 private key (opaque). */
struct fleet_seal_key;

/* A fresh key. */
fleet_err fleet_seal_key_generate(struct fleet_seal_key **out);
/* PKCS#8 PEM, EC P-256 only (TS1: anything else refused, reason in ec). */
fleet_err fleet_seal_key_load_pem(const uint8_t *pem, size_t len, struct fleet_seal_key **out,
				  struct fleet_errctx *ec);
/* The private key as PKCS#8 PEM (TS3: out must be a wiping buffer). */
fleet_err fleet_seal_key_private_pem(const struct fleet_seal_key *k, struct fleet_buf *out);
/* The public key, the canonical SPKI DER (TS2): what sealers are given. */
fleet_err fleet_seal_key_public_spki(const struct fleet_seal_key *k, struct fleet_buf *der_out);
/* SHA-256(SPKI DER)[0..8] (TS2). */
void fleet_seal_key_id(const struct fleet_seal_key *k, uint8_t id[FLEET_SEAL_KEY_ID_LEN]);
/* Wipes and frees; NULL is a no-op. */
void fleet_seal_key_free(struct fleet_seal_key *k);

/* Seal pt to the recipient's SPKI DER for purpose (TS4, TS5); out gets the
 * sealed bytes. */
fleet_err fleet_seal(const uint8_t *recipient_spki, size_t spki_len, const char *purpose,
		     const uint8_t *pt, size_t pt_len, struct fleet_buf *out);
/* Open sealed bytes with k for purpose (TS6..TS10); pt_out (a wiping buffer)
 * gets the plaintext. */
fleet_err fleet_unseal(const struct fleet_seal_key *k, const char *purpose, const uint8_t *sealed,
		       size_t len, struct fleet_buf *pt_out, struct fleet_errctx *ec);

#endif
