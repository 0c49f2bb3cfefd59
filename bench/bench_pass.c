/*
 * bench_pass.c: one real pass (fleetd/pass/ fleet_pass_run, the function the
 * daemon's pass thread calls) against the NetBox contract fake
 * (tests/fakes/netbox_fake.py) over TLS with the real NetBox client
 * (fleetd/inventory/netbox.c) and the real store, read through its own
 * read-only handle. Measures this process (the fake is a child: its CPU is
 * not counted) and prints key=value lines; see docs/benchmark-pass.md.
 *
 * Usage: bench_pass --fake PATH [--devices N] [--page-size N] [--passes N] [--keep DIR]
 *                   [--store postgres://...]
 *
 * --store runs the pass on the PostgreSQL store instead (a libpq URI naming
 * an empty database, which is seeded and left seeded): as a replica would.
 * The server's CPU is another process's; pg_server_cpu_s adds up every
 * process named postgres on this host over the pass (the cluster's
 * backends: the pass's own is open throughout), so run it on a host with
 * that one cluster.
 *
 * --passes 2 runs a pass first (its figures not printed) and measures the
 * second: the steady state, where the file already exists and the writer
 * decodes it to compare contents. rss_max_mib is the process's peak over
 * every pass.
 *
 * The fleet: N devices admitted in the store (a passing verdict and one
 * LDevID each, every tenth with an ECC EK); NetBox lists the first 98 % as
 * active (eligible), the next 1 % decommissioning (revoked), and the last
 * 1 % are gone from NetBox (revoked); every custom field folly's Terraform
 * declares is set. Then the file is checked: every eligible device, every
 * revoked one, nothing else. Exit 0 when correct (whatever the timing), 1
 * when not, 77 without python3 or openssl.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>
#include <dirent.h>
#include <libpq-fe.h>
#include <sqlite3.h>

#include "fleetd/config/config.h"
#include "fleetd/inventory/netbox.h"
#include "fleetd/obs/journal.h"
#include "fleetd/pass/pass.h"
#include "fleetd/store/store.h"
#include "lib/buf.h"
#include "lib/file_read.h"
#include "lib/spire_nodes_format.h"

#define V1 "0123456789abcdef0123456789abcdef01234567"
#define TD "fleet.example"
#define DAY 86400
#define TARGET_CPU_PER_10K 0.5
#define TARGET_RSS_MIB 64.0

static size_t n_dev = 50000, n_active, n_listed;
static const char *fake;
static char dir[200];
static const char *pg_uri; /* --store: NULL for SQLite in dir */

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("bench_pass: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

static double mono_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double cpu_s(int who)
{
	struct rusage u;
	getrusage(who, &u);
	return (double)u.ru_utime.tv_sec + (double)u.ru_utime.tv_usec / 1e6 +
	       (double)u.ru_stime.tv_sec + (double)u.ru_stime.tv_usec / 1e6;
}

static double thread_cpu_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	if (system(cmd) != 0)
		die("command failed: %s", cmd);
}

static void hex64(char out[65], size_t v)
{
	snprintf(out, 65, "%064zu", v);
}

