/*
 * test_policy_evaluate.c: each refusal reason of the boot policy, triggered
 * on its own by one change to a synthetic log (lib/eventlog_build.h) or its
 * quote, against a clean case that passes. The quote is the clean replay of
 * the log unless a test says otherwise, which is what a TPM would sign.
 */
#include "tests/testutil.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/eventlog.h"
#include "lib/eventlog_build.h"
#include "lib/hex.h"
#include "lib/tpm.h"
#include "policy/evaluate.h"
#include "policy/profile.h"

/* EFI_GLOBAL_VARIABLE 8be4df61-93ca-11d2-aa0d-00e098032b8c as stored. */
static const uint8_t global_guid[16] = {0x61, 0xdf, 0xe4, 0x8b, 0xca, 0x93, 0xd2, 0x11,
					0xaa, 0x0d, 0x00, 0xe0, 0x98, 0x03, 0x2b, 0x8c};
/* EFI_IMAGE_SECURITY_DATABASE_GUID d719b2cb-3d3a-4596-a3bc-dad00e67656f. */
static const uint8_t db_guid[16] = {0xcb, 0xb2, 0x19, 0xd7, 0x3a, 0x3d, 0x96, 0x45,
				    0xa3, 0xbc, 0xda, 0xd0, 0x0e, 0x67, 0x65, 0x6f};
static const char authority_cert[] = "db certificate that signed shim";
static const char crtm_v1[] = "firmware v1";

/* One change each from the clean boot. */
struct boot {
	const char *crtm;   /* S-CRTM version on PCR 0 */
	int secure_boot;    /* byte measured; -1: no SecureBoot event */
	int sb_lie;         /* SecureBoot data says 01, digests cover 00 */
	uint8_t sep4[5];    /* PCR 4 separator data */
	size_t sep4_len;
	int sep4_bad_digest;
	int authority;      /* the listed authority is measured */
	int extra_authority;
	int app_before;     /* a listed boot application before PCR 4's separator */
	int apps_after;     /* listed boot applications after it (0..2) */
	int unlisted_apps;  /* unlisted boot applications after it */
	int sha256_gap;     /* an event without its sha256 digest */
	int no_pcr0;        /* nothing on PCR 0 ... */
	int locality;       /* ... and this StartupLocality (0: none) */
	int no_pcr7;        /* no event at all on PCR 7 */
};

static struct boot clean(void)
{
	struct boot b = {.crtm = crtm_v1, .secure_boot = 1, .sep4_len = 4, .authority = 1,
			 .apps_after = 2};
	return b;
}

static void ok(fleet_err e)
{
	assert_int_equal(e, FLEET_OK);
}

static void add_var(struct fleet_evlog_builder *lb, uint32_t pcr, uint32_t type,
		    const uint8_t *guid, const char *name, const void *data, size_t len)
{
	struct fleet_buf v;
	fb_init(&v);
	ok(fleet_evlog_efi_variable_data(guid, name, data, len, &v));
	ok(fleet_evlog_builder_add(lb, pcr, type, v.data, v.len));
	fb_free(&v);
}

static void add_app(struct fleet_evlog_builder *lb, const char *image)
{
	static const uint8_t devpath[4] = {0x7f, 0xff, 0x04, 0x00};
	struct fleet_buf d;
	fb_init(&d);
	ok(fleet_evlog_efi_image_load_data(0x1000, 0x2000, 0, devpath, sizeof(devpath), &d));
	ok(fleet_evlog_builder_add_measured(lb, 4, FLEET_EV_EFI_BOOT_SERVICES_APPLICATION,
					    d.data, d.len, image, strlen(image)));
	fb_free(&d);
}

