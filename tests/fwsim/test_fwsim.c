/*
 * test_fwsim.c: the firmware simulator against a real TPM (swtpm).
 *
 *  - a boot of every event kind leaves the TPM's PCRs 0-7, in both banks,
 *    at exactly the replay of the log fwsim wrote, and each event holds
 *    what real firmware writes;
 *  - bad events files are refused with their line;
 *  - real logs from ../shared/data replayed into a TPM reach their
 *    independently computed PCR values (skipped without the data), and logs
 *    a TPM cannot reproduce are refused before anything is extended;
 *  - tests/fwsim/worker.events.yaml, booted by the fleet-fwsim tool, passes
 *    tests/fwsim/worker.profile.yaml with the TPM's PCRs as the quote, and the
 *    same boot with SecureBoot = 00 is refused.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "lib/eventlog.h"
#include "lib/eventlog_build.h"
#include "lib/hex.h"
#include "tests/testutil.h"
#include "tests/fwsim/fwsim.h"
#include "tests/tpm/swtpm_harness.h"

/* Every kind, with a line number the refusal tests can name. */
static const char every_kind_yaml[] =
	"events:\n"
	"  - scrtm_version: \"fleetd-sim firmware 1.0\"\n"
	"  - firmware_blob: {pcr: 0, base: 0xffc00000, length: 0x400000, content: \"bios\"}\n"
	"  - efi_variable: {pcr: 7, name: SecureBoot, guid: global, data: \"01\"}\n"
	"  - efi_variable: {pcr: 7, name: db, guid: image_security_db, data: \"a1b2\"}\n"
	"  - efi_variable: {pcr: 7, name: dbx, guid: image_security_db, data: \"\"}\n"
	"  - separator: {pcrs: [7]}\n"
	"  - efi_variable_boot: {pcr: 1, name: BootOrder, data: \"0000\"}\n"
	"  - efi_action: {pcr: 4, text: \"Calling EFI Application from Boot Option\"}\n"
	"  - separator: {pcrs: [0, 1, 2, 3, 4, 5, 6]}\n"
	"  - authority: {pcr: 7, name: db, guid: d719b2cb-3d3a-4596-a3bc-dad00e67656f, "
	"data: \"00ff\"}\n"
	"  - boot_application: {pcr: 4, path: \"\\\\EFI\\\\BOOT\\\\BOOTX64.EFI\", image: "
	"\"shim\"}\n";

static struct swtpm start_tpm(const char *banks)
{
	struct swtpm t;
	struct swtpm_opts o = {.pcr_banks = banks, .no_ek_certs = true};
	memset(&t, 0, sizeof(t));
	if (swtpm_start(&t, &o) != 0)
		fail_msg("swtpm with banks %s did not start", banks);
	return t;
}

static void pcr_read(ESYS_CONTEXT *esys, uint16_t alg, unsigned pcr, uint8_t *out,
		     size_t size)
{
	TPML_PCR_SELECTION sel = {.count = 1};
	sel.pcrSelections[0].hash = alg;
	sel.pcrSelections[0].sizeofSelect = 3;
	sel.pcrSelections[0].pcrSelect[pcr / 8] = (uint8_t)(1u << (pcr % 8));
	UINT32 counter;
	TPML_PCR_SELECTION *got_sel = NULL;
	TPML_DIGEST *vals = NULL;
	assert_int_equal(Esys_PCR_Read(esys, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &sel,
				       &counter, &got_sel, &vals),
			 TSS2_RC_SUCCESS);
	assert_int_equal(vals->count, 1);
	assert_int_equal(vals->digests[0].size, size);
	memcpy(out, vals->digests[0].buffer, size);
	Esys_Free(got_sel);
	Esys_Free(vals);
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

static void write_bytes(const char *path, const struct fleet_buf *b)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(b->data, 1, b->len, f), b->len);
	assert_int_equal(fclose(f), 0);
}

