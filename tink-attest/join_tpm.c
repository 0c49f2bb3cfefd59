/*
 * join_tpm.c: fleet-join's tpm attestor on the wire (join_client.h FJ9-
 * FJ11): the key that is either a software key or a TPM-held key's record,
 * round 1's and round 2's attestation (lib/tpm_join_evidence.h), the
 * renewal's key_attestation and the leaf's AK statement. The TPM work
 * itself is tpm_join.c's.
 */
#include "tink-attest/join_client.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "lib/file_read.h"
#include "lib/tpm_join_evidence.h"
#include "tink-attest/tpm_join.h"

#define MAX_KEY_FILE (16u * 1024)

/* ---- FJ10: the key in either form ---------------------------------------- */

static const uint8_t record_magic[4] = {'F', 'T', 'N', 'K'};
#define RECORD_VERSION 1
/* magic, version, generation (be32), unique's length, the unique (<= 32) */
#define RECORD_MAX (4 + 1 + 4 + 1 + 32)

/* The record's bytes (FJ10) of generation gen, appended to out. */
static fleet_err record_encode(unsigned gen, struct fleet_buf *out)
{
	TPM2B_PUBLIC t = tink_nodekey_template(gen);
	const TPM2B_ECC_PARAMETER *u = &t.publicArea.unique.ecc.x;

	if (gen > TINK_NODE_MAX_GEN || u->size > 32)
		return FLEET_E_INVALID_ARG;
	fb_put(out, record_magic, sizeof(record_magic));
	fb_put_u8(out, RECORD_VERSION);
	fb_put_u32be(out, gen);
	fb_put_u8(out, (uint8_t)u->size);
	fb_put(out, u->buffer, u->size);
	return fb_err(out);
}

/* The record's bytes back into a generation: whole, or not at all. */
static fleet_err record_decode(const uint8_t *b, size_t len, unsigned *gen)
{
	if (len < 10 || len > RECORD_MAX || memcmp(b, record_magic, 4) != 0 ||
	    b[4] != RECORD_VERSION)
		return FLEET_E_MALFORMED;
	uint32_t g = (uint32_t)b[5] << 24 | (uint32_t)b[6] << 16 | (uint32_t)b[7] << 8 | b[8];
	if (g > TINK_NODE_MAX_GEN || (size_t)b[9] + 10 != len)
		return FLEET_E_MALFORMED;
	/* The unique must be the template's of that generation: a record of
	 * another family is not derived as if it were ours. */
	TPM2B_PUBLIC t = tink_nodekey_template(g);
	const TPM2B_ECC_PARAMETER *u = &t.publicArea.unique.ecc.x;
	if (u->size != b[9] || memcmp(u->buffer, b + 10, u->size) != 0)
		return FLEET_E_MALFORMED;
	*gen = g;
	return FLEET_OK;
}

fleet_err fj_tpm_key_record(unsigned gen, struct fleet_buf *pem)
{
	struct fleet_buf rec;
	BIO *b = NULL;
	char *p = NULL;
	long n;
	fleet_err e;

	fb_init(&rec);
	if ((e = record_encode(gen, &rec)) != FLEET_OK)
		goto out;
	e = FLEET_E_CRYPTO;
	if (!(b = BIO_new(BIO_s_mem())) ||
	    PEM_write_bio(b, FJ_TPM_KEY_PEM, "", rec.data, (long)rec.len) <= 0 ||
	    (n = BIO_get_mem_data(b, &p)) <= 0)
		goto out;
	e = fb_put(pem, p, (size_t)n);
out:
	ERR_clear_error();
	BIO_free(b);
	fb_free(&rec);
	return e;
}

