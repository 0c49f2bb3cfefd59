/*
 * attest_server_answer.c: rounds 2 and 3 on fleetd's side, and the issuing
 * of both certificates between them.
 *
 * An answer is authenticated in two steps, and nothing about the session
 * changes before both have held (trust rule 4):
 *   1. the proof: an HMAC keyed with the secrets only the challenged TPM
 *      could activate, over this session and this quote. A request without
 *      it is anybody's, and must not be able to end the machine's session.
 *   2. the quote: signed by the AK that credential activation bound to
 *      the EKs, over the nonce and the network report.
 * After that the evidence is the TPM's own, and whatever the event log
 * says becomes a verdict, pass or fail (trust rule 1).
 */
#include "fleetd/attest/attest_server.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/x509.h>

#include "lib/eventlog.h"

static time_t env_now(const struct fleet_attest_env *env)
{
	return env->now ? env->now : time(NULL);
}

/*
 * A quote the TPM signed over a log fleetd cannot read. The TPM has proven
 * what it booted; only the machine's account of it is unreadable. That is
 * authenticated evidence, so it is a verdict (a failed one: nothing the
 * profile asks can be shown), not a transport error: a machine whose
 * firmware writes broken logs must not pass by sending them, and must not
 * escape a verdict either.
 */
static void verdict_log_malformed(struct fleet_verdict *v, fleet_err e,
				  const struct fleet_errctx *ec)
{
	memset(v, 0, sizeof(*v));
	v->pass = false;
	v->quote_checked = true;
	v->n_reasons = 1;
	v->reasons[0].reason = "event-log-malformed";
	/* ec.detail holds no input bytes but numbers (lib/fleet_err.h). */
	fleet_errctx_format(ec, e, v->reasons[0].detail, sizeof(v->reasons[0].detail));
}

/* Judge the authenticated evidence by the profile. */
static fleet_err judge(const struct fleet_attest_env *env, const struct fleet_attest_session *s,
		       const struct fleet_wire_answer *in, struct fleet_verdict *verdict)
{
	struct fleet_errctx ec = {0};
	struct fleet_evlog *log = NULL;
	struct fleet_pcr_replay *replay;
	fleet_err e;

	e = fleet_evlog_parse(in->event_log.data, in->event_log.len, &log, &ec);
	if (e == FLEET_E_NOMEM)
		return e;
	if (e != FLEET_OK) {
		verdict_log_malformed(verdict, e, &ec);
		return FLEET_OK;
	}
	/* A replay is ~13 KiB: keep it off the stack of a daemon thread. */
	if (!(replay = calloc(1, sizeof(*replay)))) {
		fleet_evlog_free(log);
		return FLEET_E_NOMEM;
	}
	e = fleet_evlog_replay_one(log, env->profile->bank, replay, &ec);
	if (e == FLEET_E_MALFORMED || e == FLEET_E_TOO_LARGE || e == FLEET_E_TRUNCATED) {
		verdict_log_malformed(verdict, e, &ec);
		e = FLEET_OK;
	} else if (e == FLEET_OK) {
		struct fleet_policy_input pin = {
			.log = log,
			.replay = replay,
			.quoted = in->pcrs,
			.n_quoted = in->n_pcrs,
			.bios_version = s->bios_version[0] ? s->bios_version : NULL,
			.renewal = false,
		};
		e = fleet_policy_evaluate(env->profile, &pin, verdict);
	}
	free(replay);
	fleet_evlog_free(log);
	return e;
}

