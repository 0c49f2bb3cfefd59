/*
 * attest_server_intake.c: round 1 on fleetd's side. The intake is checked
 * as far as it proves anything on its own (the EK certificates, the AK's
 * attributes, the AK's certification of the LDevID key over the request);
 * the challenge then wraps one fresh secret to each EK, bound to the AK's
 * name, so that only the TPM holding both can answer.
 *
 * Nothing from the intake is believed yet: it is all the machine's claim
 * until the answer proves the credential activation.
 */
#include "fleetd/attest/attest_server.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/objects.h>
#include <openssl/rand.h>

#include "lib/hex.h"
#include "lib/tpm_credential.h"

void fleet_attest_session_wipe(struct fleet_attest_session *s)
{
	if (s)
		OPENSSL_cleanse(s, sizeof(*s));
}

static time_t env_now(const struct fleet_attest_env *env)
{
	return env->now ? env->now : time(NULL);
}

/* An EK is bound to its TPM. (That it is a storage key, restricted,
 * decrypt and never sign, is part of fleet_credential_ek_supported.) */
static const char *ek_binding_reason(const TPMT_PUBLIC *ek)
{
	TPMA_OBJECT a = ek->objectAttributes;
	if (!(a & TPMA_OBJECT_FIXEDTPM))
		return "ek-not-fixedtpm";
	if (!(a & TPMA_OBJECT_FIXEDPARENT))
		return "ek-not-fixedparent";
	return NULL;
}

/* One EK: its certificate chains to a manufacturer root, names the same
 * key as the public area, and that key is a storage key of want_type.
 * hash gets ek_hash (the key's canonical SPKI hash, SPIRE's pub_hash). */
static fleet_err check_ek(const struct fleet_attest_env *env, const struct fleet_wire_ek *ek,
			  TPMI_ALG_PUBLIC want_type, TPM2B_PUBLIC *pub, char hash[65],
			  const char **reason)
{
	struct fleet_errctx ec = {0};
	X509 *cert = NULL;
	uint8_t spki[32];
	char spki_hex[65];
	const char *r = NULL;
	fleet_err e;

	if (fleet_ek_cert_load(ek->cert.data, ek->cert.len, &cert, &ec) != FLEET_OK)
		return fleet_refuse(reason, "ek-cert-unparseable", FLEET_E_MALFORMED);
	e = fleet_ek_chain_verify(env->roots, cert, env_now(env), &r);
	if (e != FLEET_OK) {
		e = fleet_refuse(reason, r ? r : "ek-chain-untrusted", e);
		goto out;
	}
	if (fleet_tpm_public_parse(ek->pub.data, ek->pub.len, pub, &ec) != FLEET_OK) {
		e = fleet_refuse(reason, "ek-public-malformed", FLEET_E_MALFORMED);
		goto out;
	}
	if (pub->publicArea.type != want_type) {
		e = fleet_refuse(reason, "ek-wrong-type", FLEET_E_VERIFY);
		goto out;
	}
	e = fleet_ek_cert_matches_public(cert, &pub->publicArea, &r);
	if (e != FLEET_OK) {
		e = fleet_refuse(reason, r ? r : "ek-key-mismatch", e);
		goto out;
	}
	/* The challenge's own rule, here: an EK MakeCredential cannot wrap to
	 * (a SHA-1 or SM3 nameAlg, a NULL or CTR symmetric, a scheme) is
	 * refused before the inventory is asked about it, not at the
	 * challenge as an internal error. Checked after the key match, so a
	 * certificate for another key is reported as that. */
	if ((e = fleet_credential_ek_supported(&pub->publicArea, &r)) != FLEET_OK) {
		/* A refused EK is refused evidence, as every EK rule's; only a
		 * failure with no reason (memory, OpenSSL) stays an error. */
		if (r)
			e = fleet_refuse(reason, r, e == FLEET_E_MALFORMED ? e : FLEET_E_VERIFY);
		goto out;
	}
	if ((r = ek_binding_reason(&pub->publicArea)) != NULL) {
		e = fleet_refuse(reason, r, FLEET_E_VERIFY);
		goto out;
	}
	if ((e = fleet_ek_hash(cert, hash)) != FLEET_OK) {
		e = fleet_refuse(reason, "ek-cert-unparseable", e);
		goto out;
	}
	/* Both name the same key and both hashes are of its canonical
	 * encoding (whatever label the certificate gave it), so they must
	 * agree: the hash NetBox approves, the one SPIRE's pub_hash selector
	 * computes and the one fleetd pins are then one value. */
	if (fleet_tpm_public_spki_sha256(&pub->publicArea, spki) != FLEET_OK) {
		e = fleet_refuse(reason, "ek-public-malformed", FLEET_E_MALFORMED);
		goto out;
	}
	fleet_hex_encode(spki, sizeof(spki), spki_hex);
	if (strcmp(spki_hex, hash) != 0) {
		e = fleet_refuse(reason, "ek-hash-mismatch", FLEET_E_VERIFY);
		goto out;
	}
	e = FLEET_OK;
out:
	X509_free(cert);
	return e;
}

