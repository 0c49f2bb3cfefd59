/*
 * tpm_alg.h: TPM hash algorithm identifiers, their names as fleetd prints them
 * (the names of the expected-PCR files: sha1, sha256, sha384, sha512, sm3_256)
 * and the OpenSSL digest behind each. One table, used by the event log, quote,
 * credential and policy code alike.
 */
#ifndef FLEET_TPM_ALG_H
#define FLEET_TPM_ALG_H

#include <stddef.h>
#include <stdint.h>

#include <openssl/evp.h>

#include "lib/fleet_err.h"

#define FLEET_DIGEST_MAX 64 /* SHA-512, the largest bank digest */
#define FLEET_PCR_COUNT 24  /* PC Client PCRs 0..23 */

/* TPM_ALG_ID values (TPM 2.0 Part 2, Table 9). */
#define FLEET_ALG_SHA1 0x0004
#define FLEET_ALG_SHA256 0x000B
#define FLEET_ALG_SHA384 0x000C
#define FLEET_ALG_SHA512 0x000D
#define FLEET_ALG_SM3_256 0x0012

/* "sha256" for 0x000B; NULL for an algorithm fleetd does not know. */
const char *fleet_hash_alg_name(uint16_t alg);
/* 0x000B for "sha256"; 0 when unknown. */
uint16_t fleet_hash_alg_from_name(const char *name);
/* Digest size in bytes; 0 when unknown. */
size_t fleet_hash_alg_size(uint16_t alg);
/* The OpenSSL digest, fetched once per process and cached (thread-safe);
 * NULL when unknown or when the OpenSSL build lacks it (SM3). */
const EVP_MD *fleet_hash_alg_md(uint16_t alg);
/* One-shot digest; out must hold fleet_hash_alg_size(alg) bytes. */
fleet_err fleet_hash(uint16_t alg, const void *in, size_t len, uint8_t *out);

#endif
