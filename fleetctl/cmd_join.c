/*
 * cmd_join.c: the join service's keys, pools and tokens (issue 13,
 * docs/join-tokens.md): fleetctl join init | pool create|list |
 * token create|list|revoke|inspect (join-requests, site and node are
 * cmd_join_requests.c's).
 *
 * The owner's commands (everything that writes, and inspect, which opens a
 * token with the service's private key) are root only, on the store's
 * operator handle (the daemon's file, never created or migrated). A token's
 * secret exists in three places only: the CSPRNG's output here, the sealed
 * bytes printed once, and the join service's memory while it opens one; the
 * store keeps its SHA-256 (store.h J2).
 */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "fleetctl/fleetctl.h"
#include "fleetctl/util.h"
#include "fleetd/store/store.h"
#include "lib/attest_wire.h"
#include "lib/join_token.h"
#include "lib/sanitize.h"
#include "lib/token_seal.h"
#include "policy/attestors/attestor.h"
#include "lib/tpm_alg.h"

#define DEFAULT_STATE_DIR "/var/lib/fleetd"
#define SEAL_KEY "join/seal.key"
#define SEAL_PUB "join/seal.pub"
#define DEFAULT_TTL (24 * 3600)
#define MAX_TTL (30 * 86400)

/* The attestors this fleetd runs: what a pool's join_attestors may name
 * (the one list, policy/attestors/attestor.h). */
#define known_attestors fleet_attestor_ids

static const char *const usage_text =
	"usage: fleetctl join init [--state-dir DIR]\n"
	"       fleetctl pool create ID --owner NAME [--join-attestors A,B] [--state-dir DIR]\n"
	"       fleetctl pool list [--state-dir DIR] [--json]\n"
	"       fleetctl token create --pool ID --role node|site|provisioned|discovery\n"
	"                [--site ID] [--uses N] [--ttl SECONDS] [--expect-mac MAC]\n"
	"                [--expect-product-uuid UUID] [--allow-reclaim] [--node NODE]\n"
	"                [--state-dir DIR] [--json]\n"
	"       fleetctl token list [--state-dir DIR] [--json]\n"
	"       fleetctl token revoke ID [--state-dir DIR]\n"
	"       fleetctl token inspect SEALED [--state-dir DIR] [--json]\n"
	"\n"
	"join init makes the join service's sealing key (DIR/join/seal.key, mode 0600,\n"
	"and seal.pub). token create prints the sealed token once (base64url); the\n"
	"store keeps only its secret's SHA-256. --node names the node a provisioned\n"
	"token was minted for (it re-keys that node). Writing commands and inspect are root\n"
	"only. Exit codes: 0 done; 1 the sealed token does not open; 2 usage or a file\n"
	"or the store failed; 3 not root; 4 no such pool or token; 5 it exists already,\n"
	"or is revoked already.\n";






/* ---- the sealing key ------------------------------------------------------- */

/* Write data to path, created new (never over an existing file), with
 * mode, owned like the state directory (the daemon reads it as its user). */
static int write_new(const char *path, const void *data, size_t len, mode_t mode,
		     const struct stat *owner)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0)
		return -1;
	const char *p = data;
	for (size_t off = 0; off < len;) {
		ssize_t w = write(fd, p + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			close(fd);
			unlink(path);
			return -1;
		}
		off += (size_t)w;
	}
	if ((geteuid() == 0 && fchown(fd, owner->st_uid, owner->st_gid) != 0) ||
	    fchmod(fd, mode) != 0 || fsync(fd) != 0) {
		close(fd);
		unlink(path);
		return -1;
	}
	return close(fd);
}

