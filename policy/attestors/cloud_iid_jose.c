/*
 * cloud_iid_jose.c: the JOSE half of the cloud-iid attestor: a JWS in
 * compact serialization (RFC 7515) signed RS256 or ES256 (RFC 7518 3.3,
 * 3.4), the JWKS (RFC 7517) its key comes from, and that JWKS's cache.
 *
 * Strict on what the machine sends (the token): three base64url parts
 * without padding in the one spelling fleet_b64url_decode accepts, a
 * header of alg, kid and typ only (a "jku", "x5u", "jwk" or "crit" would
 * name keys or rules we do not follow, so it is refused, not ignored),
 * no key given twice. The claims are parsed only after the signature
 * holds. Lenient, within caps, on what the provider publishes (the JWKS):
 * a key of a type we do not verify with is skipped, so a provider adding
 * one does not stop every join; a JWKS with no usable key is an error.
 *
 * The cache: verify never does I/O (it runs inside the store's write
 * transaction, A7), so prepare refreshes and verify reads. A read-write
 * lock (mu) guards the keys: verify holds it shared while it checks a
 * signature with one of them, a swap holds it exclusive, so a key set is
 * freed only after every verify that used it let go (a lock the thread
 * sanitizer sees, where OpenSSL's own reference counts it would not). A
 * mutex (fetch_mu) makes concurrent prepares fetch once.
 */
#include "policy/attestors/cloud_iid_int.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <curl/curl.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/param_build.h>
#include <openssl/rsa.h>

#include "lib/attest_wire.h"
#include "lib/attest_wire_json.h"
#include "lib/file_read.h"
#include "lib/join_evidence.h"

#define JWS_MAX_HEADER 1024
#define JWS_MAX_SIG 512 /* RSA-4096 */
#define JWK_MAX_N 512
#define JWK_MAX_E 8
#define FETCH_TIMEOUT 10L

/* ---- keys ---------------------------------------------------------------- */

/* A member that is a JSON string, else NULL. */
static const char *str_member(const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);
	return json_is_string(v) ? json_string_value(v) : NULL;
}

/* base64url member k of o, 1..max bytes. */
static bool b64_member(const json_t *o, const char *k, size_t max, struct fleet_wire_bytes *out)
{
	const json_t *v = json_object_get(o, k);
	if (!json_is_string(v) || json_string_length(v) == 0)
		return false;
	if (fleet_b64url_decode(json_string_value(v), json_string_length(v), max, out))
		return false;
	if (out->len == 0) {
		wj_bytes_free(out);
		return false;
	}
	return true;
}

static EVP_PKEY *from_params(const char *type, OSSL_PARAM_BLD *bld)
{
	OSSL_PARAM *params = bld ? OSSL_PARAM_BLD_to_param(bld) : NULL;
	EVP_PKEY_CTX *ctx = params ? EVP_PKEY_CTX_new_from_name(NULL, type, NULL) : NULL;
	EVP_PKEY *pk = NULL;
	if (!ctx || EVP_PKEY_fromdata_init(ctx) != 1 ||
	    EVP_PKEY_fromdata(ctx, &pk, EVP_PKEY_PUBLIC_KEY, params) != 1)
		pk = NULL;
	EVP_PKEY_CTX_free(ctx);
	OSSL_PARAM_free(params);
	return pk;
}

static EVP_PKEY *rsa_key(const json_t *o)
{
	struct fleet_wire_bytes n = {0}, e = {0};
	BIGNUM *bn = NULL, *be = NULL;
	OSSL_PARAM_BLD *bld = NULL;
	EVP_PKEY *pk = NULL;
	if (!b64_member(o, "n", JWK_MAX_N, &n) || !b64_member(o, "e", JWK_MAX_E, &e))
		goto out;
	if (!(bn = BN_bin2bn(n.data, (int)n.len, NULL)) ||
	    !(be = BN_bin2bn(e.data, (int)e.len, NULL)) || !(bld = OSSL_PARAM_BLD_new()) ||
	    !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn) ||
	    !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, be))
		goto out;
	pk = from_params("RSA", bld);
	/* Under 2048 bits is forgeable in time; over 4096 is a cost we do
	 * not pay for each join (and more than any provider uses). */
	if (pk && (EVP_PKEY_get_bits(pk) < 2048 || EVP_PKEY_get_bits(pk) > 4096)) {
		EVP_PKEY_free(pk);
		pk = NULL;
	}