/* The seed: every listed device with every custom field set. */
static void write_seed(const char *path)
{
	FILE *f = fopen(path, "w");
	if (!f)
		die("cannot write %s", path);
	fprintf(f, "{\"paginate_count\": 100, \"max_page_size\": 1000,\n"
		   " \"tokens\": {\"" V1 "\": {\"user\": \"fleetd\"}},\n"
		   " \"custom_fields\": [\"class\", \"install_disk\", \"install_disk_serial\","
		   " \"bmc_type\", \"tpm_version\", \"amt\", \"secure_boot_expected\","
		   " \"expected_port\", \"approved_ek_hash\", \"approved_ek_hash_ecc\","
		   " \"ek_hash\", \"ek_hash_ecc\", \"desired_action\"],\n"
		   " \"devices\": [\n");
	char ek[65], ecc[65];
	for (size_t i = 0; i < n_listed; i++) {
		hex64(ek, 2 * i + 1);
		hex64(ecc, 2 * i + 2);
		const char *e = i % 10 == 0 ? ecc : NULL;
		fprintf(f,
			"%s{\"id\": %zu, \"name\": \"w%05zu\", \"serial\": \"SN-%05zu\","
			" \"status\": \"%s\", \"primary_ip4\": \"10.%zu.%zu.%zu/16\","
			" \"custom_fields\": {\"class\": \"worker-gce-shielded\","
			" \"install_disk\": \"/dev/nvme0n1\", \"install_disk_serial\": \"NVME-%05zu\","
			" \"bmc_type\": \"redfish\", \"tpm_version\": \"2.0\", \"amt\": false,"
			" \"secure_boot_expected\": true, \"expected_port\": \"Ethernet1/%zu\","
			" \"approved_ek_hash\": \"%s\", \"approved_ek_hash_ecc\": %s%s%s,"
			" \"ek_hash\": \"%s\", \"ek_hash_ecc\": %s%s%s, \"desired_action\": null}}\n",
			i ? "," : "", i + 1, i, i, i < n_active ? "active" : "decommissioning",
			(i >> 16) & 255, (i >> 8) & 255, i & 255, i, i % 48 + 1, ek, e ? "\"" : "",
			e ? e : "null", e ? "\"" : "", ek, e ? "\"" : "", e ? e : "null",
			e ? "\"" : "");
	}
	fputs("]}\n", f);
	if (fclose(f) != 0)
		die("cannot write %s", path);
}

/* The same rows on PostgreSQL, in one transaction: lpad for printf's %0Nd,
 * generate_series for the recursive count. */
static void seed_pg(void)
{
	char sql[2048];
	time_t now = time(NULL);
	PGconn *db = PQconnectdb(pg_uri);
	if (PQstatus(db) != CONNECTION_OK)
		die("--store: %s", PQerrorMessage(db));
	PGresult *r = PQexec(db, "SELECT count(*) FROM devices");
	if (PQresultStatus(r) != PGRES_TUPLES_OK || strcmp(PQgetvalue(r, 0, 0), "0") != 0)
		die("--store: the database must be empty (a fresh one, migrated by fleetd): %s",
		    PQresultErrorMessage(r));
	PQclear(r);
	snprintf(sql, sizeof(sql),
		 "BEGIN;"
		 "INSERT INTO devices (name, serial, inventory_id, ek_hash, ek_hash_ecc, "
		 " first_admitted, last_seen) SELECT 'w' || lpad(i::text, 5, '0'), "
		 " 'SN-' || lpad(i::text, 5, '0'), i + 1, lpad((2 * i + 1)::text, 64, '0'), "
		 " CASE WHEN i %% 10 = 0 THEN lpad((2 * i + 2)::text, 64, '0') END, %lld, %lld "
		 " FROM generate_series(0, %zu) AS i;"
		 "INSERT INTO verdicts (time, device, serial, session, result, reasons, ek_hash, "
		 " ek_hash_ecc) SELECT %lld, name, serial, '0a', 'pass', '[]', ek_hash, "
		 " ek_hash_ecc FROM devices;"
		 "INSERT INTO certificates (device_id, kind, sha1, not_after, issued_at, der) "
		 " SELECT id, 'ldevid', lpad(id::text, 40, '0'), %lld, %lld, '\\x3000'::bytea "
		 " FROM devices;"
		 "COMMIT;",
		 (long long)(now - 30 * DAY), (long long)(now - 30 * DAY), n_dev - 1,
		 (long long)(now - DAY), (long long)(now + 300 * DAY), (long long)(now - DAY));
	r = PQexec(db, sql);
	if (PQresultStatus(r) != PGRES_COMMAND_OK)
		die("seeding the store: %s", PQresultErrorMessage(r));
	PQclear(r);
	PQfinish(db);
}

/* utime + stime of every process named postgres on this host, in seconds
 * (/proc/PID/stat fields 14 and 15, clock ticks). */
static double postgres_cpu_s(void)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	unsigned long long ticks = 0;
	if (!d)
		return 0;
	while ((e = readdir(d))) {
		char path[300], buf[1024];
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		size_t n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[n] = 0;
		char *open = strchr(buf, '('), *close = strrchr(buf, ')');
		if (!open || !close || close - open - 1 != 8 || strncmp(open + 1, "postgres", 8))
			continue;
		unsigned long long ut, st;
		/* after ") ": state is field 3; utime and stime are 14 and 15 */
		if (sscanf(close + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut,
			   &st) == 2)
			ticks += ut + st;
	}
	closedir(d);
	return (double)ticks / (double)sysconf(_SC_CLK_TCK);
}

