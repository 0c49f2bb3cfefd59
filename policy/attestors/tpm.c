/*
 * tpm.c: the tpm attestor (spec 001 "tpm"): a node tied to its TPM's
 * endorsement key, an identity that survives a reinstall or a disk swap, in
 * two rounds of one join (lib/tpm_join_evidence.h is the wire).
 *
 * Round 1 (writes nothing; every replica sharing the challenge key and the
 * store can finish the join). Refused unless, in this order:
 *   the evidence decodes                                  tpm-malformed
 *   the role asked is the attestor's                      tpm-role
 *   the EK public area parses and can take a credential   tpm-ek-unsupported
 *   the EK certificate is present (or, for labs only,
 *     allow_uncertified_ek)                               ek-certificate-missing
 *   it loads and names the EK's key                       ek-certificate-mismatch
 *   it chains to one of the EK roots                      ek-certificate-chain
 *   the AK has attestation-key attributes                 tpm-ak-attributes
 * then answered with a MakeCredential challenge (a fresh 32-byte secret
 * wrapped to the EK for the AK's name) and the state the second round
 * needs, sealed with AES-256-GCM under the challenge key and bound to the
 * CSR (lib/challenge_state.h): the secret, the EK's hash, the AK's public
 * area.
 *
 * Round 2. Refused unless, in this order:
 *   the evidence decodes                                  tpm-malformed
 *   the state opens: ours, this CSR's, not expired        challenge-malformed,
 *                                                         challenge-tag,
 *                                                         challenge-for-another-csr,
 *                                                         challenge-expired
 *   the secret is the one wrapped to the EK (only the
 *     TPM holding it, with that AK loaded, activates it)  tpm-credential
 *   the quote: the AK's signature over a TPMS_ATTEST of
 *     type quote, extraData SHA-256(secret || SHA-256(csr)),
 *     the challenge's selection, the values' digest       tpm-quote-malformed,
 *                                                         tpm-quote-signature,
 *                                                         tpm-quote-nonce,
 *                                                         tpm-quote-selection,
 *                                                         tpm-pcr-values
 *   the boot policy (a profile, when configured: the
 *     event log replayed to the quoted values and judged
 *     by policy/evaluate.c, as HookOS admission does)     pcr-policy
 *   the node key, when certified: the AK's TPM2_Certify
 *     over SHA-256(csr) of a key made in the TPM that
 *     never leaves it, whose SPKI is the CSR's            node-key-malformed,
 *                                                         node-key-signature,
 *                                                         node-key-nonce,
 *                                                         node-key-name,
 *                                                         node-key-attributes,
 *                                                         node-key-not-csr
 *     and, under node_key certified, present              node-key-not-certified
 *   where it joins: the node the EK is bound to (a
 *     reclaim); else the resolve list (a new node, or the
 *     node it names, which no other EK may hold); else
 *     enrollment (a join request an operator decides);
 *     else none                                           tpm-unknown-ek,
 *                                                         tpm-denied,
 *                                                         bound-elsewhere
 * A round 2 admits one join (challenge-replayed, A5: its state's SHA-256 in
 * attestation_uses until the state ends).
 * The result binds the EK (A6: a bound EK never admits another node) and,
 * with a certified key, carries the AK's name as the certificate's
 * urn:bc:tpm-ak: statement (A8), so every renewal must be certified by the
 * same AK (fleetd/join/join_renew.c).
 */
#include "policy/attestors/attestor.h"

#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/rand.h>
#include <openssl/x509.h>

#include "lib/challenge_state.h"
#include "lib/eventlog.h"
#include "lib/hex.h"
#include "lib/reader.h"
#include "lib/tpm.h"
#include "lib/tpm_credential.h"
#include "lib/tpm_join_evidence.h"
#include "lib/x509_ek.h"
#include "policy/evaluate.h"

#define SECRET_LEN 32
#define STATE_VERSION 1
#define DEFAULT_SELECTION "sha256:0,1,2,3,4,5,6,7"