/* The AK: a restricted signing key fleetd can verify and name. */
static fleet_err check_ak(const struct fleet_wire_intake *in, TPM2B_PUBLIC *ak,
			  const char **reason)
{
	uint8_t name[2 + FLEET_DIGEST_MAX];
	size_t name_len;
	EVP_PKEY *pk = NULL;
	fleet_err e;

	if (fleet_tpm_public_parse(in->ak_public.data, in->ak_public.len, ak, NULL) != FLEET_OK)
		return fleet_refuse(reason, "ak-malformed", FLEET_E_MALFORMED);
	if ((e = fleet_tpm_ak_check(&ak->publicArea, reason)) != FLEET_OK)
		return e;
	if (fleet_tpm_name(&ak->publicArea, name, sizeof(name), &name_len) != FLEET_OK ||
	    fleet_tpm_public_to_pkey(&ak->publicArea, &pk) != FLEET_OK)
		return fleet_refuse(reason, "ak-unsupported", FLEET_E_UNSUPPORTED);
	EVP_PKEY_free(pk);
	return FLEET_OK;
}

/* The LDevID key: certified by the AK over the exact request bytes, and
 * the request names this machine and this key (lib/attest_wire.h). */
static fleet_err check_ldevid(const struct fleet_wire_intake *in, const TPM2B_PUBLIC *ak,
			      TPM2B_PUBLIC *key, const char **reason)
{
	uint8_t spki[32];
	struct fleet_ldevid_proof p = {
		.public_area = &in->ldevid_public,
		.request = &in->ldevid_request,
		.certify_attest = &in->ldevid_certify_attest,
		.certify_sig = &in->ldevid_certify_sig,
	};
	return fleet_ldevid_proof_verify(&p, &ak->publicArea, in->serial, key, spki, reason);
}

static fleet_err intake_judge(const struct fleet_attest_env *env,
			      const struct fleet_wire_intake *in, struct fleet_attest_session *s,
			      const char **reason)
{
	struct fleet_attest_session t;
	fleet_err e;

	*reason = NULL;
	if (!env || !env->roots || !in || !s)
		return FLEET_E_INVALID_ARG;
	/* Build into t and copy out only when everything held: a refused
	 * intake leaves the caller's session untouched. */
	memset(&t, 0, sizeof(t));
	if (!in->ek_rsa.present) {
		e = fleet_refuse(reason, "ek-rsa-missing", FLEET_E_VERIFY);
		goto out;
	}
	if ((e = check_ek(env, &in->ek_rsa, TPM2_ALG_RSA, &t.ek_rsa, t.ek_hash, reason)) !=
	    FLEET_OK)
		goto out;
	if (in->ek_ecc.present) {
		e = check_ek(env, &in->ek_ecc, TPM2_ALG_ECC, &t.ek_ecc, t.ek_hash_ecc, reason);
		if (e != FLEET_OK)
			goto out;
		t.has_ecc = true;
	}
	if ((e = check_ak(in, &t.ak, reason)) != FLEET_OK)
		goto out;
	if ((e = check_ldevid(in, &t.ak, &t.ldevid, reason)) != FLEET_OK)
		goto out;
	if (fleet_network_report_parse(&in->network_report, &t.report, NULL) != FLEET_OK) {
		e = fleet_refuse(reason, "network-report-malformed", FLEET_E_MALFORMED);
		goto out;
	}
	if ((e = fleet_hash(FLEET_ALG_SHA256, in->network_report.data, in->network_report.len,
			    t.report_hash)) != FLEET_OK)
		goto out;
	/* The wire capped both strings to these very sizes. */
	if (strlen(in->serial) > FLEET_WIRE_MAX_SERIAL ||
	    strlen(in->bios_version) > FLEET_WIRE_MAX_BIOS) {
		e = FLEET_E_INVALID_ARG;
		goto out;
	}
	memcpy(t.serial, in->serial, strlen(in->serial) + 1);
	memcpy(t.bios_version, in->bios_version, strlen(in->bios_version) + 1);
	t.created = env_now(env);
	*s = t;
	e = FLEET_OK;
out:
	fleet_attest_session_wipe(&t);
	return e;
}

