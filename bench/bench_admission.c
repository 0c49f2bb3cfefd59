/*
 * bench_admission: the crypto floor of one HookOS admission, timed
 * in-process with OpenSSL on the very keys and certificates bench/admission
 * ran with (docs/benchmark.md, "One admission").
 *
 *   bench_admission floor --ek-rsa DER --ek-ecc DER --roots DIR --ca-cert PEM
 *                         --tls-cert PEM [--seconds S]
 *
 * Every operation is timed alone in CPU time (CLOCK_PROCESS_CPUTIME_ID, as
 * fleetd's cost is read from /proc/<pid>/stat), on one thread, for S/8
 * seconds each. It prints key=value lines:
 *   op_<name>_us          CPU microseconds of one operation
 *   op_<name>_count       how many one admission performs on the server
 *   floor_admission_us    sum of count * us: what no server can skip
 *   floor_healthz_us      one TLS handshake (an HTTPS request on a new
 *                         connection)
 * The operations and where fleetd performs them:
 *   ecdsa_p256_verify     the LDevID's TPM2_Certify (intake), the quote
 *                         (answer), the confirm signature: 3
 *   ek_chain_verify_N     each signature of each EK's chain up to its root,
 *                         the root's self-signature excepted (OpenSSL skips
 *                         it): one line per link, each counted once
 *   rsa_oaep_encrypt      MakeCredential to the RSA EK: 1
 *   ecdh_p384             MakeCredential to the ECC EK: an ephemeral key
 *                         and one derive (the EK's curve): 1
 *   cert_sign             the LAK's and the LDevID's certificates, with the
 *                         identity CA's key type: 2
 *   tls_sign              TLS 1.3 CertificateVerify with fleetd's key: 1
 *   tls_x25519            the ephemeral ECDHE share and its derive: 1
 * One TLS handshake per admission: the three rounds can share a connection,
 * so the second and third handshakes are not part of the floor.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

static double seconds_per_op = 0.25;

static void die(const char *what)
{
	fprintf(stderr, "bench_admission: %s\n", what);
	exit(1);
}

static double cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

typedef void (*op_fn)(void *arg);

/* CPU microseconds per call of fn, over about seconds_per_op. */
static double time_op(op_fn fn, void *arg)
{
	unsigned long n = 0, batch = 1;
	fn(arg); /* warm */
	double t0 = cpu_s(), t;
	do {
		for (unsigned long i = 0; i < batch; i++)
			fn(arg);
		n += batch;
		if (batch < 64)
			batch *= 2;
		t = cpu_s() - t0;
	} while (t < seconds_per_op);
	return t * 1e6 / (double)n;
}

static double floor_us, healthz_us;

static void report(const char *name, double us, unsigned count, int healthz)
{
	printf("op_%s_us=%.1f\nop_%s_count=%u\n", name, us, name, count);
	floor_us += us * count;
	if (healthz)
		healthz_us += us;
}

static EVP_PKEY *keygen_ec(const char *curve)
{
	EVP_PKEY *k = EVP_EC_gen(curve);
	if (!k)
		die("EC key generation failed");
	return k;
}

/* ECDSA sign and verify over a SHA-256 digest. */
struct sigop {
	EVP_PKEY_CTX *ctx;
	unsigned char dgst[32], sig[1024];
	size_t siglen;
};

static void do_verify(void *arg)
{
	struct sigop *s = arg;
	if (EVP_PKEY_verify(s->ctx, s->sig, s->siglen, s->dgst, sizeof(s->dgst)) != 1)
		die("verify failed");
}

static void do_sign(void *arg)
{
	struct sigop *s = arg;
	size_t len = sizeof(s->sig);
	if (EVP_PKEY_sign(s->ctx, s->sig, &len, s->dgst, sizeof(s->dgst)) != 1)
		die("sign failed");
}