/* The TPM's PCRs 0-7 in bank alg equal the log's replay. */
static void assert_tpm_matches_log(ESYS_CONTEXT *esys, const struct fleet_evlog *log,
				   uint16_t alg)
{
	struct fleet_pcr_replay r;
	struct fleet_errctx ec = {0};
	assert_int_equal(fleet_evlog_replay(log, &r, &ec), FLEET_OK);
	const struct fleet_pcr_bank *bank = fleet_pcr_replay_bank(&r, alg);
	assert_non_null(bank);
	assert_true(bank->replayable);
	for (unsigned pcr = 0; pcr < 8; pcr++) {
		uint8_t v[FLEET_DIGEST_MAX];
		pcr_read(esys, alg, pcr, v, bank->size);
		if (memcmp(v, bank->pcr[pcr], bank->size))
			fail_msg("%s PCR %u: the TPM and the log's replay differ",
				 fleet_hash_alg_name(alg), pcr);
	}
}

static const struct fleet_evlog_event *find(const struct fleet_evlog *log, uint32_t type,
					    uint32_t pcr)
{
	for (size_t i = 0; i < log->n_events; i++)
		if (log->events[i].type == type && log->events[i].pcr == pcr)
			return &log->events[i];
	fail_msg("no event of type 0x%08x on PCR %u", type, pcr);
	return NULL;
}

static void assert_digest_of(const struct fleet_evlog_event *ev, uint16_t alg, const void *m,
			     size_t n)
{
	uint8_t want[FLEET_DIGEST_MAX];
	const struct fleet_evlog_digest *d = fleet_evlog_event_digest(ev, alg);
	assert_non_null(d);
	assert_int_equal(fleet_hash(alg, m, n, want), FLEET_OK);
	assert_memory_equal(d->bytes, want, d->size);
}

static void test_apply_every_kind(void **state)
{
	(void)state;
	char *dir = make_temp_dir("fwsim");
	char path[512];
	snprintf(path, sizeof(path), "%s/events.yaml", dir);
	write_text(path, every_kind_yaml);
	char err[512] = "";
	struct fwsim_events *evs = NULL;
	assert_int_equal(fwsim_load(path, &evs, err, sizeof(err)), FLEET_OK);
	assert_int_equal(evs->n, 11);

	struct swtpm t = start_tpm("sha1,sha256");
	ESYS_CONTEXT *esys = swtpm_esys(&t);
	assert_non_null(esys);
	struct fleet_buf raw;
	fb_init(&raw);
	if (fwsim_apply(esys, evs, &raw, err, sizeof(err)) != FLEET_OK)
		fail_msg("fwsim_apply: %s", err);

	struct fleet_evlog *log = NULL;
	struct fleet_errctx ec = {0};
	assert_int_equal(fleet_evlog_parse(raw.data, raw.len, &log, &ec), FLEET_OK);
	assert_int_equal(log->format, FLEET_EVLOG_CRYPTO_AGILE);
	/* Exactly the TPM's banks: 1 header + 17 events (separators split). */
	assert_int_equal(log->n_algs, 2);
	assert_int_equal(log->algs[0].alg, FLEET_ALG_SHA1);
	assert_int_equal(log->algs[1].alg, FLEET_ALG_SHA256);
	assert_int_equal(log->n_events, 1 + 10 + 7);
	assert_tpm_matches_log(esys, log, FLEET_ALG_SHA1);
	assert_tpm_matches_log(esys, log, FLEET_ALG_SHA256);

	/* What real firmware writes. S-CRTM version: UCS-2LE with its NUL. */
	const struct fleet_evlog_event *ev = find(log, FLEET_EV_S_CRTM_VERSION, 0);
	assert_int_equal(ev->data_len, 2 * (strlen("fleetd-sim firmware 1.0") + 1));
	assert_memory_equal(ev->data, "f\0l\0e\0", 6);
	assert_memory_equal(ev->data + ev->data_len - 2, "\0\0", 2);
	/* Firmware blob: base and length, digest of the content. */
	ev = find(log, FLEET_EV_EFI_PLATFORM_FIRMWARE_BLOB, 0);
	assert_int_equal(ev->data_len, 16);
	assert_memory_equal(ev->data, "\x00\x00\xc0\xff\x00\x00\x00\x00\x00\x00\x40\x00", 12);
	assert_digest_of(ev, FLEET_ALG_SHA256, "bios", 4);
	/* Separators: 00000000, one per PCR. */
	for (uint32_t pcr = 0; pcr < 8; pcr++) {
		ev = find(log, FLEET_EV_SEPARATOR, pcr);
		assert_int_equal(ev->data_len, 4);
		assert_memory_equal(ev->data, "\0\0\0\0", 4);
	}
	/* Variables: UEFI_VARIABLE_DATA whose digest is H(data), so a policy may
	 * read it; SecureBoot under the EFI global variable GUID. */
	struct fleet_efi_var var;
	char g[37];
	ev = find(log, FLEET_EV_EFI_VARIABLE_DRIVER_CONFIG, 7);
	assert_int_equal(fleet_evlog_efi_variable(ev, &var), FLEET_OK);
	fleet_efi_guid_str(var.guid, g);
	assert_string_equal(g, "8be4df61-93ca-11d2-aa0d-00e098032b8c");
	assert_string_equal(var.name, "SecureBoot");
	assert_int_equal(var.data_len, 1);
	assert_int_equal(var.data[0], 1);
	assert_int_equal(fleet_evlog_event_data_matches(ev), FLEET_OK);
	ev = find(log, FLEET_EV_EFI_VARIABLE_AUTHORITY, 7);
	assert_int_equal(fleet_evlog_efi_variable(ev, &var), FLEET_OK);
	fleet_efi_guid_str(var.guid, g);
	assert_string_equal(g, "d719b2cb-3d3a-4596-a3bc-dad00e67656f");
	assert_digest_of(ev, FLEET_ALG_SHA1, ev->data, ev->data_len);
	ev = find(log, FLEET_EV_EFI_VARIABLE_BOOT, 1);
	assert_int_equal(fleet_evlog_event_data_matches(ev), FLEET_OK);
	ev = find(log, FLEET_EV_EFI_ACTION, 4);
	assert_int_equal(ev->data_len, 40);
	assert_int_equal(fleet_evlog_event_data_matches(ev), FLEET_OK);
	/* Boot application: digest of the image, a file path in the data. */
	ev = find(log, FLEET_EV_EFI_BOOT_SERVICES_APPLICATION, 4);
	assert_digest_of(ev, FLEET_ALG_SHA256, "shim", 4);
	assert_digest_of(ev, FLEET_ALG_SHA1, "shim", 4);
	char desc[512];
	fleet_evlog_describe(ev, desc, sizeof(desc));
	assert_non_null(strstr(desc, "BOOTX64.EFI"));

	fleet_evlog_free(log);
	fb_free(&raw);
	fwsim_free(evs);
	swtpm_stop(&t);
	rm_rf(dir);
	free(dir);
}

