/*
 * fuzz_challenge_state.c: fleet_challenge_open (lib/challenge_state.h CS2,
 * CS3) on arbitrary bytes under a fixed key and CSR hash: a refusal names
 * its reason and leaves no plaintext; nothing but a sealing made with the
 * key opens. Seed: tests/fuzz/corpus/fuzz_challenge_state/valid.
 */
#include <stdint.h>
#include <stdlib.h>

#include "lib/challenge_state.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t key[32] = {7};
	static const uint8_t csr[32] = {9};
	struct fleet_buf pt;
	struct fleet_errctx ec = {0};
	fb_init_secret(&pt, FLEET_CHALLENGE_MAX_STATE);
	fleet_err e = fleet_challenge_open(key, csr, 1000, data, size, &pt, &ec);
	if (e != FLEET_OK && (!ec.reason || pt.len != 0))
		abort();
	if (e == FLEET_OK && (pt.len < 1 || pt.len > FLEET_CHALLENGE_MAX_STATE))
		abort();
	fb_free(&pt);
	return 0;
}
