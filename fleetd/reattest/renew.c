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
#include <openssl/evp.h>
#include <openssl/x509.h>

#include "lib/hex.h"
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

static fleet_err dup_der(const struct fleet_store_cert *c, struct fleet_wire_bytes *b,
			 char sha1[41])
{
	if (!(b->data = malloc(c->der_len ? c->der_len : 1)))
		return FLEET_E_NOMEM;
	memcpy(b->data, c->der, c->der_len);
	b->len = c->der_len;
	memcpy(sha1, c->sha1, 41);
	return FLEET_OK;
}

/* RN5 (by the store's newest LAK and LDevID), and RN6's "a new key": one
 * pass over the device's certificates.
 * A key that already has a current LDevID certificate is a renewal whose
 * answer the node lost: out gets that certificate and the device's newest
 * current LAK certificate again (out->again), and nothing new is issued. */
static fleet_err due_and_new(const struct fleet_reattest_env *env, const char *device,
			     const uint8_t spki[32], struct fleet_reattest_renewed *out,
			     const char **reason)
{
	struct fleet_store_cert *c = NULL;
	const struct fleet_store_cert *same = NULL, *newest_lak = NULL;
	size_t n = 0;
	time_t now = ra_env_now(env), edge = now + FLEET_REATTEST_RENEW_WINDOW;
	int64_t newest = -1;
	bool reused = false;
	fleet_err e = fleet_store_certs_for_device(env->store, device, &c, &n);

	if (e != FLEET_STORE_OK)
		return e == FLEET_STORE_E_NOT_FOUND ? fleet_refuse(reason, "lak-unknown", FLEET_E_VERIFY)
						    : e;
	for (size_t i = 0; i < n; i++) {
		uint8_t h[32];
		bool current = !c[i].revoked && c[i].not_after > now;
		if (strcmp(c[i].kind, FLEET_STORE_CERT_LAK) == 0) {
			if (current && !newest_lak) /* newest first */
				newest_lak = &c[i];
			continue;
		}
		if (strcmp(c[i].kind, FLEET_STORE_CERT_LDEVID) != 0)
			continue;
		if (cert_spki_hash(&c[i], h) && CRYPTO_memcmp(h, spki, 32) == 0) {
			if (current && !same)
				same = &c[i];
			else
				reused = true;
		}
		if (current && c[i].not_after > newest)
			newest = c[i].not_after;
	}
	if (same && newest_lak) {
		out->again = true;
		if ((e = dup_der(same, &out->ldevid_cert, out->ldevid_sha1)) == FLEET_OK)
			e = dup_der(newest_lak, &out->lak_cert, out->lak_sha1);
	} else if (same || reused) {
		e = fleet_refuse(reason, "renew-key-reused", FLEET_E_VERIFY);
	} else {
		/* Due by the store's newest certificates, never by the one the
		 * node presents: an older LAK it kept must not renew again and
		 * again (found in review). */
		bool due = newest < 0 || newest <= (int64_t)edge || !newest_lak ||
			   newest_lak->not_after <= (int64_t)edge;
		e = due ? FLEET_OK : fleet_refuse(reason, "renew-not-due", FLEET_E_VERIFY);
	}
	fleet_store_certs_free(c, n);
	if (e != FLEET_OK)
		fleet_reattest_renewed_free(out);
	return e;
}

/* RN6: the key the LAK certified, for this serial: the intake's check
 * (lib/attest_wire.h fleet_ldevid_proof_verify). */
static fleet_err key_ok(const struct fleet_reattest_check *m, const TPMT_PUBLIC *ak,
			const char *serial, TPM2B_PUBLIC *key, uint8_t spki[32], const char **reason)
{
	struct fleet_ldevid_proof p = {
		.public_area = &m->renew_public,
		.request = &m->renew_request,
		.certify_attest = &m->renew_certify_attest,
		.certify_sig = &m->renew_certify_sig,
	};
	return fleet_ldevid_proof_verify(&p, ak, serial, key, spki, reason);
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
		       const struct fleet_wire_bytes *presented_lak, const TPMT_PUBLIC *ak,
		       const TPM2B_PUBLIC *key, struct fleet_reattest_renewed *out,
		       const char **reason)
{
	unsigned char md[20];
	unsigned int mdlen = 0;
	char presented_sha1[41];
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
	if (!EVP_Digest(presented_lak->data, presented_lak->len, md, &mdlen, EVP_sha1(), NULL) ||
	    mdlen != sizeof(md)) {
		e = FLEET_E_CRYPTO;
		goto out;
	}
	fleet_hex_encode(md, sizeof(md), presented_sha1);
	struct fleet_store_renew_in ri = {
		.device = d->name,
		.serial = d->serial,
		.presented_lak_sha1 = presented_sha1,
		.lak_der = out->lak_cert.data,
		.lak_len = out->lak_cert.len,
		.ldevid_der = out->ldevid_cert.data,
		.ldevid_len = out->ldevid_cert.len,
		.max_current = FLEET_REATTEST_RENEW_MAX_LDEVID,
		.now = now,
	};
	e = fleet_store_renewal_issue(env->store, &ri, out->lak_sha1, out->ldevid_sha1);
	/* Refusals of the store's re-read: what changed since the check. */
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
	/* RN4: a running node by the inventory too (a decommissioning, failed
	 * or offline one gets nothing new; planned was RA6's). */
	if (!in->inventory_status || (strcmp(in->inventory_status, "active") != 0 &&
				      strcmp(in->inventory_status, "staged") != 0))
		return fleet_refuse(reason, "renew-inventory-status", FLEET_E_VERIFY);
	/* The LAK again: the check proved it; here its key and notAfter. */
	if ((e = ra_lak_verify(env, &m->lak_cert, &x, lak_hash, reason)) != FLEET_OK)
		return e;
	if ((e = ra_ak_from_cert(x, &ak)) != FLEET_OK) {
		X509_free(x);
		return fleet_refuse(reason, "lak-unknown", FLEET_E_VERIFY);
	}
	/* RN6, then RN5 (which needs the key's SPKI for "renew-key-reused") */
	if ((e = key_ok(m, &ak, d.serial, &key, spki, reason)) == FLEET_OK)
		e = due_and_new(env, d.name, spki, out, reason);
	X509_free(x);
	if (e != FLEET_OK || out->again)
		return e;
	/* RN7 */
	e = issue(env, &d, &m->lak_cert, &ak, &key, out, reason);
	if (e == FLEET_STORE_E_STATE) /* a concurrent renewal of this key won: its answer */
		e = due_and_new(env, d.name, spki, out, reason);
	return e;
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