static double sign_us(EVP_PKEY *k)
{
	struct sigop s = {0};
	memset(s.dgst, 0x5a, sizeof(s.dgst));
	s.ctx = EVP_PKEY_CTX_new(k, NULL);
	if (!s.ctx || EVP_PKEY_sign_init(s.ctx) != 1)
		die("sign init");
	if (EVP_PKEY_get_base_id(k) == EVP_PKEY_RSA &&
	    (EVP_PKEY_CTX_set_rsa_padding(s.ctx, RSA_PKCS1_PADDING) != 1 ||
	     EVP_PKEY_CTX_set_signature_md(s.ctx, EVP_sha256()) != 1))
		die("rsa sign init");
	double us = time_op(do_sign, &s);
	EVP_PKEY_CTX_free(s.ctx);
	return us;
}

static double ecdsa_verify_us(const char *curve)
{
	EVP_PKEY *k = keygen_ec(curve);
	struct sigop s = {0};
	memset(s.dgst, 0xa5, sizeof(s.dgst));
	s.ctx = EVP_PKEY_CTX_new(k, NULL);
	if (!s.ctx || EVP_PKEY_sign_init(s.ctx) != 1)
		die("sign init");
	s.siglen = sizeof(s.sig);
	if (EVP_PKEY_sign(s.ctx, s.sig, &s.siglen, s.dgst, sizeof(s.dgst)) != 1 ||
	    EVP_PKEY_verify_init(s.ctx) != 1)
		die("sign");
	double us = time_op(do_verify, &s);
	EVP_PKEY_CTX_free(s.ctx);
	EVP_PKEY_free(k);
	return us;
}

/* An ephemeral key on the peer's curve and one derive: MakeCredential's
 * and ECDHE's work. */
struct ecdh {
	const char *group;
	EVP_PKEY *peer;
};

static void do_ecdh(void *arg)
{
	struct ecdh *e = arg;
	EVP_PKEY *eph = strcmp(e->group, "X25519") == 0 ? EVP_PKEY_Q_keygen(NULL, NULL, "X25519")
							: EVP_EC_gen(e->group);
	EVP_PKEY_CTX *c = eph ? EVP_PKEY_CTX_new(eph, NULL) : NULL;
	unsigned char z[128];
	size_t zlen = sizeof(z);
	/* The peer is not validated again (validate_peer 0), as fleetd's
	 * MakeCredential does not: the on-curve check is the part no server can
	 * skip, and it costs microseconds; the order check n*Q proves nothing
	 * on a cofactor-1 curve (lib/tpm_credential.c, ecc_seed). */
	if (!c || EVP_PKEY_derive_init(c) != 1 || EVP_PKEY_derive_set_peer_ex(c, e->peer, 0) != 1 ||
	    EVP_PKEY_derive(c, z, &zlen) != 1)
		die("derive failed");
	EVP_PKEY_CTX_free(c);
	EVP_PKEY_free(eph);
}

static double ecdh_us(const char *group)
{
	struct ecdh e = {.group = group};
	e.peer = strcmp(group, "X25519") == 0 ? EVP_PKEY_Q_keygen(NULL, NULL, "X25519")
					      : keygen_ec(group);
	if (!e.peer)
		die("peer key");
	double us = time_op(do_ecdh, &e);
	EVP_PKEY_free(e.peer);
	return us;
}

/* RSA-OAEP (SHA-256, the TPM's nameAlg) of a 32-byte seed to the EK's size. */
struct oaep {
	EVP_PKEY_CTX *ctx;
};

static void do_oaep(void *arg)
{
	struct oaep *o = arg;
	unsigned char in[32] = {1}, out[1024];
	size_t len = sizeof(out);
	if (EVP_PKEY_encrypt(o->ctx, out, &len, in, sizeof(in)) != 1)
		die("oaep failed");
}

static double oaep_us(unsigned bits)
{
	EVP_PKEY *k = EVP_RSA_gen(bits);
	struct oaep o = {0};
	if (!k || !(o.ctx = EVP_PKEY_CTX_new(k, NULL)) || EVP_PKEY_encrypt_init(o.ctx) != 1 ||
	    EVP_PKEY_CTX_set_rsa_padding(o.ctx, RSA_PKCS1_OAEP_PADDING) != 1 ||
	    EVP_PKEY_CTX_set_rsa_oaep_md(o.ctx, EVP_sha256()) != 1)
		die("oaep init");
	double us = time_op(do_oaep, &o);
	EVP_PKEY_CTX_free(o.ctx);
	EVP_PKEY_free(k);
	return us;
}