static void build(const struct boot *b, struct fleet_buf *out)
{
	static const uint16_t algs[] = {FLEET_ALG_SHA1, FLEET_ALG_SHA256};
	static const uint8_t sep[4] = {0, 0, 0, 0};
	struct fleet_evlog_builder *lb;
	ok(fleet_evlog_builder_new(algs, 2, &lb));
	if (b->locality)
		ok(fleet_evlog_builder_add_startup_locality(lb, (uint8_t)b->locality));
	if (!b->no_pcr0)
		ok(fleet_evlog_builder_add(lb, 0, FLEET_EV_S_CRTM_VERSION, b->crtm,
					   strlen(b->crtm)));
	if (b->secure_boot >= 0 && !b->no_pcr7) {
		uint8_t v = (uint8_t)b->secure_boot;
		if (b->sb_lie) {
			/* Digests of SecureBoot=00, data claiming 01. */
			struct fleet_buf real, fake;
			fb_init(&real);
			fb_init(&fake);
			uint8_t off = 0, on = 1;
			ok(fleet_evlog_efi_variable_data(global_guid, "SecureBoot", &off, 1, &real));
			ok(fleet_evlog_efi_variable_data(global_guid, "SecureBoot", &on, 1, &fake));
			struct fleet_evlog_digest d[2] = {{.alg = FLEET_ALG_SHA1, .size = 20},
							  {.alg = FLEET_ALG_SHA256, .size = 32}};
			ok(fleet_hash(FLEET_ALG_SHA1, real.data, real.len, d[0].bytes));
			ok(fleet_hash(FLEET_ALG_SHA256, real.data, real.len, d[1].bytes));
			ok(fleet_evlog_builder_add_digests(lb, 7, FLEET_EV_EFI_VARIABLE_DRIVER_CONFIG,
							   fake.data, fake.len, d, 2));
			fb_free(&real);
			fb_free(&fake);
		} else {
			add_var(lb, 7, FLEET_EV_EFI_VARIABLE_DRIVER_CONFIG, global_guid,
				"SecureBoot", &v, 1);
		}
	}
	if (!b->no_pcr7)
		ok(fleet_evlog_builder_add(lb, 7, FLEET_EV_SEPARATOR, sep, 4));
	if (b->app_before)
		add_app(lb, "shim image");
	static const char action[] = "Calling EFI Application from Boot Option";
	if (b->sha256_gap) {
		struct fleet_evlog_digest d = {.alg = FLEET_ALG_SHA1, .size = 20};
		ok(fleet_hash(FLEET_ALG_SHA1, action, strlen(action), d.bytes));
		ok(fleet_evlog_builder_add_digests(lb, 4, FLEET_EV_EFI_ACTION, action,
						   strlen(action), &d, 1));
	} else {
		ok(fleet_evlog_builder_add(lb, 4, FLEET_EV_EFI_ACTION, action, strlen(action)));
	}
	if (!b->no_pcr0)
		ok(fleet_evlog_builder_add(lb, 0, FLEET_EV_SEPARATOR, sep, 4));
	if (b->sep4_bad_digest) {
		struct fleet_evlog_digest d[2] = {{.alg = FLEET_ALG_SHA1, .size = 20},
						  {.alg = FLEET_ALG_SHA256, .size = 32}};
		memset(d[0].bytes, 0x11, 20);
		memset(d[1].bytes, 0x11, 32);
		ok(fleet_evlog_builder_add_digests(lb, 4, FLEET_EV_SEPARATOR, b->sep4, b->sep4_len,
						   d, 2));
	} else {
		ok(fleet_evlog_builder_add(lb, 4, FLEET_EV_SEPARATOR, b->sep4, b->sep4_len));
	}
	if (b->authority && !b->no_pcr7)
		add_var(lb, 7, FLEET_EV_EFI_VARIABLE_AUTHORITY, db_guid, "db", authority_cert,
			sizeof(authority_cert));
	if (b->extra_authority)
		add_var(lb, 7, FLEET_EV_EFI_VARIABLE_AUTHORITY, db_guid, "db", "other", 5);
	if (b->apps_after >= 1)
		add_app(lb, "shim image");
	for (int i = 0; i < b->unlisted_apps; i++) {
		char img[32];
		snprintf(img, sizeof(img), "rootkit %d", i);
		add_app(lb, img);
	}
	if (b->apps_after >= 2)
		add_app(lb, "grub image");
	fb_init(out);
	ok(fleet_evlog_builder_finish(lb, out));
	fleet_evlog_builder_free(lb);
}

/* A parsed log, its replay, and a quote of PCRs 0, 2, 4, 7 in sha256. */
struct world {
	struct fleet_evlog *log;
	struct fleet_pcr_replay replay;
	struct fleet_pcr_value q[4];
	size_t nq;
};

static const unsigned quoted_pcrs[4] = {0, 2, 4, 7};

static void world_from(struct world *w, const struct boot *b, const struct boot *quote_of)
{
	struct fleet_buf raw;
	struct fleet_errctx ec = {0};
	build(b, &raw);
	ok(fleet_evlog_parse(raw.data, raw.len, &w->log, &ec));
	fb_free(&raw);
	ok(fleet_evlog_replay(w->log, &w->replay, &ec));
	/* The quote: the replay of quote_of's log (normally the same log). */
	struct fleet_evlog *ql = w->log;
	struct fleet_pcr_replay qr = w->replay;
	if (quote_of) {
		build(quote_of, &raw);
		ok(fleet_evlog_parse(raw.data, raw.len, &ql, &ec));
		fb_free(&raw);
		ok(fleet_evlog_replay(ql, &qr, &ec));
	}
	const struct fleet_pcr_bank *bank = fleet_pcr_replay_bank(&qr, FLEET_ALG_SHA256);
	assert_non_null(bank);
	assert_true(bank->replayable);
	w->nq = 4;
	for (size_t i = 0; i < 4; i++) {
		w->q[i].alg = FLEET_ALG_SHA256;
		w->q[i].index = (uint8_t)quoted_pcrs[i];
		w->q[i].size = 32;
		memcpy(w->q[i].digest, bank->pcr[quoted_pcrs[i]], 32);
	}
	if (ql != w->log)
		fleet_evlog_free(ql);
}

static void world_free(struct world *w)
{
	fleet_evlog_free(w->log);
}

static void hex256(const void *data, size_t len, char out[65])
{
	uint8_t d[32];
	ok(fleet_hash(FLEET_ALG_SHA256, data, len, d));
	fleet_hex_encode(d, 32, out);
}

