/*
 * renew.c: a running node's renewal on fleetd's side (reattest.h RN1-RN8).
 * The node proves the next LDevID key with the LAK (TPM2_Certify over the
 * request's hash) inside a check that passed; fleetd re-reads the binding
 * from its own store and issues both certificates in one transaction.
 */
#include "fleetd/reattest/reattest.h"
#include "fleetd/reattest/reattest_int.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/x509.h>

#include "lib/tpm_alg.h"

void fleet_reattest_renewed_free(struct fleet_reattest_renewed *r)
{
	if (!r)
		return;
	free(r->lak_cert.data);
	free(r->ldevid_cert.data);
	memset(r, 0, sizeof(*r));
}

/* SHA-256 of a stored certificate's SubjectPublicKeyInfo DER. */
static bool cert_spki_hash(const struct fleet_store_cert *c, uint8_t out[32])
{
	const unsigned char *p = c->der;
	X509 *x = c->der ? d2i_X509(NULL, &p, (long)c->der_len) : NULL;
	unsigned char *spki = NULL;
	int n = x ? i2d_X509_PUBKEY(X509_get_X509_PUBKEY(x), &spki) : -1;
	bool ok = n > 0 && fleet_hash(FLEET_ALG_SHA256, spki, (size_t)n, out) == FLEET_OK;

	OPENSSL_free(spki);
	X509_free(x);
	ERR_clear_error();
	return ok;
}

/* RN4: the device as fleetd's store holds it. */
static fleet_err binding_ok(const struct fleet_store_device *d, const char **reason)
{
	if (d->quarantined)
		return fleet_refuse(reason, "renew-quarantined", FLEET_E_VERIFY);
	if (strcmp(d->state, FLEET_STORE_STATE_ADMITTED) != 0 &&
	    strcmp(d->state, FLEET_STORE_STATE_PROVISIONING) != 0 &&
	    strcmp(d->state, FLEET_STORE_STATE_ACTIVE) != 0)
		return fleet_refuse(reason, "renew-device-state", FLEET_E_VERIFY);
	if (!d->ek_hash[0] && !d->ek_hash_ecc[0])
		return fleet_refuse(reason, "renew-not-bound", FLEET_E_VERIFY);
	return FLEET_OK;
}

/* RN5 and RN6's "not reused": one pass over the device's certificates. */
static fleet_err due_and_new(const struct fleet_reattest_env *env, const char *device,
			     X509 *lak, const uint8_t spki[32], const char **reason)
{
	struct fleet_store_cert *c = NULL;
	size_t n = 0;
	time_t now = ra_env_now(env), edge = now + FLEET_REATTEST_RENEW_WINDOW;
	int64_t newest = -1;
	bool due = ASN1_TIME_cmp_time_t(X509_get0_notAfter(lak), edge) <= 0;
	fleet_err e = fleet_store_certs_for_device(env->store, device, &c, &n);

	if (e != FLEET_STORE_OK)
		return e == FLEET_STORE_E_NOT_FOUND ? fleet_refuse(reason, "lak-unknown", FLEET_E_VERIFY)
						    : e;
	for (size_t i = 0; i < n; i++) {
		uint8_t h[32];
		if (strcmp(c[i].kind, FLEET_STORE_CERT_LDEVID) != 0)
			continue;
		if (cert_spki_hash(&c[i], h) && CRYPTO_memcmp(h, spki, 32) == 0) {
			fleet_store_certs_free(c, n);
			return fleet_refuse(reason, "renew-key-reused", FLEET_E_VERIFY);
		}
		if (!c[i].revoked && c[i].not_after > now && c[i].not_after > newest)
			newest = c[i].not_after;
	}
	fleet_store_certs_free(c, n);
	if (newest < 0 || newest <= (int64_t)edge)
		due = true;
	return due ? FLEET_OK : fleet_refuse(reason, "renew-not-due", FLEET_E_VERIFY);
}

