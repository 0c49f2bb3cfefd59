/*
 * bench_verify: the server-side work of one HookOS pass, timed on one core,
 * against the same work done by tpm2-tools processes on the same inputs.
 *
 * One verification = parse the AK public area, verify the quote (ECDSA P-256,
 * PCR digest, nonce), parse the LDevID public area, verify its TPM2_Certify,
 * parse and replay the real event log, evaluate the boot-policy profile.
 * The peer is `tpm2_checkquote` (signature, nonce, PCR digest) plus
 * `tpm2_eventlog` (parse and replay) run as processes, the way an operator
 * would check the same evidence with tpm2-tools.
 *
 * The inputs are made by bench/verify with a real swtpm; this program only
 * reads files. It prints key=value lines:
 *   verify_per_s            our verifications per second on one core
 *   tpm2_tools_per_s        the peer's per second on the same core
 *   ratio_vs_tpm2_tools     verify_per_s / tpm2_tools_per_s
 *   ecdsa_p256_verify_per_s OpenSSL's raw ECDSA P-256 verify rate, this run
 *   crypto_floor_fraction   verify_per_s / (ecdsa_p256_verify_per_s / 2):
 *                           how close we run to the two signature checks
 *                           that no verifier can skip (1.0 = all crypto)
 *   same_work_per_s         only what the peer does: quote, whole log
 *                           parsed and every bank replayed (no certify,
 *                           no policy)
 *   ratio_same_work_vs_tpm2_tools   same_work_per_s / tpm2_tools_per_s
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <openssl/ec.h>
#include <openssl/evp.h>

#include "lib/buf.h"
#include "lib/file_read.h"
#include "lib/eventlog.h"
#include "lib/hex.h"
#include "lib/tpm.h"
#include "policy/evaluate.h"
#include "policy/profile.h"

struct inputs {
	struct fleet_buf ak_pub, quote_msg, quote_sig, pcr_values, key_pub, cert_msg, cert_sig,
		log, nonce_bin;
	TPML_PCR_SELECTION selection;
	struct fleet_pcr_value values[FLEET_PCR_COUNT];
	size_t n_values;
	struct fleet_profile *profile;
	const char *dir, *log_path, *selection_str, *nonce_hex, *bios;
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
	fprintf(stderr, "bench_verify: %s\n", what);
	exit(1);
}

static void load(struct fleet_buf *b, const char *dir, const char *name)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fb_init(b);
	if (fleet_file_read_data(path, 1u << 24, b, NULL) != FLEET_OK) {
		fprintf(stderr, "bench_verify: cannot read %s\n", path);
		exit(1);
	}
}

/* The PCR values file holds digests in selection order (tpm2_pcrread -o). */
static void split_values(struct inputs *in)
{
	size_t off = 0;
	for (UINT32 b = 0; b < in->selection.count; b++) {
		const TPMS_PCR_SELECTION *s = &in->selection.pcrSelections[b];
		size_t dsize = fleet_hash_alg_size(s->hash);
		for (unsigned i = 0; i < FLEET_PCR_COUNT; i++) {
			if (!(s->pcrSelect[i / 8] & (1u << (i % 8))))
				continue;
			if (off + dsize > in->pcr_values.len || in->n_values >= FLEET_PCR_COUNT)
				die("PCR values file shorter than the selection");
			struct fleet_pcr_value *v = &in->values[in->n_values++];
			v->alg = s->hash;
			v->index = (uint8_t)i;
			v->size = (uint8_t)dsize;
			memcpy(v->digest, in->pcr_values.data + off, dsize);
			off += dsize;
		}
	}
}

static const uint8_t tpm2_tools_certify_qualifier[] = {0x00, 0xff, 0x55, 0xaa};

/* One whole server-side verification; returns 0 when everything passed,
 * else -1 with *why naming the step that refused. */
