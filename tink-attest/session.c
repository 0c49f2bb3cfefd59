/*
 * session.c: the three rounds of lib/attest_wire.h, client side.
 *
 * Each round does all of its TPM work first and sends only when every TPM
 * operation succeeded: a TPM that fails part-way leaves fleetd with nothing
 * from that round (and, per the spec, a missing TPM writes no verdict
 * because nothing reached fleetd). The bindings are computed with the lib/
 * functions fleetd uses to check them, never a second implementation.
 */
#include "tink-attest/tink.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/x509.h>
#include <tss2/tss2_mu.h>

#include "lib/attest_wire.h"
#include "lib/file_read.h"
#include "lib/hex.h"
#include "tink-attest/identity.h"
#include "tink-attest/log.h"
#include "tink-attest/output.h"
#include "tink-attest/tpm_client.h"

/* Everything one run holds; freed in one place. */
struct run {
	const struct tink_config *cfg;
	const struct tink_transport *tx;
	struct tink_result *res;
	struct tink_tpm tpm;
	bool tpm_open;
	struct tink_identity id;
	struct fleet_buf report, eventlog, request;
	struct tink_ek ek_rsa, ek_ecc;
	TPM2B_PUBLIC ak, ldevid;
	struct fleet_buf ak_m, ldevid_m, certify_attest, certify_sig;
	struct fleet_wire_intake_reply challenge;
	struct fleet_wire_verdict verdict;
};

const char *tink_exit_name(int code)
{
	switch (code) {
	case TINK_EXIT_CONFIRMED:
		return "confirmed";
	case TINK_EXIT_USAGE:
		return "usage";
	case TINK_EXIT_TPM:
		return "tpm-error";
	case TINK_EXIT_UNREACHABLE:
		return "fleetd-unreachable";
	case TINK_EXIT_PROTOCOL:
		return "protocol-error";
	case TINK_EXIT_LOCAL:
		return "local-error";
	case TINK_EXIT_PENDING:
		return "pending";
	case TINK_EXIT_REFUSED:
		return "refused";
	}
	return "unknown";
}

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

static int tpm_end(struct run *r)
{
	return end(r, TINK_EXIT_TPM, "TPM error, no evidence sent for this round: %s",
		   r->tpm.err);
}

static int marshal_public(const TPM2B_PUBLIC *p, struct fleet_buf *out)
{
	uint8_t m[sizeof(TPM2B_PUBLIC)];
	size_t off = 0;
	if (Tss2_MU_TPM2B_PUBLIC_Marshal(p, m, sizeof(m), &off) != TSS2_RC_SUCCESS)
		return -1;
	return fb_put(out, m, off) == FLEET_OK ? 0 : -1;
}

static struct fleet_wire_bytes wb(const struct fleet_buf *b)
{
	struct fleet_wire_bytes w = {.data = b->data, .len = b->len};
	return w;
}

/* POST and require a 200 with a body. 0, or the exit code (message set). */
static int exchange(struct run *r, const char *path, const struct fleet_buf *body,
		    struct fleet_buf *reply)
{
	struct fleet_errctx ec = {0};
	char err[sizeof(ec.detail) + 80];
	long status = 0;
	r->res->posts++;
	enum tink_tx_result t = r->tx->post(r->tx->ctx, path, body, FLEET_WIRE_MAX_BODY, reply,
					    &status, &ec);
	fleet_errctx_text(&ec, err, sizeof(err));
	if (t == TINK_TX_UNREACHABLE)
		return end(r, TINK_EXIT_UNREACHABLE, "fleetd unreachable (%s): %s", path, err);
	if (t != TINK_TX_OK)
		return end(r, TINK_EXIT_UNREACHABLE, "cannot talk to fleetd (%s): %s", path, err);
	if (status != 200)
		return end(r, TINK_EXIT_PROTOCOL, "fleetd answered HTTP %ld to %s", status, path);
	return 0;
}

static int decode_failed(struct run *r, const char *what, fleet_err e,
			 const struct fleet_errctx *ec)
{
	char msg[300];
	fleet_errctx_format(ec, e, msg, sizeof(msg));
	return end(r, TINK_EXIT_PROTOCOL, "fleetd's %s does not decode: %s", what, msg);
}