/* RN6: the key the LAK certified, for this serial. */
static fleet_err key_ok(const struct fleet_reattest_check *m, const TPMT_PUBLIC *ak,
			const char *serial, TPM2B_PUBLIC *key, uint8_t spki[32], const char **reason)
{
	struct fleet_ldevid_request req;
	uint8_t qual[32];
	fleet_err e;

	if (fleet_tpm_public_parse(m->renew_public.data, m->renew_public.len, key, NULL) !=
	    FLEET_OK)
		return fleet_refuse(reason, "renew-public-malformed", FLEET_E_MALFORMED);
	if (fleet_ldevid_request_parse(&m->renew_request, &req, NULL) != FLEET_OK)
		return fleet_refuse(reason, "renew-request-malformed", FLEET_E_MALFORMED);
	if (strcmp(req.serial, serial) != 0)
		return fleet_refuse(reason, "renew-request-serial", FLEET_E_VERIFY);
	if ((e = fleet_wire_certify_qualifier(&m->renew_request, qual)) != FLEET_OK)
		return e;
	struct fleet_certify_check c = {
		.ak = ak,
		.attest = m->renew_certify_attest.data,
		.attest_len = m->renew_certify_attest.len,
		.sig = m->renew_certify_sig.data,
		.sig_len = m->renew_certify_sig.len,
		.extra_data = qual,
		.extra_data_len = sizeof(qual),
		.object = &key->publicArea,
	};
	if ((e = fleet_certify_verify(&c, spki, reason)) != FLEET_OK)
		return e;
	/* As at intake: an LDevID signs what its owner asks, so never a
	 * restricted key (fleet_certify_verify lets an AK certify an AK). */
	if (key->publicArea.objectAttributes & TPMA_OBJECT_RESTRICTED)
		return fleet_refuse(reason, "ldevid-restricted", FLEET_E_VERIFY);
	if (CRYPTO_memcmp(spki, req.spki_sha256, 32) != 0)
		return fleet_refuse(reason, "ldevid-request-key", FLEET_E_VERIFY);
	return FLEET_OK;
}

static fleet_err der_of(X509 *x, struct fleet_wire_bytes *b)
{
	unsigned char *der = NULL;
	int n = i2d_X509(x, &der);

	if (n <= 0)
		return FLEET_E_CRYPTO;
	if (!(b->data = malloc((size_t)n))) {
		OPENSSL_free(der);
		return FLEET_E_NOMEM;
	}
	memcpy(b->data, der, (size_t)n);
	b->len = (size_t)n;
	OPENSSL_free(der);
	return FLEET_OK;
}

/* RN7: both certificates, then the store's one transaction. */
static fleet_err issue(const struct fleet_reattest_env *env, const struct fleet_store_device *d,
		       const TPMT_PUBLIC *ak, const TPM2B_PUBLIC *key,
		       struct fleet_reattest_renewed *out, const char **reason)
{
	struct fleet_errctx ec = {0};
	X509 *lak = NULL, *ldevid = NULL;
	time_t now = ra_env_now(env);
	fleet_err e;