const char *const fleet_attestor_tpm_reasons[] = {
	"tpm-malformed",	 "tpm-role",		"tpm-ek-unsupported",
	"ek-certificate-missing", "ek-certificate-mismatch", "ek-certificate-chain",
	"tpm-ak-attributes",	 FLEET_CHALLENGE_REASON_MALFORMED, FLEET_CHALLENGE_REASON_TAG,
	FLEET_CHALLENGE_REASON_CSR, FLEET_CHALLENGE_REASON_EXPIRED, "tpm-credential",
	"tpm-quote-malformed",	 "tpm-quote-signature", "tpm-quote-nonce",
	"tpm-quote-selection",	 "tpm-pcr-values",	"pcr-policy",
	"node-key-malformed",	 "node-key-signature",	"node-key-nonce",
	"node-key-name",	 "node-key-attributes", "node-key-not-csr",
	"node-key-not-certified", "tpm-unknown-ek",	"tpm-denied",
	"bound-elsewhere",	 "challenge-replayed", NULL};

/* The second round's state, sealed (lib/challenge_state.h):
 *   u8 version (1) || u8 flags (bit 0: the EK was certified) ||
 *   secret (32) || SHA-256 of the EK's SPKI (32) || u16be n || the AK's
 *   marshaled TPM2B_PUBLIC (n) */
#define FLAG_EK_CERTIFIED 1u
struct state {
	uint8_t flags;
	uint8_t secret[SECRET_LEN];
	uint8_t ek_hash[32];
	const uint8_t *ak; /* into the opened buffer */
	uint16_t ak_len;
};

static const char *selection_of(const struct fleet_tpm_attestor_config *c)
{
	return c->pcr_selection[0] ? c->pcr_selection : DEFAULT_SELECTION;
}

/* ---- round 1 ---------------------------------------------------------------- */

static fleet_err round1(const struct fleet_attestor *a, struct fleet_store_tx *tx,
			const struct fleet_join_input *in, const struct fleet_tpm_evidence *ev,
			struct fleet_attest_result *out)
{
	const struct fleet_tpm_attestor_config *c = a->cfg;
	struct fleet_errctx ec;
	TPM2B_PUBLIC ek, ak;
	struct fleet_buf id_object, enc_secret, state, sealed, payload;
	struct fleet_tpm_challenge ch;
	uint8_t secret[SECRET_LEN], ek_hash[32], name[2 + 64];
	size_t name_len;
	const char *why = NULL;
	uint8_t flags = 0;
	X509 *cert = NULL;
	int64_t now;
	fleet_err e;

	memset(&ec, 0, sizeof(ec));
	memset(&ch, 0, sizeof(ch));
	fb_init(&id_object);
	fb_init(&enc_secret);
	fb_init_secret(&state, FLEET_CHALLENGE_MAX_STATE);
	fb_init(&sealed);
	fb_init(&payload);
	if (fleet_tpm_public_parse(ev->ek_public.data, ev->ek_public.len, &ek, &ec) ||
	    fleet_credential_ek_supported(&ek.publicArea, &why)) {
		e = fleet_attest_refuse(out, "tpm-ek-unsupported");
		goto out;
	}
	if (ev->ek_cert.len == 0) {
		if (!c->allow_uncertified_ek) {
			e = fleet_attest_refuse(out, "ek-certificate-missing");
			goto out;
		}
		out->notice = "an EK without a manufacturer certificate (allow_uncertified_ek)";
	} else {
		if (fleet_ek_cert_load(ev->ek_cert.data, ev->ek_cert.len, &cert, &ec) ||
		    fleet_ek_cert_matches_public(cert, &ek.publicArea, &why)) {
			ERR_clear_error();
			e = fleet_attest_refuse(out, "ek-certificate-mismatch");
			goto out;
		}
		if ((e = fleet_store_tx_now(tx, &now)))
			goto out;
		/* No roots is no chain: a certificate is trusted by its roots
		 * only, never by being there. */
		if (!c->ek_roots || fleet_ek_chain_verify(c->ek_roots, cert, (time_t)now, &why)) {
			ERR_clear_error();
			e = fleet_attest_refuse(out, "ek-certificate-chain");
			goto out;
		}
		flags |= FLAG_EK_CERTIFIED;
	}
	if (fleet_tpm_public_parse(ev->ak_public.data, ev->ak_public.len, &ak, &ec) ||
	    fleet_tpm_ak_check(&ak.publicArea, &why) ||
	    fleet_tpm_name(&ak.publicArea, name, sizeof(name), &name_len)) {
		e = fleet_attest_refuse(out, "tpm-ak-attributes");
		goto out;
	}
	if ((e = fleet_tpm_public_spki_sha256(&ek.publicArea, ek_hash)))
		goto out;
	if (RAND_bytes(secret, sizeof(secret)) != 1) {
		e = FLEET_E_CRYPTO;
		goto out;
	}
	if ((e = fleet_make_credential(&ek.publicArea, secret, sizeof(secret), name, name_len,
				       &id_object, &enc_secret, &why)))
		goto out;
	if ((e = fleet_store_tx_now(tx, &now)))
		goto out;
	fb_put_u8(&state, STATE_VERSION);
	fb_put_u8(&state, flags);
	fb_put(&state, secret, sizeof(secret));
	fb_put(&state, ek_hash, sizeof(ek_hash));
	fb_put_u16be(&state, (uint16_t)ev->ak_public.len);
	fb_put(&state, ev->ak_public.data, ev->ak_public.len);
	if ((e = fb_err(&state)) ||
	    (e = fleet_challenge_seal(c->challenge_key, in->csr_sha256, now,
				      c->challenge_ttl_seconds, state.data, state.len, &sealed)))
		goto out;
	ch.id_object.data = id_object.data;
	ch.id_object.len = id_object.len;
	ch.enc_secret.data = enc_secret.data;
	ch.enc_secret.len = enc_secret.len;
	snprintf(ch.pcrs, sizeof(ch.pcrs), "%s", selection_of(c));
	ch.state.data = sealed.data;
	ch.state.len = sealed.len;
	if ((e = fleet_tpm_challenge_encode(&ch, &payload)))
		goto out;
	out->outcome = FLEET_ATTEST_DEFER;
	out->challenge = true;
	snprintf(out->deferral.attestor, sizeof(out->deferral.attestor), "%s", a->id);
	out->deferral.not_after = now + (int64_t)c->challenge_ttl_seconds;
	/* The result owns the payload until the service has answered. */
	out->deferral.payload.data = payload.data;
	out->deferral.payload.len = payload.len;
	fb_init(&payload);
	e = FLEET_OK;
out:
	OPENSSL_cleanse(secret, sizeof(secret));
	X509_free(cert);
	fb_free(&id_object);
	fb_free(&enc_secret);
	fb_free_secret(&state);
	fb_free(&sealed);
	fb_free(&payload);
	return e;
}