static int join_init(int argc, char **argv)
{
	const char *dir = NULL;
	int json = 0;
	const struct fleetctl_opt opts[] = {{"--state-dir", &dir}};
	if (fleetctl_parse_opts("join", argc, argv, 2, opts, 1, &json))
		return FLEETCTL_EXIT_USAGE;
	int rc = fleetctl_need_root("join init");
	if (rc)
		return rc;
	char jdir[600], key_path[640], pub_path[640];
	struct stat sd;
	snprintf(jdir, sizeof(jdir), "%s/join", fleetctl_state_dir(dir));
	snprintf(key_path, sizeof(key_path), "%s/%s", fleetctl_state_dir(dir), SEAL_KEY);
	snprintf(pub_path, sizeof(pub_path), "%s/%s", fleetctl_state_dir(dir), SEAL_PUB);
	if (stat(fleetctl_state_dir(dir), &sd) != 0 || !S_ISDIR(sd.st_mode))
		return fleetctl_fail(FLEETCTL_EXIT_USAGE, "join init: no state directory %s", fleetctl_state_dir(dir));
	if (access(key_path, F_OK) == 0)
		return fleetctl_fail(FLEETCTL_EXIT_STATE,
			    "join init: %s exists: the service has its key (a new one would "
			    "make every sealed token unopenable)",
			    key_path);
	if (mkdir(jdir, 0700) != 0 && errno != EEXIST)
		return fleetctl_fail(FLEETCTL_EXIT_USAGE, "join init: cannot make %s: %s", jdir, strerror(errno));
	if (geteuid() == 0 && chown(jdir, sd.st_uid, sd.st_gid) != 0)
		return fleetctl_fail(FLEETCTL_EXIT_USAGE, "join init: cannot chown %s: %s", jdir, strerror(errno));
	struct fleet_seal_key *k = NULL;
	struct fleet_buf pem, spki;
	fb_init_secret(&pem, FLEET_SEAL_MAX_PEM);
	fb_init(&spki);
	rc = FLEETCTL_EXIT_USAGE;
	if (fleet_seal_key_generate(&k) != FLEET_OK || fleet_seal_key_private_pem(k, &pem) != FLEET_OK ||
	    fleet_seal_key_public_spki(k, &spki) != FLEET_OK) {
		fleetctl_fail(rc, "join init: making the key failed");
		goto out;
	}
	const unsigned char *p = spki.data;
	EVP_PKEY *pub = d2i_PUBKEY(NULL, &p, (long)spki.len);
	BIO *b = BIO_new(BIO_s_mem());
	char *pub_pem = NULL;
	long pub_len = 0;
	if (!pub || !b || PEM_write_bio_PUBKEY(b, pub) != 1 ||
	    (pub_len = BIO_get_mem_data(b, &pub_pem)) <= 0) {
		EVP_PKEY_free(pub);
		BIO_free(b);
		fleetctl_fail(rc, "join init: encoding the public key failed");
		goto out;
	}
	if (write_new(key_path, pem.data, pem.len, 0600, &sd) != 0) {
		fleetctl_fail(rc, "join init: cannot write %s: %s", key_path, strerror(errno));
	} else if (write_new(pub_path, pub_pem, (size_t)pub_len, 0644, &sd) != 0) {
		fleetctl_fail(rc, "join init: cannot write %s: %s", pub_path, strerror(errno));
		unlink(key_path);
	} else {
		uint8_t id[FLEET_SEAL_KEY_ID_LEN];
		char hex[2 * FLEET_SEAL_KEY_ID_LEN + 1];
		fleet_seal_key_id(k, id);
		for (size_t i = 0; i < sizeof(id); i++)
			snprintf(hex + 2 * i, 3, "%02x", id[i]);
		printf("join init: the sealing key is %s (key id %s); tokens are sealed to %s\n",
		       key_path, hex, pub_path);
		rc = FLEETCTL_EXIT_OK;
	}
	EVP_PKEY_free(pub);
	BIO_free(b);
out:
	fleet_seal_key_free(k);
	fb_free(&pem);
	fb_free(&spki);
	return rc;
}

/* The service's public key, as SPKI DER. */
static int read_pub(const char *dir, struct fleet_buf *spki)
{
	char path[640];
	struct fleet_buf pem;
	snprintf(path, sizeof(path), "%s/%s", fleetctl_state_dir(dir), SEAL_PUB);
	fb_init(&pem);
	if (fleetctl_read("token", "the join service's public key", path, 8192, &pem) != 0) {
		fb_free(&pem);
		fprintf(stderr, "fleetctl: token: run `fleetctl join init` first\n");
		return -1;
	}
	BIO *b = BIO_new_mem_buf(pem.data, (int)pem.len);
	EVP_PKEY *k = b ? PEM_read_bio_PUBKEY(b, NULL, NULL, NULL) : NULL;
	unsigned char *der = NULL;
	int n = k ? i2d_PUBKEY(k, &der) : -1;
	BIO_free(b);
	EVP_PKEY_free(k);
	fb_free(&pem);
	fb_reset(spki);
	int rc = n > 0 && fb_put(spki, der, (size_t)n) == FLEET_OK ? 0 : -1;
	OPENSSL_free(der);
	if (rc)
		fprintf(stderr, "fleetctl: token: %s is not a public key (PEM)\n", path);
	return rc;
}