out:
	OSSL_PARAM_BLD_free(bld);
	BN_free(bn);
	BN_free(be);
	wj_bytes_free(&n);
	wj_bytes_free(&e);
	return pk;
}

static EVP_PKEY *ec_key(const json_t *o)
{
	struct fleet_wire_bytes x = {0}, y = {0};
	OSSL_PARAM_BLD *bld = NULL;
	EVP_PKEY_CTX *chk = NULL;
	EVP_PKEY *pk = NULL;
	uint8_t pt[65];
	const char *crv = str_member(o, "crv");
	if (!crv || strcmp(crv, "P-256") || !b64_member(o, "x", 32, &x) ||
	    !b64_member(o, "y", 32, &y) || x.len != 32 || y.len != 32)
		goto out;
	pt[0] = 4; /* uncompressed */
	memcpy(pt + 1, x.data, 32);
	memcpy(pt + 33, y.data, 32);
	if (!(bld = OSSL_PARAM_BLD_new()) ||
	    !OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0) ||
	    !OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, pt, sizeof(pt)))
		goto out;
	pk = from_params("EC", bld);
	/* fromdata takes a point as given: one off the curve is refused here. */
	if (pk && (!(chk = EVP_PKEY_CTX_new_from_pkey(NULL, pk, NULL)) ||
		   EVP_PKEY_public_check(chk) != 1)) {
		EVP_PKEY_free(pk);
		pk = NULL;
	}
out:
	EVP_PKEY_CTX_free(chk);
	OSSL_PARAM_BLD_free(bld);
	wj_bytes_free(&x);
	wj_bytes_free(&y);
	return pk;
}

void ciid_jwks_free(struct ciid_jwks *k)
{
	for (size_t i = 0; i < k->n; i++)
		EVP_PKEY_free(k->keys[i].pkey);
	free(k->keys);
	k->keys = NULL;
	k->n = 0;
}

