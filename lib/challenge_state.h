/*
 * challenge_state.h: a two-round attestor's state, sealed to the agent
 * (issue 14, spec 001 "tpm": "an opaque state sealed under challengeKey
 * (AES-256-GCM, bound to the CSR, at most 5 minutes). It writes no row,
 * so any api replica can finish the join"). The first round seals what the
 * second must check (the MakeCredential secret, the EK and AK it was made
 * for) into the challenge's payload; the agent sends it back with its
 * answer; whichever replica holds the key opens it.
 *
 *     "fcs1" (4) || not_after be64 (8) || SHA-256(csr) (32) || nonce (12)
 *       || ciphertext (1..FLEET_CHALLENGE_MAX_STATE) || GCM tag (16)
 *
 * AES-256-GCM under the 32-byte challenge key with a random nonce, the
 * first 56 bytes (magic, not_after, the CSR's hash, nonce) the AAD.
 *
 * CS1 fleet_challenge_seal takes a 32-byte key, the CSR's SHA-256, now, a
 *     ttl of 1..FLEET_CHALLENGE_MAX_TTL seconds and 1..MAX_STATE bytes
 *     (FLEET_E_INVALID_ARG otherwise, out unchanged); not_after = now+ttl.
 * CS2 fleet_challenge_open refuses, in this order, each with its reason
 *     (FLEET_E_MALFORMED or FLEET_E_VERIFY) and state_out empty:
 *       a length or magic not the layout's           challenge-malformed
 *       a CSR hash not the request's                 challenge-for-another-csr
 *       a tag that does not verify (another key,
 *         any changed bit)                           challenge-tag
 *       now past not_after, or a not_after more than
 *         FLEET_CHALLENGE_MAX_TTL ahead of now        challenge-expired
 *     The time is read only after the tag: it is the sealer's.
 * CS3 state_out is a wiping buffer the caller made (fb_init_secret, at
 *     least FLEET_CHALLENGE_MAX_STATE); the plaintext is counted only after
 *     the tag verified. OpenSSL's queue is left empty.
 * Tests: tests/unit/test_challenge_state.c (named after each rule); the
 * opener is fuzzed by tests/fuzz/fuzz_challenge_state.c.
 */
#ifndef FLEET_CHALLENGE_STATE_H
#define FLEET_CHALLENGE_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "lib/buf.h"
#include "lib/fleet_err.h"

#define FLEET_CHALLENGE_KEY_LEN 32
#define FLEET_CHALLENGE_MAX_STATE 4096
#define FLEET_CHALLENGE_MAX_TTL 300 /* 5 minutes */
#define FLEET_CHALLENGE_HEADER 56
#define FLEET_CHALLENGE_OVERHEAD (FLEET_CHALLENGE_HEADER + 16)

#define FLEET_CHALLENGE_REASON_MALFORMED "challenge-malformed"
#define FLEET_CHALLENGE_REASON_CSR "challenge-for-another-csr"
#define FLEET_CHALLENGE_REASON_TAG "challenge-tag"
#define FLEET_CHALLENGE_REASON_EXPIRED "challenge-expired"

fleet_err fleet_challenge_seal(const uint8_t key[FLEET_CHALLENGE_KEY_LEN],
			       const uint8_t csr_sha256[32], int64_t now, unsigned ttl,
			       const uint8_t *state, size_t len, struct fleet_buf *out);
fleet_err fleet_challenge_open(const uint8_t key[FLEET_CHALLENGE_KEY_LEN],
			       const uint8_t csr_sha256[32], int64_t now, const uint8_t *sealed,
			       size_t len, struct fleet_buf *state_out, struct fleet_errctx *ec);

#endif
