/*
 * test_ek_interop.c: real EK certificates and manufacturer CAs, read at run
 * time from ../shared/data (skips when it is absent).
 *
 *   ek-certs/   each leaf loads (quirks and all); its ek_hash is the one the
 *               README lists; its chain verifies from a roots directory made
 *               of its .chain.pem, and not from another maker's.
 *   ek-roots/   every file parses, the directory loads whole, and the
 *               chains in it still verify once every certificate in them has
 *               expired (docs/ek-validity.md).
 */
#include "tests/testutil.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "lib/hex.h"
#include "lib/x509_ek.h"

#define MAX_LEAVES 16
/* 2060-01-01: after the notAfter of every certificate in the shared data. */
#define FAR_FUTURE ((time_t)2840140800)

struct leaf {
	char file[64];  /* e.g. "stmicro-1.der" */
	char stem[64];  /* e.g. "stmicro-1" */
	char hash[65];  /* from the README table */
};

static struct leaf leaves[MAX_LEAVES];
static int n_leaves;

static void path_of(char *out, size_t cap, const char *sub, const char *file)
{
	snprintf(out, cap, "%s/%s/%s", shared_data_dir(), sub, file);
}

/* The README's table rows: | `file` | ... | <64 hex> | */
static void read_readme(void)
{
	char path[512], line[1024];
	path_of(path, sizeof(path), "ek-certs", "README.md");
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f) && n_leaves < MAX_LEAVES) {
		char *a = strstr(line, "| `"), *b, *h;
		if (!a || !(b = strchr(a + 3, '`')))
			continue;
		struct leaf *l = &leaves[n_leaves];
		size_t n = (size_t)(b - (a + 3));
		if (n == 0 || n >= sizeof(l->file))
			continue;
		memcpy(l->file, a + 3, n);
		l->file[n] = '\0';
		h = strrchr(line, '|');
		/* the last cell: back up to the previous '|' */
		*h = '\0';
		h = strrchr(line, '|');
		if (!h)
			continue;
		h++;
		while (*h == ' ')
			h++;
		if (strlen(h) < 64)
			continue;
		memcpy(l->hash, h, 64);
		l->hash[64] = '\0';
		if (!fleet_hex_is_lower(l->hash, 64))
			continue;
		const char *dot = strrchr(l->file, '.');
		if (!dot)
			continue;
		size_t stem = (size_t)(dot - l->file);
		memcpy(l->stem, l->file, stem);
		l->stem[stem] = '\0';
		n_leaves++;
	}
	fclose(f);
	assert_true(n_leaves >= 4);
}

static int group_setup(void **state)
{
	(void)state;
	read_readme();
	return 0;
}

static X509 *load_leaf(const struct leaf *l)
{
	char path[512];
	struct fleet_buf b;
	struct fleet_errctx ec = {0};
	X509 *x = NULL;
	path_of(path, sizeof(path), "ek-certs", l->file);
	read_file_or_fail(path, &b);
	if (fleet_ek_cert_load(b.data, b.len, &x, &ec) != FLEET_OK)
		fail_msg("%s: %s", l->file, ec.detail);
	fb_free(&b);
	return x;
}

/* A roots directory made of <stem>.chain.pem, one certificate a file. */
static char *chain_dir(const char *stem)
{
	char path[512], out[600];
	int n = 0;
	X509 *x;
	snprintf(path, sizeof(path), "%s/ek-certs/%s.chain.pem", shared_data_dir(), stem);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	char *dir = make_temp_dir("ekchain");
	assert_non_null(dir);
	while ((x = PEM_read_X509(f, NULL, NULL, NULL)) != NULL) {
		snprintf(out, sizeof(out), "%s/ca%d.pem", dir, n++);
		FILE *o = fopen(out, "w");
		assert_non_null(o);
		assert_int_equal(PEM_write_X509(o, x), 1);
		fclose(o);
		X509_free(x);
	}
	fclose(f);
	assert_true(n >= 1);
	return dir;
}