/* ---- round 1 ------------------------------------------------------------ */

static int gather_tpm(struct run *r)
{
	if (tink_tpm_read_ek_rsa(&r->tpm, &r->ek_rsa) != 0)
		return tpm_end(r);
	if (!r->ek_rsa.present)
		return end(r, TINK_EXIT_TPM,
			   "the TPM has no RSA EK certificate (NV 0x%08x); fleetd requires one",
			   TINK_NV_EK_RSA);
	if (tink_tpm_read_ek_ecc(&r->tpm, &r->ek_ecc) != 0)
		return tpm_end(r);
	r->res->has_ecc_ek = r->ek_ecc.present;
	if (!r->ek_ecc.present)
		tink_log("this TPM has no ECC EK certificate (NV 0x%08x or 0x%08x); the intake "
			 "says so and fleetd decides",
			 TINK_NV_EK_ECC_P256, TINK_NV_EK_ECC_P384);
	/* The request names this serial and this key; the AK certifies the
	 * key over its hash. */
	if (tink_tpm_public(&r->tpm, TINK_KEY_AK, &r->ak) != 0 ||
	    tink_tpm_prove_ldevid(&r->tpm, r->id.serial, &r->ldevid, &r->request,
				  &r->certify_attest, &r->certify_sig) != 0)
		return tpm_end(r);
	if (marshal_public(&r->ak, &r->ak_m) != 0 || marshal_public(&r->ldevid, &r->ldevid_m) != 0)
		return end(r, TINK_EXIT_TPM, "marshaling the TPM's public areas failed");
	return 0;
}

static int intake(struct run *r)
{
	struct fleet_wire_intake in;
	struct fleet_buf body, reply;
	struct fleet_errctx ec;
	int rc;

	memset(&in, 0, sizeof(in));
	memcpy(in.serial, r->id.serial, sizeof(in.serial));
	memcpy(in.product_uuid, r->id.product_uuid, sizeof(in.product_uuid));
	memcpy(in.bios_version, r->id.bios_version, sizeof(in.bios_version));
	in.n_macs = r->id.n_macs;
	memcpy(in.macs, r->id.macs, sizeof(in.macs));
	in.network_report = wb(&r->report);
	in.ek_rsa.present = true;
	in.ek_rsa.cert = wb(&r->ek_rsa.cert);
	struct fleet_buf ek_rsa_m, ek_ecc_m;
	fb_init(&ek_rsa_m);
	fb_init(&ek_ecc_m);
	fb_init_capped(&body, FLEET_WIRE_MAX_BODY);
	fb_init_capped(&reply, FLEET_WIRE_MAX_BODY); /* fleetd's answer: untrusted */
	if (marshal_public(&r->ek_rsa.pub, &ek_rsa_m) != 0 ||
	    (r->ek_ecc.present && marshal_public(&r->ek_ecc.pub, &ek_ecc_m) != 0)) {
		rc = end(r, TINK_EXIT_TPM, "marshaling the EK public areas failed");
		goto out;
	}
	in.ek_rsa.pub = wb(&ek_rsa_m);
	if (r->ek_ecc.present) {
		in.ek_ecc.present = true;
		in.ek_ecc.pub = wb(&ek_ecc_m);
		in.ek_ecc.cert = wb(&r->ek_ecc.cert);
	}
	in.ak_public = wb(&r->ak_m);
	in.ldevid_public = wb(&r->ldevid_m);
	in.ldevid_request = wb(&r->request);
	in.ldevid_certify_attest = wb(&r->certify_attest);
	in.ldevid_certify_sig = wb(&r->certify_sig);
	if (fleet_wire_intake_encode(&in, &body) != FLEET_OK) {
		rc = end(r, TINK_EXIT_LOCAL, "the intake does not fit the protocol's caps");
		goto out;
	}
	if ((rc = exchange(r, "/v1/attest/intake", &body, &reply)) != 0)
		goto out;
	memset(&ec, 0, sizeof(ec));
	fleet_err e = fleet_wire_intake_reply_decode(reply.data, reply.len, &r->challenge, &ec);
	if (e != FLEET_OK) {
		rc = decode_failed(r, "intake reply", e, &ec);
		goto out;
	}
	switch (r->challenge.status) {
	case FLEET_WIRE_CHALLENGE:
		rc = 0;
		break;
	case FLEET_WIRE_PENDING:
		rc = end(r, TINK_EXIT_PENDING,
			 "fleetd has no decision for serial %s yet (pending claim)", r->id.serial);
		break;
	case FLEET_WIRE_REFUSED:
		rc = end(r, TINK_EXIT_REFUSED, "fleetd refused the intake (its journal says why)");
		break;
	default:
		rc = end(r, TINK_EXIT_PROTOCOL, "fleetd's intake reply has status %d",
			 (int)r->challenge.status);
	}
	if (rc == 0 && !r->challenge.cred_rsa.present)
		rc = end(r, TINK_EXIT_PROTOCOL, "fleetd's challenge has no RSA EK credential");
	if (rc == 0 && r->challenge.cred_ecc.present && !r->ek_ecc.present)
		rc = end(r, TINK_EXIT_PROTOCOL,
			 "fleetd's challenge wraps a secret to an ECC EK this TPM does not have");
out:
	fb_free(&ek_rsa_m);
	fb_free(&ek_ecc_m);
	fb_free(&body);
	fb_free(&reply);
	return rc;
}