/* ---- pools ----------------------------------------------------------------- */

static int pool_create(int argc, char **argv)
{
	if (argc < 3 || argv[2][0] == '-') {
		fputs(usage_text, stderr);
		return FLEETCTL_EXIT_USAGE;
	}
	const char *dir = NULL, *owner = NULL, *attestors = NULL;
	int json = 0;
	const struct fleetctl_opt opts[] = {
		{"--state-dir", &dir}, {"--owner", &owner}, {"--join-attestors", &attestors}};
	if (fleetctl_parse_opts("pool", argc, argv, 3, opts, 3, &json))
		return FLEETCTL_EXIT_USAGE;
	struct fleet_store_pool p = {.created_at = (int64_t)time(NULL)};
	if (!owner)
		return fleetctl_fail(FLEETCTL_EXIT_USAGE, "pool create: --owner NAME is required");
	if (strlen(argv[2]) > FLEET_STORE_POOL_ID_MAX || strlen(owner) > 63)
		return fleetctl_fail(FLEETCTL_EXIT_USAGE, "pool create: the id or owner is too long");
	snprintf(p.id, sizeof(p.id), "%s", argv[2]);
	snprintf(p.owner, sizeof(p.owner), "%s", owner);
	if (attestors) {
		char list[1100];
		if (strlen(attestors) >= sizeof(list))
			return fleetctl_fail(FLEETCTL_EXIT_USAGE, "pool create: --join-attestors is too long");
		snprintf(list, sizeof(list), "%s", attestors);
		for (char *save = NULL, *t = strtok_r(list, ",", &save); t;
		     t = strtok_r(NULL, ",", &save)) {
			bool known = false;
			for (size_t i = 0; known_attestors[i]; i++)
				known = known || !strcmp(known_attestors[i], t);
			/* The spec's INVALID_INPUT: an id this server does not run. */
			if (!known || p.n_attestors == FLEET_STORE_POOL_MAX_ATTESTORS)
				return fleetctl_fail(FLEETCTL_EXIT_USAGE,
					    "pool create: --join-attestors: %s (1 to %d of the "
					    "attestors this fleetd runs: join-token, x509pop, provisioned, "
					    "discovery)",
					    known ? "too many" : "not an attestor this fleetd runs",
					    FLEET_STORE_POOL_MAX_ATTESTORS);
			snprintf(p.attestors[p.n_attestors++], FLEET_STORE_ATTESTOR_MAX + 1, "%s", t);
		}
		if (!p.n_attestors)
			return fleetctl_fail(FLEETCTL_EXIT_USAGE, "pool create: --join-attestors is empty");
	}
	int rc = fleetctl_need_root("pool create");
	if (rc)
		return rc;
	struct fleet_store *st = fleetctl_open_store("pool", fleetctl_state_dir(dir), FLEET_STORE_OPERATOR);
	if (!st)
		return FLEETCTL_EXIT_USAGE;
	fleet_err e = fleet_store_pool_create(st, &p);
	if (e)
		rc = fleetctl_fail(fleetctl_store_code(e), "pool create: %s", fleet_store_errmsg(st));
	else
		printf("pool create: %s (owner %s)\n", p.id, p.owner);
	fleet_store_close(st);
	return rc;
}