static void test_leaves_load_and_hash(void **state)
{
	(void)state;
	for (int i = 0; i < n_leaves; i++) {
		char got[65];
		X509 *x = load_leaf(&leaves[i]);
		assert_int_equal(fleet_ek_hash(x, got), FLEET_OK);
		if (strcmp(got, leaves[i].hash) != 0)
			fail_msg("%s: ek_hash %s, README says %s", leaves[i].file, got,
				 leaves[i].hash);
		X509_free(x);
	}
}

static void load_or_fail(const char *what, const uint8_t *buf, size_t len, X509 **x)
{
	struct fleet_errctx ec = {0};
	fleet_err e = fleet_ek_cert_load(buf, len, x, &ec);
	if (e != FLEET_OK)
		fail_msg("%s: %s: %s", what, fleet_err_str(e), ec.detail);
}

/*
 * Each real certificate as a TPM stores it in NV under the TCG PC Client
 * header (tag 0x1001, type 0x00, size of what follows, tag 0x1002, DER),
 * built here byte by byte, then fill that is not 0x00/0xFF padding (0x11, as
 * a published Nuvoton file has): the same certificate, the README's
 * ek_hash. A malformed header is refused with its reason.
 */
static void test_leaves_in_tcg_header(void **state)
{
	(void)state;
	for (int i = 0; i < n_leaves; i++) {
		X509 *x = load_leaf(&leaves[i]), *y = NULL;
		unsigned char *der = NULL;
		int n = i2d_X509(x, &der);
		assert_true(n > 0 && n + 2 <= 0xffff);
		size_t len = 7 + (size_t)n + 32;
		uint8_t *buf = malloc(len);
		assert_non_null(buf);
		buf[0] = 0x10, buf[1] = 0x01, buf[2] = 0x00;
		buf[3] = (uint8_t)((n + 2) >> 8), buf[4] = (uint8_t)(n + 2);
		buf[5] = 0x10, buf[6] = 0x02;
		memcpy(buf + 7, der, (size_t)n);
		memset(buf + 7 + n, 0x11, 32);
		load_or_fail(leaves[i].file, buf, len, &y);
		assert_int_equal(X509_cmp(x, y), 0);
		char got[65];
		assert_int_equal(fleet_ek_hash(y, got), FLEET_OK);
		assert_string_equal(got, leaves[i].hash);
		X509_free(y);

		struct {
			size_t at;
			uint8_t v;
			const char *says;
		} bad[] = {
			{1, 0x05, "tag is 0x1005"},           /* first tag */
			{2, 0x01, "type is 0x01"},            /* not a full certificate */
			{6, 0x03, "second tag is 0x1003"},    /* second tag */
			{3, 0xff, "past the end of the input"}, /* size beyond the buffer */
		};
		for (size_t b = 0; b < sizeof(bad) / sizeof(bad[0]); b++) {
			struct fleet_errctx ec = {0};
			uint8_t keep = buf[bad[b].at];
			buf[bad[b].at] = bad[b].v;
			y = (X509 *)1;
			assert_int_not_equal(fleet_ek_cert_load(buf, len, &y, &ec), FLEET_OK);
			assert_null(y);
			if (!strstr(ec.detail, bad[b].says))
				fail_msg("%s: header byte %zu: '%s', want '%s'", leaves[i].file,
					 bad[b].at, ec.detail, bad[b].says);
			buf[bad[b].at] = keep;
		}
		free(buf);
		OPENSSL_free(der);
		X509_free(x);
	}
}

/*
 * Each real RSA certificate with its key relabelled id-RSAES-OAEP, as
 * STMicro certificates label it (only the OID's last byte changes; the
 * signature no longer verifies, which ek_hash does not look at): the same
 * ek_hash as the README's, i.e. the hash of the rsaEncryption encoding, so
 * NetBox's approved hash, fleetd's and SPIRE's pub_hash agree.
 */