static int verify_once(const struct inputs *in, const char **why)
{
	TPM2B_PUBLIC ak, key;
	const char *reason = NULL;
	struct fleet_tpm_clock clock;
	uint8_t spki[32];
	int rc = -1;

	*why = "ak public area";
	if (fleet_tpm_public_parse(in->ak_pub.data, in->ak_pub.len, &ak, NULL) != FLEET_OK)
		return -1;
	if (fleet_tpm_ak_check(&ak.publicArea, &reason) != FLEET_OK)
		return *why = reason, -1;
	struct fleet_quote_check q = {
		.ak = &ak.publicArea,
		.attest = in->quote_msg.data,
		.attest_len = in->quote_msg.len,
		.sig = in->quote_sig.data,
		.sig_len = in->quote_sig.len,
		.extra_data = in->nonce_bin.data,
		.extra_data_len = in->nonce_bin.len,
		.selection = &in->selection,
		.values = in->values,
		.n_values = in->n_values,
	};
	if (fleet_quote_verify(&q, &clock, &reason) != FLEET_OK)
		return *why = reason, -1;
	*why = "ldevid public area";
	if (fleet_tpm_public_parse(in->key_pub.data, in->key_pub.len, &key, NULL) != FLEET_OK)
		return -1;
	struct fleet_certify_check c = {
		.ak = &ak.publicArea,
		.attest = in->cert_msg.data,
		.attest_len = in->cert_msg.len,
		.sig = in->cert_sig.data,
		.sig_len = in->cert_sig.len,
		/* tpm2_certify (5.4) cannot choose its qualifying data and
		 * always sends 00ff55aa; tink-attest's certify carries the CSR
		 * hash there instead, which costs the verifier nothing more. */
		.extra_data = tpm2_tools_certify_qualifier,
		.extra_data_len = sizeof(tpm2_tools_certify_qualifier),
		.object = &key.publicArea,
	};
	if (fleet_certify_verify(&c, spki, &reason) != FLEET_OK)
		return *why = reason, -1;
	*why = "event log";

	struct fleet_evlog *log = NULL;
	struct fleet_pcr_replay *replay = malloc(sizeof(*replay));
	if (!replay)
		return -1;
	if (fleet_evlog_parse(in->log.data, in->log.len, &log, NULL) != FLEET_OK)
		goto out;
	/* fleetd replays only the bank the quote covers. */
	if (fleet_evlog_replay_one(log, in->selection.pcrSelections[0].hash, replay, NULL) !=
	    FLEET_OK)
		goto out;
	struct fleet_policy_input pin = {
		.log = log,
		.replay = replay,
		.quoted = in->values,
		.n_quoted = in->n_values,
		.bios_version = in->bios,
	};
	struct fleet_verdict *v = malloc(sizeof(*v));
	*why = "policy";
	if (v && fleet_policy_evaluate(in->profile, &pin, v) == FLEET_OK) {
		if (v->pass)
			rc = 0;
		else if (v->n_reasons)
			*why = v->reasons[0].reason;
	}
	free(v);
out:
	fleet_evlog_free(log);
	free(replay);
	return rc;
}

/* The stages one at a time, for docs/benchmark.md and for finding where a
 * regression went: microseconds per call of each. */
static double stage_us(int stage, const struct inputs *in, int n)
{
	TPM2B_PUBLIC ak, key;
	const char *reason;
	struct fleet_tpm_clock clock;
	uint8_t spki[32];
	struct fleet_pcr_replay *replay = malloc(sizeof(*replay));
	struct fleet_verdict *v = malloc(sizeof(*v));
	struct fleet_evlog *log = NULL;
	if (!replay || !v)
		die("out of memory");
	fleet_tpm_public_parse(in->ak_pub.data, in->ak_pub.len, &ak, NULL);
	fleet_tpm_public_parse(in->key_pub.data, in->key_pub.len, &key, NULL);
	fleet_evlog_parse(in->log.data, in->log.len, &log, NULL);
	fleet_evlog_replay(log, replay, NULL);
	struct fleet_quote_check q = {&ak.publicArea, in->quote_msg.data, in->quote_msg.len,
				      in->quote_sig.data, in->quote_sig.len, in->nonce_bin.data,
				      in->nonce_bin.len, &in->selection, in->values, in->n_values};
	struct fleet_certify_check c = {&ak.publicArea, in->cert_msg.data, in->cert_msg.len,
					in->cert_sig.data, in->cert_sig.len,
					tpm2_tools_certify_qualifier,
					sizeof(tpm2_tools_certify_qualifier), &key.publicArea};
	struct fleet_policy_input pin = {.log = log, .replay = replay, .quoted = in->values,
					 .n_quoted = in->n_values, .bios_version = in->bios};
	double t0 = now_s();
	for (int i = 0; i < n; i++) {
		struct fleet_evlog *l2 = NULL;
		switch (stage) {
		case 0:
			fleet_quote_verify(&q, &clock, &reason);
			break;
		case 1:
			fleet_certify_verify(&c, spki, &reason);
			break;
		case 2:
			fleet_evlog_parse(in->log.data, in->log.len, &l2, NULL);
			fleet_evlog_free(l2);
			break;
		case 3:
			fleet_evlog_replay_one(log, in->selection.pcrSelections[0].hash, replay,
					       NULL);
			break;
		case 4:
			fleet_policy_evaluate(in->profile, &pin, v);
			break;
		case 5:
			/* Exactly the peer's work: the quote, then the whole log
			 * parsed and every bank replayed. */
			fleet_quote_verify(&q, &clock, &reason);
			fleet_evlog_parse(in->log.data, in->log.len, &l2, NULL);
			fleet_evlog_replay(l2, replay, NULL);
			fleet_evlog_free(l2);
			break;
		}
	}
	double us = (now_s() - t0) * 1e6 / n;
	fleet_evlog_free(log);
	free(replay);
	free(v);
	return us;
}

