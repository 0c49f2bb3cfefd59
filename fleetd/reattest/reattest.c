/*
 * reattest.c: the hourly re-check on fleetd's side (reattest.h, RA1-RA12).
 */
#include "fleetd/reattest/reattest.h"
#include "fleetd/reattest/reattest_int.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/objects.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "lib/eventlog.h"

#define OID_TCG_KP_AIK_CERTIFICATE "2.23.133.8.3"

time_t ra_env_now(const struct fleet_reattest_env *env)
{
	return env->now ? env->now : time(NULL);
}

/* ---- nonces (RA2, RA3) --------------------------------------------------- */

/*
 * A nonce is r (12 random bytes) || t (its issue time, u32 big-endian) ||
 * the first 16 bytes of HMAC-SHA256(key, label || SHA-256(LAK cert) || r ||
 * t), key made at start. Issuing one writes nothing; a check's nonce is
 * proven by its MAC and age, and recorded as used only once the quote over
 * it verified (RA8). So nobody without the TPM (a copy of a LAK
 * certificate is not secret: it travels in every request) can evict a
 * node's nonce or fill the table.
 */
#define NONCE_R 12
#define NONCE_MAC_AT 16
static const char nonce_label[] = "fleetd reattest nonce v1"; /* sizeof counts the NUL */

struct used_entry {
	bool live;
	uint8_t nonce[FLEET_WIRE_ID_LEN];
	time_t issued;
};

struct fleet_reattest_nonces {
	pthread_mutex_t mu;
	uint8_t key[32];
	size_t cap;
	struct used_entry *e;
};

fleet_err fleet_reattest_nonces_new(size_t cap, struct fleet_reattest_nonces **out)
{
	struct fleet_reattest_nonces *t;

	if (!out)
		return FLEET_E_INVALID_ARG;
	*out = NULL;
	if (cap == 0)
		cap = FLEET_REATTEST_MAX_NONCES;
	if (cap > FLEET_REATTEST_MAX_NONCES)
		return FLEET_E_INVALID_ARG;
	if (!(t = calloc(1, sizeof(*t))) || !(t->e = calloc(cap, sizeof(*t->e)))) {
		free(t);
		return FLEET_E_NOMEM;
	}
	if (RAND_bytes(t->key, sizeof(t->key)) != 1) {
		ERR_clear_error();
		free(t->e);
		free(t);
		return FLEET_E_CRYPTO;
	}
	if (pthread_mutex_init(&t->mu, NULL) != 0) {
		OPENSSL_cleanse(t->key, sizeof(t->key));
		free(t->e);
		free(t);
		return FLEET_E_NOMEM;
	}
	t->cap = cap;
	*out = t;
	return FLEET_OK;
}

void fleet_reattest_nonces_free(struct fleet_reattest_nonces *t)
{
	if (!t)
		return;
	pthread_mutex_destroy(&t->mu);
	OPENSSL_cleanse(t->key, sizeof(t->key));
	OPENSSL_cleanse(t->e, t->cap * sizeof(*t->e));
	free(t->e);
	free(t);
}

size_t fleet_reattest_nonces_count(struct fleet_reattest_nonces *t)
{
	size_t n = 0;
	if (!t)
		return 0;
	pthread_mutex_lock(&t->mu);
	for (size_t i = 0; i < t->cap; i++)
		n += t->e[i].live;
	pthread_mutex_unlock(&t->mu);
	return n;
}

static bool expired_at(time_t issued, time_t now)
{
	return now - issued > FLEET_REATTEST_NONCE_TTL || now < issued;
}

