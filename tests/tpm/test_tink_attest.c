/*
 * test_tink_attest.c: tink-attest's three rounds against a real TPM (swtpm)
 * booted by the firmware simulator, and fleetd's shipped admission
 * in-process (fleet_admission_intake/answer/confirm with a real store:
 * tests/tpm/inproc_server.c).
 *
 *  - the whole exchange: both credentials activate, the quote verifies, the
 *    replayed log passes the profile, the LDevID certification verifies,
 *    the device is admitted (its row, both certificates, a passing verdict
 *    in the store), the certificates and the provision are written; a
 *    second run brings back the same AK and LDevID keys (they are primaries
 *    from fixed templates: nothing is stored in the TPM);
 *  - a TPM without an ECC EK certificate says so in its intake;
 *  - an EK whose certificate carries another key: refused before anything
 *    is sent;
 *  - a TPM that dies after the intake: exit 3, no answer sent, the session
 *    left open;
 *  - no TPM at all: exit 3 and nothing sent;
 *  - an unknown serial: pending once the TPM proved its EKs (fleetd's proof
 *    before a claim, I3), a claim recorded, no certificates;
 *  - an EK the inventory did not approve: refused at the intake.
 */
#include "tests/testutil.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>
#include <tss2/tss2_tctildr.h>

#include "lib/hex.h"
#include "lib/x509_ek.h"
#include "tests/fwsim/fwsim.h"
#include "tests/tpm/inproc_server.h"
#include "tests/tpm/swtpm_harness.h"
#include "tink-attest/tink.h"
#include "tink-attest/tpm_client.h"

#define SERIAL "FLEET-SIM-0001"
#define BIOS "fleetd-sim-1.0" /* the version tests/fwsim/worker.profile.yaml pins PCR 0 for */

/* lldpd's `lldpcli -f json show neighbors` shape (tests/integration of
 * lldpd), one neighbour. */
static const char lldp_json[] =
	"{\n  \"lldp\": {\n    \"interface\": {\n      \"eno1\": {\n"
	"        \"via\": \"LLDP\",\n        \"rid\": \"1\",\n"
	"        \"age\": \"0 day, 00:01:12\",\n"
	"        \"chassis\": {\n          \"leaf-07.folly\": {\n"
	"            \"id\": {\"type\": \"mac\", \"value\": \"0c:42:a1:00:07:00\"},\n"
	"            \"descr\": \"SONiC\",\n            \"mgmt-ip\": \"10.0.7.1\",\n"
	"            \"capability\": [{\"type\": \"Bridge\", \"enabled\": true}]\n"
	"          }\n        },\n"
	"        \"port\": {\n          \"id\": {\"type\": \"ifname\", \"value\": \"Ethernet12\"},\n"
	"          \"descr\": \"worker-3\",\n          \"ttl\": \"120\"\n        }\n"
	"      }\n    }\n  }\n}\n";

struct fx {
	struct swtpm t;
	char *dir;
	char sysfs[600], lldp[600], log[600], out[600];
	struct inproc_server srv;
	struct tink_config cfg;
	struct tink_transport tx;
};

static void write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

static void mkdirs(const char *path)
{
	char cmd[1100];
	int n = snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", path);
	assert_true(n > 0 && (size_t)n < sizeof(cmd));
	assert_int_equal(system(cmd), 0);
}

/* A sysfs of one machine: SMBIOS, a physical NIC, and lo (no device). */
static void make_sysfs(const char *root, const char *serial)
{
	char p[1024];
	snprintf(p, sizeof(p), "%s/class/dmi/id", root);
	mkdirs(p);
	snprintf(p, sizeof(p), "%s/class/dmi/id/product_serial", root);
	write_file(p, serial, strlen(serial));
	snprintf(p, sizeof(p), "%s/class/dmi/id/product_uuid", root);
	write_file(p, "4c4c4544-0042-3010-8057-b4c04f4a4d32\n", 37);
	snprintf(p, sizeof(p), "%s/class/dmi/id/bios_version", root);
	write_file(p, BIOS "\n", strlen(BIOS) + 1);
	snprintf(p, sizeof(p), "%s/class/net/eno1/device", root);
	mkdirs(p);
	snprintf(p, sizeof(p), "%s/class/net/eno1/address", root);
	write_file(p, "B4:96:91:00:00:01\n", 18);
	snprintf(p, sizeof(p), "%s/class/net/lo", root);
	mkdirs(p);
	snprintf(p, sizeof(p), "%s/class/net/lo/address", root);
	write_file(p, "00:00:00:00:00:00\n", 18);
}

