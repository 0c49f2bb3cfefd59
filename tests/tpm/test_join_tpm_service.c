/*
 * test_join_tpm_service.c: fleet-join's tpm attestor (tink-attest/
 * join_client.h FJ9-FJ11) against the join service itself
 * (fleet_join_handle, fleet_join_renew: the code fleetd's HTTPS routes call)
 * over a real store and CA, on a real TPM (swtpm): the contract of
 * lib/tpm_join_evidence.h seen from both of its sides at once. The
 * transport hands the request's bytes to the service and its answer back;
 * everything else is the programs' own code.
 */
#include "tests/store/store_location.h"
#include "tests/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/rand.h>
#include <openssl/x509.h>

#include "fleetd/join/join.h"
#include "fleetd/obs/metrics.h"
#include "fleetd/store/store.h"
#include "lib/ca.h"
#include "lib/hex.h"
#include "lib/tpm.h"
#include "lib/tpm_join_evidence.h"
#include "lib/token_seal.h"
#include "lib/x509_ek.h"
#include "tests/tpm/swtpm_harness.h"
#include "tink-attest/join_client.h"
#include "tink-attest/tpm_client.h"
#include "tink-attest/tpm_join.h"

struct fx {
	struct swtpm sw;
	char *dir;
	char loc[1024]; /* dir, or its PostgreSQL database (store_location.h) */
	char key[600], chain[600];
	struct fleet_store *st;
	struct fleet_ca *ca;
	struct fleet_seal_key *seal;
	struct fleet_metrics *metrics;
	struct fleet_ek_roots *roots;
	struct fleet_tpm_resolve resolve;
	struct fleet_tpm_attestor_config tpm;
	struct fleet_join *j;
	struct fj_pins pins;
	int joins, renews;
	uint8_t ak_name[TINK_NAME_MAX];
	size_t ak_name_len;
};

static enum tink_tx_result service_post(void *ctx, const char *path,
					const struct fleet_buf *body, size_t max_reply,
					struct fleet_buf *reply, long *http,
					struct fleet_errctx *ec)
{
	struct fx *f = ctx;
	const char *reason = NULL;
	int status;
	(void)max_reply;
	(void)ec;
	fb_reset(reply);
	if (strcmp(path, "/v1/renew") == 0) {
		f->renews++;
		status = fleet_join_renew(f->j, "127.0.0.1", body->data, body->len, reply, &reason);
	} else {
		f->joins++;
		status = fleet_join_handle(f->j, "127.0.0.1", body->data, body->len, reply,
					   &reason);
	}
	if (status != 200)
		fprintf(stderr, "service: HTTP %d (%s)\n", status, reason ? reason : "-");
	*http = status;
	return TINK_TX_OK;
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct fleet_errctx ec = {0};
	struct tink_tpm t;
	struct tink_ek ek;
	TPM2B_PUBLIC ak;
	uint8_t h[32];
	char cadir[700], line[256], hex[65];

	assert_non_null(f);
	if (swtpm_start(&f->sw, NULL) != 0) {
		free(f);
		return -1;
	}
	f->dir = make_temp_dir("join-tpm-service");
	snprintf(f->key, sizeof(f->key), "%s/node.key", f->dir);
	snprintf(f->chain, sizeof(f->chain), "%s/node.pem", f->dir);
	/* the machine's EK (for the resolve list) and AK name, then the TPM
	 * is left to fleet-join */
	if (tink_tpm_open(&t, f->sw.tcti) != 0 || tink_join_ek(&t, &ek) != 0 ||
	    tink_ak_name(&t, &ak, f->ak_name, &f->ak_name_len) != 0)
		fail_msg("TPM: %s", t.err);
	assert_int_equal(fleet_tpm_public_spki_sha256(&ek.pub.publicArea, h), FLEET_OK);
	fleet_hex_encode(h, 32, hex);
	tink_ek_free(&ek);
	tink_tpm_close(&t);

