/*
 * load_forger.c: the unproven traffic of the load and soak tests
 * (tests/load/README.md).
 *
 *   load_forger ek TCTI PREFIX
 *       Read a TPM's EK certificates and public areas, as anyone who can
 *       talk to the TPM (or saw one intake) can: PREFIX.rsa.pub,
 *       PREFIX.rsa.der, and PREFIX.ecc.pub, PREFIX.ecc.der when it has an
 *       ECC EK. The public areas are marshaled TPM2B_PUBLIC.
 *
 *   load_forger flood --port P --ca FILE --victims FILE --sources A,B,..
 *                     [--seconds S] [--stop-file F] [--rate R] [--burst B]
 *       One thread per source address (127.0.x.y), each sending forged
 *       intakes to https://127.0.0.1:P/v1/attest/intake as fast as the
 *       listener's per-source rate limit allows (a local token bucket of
 *       R a second, burst B: fleetd's defaults 5 and 20), until S seconds
 *       have passed or F exists. Each intake names a victim (the victims
 *       file: "SERIAL PORT PREFIX" per line, round robin), carries the
 *       victim's real, public EK certificates and public areas and its
 *       LLDP port, and a made-up AK: a fresh software P-256 key in the
 *       AK template, which "certifies" a fresh software LDevID key over
 *       the request. Every local proof fleetd can check at intake holds
 *       (I5), so these reach the inventory lookup and the session table;
 *       none can ever be answered (the credentials are wrapped to the
 *       victim's EKs). Prints one JSON line of counts at the end.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <tss2/tss2_mu.h>

#include "lib/attest_wire.h"
#include "lib/tpm.h"
#include "tests/e2e/http_client.h"
#include "tink-attest/tpm_client.h"

static int die(const char *what, const char *a)
{
	fprintf(stderr, "load_forger: %s%s\n", what, a);
	return 2;
}

/* ---- ek ----------------------------------------------------------------- */

static int write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(data, 1, len, f) != len) {
		if (f)
			fclose(f);
		return -1;
	}
	return fclose(f);
}

static int dump_ek(const struct tink_ek *ek, const char *prefix, const char *kind)
{
	char path[1024];
	uint8_t m[sizeof(TPM2B_PUBLIC)];
	size_t off = 0;
	if (Tss2_MU_TPM2B_PUBLIC_Marshal(&ek->pub, m, sizeof(m), &off) != TSS2_RC_SUCCESS)
		return -1;
	snprintf(path, sizeof(path), "%s.%s.pub", prefix, kind);
	if (write_file(path, m, off) != 0)
		return -1;
	snprintf(path, sizeof(path), "%s.%s.der", prefix, kind);
	return write_file(path, ek->cert.data, ek->cert.len);
}

static int cmd_ek(const char *tcti, const char *prefix)
{
	struct tink_tpm t;
	struct tink_ek rsa, ecc;
	memset(&rsa, 0, sizeof(rsa));
	memset(&ecc, 0, sizeof(ecc));
	if (tink_tpm_open(&t, tcti) != 0)
		return die("cannot open the TPM at ", tcti);
	int rc = 0;
	if (tink_tpm_read_ek_rsa(&t, &rsa) != 0 || !rsa.present || dump_ek(&rsa, prefix, "rsa") != 0)
		rc = die("no RSA EK read from ", tcti);
	else if (tink_tpm_read_ek_ecc(&t, &ecc) != 0 ||
		 (ecc.present && dump_ek(&ecc, prefix, "ecc") != 0))
		rc = die("the ECC EK could not be read from ", tcti);
	tink_ek_free(&rsa);
	tink_ek_free(&ecc);
	tink_tpm_close(&t);
	return rc;
}

/* ---- flood -------------------------------------------------------------- */

struct victim {
	char serial[FLEET_WIRE_MAX_SERIAL + 1];
	char port[FLEET_WIRE_MAX_LLDP_FIELD + 1];
	struct fleet_buf rsa_pub, rsa_der, ecc_pub, ecc_der;
	bool has_ecc;
};