/* ---- round 2 ---------------------------------------------------------------- */

static bool state_read(const struct fleet_buf *b, struct state *s)
{
	struct fleet_reader r;
	uint8_t v;
	fr_init(&r, b->data, b->len);
	if (fr_u8(&r, &v) || v != STATE_VERSION || fr_u8(&r, &s->flags) ||
	    fr_get(&r, s->secret, SECRET_LEN) || fr_get(&r, s->ek_hash, 32) ||
	    fr_u16be(&r, &s->ak_len) || fr_ptr(&r, s->ak_len, &s->ak) || fr_left(&r) != 0)
		return false;
	return true;
}

/* lib/tpm.h's quote reasons, as this attestor's. */
static const char *quote_reason(const char *r)
{
	if (!r)
		return "tpm-quote-malformed";
	if (!strncmp(r, "signature-", 10) || !strcmp(r, "ak-unsupported"))
		return "tpm-quote-signature";
	if (!strcmp(r, "attest-extradata"))
		return "tpm-quote-nonce";
	if (!strcmp(r, "quote-selection"))
		return "tpm-quote-selection";
	if (!strncmp(r, "quote-pcr-", 10))
		return "tpm-pcr-values";
	return "tpm-quote-malformed";
}

/* lib/tpm.h's certification reasons, as the spec's node-key set. */
static const char *certify_reason(const char *r)
{
	if (!r)
		return "node-key-malformed";
	if (!strncmp(r, "signature-", 10) || !strcmp(r, "ak-unsupported"))
		return "node-key-signature";
	if (!strcmp(r, "attest-extradata"))
		return "node-key-nonce";
	if (!strcmp(r, "certify-name"))
		return "node-key-name";
	if (!strncmp(r, "key-", 4))
		return "node-key-attributes";
	return "node-key-malformed";
}

fleet_err fleet_tpm_certification_check(const TPMT_PUBLIC *ak,
					const struct fleet_tpm_certification *c,
					const uint8_t csr_sha256[32],
					const uint8_t csr_spki_sha256[32], const char **reason)
{
	struct fleet_errctx ec;
	TPM2B_PUBLIC key;
	uint8_t spki[32];
	const char *why = NULL;
	memset(&ec, 0, sizeof(ec));
	*reason = NULL;
	if (fleet_tpm_public_parse(c->key_public.data, c->key_public.len, &key, &ec)) {
		*reason = "node-key-malformed";
		return FLEET_OK;
	}
	struct fleet_certify_check cc = {
		.ak = ak,
		.attest = c->certify_info.data,
		.attest_len = c->certify_info.len,
		.sig = c->signature.data,
		.sig_len = c->signature.len,
		.extra_data = csr_sha256,
		.extra_data_len = 32,
		.object = &key.publicArea,
	};
	fleet_err e = fleet_certify_verify(&cc, spki, &why);
	ERR_clear_error();
	if (e == FLEET_E_NOMEM)
		return e;
	if (e) {
		*reason = certify_reason(why);
		return FLEET_OK;
	}
	if (CRYPTO_memcmp(spki, csr_spki_sha256, 32) != 0)
		*reason = "node-key-not-csr";
	return FLEET_OK;
}

