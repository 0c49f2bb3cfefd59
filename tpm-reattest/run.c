/*
 * run.c: one hourly re-check, client side (reattest_client.h).
 *
 * All local and TPM work that can fail before fleetd is asked for anything
 * (the files, the AK against the certificate) comes first; the quote and
 * the report's signature come between the two requests, and the check is
 * sent only when both succeeded. The bindings are computed with the lib/
 * functions fleetd checks them with.
 */
#include "tpm-reattest/reattest_client.h"
#include "tpm-reattest/client_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include <openssl/pem.h>
#include <openssl/x509.h>
#include <tss2/tss2_mu.h>
#include <tss2/tss2_rc.h>

#include "lib/file_read.h"
#include "lib/tpm.h"
#include "tink-attest/identity.h"

void tpm_reattest_log(const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "tpm-reattest: %s\n", line);
}

const char *tpm_reattest_exit_name(int code)
{
	switch (code) {
	case TPM_REATTEST_EXIT_PASS:
		return "pass";
	case TPM_REATTEST_EXIT_USAGE:
		return "usage";
	case TPM_REATTEST_EXIT_REFUSED:
		return "refused";
	case TPM_REATTEST_EXIT_UNREACHABLE:
		return "fleetd-unreachable";
	case TPM_REATTEST_EXIT_NO_TPM:
		return "no-tpm";
	case TPM_REATTEST_EXIT_AK_MISMATCH:
		return "ak-not-certificate";
	case TPM_REATTEST_EXIT_LOCAL:
		return "local-error";
	case TPM_REATTEST_EXIT_RENEWAL:
		return "renewal-not-done";
	}
	return "unknown";
}

int tpm_reattest_say(char *msg, size_t msglen, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, msglen, fmt, ap);
	va_end(ap);
	return code;
}

void tpm_reattest_evidence_init(struct tpm_reattest_evidence *ev)
{
	memset(ev, 0, sizeof(*ev));
	fb_init(&ev->lak_der);
	fb_init(&ev->eventlog);
	fb_init(&ev->report);
}

void tpm_reattest_evidence_free(struct tpm_reattest_evidence *ev)
{
	fb_free(&ev->lak_der);
	fb_free(&ev->eventlog);
	fb_free(&ev->report);
}

/* ---- local inputs --------------------------------------------------------- */

int tpm_reattest_read_cert(const char *path, const char *what, struct fleet_buf *der,
			   char *msg, size_t msglen)
{
	static const struct fleet_file_policy lak_policy =
		FLEET_FILE_POLICY_CONFIG("the LAK certificate", 4 * FLEET_WIRE_MAX_CERT);
	static const struct fleet_file_policy ldevid_policy =
		FLEET_FILE_POLICY_CONFIG("the LDevID certificate", 4 * FLEET_WIRE_MAX_CERT);
	const struct fleet_file_policy *policy =
		strcmp(what, "LAK") == 0 ? &lak_policy : &ldevid_policy;
	struct fleet_errctx ec = {0};
	char err[sizeof(ec.detail) + 80];
	struct fleet_buf pem;
	fb_init(&pem);
	if (fleet_file_read(AT_FDCWD, path, policy, &pem, &ec) != FLEET_OK) {
		fb_free(&pem);
		return tpm_reattest_say(msg, msglen, TPM_REATTEST_EXIT_LOCAL, "%s",
			   fleet_errctx_text(&ec, err, sizeof(err)));
	}
	BIO *bio = BIO_new_mem_buf(pem.data, (int)pem.len);
	X509 *x = bio ? PEM_read_bio_X509(bio, NULL, NULL, NULL) : NULL;
	BIO_free(bio);
	fb_free(&pem);
	unsigned char *d = NULL;
	int n = x ? i2d_X509(x, &d) : -1;
	X509_free(x);
	if (n <= 0 || (size_t)n > FLEET_WIRE_MAX_CERT) {
		OPENSSL_free(d);
		return tpm_reattest_say(msg, msglen, TPM_REATTEST_EXIT_LOCAL,
			   "the %s certificate %s is not a PEM certificate (of at most %u bytes)",
			   what, path, FLEET_WIRE_MAX_CERT);
	}
	fb_reset(der);
	fleet_err e = fb_put(der, d, (size_t)n);
	OPENSSL_free(d);
	if (e != FLEET_OK)
		return tpm_reattest_say(msg, msglen, TPM_REATTEST_EXIT_LOCAL, "out of memory");
	return 0;
}