static void expect_refusal(const char *yaml, fleet_err want, const char *msg)
{
	char err[512] = "";
	struct fwsim_events *evs = (struct fwsim_events *)1;
	fleet_err e = fwsim_parse("t.yaml", (const uint8_t *)yaml, strlen(yaml), &evs, err,
				  sizeof(err));
	if (e != want || !strstr(err, msg))
		fail_msg("got %s '%s', wanted %s containing '%s'", fleet_err_str(e), err,
			 fleet_err_str(want), msg);
	assert_null(evs);
}

static void test_refusals(void **state)
{
	(void)state;
	expect_refusal("events:\n"
		       "  - separator: {pcrs: [0]}\n"
		       "  - efi_action: {pcr: 4, text: \"x\", colour: red}\n",
		       FLEET_E_MALFORMED, "t.yaml:3: unknown key 'colour' in efi_action");
	expect_refusal("events:\n  - efi_variable: {pcr: 7, name: X, guid: global, data: \"0g\"}\n",
		       FLEET_E_MALFORMED, "t.yaml:2: data is not hex");
	expect_refusal("events:\n  - efi_variable: {pcr: 7, name: X, guid: global, data: \"012\"}\n",
		       FLEET_E_MALFORMED, "t.yaml:2: data has an odd number of hex digits");
	expect_refusal("events:\n  - efi_action: {pcr: 24, text: \"x\"}\n", FLEET_E_MALFORMED,
		       "t.yaml:2: pcr '24' is out of range (0..23)");
	expect_refusal("events:\n  - separator: {pcrs: [1, 1]}\n", FLEET_E_MALFORMED,
		       "PCR 1 is listed twice");
	expect_refusal("events:\n  - efi_action: {pcr: 4}\n", FLEET_E_MALFORMED,
		       "t.yaml:2: efi_action needs 'text'");
	expect_refusal("events:\n  - efi_action: {pcr: 4, pcr: 5, text: x}\n", FLEET_E_MALFORMED,
		       "duplicate key 'pcr'");
	expect_refusal("events:\n  - reboot: {}\n", FLEET_E_MALFORMED,
		       "t.yaml:2: unknown event kind 'reboot'");
	expect_refusal("events:\n  - efi_variable: {pcr: 7, name: X, guid: nope, data: \"\"}\n",
		       FLEET_E_MALFORMED, "guid 'nope' is not");
	expect_refusal("events:\n  - efi_action: &x {pcr: 4, text: y}\n  - efi_action: *x\n",
		       FLEET_E_MALFORMED, "t.yaml:2: YAML aliases are not accepted");
	expect_refusal("events:\n  - efi_action: {pcr: !!int 4, text: y}\n", FLEET_E_MALFORMED,
		       "tags");
	expect_refusal("events: [\n", FLEET_E_MALFORMED, "t.yaml:2:");
	/* Caps: one event over the count cap. */
	struct fleet_buf big;
	fb_init(&big);
	fb_put(&big, "events:\n", 8);
	for (unsigned i = 0; i <= FWSIM_MAX_EVENTS; i++)
		fb_put(&big, "- separator: {pcrs: [0]}\n", 25);
	fb_put_u8(&big, 0);
	expect_refusal((const char *)big.data, FLEET_E_TOO_LARGE, "over the cap of 1024");
	fb_free(&big);
}

