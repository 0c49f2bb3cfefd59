/* code.c: the configuration code and the proof of a passing check (code.h, D1-D5). */
#include "fleetd/provision/code.h"

#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdlib.h>
#include <string.h>

#include "lib/hex.h"
#include "lib/tpm.h"
#include "lib/tpm_credential.h"

#define R_MALFORMED "proof-malformed"
#define R_SIGNATURE "proof-signature"
#define R_EXPIRED "proof-expired"
#define R_NOT_YET "proof-not-yet-valid"

static fleet_err sha256(const void *p, size_t n, uint8_t out[32])
{
	unsigned int len = 0;
	if (EVP_Digest(p, n, out, &len, EVP_sha256(), NULL) != 1 || len != 32)
		return fleet_errctx_openssl(NULL, FLEET_E_CRYPTO, "SHA-256");
	return FLEET_OK;
}

/* ---- D1 ----------------------------------------------------------------- */

fleet_err fleet_code_new(uint8_t code[FLEET_CODE_LEN], char hex[2 * FLEET_CODE_LEN + 1],
			 uint8_t hash[32])
{
	fleet_err e;
	if (!code || !hex || !hash)
		return FLEET_E_INVALID_ARG;
	if (RAND_priv_bytes(code, FLEET_CODE_LEN) != 1) {
		e = fleet_errctx_openssl(NULL, FLEET_E_CRYPTO, "RAND_priv_bytes");
		goto fail;
	}
	if ((e = sha256(code, FLEET_CODE_LEN, hash)) != FLEET_OK)
		goto fail;
	fleet_hex_encode(code, FLEET_CODE_LEN, hex);
	return FLEET_OK;
fail:
	OPENSSL_cleanse(code, FLEET_CODE_LEN);
	OPENSSL_cleanse(hex, 2 * FLEET_CODE_LEN + 1);
	OPENSSL_cleanse(hash, 32);
	return e;
}

fleet_err fleet_code_hash_hex(const char *hex, uint8_t hash[32])
{
	uint8_t code[FLEET_CODE_LEN];
	fleet_err e;
	if (!hex || !hash)
		return FLEET_E_INVALID_ARG;
	/* strnlen first: hex may come from a query string of any length. */
	if (strnlen(hex, 2 * FLEET_CODE_LEN + 1) != 2 * FLEET_CODE_LEN ||
	    !fleet_hex_is_lower(hex, 2 * FLEET_CODE_LEN))
		return FLEET_E_MALFORMED;
	if ((e = fleet_hex_decode(hex, 2 * FLEET_CODE_LEN, code, sizeof(code))) == FLEET_OK)
		e = sha256(code, sizeof(code), hash);
	OPENSSL_cleanse(code, sizeof(code));
	return e;
}

/* ---- D2 ----------------------------------------------------------------- */

fleet_err fleet_code_wrap(const struct fleet_attest_session *s, const uint8_t code[FLEET_CODE_LEN],
			  struct fleet_wire_credential *out, struct fleet_errctx *ec)
{
	uint8_t name[2 + FLEET_DIGEST_MAX];
	size_t name_len = 0;
	struct fleet_buf id, es;
	const char *reason = NULL;
	fleet_err e;

	if (!s || !code || !out)
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG, "no session, code or output");
	memset(out, 0, sizeof(*out));
	if (s->state != FLEET_SESSION_CONFIRMED)
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG,
					"a code is wrapped only for a confirmed session");
	if ((e = fleet_tpm_name(&s->ak.publicArea, name, sizeof(name), &name_len)) != FLEET_OK)
		return fleet_errctx_msg(ec, e, "the session's AK has no name");
	fb_init(&id);
	fb_init(&es);
	e = fleet_make_credential(&s->ek_rsa.publicArea, code, FLEET_CODE_LEN, name, name_len, &id,
				  &es, &reason);
	if (e != FLEET_OK) {
		fb_free(&id);
		fb_free(&es);
		fleet_errctx_msg(ec, e, "MakeCredential to the RSA EK: %s",
				 reason ? reason : fleet_err_str(e));
		if (ec)
			ec->reason = reason;
		return e;
	}
	/* The buffers' memory becomes the message's. */
	out->present = true;
	out->id_object.data = id.data;
	out->id_object.len = id.len;
	out->enc_secret.data = es.data;
	out->enc_secret.len = es.len;
	return FLEET_OK;
}

/* ---- D3, D4: the statement ---------------------------------------------- */

static bool statement_in_ok(const struct fleet_code_proof_in *in)
{
	return in && in->device && in->serial && in->serial[0] && in->ldevid_sha256 &&
	       in->code_hash && fleet_ca_subject_ok(in->device, in->serial, NULL) &&
	       in->issued_at > 0 && in->issued_at < in->expires_at &&
	       in->expires_at - in->issued_at <= FLEET_CODE_PROOF_MAX_TTL;
}

