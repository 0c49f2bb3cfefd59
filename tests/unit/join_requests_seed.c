/*
 * join_requests_seed.c: a store with the join service's nodes and join
 * requests, written through the store's own API, for
 * tests/join_requests_cli.sh (fleetctl join-requests | site | node).
 * Usage: join_requests_seed DIR
 *
 *   pools:    pool-a, pool-b
 *   nodes:    site_a, site_b (role site, site-1), site_c (site, site-2),
 *             node_n (node, pool-a), node_p (node, pool-b); each joined with
 *             a one-use token and one certificate
 *   requests: jr_live... (discovery, site-1, pending for an hour, the
 *             newest), jr_deny... (pending, for an hour), jr_gone...
 *             (pending, expired a minute ago, the oldest)
 *
 * The requests are put as the discovery attestor puts them: inside the
 * join transaction (store_int.h's handle, opened here as
 * fleet_store_join_tx opens it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>
#include <openssl/x509.h>

#include "fleetd/store/store.h"
#include "fleetd/store/store_int.h"
#include "lib/tpm_alg.h"
#include "tests/unit/x509_mint.h"

#define CHECK(call)                                                                   \
	do {                                                                          \
		fleet_err e_ = (call);                                                \
		if (e_) {                                                             \
			fprintf(stderr, "join_requests_seed: %s: %s: %s\n", #call,    \
				fleet_err_str(e_), fleet_store_errmsg(st));           \
			return 1;                                                     \
		}                                                                     \
	} while (0)

static int join(struct fleet_store *st, const char *pool, const char *node, const char *role,
		const char *site)
{
	static unsigned serial;
	char tok[FLEET_STORE_TOKEN_ID_LEN + 1];
	uint8_t secret[32], h[32];
	snprintf(tok, sizeof(tok), "%026u", ++serial);
	memset(secret, (int)serial, sizeof(secret));
	if (fleet_hash(FLEET_ALG_SHA256, secret, 32, h) != FLEET_OK)
		return 1;
	time_t now = time(NULL);
	struct fleet_store_token_in t = {
		.id = tok, .pool = pool, .role = role, .site = site, .secret_sha256 = h, .uses = 1,
		.created_at = now, .expires_at = now + 3600, .created_by = "seed",
	};
	CHECK(fleet_store_token_create(st, &t));
	EVP_PKEY *k = mint_key_ec();
	struct mint m = {.key = k, .cn = node, .not_before = now - 60, .not_after = now + 86400};
	X509 *x = mint_cert(&m);
	size_t len;
	unsigned char *der = mint_der(x, &len);
	X509_free(x);
	EVP_PKEY_free(k);
	struct fleet_store_join_in in = {
		.token_id = tok, .token_secret = secret, .token_role = role, .node_id = node,
		.node_role = role, .attestor = "join-token", .cert_der = der, .cert_len = len,
		.now = now,
	};
	fleet_err e = fleet_store_join_commit(st, &in, NULL, NULL);
	free(der);
	CHECK(e);
	return 0;
}

static fleet_err put(struct fleet_store *st, const char *id, char hw, int64_t created,
		     int64_t expires)
{
	struct fleet_store_join_request r;
	memset(&r, 0, sizeof(r));
	snprintf(r.id, sizeof(r.id), "%s", id);
	snprintf(r.attestor, sizeof(r.attestor), "discovery");
	snprintf(r.site, sizeof(r.site), "site-1");
	memset(r.hw_key, hw, 64);
	memset(r.csr_sha256, 'c', 64);
	snprintf(r.mac, sizeof(r.mac), "52:54:00:00:00:%c%c", hw, hw);
	r.created_at = created;
	r.expires_at = expires;
	struct fleet_store_tx tx = {.st = st, .now = time(NULL)};
	st_lock(st);
	fleet_err e = st_begin(st);
	if (!e) {
		if ((e = fleet_store_tx_join_request_put(&tx, &r)))
			st_rollback(st);
		else
			e = st_commit(st);
	}
	return st_unlock(st, e);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: join_requests_seed DIR\n");
		return 2;
	}
	struct fleet_store *st = NULL;
	struct fleet_errctx sec = {0};
	char err[sizeof(sec.detail) + 80];
	if (fleet_store_open(argv[1], FLEET_STORE_RW, &st, &sec)) {
		fprintf(stderr, "join_requests_seed: %s\n", fleet_errctx_text(&sec, err, sizeof(err)));
		return 1;
	}
	struct fleet_store_pool a = {.id = "pool-a", .owner = "root", .created_at = 100};
	struct fleet_store_pool b = {.id = "pool-b", .owner = "ops", .created_at = 100};
	CHECK(fleet_store_pool_create(st, &a));
	CHECK(fleet_store_pool_create(st, &b));
	if (join(st, "pool-a", "site_a", "site", "site-1") ||
	    join(st, "pool-a", "site_b", "site", "site-1") ||
	    join(st, "pool-a", "site_c", "site", "site-2") ||
	    join(st, "pool-a", "node_n", "node", NULL) || join(st, "pool-b", "node_p", "node", NULL))
		return 1;
	int64_t now = time(NULL);
	CHECK(put(st, "jr_gone0000000000000000000000", 'a', now - 600, now - 60));
	CHECK(put(st, "jr_deny0000000000000000000000", 'b', now - 300, now + 3600));
	CHECK(put(st, "jr_live0000000000000000000000", 'd', now - 100, now + 3600));
	fleet_store_close(st);
	return 0;
}