static int pool_list(int argc, char **argv)
{
	const char *dir = NULL;
	int json = 0;
	const struct fleetctl_opt opts[] = {{"--state-dir", &dir}};
	if (fleetctl_parse_opts("pool", argc, argv, 2, opts, 1, &json))
		return FLEETCTL_EXIT_USAGE;
	struct fleet_store *st = fleetctl_open_store("pool", fleetctl_state_dir(dir), FLEET_STORE_READONLY);
	if (!st)
		return FLEETCTL_EXIT_USAGE;
	struct fleet_store_pool *p = NULL;
	size_t n = 0;
	fleet_err e = fleet_store_pools_list(st, &p, &n);
	if (e) {
		fleet_store_close(st);
		return fleetctl_fail(FLEETCTL_EXIT_USAGE, "pool list: %s", fleet_store_errmsg(st));
	}
	json_t *arr = json ? json_array() : NULL;
	if (!json)
		printf("%-24s %-20s %s\n", "ID", "OWNER", "ATTESTORS");
	for (size_t i = 0; i < n; i++) {
		char list[FLEET_STORE_POOL_MAX_ATTESTORS * (FLEET_STORE_ATTESTOR_MAX + 1) + 1] = "";
		size_t off = 0;
		json_t *a = json ? json_array() : NULL;
		for (size_t j = 0; j < p[i].n_attestors; j++) {
			off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%s", j ? "," : "",
						p[i].attestors[j]);
			if (a)
				json_array_append_new(a, json_string(p[i].attestors[j]));
		}
		if (json)
			json_array_append_new(arr, json_pack("{s:s, s:s, s:o}", "id", p[i].id, "owner",
							     p[i].owner, "join_attestors",
							     p[i].n_attestors ? a : json_null()));
		else
			printf("%-24s %-20s %s\n", p[i].id, p[i].owner, off ? list : "(any)");
		if (a && !p[i].n_attestors)
			json_decref(a);
	}
	if (json)
		fleetctl_print_json(json_pack("{s:o}", "pools", arr));
	free(p);
	fleet_store_close(st);
	return FLEETCTL_EXIT_OK;
}

/* ---- tokens ---------------------------------------------------------------- */

static bool lower_pattern(const char *s, size_t len, const char *allowed)
{
	if (strlen(s) != len)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!strchr(allowed, s[i]))
			return false;
	return true;
}