static fleet_err answer_judge(const struct fleet_attest_env *env, struct fleet_attest_session *s,
			      const struct fleet_wire_answer *in, struct fleet_verdict *verdict,
			      const char **reason)
{
	uint8_t want[FLEET_WIRE_ID_LEN], qual[32], report_hash[32];
	fleet_err e;

	*reason = NULL;
	if (!env || !s || !in || !verdict)
		return FLEET_E_INVALID_ARG;
	memset(verdict, 0, sizeof(*verdict));

	/* Until the proof and the quote hold, every refusal returns before
	 * s is written: an unproven request displaces nothing. */
	if (CRYPTO_memcmp(in->session, s->id, sizeof(s->id)) != 0)
		return fleet_refuse(reason, "session-unknown", FLEET_E_VERIFY);
	if (s->state != FLEET_SESSION_CHALLENGED)
		return fleet_refuse(reason, "session-state", FLEET_E_VERIFY);
	if (env_now(env) > s->deadline)
		return fleet_refuse(reason, "session-expired", FLEET_E_VERIFY);

	e = fleet_wire_answer_proof(s->secret_rsa, s->has_ecc ? s->secret_ecc : NULL, s->id,
				    &in->quote_attest, want);
	if (e != FLEET_OK)
		return e;
	if (CRYPTO_memcmp(want, in->proof, sizeof(want)) != 0) {
		OPENSSL_cleanse(want, sizeof(want));
		return fleet_refuse(reason, "proof-invalid", FLEET_E_VERIFY);
	}
	OPENSSL_cleanse(want, sizeof(want));

	/* The report the intake claimed is the one the quote must bind. */
	if ((e = fleet_hash(FLEET_ALG_SHA256, in->network_report.data, in->network_report.len,
			    report_hash)) != FLEET_OK)
		return e;
	if (CRYPTO_memcmp(report_hash, s->report_hash, sizeof(report_hash)) != 0)
		return fleet_refuse(reason, "network-report-changed", FLEET_E_VERIFY);
	if ((e = fleet_wire_quote_qualifier(s->nonce, &in->network_report, qual)) != FLEET_OK)
		return e;
	struct fleet_quote_check q = {
		.ak = &s->ak.publicArea,
		.attest = in->quote_attest.data,
		.attest_len = in->quote_attest.len,
		.sig = in->quote_sig.data,
		.sig_len = in->quote_sig.len,
		.extra_data = qual,
		.extra_data_len = sizeof(qual),
		.selection = &s->selection,
		.values = in->pcrs,
		.n_values = in->n_pcrs,
	};
	if ((e = fleet_quote_verify(&q, NULL, reason)) != FLEET_OK)
		return e;

	/* Authenticated from here on: the TPM's evidence becomes a verdict.
	 * Without a profile nothing is judged: the verdict stays "no pass"
	 * (no reasons), so such a session can never be issued certificates. */
	if (env->profile && (e = judge(env, s, in, verdict)) != FLEET_OK)
		return e;
	s->verdict_pass = verdict->pass;
	s->state = FLEET_SESSION_VERIFIED;
	/* The secrets have proven what they can; nothing later needs them
	 * (a provision wraps a fresh code), so they do not outlive the proof. */
	OPENSSL_cleanse(s->secret_rsa, sizeof(s->secret_rsa));
	OPENSSL_cleanse(s->secret_ecc, sizeof(s->secret_ecc));
	return FLEET_OK;
}

struct fleet_decision fleet_attest_answer(const struct fleet_attest_env *env,
					  struct fleet_attest_session *s,
					  const struct fleet_wire_answer *in,
					  struct fleet_verdict *verdict)
{
	const char *reason = NULL;
	fleet_err e = answer_judge(env, s, in, verdict, &reason);
	return fleet_decide(e, reason);
}

/* DER of x into b (malloc'd) and its SHA-256 into hash. */
static fleet_err der_of(X509 *x, struct fleet_wire_bytes *b, uint8_t hash[32])
{
	unsigned char *der = NULL;
	int n = i2d_X509(x, &der);
	fleet_err e;

	if (n <= 0)
		return FLEET_E_CRYPTO;
	b->data = malloc((size_t)n);
	if (!b->data) {
		OPENSSL_free(der);
		return FLEET_E_NOMEM;
	}
	memcpy(b->data, der, (size_t)n);
	b->len = (size_t)n;
	OPENSSL_free(der);
	e = hash ? fleet_hash(FLEET_ALG_SHA256, b->data, b->len, hash) : FLEET_OK;
	return e;
}