/* The profile for the clean boot; extra is appended (pins). */
static struct fleet_profile *profile(const char *extra)
{
	struct boot b = clean();
	struct world w;
	world_from(&w, &b, NULL);
	char pcr0[65], auth[65], shim[65], grub[65], y[2048];
	fleet_hex_encode(fleet_pcr_replay_bank(&w.replay, FLEET_ALG_SHA256)->pcr[0], 32, pcr0);
	world_free(&w);
	struct fleet_buf v;
	fb_init(&v);
	ok(fleet_evlog_efi_variable_data(db_guid, "db", authority_cert, sizeof(authority_cert),
					 &v));
	hex256(v.data, v.len, auth);
	fb_free(&v);
	hex256("shim image", 10, shim);
	hex256("grub image", 10, grub);
	snprintf(y, sizeof(y),
		 "version: 1\nclass: test\nquote: {bank: sha256, pcrs: [0, 2, 4, 7]}\n"
		 "pcr0_by_bios: {\"v1\": %s}\nsecure_boot: true\n"
		 "allowed_authorities: [%s]\nrenew_required_authorities: [%s]\n"
		 "boot_applications: [%s, %s]\n%s",
		 pcr0, auth, auth, shim, grub, extra ? extra : "");
	struct fleet_profile *p;
	struct fleet_errctx err;
	if (fleet_profile_parse((const uint8_t *)y, strlen(y), &p, &err))
		fail_msg("profile: %u:%u: %s", err.line, err.column, err.detail);
	return p;
}

/* Evaluate b (quoted as itself) under the default profile. */
static void judge(const struct boot *b, const char *bios, bool renewal, struct fleet_verdict *v)
{
	struct fleet_profile *p = profile(NULL);
	struct world w;
	world_from(&w, b, NULL);
	struct fleet_policy_input in = {.log = w.log, .replay = &w.replay, .quoted = w.q,
					.n_quoted = w.nq, .bios_version = bios,
					.renewal = renewal};
	ok(fleet_policy_evaluate(p, &in, v));
	world_free(&w);
	fleet_profile_free(p);
}

/* The verdict failed with exactly one reason, this one. */
static void only(const struct fleet_verdict *v, const char *reason)
{
	if (v->pass || v->n_reasons != 1 || strcmp(v->reasons[0].reason, reason)) {
		for (size_t i = 0; i < v->n_reasons; i++)
			print_message("  got %s: %s\n", v->reasons[i].reason, v->reasons[i].detail);
		fail_msg("want exactly '%s', got %zu reasons (pass=%d)", reason, v->n_reasons,
			 v->pass);
	}
	assert_int_equal(v->n_dropped, 0);
}

/* The verdict failed with exactly these two reasons. */
static void exactly2(const struct fleet_verdict *v, const char *r1, const char *r2)
{
	if (v->pass || v->n_reasons != 2 || !fleet_verdict_has(v, r1) ||
	    !fleet_verdict_has(v, r2)) {
		for (size_t i = 0; i < v->n_reasons; i++)
			print_message("  got %s: %s\n", v->reasons[i].reason, v->reasons[i].detail);
		fail_msg("want exactly '%s' and '%s'", r1, r2);
	}
}

static void test_clean_pass(void **state)
{
	(void)state;
	struct boot b = clean();
	struct fleet_verdict v;
	judge(&b, "v1", true, &v);
	for (size_t i = 0; i < v.n_reasons; i++)
		print_message("  %s: %s\n", v.reasons[i].reason, v.reasons[i].detail);
	assert_true(v.pass);
	assert_true(v.quote_checked);
	assert_int_equal(v.n_reasons, 0);
}

static void test_log_quote_mismatch(void **state)
{
	(void)state;
	struct boot b = clean();
	struct fleet_profile *p = profile(NULL);
	struct world w;
	world_from(&w, &b, NULL);
	w.q[2].digest[5] ^= 1; /* PCR 4 */
	struct fleet_policy_input in = {.log = w.log, .replay = &w.replay, .quoted = w.q,
					.n_quoted = w.nq, .bios_version = "v1"};
	struct fleet_verdict v;
	ok(fleet_policy_evaluate(p, &in, &v));
	only(&v, "log-quote-mismatch");
	assert_non_null(strstr(v.reasons[0].detail, "PCR 4"));
	world_free(&w);
	fleet_profile_free(p);
}

/* PCR 2 has no event in any of these logs: zeros pass (clean), anything else
 * is "pcr-unlogged-nonzero", since the log says nothing about it. */
static void test_unlogged_pcr(void **state)
{
	(void)state;
	struct boot b = clean();
	struct fleet_profile *p = profile(NULL);
	struct world w;
	world_from(&w, &b, NULL);
	w.q[1].digest[31] = 1; /* PCR 2 */
	struct fleet_policy_input in = {.log = w.log, .replay = &w.replay, .quoted = w.q,
					.n_quoted = w.nq, .bios_version = "v1"};
	struct fleet_verdict v;
	ok(fleet_policy_evaluate(p, &in, &v));
	only(&v, "pcr-unlogged-nonzero");
	assert_non_null(strstr(v.reasons[0].detail, "PCR 2"));
	world_free(&w);
	fleet_profile_free(p);
}

/* The attack this rule exists for: a log that drops every PCR 7 event
 * replays nothing for PCR 7, so no replayed value can mismatch; the quote of
 * the real boot still holds a measured PCR 7, and that must refuse. */
static void test_log_omitting_a_quoted_pcr(void **state)
{
	(void)state;
	struct fleet_profile *p = profile(NULL);
	struct boot b = clean(), full = clean();
	b.no_pcr7 = 1;
	struct world w;
	world_from(&w, &b, &full);
	struct fleet_policy_input in = {.log = w.log, .replay = &w.replay, .quoted = w.q,
					.n_quoted = w.nq, .bios_version = "v1"};
	struct fleet_verdict v;
	ok(fleet_policy_evaluate(p, &in, &v));
	assert_false(v.pass);
	assert_true(fleet_verdict_has(&v, "pcr-unlogged-nonzero"));
	assert_non_null(strstr(v.reasons[0].detail, "PCR 7"));
	assert_false(fleet_verdict_has(&v, "log-quote-mismatch"));
	world_free(&w);
	fleet_profile_free(p);
}