static struct victim *victims;
static size_t n_victims;
static uint16_t fleetd_port;
static const char *ca_file, *stop_file;
static double deadline_s, rate = 5, burst = 20;
static volatile sig_atomic_t stopping;

struct counts {
	unsigned long sent, challenge, refused, pending, too_many, busy, other, failed, local;
};

struct source {
	pthread_t th;
	char addr[48];
	struct counts c;
};

static int read_all(const char *path, struct fleet_buf *b)
{
	char buf[4096];
	size_t n;
	FILE *f = fopen(path, "rb");
	fb_init(b);
	if (!f)
		return -1;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		fb_put(b, buf, n);
	fclose(f);
	return fb_err(b) == FLEET_OK && b->len ? 0 : -1;
}

static int load_victims(const char *path)
{
	FILE *f = fopen(path, "r");
	char line[2048], serial[FLEET_WIRE_MAX_SERIAL + 1], port[FLEET_WIRE_MAX_LLDP_FIELD + 1],
	    prefix[1500], p[1600];
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%64s %255s %1499s", serial, port, prefix) != 3)
			continue;
		struct victim *nv = realloc(victims, (n_victims + 1) * sizeof(*victims));
		if (!nv)
			return -1;
		victims = nv;
		struct victim *v = &victims[n_victims];
		memset(v, 0, sizeof(*v));
		snprintf(v->serial, sizeof(v->serial), "%s", serial);
		snprintf(v->port, sizeof(v->port), "%s", port);
		snprintf(p, sizeof(p), "%s.rsa.pub", prefix);
		if (read_all(p, &v->rsa_pub) != 0)
			return -1;
		snprintf(p, sizeof(p), "%s.rsa.der", prefix);
		if (read_all(p, &v->rsa_der) != 0)
			return -1;
		snprintf(p, sizeof(p), "%s.ecc.pub", prefix);
		if (read_all(p, &v->ecc_pub) == 0) {
			snprintf(p, sizeof(p), "%s.ecc.der", prefix);
			if (read_all(p, &v->ecc_der) != 0)
				return -1;
			v->has_ecc = true;
		}
		n_victims++;
	}
	fclose(f);
	return n_victims ? 0 : -1;
}

/* A fresh P-256 key in template tpl (its unique the key's point). */
static EVP_PKEY *soft_key(TPM2B_PUBLIC *tpl)
{
	EVP_PKEY *k = EVP_EC_gen("P-256");
	BIGNUM *x = NULL, *y = NULL;
	if (!k)
		return NULL;
	if (!EVP_PKEY_get_bn_param(k, OSSL_PKEY_PARAM_EC_PUB_X, &x) ||
	    !EVP_PKEY_get_bn_param(k, OSSL_PKEY_PARAM_EC_PUB_Y, &y) ||
	    BN_bn2binpad(x, tpl->publicArea.unique.ecc.x.buffer, 32) != 32 ||
	    BN_bn2binpad(y, tpl->publicArea.unique.ecc.y.buffer, 32) != 32) {
		EVP_PKEY_free(k);
		k = NULL;
	}
	tpl->publicArea.unique.ecc.x.size = 32;
	tpl->publicArea.unique.ecc.y.size = 32;
	BN_free(x);
	BN_free(y);
	return k;
}

static int put_public(const TPM2B_PUBLIC *p, struct fleet_buf *out)
{
	uint8_t m[sizeof(TPM2B_PUBLIC)];
	size_t off = 0;
	if (Tss2_MU_TPM2B_PUBLIC_Marshal(p, m, sizeof(m), &off) != TSS2_RC_SUCCESS)
		return -1;
	return fb_put(out, m, off) == FLEET_OK ? 0 : -1;
}