fleet_err fleet_attest_issue(const struct fleet_attest_env *env, struct fleet_attest_session *s,
			     const char *device_name, struct fleet_wire_verdict *out)
{
	struct fleet_errctx ec = {0};
	uint8_t lak_hash[32], ldevid_hash[32];
	X509 *lak = NULL, *ldevid = NULL;
	fleet_err e;

	if (!env || !env->ca || !s || !device_name || !out)
		return FLEET_E_INVALID_ARG;
	memset(out, 0, sizeof(*out));
	/* Only a machine whose TPM-authenticated boot passed. */
	if (s->state != FLEET_SESSION_VERIFIED || !s->verdict_pass)
		return FLEET_E_INVALID_ARG;
	struct fleet_issue_request req = {
		.kind = FLEET_CERT_LAK,
		.key = &s->ak.publicArea,
		.device_name = device_name,
		.serial = s->serial,
		.not_before = env->now,
		.validity_days = env->cert_validity_days ? env->cert_validity_days : 365,
	};
	if ((e = fleet_ca_issue(env->ca, &req, &lak, &ec)) != FLEET_OK)
		goto out;
	req.kind = FLEET_CERT_LDEVID;
	req.key = &s->ldevid.publicArea;
	if ((e = fleet_ca_issue(env->ca, &req, &ldevid, &ec)) != FLEET_OK)
		goto out;
	if ((e = der_of(lak, &out->lak_cert, lak_hash)) != FLEET_OK ||
	    (e = der_of(ldevid, &out->ldevid_cert, ldevid_hash)) != FLEET_OK ||
	    (e = der_of(fleet_ca_cert(env->ca), &out->ca_cert, NULL)) != FLEET_OK)
		goto out;
	memcpy(s->lak_cert_hash, lak_hash, sizeof(lak_hash));
	memcpy(s->ldevid_cert_hash, ldevid_hash, sizeof(ldevid_hash));
	s->state = FLEET_SESSION_ISSUED;
	out->status = FLEET_WIRE_ADMITTED;
out:
	if (e != FLEET_OK)
		fleet_wire_verdict_free(out);
	X509_free(lak);
	X509_free(ldevid);
	return e;
}

static fleet_err confirm_judge(const struct fleet_attest_env *env,
			       struct fleet_attest_session *s, const struct fleet_wire_confirm *in,
			       const char **reason)
{
	struct fleet_buf stmt;
	TPMT_SIGNATURE sig;
	const char *r = NULL;
	fleet_err e;

	*reason = NULL;
	if (!env || !s || !in)
		return FLEET_E_INVALID_ARG;
	/* As in the answer: nothing changes until the signature holds. */
	if (CRYPTO_memcmp(in->session, s->id, sizeof(s->id)) != 0)
		return fleet_refuse(reason, "session-unknown", FLEET_E_VERIFY);
	if (s->state != FLEET_SESSION_ISSUED)
		return fleet_refuse(reason, "session-state", FLEET_E_VERIFY);
	if (fleet_tpm_signature_parse(in->signature.data, in->signature.len, &sig, NULL) !=
	    FLEET_OK)
		return fleet_refuse(reason, "confirm-signature", FLEET_E_VERIFY);
	fb_init(&stmt);
	e = fleet_wire_confirm_statement_hashes(s->id, s->lak_cert_hash, s->ldevid_cert_hash,
						&stmt);
	if (e == FLEET_OK) {
		e = fleet_tpm_signature_verify(&s->ldevid.publicArea, stmt.data, stmt.len, &sig,
					       &r);
		if (e != FLEET_OK && e != FLEET_E_NOMEM && e != FLEET_E_CRYPTO)
			e = fleet_refuse(reason, "confirm-signature", FLEET_E_VERIFY);
	}
	fb_free(&stmt);
	if (e != FLEET_OK)
		return e;
	s->state = FLEET_SESSION_CONFIRMED;
	return FLEET_OK;
}

struct fleet_decision fleet_attest_confirm(const struct fleet_attest_env *env,
					   struct fleet_attest_session *s,
					   const struct fleet_wire_confirm *in)
{
	const char *reason = NULL;
	fleet_err e = confirm_judge(env, s, in, &reason);
	return fleet_decide(e, reason);
}
