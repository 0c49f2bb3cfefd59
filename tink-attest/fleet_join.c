/*
 * fleet-join: the join service's client (tink-attest/join_client.h; the
 * README says what each command does). The command line only: checking
 * what was typed, then join_client.c's runs over tink-attest's pinned
 * HTTPS transport.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>

#include "lib/join_evidence.h"
#include "lib/join_wire.h"
#include "tink-attest/config.h"
#include "tink-attest/join_client.h"
#include "tink-attest/tpm_join.h"
#include "tink-attest/transport_curl.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: fleet-join join --server URL --ca CA.pem [--tls-ca TLS.pem]\n"
		"                       --key-out KEY --cert-out CHAIN.pem\n"
		"                       [--attestor ID] [--role node|site|ramdisk]\n"
		"                       [--token-file F] [--seal-pub SEALPUB.der-or-pem]\n"
		"                       [--mac aa:bb:cc:dd:ee:ff]... [--product-uuid U]\n"
		"                       [--x509pop-cert CHAIN.pem --x509pop-key KEY.pem --node-id ID]\n"
		"                       [--discovery-file F] [--max-wait SECONDS] [--timeout SECONDS]\n"
		"                       [--dump-request FILE]\n"
		"                       [--attestor tpm --tcti TCTI [--key-generation N]\n"
		"                        [--event-log FILE]]\n"
		"       fleet-join renew --server URL --ca CA.pem [--tls-ca TLS.pem] --key KEY\n"
		"                        --cert CHAIN.pem [--tcti TCTI]\n"
		"       fleet-join assert --key SITEKEY.pem --cert SITECERT.pem --site S --signer NODEID\n"
		"                         --epoch N --mac M [--ip IP] [--product-uuid U] [--workflow W]\n"
		"                         [--ttl SECONDS] [--issued-at UNIX] [--tcti TCTI] > FILE\n"
		"\n"
		"join    a fresh P-256 key and its CSR to POST /v1/join; joined: KEY (PKCS#8 PEM,\n"
		"        0600) and CHAIN.pem (leaf first) written, the node id printed. pending:\n"
		"        the same request again after the wait fleetd asks, within --max-wait\n"
		"        (default %u s). --attestor is \"\" (join-token) by default; x509pop\n"
		"        proves the key of --x509pop-cert's leaf; discovery carries\n"
		"        --discovery-file (made by fleet-join assert) as it is.\n"
		"        --token-file (mode 0600): a sealed token as `fleetctl token create`\n"
		"        prints it, or an unsealed one, sealed here to --seal-pub.\n"
		"        --attestor tpm: no token; the TPM at --tcti (e.g. device:/dev/tpmrm0,\n"
		"        swtpm:host=127.0.0.1,port=2321) makes the node key (generation\n"
		"        --key-generation, default 0) and signs its CSR; round 1 sends its EK\n"
		"        and AK, each challenge (at most %d) is answered with the activated\n"
		"        secret, a quote, the PCRs, --event-log (a TCG log) and the AK's\n"
		"        certification of the node key. KEY is then a \"" FJ_TPM_KEY_PEM "\"\n"
		"        record (0600): the generation the same TPM derives the key from.\n"
		"renew   a fresh key's CSR to POST /v1/renew, proven by KEY over CHAIN's leaf;\n"
		"        KEY and CHAIN are replaced (KEY first). A TPM-held KEY needs --tcti:\n"
		"        the proof is signed in the TPM and the next key is its next\n"
		"        generation; a leaf naming an AK (urn:bc:tpm-ak:) also sends the AK's\n"
		"        certification of the next key, and is refused here (exit 14) when\n"
		"        this TPM's AK is not the one it names.\n"
		"assert  a site's boot server: the discovery assertion signed with SITEKEY,\n"
		"        issued now (or --issued-at), valid --ttl seconds (1..%u, default %u).\n"
		"Every key read (--key, --x509pop-key) is PKCS#8 PEM or a \"" FJ_TPM_KEY_PEM "\"\n"
		"record; a record signs in the TPM that --tcti names.\n"
		"\n"
		"  --server URL   fleetd, https://HOST[:PORT]\n"
		"  --ca CA.pem    fleetd's identity CA: the key that signs the join service's\n"
		"                 answers and the node certificates, and nothing else (whatever\n"
		"                 is pinned here may name this machine)\n"
		"  --tls-ca F     the TLS trust anchors for --server (default: --ca)\n"
		"  --timeout S    seconds per HTTPS attempt (default %u; 4 attempts, backoff)\n"
		"\n"
		"Exit status:\n"
		"   0  joined (renewed; assert: written)\n"
		"   2  usage error, or an input file unusable\n"
		"  10  access denied\n"
		"  11  fleetd unreachable, or its answer does not verify against --ca\n"
		"  12  still pending at --max-wait\n"
		"  13  a challenge unanswered (another attestor's, or the tpm attestor's\n"
		"      after %d answers)\n"
		"  14  local error: the TPM (unavailable, another AK than the certificate\n"
		"      names, a failed command), making the key, writing KEY, CHAIN or stdout\n",
		FJ_DEFAULT_MAX_WAIT, FJ_MAX_CHALLENGES, FJ_ASSERT_MAX_TTL, FJ_ASSERT_DEFAULT_TTL,
		FJ_DEFAULT_TIMEOUT, FJ_MAX_CHALLENGES);
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "fleet-join: %s\n", line);
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	say("%s", line);
	fprintf(stderr, "(fleet-join --help for the usage)\n");
	return FJ_EXIT_USAGE;
}

static int parse_u64(const char *s, unsigned long long lo, unsigned long long hi,
		     unsigned long long *out)
{
	char *end = NULL;

	errno = 0;
	if (!s || !*s || s[0] == '-' || s[0] == '+' || isspace((unsigned char)s[0]))
		return -1;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || !end || *end || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

/* 1..max bytes, each of set. */
static int chars_ok(const char *s, size_t max, const char *set)
{
	size_t n = strlen(s);

	if (n < 1 || n > max)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!strchr(set, s[i]))
			return 0;
	return 1;
}