static void test_quote_lacks_pcr(void **state)
{
	(void)state;
	struct boot b = clean();
	struct fleet_profile *p = profile(NULL);
	struct world w;
	world_from(&w, &b, NULL);
	struct fleet_policy_input in = {.log = w.log, .replay = &w.replay, .quoted = w.q,
					.n_quoted = 3, .bios_version = "v1"}; /* no PCR 7 */
	struct fleet_verdict v;
	ok(fleet_policy_evaluate(p, &in, &v));
	only(&v, "pcr-not-quoted");
	world_free(&w);
	fleet_profile_free(p);
}

static void test_no_quote_checks_replay_only(void **state)
{
	(void)state;
	struct boot b = clean();
	struct fleet_profile *p = profile(NULL);
	struct world w;
	world_from(&w, &b, NULL);
	struct fleet_policy_input in = {.log = w.log, .replay = &w.replay, .bios_version = "v1"};
	struct fleet_verdict v;
	ok(fleet_policy_evaluate(p, &in, &v));
	assert_true(v.pass);
	assert_false(v.quote_checked);
	world_free(&w);
	fleet_profile_free(p);
}

static void test_bank_not_replayable(void **state)
{
	(void)state;
	struct boot b = clean(), good = clean();
	b.sha256_gap = 1;
	struct fleet_verdict v;
	struct fleet_profile *p = profile(NULL);
	struct world w;
	world_from(&w, &b, &good);
	struct fleet_policy_input in = {.log = w.log, .replay = &w.replay, .quoted = w.q,
					.n_quoted = w.nq, .bios_version = "v1"};
	ok(fleet_policy_evaluate(p, &in, &v));
	only(&v, "bank-not-replayable");
	world_free(&w);
	fleet_profile_free(p);
}

static void test_bios(void **state)
{
	(void)state;
	struct boot b = clean();
	struct fleet_verdict v;
	judge(&b, NULL, false, &v);
	only(&v, "bios-version-missing");
	judge(&b, "v2", false, &v);
	only(&v, "pcr0-unknown-bios");
	assert_non_null(strstr(v.reasons[0].detail, "'v2'"));
	b.crtm = "firmware v1 patched";
	judge(&b, "v1", false, &v);
	only(&v, "pcr0-mismatch");
}

static void test_pinned(void **state)
{
	(void)state;
	struct boot b = clean();
	struct world w;
	world_from(&w, &b, NULL);
	struct fleet_policy_input in = {.log = w.log, .replay = &w.replay, .quoted = w.q,
					.n_quoted = w.nq, .bios_version = "v1"};
	struct fleet_verdict v;
	struct fleet_profile *p = profile("pcrs: {\"2\": "
					  "\"0000000000000000000000000000000000000000000000000000000000000000\"}\n");
	ok(fleet_policy_evaluate(p, &in, &v));
	assert_true(v.pass);
	fleet_profile_free(p);
	p = profile("pcrs: {\"2\": "
		    "\"0000000000000000000000000000000000000000000000000000000000000001\"}\n");
	ok(fleet_policy_evaluate(p, &in, &v));
	only(&v, "pcr-pinned-mismatch");
	fleet_profile_free(p);
	world_free(&w);
}

static void test_separators(void **state)
{
	(void)state;
	struct boot b = clean();
	struct fleet_verdict v;
	memset(b.sep4, 0xff, 4);
	judge(&b, "v1", false, &v);
	only(&v, "separator-error");
	/* A separator that is not proven marks no boundary either, so the
	 * boot applications after it are not "after the separator". */
	b = clean();
	b.sep4[3] = 1;
	judge(&b, "v1", false, &v);
	exactly2(&v, "separator-malformed", "no-boot-application");
	b = clean();
	b.sep4_len = 5;
	judge(&b, "v1", false, &v);
	exactly2(&v, "separator-malformed", "no-boot-application");
	b = clean();
	b.sep4_bad_digest = 1;
	judge(&b, "v1", false, &v);
	exactly2(&v, "separator-malformed", "no-boot-application");
	assert_non_null(strstr(v.reasons[0].detail, "not the hash of its data"));
}

static void test_secure_boot(void **state)
{
	(void)state;
	struct boot b = clean();
	struct fleet_verdict v;
	b.secure_boot = 0;
	judge(&b, "v1", false, &v);
	only(&v, "secure-boot-mismatch");
	b.secure_boot = -1;
	judge(&b, "v1", false, &v);
	only(&v, "secure-boot-unmeasured");
	b.secure_boot = 2;
	judge(&b, "v1", false, &v);
	only(&v, "secure-boot-unmeasured");
	/* The data claims 01, the extended digest is of 00: believe neither. */
	b = clean();
	b.sb_lie = 1;
	judge(&b, "v1", false, &v);
	exactly2(&v, "event-data-mismatch", "secure-boot-unmeasured");
}

/*
 * The relabelling attacks found in review. The TPM binds digests, not event
 * types or names: each log below replays to its own quote (the attacker's
 * TPM really holds these values: firmware measured the honest events, the
 * attacker's OS extended the rest after boot), and each must still fail.
 */