/* A real log into a TPM with these banks reaches its expected.json values. */
static void replay_real(const char *banks, const char *name)
{
	char path[1024];
	struct fleet_buf raw;
	char err[512] = "";
	fb_init(&raw);
	snprintf(path, sizeof(path), "%s/eventlogs/%s.bin", shared_data_dir(), name);
	read_file_or_fail(path, &raw);
	snprintf(path, sizeof(path), "%s/eventlogs/%s.expected.json", shared_data_dir(), name);
	json_error_t jerr;
	json_t *want = json_load_file(path, 0, &jerr);
	assert_non_null(want);

	struct swtpm t = start_tpm(banks);
	ESYS_CONTEXT *esys = swtpm_esys(&t);
	assert_non_null(esys);
	if (fwsim_replay_log(esys, raw.data, raw.len, err, sizeof(err)) != FLEET_OK)
		fail_msg("replaying %s into %s: %s", name, banks, err);
	uint16_t algs[8];
	size_t n_algs, compared = 0;
	assert_int_equal(fwsim_tpm_banks(esys, algs, 8, &n_algs, err, sizeof(err)), FLEET_OK);
	for (size_t i = 0; i < n_algs; i++) {
		json_t *bank = json_object_get(json_object_get(want, "pcrs"),
					       fleet_hash_alg_name(algs[i]));
		assert_non_null(bank);
		const char *key;
		json_t *v;
		json_object_foreach(bank, key, v) {
			uint8_t got[FLEET_DIGEST_MAX];
			char hex[2 * FLEET_DIGEST_MAX + 1];
			size_t size = fleet_hash_alg_size(algs[i]);
			pcr_read(esys, algs[i], (unsigned)atoi(key), got, size);
			fleet_hex_encode(got, size, hex);
			if (strcmp(hex, json_string_value(v)))
				fail_msg("%s in %s: %s PCR %s is %s, expected %s", name, banks,
					 fleet_hash_alg_name(algs[i]), key, hex,
					 json_string_value(v));
			compared++;
		}
	}
	assert_true(compared >= 10 * n_algs);
	json_decref(want);
	fb_free(&raw);
	swtpm_stop(&t);
}

static void test_replay_real_logs(void **state)
{
	(void)state;
	if (!shared_data_dir()) {
		printf("SKIP: the real-log replay needs ../shared/data\n");
		skip();
	}
	replay_real("sha256", "tpm2tools-event-gce-ubuntu-2104-log");
	replay_real("sha1,sha256", "tpm2tools-event-gce-ubuntu-2104-log");
}