#define AZ09 "abcdefghijklmnopqrstuvwxyz0123456789"

/* s lowercased into dst (cap bytes); 0, or -1 when it does not fit. */
static int lower_into(const char *s, char *dst, size_t cap)
{
	size_t n = strlen(s);

	if (n >= cap)
		return -1;
	for (size_t i = 0; i <= n; i++)
		dst[i] = (char)tolower((unsigned char)s[i]);
	return 0;
}

static int mac_ok(const char *s)
{
	if (strlen(s) != FLEET_WIRE_MAC_LEN)
		return 0;
	for (size_t i = 0; i < FLEET_WIRE_MAC_LEN; i++)
		if (i % 3 == 2 ? s[i] != ':' : !strchr("0123456789abcdef", s[i]))
			return 0;
	return 1;
}

static int uuid_ok(const char *s)
{
	if (strlen(s) != FLEET_JOIN_UUID_LEN)
		return 0;
	for (size_t i = 0; i < FLEET_JOIN_UUID_LEN; i++) {
		int dash = i == 8 || i == 13 || i == 18 || i == 23;
		if (dash ? s[i] != '-' : !strchr("0123456789abcdef", s[i]))
			return 0;
	}
	return 1;
}

/* --tcti: a tpm2-tss TCTI string, opened only when a TPM is needed. */
static bool tcti_ok(const char *arg)
{
	if (arg[0])
		return true;
	usage_error("--tcti: a TCTI string (device:/dev/tpmrm0, swtpm:host=H,port=P, ...)");
	return false;
}

/* --server and --ca into the transport and the pins. */
struct net {
	const char *server, *ca, *tls_ca;
	unsigned timeout;
	struct tink_curl curl;
	struct fj_pins pins;
};

