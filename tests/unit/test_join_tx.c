/*
 * test_join_tx.c: the store's join transaction (fleetd/store/store.h
 * X1-X6), each test named after the rule it holds.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

#include "fleetd/store/store.h"
#include "lib/tpm_alg.h"
#include "tests/store/store_location.h"
#include "tests/testutil.h"
#include "tests/unit/x509_mint.h"

#define TOKEN "0123456789abcdefghijklmnop"
static const uint8_t secret[32] = {7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
				   7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7};

struct fx {
	char dir[256];
	char loc[1024]; /* dir, or its PostgreSQL database (store_location.h) */
	struct fleet_store *st;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct fleet_errctx ec = {0};
	uint8_t h[32];
	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "/tmp/fleet-join-tx-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	store_location_new(f->dir, f->loc, sizeof(f->loc));
	assert_int_equal(fleet_store_open(f->loc, FLEET_STORE_RW, &f->st, &ec), FLEET_OK);
	struct fleet_store_pool p = {.id = "pool-a", .owner = "root", .created_at = 1};
	assert_int_equal(fleet_store_pool_create(f->st, &p), FLEET_OK);
	fleet_hash(FLEET_ALG_SHA256, secret, 32, h);
	struct fleet_store_token_in in = {.id = TOKEN,
					  .pool = "pool-a",
					  .role = "node",
					  .secret_sha256 = h,
					  .uses = 2,
					  .created_at = time(NULL),
					  .expires_at = time(NULL) + 3600,
					  .created_by = "test"};
	assert_int_equal(fleet_store_token_create(f->st, &in), FLEET_OK);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	fleet_store_close(f->st);
	store_location_free(f->loc);
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", f->dir);
	free(f);
	return 0;
}

static unsigned uses_left(struct fx *f)
{
	struct fleet_store_token t;
	assert_int_equal(fleet_store_token_get(f->st, TOKEN, &t), FLEET_OK);
	return t.uses_left;
}

static unsigned char *mint(const char *cn, size_t *len)
{
	EVP_PKEY *k = mint_key_ec();
	struct mint m = {.key = k, .cn = cn, .not_before = 1000, .not_after = 1900000000};
	X509 *x = mint_cert(&m);
	unsigned char *der = mint_der(x, len);
	X509_free(x);
	EVP_PKEY_free(k);
	return der;
}

/* ---- X1 + X3: a take, then a refusal or a success ------------------------------ */

struct take_arg {
	bool take;
	fleet_err then;
	const char *reason;
	struct fleet_store_token tok;
};

static fleet_err take_fn(struct fleet_store_tx *tx, void *arg)
{
	struct take_arg *a = arg;
	fleet_err e = fleet_store_tx_token(tx, TOKEN, secret, "node", a->take, &a->tok, &a->reason);
	return e ? e : a->then;
}

static void test_join_tx_rollback(void **state)
{
	struct fx *f = *state;
	struct take_arg a = {.take = true, .then = FLEET_STORE_E_STATE};
	assert_int_equal(fleet_store_join_tx(f->st, take_fn, &a), FLEET_STORE_E_STATE);
	assert_int_equal(uses_left(f), 2); /* the take rolled back with the refusal */
	a.then = FLEET_OK;
	assert_int_equal(fleet_store_join_tx(f->st, take_fn, &a), FLEET_OK);
	assert_int_equal(uses_left(f), 1);
}

static void test_join_tx_token_check_takes_nothing(void **state)
{
	struct fx *f = *state;
	struct take_arg a = {.take = false, .then = FLEET_OK};
	assert_int_equal(fleet_store_join_tx(f->st, take_fn, &a), FLEET_OK);
	assert_int_equal(uses_left(f), 2);
	assert_string_equal(a.tok.pool, "pool-a");
	assert_int_equal(a.tok.uses_left, 2);
}

struct reason_arg {
	const uint8_t *secret;
	const char *role;
	const char *reason;
};

static fleet_err reason_fn(struct fleet_store_tx *tx, void *arg)
{
	struct reason_arg *a = arg;
	return fleet_store_tx_token(tx, TOKEN, a->secret, a->role, false, NULL, &a->reason);
}