struct fleet_decision fleet_attest_intake(const struct fleet_attest_env *env,
					  const struct fleet_wire_intake *in,
					  struct fleet_attest_session *s)
{
	const char *reason = NULL;
	fleet_err e = intake_judge(env, in, s, &reason);
	return fleet_decide(e, reason);
}

/* "sha256:0,1,2,3,4,5,7": the profile's bank and PCRs, tpm2-tools syntax. */
/* Wrap secret to ek, bound to the AK's name, into c. */
static fleet_err wrap(const TPMT_PUBLIC *ek, const uint8_t *secret, const uint8_t *name,
		      size_t name_len, struct fleet_wire_credential *c)
{
	struct fleet_buf id, es;
	fleet_err e;

	fb_init(&id);
	fb_init(&es);
	e = fleet_make_credential(ek, secret, FLEET_WIRE_ID_LEN, name, name_len, &id, &es, NULL);
	if (e != FLEET_OK) {
		fb_free(&id);
		fb_free(&es);
		return e;
	}
	/* The buffers' memory becomes the message's. */
	c->present = true;
	c->id_object.data = id.data;
	c->id_object.len = id.len;
	c->enc_secret.data = es.data;
	c->enc_secret.len = es.len;
	return FLEET_OK;
}

fleet_err fleet_attest_challenge(const struct fleet_attest_env *env,
				 const struct fleet_wire_intake *in, struct fleet_attest_session *s,
				 struct fleet_wire_intake_reply *out)
{
	uint8_t name[2 + FLEET_DIGEST_MAX];
	size_t name_len = 0;
	unsigned ttl;
	fleet_err e;

	if (!env || !in || !s || !out)
		return FLEET_E_INVALID_ARG;
	memset(out, 0, sizeof(*out));
	/* Only a session intake filled, for this intake, and only once. */
	if (s->state != 0 || s->serial[0] == '\0' || strcmp(s->serial, in->serial) != 0 ||
	    s->has_ecc != in->ek_ecc.present)
		return FLEET_E_INVALID_ARG;
	ttl = env->challenge_ttl_s ? env->challenge_ttl_s : 300;
	/* Without a profile (a machine fleetd cannot judge yet: a pending
	 * claim) the quote proves only that the AK signed this nonce; one PCR
	 * keeps it small, and nothing about the boot is judged. */
	if (!env->profile)
		snprintf(out->pcr_selection, sizeof(out->pcr_selection), "%s",
			 FLEET_ATTEST_PROOF_ONLY_SELECTION);
	else if ((e = fleet_profile_selection(env->profile, out->pcr_selection,
				       sizeof(out->pcr_selection))) != FLEET_OK)
		goto fail;
	if ((e = fleet_pcr_selection_parse(out->pcr_selection, &s->selection)) != FLEET_OK)
		goto fail;
	if ((e = fleet_tpm_name(&s->ak.publicArea, name, sizeof(name), &name_len)) != FLEET_OK)
		goto fail;
	e = FLEET_E_CRYPTO;
	if (RAND_bytes(s->id, sizeof(s->id)) != 1 || RAND_bytes(s->nonce, sizeof(s->nonce)) != 1 ||
	    RAND_priv_bytes(s->secret_rsa, sizeof(s->secret_rsa)) != 1 ||
	    (s->has_ecc && RAND_priv_bytes(s->secret_ecc, sizeof(s->secret_ecc)) != 1))
		goto fail;
	if ((e = wrap(&s->ek_rsa.publicArea, s->secret_rsa, name, name_len, &out->cred_rsa)) !=
	    FLEET_OK)
		goto fail;
	if (s->has_ecc && (e = wrap(&s->ek_ecc.publicArea, s->secret_ecc, name, name_len,
				    &out->cred_ecc)) != FLEET_OK)
		goto fail;
	s->deadline = env_now(env) + (time_t)ttl;
	s->state = FLEET_SESSION_CHALLENGED;
	out->status = FLEET_WIRE_CHALLENGE;
	memcpy(out->session, s->id, sizeof(s->id));
	memcpy(out->nonce, s->nonce, sizeof(s->nonce));
	out->deadline = s->deadline;
	return FLEET_OK;
fail:
	/* No half-made challenge: the secrets of a failed one are gone. */
	OPENSSL_cleanse(s->secret_rsa, sizeof(s->secret_rsa));
	OPENSSL_cleanse(s->secret_ecc, sizeof(s->secret_ecc));
	memset(&s->selection, 0, sizeof(s->selection));
	fleet_wire_intake_reply_free(out);
	return e;
}