int tpm_reattest_load_evidence(const struct tpm_reattest_config *cfg,
			       struct tpm_reattest_evidence *ev, char *msg, size_t msglen)
{
	struct fleet_errctx ec = {0};
	char err[sizeof(ec.detail) + 80];
	struct tink_identity id;
	int rc;

	if ((rc = tpm_reattest_read_cert(cfg->lak_cert, "LAK", &ev->lak_der, msg, msglen)) != 0)
		return rc;
	memset(&id, 0, sizeof(id));
	if (tink_identity_read_sysfs(cfg->sysfs_root, &id, &ec) != FLEET_OK)
		return tpm_reattest_say(msg, msglen, TPM_REATTEST_EXIT_LOCAL, "machine identity: %s",
			   fleet_errctx_text(&ec, err, sizeof(err)));
	memcpy(ev->bios_version, id.bios_version, sizeof(ev->bios_version));
	memset(&ec, 0, sizeof(ec));
	if (tink_lldp_read(cfg->lldp_file, &id.lldp, &ec) != FLEET_OK)
		return tpm_reattest_say(msg, msglen, TPM_REATTEST_EXIT_LOCAL, "LLDP: %s",
			   fleet_errctx_text(&ec, err, sizeof(err)));
	fb_reset(&ev->report);
	if (fleet_network_report_encode(&id.lldp, &ev->report) != FLEET_OK)
		return tpm_reattest_say(msg, msglen, TPM_REATTEST_EXIT_LOCAL,
			   "the network report cannot be encoded");
	/* securityfs says the log's size is 0; the read bounds it. */
	static const struct fleet_file_policy evlog_policy =
		FLEET_FILE_POLICY_DATA("the event log", FLEET_WIRE_MAX_EVENTLOG);
	memset(&ec, 0, sizeof(ec));
	fb_reset(&ev->eventlog);
	if (fleet_file_read(AT_FDCWD, cfg->eventlog, &evlog_policy, &ev->eventlog, &ec) !=
	    FLEET_OK)
		return tpm_reattest_say(msg, msglen, TPM_REATTEST_EXIT_LOCAL,
			   "cannot read the event log %s (or it is over %u bytes): %s",
			   cfg->eventlog, FLEET_WIRE_MAX_EVENTLOG,
			   ec.reason ? ec.reason : "error");
	if (ev->eventlog.len == 0)
		return tpm_reattest_say(msg, msglen, TPM_REATTEST_EXIT_LOCAL, "the event log %s is empty",
			   cfg->eventlog);
	return 0;
}

/* ---- the TPM ------------------------------------------------------------- */

static int tpm_failed(struct tink_tpm *t, TSS2_RC rc, const char *what)
{
	snprintf(t->err, sizeof(t->err), "%s failed: 0x%x (%s)", what, (unsigned)rc,
		 Tss2_RC_Decode(rc));
	return -1;
}

/* The AK: a primary in the endorsement hierarchy from tink-attest's
 * template, the same key on every boot (tink-attest/tpm_client.h). */
static int make_ak(struct tink_tpm *t, ESYS_TR *h)
{
	TPM2B_PUBLIC tmpl = tink_key_template(TINK_KEY_AK);
	TPM2B_SENSITIVE_CREATE sens;
	TPM2B_DATA outside;
	TPML_PCR_SELECTION none;
	memset(&sens, 0, sizeof(sens));
	memset(&outside, 0, sizeof(outside));
	memset(&none, 0, sizeof(none));
	*h = ESYS_TR_NONE;
	TSS2_RC rc = Esys_CreatePrimary(t->esys, ESYS_TR_RH_ENDORSEMENT, ESYS_TR_PASSWORD,
					ESYS_TR_NONE, ESYS_TR_NONE, &sens, &tmpl, &outside, &none, h,
					NULL, NULL, NULL, NULL);
	if (rc != TSS2_RC_SUCCESS)
		return tpm_failed(t, rc, "TPM2_CreatePrimary (AK)");
	return 0;
}

