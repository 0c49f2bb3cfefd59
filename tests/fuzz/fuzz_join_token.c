/*
 * fuzz_join_token.c: fleet_join_token_decode (lib/join_token.h JT1) on
 * arbitrary bytes: a refusal names its reason and leaves nothing; an
 * accepted token encodes back to the same bytes.
 * Seed: tests/fuzz/corpus/fuzz_join_token/valid (a token's 62 bytes).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/join_token.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fleet_join_token t;
	struct fleet_errctx ec = {0};
	uint8_t again[FLEET_JOIN_TOKEN_LEN];
	if (fleet_join_token_decode(data, size, &t, &ec) != FLEET_OK) {
		if (!ec.reason || t.id[0])
			abort();
		return 0;
	}
	if (fleet_join_token_encode(&t, again) != FLEET_OK || size != sizeof(again) ||
	    memcmp(again, data, size) != 0)
		abort();
	fleet_join_token_wipe(&t);
	return 0;
}
