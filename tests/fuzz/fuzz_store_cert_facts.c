/*
 * fuzz_store_cert_facts.c: the store's certificate check (store_int.h
 * st_cert_facts, fleetd/store/store_cert_facts.c) against d2i_X509, which
 * it replaced on that path.
 *
 * Differential: st_cert_facts accepts exactly the inputs d2i_X509 parses
 * whole (nothing after the certificate) with a notAfter ASN1_TIME_to_tm
 * reads, and then gives the same notAfter and the SHA-1 of the input.
 * Its SPKI is never decoded into a key, which d2i_X509 does only
 * opportunistically: a difference in what the two accept is a bug here.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

#include "fleetd/store/store_int.h"
#include "lib/hex.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 1u << 20)
		return 0; /* far over any certificate the store takes */
	int64_t not_after = 0;
	char sha1[41];
	bool mine = st_cert_facts(data, size, &not_after, sha1);

	const unsigned char *p = data;
	X509 *x = d2i_X509(NULL, &p, (long)size);
	struct tm tm;
	bool theirs = x && p == data + size && ASN1_TIME_to_tm(X509_get0_notAfter(x), &tm) == 1;
	X509_free(x);
	if (mine != theirs)
		abort();
	if (mine) {
		if (not_after != (int64_t)timegm(&tm))
			abort();
		unsigned char md[20];
		char hex[41];
		unsigned int n = 0;
		if (!EVP_Digest(data, size, md, &n, EVP_sha1(), NULL) || n != 20)
			abort();
		fleet_hex_encode(md, 20, hex);
		if (strcmp(hex, sha1) != 0)
			abort();
	}
	ERR_clear_error();
	return 0;
}