/* TPMT_SIGNATURE (ECDSA, SHA-256) of msg by k. */
static int tpm_sign(EVP_PKEY *k, const uint8_t *msg, size_t len, struct fleet_buf *out)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned char der[128];
	size_t dlen = sizeof(der);
	int rc = -1;
	if (!ctx || EVP_DigestSignInit(ctx, NULL, EVP_sha256(), NULL, k) != 1 ||
	    EVP_DigestSign(ctx, der, &dlen, msg, len) != 1)
		goto out;
	const unsigned char *pd = der;
	ECDSA_SIG *s = d2i_ECDSA_SIG(NULL, &pd, (long)dlen);
	if (!s)
		goto out;
	TPMT_SIGNATURE sig;
	memset(&sig, 0, sizeof(sig));
	sig.sigAlg = TPM2_ALG_ECDSA;
	sig.signature.ecdsa.hash = TPM2_ALG_SHA256;
	sig.signature.ecdsa.signatureR.size = 32;
	sig.signature.ecdsa.signatureS.size = 32;
	if (BN_bn2binpad(ECDSA_SIG_get0_r(s), sig.signature.ecdsa.signatureR.buffer, 32) == 32 &&
	    BN_bn2binpad(ECDSA_SIG_get0_s(s), sig.signature.ecdsa.signatureS.buffer, 32) == 32) {
		uint8_t m[sizeof(TPMT_SIGNATURE)];
		size_t off = 0;
		if (Tss2_MU_TPMT_SIGNATURE_Marshal(&sig, m, sizeof(m), &off) == TSS2_RC_SUCCESS &&
		    fb_put(out, m, off) == FLEET_OK)
			rc = 0;
	}
	ECDSA_SIG_free(s);
out:
	EVP_MD_CTX_free(ctx);
	return rc;
}

static struct fleet_wire_bytes wb(const struct fleet_buf *b)
{
	struct fleet_wire_bytes w = {.data = b->data, .len = b->len};
	return w;
}

