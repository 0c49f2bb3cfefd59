/*
 * test_attest_wire.c: the six protocol messages and the two documents they
 * carry. Each message round-trips (encode, decode, compare, encode again to
 * the same bytes); then a valid message is changed in exactly one place per
 * case, and each change must be refused with the field named in ec.
 */
#include "tests/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "lib/attest_wire.h"

typedef fleet_err (*decode_fn)(const uint8_t *, size_t, void *, struct fleet_errctx *);
typedef void (*free_fn)(void *);

static struct fleet_wire_bytes blob(size_t n, uint8_t seed)
{
	struct fleet_wire_bytes b = {malloc(n ? n : 1), n};
	assert_non_null(b.data);
	for (size_t i = 0; i < n; i++)
		b.data[i] = (uint8_t)(seed + i * 7);
	return b;
}

static void bytes_eq(const struct fleet_wire_bytes *a, const struct fleet_wire_bytes *b)
{
	assert_int_equal(a->len, b->len);
	assert_memory_equal(a->data, b->data, a->len);
}

static const char report_doc[] =
	"{\"chassis_id\":\"00:1c:73:aa:bb:cc\",\"port_id\":\"Ethernet7\",\"system_name\":\"tor-a\"}";

static void sample_intake(struct fleet_wire_intake *m)
{
	memset(m, 0, sizeof(*m));
	strcpy(m->serial, "SN-0001");
	strcpy(m->product_uuid, "4c4c4544-0042-3510-8052-b4c04f334d32");
	strcpy(m->bios_version, "2.19.1 \xc3\xa9"); /* UTF-8 is fine */
	m->n_macs = 2;
	strcpy(m->macs[0], "aa:bb:cc:dd:ee:ff");
	strcpy(m->macs[1], "00:11:22:33:44:55");
	m->network_report = blob(sizeof(report_doc) - 1, 0);
	memcpy(m->network_report.data, report_doc, sizeof(report_doc) - 1);
	m->ek_rsa.present = true;
	m->ek_rsa.pub = blob(280, 1);
	m->ek_rsa.cert = blob(1200, 2);
	m->ek_ecc.present = false;
	m->ak_public = blob(90, 3);
	m->ldevid_public = blob(88, 4);
	m->ldevid_request = blob(120, 5);
	m->ldevid_certify_attest = blob(150, 6);
	m->ldevid_certify_sig = blob(72, 7);
}

static void sample_answer(struct fleet_wire_answer *m)
{
	memset(m, 0, sizeof(*m));
	memset(m->session, 0x5a, sizeof(m->session));
	memset(m->proof, 0xa5, sizeof(m->proof));
	m->quote_attest = blob(145, 8);
	m->quote_sig = blob(72, 9);
	static const uint8_t idx[] = {0, 1, 7, 23};
	for (size_t i = 0; i < 4; i++) {
		m->pcrs[i].alg = FLEET_ALG_SHA256;
		m->pcrs[i].index = idx[i];
		m->pcrs[i].size = 32;
		memset(m->pcrs[i].digest, (int)(0x10 + i), 32);
	}
	m->pcrs[4].alg = FLEET_ALG_SHA384;
	m->pcrs[4].index = 0;
	m->pcrs[4].size = 48;
	memset(m->pcrs[4].digest, 0x77, 48);
	m->n_pcrs = 5;
	m->event_log = blob(3000, 10);
	m->network_report = blob(sizeof(report_doc) - 1, 0);
	memcpy(m->network_report.data, report_doc, sizeof(report_doc) - 1);
}