/* SHA-256(msg) by the TPM, with the ticket that says the digest is not of
 * a TPMS_ATTEST the TPM could have made. */
static int tpm_hash(struct tink_tpm *t, const uint8_t *msg, size_t len, TPM2B_DIGEST **d,
		    TPMT_TK_HASHCHECK **tk)
{
	TPM2B_MAX_BUFFER data;
	TSS2_RC rc;
	memset(&data, 0, sizeof(data));
	if (len <= sizeof(data.buffer)) {
		data.size = (UINT16)len;
		memcpy(data.buffer, msg, len);
		rc = Esys_Hash(t->esys, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &data,
			       TPM2_ALG_SHA256, ESYS_TR_RH_OWNER, d, tk);
		return rc == TSS2_RC_SUCCESS ? 0 : tpm_failed(t, rc, "TPM2_Hash");
	}
	TPM2B_AUTH auth;
	ESYS_TR seq = ESYS_TR_NONE;
	memset(&auth, 0, sizeof(auth));
	rc = Esys_HashSequenceStart(t->esys, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &auth,
				    TPM2_ALG_SHA256, &seq);
	if (rc != TSS2_RC_SUCCESS)
		return tpm_failed(t, rc, "TPM2_HashSequenceStart");
	size_t off = 0;
	/* Every chunk but the last is full: SequenceComplete takes the rest. */
	while (len - off > sizeof(data.buffer)) {
		data.size = (UINT16)sizeof(data.buffer);
		memcpy(data.buffer, msg + off, sizeof(data.buffer));
		rc = Esys_SequenceUpdate(t->esys, seq, ESYS_TR_PASSWORD, ESYS_TR_NONE,
					 ESYS_TR_NONE, &data);
		if (rc != TSS2_RC_SUCCESS) {
			Esys_FlushContext(t->esys, seq);
			return tpm_failed(t, rc, "TPM2_SequenceUpdate");
		}
		off += sizeof(data.buffer);
	}
	data.size = (UINT16)(len - off);
	memcpy(data.buffer, msg + off, len - off);
	rc = Esys_SequenceComplete(t->esys, seq, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE,
				   &data, ESYS_TR_RH_OWNER, d, tk);
	if (rc != TSS2_RC_SUCCESS) {
		Esys_FlushContext(t->esys, seq);
		return tpm_failed(t, rc, "TPM2_SequenceComplete");
	}
	return 0;
}

int tpm_reattest_sign_ak(struct tink_tpm *t, const uint8_t *msg, size_t len,
			 struct fleet_buf *sig)
{
	ESYS_TR ak = ESYS_TR_NONE;
	TPM2B_DIGEST *d = NULL;
	TPMT_TK_HASHCHECK *tk = NULL;
	TPMT_SIG_SCHEME scheme = {.scheme = TPM2_ALG_NULL}; /* the key's: ECDSA, SHA-256 */
	TPMT_SIGNATURE *s = NULL;
	uint8_t m[sizeof(TPMT_SIGNATURE)];
	size_t off = 0;
	int r = -1;

	if (tpm_hash(t, msg, len, &d, &tk) != 0)
		return -1;
	if (make_ak(t, &ak) != 0)
		goto out;
	TSS2_RC rc = Esys_Sign(t->esys, ak, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, d,
			       &scheme, tk, &s);
	if (rc != TSS2_RC_SUCCESS) {
		tpm_failed(t, rc, "TPM2_Sign (AK, network report)");
		goto out;
	}
	rc = Tss2_MU_TPMT_SIGNATURE_Marshal(s, m, sizeof(m), &off);
	if (rc != TSS2_RC_SUCCESS) {
		tpm_failed(t, rc, "marshaling the report's signature");
		goto out;
	}
	if (fb_put(sig, m, off) != FLEET_OK) {
		snprintf(t->err, sizeof(t->err), "out of memory");
		goto out;
	}
	r = 0;
out:
	if (ak != ESYS_TR_NONE)
		Esys_FlushContext(t->esys, ak);
	Esys_Free(d);
	Esys_Free(tk);
	Esys_Free(s);
	return r;
}