static void test_join_tx_token_reasons(void **state)
{
	struct fx *f = *state;
	static const uint8_t wrong[32] = {1};
	struct reason_arg a = {.secret = wrong, .role = "node"};
	assert_int_equal(fleet_store_join_tx(f->st, reason_fn, &a), FLEET_STORE_E_STATE);
	assert_string_equal(a.reason, "token-secret");
	struct reason_arg b = {.secret = secret, .role = "site"};
	assert_int_equal(fleet_store_join_tx(f->st, reason_fn, &b), FLEET_STORE_E_STATE);
	assert_string_equal(b.reason, "token-role");
	struct reason_arg c = {.secret = secret, .role = NULL}; /* X3: any role */
	assert_int_equal(fleet_store_join_tx(f->st, reason_fn, &c), FLEET_OK);
	assert_null(c.reason);
}

/* ---- X2 ------------------------------------------------------------------------------ */

static fleet_err now_fn(struct fleet_store_tx *tx, void *arg)
{
	int64_t *n = arg, again = 0;
	fleet_err e = fleet_store_tx_now(tx, &n[0]);
	if (!e)
		e = fleet_store_tx_now(tx, &again);
	n[1] = again;
	return e;
}

static void test_join_tx_now(void **state)
{
	struct fx *f = *state;
	int64_t n[2] = {0, 0};
	time_t before = time(NULL);
	assert_int_equal(fleet_store_join_tx(f->st, now_fn, n), FLEET_OK);
	assert_true(n[0] >= before - 1 && n[0] <= time(NULL) + 1);
	assert_int_equal(n[0], n[1]);
}

/* ---- X4, X6: nodes, certificates, reclaim ---------------------------------------------- */

struct node_arg {
	const unsigned char *a, *b;
	size_t alen, blen;
	int step;
	const char *reason;
	struct fleet_store_node node;
};

static fleet_err node_fn(struct fleet_store_tx *tx, void *arg)
{
	struct node_arg *x = arg;
	int64_t now, g = 0;
	fleet_store_tx_now(tx, &now);
	if (x->step == 0) {
		struct fleet_store_node_in in = {.id = "node_a",
						 .pool = "pool-a",
						 .role = "node",
						 .joined_by = "join-token",
						 .token = TOKEN,
						 .cert_der = x->a,
						 .cert_len = x->alen,
						 .now = now};
		return fleet_store_tx_node_insert(tx, &in);
	}
	if (x->step == 1)
		return fleet_store_tx_node_cert(tx, x->a, x->alen, &x->node, NULL, &x->reason);
	if (x->step == 2) {
		fleet_err e = fleet_store_tx_node_reclaim(tx, "node_a", x->b, x->blen, now, &g);
		return e ? e : (g == 2 ? FLEET_OK : FLEET_STORE_E_CORRUPT);
	}
	if (x->step == 3)
		return fleet_store_tx_node_cert(tx, x->b, x->blen, &x->node, NULL, &x->reason);
	/* step 4: the same id again */
	struct fleet_store_node_in in = {.id = "node_a",
					 .pool = "pool-a",
					 .role = "node",
					 .joined_by = "join-token",
					 .cert_der = x->b,
					 .cert_len = x->blen,
					 .now = now};
	return fleet_store_tx_node_insert(tx, &in);
}

static void test_join_tx_node_cert_reasons(void **state)
{
	struct fx *f = *state;
	struct node_arg x = {0};
	unsigned char *a = mint("a", &x.alen), *b = mint("b", &x.blen);
	x.a = a;
	x.b = b;
	assert_int_equal(fleet_store_join_tx(f->st, node_fn, &x), FLEET_OK);
	x.step = 1;
	assert_int_equal(fleet_store_join_tx(f->st, node_fn, &x), FLEET_OK);
	assert_string_equal(x.node.id, "node_a");
	x.step = 3; /* b is unknown before the reclaim */
	assert_int_equal(fleet_store_join_tx(f->st, node_fn, &x), FLEET_STORE_E_NOT_FOUND);
	assert_string_equal(x.reason, "cert-unknown");
	x.step = 2;
	assert_int_equal(fleet_store_join_tx(f->st, node_fn, &x), FLEET_OK);
	x.step = 1; /* a is of generation 1 now */
	assert_int_equal(fleet_store_join_tx(f->st, node_fn, &x), FLEET_STORE_E_STATE);
	assert_string_equal(x.reason, "cert-generation");
	x.step = 3;
	assert_int_equal(fleet_store_join_tx(f->st, node_fn, &x), FLEET_OK);
	assert_int_equal(x.node.generation, 2);
	x.step = 4;
	assert_int_equal(fleet_store_join_tx(f->st, node_fn, &x), FLEET_STORE_E_CONFLICT);
	free(a);
	free(b);
}