fleet_err ciid_jwks_parse(const uint8_t *buf, size_t len, struct ciid_jwks *out,
			  struct fleet_errctx *ec)
{
	json_error_t jerr;
	json_t *root = NULL, *keys;
	fleet_err e = FLEET_E_MALFORMED;
	memset(out, 0, sizeof(*out));
	if (len > CIID_MAX_JWKS)
		return fleet_errctx_msg(ec, FLEET_E_TOO_LARGE, "the JWKS: %zu bytes, over %u", len,
					CIID_MAX_JWKS);
	root = json_loadb((const char *)buf, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root || !json_is_object(root) || !json_is_array(keys = json_object_get(root, "keys"))) {
		fleet_errctx_msg(ec, e, "the JWKS: not a JSON object with a keys array");
		goto out;
	}
	size_t n = json_array_size(keys);
	if (n && !(out->keys = calloc(n, sizeof(*out->keys)))) {
		e = fleet_errctx_msg(ec, FLEET_E_NOMEM, "the JWKS: out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		const json_t *k = json_array_get(keys, i);
		const char *kty = json_is_object(k) ? str_member(k, "kty") : NULL;
		const char *kid = kty ? str_member(k, "kid") : NULL;
		const char *use = kid ? str_member(k, "use") : NULL;
		const char *alg = kid ? str_member(k, "alg") : NULL;
		bool is_ec = kty && !strcmp(kty, "EC");
		/* Skipped: no kid (we choose by kid), another type, an
		 * encryption key, a key for another algorithm. */
		if (!kid || !kid[0] || strlen(kid) >= sizeof(out->keys[0].kid) ||
		    !wj_text_ok(kid, strlen(kid)) || (!is_ec && strcmp(kty, "RSA")) ||
		    (json_object_get(k, "use") && (!use || strcmp(use, "sig"))) ||
		    (json_object_get(k, "alg") && (!alg || strcmp(alg, is_ec ? "ES256" : "RS256"))))
			continue;
		EVP_PKEY *pk = is_ec ? ec_key(k) : rsa_key(k);
		if (!pk)
			continue;
		for (size_t j = 0; j < out->n; j++)
			if (!strcmp(out->keys[j].kid, kid)) {
				/* Two keys under one kid: which one signed is a
				 * guess, so the whole set is refused. */
				EVP_PKEY_free(pk);
				fleet_errctx_msg(ec, e, "the JWKS: kid given twice");
				ciid_jwks_free(out);
				goto out;
			}
		struct ciid_key *dst = &out->keys[out->n++];
		snprintf(dst->kid, sizeof(dst->kid), "%s", kid);
		dst->ec = is_ec;
		dst->pkey = pk;
	}
	if (out->n == 0) {
		fleet_errctx_msg(ec, e, "the JWKS: no usable key (RSA 2048..4096, EC P-256)");
		ciid_jwks_free(out);
		goto out;
	}
	e = FLEET_OK;
out:
	json_decref(root);
	ERR_clear_error();
	return e;
}

/* ---- the cache ----------------------------------------------------------- */

fleet_err ciid_src_init(struct ciid_jwks_src *s, const char *file, const char *url,
			struct fleet_errctx *ec)
{
	memset(s, 0, sizeof(*s));
	if (pthread_rwlock_init(&s->mu, NULL))
		return fleet_errctx_msg(ec, FLEET_E_NOMEM, "a JWKS: no lock");
	if (pthread_mutex_init(&s->fetch_mu, NULL)) {
		pthread_rwlock_destroy(&s->mu);
		return fleet_errctx_msg(ec, FLEET_E_NOMEM, "a JWKS: no mutex");
	}
	s->inited = true;
	if ((file && !(s->file = strdup(file))) || (url && !(s->url = strdup(url))))
		return fleet_errctx_msg(ec, FLEET_E_NOMEM, "a JWKS: out of memory");
	return FLEET_OK;
}

void ciid_src_free(struct ciid_jwks_src *s)
{
	if (!s->inited)
		return;
	ciid_jwks_free(&s->cur);
	free(s->file);
	free(s->url);
	pthread_rwlock_destroy(&s->mu);
	pthread_mutex_destroy(&s->fetch_mu);
	s->inited = false;
}

/* Swap in a new key set; the old one is freed once no verify holds it. */
static void install(struct ciid_jwks_src *s, struct ciid_jwks *k)
{
	pthread_rwlock_wrlock(&s->mu);
	struct ciid_jwks old = s->cur;
	s->cur = *k;
	pthread_rwlock_unlock(&s->mu);
	ciid_jwks_free(&old);
	memset(k, 0, sizeof(*k));
}

static bool has_kid(struct ciid_jwks_src *s, const char *kid, size_t *n)
{
	bool found = false;
	pthread_rwlock_rdlock(&s->mu);
	*n = s->cur.n;
	for (size_t i = 0; kid && i < s->cur.n && !found; i++)
		found = !strcmp(s->cur.keys[i].kid, kid);
	pthread_rwlock_unlock(&s->mu);
	return found;
}

EVP_PKEY *ciid_src_key_lock(struct ciid_jwks_src *s, const char *kid, bool *ec_key)
{
	pthread_rwlock_rdlock(&s->mu);
	for (size_t i = 0; i < s->cur.n; i++)
		if (!strcmp(s->cur.keys[i].kid, kid)) {
			*ec_key = s->cur.keys[i].ec;
			return s->cur.keys[i].pkey;
		}
	pthread_rwlock_unlock(&s->mu);
	return NULL;
}

void ciid_src_key_unlock(struct ciid_jwks_src *s)
{
	pthread_rwlock_unlock(&s->mu);
}

static fleet_err refresh_file(struct ciid_jwks_src *s, struct fleet_errctx *ec)
{
	static const struct fleet_file_policy policy =
		FLEET_FILE_POLICY_CONFIG("the JWKS file", CIID_MAX_JWKS);
	struct fleet_file f;
	struct fleet_buf b;
	struct ciid_jwks k;
	fleet_err e = fleet_file_open(AT_FDCWD, s->file, &policy, &f, ec);
	if (e)
		return fleet_errctx_wrap(ec, e, "cannot read ", NULL);
	/* The mtime of the descriptor read, so a file replaced between the
	 * stat and the read is read again next time. */
	if (s->cur.n && f.st.st_mtim.tv_sec == s->mtime.tv_sec &&
	    f.st.st_mtim.tv_nsec == s->mtime.tv_nsec) {
		fleet_file_close(&f);
		return FLEET_OK;
	}
	fb_init(&b);
	e = fleet_file_read_open(&f, &b, ec);
	struct timespec mt = f.st.st_mtim;
	fleet_file_close(&f);
	if (!e && !(e = ciid_jwks_parse(b.data, b.len, &k, ec))) {
		install(s, &k);
		s->mtime = mt;
	}
	fb_free(&b);
	return e;
}

/* The URL's scheme: https, or http to 127.0.0.1 only (a local JWKS
 * server, the tests'): a JWKS over plain HTTP from anywhere else would
 * let the network choose the keys. */
static const char *url_protocol(const char *url)
{
	if (!strncmp(url, "https://", 8))
		return "https";
	if (!strncmp(url, "http://127.0.0.1:", 17) || !strncmp(url, "http://127.0.0.1/", 17))
		return "http";
	return NULL;
}

bool ciid_url_ok(const char *url)
{
	return url_protocol(url) != NULL;
}

static size_t on_body(char *p, size_t sz, size_t n, void *arg)
{
	struct fleet_buf *b = arg;
	/* The capped buffer refuses past CIID_MAX_JWKS: 0 stops the transfer. */
	if (fb_put(b, p, sz * n))
		return 0;
	return sz * n;
}

static fleet_err fetch(const char *url, struct fleet_buf *b, struct fleet_errctx *ec)
{
	const char *proto = url_protocol(url);
	long code = 0;
	CURLcode rc;
	CURL *c;
	if (!proto)
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG, "jwks_url: not https");
	if (!(c = curl_easy_init()))
		return fleet_errctx_msg(ec, FLEET_E_NOMEM, "jwks_url: curl_easy_init");
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, proto);
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L); /* several threads */
	curl_easy_setopt(c, CURLOPT_TIMEOUT, FETCH_TIMEOUT);
	curl_easy_setopt(c, CURLOPT_MAXFILESIZE, (long)CIID_MAX_JWKS);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, b);
	rc = curl_easy_perform(c);
	if (rc == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(c);
	if (rc != CURLE_OK)
		return fleet_errctx_msg(ec, FLEET_E_IO, "jwks_url: %s", curl_easy_strerror(rc));
	if (code != 200)
		return fleet_errctx_msg(ec, FLEET_E_IO, "jwks_url: HTTP status %ld", code);
	return FLEET_OK;
}