/* PCR values in the selection's order (banks as listed, PCRs ascending),
 * each the bank's digest size. */
static bool values_of(const TPML_PCR_SELECTION *sel, const struct fleet_tpm_evidence *ev,
		      struct fleet_pcr_value *v, size_t *n)
{
	size_t k = 0;
	for (uint32_t b = 0; b < sel->count; b++) {
		const TPMS_PCR_SELECTION *s = &sel->pcrSelections[b];
		size_t dlen = fleet_hash_alg_size(s->hash);
		for (unsigned i = 0; i < 8u * s->sizeofSelect; i++) {
			if (!(s->pcrSelect[i / 8] & (1u << (i % 8))))
				continue;
			if (k >= ev->n_pcr_values || ev->pcr_values[k].len != dlen ||
			    dlen > sizeof(v[k].digest))
				return false;
			v[k].alg = s->hash;
			v[k].index = (uint8_t)i;
			v[k].size = (uint8_t)dlen;
			memcpy(v[k].digest, ev->pcr_values[k].data, dlen);
			k++;
		}
	}
	*n = k;
	return k == ev->n_pcr_values;
}

static fleet_err boot_policy(const struct fleet_tpm_attestor_config *c,
			     const struct fleet_tpm_evidence *ev, const struct fleet_pcr_value *v,
			     size_t n, bool *pass)
{
	struct fleet_errctx ec;
	struct fleet_evlog *log = NULL;
	struct fleet_pcr_replay *replay = NULL;
	struct fleet_verdict *verdict = NULL;
	fleet_err e = FLEET_OK;
	memset(&ec, 0, sizeof(ec));
	*pass = false;
	if (!ev->event_log.len)
		return FLEET_OK;
	if (fleet_evlog_parse(ev->event_log.data, ev->event_log.len, &log, &ec) != FLEET_OK)
		return FLEET_OK;
	replay = calloc(1, sizeof(*replay));
	verdict = calloc(1, sizeof(*verdict));
	if (!replay || !verdict) {
		e = FLEET_E_NOMEM;
		goto out;
	}
	if (fleet_evlog_replay(log, replay, &ec) != FLEET_OK)
		goto out;
	struct fleet_policy_input pin = {
		.log = log,
		.replay = replay,
		.quoted = v,
		.n_quoted = n,
	};
	if ((e = fleet_policy_evaluate(c->pcr_profile, &pin, verdict)) == FLEET_OK)
		*pass = verdict->pass && verdict->quote_checked;
out:
	free(verdict);
	free(replay);
	fleet_evlog_free(log);
	return e;
}

/* Where a proven EK joins (the header's last step). */
static fleet_err where(const struct fleet_tpm_attestor_config *c, struct fleet_store_tx *tx,
		       const struct fleet_join_input *in, const char *ek_hex, int64_t now,
		       struct fleet_attest_result *out, bool *decided)
{
	struct fleet_store_node n;
	char bound[FLEET_STORE_NODE_ID_MAX + 1] = "", held[129];
	const struct fleet_tpm_resolve_entry *re;
	fleet_err e;