	struct fleet_issue_request req = {
		.kind = FLEET_CERT_LAK,
		.key = ak,
		.device_name = d->name,
		.serial = d->serial,
		.not_before = now,
		.validity_days = env->cert_validity_days ? env->cert_validity_days : 90,
	};
	if ((e = fleet_ca_issue(env->ca, &req, &lak, &ec)) != FLEET_OK)
		goto out;
	req.kind = FLEET_CERT_LDEVID;
	req.key = &key->publicArea;
	if ((e = fleet_ca_issue(env->ca, &req, &ldevid, &ec)) != FLEET_OK)
		goto out;
	if ((e = der_of(lak, &out->lak_cert)) != FLEET_OK ||
	    (e = der_of(ldevid, &out->ldevid_cert)) != FLEET_OK)
		goto out;
	struct fleet_store_renew_in ri = {
		.device = d->name,
		.serial = d->serial,
		.lak_der = out->lak_cert.data,
		.lak_len = out->lak_cert.len,
		.ldevid_der = out->ldevid_cert.data,
		.ldevid_len = out->ldevid_cert.len,
		.max_current = FLEET_REATTEST_RENEW_MAX_LDEVID,
		.now = now,
	};
	e = fleet_store_renewal_issue(env->store, &ri, out->lak_sha1, out->ldevid_sha1);
	if (e == FLEET_STORE_E_CONFLICT || e == FLEET_STORE_E_NOT_FOUND)
		e = fleet_refuse(reason, "renew-device-changed", FLEET_E_VERIFY);
	else if (e == FLEET_STORE_E_FULL)
		e = fleet_refuse(reason, "renew-too-many", FLEET_E_VERIFY);
out:
	X509_free(lak);
	X509_free(ldevid);
	if (e != FLEET_OK)
		fleet_reattest_renewed_free(out);
	return e;
}

static fleet_err renew_judge(const struct fleet_reattest_env *env,
			     const struct fleet_reattest_input *in,
			     const struct fleet_reattest_result *checked,
			     struct fleet_reattest_renewed *out, const char **reason)
{
	const struct fleet_reattest_check *m;
	struct fleet_store_device d;
	uint8_t lak_hash[32], spki[32];
	TPMT_PUBLIC ak;
	TPM2B_PUBLIC key;
	X509 *x = NULL;
	fleet_err e;

	/* RN1 */
	if (!env || !env->ca || !env->store || !in || !in->msg || !in->renewal || !checked ||
	    !out || !checked->authenticated || !checked->verdict.pass || !checked->device[0])
		return FLEET_E_INVALID_ARG;
	m = in->msg;
	/* RN2, RN3 */
	if (!m->has_renew)
		return fleet_refuse(reason, "renew-missing", FLEET_E_VERIFY);
	if (checked->renew_authority_missing)
		return fleet_refuse(reason, "renew-authority-missing", FLEET_E_VERIFY);
	/* RN4: the store's row, whatever the inventory says of it. */
	if ((e = fleet_store_device_get_by_name(env->store, checked->device, &d)) != FLEET_STORE_OK)
		return e == FLEET_STORE_E_NOT_FOUND
			       ? fleet_refuse(reason, "lak-unknown", FLEET_E_VERIFY)
			       : e;
	if ((e = binding_ok(&d, reason)) != FLEET_OK)
		return e;
	/* The LAK again: the check proved it; here its key and notAfter. */
	if ((e = ra_lak_verify(env, &m->lak_cert, &x, lak_hash, reason)) != FLEET_OK)
		return e;
	if ((e = ra_ak_from_cert(x, &ak)) != FLEET_OK) {
		X509_free(x);
		return fleet_refuse(reason, "lak-unknown", FLEET_E_VERIFY);
	}
	/* RN6, then RN5 (which needs the key's SPKI for "renew-key-reused") */
	if ((e = key_ok(m, &ak, d.serial, &key, spki, reason)) == FLEET_OK)
		e = due_and_new(env, d.name, x, spki, reason);
	X509_free(x);
	if (e != FLEET_OK)
		return e;
	/* RN7 */
	return issue(env, &d, &ak, &key, out, reason);
}

struct fleet_decision fleet_reattest_renew(const struct fleet_reattest_env *env,
					   const struct fleet_reattest_input *in,
					   const struct fleet_reattest_result *checked,
					   struct fleet_reattest_renewed *out)
{
	const char *reason = NULL;

	if (out)
		memset(out, 0, sizeof(*out));
	/* Two statements: the arguments' order of evaluation is unspecified. */
	fleet_err e = renew_judge(env, in, checked, out, &reason);
	return fleet_decide(e, reason);
}