static int net_open(struct net *n)
{
	struct fleet_errctx ec = {0};
	char text[sizeof(ec.detail) + sizeof(ec.ossl) + 80];

	if (!n->server || strncmp(n->server, "https://", 8) != 0 || n->server[8] == '\0' ||
	    strlen(n->server) >= sizeof(n->curl.base_url))
		return usage_error("--server https://HOST[:PORT] is required");
	if (!n->ca)
		return usage_error("--ca CA.pem is required (fleetd's CA, the only trust anchor)");
	snprintf(n->curl.base_url, sizeof(n->curl.base_url), "%s", n->server);
	size_t len = strlen(n->curl.base_url);
	while (len > 8 && n->curl.base_url[len - 1] == '/')
		n->curl.base_url[--len] = '\0';
	n->curl.timeout_s = n->timeout;
	n->curl.connect_timeout_s = n->timeout < 10 ? n->timeout : 10;
	n->curl.attempts = 4;
	n->curl.backoff_base_s = 0.5;
	n->curl.backoff_cap_s = 30;
	if (tink_ca_from_file(n->ca, &n->curl.ca_pem, &ec) != FLEET_OK) {
		say("%s", fleet_errctx_text(&ec, text, sizeof(text)));
		return FJ_EXIT_USAGE;
	}
	/* The answers' signers: --ca alone. Whatever key is pinned here may
	 * name this machine, so fleetd's TLS certificate must not be in it
	 * when it is not the CA's: give that to --tls-ca, which is for the
	 * connection only. */
	if (fj_pins_from_pem(n->curl.ca_pem.data, n->curl.ca_pem.len, &n->pins, &ec) != FLEET_OK) {
		say("--ca %s: %s", n->ca, fleet_errctx_text(&ec, text, sizeof(text)));
		return FJ_EXIT_USAGE;
	}
	if (n->tls_ca) {
		fb_free(&n->curl.ca_pem);
		fb_init(&n->curl.ca_pem);
		if (tink_ca_from_file(n->tls_ca, &n->curl.ca_pem, &ec) != FLEET_OK) {
			say("--tls-ca: %s", fleet_errctx_text(&ec, text, sizeof(text)));
			return FJ_EXIT_USAGE;
		}
	}
	if (tink_curl_global_init() != 0) {
		say("libcurl failed to initialise");
		return FJ_EXIT_LOCAL;
	}
	return FJ_EXIT_OK;
}

static void net_close(struct net *n)
{
	tink_curl_close(&n->curl);
	fb_free(&n->curl.ca_pem);
	fj_pins_free(&n->pins);
}

static int finish(int rc, const struct fj_result *res)
{
	if (rc == FJ_EXIT_OK) {
		printf("%s\n", res->node_id);
		if (fflush(stdout) != 0 || ferror(stdout)) {
			say("cannot write the node id to stdout");
			return FJ_EXIT_LOCAL;
		}
		say("%s", res->message);
		return rc;
	}
	say("%s (exit %d, %s)", res->message, rc, fj_exit_name(rc));
	return rc;
}

/* ---- join ----------------------------------------------------------------- */