	*decided = false;
	e = fleet_store_tx_binding(tx, "ek", ek_hex, bound);
	if (e && e != FLEET_STORE_E_NOT_FOUND)
		return e;
	if (bound[0]) {
		/* A reclaim: the node keeps its pool, site and role (the
		 * service refuses another role: reclaim-role). */
		if ((e = fleet_store_tx_node(tx, bound, &n)))
			return e == FLEET_STORE_E_NOT_FOUND ? FLEET_STORE_E_CORRUPT : e;
		memcpy(out->node_id, bound, sizeof(out->node_id));
		snprintf(out->pool, sizeof(out->pool), "%s", n.pool);
		snprintf(out->site, sizeof(out->site), "%s", n.site);
		return FLEET_OK;
	}
	if ((re = c->resolve ? fleet_tpm_resolve_find(c->resolve, ek_hex) : NULL)) {
		if (re->node[0]) {
			e = fleet_store_tx_node(tx, re->node, &n);
			if (e == FLEET_STORE_E_NOT_FOUND) {
				*decided = true;
				return fleet_attest_refuse(out, "tpm-unknown-ek");
			}
			if (e)
				return e;
			/* A node holds one EK: the list cannot hand a node
			 * that another TPM proved to this one. */
			e = fleet_store_tx_node_bound(tx, re->node, "ek", held);
			if (e == FLEET_OK && strcmp(held, ek_hex) != 0) {
				*decided = true;
				return fleet_attest_refuse(out, "bound-elsewhere");
			}
			if (e && e != FLEET_STORE_E_NOT_FOUND)
				return e;
			memcpy(out->node_id, re->node, sizeof(out->node_id));
			snprintf(out->pool, sizeof(out->pool), "%s", n.pool);
			snprintf(out->site, sizeof(out->site), "%s", n.site);
			return FLEET_OK;
		}
		snprintf(out->pool, sizeof(out->pool), "%s", re->pool);
		snprintf(out->site, sizeof(out->site), "%s", re->site);
		return FLEET_OK;
	}
	if (!c->enrollment_pool[0]) {
		*decided = true;
		return fleet_attest_refuse(out, "tpm-unknown-ek");
	}
	/* Enrollment: the request is the EK's, not the CSR's, so a machine
	 * that restarted its join while it waited is the one approved. */
	const struct fleet_attest_request q = {
		.attestor = "tpm",
		.hw_key = ek_hex,
		.site = c->enrollment_site,
		.mac = "",
		.denied_reason = "tpm-denied",
		.now = now,
		.ttl_seconds = c->pending_ttl_seconds,
		.retry_after_seconds = c->retry_after_seconds,
	};
	if ((e = fleet_attest_join_request(tx, in, &q, out, decided)) || *decided)
		return e;
	snprintf(out->pool, sizeof(out->pool), "%s", c->enrollment_pool);
	snprintf(out->site, sizeof(out->site), "%s", c->enrollment_site);
	return FLEET_OK;
}

static fleet_err round2(const struct fleet_attestor *a, struct fleet_store_tx *tx,
			const struct fleet_join_input *in, const struct fleet_tpm_evidence *ev,
			struct fleet_attest_result *out)
{
	const struct fleet_tpm_attestor_config *c = a->cfg;
	struct fleet_errctx ec;
	struct fleet_buf opened;
	struct state st;
	TPM2B_PUBLIC ak;
	TPML_PCR_SELECTION sel;
	struct fleet_pcr_value *values = NULL;
	uint8_t nonce[32], name[2 + 64];
	char ek_hex[65];
	size_t n_values = 0, name_len;
	const char *why = NULL;
	bool decided, pass;
	int64_t now;
	fleet_err e;