static void attack_log(int which, struct fleet_buf *out)
{
	static const uint16_t algs[] = {FLEET_ALG_SHA1, FLEET_ALG_SHA256};
	static const uint8_t sep[4] = {0, 0, 0, 0};
	static const char action[] = "Calling EFI Application from Boot Option";
	uint8_t off = 0, on = 1;
	struct fleet_evlog_builder *lb;
	ok(fleet_evlog_builder_new(algs, 2, &lb));
	ok(fleet_evlog_builder_add(lb, 0, FLEET_EV_S_CRTM_VERSION, crtm_v1, strlen(crtm_v1)));
	if (which == 0) {
		/* Firmware measured SecureBoot=00; the log calls it an authority. */
		add_var(lb, 7, FLEET_EV_EFI_VARIABLE_AUTHORITY, global_guid, "SecureBoot", &off, 1);
	} else if (which == 1) {
		/* The digests of SecureBoot=00 under data renamed SecureBooT. */
		struct fleet_buf real, renamed;
		fb_init(&real);
		fb_init(&renamed);
		ok(fleet_evlog_efi_variable_data(global_guid, "SecureBoot", &off, 1, &real));
		ok(fleet_evlog_efi_variable_data(global_guid, "SecureBooT", &off, 1, &renamed));
		struct fleet_evlog_digest d[2] = {{.alg = FLEET_ALG_SHA1, .size = 20},
						  {.alg = FLEET_ALG_SHA256, .size = 32}};
		ok(fleet_hash(FLEET_ALG_SHA1, real.data, real.len, d[0].bytes));
		ok(fleet_hash(FLEET_ALG_SHA256, real.data, real.len, d[1].bytes));
		ok(fleet_evlog_builder_add_digests(lb, 7, FLEET_EV_EFI_VARIABLE_DRIVER_CONFIG,
						   renamed.data, renamed.len, d, 2));
		fb_free(&real);
		fb_free(&renamed);
	} else {
		add_var(lb, 7, FLEET_EV_EFI_VARIABLE_DRIVER_CONFIG, global_guid, "SecureBoot", &on, 1);
	}
	ok(fleet_evlog_builder_add(lb, 7, FLEET_EV_SEPARATOR, sep, 4));
	ok(fleet_evlog_builder_add(lb, 4, FLEET_EV_EFI_ACTION, action, strlen(action)));
	ok(fleet_evlog_builder_add(lb, 0, FLEET_EV_SEPARATOR, sep, 4));
	ok(fleet_evlog_builder_add(lb, 4, FLEET_EV_SEPARATOR, sep, 4));
	add_var(lb, 7, FLEET_EV_EFI_VARIABLE_AUTHORITY, db_guid, "db", authority_cert,
		sizeof(authority_cert));
	if (which == 3) {
		/* An unlisted authority, called a configuration variable. */
		add_var(lb, 7, FLEET_EV_EFI_VARIABLE_DRIVER_CONFIG, db_guid, "db", "attacker ca", 11);
	}
	add_app(lb, "shim image");
	if (which == 2) {
		/* An unlisted boot application, called a driver. */
		static const uint8_t devpath[4] = {0x7f, 0xff, 0x04, 0x00};
		struct fleet_buf dd;
		fb_init(&dd);
		ok(fleet_evlog_efi_image_load_data(0x1000, 0x2000, 0, devpath, 4, &dd));
		ok(fleet_evlog_builder_add_measured(lb, 4, FLEET_EV_EFI_BOOT_SERVICES_DRIVER, dd.data,
						    dd.len, "rootkit", 7));
		fb_free(&dd);
	}
	if (which == 4) {
		/* Unlisted code, called an EFI action whose data is the image. */
		static const uint8_t image[] = {'M', 'Z', 0x90, 0x00, 0x03, 0x00};
		ok(fleet_evlog_builder_add(lb, 4, FLEET_EV_EFI_ACTION, image, sizeof(image)));
	}
	add_app(lb, "grub image");
	if (which == 0 || which == 1) {
		/* The attacker's OS extends a SecureBoot=01 measurement later. */
		add_var(lb, 7, FLEET_EV_EFI_VARIABLE_DRIVER_CONFIG, global_guid, "SecureBoot", &on, 1);
	}
	fb_init(out);
	ok(fleet_evlog_builder_finish(lb, out));
	fleet_evlog_builder_free(lb);
}

static void judge_attack(int which, struct fleet_verdict *v)
{
	struct fleet_buf raw;
	struct fleet_errctx ec = {0};
	struct fleet_evlog *log;
	struct fleet_pcr_replay r;
	struct fleet_pcr_value q[4];
	attack_log(which, &raw);
	ok(fleet_evlog_parse(raw.data, raw.len, &log, &ec));
	fb_free(&raw);
	ok(fleet_evlog_replay(log, &r, &ec));
	const struct fleet_pcr_bank *bank = fleet_pcr_replay_bank(&r, FLEET_ALG_SHA256);
	for (size_t i = 0; i < 4; i++) {
		q[i].alg = FLEET_ALG_SHA256;
		q[i].index = (uint8_t)quoted_pcrs[i];
		q[i].size = 32;
		memcpy(q[i].digest, bank->pcr[quoted_pcrs[i]], 32);
	}
	struct fleet_profile *p = profile(NULL);
	struct fleet_policy_input in = {.log = log, .replay = &r, .quoted = q, .n_quoted = 4,
					.bios_version = "v1"};
	ok(fleet_policy_evaluate(p, &in, v));
	for (size_t i = 0; i < v->n_reasons; i++)
		print_message("  attack %d: %s: %s\n", which, v->reasons[i].reason,
			      v->reasons[i].detail);
	fleet_profile_free(p);
	fleet_evlog_free(log);
}