/* One forged intake for v into body. */
static int forge_intake(const struct victim *v, struct fleet_buf *body)
{
	TPM2B_PUBLIC ak = tink_key_template(TINK_KEY_AK), ld = tink_ldevid_template(0);
	EVP_PKEY *akk = soft_key(&ak), *ldk = soft_key(&ld);
	struct fleet_buf akm, ldm, req, att, sig, rep;
	struct fleet_ldevid_request lr;
	struct fleet_network_report nr;
	struct fleet_wire_intake in;
	uint8_t q[32], name[2 + 64];
	size_t name_len;
	int rc = -1;

	fb_init(&akm);
	fb_init(&ldm);
	fb_init(&req);
	fb_init(&att);
	fb_init(&sig);
	fb_init(&rep);
	if (!akk || !ldk || put_public(&ak, &akm) != 0 || put_public(&ld, &ldm) != 0)
		goto out;
	memset(&lr, 0, sizeof(lr));
	snprintf(lr.serial, sizeof(lr.serial), "%s", v->serial);
	if (fleet_tpm_public_spki_sha256(&ld.publicArea, lr.spki_sha256) != FLEET_OK ||
	    fleet_ldevid_request_encode(&lr, &req) != FLEET_OK)
		goto out;
	struct fleet_wire_bytes reqb = wb(&req);
	if (fleet_wire_certify_qualifier(&reqb, q) != FLEET_OK)
		goto out;

	TPMS_ATTEST a;
	memset(&a, 0, sizeof(a));
	a.magic = TPM2_GENERATED_VALUE;
	a.type = TPM2_ST_ATTEST_CERTIFY;
	if (fleet_tpm_name(&ak.publicArea, name, sizeof(name), &name_len) != FLEET_OK)
		goto out;
	a.qualifiedSigner.size = (UINT16)name_len;
	memcpy(a.qualifiedSigner.name, name, name_len);
	a.extraData.size = sizeof(q);
	memcpy(a.extraData.buffer, q, sizeof(q));
	RAND_bytes((unsigned char *)&a.clockInfo.clock, sizeof(a.clockInfo.clock));
	a.clockInfo.safe = 1;
	a.firmwareVersion = 0x2011000000000000ull;
	if (fleet_tpm_name(&ld.publicArea, name, sizeof(name), &name_len) != FLEET_OK)
		goto out;
	a.attested.certify.name.size = (UINT16)name_len;
	memcpy(a.attested.certify.name.name, name, name_len);
	a.attested.certify.qualifiedName = a.attested.certify.name;
	uint8_t am[sizeof(TPMS_ATTEST)];
	size_t off = 0;
	if (Tss2_MU_TPMS_ATTEST_Marshal(&a, am, sizeof(am), &off) != TSS2_RC_SUCCESS ||
	    fb_put(&att, am, off) != FLEET_OK || tpm_sign(akk, am, off, &sig) != 0)
		goto out;

	memset(&nr, 0, sizeof(nr));
	snprintf(nr.chassis_id, sizeof(nr.chassis_id), "aa:bb:cc:00:00:01");
	snprintf(nr.port_id, sizeof(nr.port_id), "%s", v->port);
	snprintf(nr.system_name, sizeof(nr.system_name), "leaf-1");
	if (fleet_network_report_encode(&nr, &rep) != FLEET_OK)
		goto out;

	memset(&in, 0, sizeof(in));
	snprintf(in.serial, sizeof(in.serial), "%s", v->serial);
	snprintf(in.product_uuid, sizeof(in.product_uuid), "4c4c4544-0000-1000-8000-000000000000");
	snprintf(in.bios_version, sizeof(in.bios_version), "fleetd-sim-1.0");
	in.n_macs = 1;
	snprintf(in.macs[0], sizeof(in.macs[0]), "52:54:00:ff:00:01");
	in.network_report = wb(&rep);
	in.ek_rsa.present = true;
	in.ek_rsa.pub = wb(&v->rsa_pub);
	in.ek_rsa.cert = wb(&v->rsa_der);
	if (v->has_ecc) {
		in.ek_ecc.present = true;
		in.ek_ecc.pub = wb(&v->ecc_pub);
		in.ek_ecc.cert = wb(&v->ecc_der);
	}
	in.ak_public = wb(&akm);
	in.ldevid_public = wb(&ldm);
	in.ldevid_request = wb(&req);
	in.ldevid_certify_attest = wb(&att);
	in.ldevid_certify_sig = wb(&sig);
	rc = fleet_wire_intake_encode(&in, body) == FLEET_OK ? 0 : -1;
out:
	EVP_PKEY_free(akk);
	EVP_PKEY_free(ldk);
	fb_free(&akm);
	fb_free(&ldm);
	fb_free(&req);
	fb_free(&att);
	fb_free(&sig);
	fb_free(&rep);
	return rc;
}

static bool should_stop(double now)
{
	if (stopping || (deadline_s > 0 && now >= deadline_s))
		return true;
	return stop_file && access(stop_file, F_OK) == 0;
}

static void *flood_source(void *arg)
{
	struct source *s = arg;
	struct http_client c;
	double tokens = burst, last = http_now_s();
	size_t next = 0;

	http_client_init(&c, fleetd_port, ca_file);
	snprintf(c.source, sizeof(c.source), "%s", s->addr);
	for (;;) {
		double now = http_now_s();
		if (should_stop(now))
			break;
		tokens += (now - last) * rate;
		if (tokens > burst)
			tokens = burst;
		last = now;
		if (tokens < 1) {
			usleep((useconds_t)((1 - tokens) / rate * 1e6) + 1000);
			continue;
		}
		tokens -= 1;
		struct fleet_buf body;
		fb_init_capped(&body, FLEET_WIRE_MAX_BODY);
		if (forge_intake(&victims[next++ % n_victims], &body) != 0) {
			s->c.local++;
			fb_free(&body);
			continue;
		}
		struct http_reply r;
		long st = http_post(&c, "/v1/attest/intake", "application/json", body.data,
				    body.len, &r);
		fb_free(&body);
		s->c.sent++;
		if (st == 200) {
			struct fleet_wire_intake_reply ir;
			if (fleet_wire_intake_reply_decode((const uint8_t *)r.body, r.len, &ir,
							   NULL) != FLEET_OK)
				s->c.other++;
			else if (ir.status == FLEET_WIRE_CHALLENGE)
				s->c.challenge++;
			else if (ir.status == FLEET_WIRE_REFUSED)
				s->c.refused++;
			else
				s->c.pending++;
			fleet_wire_intake_reply_free(&ir);
		} else if (st == 429) {
			s->c.too_many++;
		} else if (st == 503) {
			s->c.busy++;
		} else if (st < 0) {
			s->c.failed++;
			usleep(100 * 1000);
		} else {
			s->c.other++;
		}
		http_reply_free(&r);
	}
	http_client_free(&c);
	return NULL;
}