	store_location_new(f->dir, f->loc, sizeof(f->loc));
	assert_int_equal(fleet_store_open(f->loc, FLEET_STORE_RW, &f->st, &ec), FLEET_OK);
	struct fleet_store_pool p = {.id = "pool-a", .owner = "root", .created_at = 1};
	assert_int_equal(fleet_store_pool_create(f->st, &p), FLEET_OK);
	snprintf(cadir, sizeof(cadir), "%s/ca", f->dir);
	assert_int_equal(fleet_ca_init(cadir, "fleet test CA", 30, &ec), FLEET_OK);
	assert_int_equal(fleet_ca_load(cadir, &f->ca, &ec), FLEET_OK);
	assert_int_equal(fleet_seal_key_generate(&f->seal), FLEET_OK);
	if (fleet_ek_roots_load(f->sw.roots, &f->roots, &ec))
		fail_msg("roots: %s", ec.detail);
	snprintf(line, sizeof(line), "%s pool=pool-a\n", hex);
	if (fleet_tpm_resolve_parse((const uint8_t *)line, strlen(line), &f->resolve, &ec))
		fail_msg("resolve: %s", ec.detail);
	assert_int_equal(RAND_bytes(f->tpm.challenge_key, 32), 1);
	f->tpm.ek_roots = f->roots;
	f->tpm.challenge_ttl_seconds = 300;
	f->tpm.resolve = &f->resolve;
	snprintf(f->tpm.role, sizeof(f->tpm.role), "node");
	struct fleet_join_config jc = {
		.store = f->st, .ca = f->ca, .seal = f->seal, .trust_domain = "fleet.test",
		.cert_ttl_seconds = 3600, .metrics = f->metrics = fleet_metrics_new(),
		.tpm = &f->tpm,
	};
	if (!(f->j = fleet_join_new(&jc, &ec)))
		fail_msg("join service: %s", ec.detail);
	f->pins.n = 1;
	f->pins.certs[0] = X509_dup(fleet_ca_cert(f->ca));
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	fleet_join_free(f->j);
	fleet_tpm_resolve_free(&f->resolve);
	fleet_ek_roots_free(f->roots);
	fleet_metrics_free(f->metrics);
	fleet_seal_key_free(f->seal);
	fleet_ca_free(f->ca);
	fleet_store_close(f->st);
	store_location_free(f->loc);
	fj_pins_free(&f->pins);
	swtpm_stop(&f->sw);
	rm_rf(f->dir);
	free(f->dir);
	free(f);
	return 0;
}

/* CHAIN's leaf names this TPM's AK (the statement a renewal must prove). */
static void leaf_names_the_ak(struct fx *f)
{
	struct fleet_errctx ec = {0};
	struct fj_pins chain;
	uint8_t name[TINK_NAME_MAX];
	size_t nlen = 0;
	bool found = false;

	assert_int_equal(fj_chain_read(f->chain, &chain, &ec), FLEET_OK);
	assert_int_equal(fj_leaf_ak_statement(chain.certs[0], &found, name, sizeof(name), &nlen,
					      &ec),
			 FLEET_OK);
	assert_true(found);
	assert_int_equal(nlen, f->ak_name_len);
	assert_memory_equal(name, f->ak_name, nlen);
	fj_pins_free(&chain);
}

static void key_generation_is(struct fx *f, unsigned gen)
{
	struct fleet_errctx ec = {0};
	struct fj_key k;
	assert_int_equal(fj_key_load(f->key, &k, &ec), FLEET_OK);
	assert_true(k.in_tpm);
	assert_int_equal(k.gen, gen);
	fj_key_free(&k);
}

static void join_and_renew_through_the_service(void **state)
{
	struct fx *f = *state;
	struct fj_result res;
	struct tink_transport tx = {.post = service_post, .ctx = f};
	struct fj_join_opts o = {.attestor = "tpm", .tcti = f->sw.tcti, .max_wait = 0,
				 .key_out = f->key, .cert_out = f->chain};
	struct fj_renew_opts r = {.key = f->key, .cert = f->chain, .tcti = f->sw.tcti};

	int rc = fj_join(&o, &f->pins, &tx, NULL, &res);
	if (rc != FJ_EXIT_OK)
		fail_msg("join: %d %s", rc, res.message);
	assert_int_equal(f->joins, 2); /* round 1's challenge, round 2's admission */
	assert_true(res.node_id[0]);
	leaf_names_the_ak(f);
	key_generation_is(f, 0);
	char node[sizeof(res.node_id)];
	snprintf(node, sizeof(node), "%s", res.node_id);

	/* each renewal: the next generation, certified by the same AK; the
	 * statement carried forward */
	for (unsigned gen = 1; gen <= 2; gen++) {
		rc = fj_renew(&r, &f->pins, &tx, NULL, &res);
		if (rc != FJ_EXIT_OK)
			fail_msg("renew %u: %d %s", gen, rc, res.message);
		assert_string_equal(res.node_id, node);
		assert_int_equal(f->renews, (int)gen);
		leaf_names_the_ak(f);
		key_generation_is(f, gen);
	}
}

int main(void)
{
	swtpm_require_or_skip();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(join_and_renew_through_the_service, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