static fleet_err nonce_mac(const struct fleet_reattest_nonces *t, const uint8_t lak[32],
			   const uint8_t nonce[NONCE_MAC_AT], uint8_t mac[32])
{
	uint8_t msg[sizeof(nonce_label) + 32 + NONCE_MAC_AT];
	unsigned int len = 0;

	memcpy(msg, nonce_label, sizeof(nonce_label));
	memcpy(msg + sizeof(nonce_label), lak, 32);
	memcpy(msg + sizeof(nonce_label) + 32, nonce, NONCE_MAC_AT);
	if (!HMAC(EVP_sha256(), t->key, sizeof(t->key), msg, sizeof(msg), mac, &len) || len != 32) {
		ERR_clear_error();
		return FLEET_E_CRYPTO;
	}
	return FLEET_OK;
}

static time_t nonce_time(const uint8_t nonce[FLEET_WIRE_ID_LEN])
{
	return (time_t)(((uint32_t)nonce[NONCE_R] << 24) | ((uint32_t)nonce[NONCE_R + 1] << 16) |
			((uint32_t)nonce[NONCE_R + 2] << 8) | (uint32_t)nonce[NONCE_R + 3]);
}

enum take_result { TAKE_OK, TAKE_UNKNOWN, TAKE_EXPIRED, TAKE_REPLAYED, TAKE_FULL, TAKE_ERROR };

/* RA7: fleetd issued this nonce for this LAK, and it is young. */
static enum take_result nonce_verify(const struct fleet_reattest_nonces *t,
				     const uint8_t nonce[FLEET_WIRE_ID_LEN], const uint8_t lak[32],
				     time_t now)
{
	uint8_t mac[32];

	if (nonce_mac(t, lak, nonce, mac) != FLEET_OK)
		return TAKE_ERROR;
	bool ours = CRYPTO_memcmp(mac, nonce + NONCE_MAC_AT, FLEET_WIRE_ID_LEN - NONCE_MAC_AT) == 0;
	OPENSSL_cleanse(mac, sizeof(mac));
	if (!ours)
		return TAKE_UNKNOWN;
	return expired_at(nonce_time(nonce), now) ? TAKE_EXPIRED : TAKE_OK;
}

/* RA2: record a proven nonce as used, once. A slot is free, or holds a
 * nonce past its TTL (which nonce_verify refuses anyway); never is an
 * unexpired one evicted, which would let it be replayed. */
static enum take_result nonce_consume(struct fleet_reattest_nonces *t,
				      const uint8_t nonce[FLEET_WIRE_ID_LEN], time_t now)
{
	struct used_entry *slot = NULL;
	enum take_result r = TAKE_OK;

	pthread_mutex_lock(&t->mu);
	for (size_t i = 0; i < t->cap; i++) {
		struct used_entry *x = &t->e[i];
		if (x->live && CRYPTO_memcmp(x->nonce, nonce, FLEET_WIRE_ID_LEN) == 0) {
			r = TAKE_REPLAYED;
			break;
		}
		if (!slot && (!x->live || expired_at(x->issued, now)))
			slot = x;
	}
	if (r == TAKE_OK && !slot)
		r = TAKE_FULL;
	if (r == TAKE_OK) {
		slot->live = true;
		memcpy(slot->nonce, nonce, FLEET_WIRE_ID_LEN);
		slot->issued = nonce_time(nonce);
	}
	pthread_mutex_unlock(&t->mu);
	return r;
}

/* ---- the LAK certificate (RA1, RA4) -------------------------------------- */

static bool has_aik_eku(X509 *x)
{
	EXTENDED_KEY_USAGE *eku = X509_get_ext_d2i(x, NID_ext_key_usage, NULL, NULL);
	ASN1_OBJECT *aik = OBJ_txt2obj(OID_TCG_KP_AIK_CERTIFICATE, 1);
	bool ok = false;

	for (int i = 0; eku && aik && i < sk_ASN1_OBJECT_num(eku); i++)
		if (OBJ_cmp(sk_ASN1_OBJECT_value(eku, i), aik) == 0)
			ok = true;
	ASN1_OBJECT_free(aik);
	EXTENDED_KEY_USAGE_free(eku);
	return ok;
}