/* Run verify_once for about `seconds`; returns verifications per second. */
static double time_ours(const struct inputs *in, double seconds)
{
	const char *why = NULL;
	if (verify_once(in, &why) != 0) {
		fprintf(stderr, "bench_verify: refused at %s\n", why);
		die("the inputs do not verify: the benchmark would time a refusal");
	}
	long n = 0;
	double t0 = now_s(), t;
	do {
		for (int i = 0; i < 50; i++)
			if (verify_once(in, &why) != 0)
				die("verification failed mid-run");
		n += 50;
		t = now_s();
	} while (t - t0 < seconds);
	return (double)n / (t - t0);
}

/* OpenSSL's raw ECDSA P-256 verification rate: the floor under any
 * verifier of a P-256 quote, measured here rather than quoted. */
static double time_ecdsa(double seconds)
{
	EVP_PKEY *key = EVP_EC_gen("P-256");
	unsigned char msg[32] = {1}, sig[128];
	size_t siglen = sizeof(sig);
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	if (!key || !ctx || EVP_DigestSignInit(ctx, NULL, EVP_sha256(), NULL, key) != 1 ||
	    EVP_DigestSign(ctx, sig, &siglen, msg, sizeof(msg)) != 1)
		die("cannot make an ECDSA P-256 signature");
	long n = 0;
	double t0 = now_s(), t;
	do {
		for (int i = 0; i < 100; i++) {
			EVP_MD_CTX_reset(ctx);
			if (EVP_DigestVerifyInit(ctx, NULL, EVP_sha256(), NULL, key) != 1 ||
			    EVP_DigestVerify(ctx, sig, siglen, msg, sizeof(msg)) != 1)
				die("ECDSA verify failed");
		}
		n += 100;
		t = now_s();
	} while (t - t0 < seconds);
	EVP_MD_CTX_free(ctx);
	EVP_PKEY_free(key);
	return (double)n / (t - t0);
}

static int run_quiet(char *const argv[])
{
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		/* The peer's output is not measured: send it to /dev/null. A child
		 * that cannot does not run the peer (stderr is still ours until the
		 * last dup2 succeeds, so the message is seen). */
		int null = open("/dev/null", O_WRONLY);
		if (null < 0 || dup2(null, STDOUT_FILENO) < 0 || dup2(null, STDERR_FILENO) < 0) {
			fprintf(stderr, "bench_verify: cannot send %s's output to /dev/null: %s\n",
				argv[0], strerror(errno));
			_exit(126);
		}
		close(null);
		execvp(argv[0], argv);
		_exit(127);
	}
	int st;
	if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

/* tpm2_checkquote + tpm2_eventlog on the same inputs, `runs` times. The
 * children inherit this process's CPU affinity, so they run on the same
 * core. */
static double time_peer(const struct inputs *in, int runs)
{
	char ak[1100], msg[1100], sig[1100], pcrs[1100];
	snprintf(ak, sizeof(ak), "%s/ak.pub", in->dir);
	snprintf(msg, sizeof(msg), "%s/quote.msg", in->dir);
	snprintf(sig, sizeof(sig), "%s/quote.sig", in->dir);
	snprintf(pcrs, sizeof(pcrs), "%s/quote.pcrs", in->dir);
	char *check[] = {"tpm2_checkquote", "-u", ak, "-m", msg, "-s", sig, "-f", pcrs,
			 "-g", "sha256", "-q", (char *)in->nonce_hex, NULL};
	char *evlog[] = {"tpm2_eventlog", (char *)in->log_path, NULL};
	if (run_quiet(check) != 0)
		die("tpm2_checkquote refuses the inputs: the peer would time a refusal");
	if (run_quiet(evlog) != 0)
		die("tpm2_eventlog cannot read the log");
	double t0 = now_s();
	for (int i = 0; i < runs; i++)
		if (run_quiet(check) != 0 || run_quiet(evlog) != 0)
			die("peer failed mid-run");
	return (double)runs / (now_s() - t0);
}

static void usage(void)
{
	fprintf(stderr, "usage: bench_verify --dir INPUTS --log LOG --profile P "
			"--selection SEL --nonce HEX [--bios V] [--seconds S] [--peer-runs N]\n"
			"       bench_verify extends LOG\n");
	exit(2);
}

/* `bench_verify extends LOG`: the log's sha256 digests as tpm2_pcrextend
 * arguments ("PCR:sha256=HEX"), one per extending event, in log order, so a
 * swtpm can be brought to the state the log describes. */
