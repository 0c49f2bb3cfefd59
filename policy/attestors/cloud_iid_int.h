/*
 * cloud_iid_int.h: what the cloud-iid attestor's files share (internal to
 * fleetattestors; the interface is cloud_iid.h).
 *
 *   cloud_iid.c         the evidence, the checks every provider shares,
 *                       resolve, the use
 *   cloud_iid_jose.c    JWS compact parsing and verification, JWKS
 *                       parsing and its cache (file or URL)
 *   cloud_iid_aws.c     the EC2 identity document and its PKCS#7
 *   cloud_iid_config.c  the YAML file
 */
#ifndef FLEET_POLICY_CLOUD_IID_INT_H
#define FLEET_POLICY_CLOUD_IID_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

#include "policy/attestors/cloud_iid.h"

/* Caps on untrusted bytes. */
#define CIID_MAX_JWT (16u * 1024)      /* a JWT compact serialization */
#define CIID_MAX_DOCUMENT (8u * 1024)  /* an AWS identity document */
#define CIID_MAX_PKCS7 (16u * 1024)    /* its PKCS#7, as base64 text */
#define CIID_MAX_JWKS (64u * 1024)     /* a JWKS, file or URL */
#define CIID_MAX_ID 255                /* an account, an instance */
#define CIID_MAX_NAME 63               /* a provider id */
#define CIID_CLOCK_SKEW 60
#define CIID_JWKS_TTL 3600             /* a fetched JWKS is fresh this long */
#define CIID_JWKS_MISS_INTERVAL 300    /* an unknown kid refetches at most this often */

enum ciid_type { CIID_GCP = 1, CIID_AWS, CIID_OIDC };

/* ---- JWKS (cloud_iid_jose.c) ------------------------------------------- */

struct ciid_key {
	char kid[129];
	bool ec; /* P-256 (ES256); else RSA (RS256) */
	EVP_PKEY *pkey;
};

struct ciid_jwks {
	struct ciid_key *keys;
	size_t n;
};

/* A provider's key source and its cache. mu guards cur: verify reads the
 * keys from several threads while a prepare may replace them; fetch_mu
 * serializes the refreshes and guards the rest. */
struct ciid_jwks_src {
	char *file; /* jwks_file, or NULL */
	char *url;  /* jwks_url, or NULL */
	pthread_rwlock_t mu;      /* the keys */
	pthread_mutex_t fetch_mu; /* one refresh at a time (and what follows) */
	bool inited;
	struct ciid_jwks cur; /* n == 0: nothing loaded yet */
	struct timespec mtime; /* the file's, when read */
	time_t fetched_at;     /* the URL's last success (wall clock) */
	time_t miss_at;        /* the last refetch for an unknown kid */
	unsigned fetches;      /* successful URL fetches (tests) */
};

/* Parse a JWKS (at most CIID_MAX_JWKS bytes) into out: RSA 2048..4096
 * bits and EC P-256 keys; anything else skipped. FLEET_E_MALFORMED when
 * it is not a JWKS or holds no usable key. */
fleet_err ciid_jwks_parse(const uint8_t *buf, size_t len, struct ciid_jwks *out,
			  struct fleet_errctx *ec);
void ciid_jwks_free(struct ciid_jwks *k);

fleet_err ciid_src_init(struct ciid_jwks_src *s, const char *file, const char *url,
			struct fleet_errctx *ec);
void ciid_src_free(struct ciid_jwks_src *s);
/* prepare's half: re-read the file when its mtime changed; fetch the URL
 * when nothing is cached, the cache is over an hour old, or kid (may be
 * NULL) is not in it and no such refetch happened in 5 minutes. */
fleet_err ciid_src_refresh(struct ciid_jwks_src *s, const char *kid, struct fleet_errctx *ec);
/* https://, or http://127.0.0.1 only. */
bool ciid_url_ok(const char *url);
/* verify's half: the key kid names, with the cache held shared until
 * ciid_src_key_unlock; or NULL (and nothing held). */
EVP_PKEY *ciid_src_key_lock(struct ciid_jwks_src *s, const char *kid, bool *ec_key);
void ciid_src_key_unlock(struct ciid_jwks_src *s);

/* ---- JWS (cloud_iid_jose.c) -------------------------------------------- */

struct ciid_jws {
	char alg[16];
	char kid[129];
	json_t *payload; /* the claims object (after the signature is checked) */
	/* The signing input (header.payload) and the signature. */
	const char *input;
	size_t input_len;
	uint8_t *sig;
	size_t sig_len;
	uint8_t *payload_raw;
	size_t payload_len;
};

/* Split and decode a compact JWS (strict: three base64url parts without
 * padding, header one JSON object of alg, kid and typ only). A refusal is
 * "cloud-iid-malformed" in *reason. The claims are not parsed yet. */
fleet_err ciid_jws_decode(const char *tok, size_t len, struct ciid_jws *out,
			  const char **reason);
/* alg (RS256 | ES256), the key by kid, the signature, then the claims:
 * FLEET_OK with *reason NULL and j->payload set, or *reason the refusal. */
fleet_err ciid_jws_verify(struct ciid_jws *j, struct ciid_jwks_src *src, const char **reason);
void ciid_jws_free(struct ciid_jws *j);

/* ---- config (cloud_iid_config.c) --------------------------------------- */

struct ciid_cert {
	char region[64]; /* "*": the regions not listed */
	X509 *cert;
};

struct ciid_provider {
	char id[CIID_MAX_NAME + 1];
	enum ciid_type type;
	char *audience;
	struct ciid_jwks_src jwks; /* gcp, oidc */
	bool has_jwks;
	char **allow; /* projects (gcp) or accounts (aws, oidc); n_allow 0: all */
	size_t n_allow;
	char **issuers; /* oidc */
	size_t n_issuers;
	char *account_claim, *instance_claim; /* oidc */
	struct ciid_cert *certs;              /* aws */
	size_t n_certs;
	uint32_t max_age;
};

struct ciid_resolve {
	char provider[CIID_MAX_NAME + 1];
	char account[CIID_MAX_ID + 1];
	char instance[CIID_MAX_ID + 1]; /* "": any instance of the account */
	char pool[FLEET_STORE_POOL_ID_MAX + 1];
	char site[FLEET_STORE_POOL_ID_MAX + 1];
	char role[16];
};

struct fleet_cloud_iid_config {
	struct ciid_provider *providers;
	size_t n_providers;
	struct ciid_resolve *resolve;
	size_t n_resolve;
	char roles[3][16];
	size_t n_roles;
};

const struct ciid_provider *ciid_provider_find(const struct fleet_cloud_iid_config *c,
					       const char *id);

/* ---- who the machine is ------------------------------------------------ */

struct ciid_identity {
	char account[CIID_MAX_ID + 1];
	char instance[CIID_MAX_ID + 1];
};

/* The AWS provider: the document verified against its PKCS#7 and the
 * region's certificate, the age, the account allow-list; FLEET_OK with
 * *reason NULL and id filled, or *reason the refusal. */
fleet_err ciid_aws_verify(const struct ciid_provider *p, const char *doc, size_t doc_len,
			  const char *pkcs7, size_t pkcs7_len, int64_t now,
			  struct ciid_identity *id, const char **reason);

/* A string member s of 1..CIID_MAX_ID printable bytes into out. */
bool ciid_id_ok(const json_t *s, char out[CIID_MAX_ID + 1]);
/* name is in list (n entries). */
bool ciid_listed(char *const *list, size_t n, const char *name);

#endif