int tpm_reattest_check_ak(struct tink_tpm *t, const struct fleet_buf *lak_der, char *msg,
			  size_t msglen)
{
	const unsigned char *p = lak_der->data;
	TPM2B_PUBLIC ak;
	EVP_PKEY *key = NULL;
	X509 *c = d2i_X509(NULL, &p, (long)lak_der->len);
	int rc;
	if (!c || p != lak_der->data + lak_der->len) {
		X509_free(c);
		return tpm_reattest_say(msg, msglen, TPM_REATTEST_EXIT_LOCAL,
			   "the LAK certificate does not parse");
	}
	if (tink_tpm_public(t, TINK_KEY_AK, &ak) != 0) {
		rc = tpm_reattest_say(msg, msglen, TPM_REATTEST_EXIT_NO_TPM,
			 "TPM error, nothing sent: %s", t->err);
	} else if (fleet_tpm_public_to_pkey(&ak.publicArea, &key) != FLEET_OK) {
		rc = tpm_reattest_say(msg, msglen, TPM_REATTEST_EXIT_NO_TPM,
			 "the TPM's AK public area cannot be read as a key");
	} else if (EVP_PKEY_eq(X509_get0_pubkey(c), key) != 1) {
		rc = tpm_reattest_say(msg, msglen, TPM_REATTEST_EXIT_AK_MISMATCH,
			 "the TPM's AK is not the one the certificate names: another TPM or a "
			 "reset endorsement seed; nothing sent");
	} else {
		rc = 0;
	}
	EVP_PKEY_free(key);
	X509_free(c);
	return rc;
}

static int dup_wb(struct fleet_wire_bytes *dst, const void *p, size_t n)
{
	dst->data = malloc(n ? n : 1);
	if (!dst->data)
		return -1;
	memcpy(dst->data, p, n);
	dst->len = n;
	return 0;
}

int tpm_reattest_build_check(struct tink_tpm *t, const struct tpm_reattest_evidence *ev,
			     const struct fleet_reattest_nonce_reply *nonce,
			     struct fleet_reattest_check *out, char *msg, size_t msglen)
{
	TPML_PCR_SELECTION sel;
	uint8_t q[32];
	struct fleet_pcr_value values[4 * FLEET_PCR_COUNT];
	size_t n_values = 0;
	struct fleet_buf qa, qs, rs;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	fb_init(&qa);
	fb_init(&qs);
	fb_init(&rs);
	if (fleet_pcr_selection_parse(nonce->pcr_selection, &sel) != FLEET_OK) {
		rc = tpm_reattest_say(msg, msglen, TPM_REATTEST_EXIT_LOCAL,
			 "fleetd's PCR selection \"%s\" does not parse", nonce->pcr_selection);
		goto out;
	}
	struct fleet_wire_bytes rep = {.data = ev->report.data, .len = ev->report.len};
	if (fleet_wire_quote_qualifier(nonce->nonce, &rep, q) != FLEET_OK) {
		rc = tpm_reattest_say(msg, msglen, TPM_REATTEST_EXIT_LOCAL,
			 "computing the quote's qualifying data failed");
		goto out;
	}
	if (tink_tpm_quote(t, &sel, q, sizeof(q), &qa, &qs, values,
			   sizeof(values) / sizeof(values[0]), &n_values) != 0 ||
	    tpm_reattest_sign_ak(t, ev->report.data, ev->report.len, &rs) != 0) {
		rc = tpm_reattest_say(msg, msglen, TPM_REATTEST_EXIT_NO_TPM, "TPM error, no check sent: %s",
			 t->err);
		goto out;
	}
	memcpy(out->nonce, nonce->nonce, sizeof(out->nonce));
	memcpy(out->bios_version, ev->bios_version, sizeof(out->bios_version));
	if (dup_wb(&out->lak_cert, ev->lak_der.data, ev->lak_der.len) != 0 ||
	    dup_wb(&out->quote_attest, qa.data, qa.len) != 0 ||
	    dup_wb(&out->quote_sig, qs.data, qs.len) != 0 ||
	    dup_wb(&out->eventlog, ev->eventlog.data, ev->eventlog.len) != 0 ||
	    dup_wb(&out->report, ev->report.data, ev->report.len) != 0 ||
	    dup_wb(&out->report_sig, rs.data, rs.len) != 0)
		rc = tpm_reattest_say(msg, msglen, TPM_REATTEST_EXIT_LOCAL, "out of memory");
out:
	if (rc != 0) {
		fleet_reattest_check_free(out);
		memset(out, 0, sizeof(*out));
	}
	fb_free(&qa);
	fb_free(&qs);
	fb_free(&rs);
	return rc;
}

