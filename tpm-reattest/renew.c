/*
 * renew.c: the node's side of a renewal (reattest_client.h, "Renewal";
 * fleetd's side is fleetd/reattest/renew.c, RN1-RN8).
 *
 * The next LDevID key is a primary made from its generation's template, as
 * every key of tink-attest's is: nothing secret is ever written to disk,
 * and there is no software key to fall back to. The files this writes are
 * the two certificates fleetd issued, after checking that they certify the
 * keys this TPM holds.
 */
#include "tpm-reattest/reattest_client.h"
#include "tpm-reattest/client_int.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <tss2/tss2_mu.h>

#include "lib/tpm.h"

void tpm_reattest_renewal_init(struct tpm_reattest_renewal *rn)
{
	memset(rn, 0, sizeof(*rn));
	fb_init(&rn->public_m);
	fb_init(&rn->request);
	fb_init(&rn->attest);
	fb_init(&rn->sig);
	fb_init(&rn->ldevid_der);
}

void tpm_reattest_renewal_free(struct tpm_reattest_renewal *rn)
{
	fb_free(&rn->public_m);
	fb_free(&rn->request);
	fb_free(&rn->attest);
	fb_free(&rn->sig);
	fb_free(&rn->ldevid_der);
}

static X509 *parse(const struct fleet_buf *der)
{
	const unsigned char *p = der->data;
	X509 *x = der->data ? d2i_X509(NULL, &p, (long)der->len) : NULL;
	if (x && p != der->data + der->len) {
		X509_free(x);
		x = NULL;
	}
	ERR_clear_error();
	return x;
}

/* Seconds from now to the certificate's notAfter (negative once past). */
static int seconds_to_end(X509 *x, time_t now, long *out)
{
	int days = 0, secs = 0;
	ASN1_TIME *t = ASN1_TIME_set(NULL, now);
	int ok = t && ASN1_TIME_diff(&days, &secs, t, X509_get0_notAfter(x));
	ASN1_TIME_free(t);
	if (!ok)
		return -1;
	*out = (long)days * 86400 + secs;
	return 0;
}

int tpm_reattest_renewal_due(const struct fleet_buf *lak_der, const struct fleet_buf *ldevid_der,
			     time_t now, long *seconds_left)
{
	X509 *lak = parse(lak_der), *ldevid = parse(ldevid_der);
	long a = 0, b = 0;
	int r = -1;

	if (lak && ldevid && seconds_to_end(lak, now, &a) == 0 &&
	    seconds_to_end(ldevid, now, &b) == 0) {
		*seconds_left = a < b ? a : b;
		r = *seconds_left <= TPM_REATTEST_RENEW_BEFORE;
	}
	X509_free(lak);
	X509_free(ldevid);
	return r;
}


/* The subject serialNumber fleetd put in the LAK certificate: the store's
 * serial, which RN6 wants in the request (not sysfs', which might differ
 * in case or spacing from what was admitted). */
static int lak_serial(const struct fleet_buf *lak_der, char out[FLEET_WIRE_MAX_SERIAL + 1])
{
	X509 *x = parse(lak_der);
	X509_NAME *n = x ? X509_get_subject_name(x) : NULL;
	int i = n ? X509_NAME_get_index_by_NID(n, NID_serialNumber, -1) : -1;
	const ASN1_STRING *s = i >= 0 ? X509_NAME_ENTRY_get_data(X509_NAME_get_entry(n, i)) : NULL;
	int len = s ? ASN1_STRING_length(s) : 0;
	int r = -1;

	if (s && len > 0 && len <= FLEET_WIRE_MAX_SERIAL) {
		memcpy(out, ASN1_STRING_get0_data(s), (size_t)len);
		out[len] = '\0';
		r = 0;
	}
	X509_free(x);
	return r;
}

int tpm_reattest_prove_next(struct tink_tpm *t, const struct fleet_buf *lak_der,
			    struct tpm_reattest_renewal *rn, char *msg, size_t msglen)
{
	char serial[FLEET_WIRE_MAX_SERIAL + 1];
	X509 *cur = parse(&rn->ldevid_der);
	EVP_PKEY *want = cur ? X509_get0_pubkey(cur) : NULL;
	unsigned gen;
	int rc = 0;

