/*
 * fuzz_tpm_resolve.c: the tpm attestor's resolve list parser
 * (policy/attestors/attestor.h, fleet_tpm_resolve_parse) on arbitrary
 * bytes.
 *
 * What must hold: a refusal says which line (ec.detail is never empty) and
 * leaves nothing allocated; an accepted list has every entry findable by
 * its EK, each EK 64 lowercase hex digits and a pool.
 *
 * Seeds (tests/fuzz/corpus/fuzz_tpm_resolve/): a list with comments, a
 * site and a node, and an empty file.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy/attestors/attestor.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fleet_tpm_resolve r;
	struct fleet_errctx ec = {0};
	if (fleet_tpm_resolve_parse(data, size, &r, &ec) != FLEET_OK) {
		if (ec.detail[0] == '\0' || r.e || r.n)
			abort();
		return 0;
	}
	for (size_t i = 0; i < r.n; i++) {
		if (strlen(r.e[i].ek_hash) != 64 || !r.e[i].pool[0] ||
		    fleet_tpm_resolve_find(&r, r.e[i].ek_hash) != &r.e[i])
			abort();
	}
	fleet_tpm_resolve_free(&r);
	return 0;
}