/* The rows admission writes, in one transaction (as test_spire_fleet_50k). */
static void seed_store(void)
{
	struct fleet_store *st;
	struct fleet_errctx ec = {0};
	char err[sizeof(ec.detail) + 80], path[600], sql[2048], *msg = NULL;
	time_t now = time(NULL);
	/* fleetd's own open creates (or migrates) the schema, on either engine */
	if (fleet_store_open(pg_uri ? pg_uri : dir, FLEET_STORE_RW, &st, &ec) != FLEET_STORE_OK)
		die("store: %s", fleet_errctx_text(&ec, err, sizeof(err)));
	fleet_store_close(st);
	if (pg_uri) {
		seed_pg();
		return;
	}
	snprintf(path, sizeof(path), "%s/" FLEET_STORE_FILE, dir);
	sqlite3 *db;
	if (sqlite3_open(path, &db) != SQLITE_OK)
		die("sqlite3_open %s", path);
	snprintf(sql, sizeof(sql),
		 "BEGIN;"
		 "WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i < %zu) "
		 "INSERT INTO devices (name, serial, inventory_id, ek_hash, ek_hash_ecc, "
		 " first_admitted, last_seen) SELECT printf('w%%05d', i), printf('SN-%%05d', i), "
		 " i + 1, printf('%%064d', 2 * i + 1), "
		 " CASE WHEN i %% 10 = 0 THEN printf('%%064d', 2 * i + 2) END, %lld, %lld FROM k;"
		 "INSERT INTO verdicts (time, device, serial, session, result, reasons, ek_hash, "
		 " ek_hash_ecc) SELECT %lld, name, serial, '0a', 'pass', '[]', ek_hash, "
		 " ek_hash_ecc FROM devices;"
		 "INSERT INTO certificates (device_id, kind, sha1, not_after, issued_at, der) "
		 " SELECT id, 'ldevid', printf('%%040d', id), %lld, %lld, x'3000' FROM devices;"
		 "COMMIT;",
		 n_dev - 1, (long long)(now - 30 * DAY), (long long)(now - 30 * DAY),
		 (long long)(now - DAY), (long long)(now + 300 * DAY), (long long)(now - DAY));
	if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
		die("seeding the store: %s", msg);
	sqlite3_close(db);
}

static pid_t fake_pid;

static void start_fake(char *base, size_t baselen)
{
	int fd[2];
	char line[32] = "", cert[600], key[600], seed[600];
	snprintf(cert, sizeof(cert), "%s/srv.pem", dir);
	snprintf(key, sizeof(key), "%s/srv.key", dir);
	snprintf(seed, sizeof(seed), "%s/seed.json", dir);
	if (pipe(fd) != 0)
		die("pipe");
	fake_pid = fork();
	if (fake_pid == 0) {
		dup2(fd[1], 1);
		close(fd[0]);
		close(fd[1]);
		execlp("python3", "python3", fake, cert, key, seed, (char *)NULL);
		_exit(127);
	}
	close(fd[1]);
	struct pollfd p = {.fd = fd[0], .events = POLLIN};
	size_t n = 0;
	/* seeding 50,000 devices takes the fake some seconds */
	while (n + 1 < sizeof(line) && !strchr(line, '\n') && poll(&p, 1, 300000) == 1) {
		ssize_t k = read(fd[0], line + n, sizeof(line) - 1 - n);
		if (k <= 0)
			break;
		n += (size_t)k;
		line[n] = '\0';
	}
	close(fd[0]);
	int port = atoi(line);
	if (port <= 0)
		die("the NetBox fake did not start");
	snprintf(base, baselen, "https://127.0.0.1:%d", port);
}

static void stop_fake(void)
{
	if (fake_pid > 0) {
		kill(fake_pid, SIGTERM);
		waitpid(fake_pid, NULL, 0);
		fake_pid = 0;
	}
}

/* ---- the peer: jansson parsing the same bytes --------------------------- */