static void test_relabelled_events_still_judged(void **state)
{
	(void)state;
	struct fleet_verdict v;
	/* The control: the same shape, honest, passes. */
	judge_attack(5, &v);
	assert_true(v.pass);
	judge_attack(0, &v); /* SecureBoot=00 relabelled, 01 forged after boot */
	assert_false(v.pass);
	assert_true(fleet_verdict_has(&v, "secure-boot-ambiguous"));
	judge_attack(1, &v); /* SecureBoot=00 renamed, 01 forged after boot */
	assert_false(v.pass);
	assert_true(fleet_verdict_has(&v, "event-data-mismatch"));
	judge_attack(2, &v); /* unlisted boot application relabelled as a driver */
	assert_false(v.pass);
	assert_true(fleet_verdict_has(&v, "boot-application-not-allowed"));
	judge_attack(3, &v); /* unlisted authority relabelled as a config variable */
	assert_false(v.pass);
	assert_true(fleet_verdict_has(&v, "authority-not-allowed"));
	judge_attack(4, &v); /* code relabelled as an EFI action */
	assert_false(v.pass);
	assert_true(fleet_verdict_has(&v, "boot-application-not-allowed"));
}

/*
 * A digest binds what it hashes and nothing more. Firmware measures an
 * EV_EFI_VARIABLE_BOOT over its VariableData alone, so in such a record the
 * GUID and the name are the log's word; and no record's type is bound. Each
 * log below replays to its own quote, and only PCR 7 is quoted. The policy
 * must read a PCR 7 variable's name only when the digest binds it, and only
 * from an EV_EFI_VARIABLE_DRIVER_CONFIG record.
 */
enum bind_case {
	BIND_HONEST,      /* SecureBoot=01, DRIVER_CONFIG, digest of the record */
	BIND_REWRAPPED,   /* that record as EV_EFI_VARIABLE_BOOT, digest of 01 alone */
	BIND_SWAPPED,     /* the real SecureBoot=00 hidden, a data-only 01 named SecureBoot */
	BIND_OTHER_TYPE,  /* SecureBoot=01 bound whole, under another type */
	BIND_LOOKALIKES,  /* honest, plus unbound or mistyped SecureBoot=00 after the separator */
};

/* A UEFI_VARIABLE_DATA record whose digests (every bank) are of measured. */
static void add_var_measured(struct fleet_evlog_builder *lb, uint32_t type, const char *name,
			     const void *data, size_t len, const void *measured, size_t mlen)
{
	struct fleet_buf v;
	fb_init(&v);
	ok(fleet_evlog_efi_variable_data(global_guid, name, data, len, &v));
	ok(fleet_evlog_builder_add_measured(lb, 7, type, v.data, v.len, measured, mlen));
	fb_free(&v);
}

static void bind_log(enum bind_case which, uint32_t other_type, struct fleet_buf *out)
{
	static const uint16_t algs[] = {FLEET_ALG_SHA1, FLEET_ALG_SHA256};
	static const uint8_t sep[4] = {0, 0, 0, 0};
	uint8_t off = 0, on = 1;
	struct fleet_evlog_builder *lb;
	ok(fleet_evlog_builder_new(algs, 2, &lb));
	switch (which) {
	case BIND_HONEST:
	case BIND_LOOKALIKES:
		add_var(lb, 7, FLEET_EV_EFI_VARIABLE_DRIVER_CONFIG, global_guid, "SecureBoot", &on, 1);
		break;
	case BIND_REWRAPPED:
		/* GUID, name and byte kept; the digest the TPM holds is of the
		 * byte 01 alone, which binds neither GUID nor name. */
		add_var_measured(lb, FLEET_EV_EFI_VARIABLE_BOOT, "SecureBoot", &on, 1, &on, 1);
		break;
	case BIND_SWAPPED: {
		/* Firmware measured SecureBoot=00 (the whole record) and some
		 * one-byte 01 over its data alone. The log wraps the first in a
		 * boot variable whose VariableData is that whole record (so its
		 * digest is "of the data"), and names the second SecureBoot. */
		struct fleet_buf real;
		fb_init(&real);
		ok(fleet_evlog_efi_variable_data(global_guid, "SecureBoot", &off, 1, &real));
		add_var_measured(lb, FLEET_EV_EFI_VARIABLE_BOOT, "Boot0000", real.data, real.len,
				 real.data, real.len);
		add_var_measured(lb, FLEET_EV_EFI_VARIABLE_BOOT, "SecureBoot", &on, 1, &on, 1);
		fb_free(&real);
		break;
	}
	case BIND_OTHER_TYPE:
		add_var(lb, 7, other_type, global_guid, "SecureBoot", &on, 1);
		break;
	}
	ok(fleet_evlog_builder_add(lb, 7, FLEET_EV_SEPARATOR, sep, 4));
	if (which == BIND_LOOKALIKES) {
		/* Whatever booted may extend PCR 7 later. Neither of these is
		 * a SecureBoot measurement: the first's name is not bound, the
		 * second is not a configuration variable. They are events
		 * extended into PCR 7, judged (by digest) as authorities. */
		add_var_measured(lb, FLEET_EV_EFI_VARIABLE_BOOT, "SecureBoot", &off, 1, &off, 1);
		add_var(lb, 7, FLEET_EV_EFI_VARIABLE_AUTHORITY, global_guid, "SecureBoot", &off, 1);
	}
	fb_init(out);
	ok(fleet_evlog_builder_finish(lb, out));
	fleet_evlog_builder_free(lb);
}