static void test_leaves_oaep_label_same_hash(void **state)
{
	static const uint8_t rsa_oid[] = {0x06, 0x09, 0x2a, 0x86, 0x48, 0x86,
					  0xf7, 0x0d, 0x01, 0x01, 0x01};
	int relabelled = 0;
	(void)state;
	for (int i = 0; i < n_leaves; i++) {
		X509 *x = load_leaf(&leaves[i]), *y = NULL;
		unsigned char *der = NULL;
		int n = i2d_X509(x, &der);
		assert_true(n > 0);
		uint8_t *at = memmem(der, (size_t)n, rsa_oid, sizeof(rsa_oid));
		X509_free(x);
		if (!at) { /* an ECC leaf */
			OPENSSL_free(der);
			continue;
		}
		at[sizeof(rsa_oid) - 1] = 0x07;
		load_or_fail(leaves[i].file, der, (size_t)n, &y);
		ASN1_OBJECT *alg = NULL;
		assert_int_equal(X509_PUBKEY_get0_param(&alg, NULL, NULL, NULL,
							X509_get_X509_PUBKEY(y)),
				 1);
		assert_int_equal(OBJ_obj2nid(alg), NID_rsaesOaep);
		char got[65];
		assert_int_equal(fleet_ek_hash(y, got), FLEET_OK);
		if (strcmp(got, leaves[i].hash) != 0)
			fail_msg("%s relabelled OAEP: ek_hash %s, README says %s",
				 leaves[i].file, got, leaves[i].hash);
		relabelled++;
		X509_free(y);
		OPENSSL_free(der);
	}
	assert_true(relabelled >= 3);
}

static void test_chains_verify(void **state)
{
	(void)state;
	for (int i = 0; i < n_leaves; i++) {
		char *dir = chain_dir(leaves[i].stem);
		struct fleet_ek_roots *roots = NULL;
		struct fleet_errctx ec = {0};
		const char *reason = NULL;
		X509 *x = load_leaf(&leaves[i]);
		if (fleet_ek_roots_load(dir, &roots, &ec) != FLEET_OK)
			fail_msg("%s chain: %s", leaves[i].stem, ec.detail);
		if (fleet_ek_chain_verify(roots, x, 0, &reason) != FLEET_OK)
			fail_msg("%s: refused now: %s", leaves[i].file, reason);
		/* Once leaf and CAs have all expired: still the TPM's maker. */
		if (fleet_ek_chain_verify(roots, x, FAR_FUTURE, &reason) != FLEET_OK)
			fail_msg("%s: refused in 2060: %s", leaves[i].file, reason);
		/* Before the leaf was issued: not yet valid. */
		time_t before = 0;
		assert_int_equal(ASN1_TIME_cmp_time_t(X509_get0_notBefore(x), 0), 1);
		struct tm tm;
		assert_int_equal(ASN1_TIME_to_tm(X509_get0_notBefore(x), &tm), 1);
		before = timegm(&tm) - 86400;
		assert_int_equal(fleet_ek_chain_verify(roots, x, before, &reason), FLEET_E_VERIFY);
		assert_string_equal(reason, "ek-chain-not-yet-valid");

		/* The next maker's roots do not vouch for this leaf. */
		struct fleet_ek_roots *other = NULL;
		char *odir = chain_dir(leaves[(i + 1) % n_leaves].stem);
		assert_int_equal(fleet_ek_roots_load(odir, &other, &ec), FLEET_OK);
		assert_int_equal(fleet_ek_chain_verify(other, x, 0, &reason), FLEET_E_VERIFY);
		assert_string_equal(reason, "ek-chain-untrusted");

		fleet_ek_roots_free(other);
		rm_rf(odir);
		free(odir);
		fleet_ek_roots_free(roots);
		rm_rf(dir);
		free(dir);
		X509_free(x);
	}
}