static int cmd_join(int argc, char **argv)
{
	enum {
		O_SERVER = 1, O_CA, O_TLS_CA, O_KEY_OUT, O_CERT_OUT, O_ATTESTOR, O_ROLE, O_TOKEN, O_SEAL_PUB,
		O_MAC, O_UUID, O_POP_CERT, O_POP_KEY, O_NODE_ID, O_DISCOVERY, O_MAX_WAIT, O_TIMEOUT,
		O_DUMP, O_TCTI, O_KEY_GEN, O_EVENT_LOG, O_HELP,
	};
	static const struct option longopts[] = {
		{"server", required_argument, NULL, O_SERVER},
		{"ca", required_argument, NULL, O_CA},
		{"tls-ca", required_argument, NULL, O_TLS_CA},
		{"key-out", required_argument, NULL, O_KEY_OUT},
		{"cert-out", required_argument, NULL, O_CERT_OUT},
		{"attestor", required_argument, NULL, O_ATTESTOR},
		{"role", required_argument, NULL, O_ROLE},
		{"token-file", required_argument, NULL, O_TOKEN},
		{"seal-pub", required_argument, NULL, O_SEAL_PUB},
		{"mac", required_argument, NULL, O_MAC},
		{"product-uuid", required_argument, NULL, O_UUID},
		{"x509pop-cert", required_argument, NULL, O_POP_CERT},
		{"x509pop-key", required_argument, NULL, O_POP_KEY},
		{"node-id", required_argument, NULL, O_NODE_ID},
		{"discovery-file", required_argument, NULL, O_DISCOVERY},
		{"max-wait", required_argument, NULL, O_MAX_WAIT},
		{"timeout", required_argument, NULL, O_TIMEOUT},
		{"dump-request", required_argument, NULL, O_DUMP},
		{"tcti", required_argument, NULL, O_TCTI},
		{"key-generation", required_argument, NULL, O_KEY_GEN},
		{"event-log", required_argument, NULL, O_EVENT_LOG},
		{"help", no_argument, NULL, O_HELP},
		{NULL, 0, NULL, 0},
	};
	static char macs[FLEET_JOIN_MAX_MACS][FLEET_WIRE_MAC_LEN + 1];
	static char uuid[FLEET_JOIN_UUID_LEN + 1];
	struct fj_join_opts o = {.attestor = "", .role = FLEET_JOIN_ROLE_NODE,
				 .max_wait = FJ_DEFAULT_MAX_WAIT};
	struct net n = {.timeout = FJ_DEFAULT_TIMEOUT};
	unsigned long long v;
	int ch, rc, have_gen = 0;

	fb_init(&n.curl.ca_pem);
	while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (ch) {
		case O_SERVER:
			n.server = optarg;
			break;
		case O_CA:
			n.ca = optarg;
			break;
		case O_TLS_CA:
			n.tls_ca = optarg;
			break;
		case O_KEY_OUT:
			o.key_out = optarg;
			break;
		case O_CERT_OUT:
			o.cert_out = optarg;
			break;
		case O_ATTESTOR:
			/* "" is join-token; else JW4's a-z 0-9 - */
			if (optarg[0] && !chars_ok(optarg, FLEET_JOIN_MAX_ATTESTOR, AZ09 "-"))
				return usage_error("--attestor %s: 1..31 of a-z 0-9 -", optarg);
			o.attestor = optarg;
			break;
		case O_ROLE:
			o.role = 0;
			for (int r = FLEET_JOIN_ROLE_NODE; r <= FLEET_JOIN_ROLE_RAMDISK; r++)
				if (strcmp(optarg, fleet_join_role_name((enum fleet_join_role)r)) == 0)
					o.role = (enum fleet_join_role)r;
			if (!o.role)
				return usage_error("--role %s: node, site or ramdisk", optarg);
			break;
		case O_TOKEN:
			o.token_file = optarg;
			break;
		case O_SEAL_PUB:
			o.seal_pub = optarg;
			break;
		case O_MAC:
			if (o.n_macs == FLEET_JOIN_MAX_MACS)
				return usage_error("at most 16 --mac");
			if (lower_into(optarg, macs[o.n_macs], sizeof(macs[0])) != 0 ||
			    !mac_ok(macs[o.n_macs]))
				return usage_error("--mac %s: aa:bb:cc:dd:ee:ff", optarg);
			for (size_t i = 0; i < o.n_macs; i++)
				if (strcmp(macs[i], macs[o.n_macs]) == 0)
					return usage_error("--mac %s given twice", optarg);
			o.macs[o.n_macs] = macs[o.n_macs];
			o.n_macs++;
			break;
		case O_UUID:
			if (lower_into(optarg, uuid, sizeof(uuid)) != 0 || !uuid_ok(uuid))
				return usage_error("--product-uuid %s: 8-4-4-4-12 hex", optarg);
			o.product_uuid = uuid;
			break;
		case O_POP_CERT:
			o.x509pop_cert = optarg;
			break;
		case O_POP_KEY:
			o.x509pop_key = optarg;
			break;
		case O_NODE_ID:
			if (!chars_ok(optarg, FLEET_JOIN_MAX_ID, AZ09 "_-"))
				return usage_error("--node-id %s: 1..63 of a-z 0-9 _ -", optarg);
			o.node_id = optarg;
			break;
		case O_DISCOVERY:
			o.discovery_file = optarg;
			break;
		case O_MAX_WAIT:
			if (parse_u64(optarg, 0, 86400, &v) != 0)
				return usage_error("--max-wait %s: 0..86400 seconds", optarg);
			o.max_wait = (unsigned)v;
			break;
		case O_TIMEOUT:
			if (parse_u64(optarg, 1, 3600, &v) != 0)
				return usage_error("--timeout %s: 1..3600 seconds", optarg);
			n.timeout = (unsigned)v;
			break;
		case O_DUMP:
			o.dump_request = optarg;
			break;
		case O_TCTI:
			if (!tcti_ok(optarg))
				return FJ_EXIT_USAGE;
			o.tcti = optarg;
			break;
		case O_KEY_GEN:
			if (parse_u64(optarg, 0, TINK_NODE_MAX_GEN, &v) != 0)
				return usage_error("--key-generation %s: 0..%u", optarg,
						   TINK_NODE_MAX_GEN);
			o.key_gen = (unsigned)v;
			have_gen = 1;
			break;
		case O_EVENT_LOG:
			o.event_log = optarg;
			break;
		case O_HELP:
			usage(stdout);
			return FJ_EXIT_OK;
		default:
			return usage_error("join: unknown option");
		}
	}
	if (optind != argc)
		return usage_error("join: unexpected argument %s", argv[optind]);
	if (!o.key_out || !o.cert_out)
		return usage_error("join: --key-out KEY and --cert-out CHAIN.pem are required");
	if (strcmp(o.key_out, o.cert_out) == 0)
		return usage_error("join: --key-out and --cert-out are one file (%s)", o.key_out);
	int pop = strcmp(o.attestor, "x509pop") == 0, disc = strcmp(o.attestor, "discovery") == 0;
	if (!pop && (o.x509pop_cert || o.x509pop_key || o.node_id))
		return usage_error("join: --x509pop-cert, --x509pop-key and --node-id are for "
				   "--attestor x509pop");
	if (pop && (!o.x509pop_cert || !o.x509pop_key || !o.node_id))
		return usage_error("join: --attestor x509pop needs --x509pop-cert, --x509pop-key "
				   "and --node-id");
	if (disc != (o.discovery_file != NULL))
		return usage_error("join: --discovery-file goes with --attestor discovery, and it "
				   "with it");
	if (o.seal_pub && !o.token_file)
		return usage_error("join: --seal-pub seals a --token-file");
	int tpm = strcmp(o.attestor, FJ_TPM_ATTESTOR) == 0;
	if (!tpm && (o.event_log || have_gen || (o.tcti && !pop)))
		return usage_error("join: --key-generation and --event-log are for --attestor tpm, "
				   "--tcti for it and a TPM-held --x509pop-key");
	if (tpm && !o.tcti)
		return usage_error("join: --attestor tpm needs --tcti TCTI (the TPM)");
	if (tpm && (o.token_file || o.seal_pub))
		return usage_error("join: --attestor tpm sends no token (the TPM is the "
				   "credential): drop --token-file");
	if ((rc = net_open(&n)) != FJ_EXIT_OK) {
		net_close(&n);
		return rc;
	}
	struct tink_transport tx = tink_curl_transport(&n.curl);
	struct fj_result res;
	rc = finish(fj_join(&o, &n.pins, &tx, NULL, &res), &res);
	net_close(&n);
	return rc;
}