static void ek_hash_from_nv(struct swtpm *t, TPM2_HANDLE index, char out[65])
{
	unsigned char *der = NULL;
	size_t len = 0;
	X509 *cert = NULL;
	assert_int_equal(swtpm_nv_read(t, index, &der, &len), 0);
	assert_int_equal(fleet_ek_cert_load(der, len, &cert, NULL), FLEET_OK);
	assert_int_equal(fleet_ek_hash(cert, out), FLEET_OK);
	X509_free(cert);
	free(der);
}

/* The test's own TPM connection must be closed before tink-attest opens
 * one: swtpm serves one client at a time. */
static void release_tpm(struct swtpm *t)
{
	if (t->esys)
		Esys_Finalize(&t->esys);
	if (t->tcti_ctx)
		Tss2_TctiLdr_Finalize(&t->tcti_ctx);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct fwsim_events *ev = NULL;
	struct fleet_buf log;
	char err[300], events[600], profile[600];
	assert_non_null(f);
	if (swtpm_start(&f->t, NULL) != 0)
		return -1;
	f->dir = make_temp_dir("tink");
	snprintf(f->sysfs, sizeof(f->sysfs), "%s/sys", f->dir);
	snprintf(f->lldp, sizeof(f->lldp), "%s/lldp.json", f->dir);
	snprintf(f->log, sizeof(f->log), "%s/binary_bios_measurements", f->dir);
	snprintf(f->out, sizeof(f->out), "%s/out", f->dir);
	make_sysfs(f->sysfs, SERIAL "\n");
	write_file(f->lldp, lldp_json, strlen(lldp_json));
	mkdirs(f->out);

	/* Boot the simulated worker firmware into the TPM. */
	snprintf(events, sizeof(events), "%s/tests/fwsim/worker.events.yaml", FLEET_SOURCE_DIR);
	assert_int_equal(fwsim_load(events, &ev, err, sizeof(err)), FLEET_OK);
	fb_init(&log);
	assert_int_equal(fwsim_apply(swtpm_esys(&f->t), ev, &log, err, sizeof(err)), FLEET_OK);
	write_file(f->log, log.data, log.len);
	fb_free(&log);
	fwsim_free(ev);

	snprintf(profile, sizeof(profile), "%s/tests/fwsim/worker.profile.yaml", FLEET_SOURCE_DIR);
	assert_int_equal(inproc_server_init(&f->srv, f->t.roots, profile), 0);
	snprintf(f->srv.binding.serial, sizeof(f->srv.binding.serial), "%s", SERIAL);
	ek_hash_from_nv(&f->t, TINK_NV_EK_RSA, f->srv.binding.ek_hash);
	ek_hash_from_nv(&f->t, TINK_NV_EK_ECC_P384, f->srv.binding.ek_hash_ecc);
	f->srv.provision = true;

	f->cfg.tcti = f->t.tcti;
	f->cfg.sysfs_root = f->sysfs;
	f->cfg.lldp_file = f->lldp;
	f->cfg.eventlog = f->log;
	f->cfg.out_dir = f->out;
	f->tx = inproc_transport(&f->srv);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	inproc_server_free(&f->srv);
	swtpm_stop(&f->t);
	rm_rf(f->dir);
	free(f->dir);
	free(f);
	return 0;
}

static X509 *read_pem(const char *dir, const char *name)
{
	char p[1024];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	FILE *fp = fopen(p, "r");
	if (!fp)
		fail_msg("%s was not written", p);
	X509 *c = PEM_read_X509(fp, NULL, NULL, NULL);
	fclose(fp);
	assert_non_null(c);
	return c;
}

static void assert_cert_for(X509 *c, const TPM2B_PUBLIC *key)
{
	EVP_PKEY *k = NULL;
	assert_int_equal(fleet_tpm_public_to_pkey(&key->publicArea, &k), FLEET_OK);
	assert_int_equal(EVP_PKEY_eq(X509_get0_pubkey(c), k), 1);
	EVP_PKEY_free(k);
}

static mode_t mode_of(const char *dir, const char *name)
{
	char p[1024];
	struct stat st;
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	assert_int_equal(stat(p, &st), 0);
	return st.st_mode & 07777;
}