	if (!want || lak_serial(lak_der, serial) != 0) {
		X509_free(cur);
		return tpm_reattest_say(msg, msglen, TPM_REATTEST_EXIT_LOCAL,
			   "the LAK or LDevID certificate cannot be read for a renewal");
	}
	/* Which generation is the current key? (the admission's is 0) */
	for (gen = 0; gen < TINK_LDEVID_MAX_GEN; gen++) {
		TPM2B_PUBLIC pub;
		EVP_PKEY *k = NULL;
		t->ldevid_gen = gen;
		if (tink_tpm_public(t, TINK_KEY_LDEVID, &pub) != 0) {
			rc = tpm_reattest_say(msg, msglen, TPM_REATTEST_EXIT_NO_TPM,
				 "the TPM cannot make LDevID key %u: %s", gen, t->err);
			break;
		}
		bool same = fleet_tpm_public_to_pkey(&pub.publicArea, &k) == FLEET_OK &&
			    EVP_PKEY_eq(k, want) == 1;
		EVP_PKEY_free(k);
		if (same)
			break;
	}
	X509_free(cur);
	if (rc != 0)
		return rc;
	if (gen + 1 >= TINK_LDEVID_MAX_GEN)
		return tpm_reattest_say(msg, msglen, TPM_REATTEST_EXIT_LOCAL,
			   "no LDevID generation below %u of this TPM holds the LDevID "
			   "certificate's key (or it is the last): cannot renew",
			   TINK_LDEVID_MAX_GEN);
	rn->gen = gen + 1;
	t->ldevid_gen = rn->gen;
	fb_reset(&rn->request);
	fb_reset(&rn->attest);
	fb_reset(&rn->sig);
	fb_reset(&rn->public_m);
	if (tink_tpm_prove_ldevid(t, serial, &rn->key, &rn->request, &rn->attest, &rn->sig) != 0)
		rc = tpm_reattest_say(msg, msglen, TPM_REATTEST_EXIT_NO_TPM,
			 "the TPM could not make and certify LDevID key %u: %s", rn->gen, t->err);
	t->ldevid_gen = 0;
	if (rc != 0)
		return rc;
	uint8_t m[sizeof(TPM2B_PUBLIC)];
	size_t off = 0;
	if (Tss2_MU_TPM2B_PUBLIC_Marshal(&rn->key, m, sizeof(m), &off) != TSS2_RC_SUCCESS ||
	    fb_put(&rn->public_m, m, off) != FLEET_OK)
		return tpm_reattest_say(msg, msglen, TPM_REATTEST_EXIT_LOCAL,
			   "the next LDevID key's public area does not marshal");
	return 0;
}

static int dup_into(struct fleet_wire_bytes *dst, const struct fleet_buf *src)
{
	if (!(dst->data = malloc(src->len ? src->len : 1)))
		return -1;
	memcpy(dst->data, src->data, src->len);
	dst->len = src->len;
	return 0;
}

int tpm_reattest_attach_renewal(const struct tpm_reattest_renewal *rn,
				struct fleet_reattest_check *chk)
{
	chk->has_renew = true;
	return dup_into(&chk->renew_public, &rn->public_m) || dup_into(&chk->renew_request, &rn->request) ||
			       dup_into(&chk->renew_certify_attest, &rn->attest) ||
			       dup_into(&chk->renew_certify_sig, &rn->sig)
		       ? -1
		       : 0;
}

/* PEM of x to path, through path.new: written, fsynced, renamed, and the
 * directory fsynced, so a crash leaves the old file or the new one. */
static int write_pem(const char *path, X509 *x, char *msg, size_t msglen)
{
	char tmp[4096], dir[4096];
	BIO *b = BIO_new(BIO_s_mem());
	char *pem = NULL;
	long n;
	int fd = -1, r = -1;

	if (snprintf(tmp, sizeof(tmp), "%s.new", path) >= (int)sizeof(tmp) ||
	    snprintf(dir, sizeof(dir), "%s", path) >= (int)sizeof(dir)) {
		BIO_free(b);
		return tpm_reattest_say(msg, msglen, TPM_REATTEST_EXIT_LOCAL, "path too long: %s", path);
	}
	if (!b || PEM_write_bio_X509(b, x) != 1 || (n = BIO_get_mem_data(b, &pem)) <= 0) {
		BIO_free(b);
		return tpm_reattest_say(msg, msglen, TPM_REATTEST_EXIT_LOCAL, "PEM encoding failed");
	}
	(void)unlink(tmp); /* a crash's leftover */
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644)) < 0)
		goto fail;
	for (long off = 0; off < n;) {
		ssize_t w = write(fd, pem + off, (size_t)(n - off));
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			goto fail;
		off += w;
	}
	if (fsync(fd) != 0 || close(fd) != 0) {
		fd = -1;
		goto fail;
	}
	fd = -1;
	/* The certificate it replaces stays beside it as FILE.prev (a hard
	 * link: FILE never goes missing), for the owner to put back. */
	char prev[4200];
	snprintf(prev, sizeof(prev), "%s.prev", path);
	(void)unlink(prev);
	if (link(path, prev) != 0)
		prev[0] = '\0'; /* no .prev (no old file, or no room): the replace still goes on */
	if (rename(tmp, path) != 0)
		goto fail;
	int dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		(void)fsync(dfd);
		close(dfd);
	}
	r = 0;