/* The statement's canonical bytes (malloc'd, NUL-terminated), or NULL. */
static char *statement_dump(const struct fleet_code_proof_in *in)
{
	char ldevid[65], code[65];
	json_t *o;
	char *s;
	fleet_hex_encode(in->ldevid_sha256, 32, ldevid);
	fleet_hex_encode(in->code_hash, 32, code);
	o = json_pack("{s:i,s:s,s:s,s:s,s:s,s:s,s:I,s:I}", "v", 1, "kind", FLEET_CODE_PROOF_KIND,
		      "device", in->device, "serial", in->serial, "ldevid_sha256", ldevid,
		      "code_sha256", code, "issued_at", (json_int_t)in->issued_at, "expires_at",
		      (json_int_t)in->expires_at);
	if (!o)
		return NULL;
	s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(o);
	return s;
}

static fleet_err malformed(struct fleet_errctx *ec, fleet_err e, const char *what)
{
	fleet_errctx_msg(ec, e, "the proof is malformed: %s", what);
	if (ec)
		ec->reason = R_MALFORMED;
	return e;
}

void fleet_code_proof_fix(struct fleet_code_proof *p)
{
	p->in.device = p->device;
	p->in.serial = p->serial;
	p->in.ldevid_sha256 = p->ldevid_sha256;
	p->in.code_hash = p->code_hash;
}

static fleet_err hash_member(json_t *o, const char *key, uint8_t out[32])
{
	const char *v = json_string_value(json_object_get(o, key));
	if (!v || json_string_length(json_object_get(o, key)) != 64 || !fleet_hex_is_lower(v, 64))
		return FLEET_E_MALFORMED;
	return fleet_hex_decode(v, 64, out, 32);
}

fleet_err fleet_code_statement_parse(const char *stmt, size_t len, struct fleet_code_proof *out,
				     struct fleet_errctx *ec)
{
	struct fleet_code_proof p;
	json_error_t je;
	json_t *o, *v;
	const char *dev, *ser;
	char *again = NULL;
	fleet_err e = FLEET_E_MALFORMED;
	const char *why = "not the statement's JSON";

	if (!stmt || !out)
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG, "no statement or output");
	memset(out, 0, sizeof(*out));
	memset(&p, 0, sizeof(p));
	if (len > FLEET_CODE_PROOF_MAX)
		return malformed(ec, FLEET_E_TOO_LARGE, "the statement is too long");
	o = json_loadb(stmt, len, JSON_REJECT_DUPLICATES, &je);
	if (!o || !json_is_object(o))
		goto out;
	why = "the statement does not hold exactly its eight members";
	if (json_object_size(o) != 8)
		goto out;
	v = json_object_get(o, "v");
	why = "the statement's version is not 1";
	if (!json_is_integer(v) || json_integer_value(v) != 1)
		goto out;
	why = "the statement's kind is not " FLEET_CODE_PROOF_KIND;
	v = json_object_get(o, "kind");
	if (!json_is_string(v) || strcmp(json_string_value(v), FLEET_CODE_PROOF_KIND) != 0)
		goto out;
	why = "the device name or serial is not one a certificate carries";
	dev = json_string_value(json_object_get(o, "device"));
	ser = json_string_value(json_object_get(o, "serial"));
	if (!dev || !ser || !ser[0] || strlen(dev) >= sizeof(p.device) ||
	    strlen(ser) >= sizeof(p.serial) || !fleet_ca_subject_ok(dev, ser, NULL))
		goto out;
	memcpy(p.device, dev, strlen(dev) + 1);
	memcpy(p.serial, ser, strlen(ser) + 1);
	why = "a hash is not 64 lowercase hex digits";
	if (hash_member(o, "ldevid_sha256", p.ldevid_sha256) != FLEET_OK ||
	    hash_member(o, "code_sha256", p.code_hash) != FLEET_OK)
		goto out;
	why = "issued_at and expires_at are not integers";
	if (!json_is_integer(json_object_get(o, "issued_at")) ||
	    !json_is_integer(json_object_get(o, "expires_at")))
		goto out;
	p.in.issued_at = json_integer_value(json_object_get(o, "issued_at"));
	p.in.expires_at = json_integer_value(json_object_get(o, "expires_at"));
	fleet_code_proof_fix(&p);
	why = "the validity is empty, reversed or too long";
	if (!statement_in_ok(&p.in))
		goto out;
	/* One spelling only: the members in order, compact, as
	 * fleet_code_proof_make writes them. */
	why = "the statement is not in its canonical form";
	if (!(again = statement_dump(&p.in))) {
		e = FLEET_E_NOMEM;
		why = "out of memory";
		goto out;
	}
	if (strlen(again) != len || memcmp(again, stmt, len) != 0)
		goto out;
	*out = p;
	fleet_code_proof_fix(out);
	e = FLEET_OK;
out:
	free(again);
	json_decref(o);
	return e == FLEET_OK ? FLEET_OK : malformed(ec, e, why);
}

/* ---- D3: making -------------------------------------------------------- */