/* "-----BEGIN FLEET TPM NODE KEY-----" at the start (after blank space). */
static bool is_record(const uint8_t *b, size_t len)
{
	static const char begin[] = "-----BEGIN " FJ_TPM_KEY_PEM "-----";
	size_t i = 0;

	while (i < len && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n'))
		i++;
	return len - i >= sizeof(begin) - 1 && memcmp(b + i, begin, sizeof(begin) - 1) == 0;
}

/* An encrypted key is refused rather than asked for on a terminal. */
static int no_passphrase(char *buf, int size, int rw, void *u)
{
	(void)buf;
	(void)size;
	(void)rw;
	(void)u;
	return -1;
}

fleet_err fj_key_load(const char *path, struct fj_key *out, struct fleet_errctx *ec)
{
	static const struct fleet_file_policy policy =
		FLEET_FILE_POLICY_SECRET("the private key", MAX_KEY_FILE);
	struct fleet_buf b;
	BIO *bio;
	fleet_err e;

	memset(out, 0, sizeof(*out));
	fb_init(&b);
	if ((e = fleet_file_read(AT_FDCWD, path, &policy, &b, ec)) != FLEET_OK)
		return fleet_errctx_wrap(ec, e, "cannot read ", NULL);
	/* A read-only BIO over the secret buffer: no copy of the PEM. */
	if (!(bio = BIO_new_mem_buf(b.data, (int)b.len))) {
		fb_free(&b);
		return fleet_errctx_openssl(ec, FLEET_E_NOMEM, "BIO_new_mem_buf");
	}
	if (is_record(b.data, b.len)) {
		char *name = NULL, *header = NULL;
		unsigned char *data = NULL;
		long n = 0;
		e = PEM_read_bio(bio, &name, &header, &data, &n) == 1 &&
				    strcmp(name, FJ_TPM_KEY_PEM) == 0 && n > 0
			    ? record_decode(data, (size_t)n, &out->gen)
			    : FLEET_E_MALFORMED;
		OPENSSL_free(name);
		OPENSSL_free(header);
		OPENSSL_free(data);
		ERR_clear_error();
		out->in_tpm = e == FLEET_OK;
		if (e != FLEET_OK)
			fleet_errctx_msg(ec, e, "%s: a " FJ_TPM_KEY_PEM " block that is not a "
						"record fleet-join writes",
					 path);
	} else {
		out->pkey = PEM_read_bio_PrivateKey(bio, NULL, no_passphrase, NULL);
		e = out->pkey ? FLEET_OK
			      : fleet_errctx_openssl(ec, FLEET_E_MALFORMED,
						     "%s: neither an unencrypted PEM private key "
						     "nor a " FJ_TPM_KEY_PEM,
						     path);
	}
	BIO_free(bio);
	fb_free(&b);
	return e;
}

fleet_err fj_key_attach(struct fj_key *k, struct tink_tpm *t, struct fleet_errctx *ec)
{
	if (!k->in_tpm)
		return FLEET_OK;
	EVP_PKEY_free(k->pkey);
	k->pkey = NULL;
	k->tpm = t;
	if (tink_node_public(t, k->gen, NULL, &k->pkey) != 0)
		return fleet_errctx_msg(ec, FLEET_E_UNAVAILABLE, "%s", t->err);
	return FLEET_OK;
}

fleet_err fj_key_sign(const struct fj_key *k, const uint8_t *msg, size_t len,
		      uint8_t sig[FLEET_ES256_SIG_LEN], struct fleet_errctx *ec)
{
	if (!k->in_tpm)
		return fleet_es256_sign(k->pkey, msg, len, sig, ec);
	if (!k->tpm)
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG,
					"the key is TPM-held and no TPM was opened (--tcti)");
	if (tink_node_es256(k->tpm, k->gen, msg, len, sig) != 0)
		return fleet_errctx_msg(ec, FLEET_E_UNAVAILABLE, "%s", k->tpm->err);
	return FLEET_OK;
}

void fj_key_free(struct fj_key *k)
{
	if (!k)
		return;
	EVP_PKEY_free(k->pkey);
	memset(k, 0, sizeof(*k));
}

/* ---- FJ9: the evidence ------------------------------------------------------ */

static struct fleet_wire_bytes view(const struct fleet_buf *b)
{
	return (struct fleet_wire_bytes){b->len ? b->data : NULL, b->len};
}

static fleet_err tpm_fail(struct fleet_errctx *ec, const struct tink_tpm *t)
{
	return fleet_errctx_msg(ec, FLEET_E_UNAVAILABLE, "%s", t->err);
}