static size_t sink(char *p, size_t sz, size_t n, void *ud)
{
	return fb_put(ud, p, sz * n) == FLEET_OK ? sz * n : 0;
}

/* The same pages fetched again (one handle), each parsed with jansson as a
 * whole document, as any client must at least: the CPU of the parse alone. */
static void peer(const char *base, unsigned page_size, double *parse_s, unsigned long long *bytes,
		 unsigned *pages)
{
	char url[1024], ca[600];
	snprintf(ca, sizeof(ca), "%s/ca.pem", dir);
	snprintf(url, sizeof(url),
		 "%s/api/dcim/devices/?exclude=config_context&fields=id,name,serial,status,"
		 "primary_ip4,custom_fields&limit=%u",
		 base, page_size);
	CURL *h = curl_easy_init();
	struct curl_slist *hdr = curl_slist_append(NULL, "Authorization: Token " V1);
	struct fleet_buf b;
	fb_init(&b);
	*parse_s = 0;
	*bytes = 0;
	*pages = 0;
	for (;;) {
		fb_reset(&b);
		curl_easy_setopt(h, CURLOPT_URL, url);
		curl_easy_setopt(h, CURLOPT_CAINFO, ca);
		curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
		curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
		curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
		curl_easy_setopt(h, CURLOPT_TIMEOUT, 120L);
		if (curl_easy_perform(h) != CURLE_OK)
			die("the peer's fetch of %s failed", url);
		*bytes += b.len;
		(*pages)++;
		double t = thread_cpu_s();
		json_t *j = json_loadb((const char *)b.data, b.len, JSON_REJECT_DUPLICATES, NULL);
		*parse_s += thread_cpu_s() - t;
		if (!j)
			die("the peer cannot parse a page");
		const char *next = json_string_value(json_object_get(j, "next"));
		if (next)
			snprintf(url, sizeof(url), "%s%s", base, strstr(next, "/api/"));
		t = thread_cpu_s();
		json_decref(j);
		*parse_s += thread_cpu_s() - t;
		if (!next)
			break;
	}
	fb_free(&b);
	curl_slist_free_all(hdr);
	curl_easy_cleanup(h);
}

/* ---- the check ---------------------------------------------------------- */

static bool check_file(size_t *eligible, size_t *revoked)
{
	char path[600];
	struct fleet_buf b;
	struct fleet_spire_nodes sn;
	struct fleet_errctx ec = {0};
	snprintf(path, sizeof(path), "%s/spire-nodes.json", dir);
	fb_init(&b);
	if (fleet_file_read_data(path, FLEET_SPIRE_NODES_MAX_BYTES, &b, &ec) != FLEET_OK) {
		fprintf(stderr, "bench_pass: no spire-nodes.json: %s\n", ec.detail);
		return false;
	}
	if (fleet_spire_nodes_decode(b.data, b.len, &sn, &ec) != FLEET_OK) {
		fprintf(stderr, "bench_pass: spire-nodes.json refused: %s\n", ec.detail);
		fb_free(&b);
		return false;
	}
	*eligible = sn.n_eligible;
	*revoked = sn.n_revoked;
	bool ok = sn.n_eligible == n_active && sn.n_revoked == n_dev - n_active;
	char name[24], ek[65];
	for (size_t i = 0; ok && i < n_dev; i++) {
		bool rev = i >= n_active;
		const struct fleet_spire_node *e = rev ? &sn.revoked[i - n_active] : &sn.eligible[i];
		snprintf(name, sizeof(name), "w%05zu", i);
		hex64(ek, 2 * i + 1);
		ok = strcmp(e->name, name) == 0 && strcmp(e->ek_hash, ek) == 0 &&
		     (e->ek_hash_ecc[0] != '\0') == (i % 10 == 0) && e->n_ldevid == 1;
		if (!ok)
			fprintf(stderr, "bench_pass: entry %zu of spire-nodes.json is wrong (%s)\n",
				i, e->name);
	}
	if (sn.n_eligible != n_active || sn.n_revoked != n_dev - n_active)
		fprintf(stderr, "bench_pass: %zu eligible (want %zu), %zu revoked (want %zu)\n",
			sn.n_eligible, n_active, sn.n_revoked, n_dev - n_active);
	fleet_spire_nodes_free(&sn);
	fb_free(&b);
	return ok;
}

