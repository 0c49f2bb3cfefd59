/*
 * fuzz_kubeconfig.c: fleet_kubeconfig_parse (fleetd/kube/kube_config.h,
 * KC2-KC11) on any bytes. It returns; a success names an https server and
 * exactly one credential; a refusal leaves the auth empty; the context's
 * detail is a NUL-terminated sentence. Files the input names are read
 * relative to a directory that does not exist.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fleetd/kube/kube_config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fleet_kube_auth a;
	struct fleet_errctx ec;
	memset(&ec, 0, sizeof(ec));
	fleet_err e = fleet_kubeconfig_parse(data, size, "/nonexistent-fuzz-dir", &a, &ec);
	if (memchr(ec.detail, 0, sizeof(ec.detail)) == NULL)
		abort();
	if (e == FLEET_OK) {
		if (strncmp(a.server, "https://", 8) != 0)
			abort();
		int creds = (a.token.len > 0) + (a.token_name[0] != 0) + (a.key_pem.len > 0);
		if (creds != 1 || (a.key_pem.len > 0) != (a.cert_pem.len > 0))
			abort();
	} else {
		if (!fleet_err_valid(e) || a.server[0] || a.token.len || a.key_pem.len)
			abort();
	}
	fleet_kube_auth_free(&a);
	return 0;
}