static int run(struct fx *f, struct tink_result *res)
{
	int rc = tink_run(&f->cfg, &f->tx, res);
	printf("  tink_run: exit %d (%s) %s\n", rc, tink_exit_name(rc), res->message);
	if (f->srv.reason[0])
		printf("  fleetd's last refusal: %s\n", f->srv.reason);
	return rc;
}

/* What the admission wrote for the serial: its device row (false: none),
 * and how many passing verdicts and certificates it holds. */
static bool stored(struct fx *f, struct fleet_store_device *d, size_t *passes, size_t *certs)
{
	*passes = *certs = 0;
	if (fleet_store_device_get_by_serial(f->srv.store, SERIAL, d) != FLEET_STORE_OK)
		return false;
	struct fleet_store_verdict *v = NULL;
	struct fleet_store_cert *c = NULL;
	size_t nv = 0;
	assert_int_equal(fleet_store_verdicts_list(f->srv.store, d->name, 100, &v, &nv),
			 FLEET_STORE_OK);
	for (size_t i = 0; i < nv; i++)
		*passes += v[i].pass;
	free(v);
	assert_int_equal(fleet_store_certs_for_device(f->srv.store, d->name, &c, certs),
			 FLEET_STORE_OK);
	fleet_store_certs_free(c, *certs);
	return true;
}

/* fleetd_open_sessions, from the admission's metrics. */
static long open_sessions(struct fx *f)
{
	struct fleet_buf m;
	fb_init(&m);
	assert_int_equal(fleet_metrics_render(f->srv.metrics, &m), FLEET_OK);
	fb_put_u8(&m, 0);
	const char *p = strstr((const char *)m.data, "\nfleetd_open_sessions ");
	long n = p ? strtol(p + strlen("\nfleetd_open_sessions "), NULL, 10) : -1;
	fb_free(&m);
	return n;
}

static void admitted_and_confirmed(void **state)
{
	struct fx *f = *state;
	struct tink_result res;
	release_tpm(&f->t);

	assert_int_equal(run(f, &res), TINK_EXIT_CONFIRMED);
	assert_int_equal(res.posts, 3);
	assert_int_equal(f->srv.n_intake, 1);
	assert_int_equal(f->srv.n_answer, 1);
	assert_int_equal(f->srv.n_confirm, 1);
	assert_int_equal(f->srv.n_malformed, 0);
	/* Both EKs challenged and both secrets in the proof that verified; the
	 * quote and the replayed log passed the profile (fleetd's verdicts
	 * always check the quote: fleet_attest_answer hands the profile the
	 * quoted PCRs); the LDevID key is the one the AK certified (intake
	 * refuses otherwise); the confirmation's LDevID signature verified, and
	 * the admission is in the store: the device with both EKs proven, its
	 * two certificates and one passing verdict. */
	struct fleet_store_device d;
	size_t passes, certs;
	assert_true(f->srv.intake_had_ecc);
	assert_true(f->srv.challenged_ecc);
	assert_true(f->srv.issued);
	assert_true(f->srv.confirmed);
	assert_true(stored(f, &d, &passes, &certs));
	assert_string_equal(d.name, INPROC_DEVICE);
	assert_string_equal(d.serial, SERIAL);
	assert_string_equal(d.ek_hash, f->srv.binding.ek_hash);
	assert_string_equal(d.ek_hash_ecc, f->srv.binding.ek_hash_ecc);
	assert_int_equal(passes, 1);
	assert_int_equal(certs, 2);
	assert_string_equal(f->srv.serial, SERIAL);
	assert_string_equal(f->srv.report.port_id, "Ethernet12");
	assert_string_equal(f->srv.report.system_name, "leaf-07.folly");

	/* The certificates fleetd issued, for the TPM's keys, on disk. */
	X509 *lak = read_pem(f->out, "lak.pem"), *ldevid = read_pem(f->out, "ldevid.pem");
	assert_cert_for(lak, &f->srv.ak);
	assert_cert_for(ldevid, &f->srv.ldevid);
	X509_free(lak);
	X509_free(ldevid);
	/* The provision: the code the TPM unwrapped, both files 0600. */
	char p[1024], hex[65];
	struct fleet_buf code;
	assert_true(res.has_provision);
	snprintf(p, sizeof(p), "%s/code", f->out);
	fb_init(&code);
	read_file_or_fail(p, &code);
	fleet_hex_encode(f->srv.code, sizeof(f->srv.code), hex);
	assert_int_equal(code.len, 64);
	assert_memory_equal(code.data, hex, 64);
	fb_free(&code);
	assert_int_equal(mode_of(f->out, "code"), 0600);
	assert_int_equal(mode_of(f->out, "proof"), 0600);

	/* Another boot of the same machine: the same AK and LDevID keys (and
	 * the same device in the store, with the second admission's
	 * certificates beside the first's). */
	TPM2B_PUBLIC ak1 = f->srv.ak, ldevid1 = f->srv.ldevid;
	assert_int_equal(run(f, &res), TINK_EXIT_CONFIRMED);
	assert_true(stored(f, &d, &passes, &certs));
	assert_int_equal(passes, 2);
	assert_int_equal(certs, 4);
	assert_memory_equal(&f->srv.ak.publicArea.unique,
			    &ak1.publicArea.unique, sizeof(ak1.publicArea.unique));
	assert_memory_equal(&f->srv.ldevid.publicArea.unique,
			    &ldevid1.publicArea.unique, sizeof(ldevid1.publicArea.unique));
	/* ...and they are different keys from each other. */
	assert_memory_not_equal(&ak1.publicArea.unique, &ldevid1.publicArea.unique,
				sizeof(ak1.publicArea.unique));
}