/* ---- the run ------------------------------------------------------------- */

struct run {
	const struct tink_transport *tx;
	struct tpm_reattest_result *res;
};

static int end(struct run *r, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int end(struct run *r, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->res->message, sizeof(r->res->message), fmt, ap);
	va_end(ap);
	r->res->exit_code = code;
	return code;
}

/* POST and require a 200. 403 is fleetd refusing (the LAK certificate, the
 * check); 5xx after every attempt, a transport error or a timeout is
 * unreachable; any other status is a protocol error. */
static int exchange(struct run *r, const char *path, const struct fleet_buf *body,
		    struct fleet_buf *reply)
{
	struct fleet_errctx ec = {0};
	char err[sizeof(ec.detail) + 80];
	long status = 0;
	r->res->posts++;
	enum tink_tx_result t = r->tx->post(r->tx->ctx, path, body, FLEET_WIRE_MAX_BODY, reply,
					    &status, &ec);
	if (t != TINK_TX_OK)
		return end(r, TPM_REATTEST_EXIT_UNREACHABLE, "fleetd unreachable (%s): %s", path,
			   fleet_errctx_text(&ec, err, sizeof(err)));
	if (status == 403)
		return end(r, TPM_REATTEST_EXIT_REFUSED,
			   "fleetd refused %s (HTTP 403; its journal says why)", path);
	if (status >= 500)
		return end(r, TPM_REATTEST_EXIT_UNREACHABLE, "fleetd answered HTTP %ld to %s",
			   status, path);
	if (status != 200)
		return end(r, TPM_REATTEST_EXIT_LOCAL, "fleetd answered HTTP %ld to %s", status,
			   path);
	return 0;
}