fleet_err fleet_code_proof_make(const struct fleet_ca *ca, const struct fleet_code_proof_in *in,
				struct fleet_buf *out, struct fleet_errctx *ec)
{
	struct fleet_buf sig, b64;
	char *stmt;
	fleet_err e;

	if (!ca || !out || !statement_in_ok(in))
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG,
					"no CA or output, or a statement D4 refuses");
	if (!(stmt = statement_dump(in)))
		return fleet_errctx_msg(ec, FLEET_E_NOMEM, "the statement");
	fb_init(&sig);
	fb_init(&b64);
	if ((e = fleet_ca_sign(ca, stmt, strlen(stmt), &sig, ec)) != FLEET_OK)
		goto done;
	if ((e = fleet_b64url_encode(sig.data, sig.len, &b64)) != FLEET_OK) {
		fleet_errctx_msg(ec, e, "the signature's base64url");
		goto done;
	}
	fb_put(out, stmt, strlen(stmt));
	fb_put_u8(out, '\n');
	fb_put(out, b64.data, b64.len);
	fb_put_u8(out, '\n');
	if ((e = fb_err(out)) != FLEET_OK)
		fleet_errctx_msg(ec, e, "the proof does not fit");
	else if (out->len > FLEET_CODE_PROOF_MAX)
		e = fleet_errctx_msg(ec, FLEET_E_TOO_LARGE, "the proof is over %u bytes",
				     (unsigned)FLEET_CODE_PROOF_MAX);
done:
	free(stmt);
	fb_free(&sig);
	fb_free(&b64);
	return e;
}

/* ---- D4, D5: verifying ------------------------------------------------- */

fleet_err fleet_code_proof_verify_at(X509 *ca_cert, const void *proof, size_t len, time_t now,
				     struct fleet_code_proof *out, struct fleet_errctx *ec)
{
	const char *p = proof, *nl, *sig_txt;
	size_t stmt_len, sig_len;
	struct fleet_wire_bytes sig = {0};
	struct fleet_buf again;
	struct fleet_code_proof st;
	fleet_err e;

	if (!ca_cert || (!proof && len) || !out)
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG, "no CA, proof or output");
	memset(out, 0, sizeof(*out));
	if (len > FLEET_CODE_PROOF_MAX)
		return malformed(ec, FLEET_E_TOO_LARGE, "over the proof's cap");
	if (len < 2 || !(nl = memchr(p, '\n', len)) || nl == p || p[len - 1] != '\n')
		return malformed(ec, FLEET_E_MALFORMED, "not a statement line and a signature line");
	stmt_len = (size_t)(nl - p);
	sig_txt = nl + 1;
	/* statement, '\n', at least one signature byte, '\n' */
	if (len < stmt_len + 3)
		return malformed(ec, FLEET_E_MALFORMED, "not a statement line and a signature line");
	sig_len = len - stmt_len - 2;
	if (memchr(sig_txt, '\n', sig_len))
		return malformed(ec, FLEET_E_MALFORMED, "not a statement line and a signature line");
	if (fleet_b64url_decode(sig_txt, sig_len, 256, &sig) != FLEET_OK)
		return malformed(ec, FLEET_E_MALFORMED, "the signature is not base64url");
	/* Canonical: the unused bits of the last character are zero, so no
	 * other text decodes to the same signature. */
	fb_init(&again);
	e = fleet_b64url_encode(sig.data, sig.len, &again);
	if (e == FLEET_OK && (again.len != sig_len || memcmp(again.data, sig_txt, sig_len) != 0))
		e = FLEET_E_MALFORMED;
	fb_free(&again);
	if (e != FLEET_OK) {
		free(sig.data);
		return malformed(ec, e, "the signature's base64url is not canonical");
	}
	e = fleet_ca_verify(ca_cert, p, stmt_len, sig.data, sig.len, ec);
	free(sig.data);
	if (e != FLEET_OK) {
		if (ec)
			ec->reason = e == FLEET_E_VERIFY ? R_SIGNATURE : NULL;
		return e;
	}
	if ((e = fleet_code_statement_parse(p, stmt_len, &st, ec)) != FLEET_OK)
		return e;
	if ((int64_t)now >= st.in.expires_at)
		return fleet_errctx_refuse(ec, FLEET_E_VERIFY, R_EXPIRED,
					   "the proof expired at %lld (now %lld)",
					   (long long)st.in.expires_at, (long long)now);
	if ((int64_t)now < st.in.issued_at - FLEET_CODE_PROOF_SKEW)
		return fleet_errctx_refuse(ec, FLEET_E_VERIFY, R_NOT_YET,
					   "the proof is issued at %lld, in the future (now %lld)",
					   (long long)st.in.issued_at, (long long)now);
	*out = st;
	fleet_code_proof_fix(out);
	return FLEET_OK;
}

fleet_err fleet_code_proof_verify(X509 *ca_cert, const void *proof, size_t len,
				  struct fleet_code_proof *out, struct fleet_errctx *ec)
{
	return fleet_code_proof_verify_at(ca_cert, proof, len, time(NULL), out, ec);
}