/* The certificate, signed by the CA, an LAK, valid at now. On FLEET_OK *out
 * is the parsed certificate and lak_hash its DER's SHA-256. */
fleet_err ra_lak_verify(const struct fleet_reattest_env *env,
			    const struct fleet_wire_bytes *der, X509 **out, uint8_t lak_hash[32],
			    const char **reason)
{
	X509 *ca = fleet_ca_cert(env->ca), *x = NULL;
	const unsigned char *p = der->data;
	EVP_PKEY *capub;
	time_t now = ra_env_now(env);
	fleet_err e;

	*out = NULL;
	if (!der->data || der->len == 0 || der->len > FLEET_WIRE_MAX_CERT || !ca)
		return fleet_refuse(reason, "lak-unknown", FLEET_E_VERIFY);
	x = d2i_X509(NULL, &p, (long)der->len);
	if (!x || p != der->data + der->len)
		goto unknown;
	if (!(capub = X509_get0_pubkey(ca)) || X509_verify(x, capub) != 1 ||
	    X509_check_issued(ca, x) != X509_V_OK || !has_aik_eku(x))
		goto unknown;
	if (ASN1_TIME_cmp_time_t(X509_get0_notBefore(x), now) > 0)
		goto unknown;
	if (ASN1_TIME_cmp_time_t(X509_get0_notAfter(x), now) < 0) {
		X509_free(x);
		ERR_clear_error();
		return fleet_refuse(reason, "lak-expired", FLEET_E_VERIFY);
	}
	if ((e = fleet_hash(FLEET_ALG_SHA256, der->data, der->len, lak_hash)) != FLEET_OK) {
		X509_free(x);
		return e;
	}
	*out = x;
	return FLEET_OK;
unknown:
	X509_free(x);
	ERR_clear_error();
	return fleet_refuse(reason, "lak-unknown", FLEET_E_VERIFY);
}

/* The subject CN, 1..FLEET_STORE_NAME_MAX printable ASCII characters. */
bool ra_lak_cn(X509 *x, char device[FLEET_STORE_NAME_MAX + 1])
{
	X509_NAME *n = X509_get_subject_name(x);
	int i = n ? X509_NAME_get_index_by_NID(n, NID_commonName, -1) : -1;
	const ASN1_STRING *s;
	const unsigned char *d;
	int len;

	device[0] = '\0';
	if (i < 0 || !(s = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(n, i))))
		return false;
	d = ASN1_STRING_get0_data(s);
	len = ASN1_STRING_length(s);
	if (len < 1 || len > FLEET_STORE_NAME_MAX)
		return false;
	for (int k = 0; k < len; k++)
		if (d[k] < 0x21 || d[k] > 0x7e)
			return false;
	memcpy(device, d, (size_t)len);
	device[len] = '\0';
	return true;
}