static int token_create(int argc, char **argv)
{
	const char *dir = NULL, *pool = NULL, *role = NULL, *site = NULL, *uses_s = NULL,
		   *ttl_s = NULL, *mac = NULL, *uuid = NULL, *node = NULL;
	int json = 0;
	bool reclaim = false;
	/* --allow-reclaim takes no value: take it out before the common parse */
	char **args = calloc((size_t)argc + 1, sizeof(*args));
	int n = 0;
	if (!args)
		return FLEETCTL_EXIT_USAGE;
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--allow-reclaim"))
			reclaim = true;
		else
			args[n++] = argv[i];
	}
	const struct fleetctl_opt opts[] = {
		{"--state-dir", &dir},	{"--pool", &pool},	  {"--role", &role},
		{"--site", &site},	{"--uses", &uses_s},	  {"--ttl", &ttl_s},
		{"--expect-mac", &mac}, {"--expect-product-uuid", &uuid},
		{"--node", &node},
	};
	int prc = fleetctl_parse_opts("token", n, args, 2, opts, sizeof(opts) / sizeof(opts[0]), &json);
	free(args);
	if (prc)
		return FLEETCTL_EXIT_USAGE;
	if (!pool || !role)
		return fleetctl_fail(FLEETCTL_EXIT_USAGE, "token create: --pool and --role are required");
	unsigned long uses = 1, ttl = DEFAULT_TTL;
	char *end;
	if (uses_s && ((uses = strtoul(uses_s, &end, 10)) < 1 || *end || uses > FLEET_STORE_TOKEN_MAX_USES))
		return fleetctl_fail(FLEETCTL_EXIT_USAGE, "token create: --uses is 1..%d",
			    FLEET_STORE_TOKEN_MAX_USES);
	if (ttl_s && ((ttl = strtoul(ttl_s, &end, 10)) < 60 || *end || ttl > MAX_TTL))
		return fleetctl_fail(FLEETCTL_EXIT_USAGE, "token create: --ttl is 60..%d seconds", MAX_TTL);
	if (mac && !lower_pattern(mac, 17, "0123456789abcdef:"))
		return fleetctl_fail(FLEETCTL_EXIT_USAGE, "token create: --expect-mac is aa:bb:cc:dd:ee:ff");
	if (uuid && !lower_pattern(uuid, 36, "0123456789abcdef-"))
		return fleetctl_fail(FLEETCTL_EXIT_USAGE,
			    "token create: --expect-product-uuid is a lowercase UUID");
	if (node && strcmp(role, "provisioned") != 0)
		return fleetctl_fail(FLEETCTL_EXIT_USAGE,
			    "token create: --node names a provisioned token's target node");
	int rc = fleetctl_need_root("token create");
	if (rc)
		return rc;
	struct fleet_buf spki, sealed, text;
	fb_init(&spki);
	fb_init(&sealed);
	fb_init(&text);
	if (read_pub(dir, &spki) != 0) {
		fb_free(&spki);
		return FLEETCTL_EXIT_USAGE;
	}
	struct fleet_join_token t;
	uint8_t bytes[FLEET_JOIN_TOKEN_LEN], hash[32];
	char who[FLEETCTL_OPERATOR_MAX];
	fleetctl_operator_name(who);
	rc = FLEETCTL_EXIT_USAGE;
	if (fleet_join_token_new(&t) != FLEET_OK || fleet_join_token_encode(&t, bytes) != FLEET_OK ||
	    fleet_hash(FLEET_ALG_SHA256, t.secret, sizeof(t.secret), hash) != FLEET_OK ||
	    fleet_seal(spki.data, spki.len, FLEET_JOIN_TOKEN_PURPOSE, bytes, sizeof(bytes),
		       &sealed) != FLEET_OK ||
	    fleet_b64url_encode(sealed.data, sealed.len, &text) != FLEET_OK) {
		fleetctl_fail(rc, "token create: minting or sealing the token failed");
		goto out;
	}
	/* The store first: a token is printed only once it can be used. */
	struct fleet_store *st = fleetctl_open_store("token", fleetctl_state_dir(dir), FLEET_STORE_OPERATOR);
	if (!st)
		goto out;
	time_t now = time(NULL);
	struct fleet_store_token_in in = {
		.id = t.id, .pool = pool, .site = site, .role = role, .secret_sha256 = hash,
		.uses = (unsigned)uses, .created_at = now, .expires_at = now + (time_t)ttl,
		.created_by = who, .expect_mac = mac, .expect_product_uuid = uuid,
		.allow_reclaim = reclaim, .target_node = node,
	};
	fleet_err e = fleet_store_token_create(st, &in);
	if (e) {
		rc = fleetctl_fail(fleetctl_store_code(e), "token create: %s", fleet_store_errmsg(st));
	} else {
		if (json)
			fleetctl_print_json(json_pack("{s:s, s:s, s:s, s:i, s:I, s:s%}", "id", t.id,
						      "pool", pool, "role", role, "uses", (int)uses,
						      "expires_at", (json_int_t)in.expires_at,
						      "sealed", (const char *)text.data, text.len));
		else
			printf("%.*s\n", (int)text.len, (const char *)text.data);
		fprintf(stderr, "fleetctl: token create: token %s for pool %s, role %s, %lu use(s), "
				"expires in %lu s; the sealed token above is shown only once\n",
			t.id, pool, role, uses, ttl);
		rc = FLEETCTL_EXIT_OK;
	}
	fleet_store_close(st);
out:
	fleet_join_token_wipe(&t);
	OPENSSL_cleanse(bytes, sizeof(bytes));
	fb_free(&spki);
	fb_free(&sealed);
	fb_free(&text);
	return rc;
}

static void when(int64_t t, char out[32])
{
	time_t tt = (time_t)t;
	struct tm tm;
	if (t <= 0 || !gmtime_r(&tt, &tm) || !strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(out, 32, "-");
}

static json_t *token_json(const struct fleet_store_token *t)
{
	char c[32], x[32], r[32], u[32];
	when(t->created_at, c);
	when(t->expires_at, x);
	when(t->revoked_at, r);
	when(t->last_used_at, u);
	return json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:b, "
			 "s:s}",
			 "id", t->id, "pool", t->pool, "site", t->site, "role", t->role,
			 "uses_total", (int)t->uses_total, "uses_left", (int)t->uses_left,
			 "created_at", c, "expires_at", x, "revoked_at", r, "last_used_at", u,
			 "created_by", t->created_by, "expect_mac", t->expect_mac,
			 "expect_product_uuid", t->expect_product_uuid, "allow_reclaim",
			 t->allow_reclaim, "target_node", t->target_node);
}

