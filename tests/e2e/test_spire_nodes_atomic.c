/*
 * test_spire_nodes_atomic.c: a reader never sees part of spire-nodes.json.
 *
 * A writer process rewrites the file in a loop with two alternating
 * contents (large, so a write takes a while); a reader process reads it in a
 * loop and requires every read to be one whole version (parses, content is
 * exactly A or B, serial never goes back). The writer is killed with
 * SIGKILL and restarted, in turn at a random moment and as soon as its temp
 * file appears (so some kills surely land inside a write); after each kill the file on disk
 * must be one whole version and at most one temp file per name may exist;
 * the next write removes them.
 *
 * SPNODES_SEED=<n> repeats a run; the seed is printed either way.
 */
#include "tests/testutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "fleetd/spire/spire_nodes.h"

#define NOW ((time_t)1796014800)
#define N_NODES 2500
#define KILLS 100

static struct fleet_spire_doc doc_a, doc_b;
static json_t *body_a, *body_b;
static char dir[512], file[600];

static void make_doc(struct fleet_spire_doc *d, int salt)
{
	memset(d, 0, sizeof(*d));
	snprintf(d->trust_domain, sizeof(d->trust_domain), "fleet.example");
	d->n_eligible = N_NODES - (size_t)salt;
	d->eligible = calloc(d->n_eligible, sizeof(*d->eligible));
	for (size_t i = 0; i < d->n_eligible; i++) {
		struct fleet_spire_node *n = &d->eligible[i];
		snprintf(n->name, sizeof(n->name), "node-%05zu", i);
		snprintf(n->ek_hash, sizeof(n->ek_hash), "%064zx", 2 * i);
		snprintf(n->ek_hash_ecc, sizeof(n->ek_hash_ecc), "%064zx", 2 * i + 1);
		n->n_ldevid = 3;
		n->ldevid_sha1 = calloc(3, sizeof(*n->ldevid_sha1));
		for (int k = 0; k < 3; k++)
			snprintf(n->ldevid_sha1[k], 41, "%039zx%d", i, k + salt);
	}
}

/* The content of a file's bytes (serial and generated_at taken out), and
 * its serial; NULL when the bytes are not one whole JSON object. */
static json_t *content_of(const char *buf, size_t len, json_int_t *serial)
{
	json_t *o = json_loadb(buf, len, JSON_REJECT_DUPLICATES, NULL);
	if (!json_is_object(o) || !json_is_integer(json_object_get(o, "serial")) ||
	    !json_is_string(json_object_get(o, "generated_at"))) {
		json_decref(o);
		return NULL;
	}
	*serial = json_integer_value(json_object_get(o, "serial"));
	json_object_del(o, "serial");
	json_object_del(o, "generated_at");
	return o;
}

static char *read_all(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	size_t cap = 1 << 20, n = 0;
	char *b = malloc(cap);
	for (;;) {
		if (n == cap)
			b = realloc(b, cap *= 2);
		ssize_t k = read(fd, b + n, cap - n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		n += (size_t)k;
	}
	close(fd);
	*len = n;
	return b;
}

/* "" when the file on disk is one whole version, no older than *last. */
static const char *check_file(json_int_t *last)
{
	size_t len;
	char *b = read_all(file, &len);
	if (!b)
		return "the file is missing";
	json_int_t serial = 0;
	json_t *c = content_of(b, len, &serial);
	free(b);
	const char *why = "";
	if (!c)
		why = "a read saw a partial or malformed file";
	else if (!json_equal(c, body_a) && !json_equal(c, body_b))
		why = "a read saw content that is neither version";
	else if (serial < *last)
		why = "the serial went back";
	else
		*last = serial;
	json_decref(c);
	return why;
}

static volatile sig_atomic_t stop;
static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static void run_reader(void)
{
	signal(SIGTERM, on_term);
	json_int_t last = 0;
	long reads = 0;
	while (!stop) {
		const char *why = check_file(&last);
		if (*why) {
			fprintf(stderr, "reader: %s (after %ld reads)\n", why, reads);
			_exit(1);
		}
		reads++;
	}
	printf("reader: %ld whole reads, last serial %lld\n", reads, (long long)last);
	fflush(stdout);
	_exit(reads > 0 ? 0 : 2);
}

static void run_writer(void)
{
	struct fleet_errctx ec;
	for (long i = 0;; i++) {
		bool changed;
		if (fleet_spire_nodes_write(dir, i % 2 ? &doc_a : &doc_b, NOW + i, &changed, NULL,
					    &ec) != FLEET_SPIRE_OK) {
			fprintf(stderr, "writer: %s\n", ec.detail);
			_exit(1);
		}
	}
}

/* Temp files in dir, failing on any name that is not ours. */
static int count_temps(void)
{
	DIR *d = opendir(dir);
	assert_non_null(d);
	int temps = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		const char *n = e->d_name;
		if (!strcmp(n, ".") || !strcmp(n, "..") || !strcmp(n, FLEET_SPIRE_NODES_FILE) ||
		    !strcmp(n, FLEET_SPIRE_SERIAL_FILE))
			continue;
		if (strcmp(n, ".spire-nodes.json.tmp") && strcmp(n, ".spire-nodes.serial.tmp"))
			fail_msg("an unexpected file in the directory: %s", n);
		temps++;
	}
	closedir(d);
	return temps;
}