/* ---- renew ---------------------------------------------------------------- */

static int cmd_renew(int argc, char **argv)
{
	enum { O_SERVER = 1, O_CA, O_TLS_CA, O_KEY, O_CERT, O_TCTI, O_HELP };
	static const struct option longopts[] = {
		{"server", required_argument, NULL, O_SERVER},
		{"ca", required_argument, NULL, O_CA},
		{"tls-ca", required_argument, NULL, O_TLS_CA},
		{"key", required_argument, NULL, O_KEY},
		{"cert", required_argument, NULL, O_CERT},
		{"tcti", required_argument, NULL, O_TCTI},
		{"help", no_argument, NULL, O_HELP},
		{NULL, 0, NULL, 0},
	};
	struct fj_renew_opts o = {.max_wait = FJ_DEFAULT_MAX_WAIT};
	struct net n = {.timeout = FJ_DEFAULT_TIMEOUT};
	int ch, rc;

	fb_init(&n.curl.ca_pem);
	while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (ch) {
		case O_SERVER:
			n.server = optarg;
			break;
		case O_CA:
			n.ca = optarg;
			break;
		case O_TLS_CA:
			n.tls_ca = optarg;
			break;
		case O_KEY:
			o.key = optarg;
			break;
		case O_CERT:
			o.cert = optarg;
			break;
		case O_TCTI:
			if (!tcti_ok(optarg))
				return FJ_EXIT_USAGE;
			o.tcti = optarg;
			break;
		case O_HELP:
			usage(stdout);
			return FJ_EXIT_OK;
		default:
			return usage_error("renew: unknown option");
		}
	}
	if (optind != argc)
		return usage_error("renew: unexpected argument %s", argv[optind]);
	if (!o.key || !o.cert)
		return usage_error("renew: --key KEY and --cert CHAIN.pem are required");
	if (strcmp(o.key, o.cert) == 0)
		return usage_error("renew: --key and --cert are one file (%s)", o.key);
	if ((rc = net_open(&n)) != FJ_EXIT_OK) {
		net_close(&n);
		return rc;
	}
	struct tink_transport tx = tink_curl_transport(&n.curl);
	struct fj_result res;
	rc = finish(fj_renew(&o, &n.pins, &tx, NULL, &res), &res);
	net_close(&n);
	return rc;
}