static int print_extends(const char *path)
{
	struct fleet_buf b;
	struct fleet_evlog *log = NULL;
	struct fleet_errctx ec = {0};
	fb_init(&b);
	if (fleet_file_read_data(path, FLEET_EVLOG_MAX_SIZE, &b, NULL) != FLEET_OK)
		die("cannot read the log");
	if (fleet_evlog_parse(b.data, b.len, &log, &ec) != FLEET_OK)
		die(ec.detail);
	for (size_t i = 0; i < log->n_events; i++) {
		const struct fleet_evlog_event *ev = &log->events[i];
		const struct fleet_evlog_digest *d = fleet_evlog_event_digest(ev, FLEET_ALG_SHA256);
		char hex[2 * FLEET_DIGEST_MAX + 1];
		if (ev->type == FLEET_EV_NO_ACTION)
			continue;
		if (!d)
			die("an event lacks its sha256 digest");
		fleet_hex_encode(d->bytes, d->size, hex);
		printf("%u:sha256=%s\n", ev->pcr, hex);
	}
	fleet_evlog_free(log);
	fb_free(&b);
	return 0;
}

int main(int argc, char **argv)
{
	struct inputs in = {0};
	if (argc == 3 && !strcmp(argv[1], "extends"))
		return print_extends(argv[2]);
	const char *profile_path = NULL;
	double seconds = 3;
	int peer_runs = 30;
	for (int i = 1; i < argc; i += 2) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!v)
			usage();
		if (!strcmp(a, "--dir"))
			in.dir = v;
		else if (!strcmp(a, "--log"))
			in.log_path = v;
		else if (!strcmp(a, "--profile"))
			profile_path = v;
		else if (!strcmp(a, "--selection"))
			in.selection_str = v;
		else if (!strcmp(a, "--bios"))
			in.bios = v;
		else if (!strcmp(a, "--nonce"))
			in.nonce_hex = v;
		else if (!strcmp(a, "--seconds"))
			seconds = atof(v);
		else if (!strcmp(a, "--peer-runs"))
			peer_runs = atoi(v);
		else
			usage();
	}
	if (!in.dir || !in.log_path || !profile_path || !in.selection_str || !in.nonce_hex ||
	    seconds <= 0 || peer_runs <= 0)
		usage();

	/* One core: the figure is per core, and the peer gets the same one. */
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	if (sched_setaffinity(0, sizeof(set), &set) != 0)
		perror("sched_setaffinity (continuing unpinned)");

	load(&in.ak_pub, in.dir, "ak.pub");
	load(&in.quote_msg, in.dir, "quote.msg");
	load(&in.quote_sig, in.dir, "quote.sig");
	load(&in.pcr_values, in.dir, "pcr-values.bin");
	load(&in.key_pub, in.dir, "ldevid.pub");
	load(&in.cert_msg, in.dir, "certify.msg");
	load(&in.cert_sig, in.dir, "certify.sig");
	fb_init(&in.log);
	if (fleet_file_read_data(in.log_path, FLEET_EVLOG_MAX_SIZE, &in.log, NULL) != FLEET_OK)
		die("cannot read the log");
	size_t nlen = strlen(in.nonce_hex);
	fb_init(&in.nonce_bin);
	if (nlen % 2 || fb_put(&in.nonce_bin, in.nonce_hex, nlen / 2) != FLEET_OK ||
	    fleet_hex_decode(in.nonce_hex, nlen, in.nonce_bin.data, nlen / 2) != FLEET_OK)
		die("bad --nonce");
	if (fleet_pcr_selection_parse(in.selection_str, &in.selection) != FLEET_OK)
		die("bad --selection");
	split_values(&in);
	struct fleet_errctx perr = {0};
	if (fleet_profile_load(profile_path, &in.profile, &perr) != FLEET_OK)
		die("cannot load the profile");

	double ours = time_ours(&in, seconds);
	double ecdsa = time_ecdsa(seconds / 2);
	double peer = time_peer(&in, peer_runs);

	static const char *const stages[] = {"quote_verify", "certify_verify", "log_parse",
					     "log_replay", "policy_evaluate"};
	for (int st = 0; st < 5; st++)
		printf("stage_%s_us=%.1f\n", stages[st], stage_us(st, &in, 200));
	double same_us = stage_us(5, &in, 1000);
	printf("log_bytes=%zu\n", in.log.len);
	printf("verify_per_s=%.0f\n", ours);
	printf("tpm2_tools_per_s=%.1f\n", peer);
	printf("ratio_vs_tpm2_tools=%.0f\n", ours / peer);
	printf("ecdsa_p256_verify_per_s=%.0f\n", ecdsa);
	printf("crypto_floor_fraction=%.2f\n", ours / (ecdsa / 2));
	/* Like for like: quote + whole log, against the same two tools. */
	printf("same_work_per_s=%.0f\n", 1e6 / same_us);
	printf("ratio_same_work_vs_tpm2_tools=%.0f\n", 1e6 / same_us / peer);
	fleet_profile_free(in.profile);
	return 0;
}