/* The bind_log under a profile that quotes PCR 7 alone and wants Secure Boot
 * on; the quote is the log's own replay. */
static void judge_bind(enum bind_case which, uint32_t other_type, struct fleet_verdict *v)
{
	static const char *y = "version: 1\nclass: t\nquote: {bank: sha256, pcrs: [7]}\n"
			       "secure_boot: true\n";
	struct fleet_profile *p;
	struct fleet_errctx err;
	ok(fleet_profile_parse((const uint8_t *)y, strlen(y), &p, &err));
	struct fleet_buf raw;
	struct fleet_errctx ec = {0};
	struct fleet_evlog *log;
	struct fleet_pcr_replay r;
	bind_log(which, other_type, &raw);
	ok(fleet_evlog_parse(raw.data, raw.len, &log, &ec));
	fb_free(&raw);
	ok(fleet_evlog_replay(log, &r, &ec));
	const struct fleet_pcr_bank *bank = fleet_pcr_replay_bank(&r, FLEET_ALG_SHA256);
	assert_non_null(bank);
	assert_true(bank->replayable);
	struct fleet_pcr_value q = {.alg = FLEET_ALG_SHA256, .index = 7, .size = 32};
	memcpy(q.digest, bank->pcr[7], 32);
	struct fleet_policy_input in = {.log = log, .replay = &r, .quoted = &q, .n_quoted = 1};
	ok(fleet_policy_evaluate(p, &in, v));
	assert_true(v->quote_checked);
	assert_false(fleet_verdict_has(v, "log-quote-mismatch"));
	for (size_t i = 0; i < v->n_reasons; i++)
		print_message("  bind %d/0x%x: %s: %s\n", (int)which, other_type,
			      v->reasons[i].reason, v->reasons[i].detail);
	fleet_evlog_free(log);
	fleet_profile_free(p);
}

/* Exactly n reasons, each one of want[0..n) and every one of them present. */
static void reasons_are(const struct fleet_verdict *v, size_t n, const char *const *want,
			size_t n_want)
{
	bool ok_ = !v->pass && v->n_reasons == n && v->n_dropped == 0;
	for (size_t i = 0; ok_ && i < v->n_reasons; i++) {
		bool listed = false;
		for (size_t k = 0; k < n_want; k++)
			listed |= !strcmp(v->reasons[i].reason, want[k]);
		ok_ = listed;
	}
	for (size_t k = 0; ok_ && k < n_want; k++)
		ok_ = fleet_verdict_has(v, want[k]);
	if (!ok_)
		fail_msg("want %zu reasons among the %zu expected, got %zu (pass=%d)", n, n_want,
			 v->n_reasons, v->pass);
}

/* (d) A SecureBoot record the digest binds whole, typed as configuration,
 * is read: it passes, its 00 twin fails as off, and look-alikes whose name
 * is not bound or whose type is not configuration change nothing. */
static void test_bound_secure_boot_is_read(void **state)
{
	(void)state;
	struct fleet_verdict v;
	judge_bind(BIND_HONEST, 0, &v);
	assert_true(v.pass);
	assert_int_equal(v.n_reasons, 0);
	judge_bind(BIND_LOOKALIKES, 0, &v);
	assert_true(v.pass);
	assert_int_equal(v.n_reasons, 0);
}

/* (a) The honest SecureBoot=01 record re-wrapped as EV_EFI_VARIABLE_BOOT,
 * its digest over the byte alone: the name is not bound, so this is no
 * SecureBoot measurement and no readable configuration variable. */
static void test_rewrapped_boot_variable_not_secure_boot(void **state)
{
	(void)state;
	struct fleet_verdict v;
	judge_bind(BIND_REWRAPPED, 0, &v);
	static const char *const want[] = {"event-data-mismatch", "secure-boot-unmeasured"};
	reasons_are(&v, 2, want, 2);
	assert_non_null(strstr(v.reasons[0].detail, "EV_EFI_VARIABLE_BOOT at byte"));
	assert_non_null(strstr(v.reasons[0].detail, "binds: variable-data"));
}

/* (b) A data-only boot variable whose name claims SecureBoot, while the real
 * SecureBoot=00 is hidden in another data-only wrapper: neither is read. */
static void test_unbound_name_claiming_secure_boot(void **state)
{
	(void)state;
	struct fleet_verdict v;
	judge_bind(BIND_SWAPPED, 0, &v);
	static const char *const want[] = {"event-data-mismatch", "secure-boot-unmeasured"};
	reasons_are(&v, 3, want, 2);
	assert_false(fleet_verdict_has(&v, "secure-boot-mismatch"));
}

/* (c) SecureBoot=01, the whole record bound, under a type that is not
 * EV_EFI_VARIABLE_DRIVER_CONFIG: the name is bound, the type is not, and
 * the rule wants both, so it is not SecureBoot. */
static void test_other_type_named_secure_boot_not_matched(void **state)
{
	(void)state;
	static const uint32_t types[] = {
		FLEET_EV_EFI_VARIABLE_AUTHORITY, FLEET_EV_EFI_VARIABLE_BOOT,
		FLEET_EV_EFI_VARIABLE_BOOT2,     FLEET_EV_EFI_ACTION,
		FLEET_EV_EFI_PLATFORM_FIRMWARE_BLOB, FLEET_EV_PLATFORM_CONFIG_FLAGS,
	};
	static const char *const want[] = {"event-data-mismatch", "secure-boot-unmeasured"};
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		struct fleet_verdict v;
		judge_bind(BIND_OTHER_TYPE, types[i], &v);
		reasons_are(&v, 2, want, 2);
		assert_non_null(strstr(v.reasons[0].detail, "not EV_EFI_VARIABLE_DRIVER_CONFIG"));
	}
}