/* NV_UndefineSpace with platform authorization (empty on swtpm). */
static void nv_undefine(struct swtpm *t, TPM2_HANDLE index)
{
	ESYS_CONTEXT *e = swtpm_esys(t);
	ESYS_TR nv = ESYS_TR_NONE;
	assert_int_equal(Esys_TR_FromTPMPublic(e, index, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE,
					       &nv),
			 TSS2_RC_SUCCESS);
	assert_int_equal(Esys_NV_UndefineSpace(e, ESYS_TR_RH_PLATFORM, nv, ESYS_TR_PASSWORD,
					       ESYS_TR_NONE, ESYS_TR_NONE),
			 TSS2_RC_SUCCESS);
}

/* Define index as the manufacturer does and write data into it. */
static void nv_write_new(struct swtpm *t, TPM2_HANDLE index, const uint8_t *data, size_t len)
{
	ESYS_CONTEXT *e = swtpm_esys(t);
	ESYS_TR nv = ESYS_TR_NONE;
	TPM2B_AUTH auth = {0};
	TPM2B_NV_PUBLIC pub = {0};
	pub.nvPublic.nvIndex = index;
	pub.nvPublic.nameAlg = TPM2_ALG_SHA256;
	pub.nvPublic.attributes = TPMA_NV_PPWRITE | TPMA_NV_PPREAD | TPMA_NV_OWNERREAD |
				  TPMA_NV_AUTHREAD | TPMA_NV_NO_DA | TPMA_NV_PLATFORMCREATE;
	pub.nvPublic.dataSize = (UINT16)len;
	assert_int_equal(Esys_NV_DefineSpace(e, ESYS_TR_RH_PLATFORM, ESYS_TR_PASSWORD, ESYS_TR_NONE,
					     ESYS_TR_NONE, &auth, &pub, &nv),
			 TSS2_RC_SUCCESS);
	for (size_t off = 0; off < len; off += 512) {
		TPM2B_MAX_NV_BUFFER b = {0};
		b.size = (UINT16)(len - off > 512 ? 512 : len - off);
		memcpy(b.buffer, data + off, b.size);
		assert_int_equal(Esys_NV_Write(e, ESYS_TR_RH_PLATFORM, nv, ESYS_TR_PASSWORD,
					       ESYS_TR_NONE, ESYS_TR_NONE, &b, (UINT16)off),
				 TSS2_RC_SUCCESS);
	}
}

static void no_ecc_ek_says_so(void **state)
{
	struct fx *f = *state;
	struct tink_result res;
	nv_undefine(&f->t, TINK_NV_EK_ECC_P384);
	release_tpm(&f->t);
	f->srv.binding.ek_hash_ecc[0] = '\0'; /* approved as an RSA-only machine */

	assert_int_equal(run(f, &res), TINK_EXIT_CONFIRMED);
	assert_false(res.has_ecc_ek);
	assert_int_equal(f->srv.n_intake, 1);
	assert_false(f->srv.intake_had_ecc);
	assert_true(f->srv.challenged);
	assert_false(f->srv.challenged_ecc);
	assert_true(f->srv.confirmed);
	struct fleet_store_device d;
	size_t passes, certs;
	assert_true(stored(f, &d, &passes, &certs));
	assert_string_equal(d.ek_hash_ecc, ""); /* admitted as RSA-only */
	assert_int_equal(passes, 1);
}