static void on_term(int sig)
{
	(void)sig;
	stopping = 1;
}

static int cmd_flood(int argc, char **argv)
{
	const char *victims_file = NULL, *sources = NULL;
	double seconds = 0;
	for (int i = 0; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--port"))
			fleetd_port = (uint16_t)atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--ca"))
			ca_file = argv[i + 1];
		else if (!strcmp(argv[i], "--victims"))
			victims_file = argv[i + 1];
		else if (!strcmp(argv[i], "--sources"))
			sources = argv[i + 1];
		else if (!strcmp(argv[i], "--seconds"))
			seconds = atof(argv[i + 1]);
		else if (!strcmp(argv[i], "--stop-file"))
			stop_file = argv[i + 1];
		else if (!strcmp(argv[i], "--rate"))
			rate = atof(argv[i + 1]);
		else if (!strcmp(argv[i], "--burst"))
			burst = atof(argv[i + 1]);
		else
			return die("unknown option ", argv[i]);
	}
	if (!fleetd_port || !ca_file || !victims_file || !sources || rate <= 0 || burst < 1)
		return die("flood needs --port, --ca, --victims and --sources", "");
	if (load_victims(victims_file) != 0)
		return die("cannot read the victims in ", victims_file);
	struct source src[64];
	size_t n = 0;
	char *list = strdup(sources), *save = NULL;
	for (char *t = strtok_r(list, ",", &save); t && n < 64; t = strtok_r(NULL, ",", &save))
		snprintf(src[n++].addr, sizeof(src[0].addr), "%s", t);
	free(list);
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	double t0 = http_now_s();
	if (seconds > 0)
		deadline_s = t0 + seconds;
	for (size_t i = 0; i < n; i++) {
		memset(&src[i].c, 0, sizeof(src[i].c));
		if (pthread_create(&src[i].th, NULL, flood_source, &src[i]) != 0)
			return die("no thread", "");
	}
	struct counts t = {0};
	for (size_t i = 0; i < n; i++) {
		pthread_join(src[i].th, NULL);
		t.sent += src[i].c.sent;
		t.challenge += src[i].c.challenge;
		t.refused += src[i].c.refused;
		t.pending += src[i].c.pending;
		t.too_many += src[i].c.too_many;
		t.busy += src[i].c.busy;
		t.other += src[i].c.other;
		t.failed += src[i].c.failed;
		t.local += src[i].c.local;
	}
	double secs = http_now_s() - t0;
	printf("{\"sources\": %zu, \"seconds\": %.1f, \"sent\": %lu, \"challenge\": %lu, "
	       "\"refused\": %lu, \"pending\": %lu, \"429\": %lu, \"503\": %lu, \"other\": %lu, "
	       "\"no_answer\": %lu, \"local_errors\": %lu}\n",
	       n, secs, t.sent, t.challenge, t.refused, t.pending, t.too_many, t.busy, t.other,
	       t.failed, t.local);
	fflush(stdout);
	return t.local ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "ek"))
		return cmd_ek(argv[2], argv[3]);
	if (argc >= 2 && !strcmp(argv[1], "flood")) {
		if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
			return die("curl init failed", "");
		return cmd_flood(argc - 2, argv + 2);
	}
	fprintf(stderr, "usage: load_forger ek TCTI PREFIX | load_forger flood --port P --ca FILE "
			"--victims FILE --sources A,B [--seconds S] [--stop-file F] [--rate R] "
			"[--burst B]\n");
	return 2;
}