/* RA8: the AK's public area from the certificate's key (ECDSA P-256). */
fleet_err ra_ak_from_cert(X509 *x, TPMT_PUBLIC *ak)
{
	EVP_PKEY *k = X509_get0_pubkey(x);
	BIGNUM *bx = NULL, *by = NULL;
	char group[32];
	fleet_err e = FLEET_E_UNSUPPORTED;

	memset(ak, 0, sizeof(*ak));
	if (!k || EVP_PKEY_get_base_id(k) != EVP_PKEY_EC ||
	    EVP_PKEY_get_group_name(k, group, sizeof(group), NULL) != 1 ||
	    strcmp(group, "prime256v1") != 0)
		goto out;
	if (EVP_PKEY_get_bn_param(k, OSSL_PKEY_PARAM_EC_PUB_X, &bx) != 1 ||
	    EVP_PKEY_get_bn_param(k, OSSL_PKEY_PARAM_EC_PUB_Y, &by) != 1)
		goto out;
	ak->type = TPM2_ALG_ECC;
	ak->nameAlg = TPM2_ALG_SHA256;
	ak->objectAttributes = TPMA_OBJECT_RESTRICTED | TPMA_OBJECT_SIGN_ENCRYPT |
			       TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT |
			       TPMA_OBJECT_SENSITIVEDATAORIGIN | TPMA_OBJECT_USERWITHAUTH;
	TPMS_ECC_PARMS *c = &ak->parameters.eccDetail;
	c->symmetric.algorithm = TPM2_ALG_NULL;
	c->scheme.scheme = TPM2_ALG_ECDSA;
	c->scheme.details.ecdsa.hashAlg = TPM2_ALG_SHA256;
	c->curveID = TPM2_ECC_NIST_P256;
	c->kdf.scheme = TPM2_ALG_NULL;
	if (BN_bn2binpad(bx, ak->unique.ecc.x.buffer, 32) != 32 ||
	    BN_bn2binpad(by, ak->unique.ecc.y.buffer, 32) != 32)
		goto out;
	ak->unique.ecc.x.size = 32;
	ak->unique.ecc.y.size = 32;
	e = FLEET_OK;
out:
	BN_free(bx);
	BN_free(by);
	ERR_clear_error();
	return e;
}

/* ---- the nonce round ------------------------------------------------------ */

static fleet_err nonce_judge(const struct fleet_reattest_env *env,
			     const struct fleet_reattest_nonce_req *in,
			     struct fleet_reattest_nonce_reply *out, const char **reason)
{
	uint8_t lak_hash[32], mac[32];
	X509 *x = NULL;
	time_t now;
	fleet_err e;

	if (!env || !env->ca || !env->nonces || !in || !out)
		return FLEET_E_INVALID_ARG;
	memset(out, 0, sizeof(*out));
	if ((e = ra_lak_verify(env, &in->lak_cert, &x, lak_hash, reason)) != FLEET_OK)
		return e;
	X509_free(x);
	now = ra_env_now(env);
	if (now < 0 || (uint64_t)now > UINT32_MAX)
		return FLEET_E_INVALID_ARG;
	if (RAND_bytes(out->nonce, NONCE_R) != 1) {
		ERR_clear_error();
		return FLEET_E_CRYPTO;
	}
	out->nonce[NONCE_R] = (uint8_t)((uint64_t)now >> 24);
	out->nonce[NONCE_R + 1] = (uint8_t)((uint64_t)now >> 16);
	out->nonce[NONCE_R + 2] = (uint8_t)((uint64_t)now >> 8);
	out->nonce[NONCE_R + 3] = (uint8_t)now;
	if ((e = nonce_mac(env->nonces, lak_hash, out->nonce, mac)) != FLEET_OK)
		return e;
	memcpy(out->nonce + NONCE_MAC_AT, mac, FLEET_WIRE_ID_LEN - NONCE_MAC_AT);
	OPENSSL_cleanse(mac, sizeof(mac));
	out->expires_in = FLEET_REATTEST_NONCE_TTL;
	return FLEET_OK;
}

struct fleet_decision fleet_reattest_nonce(const struct fleet_reattest_env *env,
					   const struct fleet_reattest_nonce_req *in,
					   struct fleet_reattest_nonce_reply *out)
{
	const char *reason = NULL;
	fleet_err e = nonce_judge(env, in, out, &reason);
	return fleet_decide(e, reason);
}

struct fleet_decision fleet_reattest_lak_device(const struct fleet_reattest_env *env,
						const struct fleet_wire_bytes *lak_cert,
						char device[FLEET_STORE_NAME_MAX + 1])
{
	const char *reason = NULL;
	uint8_t h[32];
	X509 *x = NULL;
	fleet_err e;

	if (!env || !env->ca || !lak_cert || !device)
		return fleet_decide(FLEET_E_INVALID_ARG, NULL);
	device[0] = '\0';
	if ((e = ra_lak_verify(env, lak_cert, &x, h, &reason)) == FLEET_OK && !ra_lak_cn(x, device))
		e = fleet_refuse(&reason, "lak-unknown", FLEET_E_VERIFY);
	X509_free(x);
	return fleet_decide(e, reason);
}