static int token_list(int argc, char **argv)
{
	const char *dir = NULL;
	int json = 0;
	const struct fleetctl_opt opts[] = {{"--state-dir", &dir}};
	if (fleetctl_parse_opts("token", argc, argv, 2, opts, 1, &json))
		return FLEETCTL_EXIT_USAGE;
	struct fleet_store *st = fleetctl_open_store("token", fleetctl_state_dir(dir), FLEET_STORE_READONLY);
	if (!st)
		return FLEETCTL_EXIT_USAGE;
	struct fleet_store_token *t = NULL;
	size_t n = 0;
	fleet_err e = fleet_store_tokens_list(st, &t, &n);
	if (e) {
		int rc = fleetctl_fail(FLEETCTL_EXIT_USAGE, "token list: %s", fleet_store_errmsg(st));
		fleet_store_close(st);
		return rc;
	}
	json_t *arr = json ? json_array() : NULL;
	if (!json)
		printf("%-26s %-16s %-11s %-9s %-20s %s\n", "ID", "POOL", "ROLE", "USES", "EXPIRES",
		       "STATE");
	time_t now = time(NULL);
	for (size_t i = 0; i < n; i++) {
		char x[32], uses[24];
		when(t[i].expires_at, x);
		snprintf(uses, sizeof(uses), "%u/%u", t[i].uses_left, t[i].uses_total);
		const char *state = t[i].revoked_at        ? "revoked"
				    : t[i].expires_at <= now ? "expired"
				    : t[i].uses_left == 0    ? "used-up"
							     : "live";
		if (json)
			json_array_append_new(arr, token_json(&t[i]));
		else
			printf("%-26s %-16s %-11s %-9s %-20s %s\n", t[i].id, t[i].pool, t[i].role, uses,
			       x, state);
	}
	if (json)
		fleetctl_print_json(json_pack("{s:o}", "tokens", arr));
	free(t);
	fleet_store_close(st);
	return FLEETCTL_EXIT_OK;
}

/* `fleetctl token VERB ARG [--state-dir DIR] [--json]`, root's: 0, or the
 * exit code (usage said, or not root). */
static int root_with_arg(int argc, char **argv, const char *what, const char **dir, int *json)
{
	if (argc < 3 || argv[2][0] == '-') {
		fputs(usage_text, stderr);
		return FLEETCTL_EXIT_USAGE;
	}
	const struct fleetctl_opt opts[] = {{"--state-dir", dir}};
	if (fleetctl_parse_opts("token", argc, argv, 3, opts, 1, json))
		return FLEETCTL_EXIT_USAGE;
	return fleetctl_need_root(what);
}

static int token_revoke(int argc, char **argv)
{
	const char *dir = NULL;
	int json = 0;
	int rc = root_with_arg(argc, argv, "token revoke", &dir, &json);
	if (rc)
		return rc;
	struct fleet_store *st = fleetctl_open_store("token", fleetctl_state_dir(dir), FLEET_STORE_OPERATOR);
	if (!st)
		return FLEETCTL_EXIT_USAGE;
	fleet_err e = fleet_store_token_revoke(st, argv[2], time(NULL));
	if (e)
		rc = fleetctl_fail(fleetctl_store_code(e), "token revoke: %s: %s", argv[2], fleet_store_errmsg(st));
	else
		printf("token revoke: %s revoked: it can never join again\n", argv[2]);
	fleet_store_close(st);
	return rc;
}

/* Which token is this? Opened with the service's key; the secret is never
 * shown, only the id and the store's row. */