/* A self-signed certificate for an RSA-2048 key that is not the EK. */
static void foreign_cert(struct fleet_buf *der)
{
	EVP_PKEY *k = EVP_RSA_gen(2048);
	X509 *c = X509_new();
	assert_non_null(k);
	assert_non_null(c);
	X509_set_version(c, 2);
	ASN1_INTEGER_set(X509_get_serialNumber(c), 7);
	X509_gmtime_adj(X509_getm_notBefore(c), 0);
	X509_gmtime_adj(X509_getm_notAfter(c), 86400);
	X509_NAME_add_entry_by_txt(X509_get_subject_name(c), "CN", MBSTRING_ASC,
				   (const unsigned char *)"not this TPM", -1, -1, 0);
	X509_set_issuer_name(c, X509_get_subject_name(c));
	X509_set_pubkey(c, k);
	assert_true(X509_sign(c, k, EVP_sha256()) > 0);
	unsigned char *p = NULL;
	int n = i2d_X509(c, &p);
	assert_true(n > 0);
	fb_put(der, p, (size_t)n);
	OPENSSL_free(p);
	X509_free(c);
	EVP_PKEY_free(k);
}

static void ek_cert_of_another_key_sends_nothing(void **state)
{
	struct fx *f = *state;
	struct tink_result res;
	struct fleet_buf der;
	fb_init(&der);
	foreign_cert(&der);
	nv_undefine(&f->t, TINK_NV_EK_RSA);
	nv_write_new(&f->t, TINK_NV_EK_RSA, der.data, der.len);
	fb_free(&der);
	release_tpm(&f->t);

	assert_int_equal(run(f, &res), TINK_EXIT_TPM);
	assert_non_null(strstr(res.message, "RSA EK"));
	assert_non_null(strstr(res.message, "ek-key-mismatch"));
	assert_int_equal(res.posts, 0);
	assert_int_equal(f->srv.n_intake + f->srv.n_malformed, 0);
}

static void kill_tpm_after_intake(void *arg, const char *path)
{
	if (strcmp(path, "/v1/attest/intake") == 0)
		swtpm_kill(arg);
}

static void tpm_dies_after_intake_no_answer_sent(void **state)
{
	struct fx *f = *state;
	struct tink_result res;
	release_tpm(&f->t);
	f->srv.after = kill_tpm_after_intake;
	f->srv.after_arg = &f->t;

	assert_int_equal(run(f, &res), TINK_EXIT_TPM);
	assert_non_null(strstr(res.message, "TPM error"));
	assert_int_equal(f->srv.n_intake, 1);
	assert_int_equal(res.posts, 1);
	assert_int_equal(f->srv.n_answer + f->srv.n_confirm + f->srv.n_malformed, 0);
	/* Challenged, and the session stays open, waiting for an answer. */
	assert_true(f->srv.challenged);
	assert_int_equal(open_sessions(f), 1);
	struct fleet_store_device d;
	size_t passes, certs;
	assert_false(stored(f, &d, &passes, &certs));
}

static void no_tpm_sends_nothing(void **state)
{
	struct fx *f = *state;
	struct tink_result res;
	release_tpm(&f->t);
	swtpm_kill(&f->t); /* the port is closed now */

	assert_int_equal(run(f, &res), TINK_EXIT_TPM);
	assert_non_null(strstr(res.message, "no usable TPM"));
	assert_int_equal(res.posts, 0);
	assert_int_equal(f->srv.n_intake + f->srv.n_malformed, 0);
}