static fleet_err refresh_url(struct ciid_jwks_src *s, const char *kid, struct fleet_errctx *ec)
{
	time_t now = time(NULL);
	size_t n;
	bool known = has_kid(s, kid, &n);
	/* Decided under fetch_mu, so a burst of joins with one new kid
	 * fetches once: the second finds the first's keys or its miss_at. */
	bool stale = n == 0 || now - s->fetched_at >= CIID_JWKS_TTL;
	bool miss = kid && !known && now - s->miss_at >= CIID_JWKS_MISS_INTERVAL;
	if (!stale && !miss)
		return FLEET_OK;
	if (!stale)
		s->miss_at = now;
	struct fleet_buf b;
	struct ciid_jwks k;
	fb_init_capped(&b, CIID_MAX_JWKS);
	fleet_err e = fetch(s->url, &b, ec);
	if (!e && !(e = ciid_jwks_parse(b.data, b.len, &k, ec))) {
		install(s, &k);
		s->fetched_at = now;
		s->fetches++;
	}
	fb_free(&b);
	/* A refetch for an unknown kid that failed leaves a fresh cache in
	 * use: verify refuses the token cloud-iid-key. A cache past its
	 * hour that could not be refreshed answers 503 (the machine
	 * retries): keys a provider has since revoked are not used. */
	if (e && !stale)
		return FLEET_OK;
	return e;
}

fleet_err ciid_src_refresh(struct ciid_jwks_src *s, const char *kid, struct fleet_errctx *ec)
{
	fleet_err e;
	pthread_mutex_lock(&s->fetch_mu);
	e = s->file ? refresh_file(s, ec) : refresh_url(s, kid, ec);
	pthread_mutex_unlock(&s->fetch_mu);
	return e;
}

/* ---- JWS ----------------------------------------------------------------- */

void ciid_jws_free(struct ciid_jws *j)
{
	json_decref(j->payload);
	free(j->sig);
	free(j->payload_raw);
	memset(j, 0, sizeof(*j));
}

static fleet_err header(const uint8_t *p, size_t n, struct ciid_jws *out)
{
	static const char *const keys[] = {"alg", "kid", "typ", NULL};
	json_error_t jerr;
	fleet_err e = FLEET_E_MALFORMED;
	json_t *h = json_loadb((const char *)p, n, JSON_REJECT_DUPLICATES, &jerr);
	const char *alg, *kid, *typ;
	if (!h || !json_is_object(h) || wj_keys(h, keys, "header", NULL))
		goto out;
	alg = str_member(h, "alg");
	kid = str_member(h, "kid");
	typ = str_member(h, "typ");
	if (!alg || strlen(alg) >= sizeof(out->alg) || !kid || !kid[0] ||
	    strlen(kid) >= sizeof(out->kid) || !wj_text_ok(kid, strlen(kid)) ||
	    (json_object_get(h, "typ") && (!typ || strcmp(typ, "JWT"))))
		goto out;
	snprintf(out->alg, sizeof(out->alg), "%s", alg);
	snprintf(out->kid, sizeof(out->kid), "%s", kid);
	e = FLEET_OK;
out:
	json_decref(h);
	return e;
}