/* ---- round 2 ------------------------------------------------------------ */

static int activate(struct run *r, const struct tink_ek *ek,
		    const struct fleet_wire_credential *c, uint8_t secret[FLEET_WIRE_ID_LEN])
{
	uint8_t got[64];
	size_t n = 0;
	if (tink_tpm_activate(&r->tpm, ek, c->id_object.data, c->id_object.len,
			      c->enc_secret.data, c->enc_secret.len, got, sizeof(got), &n) != 0)
		return tpm_end(r);
	if (n != FLEET_WIRE_ID_LEN) {
		OPENSSL_cleanse(got, sizeof(got));
		return end(r, TINK_EXIT_PROTOCOL, "fleetd's credential holds %zu bytes, not %d", n,
			   FLEET_WIRE_ID_LEN);
	}
	memcpy(secret, got, FLEET_WIRE_ID_LEN);
	OPENSSL_cleanse(got, sizeof(got));
	return 0;
}

static int answer(struct run *r)
{
	struct fleet_wire_answer a;
	uint8_t secret_rsa[FLEET_WIRE_ID_LEN], secret_ecc[FLEET_WIRE_ID_LEN], q[32];
	TPML_PCR_SELECTION sel;
	struct fleet_buf qa, qs, body, reply;
	struct fleet_errctx ec;
	bool ecc = r->challenge.cred_ecc.present;
	int rc;

	memset(&a, 0, sizeof(a));
	fb_init(&qa);
	fb_init(&qs);
	fb_init_capped(&body, FLEET_WIRE_MAX_BODY);
	fb_init_capped(&reply, FLEET_WIRE_MAX_BODY); /* fleetd's answer: untrusted */
	if (fleet_pcr_selection_parse(r->challenge.pcr_selection, &sel) != FLEET_OK) {
		rc = end(r, TINK_EXIT_PROTOCOL, "fleetd's PCR selection does not parse");
		goto out;
	}
	/* All TPM work of the round first. */
	if ((rc = activate(r, &r->ek_rsa, &r->challenge.cred_rsa, secret_rsa)) != 0 ||
	    (ecc && (rc = activate(r, &r->ek_ecc, &r->challenge.cred_ecc, secret_ecc)) != 0))
		goto out;
	struct fleet_wire_bytes rep = wb(&r->report);
	if (fleet_wire_quote_qualifier(r->challenge.nonce, &rep, q) != FLEET_OK) {
		rc = end(r, TINK_EXIT_LOCAL, "computing the quote's qualifying data failed");
		goto out;
	}
	if (tink_tpm_quote(&r->tpm, &sel, q, sizeof(q), &qa, &qs, a.pcrs,
			   sizeof(a.pcrs) / sizeof(a.pcrs[0]), &a.n_pcrs) != 0) {
		rc = tpm_end(r);
		goto out;
	}
	memcpy(a.session, r->challenge.session, sizeof(a.session));
	a.quote_attest = wb(&qa);
	a.quote_sig = wb(&qs);
	a.event_log = wb(&r->eventlog);
	a.network_report = rep;
	if (fleet_wire_answer_proof(secret_rsa, ecc ? secret_ecc : NULL, a.session,
				    &a.quote_attest, a.proof) != FLEET_OK) {
		rc = end(r, TINK_EXIT_LOCAL, "computing the answer's proof failed");
		goto out;
	}
	if (fleet_wire_answer_encode(&a, &body) != FLEET_OK) {
		rc = end(r, TINK_EXIT_LOCAL, "the answer does not fit the protocol's caps");
		goto out;
	}
	if ((rc = exchange(r, "/v1/attest/answer", &body, &reply)) != 0)
		goto out;
	memset(&ec, 0, sizeof(ec));
	fleet_err e = fleet_wire_verdict_decode(reply.data, reply.len, &r->verdict, &ec);
	if (e != FLEET_OK) {
		rc = decode_failed(r, "verdict", e, &ec);
		goto out;
	}
	if (r->verdict.status == FLEET_WIRE_PENDING)
		rc = end(r, TINK_EXIT_PENDING, "fleetd has not decided after the answer (pending)");
	else if (r->verdict.status == FLEET_WIRE_REFUSED)
		rc = end(r, TINK_EXIT_REFUSED, "fleetd refused the evidence (its journal says why)");
	else if (r->verdict.status != FLEET_WIRE_ADMITTED)
		rc = end(r, TINK_EXIT_PROTOCOL, "fleetd's verdict has status %d",
			 (int)r->verdict.status);
out:
	OPENSSL_cleanse(secret_rsa, sizeof(secret_rsa));
	OPENSSL_cleanse(secret_ecc, sizeof(secret_ecc));
	OPENSSL_cleanse(a.proof, sizeof(a.proof));
	fb_free(&qa);
	fb_free(&qs);
	fb_free(&body);
	fb_free(&reply);
	return rc;
}