/* ---- the check ------------------------------------------------------------ */

static void verdict_one(struct fleet_verdict *v, const char *reason, const char *detail)
{
	memset(v, 0, sizeof(*v));
	v->pass = false;
	v->quote_checked = true;
	v->n_reasons = 1;
	v->reasons[0].reason = reason;
	snprintf(v->reasons[0].detail, sizeof(v->reasons[0].detail), "%s", detail);
}

/* Do two stored certificates certify the same key? A renewal re-certifies
 * the same AK (the TPM makes it again from its template on every boot), so
 * an older LAK certificate of that key stays good until its notAfter: a
 * node that lost the renewal's answer is not locked out (RA5). */
static bool same_key(const struct fleet_store_cert *a, const struct fleet_store_cert *b)
{
	const unsigned char *pa = a->der, *pb = b->der;
	X509 *xa = b && a->der ? d2i_X509(NULL, &pa, (long)a->der_len) : NULL;
	X509 *xb = xa && b->der ? d2i_X509(NULL, &pb, (long)b->der_len) : NULL;
	EVP_PKEY *ka = xa ? X509_get0_pubkey(xa) : NULL, *kb = xb ? X509_get0_pubkey(xb) : NULL;
	bool same = ka && kb && EVP_PKEY_eq(ka, kb) == 1;

	X509_free(xa);
	X509_free(xb);
	ERR_clear_error();
	return same;
}

/* RA5: this certificate is an unrevoked LAK of the device, for the key of
 * its newest unrevoked one. */
static fleet_err lak_current(struct fleet_store *st, const char *device,
			     const struct fleet_wire_bytes *der, const char **reason)
{
	struct fleet_store_cert *c = NULL;
	size_t n = 0;
	const struct fleet_store_cert *mine = NULL, *current = NULL;
	fleet_err e = fleet_store_certs_for_device(st, device, &c, &n);

	if (e == FLEET_STORE_E_NOT_FOUND)
		return fleet_refuse(reason, "lak-unknown", FLEET_E_VERIFY);
	if (e != FLEET_STORE_OK)
		return e;
	for (size_t i = 0; i < n; i++) {
		if (strcmp(c[i].kind, FLEET_STORE_CERT_LAK) != 0)
			continue;
		if (!current && !c[i].revoked)
			current = &c[i];
		if (!mine && c[i].der_len == der->len && memcmp(c[i].der, der->data, der->len) == 0)
			mine = &c[i];
	}
	if (!mine)
		e = fleet_refuse(reason, "lak-unknown", FLEET_E_VERIFY);
	else if (mine->revoked)
		e = fleet_refuse(reason, "lak-revoked", FLEET_E_VERIFY);
	else if (mine != current && !same_key(mine, current))
		e = fleet_refuse(reason, "lak-not-current", FLEET_E_VERIFY);
	fleet_store_certs_free(c, n);
	return e;
}

/* RA6 */
static fleet_err device_ok(struct fleet_store *st, const char *device, const char *status,
			   const char **reason)
{
	struct fleet_store_device d;
	fleet_err e = fleet_store_device_get_by_name(st, device, &d);

	if (e == FLEET_STORE_E_NOT_FOUND)
		return fleet_refuse(reason, "lak-unknown", FLEET_E_VERIFY);
	if (e != FLEET_STORE_OK)
		return e;
	if (strcmp(d.state, FLEET_STORE_STATE_RETIRED) == 0)
		return fleet_refuse(reason, "device-retired", FLEET_E_VERIFY);
	if (status && strcmp(status, "planned") == 0)
		return fleet_refuse(reason, "device-planned", FLEET_E_VERIFY);
	return FLEET_OK;
}