static void test_roots_all_parse(void **state)
{
	(void)state;
	char dirpath[512], path[1024];
	struct fleet_ek_roots *roots = NULL;
	struct fleet_errctx ec = {0};
	struct dirent *de;
	size_t files = 0, expired = 0, distinct = 0;
	X509 *seen[256];
	time_t now = time(NULL);

	snprintf(dirpath, sizeof(dirpath), "%s/ek-roots", shared_data_dir());
	DIR *d = opendir(dirpath);
	assert_non_null(d);
	while ((de = readdir(d)) != NULL) {
		struct fleet_buf b;
		X509 *x = NULL;
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dirpath, de->d_name);
		read_file_or_fail(path, &b);
		if (fleet_ek_cert_load(b.data, b.len, &x, &ec) != FLEET_OK)
			fail_msg("%s does not parse: %s", de->d_name, ec.detail);
		if (ASN1_TIME_cmp_time_t(X509_get0_notAfter(x), now) < 0)
			expired++;
		fb_free(&b);
		files++;
		/* keylime ships some certificates under two names (IFX1 and
		 * IFX_RSA_01I, ...); the loader keeps one of each. */
		int dup = 0;
		for (size_t i = 0; i < distinct; i++)
			dup |= X509_cmp(seen[i], x) == 0;
		if (dup || distinct == sizeof(seen) / sizeof(seen[0]))
			X509_free(x);
		else
			seen[distinct++] = x;
	}
	closedir(d);
	assert_true(files > 0);
	/* The directory's reason for this test: some have expired already. */
	assert_true(expired > 0);
	if (fleet_ek_roots_load(dirpath, &roots, &ec) != FLEET_OK)
		fail_msg("ek-roots: %s", ec.detail);
	assert_int_equal(fleet_ek_roots_count(roots), distinct);
	assert_true(distinct < sizeof(seen) / sizeof(seen[0]));
	for (size_t i = 0; i < distinct; i++)
		X509_free(seen[i]);
	fleet_ek_roots_free(roots);
}

/*
 * Every certificate in ek-roots that chains to a root there today must
 * still chain in 2060, when it and all its issuers have expired. (SHA-1
 * acceptance is tested on minted chains: the SHA-1 intermediates here are
 * Infineon's, whose root is absent, see docs/ek-validity.md.) Certificates that do not chain today (their
 * root is not in the set) are not counted: that is not a time question.
 */
static void test_roots_expired_chains_accepted(void **state)
{
	(void)state;
	char dirpath[512], path[1024];
	struct fleet_ek_roots *roots = NULL;
	struct dirent *de;
	int chained = 0;

	snprintf(dirpath, sizeof(dirpath), "%s/ek-roots", shared_data_dir());
	assert_int_equal(fleet_ek_roots_load(dirpath, &roots, NULL), FLEET_OK);
	DIR *d = opendir(dirpath);
	assert_non_null(d);
	while ((de = readdir(d)) != NULL) {
		struct fleet_buf b;
		const char *reason = NULL;
		X509 *x = NULL;
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dirpath, de->d_name);
		read_file_or_fail(path, &b);
		assert_int_equal(fleet_ek_cert_load(b.data, b.len, &x, NULL), FLEET_OK);
		fb_free(&b);
		if (X509_self_signed(x, 0) != 1 &&
		    fleet_ek_chain_verify(roots, x, 0, &reason) == FLEET_OK) {
			assert_int_equal(ASN1_TIME_cmp_time_t(X509_get0_notAfter(x), FAR_FUTURE),
					 -1);
			if (fleet_ek_chain_verify(roots, x, FAR_FUTURE, &reason) != FLEET_OK)
				fail_msg("%s: refused once expired: %s", de->d_name, reason);
			chained++;
		}
		X509_free(x);
	}
	closedir(d);
	assert_true(chained >= 10);
	fleet_ek_roots_free(roots);
}

int main(void)
{
	require_shared_data_or_skip();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_leaves_load_and_hash),
		cmocka_unit_test(test_leaves_in_tcg_header),
		cmocka_unit_test(test_leaves_oaep_label_same_hash),
		cmocka_unit_test(test_chains_verify),
		cmocka_unit_test(test_roots_all_parse),
		cmocka_unit_test(test_roots_expired_chains_accepted),
	};
	return cmocka_run_group_tests(tests, group_setup, NULL);
}