static void test_replay_refusals(void **state)
{
	(void)state;
	struct swtpm t = start_tpm("sha1,sha256");
	ESYS_CONTEXT *esys = swtpm_esys(&t);
	assert_non_null(esys);
	char err[512] = "";
	struct fleet_evlog_builder *b;
	struct fleet_buf raw;
	static const uint16_t sha256_only[] = {FLEET_ALG_SHA256};
	static const uint16_t both[] = {FLEET_ALG_SHA1, FLEET_ALG_SHA256};

	/* The TPM has sha1; the log has no sha1 digests. */
	fb_init(&raw);
	assert_int_equal(fleet_evlog_builder_new(sha256_only, 1, &b), FLEET_OK);
	assert_int_equal(fleet_evlog_builder_add(b, 0, FLEET_EV_SEPARATOR, "\0\0\0\0", 4),
			 FLEET_OK);
	assert_int_equal(fleet_evlog_builder_finish(b, &raw), FLEET_OK);
	fleet_evlog_builder_free(b);
	assert_int_equal(fwsim_replay_log(esys, raw.data, raw.len, err, sizeof(err)),
			 FLEET_E_UNSUPPORTED);
	assert_non_null(strstr(err, "the TPM has a sha1 bank and the log has no sha1 digests"));
	fb_free(&raw);

	/* Both banks in the table, but one event lacks sha1: refused before the
	 * first event is extended. */
	fb_init(&raw);
	struct fleet_evlog_digest d = {.alg = FLEET_ALG_SHA256, .size = 32};
	assert_int_equal(fleet_evlog_builder_new(both, 2, &b), FLEET_OK);
	assert_int_equal(fleet_evlog_builder_add(b, 0, FLEET_EV_SEPARATOR, "\0\0\0\0", 4),
			 FLEET_OK);
	assert_int_equal(fleet_evlog_builder_add_digests(b, 1, FLEET_EV_SEPARATOR, "\0\0\0\0", 4,
							 &d, 1),
			 FLEET_OK);
	assert_int_equal(fleet_evlog_builder_finish(b, &raw), FLEET_OK);
	fleet_evlog_builder_free(b);
	assert_int_equal(fwsim_replay_log(esys, raw.data, raw.len, err, sizeof(err)),
			 FLEET_E_UNSUPPORTED);
	assert_non_null(strstr(err, "(PCR 1) has no sha1 digest"));
	fb_free(&raw);

	/* StartupLocality 3: PCR 0 would have to start at 00..03. */
	fb_init(&raw);
	assert_int_equal(fleet_evlog_builder_new(both, 2, &b), FLEET_OK);
	assert_int_equal(fleet_evlog_builder_add_startup_locality(b, 3), FLEET_OK);
	assert_int_equal(fleet_evlog_builder_add(b, 0, FLEET_EV_SEPARATOR, "\0\0\0\0", 4),
			 FLEET_OK);
	assert_int_equal(fleet_evlog_builder_finish(b, &raw), FLEET_OK);
	fleet_evlog_builder_free(b);
	assert_int_equal(fwsim_replay_log(esys, raw.data, raw.len, err, sizeof(err)),
			 FLEET_E_UNSUPPORTED);
	assert_non_null(strstr(err, "StartupLocality 3"));
	fb_free(&raw);

	/* Nothing was extended by any refusal. */
	uint8_t v[32], zero[32] = {0};
	for (unsigned pcr = 0; pcr < 2; pcr++) {
		pcr_read(esys, FLEET_ALG_SHA256, pcr, v, 32);
		assert_memory_equal(v, zero, 32);
		pcr_read(esys, FLEET_ALG_SHA1, pcr, v, 20);
		assert_memory_equal(v, zero, 20);
	}
	swtpm_stop(&t);
}

/* The TPM's sha256 PCRs 0-7 as a fleetctl --pcrs file: the quote stand-in. */
static void write_pcrs_json(ESYS_CONTEXT *esys, const char *path)
{
	json_t *bank = json_object();
	for (unsigned pcr = 0; pcr < 8; pcr++) {
		uint8_t v[32];
		char hex[65], key[4];
		pcr_read(esys, FLEET_ALG_SHA256, pcr, v, 32);
		fleet_hex_encode(v, 32, hex);
		snprintf(key, sizeof(key), "%u", pcr);
		json_object_set_new(bank, key, json_string(hex));
	}
	json_t *root = json_pack("{s:{s:o}}", "pcrs", "sha256", bank);
	assert_int_equal(json_dump_file(root, path, 0), 0);
	json_decref(root);
}