fleet_err fj_tpm_round1(struct tink_tpm *t, struct tink_ek *ek, struct fleet_buf *att,
			struct fleet_errctx *ec)
{
	struct fleet_tpm_evidence ev;
	struct fleet_buf ekp, akp;
	TPM2B_PUBLIC ak;
	fleet_err e;

	memset(&ev, 0, sizeof(ev));
	fb_init(&ekp);
	fb_init(&akp);
	if (tink_join_ek(t, ek) != 0 || tink_public_marshal(t, &ek->pub, &ekp) != 0 ||
	    tink_tpm_public(t, TINK_KEY_AK, &ak) != 0 || tink_public_marshal(t, &ak, &akp) != 0) {
		e = tpm_fail(ec, t);
		goto out;
	}
	ev.round = 1;
	ev.ek_public = view(&ekp);
	ev.ek_cert = view(&ek->cert);
	ev.ak_public = view(&akp);
	if ((e = fleet_tpm_evidence_encode(&ev, att)) != FLEET_OK)
		fleet_errctx_msg(ec, e, "round 1's evidence cannot be encoded (the EK's "
					"certificate or a public area over its cap)");
out:
	fb_free(&ekp);
	fb_free(&akp);
	return e;
}

fleet_err fj_tpm_round2(struct tink_tpm *t, const struct tink_ek *ek, unsigned gen,
			const struct fleet_wire_bytes *payload, const struct fleet_wire_bytes *csr,
			const struct fleet_buf *event_log, struct fleet_buf *att,
			struct fleet_errctx *ec)
{
	struct fleet_tpm_challenge ch;
	struct fleet_tpm_evidence ev;
	struct tink_answer a;
	uint8_t csr_sha[32];
	fleet_err e;

	memset(&ev, 0, sizeof(ev));
	tink_answer_init(&a);
	if ((e = fleet_tpm_challenge_decode(payload->data, payload->len, &ch, ec)) != FLEET_OK) {
		fleet_errctx_wrap(ec, e, "the tpm challenge: ", NULL);
		tink_answer_free(&a);
		return e;
	}
	if ((e = fleet_hash(FLEET_ALG_SHA256, csr->data, csr->len, csr_sha)) != FLEET_OK) {
		fleet_errctx_msg(ec, e, "SHA-256 of the CSR");
		goto out;
	}
	if (tink_answer_challenge(t, ek, gen, ch.id_object.data, ch.id_object.len,
				  ch.enc_secret.data, ch.enc_secret.len, ch.pcrs, csr_sha,
				  &a) != 0) {
		e = tpm_fail(ec, t);
		goto out;
	}
	ev.round = 2;
	ev.state = ch.state; /* unchanged */
	ev.secret = view(&a.secret);
	ev.quote = view(&a.quote);
	ev.quote_sig = view(&a.quote_sig);
	ev.n_pcr_values = a.n_values;
	for (size_t i = 0; i < a.n_values; i++)
		ev.pcr_values[i] = (struct fleet_wire_bytes){a.values[i].digest, a.values[i].size};
	if (event_log)
		ev.event_log = view(event_log);
	ev.has_node_key = true;
	ev.node_key.key_public = view(&a.node_public);
	ev.node_key.certify_info = view(&a.certify_info);
	ev.node_key.signature = view(&a.certify_sig);
	fb_reset(att); /* a wiping buffer: round 2 holds the secret */
	if ((e = fleet_tpm_evidence_encode(&ev, att)) != FLEET_OK)
		fleet_errctx_msg(ec, e, "round 2's evidence cannot be encoded (the event log or "
					"the TPM's answer over its cap)");
out:
	/* ev borrows every byte field: wiped, not freed */
	OPENSSL_cleanse(&ev, sizeof(ev));
	OPENSSL_cleanse(csr_sha, sizeof(csr_sha));
	fleet_tpm_challenge_free(&ch);
	tink_answer_free(&a);
	return e;
}