/* Encode, decode into a fresh struct, re-encode: same bytes. */
#define ROUND_TRIP(type, in, out)                                                        \
	do {                                                                             \
		struct fleet_buf b1_, b2_;                                               \
		struct fleet_errctx ec_ = {0};                                           \
		fb_init(&b1_);                                                           \
		fb_init(&b2_);                                                           \
		assert_int_equal(fleet_wire_##type##_encode(in, &b1_), FLEET_OK);        \
		if (fleet_wire_##type##_decode(b1_.data, b1_.len, out, &ec_) != FLEET_OK) \
			fail_msg("decode: %s", ec_.detail);                              \
		assert_int_equal(fleet_wire_##type##_encode(out, &b2_), FLEET_OK);       \
		assert_int_equal(b1_.len, b2_.len);                                      \
		assert_memory_equal(b1_.data, b2_.data, b1_.len);                        \
		fb_free(&b1_);                                                           \
		fb_free(&b2_);                                                           \
	} while (0)

static void test_round_trip_intake(void **st)
{
	struct fleet_wire_intake a, b;
	(void)st;
	sample_intake(&a);
	ROUND_TRIP(intake, &a, &b);
	assert_string_equal(a.serial, b.serial);
	assert_string_equal(a.product_uuid, b.product_uuid);
	assert_string_equal(a.bios_version, b.bios_version);
	assert_int_equal(b.n_macs, 2);
	assert_string_equal(b.macs[1], "00:11:22:33:44:55");
	bytes_eq(&a.network_report, &b.network_report);
	assert_true(b.ek_rsa.present);
	assert_false(b.ek_ecc.present);
	bytes_eq(&a.ek_rsa.pub, &b.ek_rsa.pub);
	bytes_eq(&a.ek_rsa.cert, &b.ek_rsa.cert);
	bytes_eq(&a.ak_public, &b.ak_public);
	bytes_eq(&a.ldevid_public, &b.ldevid_public);
	bytes_eq(&a.ldevid_request, &b.ldevid_request);
	bytes_eq(&a.ldevid_certify_attest, &b.ldevid_certify_attest);
	bytes_eq(&a.ldevid_certify_sig, &b.ldevid_certify_sig);
	fleet_wire_intake_free(&b);
	/* With both EKs. */
	a.ek_ecc.present = true;
	a.ek_ecc.pub = blob(122, 11);
	a.ek_ecc.cert = blob(900, 12);
	ROUND_TRIP(intake, &a, &b);
	assert_true(b.ek_ecc.present);
	bytes_eq(&a.ek_ecc.cert, &b.ek_ecc.cert);
	fleet_wire_intake_free(&b);
	fleet_wire_intake_free(&a);
}

static void test_round_trip_replies(void **st)
{
	struct fleet_wire_intake_reply r = {0}, r2;
	struct fleet_wire_verdict v = {0}, v2;
	struct fleet_wire_confirm c = {0}, c2;
	struct fleet_wire_confirm_reply cr = {0}, cr2;
	(void)st;

	r.status = FLEET_WIRE_CHALLENGE;
	memset(r.session, 1, 32);
	memset(r.nonce, 2, 32);
	r.cred_rsa.present = true;
	r.cred_rsa.id_object = blob(68, 1);
	r.cred_rsa.enc_secret = blob(258, 2);
	r.cred_ecc.present = true;
	r.cred_ecc.id_object = blob(84, 3);
	r.cred_ecc.enc_secret = blob(100, 4);
	strcpy(r.pcr_selection, "sha256:0,1,2,3,4,5,7");
	r.deadline = 1796018400; /* 2026-11-30T06:00:00Z */
	ROUND_TRIP(intake_reply, &r, &r2);
	assert_int_equal(r2.status, FLEET_WIRE_CHALLENGE);
	assert_memory_equal(r2.session, r.session, 32);
	assert_memory_equal(r2.nonce, r.nonce, 32);
	bytes_eq(&r.cred_rsa.enc_secret, &r2.cred_rsa.enc_secret);
	bytes_eq(&r.cred_ecc.id_object, &r2.cred_ecc.id_object);
	assert_string_equal(r2.pcr_selection, r.pcr_selection);
	assert_int_equal(r2.deadline, r.deadline);
	fleet_wire_intake_reply_free(&r2);
	fleet_wire_intake_reply_free(&r);
	r.status = FLEET_WIRE_PENDING;
	ROUND_TRIP(intake_reply, &r, &r2);
	assert_int_equal(r2.status, FLEET_WIRE_PENDING);
	assert_false(r2.cred_rsa.present);

	v.status = FLEET_WIRE_ADMITTED;
	v.lak_cert = blob(700, 5);
	v.ldevid_cert = blob(710, 6);
	v.ca_cert = blob(500, 7);
	ROUND_TRIP(verdict, &v, &v2);
	assert_int_equal(v2.status, FLEET_WIRE_ADMITTED);
	bytes_eq(&v.lak_cert, &v2.lak_cert);
	bytes_eq(&v.ldevid_cert, &v2.ldevid_cert);
	bytes_eq(&v.ca_cert, &v2.ca_cert);
	fleet_wire_verdict_free(&v2);
	fleet_wire_verdict_free(&v);
	v.status = FLEET_WIRE_REFUSED;
	ROUND_TRIP(verdict, &v, &v2);
	assert_int_equal(v2.status, FLEET_WIRE_REFUSED);

	memset(c.session, 9, 32);
	c.signature = blob(72, 8);
	ROUND_TRIP(confirm, &c, &c2);
	assert_memory_equal(c2.session, c.session, 32);
	bytes_eq(&c.signature, &c2.signature);
	fleet_wire_confirm_free(&c2);
	fleet_wire_confirm_free(&c);

	cr.status = FLEET_WIRE_CONFIRMED;
	ROUND_TRIP(confirm_reply, &cr, &cr2);
	assert_false(cr2.has_provision);
	cr.has_provision = true;
	cr.code.present = true;
	cr.code.id_object = blob(68, 9);
	cr.code.enc_secret = blob(256, 10);
	cr.proof = blob(40, 11);
	ROUND_TRIP(confirm_reply, &cr, &cr2);
	assert_true(cr2.has_provision);
	bytes_eq(&cr.code.enc_secret, &cr2.code.enc_secret);
	bytes_eq(&cr.proof, &cr2.proof);
	fleet_wire_confirm_reply_free(&cr2);
	fleet_wire_confirm_reply_free(&cr);
}

static void test_round_trip_answer(void **st)
{
	struct fleet_wire_answer a, b;
	(void)st;
	sample_answer(&a);
	ROUND_TRIP(answer, &a, &b);
	assert_memory_equal(a.session, b.session, 32);
	assert_memory_equal(a.proof, b.proof, 32);
	bytes_eq(&a.quote_attest, &b.quote_attest);
	bytes_eq(&a.quote_sig, &b.quote_sig);
	bytes_eq(&a.event_log, &b.event_log);
	bytes_eq(&a.network_report, &b.network_report);
	assert_int_equal(b.n_pcrs, 5);
	for (size_t i = 0; i < 5; i++) {
		assert_int_equal(a.pcrs[i].alg, b.pcrs[i].alg);
		assert_int_equal(a.pcrs[i].index, b.pcrs[i].index);
		assert_int_equal(a.pcrs[i].size, b.pcrs[i].size);
		assert_memory_equal(a.pcrs[i].digest, b.pcrs[i].digest, a.pcrs[i].size);
	}
	fleet_wire_answer_free(&b);
	fleet_wire_answer_free(&a);
}

static void test_round_trip_documents(void **st)
{
	struct fleet_network_report r = {0}, r2;
	struct fleet_ldevid_request q = {0}, q2;
	struct fleet_buf b;
	struct fleet_wire_bytes w;
	(void)st;
	strcpy(r.chassis_id, "00:1c:73:aa:bb:cc");
	strcpy(r.port_id, "Ethernet7");
	strcpy(r.system_name, "tor-a.folly");
	fb_init(&b);
	assert_int_equal(fleet_network_report_encode(&r, &b), FLEET_OK);
	w.data = b.data;
	w.len = b.len;
	assert_int_equal(fleet_network_report_parse(&w, &r2, NULL), FLEET_OK);
	assert_memory_equal(&r, &r2, sizeof(r));
	fb_free(&b);
	strcpy(q.serial, "SN-0001");
	memset(q.spki_sha256, 0xc3, 32);
	fb_init(&b);
	assert_int_equal(fleet_ldevid_request_encode(&q, &b), FLEET_OK);
	w.data = b.data;
	w.len = b.len;
	assert_int_equal(fleet_ldevid_request_parse(&w, &q2, NULL), FLEET_OK);
	assert_memory_equal(&q, &q2, sizeof(q));
	fb_free(&b);
}

/* ---- refusals ---------------------------------------------------------- */

/* The sample intake as a jansson tree to change. */
static json_t *intake_tree(void)
{
	struct fleet_wire_intake m;
	struct fleet_buf b;
	json_error_t je;
	sample_intake(&m);
	fb_init(&b);
	assert_int_equal(fleet_wire_intake_encode(&m, &b), FLEET_OK);
	json_t *t = json_loadb((const char *)b.data, b.len, 0, &je);
	assert_non_null(t);
	fb_free(&b);
	fleet_wire_intake_free(&m);
	return t;
}

static json_t *answer_tree(void)
{
	struct fleet_wire_answer m;
	struct fleet_buf b;
	json_error_t je;
	sample_answer(&m);
	fb_init(&b);
	assert_int_equal(fleet_wire_answer_encode(&m, &b), FLEET_OK);
	json_t *t = json_loadb((const char *)b.data, b.len, 0, &je);
	assert_non_null(t);
	fb_free(&b);
	fleet_wire_answer_free(&m);
	return t;
}

/* Decode text as an intake (which: 'i') or answer ('a'); want error e with
 * field in the detail. */
static void expect_refused_text(char which, const char *text, size_t len, fleet_err want,
				const char *field)
{
	struct fleet_errctx ec = {0};
	fleet_err got;
	if (which == 'i') {
		struct fleet_wire_intake m;
		got = fleet_wire_intake_decode((const uint8_t *)text, len, &m, &ec);
		assert_null(m.ak_public.data); /* nothing left behind */
	} else {
		struct fleet_wire_answer m;
		got = fleet_wire_answer_decode((const uint8_t *)text, len, &m, &ec);
		assert_null(m.event_log.data);
	}
	if (got != want || (field && !strstr(ec.detail, field)))
		fail_msg("want %s naming '%s', got %s: %s", fleet_err_str(want),
			 field ? field : "", fleet_err_str(got), ec.detail);
}

static void expect_refused(char which, json_t *t, fleet_err want, const char *field)
{
	char *s = json_dumps(t, JSON_COMPACT);
	assert_non_null(s);
	expect_refused_text(which, s, strlen(s), want, field);
	free(s);
	json_decref(t);
}

static json_t *b64_of_size(size_t n)
{
	struct fleet_wire_bytes b = blob(n, 3);
	struct fleet_buf e;
	fb_init(&e);
	assert_int_equal(fleet_b64url_encode(b.data, b.len, &e), FLEET_OK);
	json_t *s = json_stringn((const char *)e.data, e.len);
	fb_free(&e);
	free(b.data);
	return s;
}

static void set_path(json_t *t, const char *obj, const char *key, json_t *v)
{
	json_t *o = obj ? json_object_get(t, obj) : t;
	assert_non_null(o);
	json_object_set_new(o, key, v);
}

static char *str_of(size_t n, char c)
{
	char *s = malloc(n + 1);
	memset(s, c, n);
	s[n] = '\0';
	return s;
}

static void test_refuses_basics(void **st)
{
	json_t *t;
	(void)st;
	/* The unchanged tree passes (so each refusal below is the change's). */
	t = intake_tree();
	char *ok = json_dumps(t, JSON_COMPACT);
	struct fleet_wire_intake m;
	assert_int_equal(fleet_wire_intake_decode((uint8_t *)ok, strlen(ok), &m, NULL), FLEET_OK);
	fleet_wire_intake_free(&m);
	json_decref(t);

	/* Broken JSON: cut in half. */
	expect_refused_text('i', ok, strlen(ok) / 2, FLEET_E_MALFORMED, "not valid JSON");
	/* A key given twice: the second "serial" would otherwise win. */
	char *dup = malloc(strlen(ok) + 32);
	sprintf(dup, "{\"serial\":\"EVIL\",%s", ok + 1);
	expect_refused_text('i', dup, strlen(dup), FLEET_E_MALFORMED, "duplicate");
	free(dup);
	free(ok);
	/* Not an object at all. */
	expect_refused_text('i', "[1]", 3, FLEET_E_MALFORMED, "body");

	t = intake_tree();
	set_path(t, NULL, "v", json_integer(2));
	expect_refused('i', t, FLEET_E_MALFORMED, "v");
	t = intake_tree();
	set_path(t, NULL, "v", json_string("1"));
	expect_refused('i', t, FLEET_E_MALFORMED, "v");
	t = intake_tree();
	json_object_del(t, "v");
	expect_refused('i', t, FLEET_E_MALFORMED, "v: missing");

	/* Every required field, removed one at a time. */
	static const char *req[] = {"serial", "product_uuid", "bios_version", "macs",
				    "network_report", "ek_rsa", "ek_ecc", "ak_public", "ldevid"};
	for (size_t i = 0; i < sizeof(req) / sizeof(req[0]); i++) {
		char want[64];
		t = intake_tree();
		json_object_del(t, req[i]);
		snprintf(want, sizeof(want), "%s: missing", req[i]);
		expect_refused('i', t, FLEET_E_MALFORMED, want);
	}
	t = intake_tree();
	json_object_del(json_object_get(t, "ldevid"), "certify_signature");
	expect_refused('i', t, FLEET_E_MALFORMED, "ldevid.certify_signature: missing");
	t = intake_tree();
	json_object_del(json_object_get(t, "ek_rsa"), "cert");
	expect_refused('i', t, FLEET_E_MALFORMED, "ek_rsa.cert: missing");

	/* Unknown fields, at the top and inside. */
	t = intake_tree();
	set_path(t, NULL, "admin", json_true());
	expect_refused('i', t, FLEET_E_MALFORMED, "unknown field");
	t = intake_tree();
	set_path(t, "ldevid", "extra", json_string("x"));
	expect_refused('i', t, FLEET_E_MALFORMED, "ldevid: unknown field");
	t = intake_tree();
	set_path(t, "ek_rsa", "extra", json_string("x"));
	expect_refused('i', t, FLEET_E_MALFORMED, "ek_rsa: unknown field");

	/* Wrong types. */
	t = intake_tree();
	set_path(t, NULL, "serial", json_integer(7));
	expect_refused('i', t, FLEET_E_MALFORMED, "serial: not a string");
	t = intake_tree();
	set_path(t, NULL, "macs", json_string("aa:bb:cc:dd:ee:ff"));
	expect_refused('i', t, FLEET_E_MALFORMED, "macs: not an array");
	t = intake_tree();
	set_path(t, NULL, "ek_rsa", json_string(""));
	expect_refused('i', t, FLEET_E_MALFORMED, "ek_rsa");
	/* An empty serial names no device. */
	t = intake_tree();
	set_path(t, NULL, "serial", json_string(""));
	expect_refused('i', t, FLEET_E_MALFORMED, "serial");
}

static void test_refuses_base64(void **st)
{
	static const char *bad[] = {"AAAA==", "AA+A", "AA/A", "AAA=", " AAAA", "AAAAA", ""};
	(void)st;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *t = intake_tree();
		set_path(t, NULL, "ak_public", json_string(bad[i]));
		expect_refused('i', t, FLEET_E_MALFORMED, "ak_public");
	}
	json_t *t = intake_tree();
	set_path(t, "ldevid", "request", json_string("AA_-A+"));
	expect_refused('i', t, FLEET_E_MALFORMED, "ldevid.request");
}

/* Each cap: exactly at it is accepted, one over is refused naming it. */
struct cap_case {
	const char *obj, *key, *name;
	size_t cap;
};

static void test_refuses_caps(void **st)
{
	static const struct cap_case bytes_caps[] = {
		{NULL, "network_report", "network_report", FLEET_WIRE_MAX_REPORT},
		{"ek_rsa", "public", "ek_rsa.public", FLEET_WIRE_MAX_TPM_STRUCT},
		{"ek_rsa", "cert", "ek_rsa.cert", FLEET_WIRE_MAX_CERT},
		{NULL, "ak_public", "ak_public", FLEET_WIRE_MAX_TPM_STRUCT},
		{"ldevid", "public", "ldevid.public", FLEET_WIRE_MAX_TPM_STRUCT},
		{"ldevid", "request", "ldevid.request", FLEET_WIRE_MAX_REQUEST},
		{"ldevid", "certify_attest", "ldevid.certify_attest", FLEET_WIRE_MAX_TPM_STRUCT},
		{"ldevid", "certify_signature", "ldevid.certify_signature",
		 FLEET_WIRE_MAX_TPM_STRUCT},
	};
	static const struct cap_case str_caps[] = {
		{NULL, "serial", "serial", FLEET_WIRE_MAX_SERIAL},
		{NULL, "product_uuid", "product_uuid", FLEET_WIRE_MAX_UUID},
		{NULL, "bios_version", "bios_version", FLEET_WIRE_MAX_BIOS},
	};
	(void)st;
	for (size_t i = 0; i < sizeof(bytes_caps) / sizeof(bytes_caps[0]); i++) {
		const struct cap_case *c = &bytes_caps[i];
		struct fleet_wire_intake m;
		json_t *t = intake_tree();
		set_path(t, c->obj, c->key, b64_of_size(c->cap));
		char *s = json_dumps(t, JSON_COMPACT);
		assert_int_equal(fleet_wire_intake_decode((uint8_t *)s, strlen(s), &m, NULL),
				 FLEET_OK);
		fleet_wire_intake_free(&m);
		free(s);
		set_path(t, c->obj, c->key, b64_of_size(c->cap + 1));
		expect_refused('i', t, FLEET_E_TOO_LARGE, c->name);
	}
	for (size_t i = 0; i < sizeof(str_caps) / sizeof(str_caps[0]); i++) {
		const struct cap_case *c = &str_caps[i];
		struct fleet_wire_intake m;
		json_t *t = intake_tree();
		char *v = str_of(c->cap, 'x');
		set_path(t, NULL, c->key, json_string(v));
		char *s = json_dumps(t, JSON_COMPACT);
		assert_int_equal(fleet_wire_intake_decode((uint8_t *)s, strlen(s), &m, NULL),
				 FLEET_OK);
		fleet_wire_intake_free(&m);
		free(s);
		free(v);
		v = str_of(c->cap + 1, 'x');
		set_path(t, NULL, c->key, json_string(v));
		free(v);
		expect_refused('i', t, FLEET_E_TOO_LARGE, c->name);
	}
	/* MACs: 32 accepted, 33 refused. */
	json_t *t = intake_tree(), *macs = json_array();
	for (int i = 0; i <= FLEET_WIRE_MAX_MACS; i++) {
		char mac[18];
		snprintf(mac, sizeof(mac), "00:00:00:00:00:%02x", i);
		json_array_append_new(macs, json_string(mac));
	}
	set_path(t, NULL, "macs", macs);
	expect_refused('i', t, FLEET_E_TOO_LARGE, "macs");

	/* The answer's own: the event log and the quote. */
	static const struct cap_case answer_caps[] = {
		{NULL, "event_log", "event_log", FLEET_WIRE_MAX_EVENTLOG},
		{NULL, "quote_attest", "quote_attest", FLEET_WIRE_MAX_TPM_STRUCT},
		{NULL, "quote_signature", "quote_signature", FLEET_WIRE_MAX_TPM_STRUCT},
		{NULL, "network_report", "network_report", FLEET_WIRE_MAX_REPORT},
	};
	for (size_t i = 0; i < sizeof(answer_caps) / sizeof(answer_caps[0]); i++) {
		struct fleet_wire_answer m;
		t = answer_tree();
		set_path(t, NULL, answer_caps[i].key, b64_of_size(answer_caps[i].cap));
		char *s = json_dumps(t, JSON_COMPACT);
		assert_int_equal(fleet_wire_answer_decode((uint8_t *)s, strlen(s), &m, NULL),
				 FLEET_OK);
		fleet_wire_answer_free(&m);
		free(s);
		set_path(t, NULL, answer_caps[i].key, b64_of_size(answer_caps[i].cap + 1));
		expect_refused('a', t, FLEET_E_TOO_LARGE, answer_caps[i].name);
	}
	/* Session and proof are exactly 32 bytes. */
	t = answer_tree();
	set_path(t, NULL, "session", b64_of_size(31));
	expect_refused('a', t, FLEET_E_MALFORMED, "session");
	t = answer_tree();
	set_path(t, NULL, "proof", b64_of_size(33));
	expect_refused('a', t, FLEET_E_TOO_LARGE, "proof");

	/* The whole body, one byte over. */
	char *big = str_of(FLEET_WIRE_MAX_BODY + 1, ' ');
	expect_refused_text('i', big, FLEET_WIRE_MAX_BODY + 1, FLEET_E_TOO_LARGE, "body");
	free(big);
}

static void test_refuses_strings_and_macs(void **st)
{
	static const char *ctrl[] = {"SN\x01", "SN\x7f", "SN\xc2\x85", "SN\n", "SN\t"};
	static const char *badmac[] = {"AA:BB:CC:DD:EE:FF", "aa-bb-cc-dd-ee-ff",
				       "aa:bb:cc:dd:ee:f", "aa:bb:cc:dd:ee:fg", "aabbccddeeff00000"};
	(void)st;
	for (size_t i = 0; i < sizeof(ctrl) / sizeof(ctrl[0]); i++) {
		json_t *t = intake_tree();
		set_path(t, NULL, "serial", json_string(ctrl[i]));
		expect_refused('i', t, FLEET_E_MALFORMED, "serial: control character");
		t = intake_tree();
		set_path(t, NULL, "bios_version", json_string(ctrl[i]));
		expect_refused('i', t, FLEET_E_MALFORMED, "bios_version: control character");
	}
	for (size_t i = 0; i < sizeof(badmac) / sizeof(badmac[0]); i++) {
		json_t *t = intake_tree();
		json_array_set_new(json_object_get(t, "macs"), 1, json_string(badmac[i]));
		expect_refused('i', t, FLEET_E_MALFORMED, "macs[1]");
	}
}

static void test_refuses_pcrs(void **st)
{
	char hex[129];
	(void)st;
	memset(hex, 'a', 128);
	hex[64] = '\0';
	json_t *t = answer_tree();
	json_object_set_new(json_object_get(json_object_get(t, "pcrs"), "sha256"), "24",
			    json_string(hex));
	expect_refused('a', t, FLEET_E_MALFORMED, "0..23");
	t = answer_tree();
	json_object_set_new(json_object_get(json_object_get(t, "pcrs"), "sha256"), "08",
			    json_string(hex));
	expect_refused('a', t, FLEET_E_MALFORMED, "0..23");
	/* 40 hex digits are a SHA-1 digest, not one of sha256's. */
	hex[40] = '\0';
	t = answer_tree();
	json_object_set_new(json_object_get(json_object_get(t, "pcrs"), "sha256"), "9",
			    json_string(hex));
	expect_refused('a', t, FLEET_E_MALFORMED, "pcrs.sha256.9");
	/* sha384 wants 96 digits; 64 will not do. */
	hex[40] = 'a';
	hex[64] = '\0';
	t = answer_tree();
	json_object_set_new(json_object_get(json_object_get(t, "pcrs"), "sha384"), "0",
			    json_string(hex));
	expect_refused('a', t, FLEET_E_MALFORMED, "pcrs.sha384.0");
	/* Uppercase hex is a second spelling: refused. */
	memset(hex, 'A', 64);
	t = answer_tree();
	json_object_set_new(json_object_get(json_object_get(t, "pcrs"), "sha256"), "9",
			    json_string(hex));
	expect_refused('a', t, FLEET_E_MALFORMED, "pcrs.sha256.9");
	/* An unknown bank. */
	t = answer_tree();
	json_object_set_new(json_object_get(t, "pcrs"), "md5", json_object());
	expect_refused('a', t, FLEET_E_MALFORMED, "pcrs");
}

static void test_refuses_reply_shapes(void **st)
{
	struct fleet_wire_intake_reply r;
	struct fleet_wire_verdict v;
	struct fleet_wire_confirm_reply c;
	struct fleet_errctx ec = {0};
	(void)st;
#define DEC(fn, s, out) fn((const uint8_t *)(s), strlen(s), out, &ec)
	/* A status the message may not carry. */
	assert_int_equal(DEC(fleet_wire_intake_reply_decode, "{\"v\":1,\"status\":\"admitted\"}", &r),
			 FLEET_E_MALFORMED);
	assert_non_null(strstr(ec.detail, "status"));
	assert_int_equal(DEC(fleet_wire_verdict_decode, "{\"v\":1,\"status\":\"challenge\"}", &v),
			 FLEET_E_MALFORMED);
	assert_int_equal(DEC(fleet_wire_confirm_reply_decode, "{\"v\":1,\"status\":\"pending\"}", &c),
			 FLEET_E_MALFORMED);
	/* A refusal carries nothing else. */
	assert_int_equal(DEC(fleet_wire_verdict_decode,
			     "{\"v\":1,\"status\":\"refused\",\"lak_cert\":\"AAAA\"}", &v),
			 FLEET_E_MALFORMED);
	assert_int_equal(DEC(fleet_wire_verdict_decode, "{\"v\":1,\"status\":\"refused\"}", &v),
			 FLEET_OK);
	/* An admitted verdict without its CA certificate. */
	assert_int_equal(DEC(fleet_wire_verdict_decode,
			     "{\"v\":1,\"status\":\"admitted\",\"lak_cert\":\"AAAA\","
			     "\"ldevid_cert\":\"AAAA\"}",
			     &v),
			 FLEET_E_MALFORMED);
	assert_non_null(strstr(ec.detail, "ca_cert"));
	/* The certificate cap, one over. */
	{
		json_t *t = json_pack("{s:i,s:s,s:o,s:s,s:s}", "v", 1, "status", "admitted",
				      "lak_cert", b64_of_size(FLEET_WIRE_MAX_CERT + 1),
				      "ldevid_cert", "AAAA", "ca_cert", "AAAA");
		char *s = json_dumps(t, JSON_COMPACT);
		assert_int_equal(DEC(fleet_wire_verdict_decode, s, &v), FLEET_E_TOO_LARGE);
		assert_non_null(strstr(ec.detail, "lak_cert"));
		free(s);
		json_decref(t);
	}
	/* A challenge whose selection or deadline is not one. */
	struct fleet_wire_intake_reply ok = {0};
	struct fleet_buf b;
	ok.status = FLEET_WIRE_CHALLENGE;
	ok.cred_rsa.present = true;
	ok.cred_rsa.id_object = blob(10, 1);
	ok.cred_rsa.enc_secret = blob(10, 2);
	strcpy(ok.pcr_selection, "sha256:0,7");
	ok.deadline = 1796018400;
	fb_init(&b);
	assert_int_equal(fleet_wire_intake_reply_encode(&ok, &b), FLEET_OK);
	fleet_wire_intake_reply_free(&ok);
	json_error_t je;
	static const struct {
		const char *key, *value, *field;
	} bad[] = {
		{"pcr_selection", "sha256:0,24", "pcr_selection"},
		{"deadline", "2026-02-30T06:00:00Z", "deadline"},
		{"deadline", "2026-11-30T06:00:00+01:00", "deadline"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *t = json_loadb((const char *)b.data, b.len, 0, &je);
		json_object_set_new(t, bad[i].key, json_string(bad[i].value));
		char *s = json_dumps(t, JSON_COMPACT);
		assert_int_not_equal(DEC(fleet_wire_intake_reply_decode, s, &r), FLEET_OK);
		assert_non_null(strstr(ec.detail, bad[i].field));
		free(s);
		json_decref(t);
	}
	{
		char sel[FLEET_WIRE_MAX_SELECTION + 2];
		json_t *t = json_loadb((const char *)b.data, b.len, 0, &je);
		memset(sel, '0', sizeof(sel) - 1);
		sel[sizeof(sel) - 1] = '\0';
		json_object_set_new(t, "pcr_selection", json_string(sel));
		char *s = json_dumps(t, JSON_COMPACT);
		assert_int_equal(DEC(fleet_wire_intake_reply_decode, s, &r), FLEET_E_TOO_LARGE);
		assert_non_null(strstr(ec.detail, "pcr_selection"));
		free(s);
		json_decref(t);
	}
	fb_free(&b);
	/* Confirm: the signature cap; provision's proof cap. */
	{
		json_t *t = json_pack("{s:i,s:s,s:o}", "v", 1, "session", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
				      "signature", b64_of_size(FLEET_WIRE_MAX_TPM_STRUCT + 1));
		char *s = json_dumps(t, JSON_COMPACT);
		struct fleet_wire_confirm cf;
		assert_int_equal(DEC(fleet_wire_confirm_decode, s, &cf), FLEET_E_TOO_LARGE);
		assert_non_null(strstr(ec.detail, "signature"));
		free(s);
		json_decref(t);
		t = json_pack("{s:i,s:s,s:{s:s,s:s,s:o}}", "v", 1, "status", "confirmed",
			      "provision", "id_object", "AAAA", "encrypted_secret", "AAAA", "proof",
			      b64_of_size(FLEET_WIRE_MAX_CERT + 1));
		s = json_dumps(t, JSON_COMPACT);
		assert_int_equal(DEC(fleet_wire_confirm_reply_decode, s, &c), FLEET_E_TOO_LARGE);
		assert_non_null(strstr(ec.detail, "provision.proof"));
		free(s);
		json_decref(t);
	}
#undef DEC
}

static void test_refuses_documents(void **st)
{
	struct fleet_network_report r;
	struct fleet_ldevid_request q;
	struct fleet_errctx ec = {0};
	(void)st;
#define W(s) (&(struct fleet_wire_bytes){(uint8_t *)(s), strlen(s)})
	assert_int_equal(fleet_network_report_parse(W("{\"chassis_id\":\"a\",\"port_id\":\"b\"}"), &r, &ec),
			 FLEET_E_MALFORMED);
	assert_non_null(strstr(ec.detail, "system_name"));
	assert_int_equal(fleet_network_report_parse(
				 W("{\"chassis_id\":\"a\",\"port_id\":\"b\",\"system_name\":\"c\",\"x\":1}"),
				 &r, &ec),
			 FLEET_E_MALFORMED);
	assert_int_equal(fleet_network_report_parse(
				 W("{\"chassis_id\":\"a\\u0007\",\"port_id\":\"b\",\"system_name\":\"c\"}"),
				 &r, &ec),
			 FLEET_E_MALFORMED);
	assert_non_null(strstr(ec.detail, "chassis_id"));
	char *port = str_of(FLEET_WIRE_MAX_LLDP_FIELD + 1, 'p');
	char doc[600];
	snprintf(doc, sizeof(doc), "{\"chassis_id\":\"a\",\"port_id\":\"%s\",\"system_name\":\"c\"}",
		 port);
	free(port);
	assert_int_equal(fleet_network_report_parse(W(doc), &r, &ec), FLEET_E_TOO_LARGE);
	assert_non_null(strstr(ec.detail, "port_id"));
	/* The request: version, lowercase 64-digit hex. */
	assert_int_equal(fleet_ldevid_request_parse(
				 W("{\"v\":2,\"serial\":\"S\",\"spki_sha256\":\"00\"}"), &q, &ec),
			 FLEET_E_MALFORMED);
	char up[200];
	snprintf(up, sizeof(up), "{\"v\":1,\"serial\":\"S\",\"spki_sha256\":\"%064d\"}", 0);
	assert_int_equal(fleet_ldevid_request_parse(W(up), &q, &ec), FLEET_OK);
	up[strlen(up) - 3] = 'A';
	assert_int_equal(fleet_ldevid_request_parse(W(up), &q, &ec), FLEET_E_MALFORMED);
	assert_non_null(strstr(ec.detail, "spki_sha256"));
#undef W
}

/* The remaining caps, one over each, in the replies and the ECC EK. */
static void test_refuses_reply_caps(void **st)
{
	static const char *const creds[] = {"credential_rsa", "credential_ecc"};
	static const char *const parts[] = {"id_object", "encrypted_secret"};
	static const char *const certs[] = {"lak_cert", "ldevid_cert", "ca_cert"};
	struct fleet_errctx ec = {0};
	char want[64];
	(void)st;
	for (size_t c = 0; c < 2; c++)
		for (size_t p = 0; p < 2; p++) {
			struct fleet_wire_intake_reply r;
			json_t *t = json_pack(
				"{s:i,s:s,s:s,s:s,s:{s:s,s:s},s:{s:s,s:s},s:s,s:s}", "v", 1,
				"status", "challenge", "session",
				"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "nonce",
				"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "credential_rsa",
				"id_object", "AAAA", "encrypted_secret", "AAAA", "credential_ecc",
				"id_object", "AAAA", "encrypted_secret", "AAAA", "pcr_selection",
				"sha256:0", "deadline", "2026-11-30T06:00:00Z");
			char *s = json_dumps(t, JSON_COMPACT);
			assert_int_equal(fleet_wire_intake_reply_decode((uint8_t *)s, strlen(s), &r,
									&ec),
					 FLEET_OK);
			fleet_wire_intake_reply_free(&r);
			free(s);
			json_object_set_new(json_object_get(t, creds[c]), parts[p],
					    b64_of_size(FLEET_WIRE_MAX_TPM_STRUCT + 1));
			s = json_dumps(t, JSON_COMPACT);
			assert_int_equal(fleet_wire_intake_reply_decode((uint8_t *)s, strlen(s), &r,
									&ec),
					 FLEET_E_TOO_LARGE);
			snprintf(want, sizeof(want), "%s.%s", creds[c], parts[p]);
			assert_non_null(strstr(ec.detail, want));
			free(s);
			json_decref(t);
		}
	for (size_t i = 0; i < 3; i++) {
		struct fleet_wire_verdict v;
		json_t *t = json_pack("{s:i,s:s,s:s,s:s,s:s}", "v", 1, "status", "admitted",
				      "lak_cert", "AAAA", "ldevid_cert", "AAAA", "ca_cert", "AAAA");
		json_object_set_new(t, certs[i], b64_of_size(FLEET_WIRE_MAX_CERT + 1));
		char *s = json_dumps(t, JSON_COMPACT);
		assert_int_equal(fleet_wire_verdict_decode((uint8_t *)s, strlen(s), &v, &ec),
				 FLEET_E_TOO_LARGE);
		assert_non_null(strstr(ec.detail, certs[i]));
		free(s);
		json_decref(t);
	}
	/* The ECC EK's two fields. */
	json_t *t = intake_tree();
	set_path(t, NULL, "ek_ecc", json_pack("{s:o,s:s}", "public",
					      b64_of_size(FLEET_WIRE_MAX_TPM_STRUCT + 1), "cert",
					      "AAAA"));
	expect_refused('i', t, FLEET_E_TOO_LARGE, "ek_ecc.public");
	t = intake_tree();
	set_path(t, NULL, "ek_ecc", json_pack("{s:s,s:o}", "public", "AAAA", "cert",
					      b64_of_size(FLEET_WIRE_MAX_CERT + 1)));
	expect_refused('i', t, FLEET_E_TOO_LARGE, "ek_ecc.cert");
	/* The request's serial. */
	struct fleet_ldevid_request q;
	char *serial = str_of(FLEET_WIRE_MAX_SERIAL + 1, 's'), doc[300];
	snprintf(doc, sizeof(doc), "{\"v\":1,\"serial\":\"%s\",\"spki_sha256\":\"%064d\"}", serial,
		 0);
	free(serial);
	struct fleet_wire_bytes w = {(uint8_t *)doc, strlen(doc)};
	assert_int_equal(fleet_ldevid_request_parse(&w, &q, &ec), FLEET_E_TOO_LARGE);
	assert_non_null(strstr(ec.detail, "ldevid_request.serial"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip_intake),
		cmocka_unit_test(test_round_trip_replies),
		cmocka_unit_test(test_round_trip_answer),
		cmocka_unit_test(test_round_trip_documents),
		cmocka_unit_test(test_refuses_basics),
		cmocka_unit_test(test_refuses_base64),
		cmocka_unit_test(test_refuses_caps),
		cmocka_unit_test(test_refuses_strings_and_macs),
		cmocka_unit_test(test_refuses_pcrs),
		cmocka_unit_test(test_refuses_reply_shapes),
		cmocka_unit_test(test_refuses_documents),
		cmocka_unit_test(test_refuses_reply_caps),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