	memset(&ec, 0, sizeof(ec));
	memset(&st, 0, sizeof(st));
	fb_init_secret(&opened, FLEET_CHALLENGE_MAX_STATE);
	if ((e = fleet_store_tx_now(tx, &now)))
		goto out;
	if (fleet_challenge_open(c->challenge_key, in->csr_sha256, now, ev->state.data,
				 ev->state.len, &opened, &ec) != FLEET_OK) {
		e = fleet_attest_refuse(out, ec.reason ? ec.reason
						       : FLEET_CHALLENGE_REASON_MALFORMED);
		goto out;
	}
	/* Sealed by us: a state that does not read is ours gone wrong. */
	if (!state_read(&opened, &st) ||
	    fleet_tpm_public_parse(st.ak, st.ak_len, &ak, &ec) != FLEET_OK) {
		e = FLEET_STORE_E_CORRUPT;
		goto out;
	}
	if (ev->secret.len != SECRET_LEN ||
	    CRYPTO_memcmp(ev->secret.data, st.secret, SECRET_LEN) != 0) {
		e = fleet_attest_refuse(out, "tpm-credential");
		goto out;
	}
	/* From here the AK is the EK's TPM's: what it signs is that TPM's. */
	if (fleet_pcr_selection_parse(selection_of(c), &sel) != FLEET_OK) {
		e = FLEET_E_INVALID_ARG; /* checked when the configuration loaded */
		goto out;
	}
	if (!(values = calloc(FLEET_TPM_MAX_PCRS, sizeof(*values)))) {
		e = FLEET_E_NOMEM;
		goto out;
	}
	if (!values_of(&sel, ev, values, &n_values)) {
		e = fleet_attest_refuse(out, "tpm-pcr-values");
		goto out;
	}
	if ((e = fleet_tpm_quote_nonce(st.secret, SECRET_LEN, in->csr_sha256, nonce)))
		goto out;
	struct fleet_quote_check q = {
		.ak = &ak.publicArea,
		.attest = ev->quote.data,
		.attest_len = ev->quote.len,
		.sig = ev->quote_sig.data,
		.sig_len = ev->quote_sig.len,
		.extra_data = nonce,
		.extra_data_len = sizeof(nonce),
		.selection = &sel,
		.values = values,
		.n_values = n_values,
	};
	e = fleet_quote_verify(&q, NULL, &why);
	ERR_clear_error();
	if (e == FLEET_E_NOMEM)
		goto out;
	if (e) {
		e = fleet_attest_refuse(out, quote_reason(why));
		goto out;
	}
	if (c->pcr_profile) {
		if ((e = boot_policy(c, ev, values, n_values, &pass)))
			goto out;
		if (!pass) {
			e = fleet_attest_refuse(out, "pcr-policy");
			goto out;
		}
	}
	if (ev->has_node_key) {
		if ((e = fleet_tpm_certification_check(&ak.publicArea, &ev->node_key,
						       in->csr_sha256, in->csr_spki_sha256, &why)))
			goto out;
		if (why) {
			e = fleet_attest_refuse(out, why);
			goto out;
		}
		if ((e = fleet_tpm_name(&ak.publicArea, name, sizeof(name), &name_len)) ||
		    (e = fleet_tpm_ak_uri(name, name_len, out->node_key_uri,
					  sizeof(out->node_key_uri))))
			goto out;
	} else if (c->node_key == FLEET_TPM_NODE_KEY_CERTIFIED) {
		e = fleet_attest_refuse(out, "node-key-not-certified");
		goto out;
	}
	/* One answer per challenge: a round 2 sent again (captured, or the
	 * agent's own retry after an answer it lost) would reclaim the node
	 * once more and revoke the certificate the first one issued. The
	 * service records the use with the join (A5), until the state ends. */
	uint8_t sh[32];
	if ((e = fleet_hash(FLEET_ALG_SHA256, ev->state.data, ev->state.len, sh)))
		goto out;
	fleet_hex_encode(sh, sizeof(sh), out->use_subject);
	out->use_expires_at = now + FLEET_CHALLENGE_MAX_TTL;
	out->use_reason = "challenge-replayed";
	fleet_hex_encode(st.ek_hash, sizeof(st.ek_hash), ek_hex);
	if ((e = where(c, tx, in, ek_hex, now, out, &decided)) || decided)
		goto out;
	snprintf(out->role, sizeof(out->role), "%s", in->role);
	snprintf(out->bind_kind, sizeof(out->bind_kind), "ek");
	memcpy(out->bind_value, ek_hex, sizeof(ek_hex));
	if (!(st.flags & FLAG_EK_CERTIFIED))
		out->notice = "an EK without a manufacturer certificate (allow_uncertified_ek)";
	out->outcome = FLEET_ATTEST_RESULT;
	e = FLEET_OK;
out:
	OPENSSL_cleanse(&st, sizeof(st));
	OPENSSL_cleanse(nonce, sizeof(nonce));
	free(values);
	fb_free_secret(&opened);
	return e;
}

fleet_err fleet_attestor_tpm_verify(const struct fleet_attestor *a, struct fleet_store_tx *tx,
				    const struct fleet_join_input *in,
				    struct fleet_attest_result *out)
{
	const struct fleet_tpm_attestor_config *c = a->cfg;
	struct fleet_tpm_evidence ev;
	struct fleet_errctx ec;
	fleet_err e;

	memset(&ec, 0, sizeof(ec));
	if (!in->req->has_attestation ||
	    fleet_tpm_evidence_decode(in->req->attestation.data, in->req->attestation.len, &ev,
				      &ec) != FLEET_OK)
		return fleet_attest_refuse(out, "tpm-malformed");
	if (strcmp(in->role, c->role[0] ? c->role : "node") != 0)
		e = fleet_attest_refuse(out, "tpm-role");
	else
		e = ev.round == 1 ? round1(a, tx, in, &ev, out) : round2(a, tx, in, &ev, out);
	fleet_tpm_evidence_free(&ev);
	return e;
}
