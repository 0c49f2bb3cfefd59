/*
 * store_join_tool.c: one token join against a store, for
 * tests/join_crash.sh (kill -9 at every durable write of the join's commit,
 * store.h N1). Usage:
 *   store_join_tool setup DIR    a store with pool-a and a one-use token
 *   store_join_tool commit DIR   the join's final round (node n1, its certificate)
 *   store_join_tool check DIR    prints "uses_left=U node=0|1 cert=0|1"
 * The secret and the certificate are fixed, so commit and check agree
 * across processes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>
#include <openssl/x509.h>

#include "fleetd/store/store.h"
#include "lib/tpm_alg.h"
#include "tests/unit/x509_mint.h"

#define TOKEN "0123456789abcdefghijklmnop"
static const uint8_t secret[32] = {9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9,
				   9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9};

/* The certificate, kept in DIR/cert.der by setup so every process has the
 * same bytes. */
static int cert(const char *dir, unsigned char **der, size_t *len, int make)
{
	char path[600];
	snprintf(path, sizeof(path), "%s/cert.der", dir);
	if (make) {
		EVP_PKEY *k = mint_key_ec();
		struct mint m = {.key = k, .cn = "n1", .not_before = 1000, .not_after = 1900000000};
		X509 *x = mint_cert(&m);
		*der = mint_der(x, len);
		X509_free(x);
		EVP_PKEY_free(k);
		FILE *f = fopen(path, "wb");
		if (!f || fwrite(*der, 1, *len, f) != *len || fclose(f) != 0)
			return -1;
		return 0;
	}
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	*der = malloc(16384);
	*len = *der ? fread(*der, 1, 16384, f) : 0;
	fclose(f);
	return *len ? 0 : -1;
}

int main(int argc, char **argv)
{
	struct fleet_store *st;
	struct fleet_errctx ec = {0};
	unsigned char *der = NULL;
	size_t len = 0;
	if (argc != 3)
		return 2;
	const char *dir = argv[2];
	if (fleet_store_open(dir, FLEET_STORE_RW, &st, &ec) != FLEET_OK) {
		fprintf(stderr, "open: %s\n", ec.detail);
		return 1;
	}
	int rc = 1;
	if (!strcmp(argv[1], "setup")) {
		uint8_t h[32];
		struct fleet_store_pool p = {.id = "pool-a", .owner = "root", .created_at = 1};
		fleet_hash(FLEET_ALG_SHA256, secret, 32, h);
		struct fleet_store_token_in in = {
			.id = TOKEN, .pool = "pool-a", .role = "node", .secret_sha256 = h, .uses = 1,
			.created_at = time(NULL), .expires_at = time(NULL) + 3600, .created_by = "test"};
		rc = fleet_store_pool_create(st, &p) || fleet_store_token_create(st, &in) ||
		     cert(dir, &der, &len, 1);
	} else if (!strcmp(argv[1], "commit")) {
		const char *why = NULL;
		if (cert(dir, &der, &len, 0) == 0) {
			struct fleet_store_join_in in = {
				.token_id = TOKEN, .token_secret = secret, .token_role = "node",
				.node_id = "n1", .node_role = "node", .attestor = "join-token",
				.cert_der = der, .cert_len = len, .now = time(NULL)};
			rc = fleet_store_join_commit(st, &in, NULL, &why) != FLEET_OK;
			if (rc)
				fprintf(stderr, "commit: %s\n", why ? why : fleet_store_errmsg(st));
		}
	} else if (!strcmp(argv[1], "check")) {
		struct fleet_store_token t;
		struct fleet_store_node n;
		if (fleet_store_token_get(st, TOKEN, &t) == FLEET_OK && cert(dir, &der, &len, 0) == 0) {
			int node = fleet_store_node_get(st, "n1", &n) == FLEET_OK;
			int c = fleet_store_node_cert_current(st, der, len, &n) == FLEET_OK;
			printf("uses_left=%u node=%d cert=%d\n", t.uses_left, node, c);
			rc = 0;
		}
	}
	free(der);
	fleet_store_close(st);
	return rc;
}