static void test_kill_mid_write(void **state)
{
	(void)state;
	const char *env = getenv("SPNODES_SEED");
	unsigned seed = env ? (unsigned)strtoul(env, NULL, 10) : (unsigned)time(NULL);
	printf("SPNODES_SEED=%u\n", seed);
	srand(seed);
	char *base = make_temp_dir("spnodes-atomic");
	assert_non_null(base);
	snprintf(dir, sizeof(dir), "%s", base);
	snprintf(file, sizeof(file), "%s/%s", dir, FLEET_SPIRE_NODES_FILE);
	make_doc(&doc_a, 0);
	make_doc(&doc_b, 1);
	struct fleet_errctx ec;
	bool changed;
	assert_int_equal(fleet_spire_nodes_write(dir, &doc_b, NOW, &changed, NULL, &ec),
			 FLEET_SPIRE_OK);
	json_int_t serial0;
	size_t len;
	char *b = read_all(file, &len);
	body_b = content_of(b, len, &serial0);
	free(b);
	assert_non_null(body_b);
	assert_int_equal(fleet_spire_nodes_write(dir, &doc_a, NOW, &changed, NULL, &ec),
			 FLEET_SPIRE_OK);
	b = read_all(file, &len);
	body_a = content_of(b, len, &serial0);
	free(b);
	assert_non_null(body_a);
	assert_false(json_equal(body_a, body_b));

	fflush(stdout);
	pid_t reader = fork();
	assert_true(reader >= 0);
	if (reader == 0)
		run_reader();

	json_int_t last = 0;
	int killed_mid = 0;
	char tmp[600];
	snprintf(tmp, sizeof(tmp), "%s/.spire-nodes.json.tmp", dir);
	for (int k = 0; k < KILLS; k++) {
		pid_t w = fork();
		assert_true(w >= 0);
		if (w == 0)
			run_writer();
		if (k % 2 == 0) {
			usleep((useconds_t)(1000 + rand() % 20000));
		} else {
			/* Aim: kill as soon as the temp file appears (a write is
			 * under way), within a bounded wait. */
			struct timespec t0, t;
			clock_gettime(CLOCK_MONOTONIC, &t0);
			do
				clock_gettime(CLOCK_MONOTONIC, &t);
			while (access(tmp, F_OK) != 0 && t.tv_sec - t0.tv_sec < 2);
		}
		assert_int_equal(kill(w, SIGKILL), 0);
		int status;
		assert_int_equal(waitpid(w, &status, 0), w);
		if (!WIFSIGNALED(status))
			fail_msg("the writer stopped by itself (status %d)", status);
		const char *why = check_file(&last);
		if (*why)
			fail_msg("after kill %d: %s", k, why);
		int temps = count_temps();
		assert_true(temps <= 2); /* one per file at most */
		killed_mid += temps > 0;
	}
	printf("%d of %d kills left a temp file behind (killed mid-write)\n", killed_mid, KILLS);

	/* The next write cleans up whatever the last kill left. */
	assert_int_equal(fleet_spire_nodes_write(dir, &doc_b, NOW, &changed, NULL, &ec),
			 FLEET_SPIRE_OK);
	assert_int_equal(count_temps(), 0);
	const char *why = check_file(&last);
	if (*why)
		fail_msg("after the last write: %s", why);

	kill(reader, SIGTERM);
	int status;
	assert_int_equal(waitpid(reader, &status, 0), reader);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	/* Some kill must have landed inside a write, or this tested nothing. */
	assert_true(killed_mid > 0);

	json_decref(body_a);
	json_decref(body_b);
	fleet_spire_doc_free(&doc_a);
	fleet_spire_doc_free(&doc_b);
	rm_rf(base);
	free(base);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_kill_mid_write)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