fleet_err ciid_jws_decode(const char *tok, size_t len, struct ciid_jws *out, const char **reason)
{
	struct fleet_wire_bytes h = {0}, p = {0}, s = {0};
	const char *d1, *d2;
	memset(out, 0, sizeof(*out));
	*reason = "cloud-iid-malformed";
	if (len > CIID_MAX_JWT || !(d1 = memchr(tok, '.', len)) ||
	    !(d2 = memchr(d1 + 1, '.', len - (size_t)(d1 + 1 - tok))) ||
	    memchr(d2 + 1, '.', len - (size_t)(d2 + 1 - tok)))
		return FLEET_OK;
	size_t hl = (size_t)(d1 - tok), pl = (size_t)(d2 - d1 - 1), sl = len - (size_t)(d2 + 1 - tok);
	if (!hl || !pl || fleet_b64url_decode(tok, hl, JWS_MAX_HEADER, &h) ||
	    fleet_b64url_decode(d1 + 1, pl, CIID_MAX_JWT, &p) ||
	    fleet_b64url_decode(d2 + 1, sl, JWS_MAX_SIG, &s) || header(h.data, h.len, out)) {
		free(h.data);
		free(p.data);
		free(s.data);
		memset(out, 0, sizeof(*out));
		return FLEET_OK;
	}
	free(h.data);
	out->input = tok;
	out->input_len = (size_t)(d2 - tok);
	out->payload_raw = p.data;
	out->payload_len = p.len;
	out->sig = s.data;
	out->sig_len = s.len;
	*reason = NULL;
	return FLEET_OK;
}

static bool rs256_ok(EVP_PKEY *pk, const struct ciid_jws *j)
{
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	EVP_PKEY_CTX *pctx = NULL;
	bool ok = md && j->sig_len == (size_t)EVP_PKEY_get_size(pk) &&
		  EVP_DigestVerifyInit(md, &pctx, EVP_sha256(), NULL, pk) == 1 &&
		  EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PADDING) == 1 &&
		  EVP_DigestVerify(md, j->sig, j->sig_len, (const unsigned char *)j->input,
				   j->input_len) == 1;
	EVP_MD_CTX_free(md);
	return ok;
}

fleet_err ciid_jws_verify(struct ciid_jws *j, struct ciid_jwks_src *src, const char **reason)
{
	bool is_ec = false, want_ec;
	json_error_t jerr;
	EVP_PKEY *pk;
	bool ok;
	/* Only the two algorithms Google signs with: "none" has no
	 * signature at all and HS256 would take the public key as an HMAC
	 * secret anyone can read. */
	if (!strcmp(j->alg, "RS256"))
		want_ec = false;
	else if (!strcmp(j->alg, "ES256"))
		want_ec = true;
	else
		return *reason = "cloud-iid-alg", FLEET_OK;
	/* The key is the provider's, by kid, and of the header's algorithm:
	 * never one the token carries. */
	if (!(pk = ciid_src_key_lock(src, j->kid, &is_ec)))
		return *reason = "cloud-iid-key", FLEET_OK;
	if (is_ec != want_ec) {
		ciid_src_key_unlock(src);
		return *reason = "cloud-iid-key", FLEET_OK;
	}
	if (want_ec)
		ok = j->sig_len == FLEET_ES256_SIG_LEN &&
		     fleet_es256_verify(pk, (const uint8_t *)j->input, j->input_len, j->sig, NULL) ==
			     FLEET_OK;
	else
		ok = rs256_ok(pk, j);
	ciid_src_key_unlock(src);
	ERR_clear_error();
	if (!ok)
		return *reason = "cloud-iid-signature", FLEET_OK;
	j->payload = json_loadb((const char *)j->payload_raw, j->payload_len,
				JSON_REJECT_DUPLICATES, &jerr);
	if (!j->payload || !json_is_object(j->payload))
		return *reason = "cloud-iid-malformed", FLEET_OK;
	*reason = NULL;
	return FLEET_OK;
}