/* ---- round 3 ------------------------------------------------------------ */

/* The certificate is for key (and, when fleetd sent its CA, signed by it):
 * a confirmation must not vouch for a certificate of some other key. */
static int check_cert(struct run *r, const char *what, const struct fleet_wire_bytes *der,
		      const TPM2B_PUBLIC *key, X509 *ca, X509 **out)
{
	const unsigned char *p = der->data;
	EVP_PKEY *tpm_key = NULL;
	X509 *c = d2i_X509(NULL, &p, (long)der->len);
	if (!c || p != der->data + der->len) {
		X509_free(c);
		return end(r, TINK_EXIT_PROTOCOL, "fleetd's %s certificate does not parse", what);
	}
	if (fleet_tpm_public_to_pkey(&key->publicArea, &tpm_key) != FLEET_OK ||
	    EVP_PKEY_eq(X509_get0_pubkey(c), tpm_key) != 1) {
		EVP_PKEY_free(tpm_key);
		X509_free(c);
		return end(r, TINK_EXIT_PROTOCOL, "fleetd's %s certificate is not for this TPM's key",
			   what);
	}
	EVP_PKEY_free(tpm_key);
	if (ca && X509_verify(c, X509_get0_pubkey(ca)) != 1) {
		X509_free(c);
		return end(r, TINK_EXIT_PROTOCOL, "fleetd's %s certificate is not signed by its CA",
			   what);
	}
	*out = c;
	return 0;
}

static int store_provision(struct run *r, const struct fleet_wire_confirm_reply *cr)
{
	uint8_t code[FLEET_WIRE_ID_LEN];
	char hex[2 * FLEET_WIRE_ID_LEN + 1];
	struct fleet_errctx ec = {0};
	char err[sizeof(ec.detail) + 80];
	int rc = activate(r, &r->ek_rsa, &cr->code, code);
	if (rc != 0)
		return rc;
	fleet_hex_encode(code, sizeof(code), hex);
	OPENSSL_cleanse(code, sizeof(code));
	/* Both or neither: the entrypoint refuses half a provision, and so
	 * does this side. */
	if (tink_write_file(r->cfg->out_dir, "proof", cr->proof.data, cr->proof.len, 0600,
			    &ec) != FLEET_OK) {
		rc = end(r, TINK_EXIT_LOCAL, "%s", fleet_errctx_text(&ec, err, sizeof(err)));
	} else if (tink_write_file(r->cfg->out_dir, "code", hex, strlen(hex), 0600, &ec) !=
		   FLEET_OK) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/proof", r->cfg->out_dir);
		unlink(path);
		rc = end(r, TINK_EXIT_LOCAL, "%s", fleet_errctx_text(&ec, err, sizeof(err)));
	}
	OPENSSL_cleanse(hex, sizeof(hex));
	return rc;
}