int main(int argc, char **argv)
{
	unsigned page_size = 0; /* the daemon's default (netbox.page_size) */
	unsigned passes = 1;
	const char *keep = NULL;
	fleet_pass_malloc_setup(); /* as fleetd's main() does first */
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--fake") && i + 1 < argc)
			fake = argv[++i];
		else if (!strcmp(argv[i], "--devices") && i + 1 < argc)
			n_dev = strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--page-size") && i + 1 < argc)
			page_size = (unsigned)strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--passes") && i + 1 < argc)
			passes = (unsigned)strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--keep") && i + 1 < argc)
			keep = argv[++i];
		else if (!strcmp(argv[i], "--store") && i + 1 < argc &&
			 fleet_store_location_is_postgres(argv[i + 1]))
			pg_uri = argv[++i];
		else {
			fprintf(stderr, "usage: bench_pass --fake netbox_fake.py [--devices N] "
					"[--page-size N] [--passes N] [--keep DIR] "
					"[--store postgres://...]\n");
			return 2;
		}
	}
	if (!fake || n_dev < 100 || n_dev > 99999 || passes < 1 || passes > 10) {
		fprintf(stderr, "bench_pass: --fake is required; --devices is 100..99999, "
				"--passes 1..10\n");
		return 2;
	}
	if (system("command -v python3 >/dev/null 2>&1") != 0 ||
	    system("command -v openssl >/dev/null 2>&1") != 0) {
		printf("SKIP: bench_pass needs python3 and openssl\n");
		return 77;
	}
	n_active = n_dev * 98 / 100;
	n_listed = n_dev * 99 / 100;
	if (keep) {
		snprintf(dir, sizeof(dir), "%s", keep);
		if (mkdir(dir, 0700) != 0 && errno != EEXIST)
			die("mkdir %s", dir);
	} else {
		const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
		snprintf(dir, sizeof(dir), "%s/bench-pass.XXXXXX", tmp);
		if (!mkdtemp(dir))
			die("mkdtemp");
	}
	chmod(dir, 0700);
	const char *ecp = "-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes";
	sh("cd '%s' && openssl req -x509 %s -keyout ca.key -out ca.pem -days 2 -subj /CN=bench-ca"
	   " 2>/dev/null && openssl req %s -keyout srv.key -out srv.csr -subj /CN=netbox"
	   " 2>/dev/null && printf 'subjectAltName=IP:127.0.0.1\\n' > srv.ext"
	   " && openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial"
	   " -out srv.pem -days 2 -extfile srv.ext 2>/dev/null",
	   dir, ecp, ecp);
	char seed[600], base[64], ca[600], err[600];
	snprintf(seed, sizeof(seed), "%s/seed.json", dir);
	snprintf(ca, sizeof(ca), "%s/ca.pem", dir);
	write_seed(seed);
	seed_store();
	curl_global_init(CURL_GLOBAL_DEFAULT);
	start_fake(base, sizeof(base));

	/* As the daemon wires it (main.c): the inventory from the configuration,
	 * the pass over its own read-only store handle. */
	struct fleet_config c;
	fleet_config_defaults(&c);
	snprintf(c.state_dir, sizeof(c.state_dir), "%s", dir);
	snprintf(c.spire_trust_domain, sizeof(c.spire_trust_domain), TD);
	if (page_size)
		c.netbox_page_size = page_size;
	struct fleet_errctx ec = {0};
	struct fleet_netbox_config nc = {.base_url = base, .token = V1, .ca_file = ca,
					 .timeout_ms = 120000, .page_size = c.netbox_page_size};
	struct fleet_inventory *inv = fleet_netbox_open(&nc, &ec);
	if (!inv)
		die("netbox: %s", fleet_errctx_text(&ec, err, sizeof(err)));
	struct fleet_store *ro;
	if (pg_uri)
		snprintf(c.store, sizeof(c.store), "%s", pg_uri);
	if (fleet_store_open(pg_uri ? pg_uri : dir, FLEET_STORE_READONLY, &ro, &ec) !=
	    FLEET_STORE_OK)
		die("store: %s", fleet_errctx_text(&ec, err, sizeof(err)));
	struct fleet_pass_deps deps = {.config = &c, .inventory = inv, .store = ro};
	struct fleet_pass *pass;
	if (fleet_pass_new(&deps, &pass) != FLEET_OK)
		die("fleet_pass_new");
	/* the journal to a file: the pass's lines are not the benchmark's output */
	char jpath[600];
	snprintf(jpath, sizeof(jpath), "%s/journal.txt", dir);
	fflush(stderr);
	int saved = dup(2);
	if (!freopen(jpath, "w", stderr))
		die("cannot open %s", jpath);
	fleet_log_set_target(FLEET_LOG_STDERR);

	struct fleet_netbox_stats s0 = {0};
	for (unsigned k = 1; k < passes; k++) {
		if (strcmp(fleet_pass_run(pass, time(NULL)), "ok") != 0)
			die("pass %u of %u failed", k, passes);
		fleet_netbox_stats(inv, &s0);
	}
	double w0 = mono_s(), c0 = cpu_s(RUSAGE_SELF), pg0 = pg_uri ? postgres_cpu_s() : 0;
	const char *result = fleet_pass_run(pass, time(NULL));
	double cpu = cpu_s(RUSAGE_SELF) - c0, wall = mono_s() - w0;
	double pg_cpu = pg_uri ? postgres_cpu_s() - pg0 : 0;
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	double rss_mib = (double)ru.ru_maxrss / 1024.0;

	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	struct fleet_netbox_stats s;
	fleet_netbox_stats(inv, &s);
	s.requests -= s0.requests;
	s.connections -= s0.connections;
	s.bytes -= s0.bytes;
	s.fields_ignored -= s0.fields_ignored;
	size_t eligible = 0, revoked = 0;
	bool correct = strcmp(result, "ok") == 0 && check_file(&eligible, &revoked);

	double parse_s;
	unsigned long long peer_bytes;
	unsigned peer_pages;
	peer(base, c.netbox_page_size, &parse_s, &peer_bytes, &peer_pages);

	double per10k = cpu * 10000.0 / (double)n_dev;
	bool cpu_ok = per10k < TARGET_CPU_PER_10K, rss_ok = rss_mib < TARGET_RSS_MIB;
	printf("devices=%zu\n", n_dev);
	printf("store=%s\n", pg_uri ? "postgresql" : "sqlite");
	printf("inventory_devices=%zu\n", n_listed);
	printf("page_size=%u\n", c.netbox_page_size);
	printf("pass_measured=%u\n", passes);
	printf("pass_result=%s\n", result);
	printf("requests=%llu\n", s.requests);
	printf("connections=%llu\n", s.connections);
	printf("bytes_received=%llu\n", s.bytes);
	printf("fields_ignored=%llu\n", s.fields_ignored);
	printf("eligible=%zu\n", eligible);
	printf("revoked=%zu\n", revoked);
	printf("correct=%s\n", correct ? "yes" : "no");
	printf("cpu_s=%.3f\n", cpu);
	printf("cpu_s_per_10k=%.3f\n", per10k);
	printf("rss_max_mib=%.1f\n", rss_mib);
	printf("wall_s=%.2f\n", wall);
	if (pg_uri)
		printf("pg_server_cpu_s=%.3f\n", pg_cpu);
	printf("peer_bytes=%llu\n", peer_bytes);
	printf("peer_pages=%u\n", peer_pages);
	printf("jansson_parse_cpu_s=%.3f\n", parse_s);
	printf("ratio_cpu_vs_jansson_parse=%.2f\n", parse_s > 0 ? cpu / parse_s : 0.0);
	printf("target_cpu_per_10k=%.2f met=%s\n", TARGET_CPU_PER_10K, cpu_ok ? "yes" : "no");
	printf("target_rss_mib=%.0f met=%s\n", TARGET_RSS_MIB, rss_ok ? "yes" : "no");
	printf("targets_met=%s\n", cpu_ok && rss_ok ? "yes" : "no");

	fleet_pass_free(pass);
	fleet_store_close(ro);
	inv->ops->close(inv);
	stop_fake();
	curl_global_cleanup();
	if (!keep)
		sh("rm -rf '%s'", dir);
	return correct ? 0 : 1;
}