/* ---- assert --------------------------------------------------------------- */

static int cmd_assert(int argc, char **argv)
{
	enum {
		O_KEY = 1, O_CERT, O_SITE, O_SIGNER, O_EPOCH, O_MAC, O_IP, O_UUID, O_WORKFLOW,
		O_TTL, O_ISSUED_AT, O_TCTI, O_HELP,
	};
	static const struct option longopts[] = {
		{"key", required_argument, NULL, O_KEY},
		{"cert", required_argument, NULL, O_CERT},
		{"site", required_argument, NULL, O_SITE},
		{"signer", required_argument, NULL, O_SIGNER},
		{"epoch", required_argument, NULL, O_EPOCH},
		{"mac", required_argument, NULL, O_MAC},
		{"ip", required_argument, NULL, O_IP},
		{"product-uuid", required_argument, NULL, O_UUID},
		{"workflow", required_argument, NULL, O_WORKFLOW},
		{"ttl", required_argument, NULL, O_TTL},
		{"issued-at", required_argument, NULL, O_ISSUED_AT},
		{"tcti", required_argument, NULL, O_TCTI},
		{"help", no_argument, NULL, O_HELP},
		{NULL, 0, NULL, 0},
	};
	struct fleet_discovery_assertion a;
	const char *key_path = NULL, *cert_path = NULL, *tcti = NULL;
	unsigned long long v, ttl = FJ_ASSERT_DEFAULT_TTL, issued = 0;
	int have_epoch = 0, ch;

	memset(&a, 0, sizeof(a));
	while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (ch) {
		case O_KEY:
			key_path = optarg;
			break;
		case O_CERT:
			cert_path = optarg;
			break;
		case O_SITE:
			if (!chars_ok(optarg, FLEET_EVIDENCE_SITE_MAX, AZ09 "-"))
				return usage_error("--site %s: 1..63 of a-z 0-9 -", optarg);
			memcpy(a.site, optarg, strlen(optarg) + 1);
			break;
		case O_SIGNER:
			if (!chars_ok(optarg, FLEET_JOIN_MAX_ID, AZ09 "_-"))
				return usage_error("--signer %s: a node id, 1..63 of a-z 0-9 _ -",
						   optarg);
			memcpy(a.signer, optarg, strlen(optarg) + 1);
			break;
		case O_EPOCH:
			if (parse_u64(optarg, 1, 1ULL << 53, &v) != 0)
				return usage_error("--epoch %s: 1..2^53", optarg);
			a.epoch = (int64_t)v;
			have_epoch = 1;
			break;
		case O_MAC:
			if (lower_into(optarg, a.mac, sizeof(a.mac)) != 0 || !mac_ok(a.mac))
				return usage_error("--mac %s: aa:bb:cc:dd:ee:ff", optarg);
			break;
		case O_IP:
			if (lower_into(optarg, a.ip, sizeof(a.ip)) != 0 ||
			    !chars_ok(a.ip, FLEET_EVIDENCE_IP_MAX, "0123456789abcdef.:"))
				return usage_error("--ip %s: an IPv4 or IPv6 address", optarg);
			break;
		case O_UUID:
			if (lower_into(optarg, a.product_uuid, sizeof(a.product_uuid)) != 0 ||
			    !uuid_ok(a.product_uuid))
				return usage_error("--product-uuid %s: 8-4-4-4-12 hex", optarg);
			break;
		case O_WORKFLOW:
			if (!chars_ok(optarg, FLEET_EVIDENCE_WORKFLOW_MAX, AZ09 "._-"))
				return usage_error("--workflow %s: 1..63 of a-z 0-9 . _ -", optarg);
			memcpy(a.workflow, optarg, strlen(optarg) + 1);
			break;
		case O_TTL:
			if (parse_u64(optarg, 1, FJ_ASSERT_MAX_TTL, &ttl) != 0)
				return usage_error("--ttl %s: 1..900 seconds", optarg);
			break;
		case O_ISSUED_AT:
			if (parse_u64(optarg, 1, (unsigned long long)FLEET_JOIN_MAX_NOT_AFTER,
				      &issued) != 0)
				return usage_error("--issued-at %s: Unix seconds", optarg);
			break;
		case O_TCTI:
			if (!tcti_ok(optarg))
				return FJ_EXIT_USAGE;
			tcti = optarg;
			break;
		case O_HELP:
			usage(stdout);
			return FJ_EXIT_OK;
		default:
			return usage_error("assert: unknown option");
		}
	}
	if (optind != argc)
		return usage_error("assert: unexpected argument %s", argv[optind]);
	if (!key_path || !cert_path || !a.site[0] || !a.signer[0] || !have_epoch || !a.mac[0])
		return usage_error("assert: --key, --cert, --site, --signer, --epoch and --mac are "
				   "required");
	a.issued_at = issued ? (int64_t)issued : (int64_t)time(NULL);
	a.not_after = a.issued_at + (int64_t)ttl;
	if (a.not_after > FLEET_JOIN_MAX_NOT_AFTER)
		return usage_error("assert: --issued-at plus --ttl is past 9999");

	struct fleet_errctx ec = {0};
	char text[sizeof(ec.detail) + sizeof(ec.ossl) + 80];
	struct fj_pins cert = {0};
	struct fleet_buf out;
	struct fj_key key = {0};
	struct tink_tpm t;
	struct fj_result res = {0};
	bool t_open = false;
	int rc = FJ_EXIT_USAGE;
	fb_init(&out);
	if (fj_key_load(key_path, &key, &ec) != FLEET_OK) {
		say("--key: %s", fleet_errctx_text(&ec, text, sizeof(text)));
		goto out;
	}
	if ((rc = fj_key_open(&key, tcti, &t, &t_open, &res)) != FJ_EXIT_OK) {
		say("--key %s: %s", key_path, res.message);
		goto out;
	}
	rc = FJ_EXIT_USAGE;
	if (fj_chain_read(cert_path, &cert, &ec) != FLEET_OK) {
		say("--cert: %s", fleet_errctx_text(&ec, text, sizeof(text)));
		goto out;
	}
	fleet_err e = fj_assert_build_key(&key, cert.certs[0], &a, &out, &ec);
	if (e != FLEET_OK) {
		rc = fleet_err_code(e) == FLEET_CODE_INVALID_ARG ||
				     fleet_err_code(e) == FLEET_CODE_UNSUPPORTED
			     ? FJ_EXIT_USAGE
			     : FJ_EXIT_LOCAL;
		say("%s", fleet_errctx_text(&ec, text, sizeof(text)));
		goto out;
	}
	/* The bytes exactly, no newline: they are carried as they are. */
	if (fwrite(out.data, 1, out.len, stdout) != out.len || fflush(stdout) != 0) {
		say("cannot write the assertion to stdout");
		rc = FJ_EXIT_LOCAL;
		goto out;
	}
	rc = FJ_EXIT_OK;
out:
	fj_key_free(&key);
	if (t_open)
		tink_tpm_close(&t);
	fj_pins_free(&cert);
	fb_free(&out);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return FJ_EXIT_USAGE;
	}
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return FJ_EXIT_OK;
	}
	/* The command's own options: getopt sees argv from the command on. */
	if (strcmp(argv[1], "join") == 0)
		return cmd_join(argc - 1, argv + 1);
	if (strcmp(argv[1], "renew") == 0)
		return cmd_renew(argc - 1, argv + 1);
	if (strcmp(argv[1], "assert") == 0)
		return cmd_assert(argc - 1, argv + 1);
	say("unknown command %s (join, renew or assert)", argv[1]);
	usage(stderr);
	return FJ_EXIT_USAGE;
}