/* RA9: not below the recorded pair; then record this one. */
static fleet_err clock_forwards(struct fleet_store *st, const char *device,
				const struct fleet_tpm_clock *c, time_t now, const char **reason)
{
	struct fleet_store_reattest_clock last, rec = {
		.reset_count = c->reset_count,
		.restart_count = c->restart_count,
		.clock = c->clock > (uint64_t)INT64_MAX ? (uint64_t)INT64_MAX : c->clock,
		.checked_at = now < 0 ? 0 : (int64_t)now,
	};
	fleet_err e = fleet_store_reattest_clock_get(st, device, &last);

	if (e == FLEET_STORE_OK) {
		if (c->reset_count < last.reset_count ||
		    (c->reset_count == last.reset_count && c->restart_count < last.restart_count))
			return fleet_refuse(reason, "clock-backwards", FLEET_E_VERIFY);
	} else if (e != FLEET_STORE_E_NOT_FOUND) {
		return e;
	}
	e = fleet_store_reattest_clock_record(st, device, &rec);
	if (e == FLEET_STORE_E_CONFLICT) /* another check got there first, higher */
		return fleet_refuse(reason, "clock-backwards", FLEET_E_VERIFY);
	return e;
}

/* RA10: renew_required_authorities decide the renewal, never the verdict:
 * a node that boots what its class allows passes its check whether or not
 * it may renew. The "renew-authority-missing" reasons leave the verdict
 * (which passes when they were all it had) and set *missing. */
static void split_renewal(struct fleet_verdict *v, bool *missing)
{
	size_t k = 0;

	for (size_t i = 0; i < v->n_reasons; i++) {
		if (v->reasons[i].reason && strcmp(v->reasons[i].reason, "renew-authority-missing") == 0) {
			*missing = true;
			continue;
		}
		if (k != i)
			v->reasons[k] = v->reasons[i];
		k++;
	}
	v->n_reasons = k;
	if (k == 0 && v->n_dropped == 0 && *missing)
		v->pass = true;
}