static int decode_failed(struct run *r, const char *what, fleet_err e,
			 const struct fleet_errctx *ec)
{
	char m[300];
	fleet_errctx_format(ec, e, m, sizeof(m));
	return end(r, TPM_REATTEST_EXIT_LOCAL, "fleetd's %s does not decode: %s", what, m);
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* "12 days 3 h" (or "expired") for the journal. */
static void left_text(long s, char *out, size_t cap)
{
	if (s <= 0)
		snprintf(out, cap, "none (a certificate has expired)");
	else
		snprintf(out, cap, "%ld days %ld h", s / 86400, (s % 86400) / 3600);
}

/* The next LDevID key, proven by the AK: attempts with capped, jittered
 * backoff while the TPM fails; a certificate or generation problem is not
 * retried. 0, or the last failure's code with m set. */
static int prove_with_backoff(const struct tpm_reattest_config *cfg, struct tink_tpm *t,
			      const struct tpm_reattest_evidence *ev,
			      struct tpm_reattest_renewal *rn, char *m, size_t mlen)
{
	unsigned base = cfg->renew_backoff_ms ? cfg->renew_backoff_ms : TPM_REATTEST_RENEW_BACKOFF_MS;
	char left[64];
	int rc = 0;

	left_text(rn->seconds_left, left, sizeof(left));
	for (unsigned a = 1; a <= TPM_REATTEST_RENEW_ATTEMPTS; a++) {
		if ((rc = tpm_reattest_prove_next(t, &ev->lak_der, rn, m, mlen)) == 0)
			return 0;
		if (rc != TPM_REATTEST_EXIT_NO_TPM || a == TPM_REATTEST_RENEW_ATTEMPTS) {
			tpm_reattest_log("renewal attempt %u of %u failed: %s; time left before a "
					 "certificate expires: %s; the next run tries again",
					 a, TPM_REATTEST_RENEW_ATTEMPTS, m, left);
			return rc;
		}
		unsigned long d = (unsigned long)base << (a - 1);
		if (d > TPM_REATTEST_RENEW_BACKOFF_CAP_MS)
			d = TPM_REATTEST_RENEW_BACKOFF_CAP_MS;
		uint32_t j = 0;
		if (getrandom(&j, sizeof(j), 0) != (ssize_t)sizeof(j))
			j = 0;
		d += (unsigned long)(j % (d / 2 + 1)); /* up to half again: fleets do not retry in step */
		tpm_reattest_log("renewal attempt %u of %u failed: %s; time left before a "
				 "certificate expires: %s; retrying in %lu ms",
				 a, TPM_REATTEST_RENEW_ATTEMPTS, m, left, d);
		sleep_ms((unsigned)d);
	}
	return rc;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int tpm_reattest_run(const struct tpm_reattest_config *cfg, const struct tink_transport *tx,
		     struct tpm_reattest_result *res)
{
	struct run r = {.tx = tx, .res = res};
	struct tpm_reattest_evidence ev;
	struct tink_tpm tpm;
	bool tpm_open = false;
	struct fleet_reattest_nonce_reply nr;
	struct fleet_reattest_check chk;
	struct fleet_reattest_check_reply cr;
	struct tpm_reattest_renewal rn;
	struct fleet_buf body, reply;
	struct fleet_errctx ec;
	char m[sizeof(res->message)];
	fleet_err e;
	int rc;

	memset(res, 0, sizeof(*res));
	memset(&tpm, 0, sizeof(tpm));
	memset(&nr, 0, sizeof(nr));
	memset(&chk, 0, sizeof(chk));
	memset(&cr, 0, sizeof(cr));
	tpm_reattest_evidence_init(&ev);
	tpm_reattest_renewal_init(&rn);
	fb_init_capped(&body, FLEET_WIRE_MAX_BODY);
	fb_init_capped(&reply, FLEET_WIRE_MAX_BODY); /* fleetd's answer: untrusted */

	if ((rc = tpm_reattest_load_evidence(cfg, &ev, m, sizeof(m))) != 0) {
		end(&r, rc, "%s; nothing sent", m);
		goto out;
	}
	if (tink_tpm_open(&tpm, cfg->tcti) != 0) {
		rc = end(&r, TPM_REATTEST_EXIT_NO_TPM, "no usable TPM, nothing sent: %s", tpm.err);
		goto out;
	}
	tpm_open = true;
	if ((rc = tpm_reattest_check_ak(&tpm, &ev.lak_der, m, sizeof(m))) != 0) {
		end(&r, rc, "%s", m);
		goto out;
	}

	/* Renewal, when due: the TPM's part first (it needs no nonce), so a
	 * slow or retried certify never spends the nonce's minute. */
	char renew_failed[sizeof(m)] = "";
	bool renewing = false;
	if (cfg->ldevid_cert) {
		if (tpm_reattest_read_cert(cfg->ldevid_cert, "LDevID", &rn.ldevid_der, m,
					   sizeof(m)) != 0) {
			tpm_reattest_log("no renewal: %s", m);
		} else {
			int due = tpm_reattest_renewal_due(&ev.lak_der, &rn.ldevid_der, time(NULL),
							   &rn.seconds_left);
			res->renewal_due = due == 1;
			if (due < 0)
				snprintf(renew_failed, sizeof(renew_failed),
					 "the certificates' validity cannot be read");
			else if (due == 1 &&
				 prove_with_backoff(cfg, &tpm, &ev, &rn, m, sizeof(m)) != 0)
				snprintf(renew_failed, sizeof(renew_failed), "%s", m);
			else
				renewing = due == 1;
		}
	}

	/* Round 1: the nonce. */
	struct fleet_reattest_nonce_req nq = {
		.lak_cert = {.data = ev.lak_der.data, .len = ev.lak_der.len}};
	if (fleet_reattest_nonce_req_encode(&nq, &body) != FLEET_OK) {
		rc = end(&r, TPM_REATTEST_EXIT_LOCAL, "the nonce request does not encode");
		goto out;
	}
	double asked = now_s();
	if ((rc = exchange(&r, "/v1/reattest/nonce", &body, &reply)) != 0)
		goto out;
	memset(&ec, 0, sizeof(ec));
	e = fleet_reattest_nonce_reply_decode(reply.data, reply.len, &nr, &ec);
	if (e != FLEET_OK) {
		rc = decode_failed(&r, "nonce reply", e, &ec);
		goto out;
	}

	/* The TPM's work, then round 2: the check, complete or not at all. */
	if ((rc = tpm_reattest_build_check(&tpm, &ev, &nr, &chk, m, sizeof(m))) != 0) {
		end(&r, rc, "%s", m);
		goto out;
	}
	if (now_s() - asked >= (double)nr.expires_in) {
		rc = end(&r, TPM_REATTEST_EXIT_LOCAL,
			 "the nonce expired (%u s) before the TPM finished; no check sent",
			 nr.expires_in);
		goto out;
	}
	fb_reset(&body);
	fb_reset(&reply);
	if (renewing && tpm_reattest_attach_renewal(&rn, &chk) != 0) {
		rc = end(&r, TPM_REATTEST_EXIT_LOCAL, "out of memory");
		goto out;
	}
	if (fleet_reattest_check_encode(&chk, &body) != FLEET_OK) {
		rc = end(&r, TPM_REATTEST_EXIT_LOCAL, "the check does not fit the protocol's caps");
		goto out;
	}
	if ((rc = exchange(&r, renewing ? "/v1/reattest/renew" : "/v1/reattest/check", &body,
			   &reply)) != 0)
		goto out;
	memset(&ec, 0, sizeof(ec));
	e = fleet_reattest_check_reply_decode(reply.data, reply.len, &cr, &ec);
	if (e != FLEET_OK) {
		rc = decode_failed(&r, "check reply", e, &ec);
		goto out;
	}
	char left[64];
	left_text(rn.seconds_left, left, sizeof(left));
	if (cr.status == FLEET_REATTEST_RENEWED && renewing) {
		if ((rc = tpm_reattest_store_renewal(cfg, &ev.lak_der, &rn, &cr, m, sizeof(m))) != 0) {
			end(&r, rc, "fleetd's check passed and it renewed, but %s", m);
			goto out;
		}
		res->renewed = true;
		rc = end(&r, TPM_REATTEST_EXIT_PASS,
			 "fleetd's check passed; renewed with LDevID key %u (certified by the LAK): "
			 "%s and %s rewritten",
			 rn.gen, cfg->ldevid_cert, cfg->lak_cert);
	} else if (cr.status == FLEET_REATTEST_RENEWED) {
		rc = end(&r, TPM_REATTEST_EXIT_LOCAL, "fleetd renewed what was not asked");
	} else if (cr.status == FLEET_REATTEST_PASS && renewing)
		rc = end(&r, TPM_REATTEST_EXIT_RENEWAL,
			 "fleetd's check passed but it refused the renewal (its journal says why); "
			 "time left: %s",
			 left);
	else if (cr.status == FLEET_REATTEST_PASS && renew_failed[0])
		rc = end(&r, TPM_REATTEST_EXIT_RENEWAL,
			 "fleetd's check passed; the renewal was not sent: %s; time left: %s",
			 renew_failed, left);
	else if (cr.status == FLEET_REATTEST_PASS)
		rc = end(&r, TPM_REATTEST_EXIT_PASS, "fleetd's check passed");
	else if (cr.status == FLEET_REATTEST_REFUSED)
		rc = end(&r, TPM_REATTEST_EXIT_REFUSED,
			 "fleetd refused the check (its journal says why)");
	else
		rc = end(&r, TPM_REATTEST_EXIT_LOCAL, "fleetd's check reply has status %d",
			 (int)cr.status);
out:
	if (tpm_open)
		tink_tpm_close(&tpm);
	fleet_reattest_nonce_reply_free(&nr);
	fleet_reattest_check_free(&chk);
	fleet_reattest_check_reply_free(&cr);
	tpm_reattest_evidence_free(&ev);
	tpm_reattest_renewal_free(&rn);
	fb_free(&body);
	fb_free(&reply);
	return rc;
}