/* ---- X5 -------------------------------------------------------------------------------- */

struct use_arg {
	bool seen;
	int record;
};

static fleet_err use_fn(struct fleet_store_tx *tx, void *arg)
{
	struct use_arg *u = arg;
	fleet_err e = fleet_store_tx_use_seen(tx, "x509pop", "subject-1", &u->seen);
	if (!e && u->record)
		e = fleet_store_tx_use(tx, "x509pop", "subject-1", 4102444800LL);
	return e;
}

static void test_join_tx_use(void **state)
{
	struct fx *f = *state;
	struct use_arg u = {.record = 0};
	assert_int_equal(fleet_store_join_tx(f->st, use_fn, &u), FLEET_OK);
	assert_false(u.seen);
	u.record = 1;
	assert_int_equal(fleet_store_join_tx(f->st, use_fn, &u), FLEET_OK);
	assert_false(u.seen);
	u.record = 0;
	assert_int_equal(fleet_store_join_tx(f->st, use_fn, &u), FLEET_OK);
	assert_true(u.seen);
	u.record = 1;
	assert_int_equal(fleet_store_join_tx(f->st, use_fn, &u), FLEET_STORE_E_CONFLICT);
}

/* ---- X6: bindings ----------------------------------------------------------------------- */

struct bind_arg {
	const char *node;
	char got[FLEET_STORE_NODE_ID_MAX + 1];
	const unsigned char *der;
	size_t len;
	int insert;
};

static fleet_err bind_fn(struct fleet_store_tx *tx, void *arg)
{
	struct bind_arg *b = arg;
	int64_t now;
	fleet_err e;
	fleet_store_tx_now(tx, &now);
	if (b->insert) {
		struct fleet_store_node_in in = {.id = b->node,
						 .pool = "pool-a",
						 .role = "node",
						 .joined_by = "join-token",
						 .cert_der = b->der,
						 .cert_len = b->len,
						 .now = now};
		if ((e = fleet_store_tx_node_insert(tx, &in)))
			return e;
	}
	if ((e = fleet_store_tx_node_bind(tx, "product-uuid", "11111111-2222-3333-4444-555555555555",
					  b->node, now)))
		return e;
	return fleet_store_tx_binding(tx, "product-uuid", "11111111-2222-3333-4444-555555555555",
				      b->got);
}

static void test_join_tx_binding(void **state)
{
	struct fx *f = *state;
	size_t la, lb;
	unsigned char *a = mint("a", &la), *b = mint("b", &lb);
	struct bind_arg x = {.node = "node_a", .der = a, .len = la, .insert = 1};
	assert_int_equal(fleet_store_join_tx(f->st, bind_fn, &x), FLEET_OK);
	assert_string_equal(x.got, "node_a");
	x.insert = 0; /* the same node again is fine */
	assert_int_equal(fleet_store_join_tx(f->st, bind_fn, &x), FLEET_OK);
	struct bind_arg y = {.node = "node_b", .der = b, .len = lb, .insert = 1};
	assert_int_equal(fleet_store_join_tx(f->st, bind_fn, &y), FLEET_STORE_E_CONFLICT);
	/* ... and node_b's insert rolled back with it (X1). */
	struct fleet_store_node n;
	assert_int_equal(fleet_store_node_get(f->st, "node_b", &n), FLEET_STORE_E_NOT_FOUND);
	free(a);
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_join_tx_rollback, setup, teardown),
		cmocka_unit_test_setup_teardown(test_join_tx_token_check_takes_nothing, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_join_tx_token_reasons, setup, teardown),
		cmocka_unit_test_setup_teardown(test_join_tx_now, setup, teardown),
		cmocka_unit_test_setup_teardown(test_join_tx_node_cert_reasons, setup, teardown),
		cmocka_unit_test_setup_teardown(test_join_tx_use, setup, teardown),
		cmocka_unit_test_setup_teardown(test_join_tx_binding, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