fail:
	if (r != 0) {
		int err = errno;
		if (fd >= 0)
			close(fd);
		(void)unlink(tmp);
		tpm_reattest_say(msg, msglen, TPM_REATTEST_EXIT_LOCAL, "cannot write %s: %s", path,
		    strerror(err));
		r = TPM_REATTEST_EXIT_LOCAL;
	}
	BIO_free(b);
	return r;
}

static X509 *parse_wire(const struct fleet_wire_bytes *w)
{
	struct fleet_buf b = {.data = w->data, .len = w->len};
	return parse(&b);
}

static bool same_issuer(X509 *x, X509 *old)
{
	const ASN1_OCTET_STRING *a = X509_get0_authority_key_id(x),
				*b = X509_get0_authority_key_id(old);
	if (X509_NAME_cmp(X509_get_issuer_name(x), X509_get_issuer_name(old)) != 0)
		return false;
	if (!a || !b) /* fleetd's CA writes the extension: both or neither */
		return !a && !b;
	return ASN1_OCTET_STRING_cmp(a, b) == 0;
}

#define CLOCK_SKEW 300 /* seconds the node's clock may lag fleetd's */

static bool fresh(X509 *x, X509 *old)
{
	time_t now = time(NULL), soon = now + CLOCK_SKEW;
	int day = 0, sec = 0;
	return ASN1_TIME_cmp_time_t(X509_get0_notBefore(x), soon) <= 0 &&
	       ASN1_TIME_cmp_time_t(X509_get0_notAfter(x), now) > 0 &&
	       ASN1_TIME_diff(&day, &sec, X509_get0_notAfter(old), X509_get0_notAfter(x)) == 1 &&
	       (day > 0 || (day == 0 && sec >= 0)); /* equal: the same renewal again (RN6) */
}

int tpm_reattest_store_renewal(const struct tpm_reattest_config *cfg,
			       const struct fleet_buf *old_lak_der,
			       const struct tpm_reattest_renewal *rn,
			       const struct fleet_reattest_check_reply *reply, char *msg,
			       size_t msglen)
{
	X509 *old = parse(old_lak_der), *lak = parse_wire(&reply->lak_cert),
	     *ldevid = parse_wire(&reply->ldevid_cert);
	EVP_PKEY *key = NULL;
	int rc;

	if (!old || !lak || !ldevid) {
		rc = tpm_reattest_say(msg, msglen, TPM_REATTEST_EXIT_LOCAL,
			 "fleetd's renewed certificates do not parse; nothing written");
		goto out;
	}
	/* Certificates for the keys this TPM holds, for the same name, or
	 * nothing is written: the files are what the next run proves with. */
	if (fleet_tpm_public_to_pkey(&rn->key.publicArea, &key) != FLEET_OK ||
	    EVP_PKEY_eq(X509_get0_pubkey(lak), X509_get0_pubkey(old)) != 1 ||
	    EVP_PKEY_eq(X509_get0_pubkey(ldevid), key) != 1 ||
	    X509_NAME_cmp(X509_get_subject_name(lak), X509_get_subject_name(old)) != 0 ||
	    X509_NAME_cmp(X509_get_subject_name(ldevid), X509_get_subject_name(old)) != 0) {
		rc = tpm_reattest_say(msg, msglen, TPM_REATTEST_EXIT_LOCAL,
			 "fleetd's renewed certificates are not for this TPM's keys and name; "
			 "nothing written");
		goto out;
	}
	/* From the CA that issued the old one (its name and key identifier: a
	 * fleetd restored with another CA would lock the node out), and good
	 * now and not ending before the old one (a fleetd with a wrong clock
	 * would too). Found in review. */
	if (!same_issuer(lak, old) || !same_issuer(ldevid, old)) {
		rc = tpm_reattest_say(msg, msglen, TPM_REATTEST_EXIT_LOCAL,
			 "fleetd's renewed certificates are not from the CA of the old LAK "
			 "certificate; nothing written");
		goto out;
	}
	if (!fresh(lak, old) || !fresh(ldevid, old)) {
		rc = tpm_reattest_say(msg, msglen, TPM_REATTEST_EXIT_LOCAL,
			 "fleetd's renewed certificates are not valid now, or end before the old "
			 "ones (is fleetd's clock wrong?); nothing written");
		goto out;
	}
	/* The LAK first: a crash between the two leaves the old LDevID, whose
	 * next renewal asks for the same key and gets the same certificates
	 * again (fleetd RN6), instead of spending another key. */
	if ((rc = write_pem(cfg->lak_cert, lak, msg, msglen)) != 0 ||
	    (rc = write_pem(cfg->ldevid_cert, ldevid, msg, msglen)) != 0)
		goto out;
	rc = 0;
out:
	EVP_PKEY_free(key);
	X509_free(old);
	X509_free(lak);
	X509_free(ldevid);
	ERR_clear_error();
	return rc;
}