/* RA10: the log replayed, matched against the quote, judged. */
static fleet_err judge(const struct fleet_reattest_input *in, const TPMT_PUBLIC *ak,
		       const uint8_t qual[32], struct fleet_verdict *verdict, bool *renew_missing)
{
	const struct fleet_profile *p = in->profile;
	const struct fleet_reattest_check *m = in->msg;
	struct fleet_errctx ec = {0};
	struct fleet_evlog *log = NULL;
	struct fleet_pcr_replay *replay = NULL;
	struct fleet_pcr_value values[FLEET_PCR_COUNT];
	const struct fleet_pcr_bank *bank;
	TPML_PCR_SELECTION sel;
	const char *r = NULL;
	size_t n = 0;
	char detail[300];
	fleet_err e;

	e = fleet_evlog_parse(m->eventlog.data, m->eventlog.len, &log, &ec);
	if (e == FLEET_E_NOMEM)
		return e;
	if (e != FLEET_OK) {
		fleet_errctx_format(&ec, e, detail, sizeof(detail));
		verdict_one(verdict, "event-log-malformed", detail);
		return FLEET_OK;
	}
	if (!(replay = calloc(1, sizeof(*replay)))) {
		fleet_evlog_free(log);
		return FLEET_E_NOMEM;
	}
	e = fleet_evlog_replay_one(log, p->bank, replay, &ec);
	if (e == FLEET_E_MALFORMED || e == FLEET_E_TOO_LARGE || e == FLEET_E_TRUNCATED) {
		fleet_errctx_format(&ec, e, detail, sizeof(detail));
		verdict_one(verdict, "event-log-malformed", detail);
		e = FLEET_OK;
		goto out;
	}
	if (e != FLEET_OK)
		goto out;
	bank = fleet_pcr_replay_bank(replay, p->bank);
	if (!bank || !bank->replayable || bank->size != p->size) {
		verdict_one(verdict, "bank-not-replayable", "the log has no replayable quoted bank");
		goto out;
	}
	/* The profile's PCRs as the replay gives them, in selection order. */
	memset(&sel, 0, sizeof(sel));
	sel.count = 1;
	sel.pcrSelections[0].hash = p->bank;
	sel.pcrSelections[0].sizeofSelect = 3;
	for (unsigned i = 0; i < FLEET_PCR_COUNT; i++) {
		if (!(p->quote_mask & (1u << i)))
			continue;
		sel.pcrSelections[0].pcrSelect[i / 8] |= (uint8_t)(1u << (i % 8));
		values[n].alg = p->bank;
		values[n].index = (uint8_t)i;
		values[n].size = (uint8_t)p->size;
		memcpy(values[n].digest, bank->pcr[i], p->size);
		n++;
	}
	struct fleet_quote_check q = {
		.ak = ak,
		.attest = m->quote_attest.data,
		.attest_len = m->quote_attest.len,
		.sig = m->quote_sig.data,
		.sig_len = m->quote_sig.len,
		.extra_data = qual,
		.extra_data_len = 32,
		.selection = &sel,
		.values = values,
		.n_values = n,
	};
	e = fleet_quote_verify(&q, NULL, &r);
	if (e == FLEET_E_NOMEM || e == FLEET_E_CRYPTO)
		goto out;
	if (e != FLEET_OK) {
		snprintf(detail, sizeof(detail), "the replayed log is not what the TPM quoted (%s)",
			 r ? r : "quote");
		verdict_one(verdict, "log-quote-mismatch", detail);
		e = FLEET_OK;
		goto out;
	}
	struct fleet_policy_input pin = {
		.log = log,
		.replay = replay,
		.quoted = values,
		.n_quoted = n,
		.bios_version = m->bios_version[0] ? m->bios_version : NULL,
		.renewal = in->renewal,
	};
	if ((e = fleet_policy_evaluate(p, &pin, verdict)) == FLEET_OK && in->renewal)
		split_renewal(verdict, renew_missing);
out:
	free(replay);
	fleet_evlog_free(log);
	return e;
}

static fleet_err nonce_result(enum take_result r, const char **reason)
{
	switch (r) {
	case TAKE_OK:
		return FLEET_OK;
	case TAKE_UNKNOWN:
		return fleet_refuse(reason, "nonce-unknown", FLEET_E_VERIFY);
	case TAKE_EXPIRED:
		return fleet_refuse(reason, "nonce-expired", FLEET_E_VERIFY);
	case TAKE_REPLAYED:
		return fleet_refuse(reason, "nonce-replayed", FLEET_E_VERIFY);
	case TAKE_FULL: /* fleetd's capacity, not the node's fault: retry (RA12) */
		return FLEET_E_UNAVAILABLE;
	case TAKE_ERROR:
		break;
	}
	return FLEET_E_CRYPTO;
}