/* X509_verify of one certificate with its issuer's key. */
struct xv {
	X509 *cert;
	EVP_PKEY *key;
};

static void do_x509_verify(void *arg)
{
	struct xv *v = arg;
	if (X509_verify(v->cert, v->key) != 1)
		die("certificate signature failed");
}

static X509 *load_cert(const char *path)
{
	FILE *f = fopen(path, "rb");
	X509 *x = NULL;
	if (!f) {
		fprintf(stderr, "bench_admission: cannot open %s\n", path);
		exit(1);
	}
	x = PEM_read_X509(f, NULL, NULL, NULL);
	if (!x) {
		rewind(f);
		x = d2i_X509_fp(f, NULL);
	}
	fclose(f);
	if (!x) {
		fprintf(stderr, "bench_admission: %s is no certificate\n", path);
		exit(1);
	}
	return x;
}

#define MAX_ROOTS 16
static X509 *roots[MAX_ROOTS];
static size_t n_roots;

static void load_roots(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char path[2048];
	if (!d)
		die("cannot open the roots directory");
	while ((de = readdir(d)) != NULL && n_roots < MAX_ROOTS) {
		size_t l = strlen(de->d_name);
		if (l < 5 || strcmp(de->d_name + l - 4, ".pem") != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		roots[n_roots++] = load_cert(path);
	}
	closedir(d);
}

static unsigned chain_links;

/* Each signature from cert up to a self-signed root, the root's own
 * excepted. */
static void chain(X509 *cert, const char *label)
{
	char name[64];
	for (int depth = 0; depth < 8; depth++) {
		if (X509_check_issued(cert, cert) == X509_V_OK)
			return; /* self-signed: OpenSSL does not check it */
		X509 *issuer = NULL;
		for (size_t i = 0; i < n_roots && !issuer; i++)
			if (X509_check_issued(roots[i], cert) == X509_V_OK)
				issuer = roots[i];
		if (!issuer)
			die("an EK certificate does not chain to the roots");
		struct xv v = {.cert = cert, .key = X509_get0_pubkey(issuer)};
		if (!v.key)
			die("an issuer's key is unreadable");
		snprintf(name, sizeof(name), "ek_chain_verify_%s_%d_%s", label, depth,
			 EVP_PKEY_get0_type_name(v.key));
		report(name, time_op(do_x509_verify, &v), 1, 0);
		chain_links++;
		cert = issuer;
	}
}

static const char *curve_of(EVP_PKEY *k, char *buf, size_t cap)
{
	size_t len = 0;
	if (EVP_PKEY_get_utf8_string_param(k, OSSL_PKEY_PARAM_GROUP_NAME, buf, cap, &len) != 1)
		die("no curve name");
	return buf;
}

/* A key of the same type as cert's (the private key itself stays where it
 * is: the cost of a signature is the key type's). */
static EVP_PKEY *key_like(X509 *cert)
{
	EVP_PKEY *pub = X509_get0_pubkey(cert);
	char curve[64];
	if (!pub)
		die("unreadable certificate key");
	if (EVP_PKEY_get_base_id(pub) == EVP_PKEY_EC)
		return keygen_ec(curve_of(pub, curve, sizeof(curve)));
	if (EVP_PKEY_get_base_id(pub) == EVP_PKEY_RSA)
		return EVP_RSA_gen((unsigned)EVP_PKEY_get_bits(pub));
	if (EVP_PKEY_get_base_id(pub) == EVP_PKEY_ED25519)
		return EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
	die("certificate key type not benchmarked");
	return NULL;
}

static double sign_like_us(X509 *cert, char *desc, size_t cap)
{
	EVP_PKEY *k = key_like(cert);
	char curve[64] = "";
	if (EVP_PKEY_get_base_id(k) == EVP_PKEY_EC)
		curve_of(k, curve, sizeof(curve));
	snprintf(desc, cap, "%s%s%s", EVP_PKEY_get0_type_name(k), curve[0] ? "-" : "", curve);
	double us;
	if (EVP_PKEY_get_base_id(k) == EVP_PKEY_ED25519) {
		/* Ed25519 signs the message, not a digest: time it whole. */
		EVP_MD_CTX *m = EVP_MD_CTX_new();
		unsigned char sig[64], msg[512] = {0};
		size_t len;
		double t0 = cpu_s();
		unsigned long n = 0;
		do {
			len = sizeof(sig);
			if (!m || EVP_DigestSignInit(m, NULL, NULL, NULL, k) != 1 ||
			    EVP_DigestSign(m, sig, &len, msg, sizeof(msg)) != 1)
				die("ed25519 sign");
			n++;
		} while (cpu_s() - t0 < seconds_per_op);
		us = (cpu_s() - t0) * 1e6 / (double)n;
		EVP_MD_CTX_free(m);
	} else {
		us = sign_us(k);
	}
	EVP_PKEY_free(k);
	return us;
}

int main(int argc, char **argv)
{
	const char *ek_rsa = NULL, *ek_ecc = NULL, *roots_dir = NULL, *ca_cert = NULL,
		   *tls_cert = NULL;
	double seconds = 2;
	char desc[96];

	if (argc < 2 || strcmp(argv[1], "floor") != 0)
		die("usage: bench_admission floor --ek-rsa DER --ek-ecc DER --roots DIR "
		    "--ca-cert PEM --tls-cert PEM [--seconds S]");
	for (int i = 2; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--ek-rsa"))
			ek_rsa = argv[i + 1];
		else if (!strcmp(argv[i], "--ek-ecc"))
			ek_ecc = argv[i + 1];
		else if (!strcmp(argv[i], "--roots"))
			roots_dir = argv[i + 1];
		else if (!strcmp(argv[i], "--ca-cert"))
			ca_cert = argv[i + 1];
		else if (!strcmp(argv[i], "--tls-cert"))
			tls_cert = argv[i + 1];
		else if (!strcmp(argv[i], "--seconds"))
			seconds = atof(argv[i + 1]);
		else
			die("unknown option");
	}
	if (!ek_rsa || !roots_dir || !ca_cert || !tls_cert)
		die("--ek-rsa, --roots, --ca-cert and --tls-cert are required");
	if (seconds > 0)
		seconds_per_op = seconds / 8;

	report("ecdsa_p256_verify", ecdsa_verify_us("P-256"), 3, 0);
	load_roots(roots_dir);
	X509 *rsa = load_cert(ek_rsa);
	chain(rsa, "rsa");
	/* The RSA EK's SPKI may carry the rsaesOaep OID OpenSSL cannot
	 * read (lib/x509_ek.c): TPM EKs are 2048-bit then. */
	EVP_PKEY *rk = X509_get0_pubkey(rsa);
	unsigned bits = rk ? (unsigned)EVP_PKEY_get_bits(rk) : 2048;
	snprintf(desc, sizeof(desc), "rsa_oaep_encrypt_%u", bits);
	report(desc, oaep_us(bits), 1, 0);
	if (ek_ecc) {
		X509 *ecc = load_cert(ek_ecc);
		char curve[64];
		EVP_PKEY *ek = X509_get0_pubkey(ecc);
		if (!ek)
			die("the ECC EK certificate's key is unreadable");
		curve_of(ek, curve, sizeof(curve));
		chain(ecc, "ecc");
		snprintf(desc, sizeof(desc), "ecdh_%s", curve);
		for (char *c = desc; *c; c++)
			if (*c == '-')
				*c = '_';
		report(desc, ecdh_us(curve), 1, 0);
		X509_free(ecc);
	}
	X509 *ca = load_cert(ca_cert);
	double us = sign_like_us(ca, desc, sizeof(desc));
	printf("cert_sign_key=%s\n", desc);
	report("cert_sign", us, 2, 0);
	X509 *tls = load_cert(tls_cert);
	us = sign_like_us(tls, desc, sizeof(desc));
	printf("tls_sign_key=%s\n", desc);
	report("tls_sign", us, 1, 1);
	report("tls_x25519", ecdh_us("X25519"), 1, 1);
	printf("floor_ek_chain_links=%u\n", chain_links);
	printf("floor_admission_us=%.1f\nfloor_healthz_us=%.1f\n", floor_us, healthz_us);
	X509_free(rsa);
	X509_free(ca);
	X509_free(tls);
	for (size_t i = 0; i < n_roots; i++)
		X509_free(roots[i]);
	return 0;
}