static void test_authorities(void **state)
{
	(void)state;
	struct boot b = clean();
	struct fleet_verdict v;
	b.extra_authority = 1;
	judge(&b, "v1", false, &v);
	only(&v, "authority-not-allowed");
	b = clean();
	b.authority = 0;
	judge(&b, "v1", false, &v);
	assert_true(v.pass); /* required only at renewal */
	judge(&b, "v1", true, &v);
	only(&v, "renew-authority-missing");
}

static void test_boot_applications(void **state)
{
	(void)state;
	struct boot b = clean();
	struct fleet_verdict v;
	b.unlisted_apps = 1;
	judge(&b, "v1", false, &v);
	only(&v, "boot-application-not-allowed");
	b = clean();
	b.apps_after = 0;
	judge(&b, "v1", false, &v);
	only(&v, "no-boot-application");
	/* A listed application before the separator does not count. */
	b.app_before = 1;
	judge(&b, "v1", false, &v);
	only(&v, "no-boot-application");
	b.apps_after = 1;
	judge(&b, "v1", false, &v);
	assert_true(v.pass);
}

static void test_all_reasons_collected_and_capped(void **state)
{
	(void)state;
	struct boot b = clean();
	struct fleet_verdict v;
	b.secure_boot = 0;
	b.extra_authority = 1;
	judge(&b, "v2", false, &v);
	assert_int_equal(v.n_reasons, 3);
	assert_true(fleet_verdict_has(&v, "pcr0-unknown-bios"));
	assert_true(fleet_verdict_has(&v, "secure-boot-mismatch"));
	assert_true(fleet_verdict_has(&v, "authority-not-allowed"));
	b = clean();
	b.unlisted_apps = FLEET_VERDICT_MAX_REASONS + 8;
	judge(&b, "v1", false, &v);
	assert_false(v.pass);
	assert_int_equal(v.n_reasons, FLEET_VERDICT_MAX_REASONS);
	assert_int_equal(v.n_dropped, 8);
}

static void test_startup_locality(void **state)
{
	(void)state;
	static const char *y = "version: 1\nclass: t\nquote: {bank: sha256, pcrs: [0]}\n"
			       "secure_boot: any\n";
	struct fleet_profile *p;
	struct fleet_errctx err;
	ok(fleet_profile_parse((const uint8_t *)y, strlen(y), &p, &err));
	struct boot b = clean();
	b.no_pcr0 = 1;
	b.locality = 3;
	struct world w;
	world_from(&w, &b, NULL);
	memset(w.q[0].digest, 0, 32);
	w.q[0].digest[31] = 3;
	struct fleet_policy_input in = {.log = w.log, .replay = &w.replay, .quoted = w.q,
					.n_quoted = w.nq};
	struct fleet_verdict v;
	ok(fleet_policy_evaluate(p, &in, &v));
	assert_true(v.pass);
	w.q[0].digest[31] = 0;
	ok(fleet_policy_evaluate(p, &in, &v));
	only(&v, "pcr-unlogged-nonzero");
	world_free(&w);
	fleet_profile_free(p);
}

static void test_json(void **state)
{
	(void)state;
	struct boot b = clean();
	struct fleet_verdict v;
	b.secure_boot = 0;
	judge(&b, "v1", false, &v);
	struct fleet_profile *p = profile(NULL);
	json_t *o = fleet_verdict_json(p, &v);
	assert_non_null(o);
	assert_string_equal(json_string_value(json_object_get(o, "verdict")), "fail");
	assert_string_equal(json_string_value(json_object_get(o, "class")), "test");
	assert_true(json_is_true(json_object_get(o, "quote_checked")));
	json_t *r = json_object_get(o, "reasons");
	assert_int_equal(json_array_size(r), 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(r, 0), "reason")),
			    "secure-boot-mismatch");
	assert_int_equal(json_integer_value(json_object_get(o, "reasons_dropped")), 0);
	json_decref(o);
	fleet_profile_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clean_pass),
		cmocka_unit_test(test_log_quote_mismatch),
		cmocka_unit_test(test_unlogged_pcr),
		cmocka_unit_test(test_log_omitting_a_quoted_pcr),
		cmocka_unit_test(test_quote_lacks_pcr),
		cmocka_unit_test(test_no_quote_checks_replay_only),
		cmocka_unit_test(test_bank_not_replayable),
		cmocka_unit_test(test_bios),
		cmocka_unit_test(test_pinned),
		cmocka_unit_test(test_separators),
		cmocka_unit_test(test_secure_boot),
		cmocka_unit_test(test_relabelled_events_still_judged),
		cmocka_unit_test(test_bound_secure_boot_is_read),
		cmocka_unit_test(test_rewrapped_boot_variable_not_secure_boot),
		cmocka_unit_test(test_unbound_name_claiming_secure_boot),
		cmocka_unit_test(test_other_type_named_secure_boot_not_matched),
		cmocka_unit_test(test_authorities),
		cmocka_unit_test(test_boot_applications),
		cmocka_unit_test(test_all_reasons_collected_and_capped),
		cmocka_unit_test(test_startup_locality),
		cmocka_unit_test(test_json),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