static int policy_check(const char *dir, const char *log, const char *pcrs,
			struct fleet_buf *out)
{
	char cmd[2048];
	snprintf(cmd, sizeof(cmd),
		 "'%s' policy check --profile '%s/tests/fwsim/worker.profile.yaml' --log '%s/%s' "
		 "--pcrs '%s/%s' --bios fleetd-sim-1.0 2>&1",
		 fleetctl_path(), FLEET_SOURCE_DIR, dir, log, dir, pcrs);
	return run_capture(cmd, out);
}

static void test_worker_profile(void **state)
{
	(void)state;
	char *dir = make_temp_dir("fwsim-worker");
	char cmd[2048], path[512], err[512] = "";
	struct fleet_buf out;

	/* Secure Boot on, booted by the fleet-fwsim tool. */
	struct swtpm t = start_tpm("sha1,sha256");
	snprintf(cmd, sizeof(cmd),
		 "'%s' --tcti '%s' --events '%s/tests/fwsim/worker.events.yaml' --out '%s/on.bin' 2>&1",
		 FWSIM_BIN, t.tcti, FLEET_SOURCE_DIR, dir);
	fb_init(&out);
	if (run_capture(cmd, &out) != 0)
		fail_msg("fleet-fwsim failed: %s", out.data ? (char *)out.data : "");
	fb_free(&out);
	ESYS_CONTEXT *esys = swtpm_esys(&t);
	assert_non_null(esys);
	snprintf(path, sizeof(path), "%s/on.json", dir);
	write_pcrs_json(esys, path);
	swtpm_stop(&t);
	fb_init(&out);
	int rc = policy_check(dir, "on.bin", "on.json", &out);
	if (rc != 0 || !strstr((char *)out.data, "pass"))
		fail_msg("the worker boot did not pass its profile (%d): %s", rc,
			 (char *)out.data);
	fb_free(&out);

	/* The same boot with SecureBoot = 00. */
	struct fwsim_events *evs = NULL;
	snprintf(path, sizeof(path), "%s/tests/fwsim/worker.events.yaml", FLEET_SOURCE_DIR);
	assert_int_equal(fwsim_load(path, &evs, err, sizeof(err)), FLEET_OK);
	int flipped = 0;
	for (size_t i = 0; i < evs->n; i++)
		if (evs->ev[i].kind == FWSIM_EFI_VARIABLE &&
		    !strcmp(evs->ev[i].name, "SecureBoot")) {
			assert_int_equal(evs->ev[i].data_len, 1);
			evs->ev[i].data[0] = 0;
			flipped++;
		}
	assert_int_equal(flipped, 1);
	t = start_tpm("sha256");
	esys = swtpm_esys(&t);
	assert_non_null(esys);
	struct fleet_buf raw;
	fb_init(&raw);
	if (fwsim_apply(esys, evs, &raw, err, sizeof(err)) != FLEET_OK)
		fail_msg("fwsim_apply: %s", err);
	snprintf(path, sizeof(path), "%s/off.bin", dir);
	write_bytes(path, &raw);
	snprintf(path, sizeof(path), "%s/off.json", dir);
	write_pcrs_json(esys, path);
	swtpm_stop(&t);
	fb_init(&out);
	rc = policy_check(dir, "off.bin", "off.json", &out);
	assert_int_equal(rc, 1);
	assert_non_null(strstr((char *)out.data, "secure-boot-mismatch"));
	fb_free(&out);
	fb_free(&raw);
	fwsim_free(evs);

	/* The tool refuses a bad file with its line, before touching a TPM. */
	snprintf(path, sizeof(path), "%s/bad.yaml", dir);
	write_text(path, "events:\n  - efi_action: {pcr: 99, text: x}\n");
	snprintf(cmd, sizeof(cmd), "'%s' --tcti swtpm:host=127.0.0.1,port=1 --events '%s' 2>&1",
		 FWSIM_BIN, path);
	fb_init(&out);
	assert_int_equal(run_capture(cmd, &out), 1);
	assert_non_null(strstr((char *)out.data, "bad.yaml:2: pcr '99' is out of range"));
	fb_free(&out);
	rm_rf(dir);
	free(dir);
}

int main(void)
{
	swtpm_require_or_skip();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_apply_every_kind),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_replay_real_logs),
		cmocka_unit_test(test_replay_refusals),
		cmocka_unit_test(test_worker_profile),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