static void unknown_serial_is_pending(void **state)
{
	struct fx *f = *state;
	struct tink_result res;
	release_tpm(&f->t);
	snprintf(f->srv.binding.serial, sizeof(f->srv.binding.serial), "SOME-OTHER-SERIAL");

	/* fleetd challenges an unknown serial for the proof of its EKs only
	 * (admission.h, I3) and writes the pending claim at the answer, with
	 * the hashes the TPM proved: pending, no confirm, no certificates. */
	assert_int_equal(run(f, &res), TINK_EXIT_PENDING);
	assert_int_equal(f->srv.n_intake, 1);
	assert_int_equal(f->srv.n_answer, 1);
	assert_int_equal(f->srv.n_confirm, 0);
	assert_false(f->srv.issued);
	char p[1024];
	snprintf(p, sizeof(p), "%s/lak.pem", f->out);
	assert_int_not_equal(access(p, F_OK), 0);
	struct fleet_store_claim *c = NULL;
	size_t n = 0;
	assert_int_equal(fleet_store_claims_list(f->srv.store, &c, &n), FLEET_STORE_OK);
	assert_int_equal(n, 1);
	assert_string_equal(c[0].serial, SERIAL);
	assert_string_equal(c[0].reason, FLEET_STORE_CLAIM_UNKNOWN_SERIAL);
	assert_int_equal(c[0].n_eks, 1);
	assert_string_equal(c[0].eks[0].ek_hash, f->srv.binding.ek_hash);
	free(c);
}

static void another_ek_is_refused(void **state)
{
	struct fx *f = *state;
	struct tink_result res;
	release_tpm(&f->t);
	f->srv.binding.ek_hash[0] ^= 1; /* NetBox approved some other EK */

	assert_int_equal(run(f, &res), TINK_EXIT_REFUSED);
	assert_string_equal(f->srv.reason, "ek-not-approved"); /* admission.h, I7 */
	assert_int_equal(f->srv.n_answer + f->srv.n_confirm, 0);
}

/* A4: the inventory read again at the answer fails. fleetd's own out of
 * memory is said as such ("fleetd is out of memory",
 * inventory-out-of-memory), not as an inventory that did not answer; either
 * way 503, nothing issued, the session kept. */
static fleet_err reread_failure; /* what the reads after the intake fail with */

static void fail_reads_after_intake(void *arg, const char *path)
{
	struct inproc_server *s = arg;
	if (strcmp(path, "/v1/attest/intake") == 0)
		s->inv.fail_get = reread_failure;
}

static void reread_fails(struct fx *f, fleet_err with, const char *reason, const char *says,
			 const char *not_says)
{
	struct tink_result res;
	release_tpm(&f->t);
	reread_failure = with;
	f->srv.after = fail_reads_after_intake;
	f->srv.after_arg = &f->srv;
	assert_int_equal(run(f, &res), TINK_EXIT_PROTOCOL);
	assert_non_null(strstr(res.message, "HTTP 503"));
	assert_int_equal(f->srv.n_intake, 1);
	assert_int_equal(f->srv.n_answer, 1);
	assert_false(f->srv.issued);
	printf("  the answer's journal: %s", f->srv.journal);
	assert_non_null(strstr(f->srv.journal, "event=inventory-unavailable"));
	assert_non_null(strstr(f->srv.journal, reason));
	assert_non_null(strstr(f->srv.journal, says));
	assert_null(strstr(f->srv.journal, not_says));
	assert_int_equal(open_sessions(f), 1);
}

static void reread_out_of_memory_is_said(void **state)
{
	reread_fails(*state, FLEET_INV_NOMEM, "FLEET_REASON=inventory-out-of-memory",
		     "fleetd is out of memory", "did not answer");
}

static void reread_unavailable_is_said(void **state)
{
	reread_fails(*state, FLEET_INV_UNAVAILABLE, "FLEET_REASON=inventory-unavailable",
		     "did not answer when read again", "out of memory");
}

int main(void)
{
	swtpm_require_or_skip();
	setenv("TSS2_LOG", "all+NONE", 0);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(admitted_and_confirmed, setup, teardown),
		cmocka_unit_test_setup_teardown(no_ecc_ek_says_so, setup, teardown),
		cmocka_unit_test_setup_teardown(ek_cert_of_another_key_sends_nothing, setup,
						teardown),
		cmocka_unit_test_setup_teardown(tpm_dies_after_intake_no_answer_sent, setup,
						teardown),
		cmocka_unit_test_setup_teardown(no_tpm_sends_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(unknown_serial_is_pending, setup, teardown),
		cmocka_unit_test_setup_teardown(another_ek_is_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(reread_out_of_memory_is_said, setup, teardown),
		cmocka_unit_test_setup_teardown(reread_unavailable_is_said, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