static int confirm(struct run *r)
{
	X509 *ca = NULL, *lak = NULL, *ldevid = NULL;
	struct fleet_buf stmt, sig, body, reply;
	struct fleet_wire_confirm c;
	struct fleet_wire_confirm_reply cr;
	struct fleet_errctx ec;
	char err[sizeof(ec.detail) + 80];
	int rc;

	memset(&ec, 0, sizeof(ec));
	memset(&cr, 0, sizeof(cr));
	fb_init(&stmt);
	fb_init(&sig);
	fb_init(&body);
	fb_init_capped(&reply, FLEET_WIRE_MAX_BODY); /* fleetd's answer: untrusted */
	if (r->verdict.ca_cert.len) {
		const unsigned char *p = r->verdict.ca_cert.data;
		ca = d2i_X509(NULL, &p, (long)r->verdict.ca_cert.len);
		if (!ca) {
			rc = end(r, TINK_EXIT_PROTOCOL, "fleetd's CA certificate does not parse");
			goto out;
		}
	}
	if ((rc = check_cert(r, "LAK", &r->verdict.lak_cert, &r->ak, ca, &lak)) != 0 ||
	    (rc = check_cert(r, "LDevID", &r->verdict.ldevid_cert, &r->ldevid, ca, &ldevid)) != 0)
		goto out;
	if (r->cfg->out_dir &&
	    (tink_write_cert(r->cfg->out_dir, "lak.pem", lak, &ec) != FLEET_OK ||
	     tink_write_cert(r->cfg->out_dir, "ldevid.pem", ldevid, &ec) != FLEET_OK ||
	     (ca && tink_write_cert(r->cfg->out_dir, "ca.pem", ca, &ec) != FLEET_OK))) {
		rc = end(r, TINK_EXIT_LOCAL, "%s", fleet_errctx_text(&ec, err, sizeof(err)));
		goto out;
	}
	if (fleet_wire_confirm_statement(r->challenge.session, &r->verdict.lak_cert,
					 &r->verdict.ldevid_cert, &stmt) != FLEET_OK) {
		rc = end(r, TINK_EXIT_LOCAL, "building the confirm statement failed");
		goto out;
	}
	if (tink_tpm_sign_ldevid(&r->tpm, stmt.data, stmt.len, &sig) != 0) {
		rc = tpm_end(r);
		goto out;
	}
	memset(&c, 0, sizeof(c));
	memcpy(c.session, r->challenge.session, sizeof(c.session));
	c.signature = wb(&sig);
	if (fleet_wire_confirm_encode(&c, &body) != FLEET_OK) {
		rc = end(r, TINK_EXIT_LOCAL, "encoding the confirmation failed");
		goto out;
	}
	if ((rc = exchange(r, "/v1/attest/confirm", &body, &reply)) != 0)
		goto out;
	memset(&ec, 0, sizeof(ec));
	fleet_err e = fleet_wire_confirm_reply_decode(reply.data, reply.len, &cr, &ec);
	if (e != FLEET_OK) {
		rc = decode_failed(r, "confirm reply", e, &ec);
		goto out;
	}
	if (cr.status == FLEET_WIRE_REFUSED) {
		rc = end(r, TINK_EXIT_REFUSED, "fleetd refused the confirmation");
		goto out;
	}
	if (cr.status != FLEET_WIRE_CONFIRMED) {
		rc = end(r, TINK_EXIT_PROTOCOL, "fleetd's confirm reply has status %d",
			 (int)cr.status);
		goto out;
	}
	r->res->has_provision = cr.has_provision;
	if (cr.has_provision) {
		if (!r->cfg->out_dir)
			rc = end(r, TINK_EXIT_LOCAL,
				 "fleetd sent a provision and there is no --out-dir to keep it");
		else
			rc = store_provision(r, &cr);
	}
out:
	fleet_wire_confirm_reply_free(&cr);
	X509_free(ca);
	X509_free(lak);
	X509_free(ldevid);
	fb_free(&stmt);
	fb_free(&sig);
	fb_free(&body);
	fb_free(&reply);
	return rc;
}

