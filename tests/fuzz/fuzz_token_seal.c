/*
 * fuzz_token_seal.c: fleet_unseal (lib/token_seal.h TS6..TS10) on any bytes
 * with a fixed key, for the purpose "join-token".
 *
 * The fixed key is the P-256 key whose private scalar is fixed_d below:
 * SHA-256("fleetd fuzz_token_seal fixed key"), made with
 * fleet_seal_key_from_scalar (lib/token_seal_int.h), so the seeds, sealed to
 * it by tests/unit/token_seal_vectors.py --seeds (valid.seal,
 * valid-max.seal, valid-one-byte.seal; and refusals of each kind), open,
 * and mutations past the key id reach the point check, the ECDH and the
 * tag. test_token_seal's test_fuzz_seed checks that valid.seal still opens.
 *
 * Each call returns; a refusal is FLEET_E_VERIFY or FLEET_E_MALFORMED with a
 * reason and an empty plaintext; OpenSSL's queue is left empty. What is
 * accepted is what decrypts: the length is the header, the tag and the
 * plaintext, the magic and key id are the key's, and changing any one bit
 * of it (here: the first nonce byte, the last tag byte) is refused.
 */
#include <openssl/err.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/token_seal.h"
#include "lib/token_seal_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint8_t fixed_d[32] = {
	0x8e, 0xe7, 0x0c, 0x7c, 0x26, 0xf1, 0xd6, 0x65, 0xa2, 0xe2, 0x34, 0xde,
	0x2c, 0x95, 0xb0, 0x13, 0x48, 0xae, 0xca, 0x68, 0x0f, 0x06, 0x19, 0xf0,
	0x78, 0x01, 0x32, 0x10, 0x89, 0xaa, 0x20, 0xd0,
};

static const struct fleet_seal_key *fixed_key(void)
{
	static struct fleet_seal_key *k;
	if (!k && fleet_seal_key_from_scalar(fixed_d, &k) != FLEET_OK)
		abort();
	return k;
}

static fleet_err open_it(const uint8_t *data, size_t size, struct fleet_buf *pt)
{
	struct fleet_errctx ec;
	fleet_err e;
	memset(&ec, 0, sizeof(ec));
	e = fleet_unseal(fixed_key(), "join-token", data, size, pt, &ec);
	if (e != FLEET_OK) {
		if ((e != FLEET_E_VERIFY && e != FLEET_E_MALFORMED) || !ec.reason || pt->len != 0)
			abort();
	}
	if (ERR_peek_error() != 0)
		abort();
	return e;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fleet_buf pt;
	uint8_t id[FLEET_SEAL_KEY_ID_LEN];

	fb_init_secret(&pt, FLEET_SEAL_MAX_PLAINTEXT);
	if (open_it(data, size, &pt) == FLEET_OK) {
		fleet_seal_key_id(fixed_key(), id);
		if (pt.len == 0 || pt.len > FLEET_SEAL_MAX_PLAINTEXT ||
		    size != FLEET_SEAL_OVERHEAD + pt.len || memcmp(data, "fsl1", 4) != 0 ||
		    memcmp(data + 4, id, sizeof(id)) != 0)
			abort();
		uint8_t *m = malloc(size);
		if (!m)
			abort();
		memcpy(m, data, size);
		m[FLEET_SEAL_HEADER_LEN - FLEET_SEAL_NONCE_LEN] ^= 1;
		if (open_it(m, size, &pt) == FLEET_OK)
			abort();
		m[FLEET_SEAL_HEADER_LEN - FLEET_SEAL_NONCE_LEN] ^= 1;
		m[size - 1] ^= 0x80;
		if (open_it(m, size, &pt) == FLEET_OK)
			abort();
		free(m);
	}
	fb_free(&pt);
	return 0;
}