/* A copy of b the wire struct owns (free()d by its free function). */
static fleet_err own(const struct fleet_buf *b, struct fleet_wire_bytes *out)
{
	out->len = 0;
	if (!(out->data = malloc(b->len ? b->len : 1)))
		return FLEET_E_NOMEM;
	memcpy(out->data, b->data, b->len);
	out->len = b->len;
	return FLEET_OK;
}

fleet_err fj_tpm_key_attestation(struct tink_tpm *t, unsigned gen,
				 const struct fleet_wire_bytes *csr,
				 struct fleet_tpm_key_attestation *out, struct fleet_errctx *ec)
{
	struct fleet_buf akp, keyp, info, sig;
	TPM2B_PUBLIC ak;
	uint8_t q[32];
	fleet_err e = FLEET_OK;

	memset(out, 0, sizeof(*out));
	fb_init(&akp);
	fb_init(&keyp);
	fb_init(&info);
	fb_init(&sig);
	if (fleet_hash(FLEET_ALG_SHA256, csr->data, csr->len, q) != FLEET_OK) {
		e = fleet_errctx_msg(ec, FLEET_E_CRYPTO, "SHA-256 of the CSR");
		goto out;
	}
	if (tink_tpm_public(t, TINK_KEY_AK, &ak) != 0 || tink_public_marshal(t, &ak, &akp) != 0 ||
	    tink_node_certify(t, gen, q, sizeof(q), &keyp, &info, &sig) != 0) {
		e = fleet_errctx_msg(ec, FLEET_E_UNAVAILABLE,
				     "the TPM's attestation key certifying the next key: %s",
				     t->err);
		goto out;
	}
	if (own(&akp, &out->ak_public) != FLEET_OK || own(&keyp, &out->cert.key_public) != FLEET_OK ||
	    own(&info, &out->cert.certify_info) != FLEET_OK ||
	    own(&sig, &out->cert.signature) != FLEET_OK) {
		e = fleet_errctx_msg(ec, FLEET_E_NOMEM, "out of memory");
		fleet_tpm_key_attestation_free(out);
	}
out:
	fb_free(&akp);
	fb_free(&keyp);
	fb_free(&info);
	fb_free(&sig);
	return e;
}

fleet_err fj_leaf_ak_statement(X509 *leaf, bool *found, uint8_t *name, size_t cap,
			       size_t *name_len, struct fleet_errctx *ec)
{
	static const char prefix[] = FLEET_TPM_AK_URI_PREFIX;
	GENERAL_NAMES *sans = X509_get_ext_d2i(leaf, NID_subject_alt_name, NULL, NULL);
	fleet_err e = FLEET_OK;

	*found = false;
	*name_len = 0;
	for (int i = 0; sans && i < sk_GENERAL_NAME_num(sans) && e == FLEET_OK; i++) {
		const GENERAL_NAME *g = sk_GENERAL_NAME_value(sans, i);
		if (g->type != GEN_URI)
			continue;
		const ASN1_IA5STRING *u = g->d.uniformResourceIdentifier;
		char uri[FLEET_TPM_AK_URI_MAX + 2];
		if ((size_t)u->length < sizeof(prefix) - 1 ||
		    memcmp(u->data, prefix, sizeof(prefix) - 1) != 0)
			continue;
		if (*found)
			e = fleet_errctx_msg(ec, FLEET_E_MALFORMED,
					     "the certificate names two TPM attestation keys");
		else if ((size_t)u->length >= sizeof(uri) || memchr(u->data, 0, (size_t)u->length))
			e = fleet_errctx_msg(ec, FLEET_E_MALFORMED,
					     "the certificate's TPM attestation key statement is "
					     "malformed (too long)");
		else {
			memcpy(uri, u->data, (size_t)u->length);
			uri[u->length] = '\0';
			if (fleet_tpm_ak_uri_parse(uri, name, cap, name_len) != FLEET_OK)
				e = fleet_errctx_msg(ec, FLEET_E_MALFORMED,
						     "the certificate's TPM attestation key "
						     "statement is malformed: %s",
						     uri);
			*found = e == FLEET_OK;
		}
	}
	GENERAL_NAMES_free(sans);
	ERR_clear_error();
	if (e != FLEET_OK)
		*found = false;
	return e;
}