/* ---- the run ------------------------------------------------------------ */

static int local_inputs(struct run *r)
{
	struct fleet_errctx ec = {0};
	char err[sizeof(ec.detail) + 80];
	if (tink_identity_read_sysfs(r->cfg->sysfs_root, &r->id, &ec) != FLEET_OK)
		return end(r, TINK_EXIT_LOCAL, "machine identity: %s",
			   fleet_errctx_text(&ec, err, sizeof(err)));
	if (tink_lldp_read(r->cfg->lldp_file, &r->id.lldp, &ec) != FLEET_OK)
		return end(r, TINK_EXIT_LOCAL, "LLDP: %s", fleet_errctx_text(&ec, err, sizeof(err)));
	if (fleet_network_report_encode(&r->id.lldp, &r->report) != FLEET_OK)
		return end(r, TINK_EXIT_LOCAL, "the network report cannot be encoded");
	/* Evidence fleetd checks against the quote: data (docs/files.md).
	 * securityfs says its size is 0; the read bounds it. */
	static const struct fleet_file_policy evlog_policy =
		FLEET_FILE_POLICY_DATA("the event log", FLEET_WIRE_MAX_EVENTLOG);
	struct fleet_errctx fe;
	fb_free(&r->eventlog);
	if (fleet_file_read(AT_FDCWD, r->cfg->eventlog, &evlog_policy, &r->eventlog, &fe) !=
	    FLEET_OK)
		return end(r, TINK_EXIT_LOCAL, "cannot read the event log %s (or it is over %u "
					       "bytes): %s",
			   r->cfg->eventlog, FLEET_WIRE_MAX_EVENTLOG, fe.reason);
	return 0;
}

int tink_run(const struct tink_config *cfg, const struct tink_transport *tx,
	     struct tink_result *res)
{
	struct run r;
	int rc;
	memset(res, 0, sizeof(*res));
	memset(&r, 0, sizeof(r));
	r.cfg = cfg;
	r.tx = tx;
	r.res = res;
	fb_init(&r.report);
	fb_init(&r.eventlog);
	fb_init(&r.request);
	fb_init(&r.ak_m);
	fb_init(&r.ldevid_m);
	fb_init(&r.certify_attest);
	fb_init(&r.certify_sig);
	fb_init(&r.ek_rsa.cert);
	fb_init(&r.ek_ecc.cert);

	if ((rc = local_inputs(&r)) != 0)
		goto out;
	if (tink_tpm_open(&r.tpm, cfg->tcti) != 0) {
		rc = end(&r, TINK_EXIT_TPM, "no usable TPM, nothing sent: %s", r.tpm.err);
		goto out;
	}
	r.tpm_open = true;
	if ((rc = gather_tpm(&r)) != 0 || (rc = intake(&r)) != 0)
		goto out;
	tink_log("intake accepted: challenged (%s EK%s)", r.challenge.cred_ecc.present ? "two" : "one",
		 r.challenge.cred_ecc.present ? "s" : "");
	if ((rc = answer(&r)) != 0)
		goto out;
	tink_log("admitted: LAK and LDevID certificates received");
	if ((rc = confirm(&r)) != 0)
		goto out;
	tink_log("confirmed%s", res->has_provision ? "; provision stored" : "");
	rc = end(&r, TINK_EXIT_CONFIRMED, "%s", "");
out:
	if (r.tpm_open)
		tink_tpm_close(&r.tpm);
	fleet_wire_intake_reply_free(&r.challenge);
	fleet_wire_verdict_free(&r.verdict);
	tink_ek_free(&r.ek_rsa);
	tink_ek_free(&r.ek_ecc);
	fb_free(&r.report);
	fb_free(&r.eventlog);
	fb_free(&r.request);
	fb_free(&r.ak_m);
	fb_free(&r.ldevid_m);
	fb_free(&r.certify_attest);
	fb_free(&r.certify_sig);
	return rc;
}