static int token_inspect(int argc, char **argv)
{
	const char *dir = NULL;
	int json = 0;
	int rc = root_with_arg(argc, argv, "token inspect", &dir, &json);
	if (rc)
		return rc;
	/* Root reads the daemon's key: owned by the daemon's user (join init
	 * gave it the state directory's owner), so any owner, but private
	 * (0600 or stricter), no symlink, one descriptor. */
	static const struct fleet_file_policy policy = {
		.what = "the join service's sealing key",
		.max_size = FLEET_SEAL_MAX_PEM,
		.owners = 0,
		.forbid = 077,
		.secret = true,
	};
	char path[640];
	struct fleet_errctx ec = {0};
	char err[sizeof(ec.detail) + 80];
	struct fleet_buf pem, pt;
	struct fleet_wire_bytes sealed = {0};
	struct fleet_seal_key *k = NULL;
	struct fleet_join_token t;
	memset(&t, 0, sizeof(t));
	fb_init_secret(&pem, FLEET_SEAL_MAX_PEM);
	fb_init_secret(&pt, FLEET_SEAL_MAX_PLAINTEXT);
	snprintf(path, sizeof(path), "%s/%s", fleetctl_state_dir(dir), SEAL_KEY);
	rc = FLEETCTL_EXIT_USAGE;
	if (fleet_file_read(AT_FDCWD, path, &policy, &pem, &ec) != FLEET_OK ||
	    fleet_seal_key_load_pem(pem.data, pem.len, &k, &ec) != FLEET_OK) {
		fleetctl_fail(rc, "token inspect: %s", fleet_errctx_text(&ec, err, sizeof(err)));
		goto out;
	}
	rc = FLEETCTL_EXIT_REFUSED;
	memset(&ec, 0, sizeof(ec));
	if (fleet_b64url_decode(argv[2], strlen(argv[2]), 8192, &sealed) != FLEET_OK) {
		rc = fleetctl_refuse("token inspect", json, "not-base64url",
				     "the sealed token is not base64url");
		goto out;
	}
	if (fleet_unseal(k, FLEET_JOIN_TOKEN_PURPOSE, sealed.data, sealed.len, &pt, &ec) != FLEET_OK ||
	    fleet_join_token_decode(pt.data, pt.len, &t, &ec) != FLEET_OK) {
		rc = fleetctl_refuse("token inspect", json, ec.reason ? ec.reason : "seal",
				     fleet_errctx_text(&ec, err, sizeof(err)));
		goto out;
	}
	struct fleet_store *st = fleetctl_open_store("token", fleetctl_state_dir(dir), FLEET_STORE_READONLY);
	if (!st) {
		rc = FLEETCTL_EXIT_USAGE;
		goto out;
	}
	struct fleet_store_token row;
	fleet_err e = fleet_store_token_get(st, t.id, &row);
	if (e) {
		rc = fleetctl_fail(fleetctl_store_code(e), "token inspect: the token opens (id %s) but: %s", t.id,
			  fleet_store_errmsg(st));
	} else {
		if (json)
			fleetctl_print_json(token_json(&row));
		else
			printf("token %s: pool %s, role %s, %u of %u uses left, expires %lld%s\n",
			       row.id, row.pool, row.role, row.uses_left, row.uses_total,
			       (long long)row.expires_at, row.revoked_at ? ", revoked" : "");
		rc = FLEETCTL_EXIT_OK;
	}
	fleet_store_close(st);
out:
	fleet_join_token_wipe(&t);
	fleet_seal_key_free(k);
	free(sealed.data);
	fb_free(&pem);
	fb_free(&pt);
	return rc;
}

static int usage_exit(int argc, char **argv)
{
	bool help = argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"));
	fputs(usage_text, help ? stdout : stderr);
	return help ? FLEETCTL_EXIT_OK : FLEETCTL_EXIT_USAGE;
}

int cmd_join(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "init"))
		return join_init(argc, argv);
	return usage_exit(argc, argv);
}

int cmd_pool(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "create"))
		return pool_create(argc, argv);
	if (argc >= 2 && !strcmp(argv[1], "list"))
		return pool_list(argc, argv);
	return usage_exit(argc, argv);
}

int cmd_token(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "create"))
		return token_create(argc, argv);
	if (argc >= 2 && !strcmp(argv[1], "list"))
		return token_list(argc, argv);
	if (argc >= 2 && !strcmp(argv[1], "revoke"))
		return token_revoke(argc, argv);
	if (argc >= 2 && !strcmp(argv[1], "inspect"))
		return token_inspect(argc, argv);
	return usage_exit(argc, argv);
}
