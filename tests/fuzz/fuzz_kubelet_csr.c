/*
 * fuzz_kubelet_csr.c: fleet_kubelet_csr_judge (fleetd/provision/
 * kubelet_csr.h) on any request bytes, as a kubelet, or whoever holds a
 * bootstrap token, sends them. It returns; a refusal names its reason;
 * OpenSSL's queue is left empty.
 */
#include <openssl/err.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "fleetd/provision/kubelet_csr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const usages[] = {"digital signature", "client auth"};
	struct fleet_kubelet_csr c = {.signer_name = FLEET_KUBELET_SIGNER,
				      .username = "system:bootstrap:abcdef",
				      .usages = usages,
				      .n_usages = 2,
				      .request = data,
				      .request_len = size};
	struct fleet_decision d = fleet_kubelet_csr_judge(&c, "abcdef", "w1");
	if (d.outcome == FLEET_REFUSED && !d.reason)
		abort();
	if (d.outcome != FLEET_PASSED && d.outcome != FLEET_REFUSED && d.outcome != FLEET_FAILED)
		abort();
	if (ERR_peek_error() != 0)
		abort();
	return 0;
}