static fleet_err check_judge(const struct fleet_reattest_env *env,
			     const struct fleet_reattest_input *in, struct fleet_reattest_result *res,
			     const char **reason)
{
	const struct fleet_reattest_check *m;
	uint8_t lak_hash[32], qual[32];
	TPMT_PUBLIC ak;
	TPMT_SIGNATURE rsig;
	struct fleet_tpm_clock clock;
	X509 *x = NULL;
	const char *r = NULL;
	fleet_err e;

	if (!env || !env->ca || !env->store || !env->nonces || !in || !in->msg || !in->profile ||
	    !res)
		return FLEET_E_INVALID_ARG;
	m = in->msg;
	/* RA4 */
	if ((e = ra_lak_verify(env, &m->lak_cert, &x, lak_hash, reason)) != FLEET_OK)
		return e;
	if (!ra_lak_cn(x, res->device)) {
		X509_free(x);
		return fleet_refuse(reason, "lak-unknown", FLEET_E_VERIFY);
	}
	e = ra_ak_from_cert(x, &ak);
	X509_free(x);
	if (e != FLEET_OK)
		return fleet_refuse(reason, "lak-unknown", FLEET_E_VERIFY);
	/* RA5, RA6 */
	if ((e = lak_current(env->store, res->device, &m->lak_cert, reason)) != FLEET_OK)
		return e;
	if ((e = device_ok(env->store, res->device, in->inventory_status, reason)) != FLEET_OK)
		return e;
	/* RA7: ours, for this LAK, young; not yet recorded (that waits for
	 * RA8, so an unproven check spends nothing). */
	if ((e = nonce_result(nonce_verify(env->nonces, m->nonce, lak_hash, ra_env_now(env)),
			      reason)) != FLEET_OK)
		return e;
	/* RA8 */
	if ((e = fleet_wire_quote_qualifier(m->nonce, &m->report, qual)) != FLEET_OK)
		return e;
	struct fleet_quote_check q = {
		.ak = &ak,
		.attest = m->quote_attest.data,
		.attest_len = m->quote_attest.len,
		.sig = m->quote_sig.data,
		.sig_len = m->quote_sig.len,
		.extra_data = qual,
		.extra_data_len = sizeof(qual),
	};
	e = fleet_quote_authenticate(&q, &clock, &r);
	if (e == FLEET_E_NOMEM || e == FLEET_E_CRYPTO)
		return e;
	if (e != FLEET_OK)
		return fleet_refuse(reason,
				    r && strcmp(r, "attest-extradata") == 0 ? "quote-extradata"
									    : "quote-signature",
				    FLEET_E_VERIFY);
	if (fleet_tpm_signature_parse(m->report_sig.data, m->report_sig.len, &rsig, NULL) !=
	    FLEET_OK)
		return fleet_refuse(reason, "report-signature", FLEET_E_VERIFY);
	e = fleet_tpm_signature_verify(&ak, m->report.data, m->report.len, &rsig, &r);
	if (e == FLEET_E_NOMEM || e == FLEET_E_CRYPTO)
		return e;
	if (e != FLEET_OK)
		return fleet_refuse(reason, "report-signature", FLEET_E_VERIFY);
	if (fleet_network_report_parse(&m->report, &res->report, NULL) != FLEET_OK) {
		memset(&res->report, 0, sizeof(res->report));
		return fleet_refuse(reason, "network-report-malformed", FLEET_E_VERIFY);
	}
	/* RA2: the TPM answered this nonce; now it is spent, once. */
	if ((e = nonce_result(nonce_consume(env->nonces, m->nonce, ra_env_now(env)), reason)) !=
	    FLEET_OK)
		return e;
	/* Authenticated from here on (RA11). */
	res->authenticated = true;
	res->clock = clock;
	/* RA9 */
	if ((e = clock_forwards(env->store, res->device, &clock, ra_env_now(env), reason)) !=
	    FLEET_OK)
		return e;
	/* RA10 */
	if ((e = judge(in, &ak, qual, &res->verdict, &res->renew_authority_missing)) != FLEET_OK)
		return e;
	if (!res->verdict.pass)
		return fleet_refuse(reason,
				    res->verdict.n_reasons ? res->verdict.reasons[0].reason
							   : "boot-policy",
				    FLEET_E_VERIFY);
	return FLEET_OK;
}

struct fleet_decision fleet_reattest_check(const struct fleet_reattest_env *env,
					   const struct fleet_reattest_input *in,
					   struct fleet_reattest_result *result)
{
	const char *reason = NULL;
	fleet_err e;
	struct fleet_decision d;

	if (result)
		memset(result, 0, sizeof(*result));
	e = check_judge(env, in, result, &reason);
	d = fleet_decide(e, reason);
	/* RA12: fleetd's own trouble says nothing about the TPM. */
	if (d.outcome == FLEET_FAILED && result)
		result->authenticated = false;
	return d;
}
