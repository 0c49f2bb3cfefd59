/*
 * test_nodes_file.c: the nodes-file inventory. The schema reads as
 * documented; every malformed file is refused with the line to fix; the
 * file and its directories must be writable by root alone (checked on open
 * and on every reload); the file is the binding's author; fleetd never
 * writes the file; fleetd out of memory is said as that (NOMEM), not as the
 * inventory being unavailable.
 *
 * Linked with -Wl,--wrap=calloc,--wrap=realloc (tests/store.cmake): the
 * wrappers below can make the inventory's own allocations fail. Nothing in
 * the inventory knows.
 */
#include "tests/testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fleetd/inventory/nodes_file.h"

void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t size);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t size);

static bool fail_alloc;

void *__wrap_calloc(size_t n, size_t size)
{
	if (fail_alloc) {
		errno = ENOMEM;
		return NULL;
	}
	return __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t size)
{
	if (fail_alloc) {
		errno = ENOMEM;
		return NULL;
	}
	return __real_realloc(p, size);
}

#define HA "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define HB "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

#define NODE_W1                                                                               \
	"  - name: w1\n"                                                                      \
	"    serial: SER-1\n"                                                                 \
	"    status: planned\n"                                                               \
	"    class: worker\n"

#define FULL                                                                                  \
	"version: 1\n"                                                                        \
	"nodes:\n"                                                                            \
	"  - name: w1\n"                                                                      \
	"    serial: SER-1\n"                                                                 \
	"    status: planned\n"                                                               \
	"    primary_ip4: 10.0.0.11/24\n"                                                     \
	"    class: worker\n"                                                                 \
	"    install_disk: /dev/nvme0n1\n"                                                    \
	"    install_disk_serial: \"S4EWNX0 R123\"\n"                                         \
	"    bmc_type: ipmi\n"                                                                \
	"    tpm_version: \"2.0\"\n"                                                          \
	"    amt: false\n"                                                                    \
	"    secure_boot_expected: true\n"                                                    \
	"    expected_port: sw1/Ethernet12\n"                                                 \
	"    approved_ek_hash: " HA "\n"                                                      \
	"    approved_ek_hash_ecc: \"" HB "\"\n"                                              \
	"    desired_action: provision\n"                                                     \
	"  - name: cp1\n"                                                                     \
	"    serial: SER-2\n"                                                                 \
	"    status: active\n"                                                                \
	"    class: control-plane\n"

static fleet_err parse(const char *y, struct fleet_inv_device **d, size_t *n,
		       struct fleet_errctx *err)
{
	return fleet_nodes_file_parse((const uint8_t *)y, strlen(y), d, n, err);
}

static void refused_at(const char *y, unsigned line, const char *msg_part)
{
	struct fleet_inv_device *d = (struct fleet_inv_device *)1;
	size_t n;
	struct fleet_errctx err;
	fleet_err e = parse(y, &d, &n, &err);
	if (e == FLEET_OK || err.line != line || !strstr(err.detail, msg_part))
		fail_msg("want refusal at line %u containing '%s', got %s at %u: %s", line,
			 msg_part, fleet_err_str(e), err.line, err.detail);
	assert_null(d);
}

static void test_parse_full(void **state)
{
	(void)state;
	struct fleet_inv_device *d;
	size_t n;
	struct fleet_errctx err;
	if (parse(FULL, &d, &n, &err))
		fail_msg("line %u: %s", err.line, err.detail);
	assert_int_equal(n, 2);
	assert_string_equal(d[0].name, "w1");
	assert_string_equal(d[0].serial, "SER-1");
	assert_string_equal(d[0].status, "planned");
	assert_string_equal(d[0].primary_ip4, "10.0.0.11/24");
	assert_string_equal(d[0].class_name, "worker");
	assert_string_equal(d[0].install_disk, "/dev/nvme0n1");
	assert_string_equal(d[0].install_disk_serial, "S4EWNX0 R123");
	assert_string_equal(d[0].bmc_type, "ipmi");
	assert_string_equal(d[0].tpm_version, "2.0");
	assert_int_equal(d[0].amt, 0);
	assert_int_equal(d[0].secure_boot_expected, 1);
	assert_string_equal(d[0].expected_port, "sw1/Ethernet12");
	assert_string_equal(d[0].approved_ek_hash, HA);
	assert_string_equal(d[0].approved_ek_hash_ecc, HB);
	assert_string_equal(d[0].desired_action, "provision");
	assert_string_equal(d[0].ek_hash, "");
	/* Unset fields are empty or -1: never a default fleetd made up. */
	assert_int_equal(d[1].amt, -1);
	assert_int_equal(d[1].secure_boot_expected, -1);
	assert_string_equal(d[1].install_disk, "");
	/* Ids come from the serial, ignoring case, so an edit elsewhere in
	 * the file never moves them. */
	assert_int_equal(d[0].id, fleet_nodes_file_id("ser-1"));
	assert_true(d[0].id > 0 && d[1].id > 0 && d[0].id != d[1].id);
	free(d);
	assert_int_equal(parse("version: 1\nnodes: []\n", &d, &n, &err), FLEET_OK);
	assert_int_equal(n, 0);
	free(d);
}

static void test_parse_refusals(void **state)
{
	(void)state;
	refused_at("version: 1\nnodes:\n" NODE_W1 "    colour: blue\n", 7, "unknown key 'colour'");
	refused_at("version: 1\nnodes:\n" NODE_W1 "    class: other\n", 7, "duplicate key 'class'");
	refused_at("version: 1\nnodes:\n" NODE_W1 "    approved_ek_hash: " HA "0\n", 7,
		   "64 lowercase hex digits");
	refused_at("version: 1\nnodes:\n" NODE_W1
		   "    approved_ek_hash: AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n",
		   7, "64 lowercase hex digits");
	refused_at("version: 1\nnodes:\n" NODE_W1 "  - name: w2\n    serial: ser-1\n"
		   "    status: planned\n    class: worker\n",
		   8, "serial 'ser-1' is also node 1's");
	refused_at("version: 1\nnodes:\n" NODE_W1 "  - name: W1\n    serial: SER-2\n"
		   "    status: planned\n    class: worker\n",
		   7, "name 'W1' is also node 1's");
	refused_at("version: 1\nnodes:\n" NODE_W1 "    tpm_version: 2.0\n", 7, "must be quoted");
	refused_at("version: 1\nnodes:\n  - name: w1\n    serial: S\n    class: worker\n", 3,
		   "missing key 'status'");
	refused_at("version: 1\nnodes:\n  - name: w1\n    serial: S\n    status: gone\n"
		   "    class: worker\n",
		   5, "status must be one of");
	refused_at("version: 1\nnodes:\n" NODE_W1 "    primary_ip4: 10.0.0.300\n", 7, "IPv4");
	refused_at("version: 1\nnodes:\n" NODE_W1 "    desired_action: provison\n", 7,
		   "none or provision");
	refused_at("version: 1\nnodes:\n" NODE_W1 "    install_disk: sda\n", 7, "under /dev/");
	refused_at("version: 1\nnodes:\n" NODE_W1 "    amt: \"true\"\n", 7, "true or false");
	refused_at("version: 2\nnodes: []\n", 1, "version must be 1");
	refused_at("version: 1\n", 1, "missing key 'nodes'");
	refused_at("version: 1\nnodes: []\n---\nversion: 1\n", 3, "more");
	refused_at("version: 1\nnodes:\n  - &n\n    name: w1\n    serial: S\n    status: planned\n"
		   "    class: worker\n  - *n\n",
		   3, "aliases"); /* the list that holds the alias */
	refused_at("version: 1\nnodes:\n" NODE_W1 "    bmc_type: !vendor ipmi\n", 7, "tags");
	refused_at("version: 1\nnodes:\n" NODE_W1 "    expected_port: \"a\\tb\"\n", 7,
		   "printable ASCII");
	refused_at("version: 1\nnodes: [\n", 3, "bad YAML");
}

struct fx {
	char *dir;
	char path[512];
};

static void put(const char *path, const char *text, mode_t mode)
{
	char tmp[600];
	snprintf(tmp, sizeof(tmp), "%s.new", path);
	FILE *fp = fopen(tmp, "w");
	assert_non_null(fp);
	fputs(text, fp);
	fclose(fp);
	assert_int_equal(chmod(tmp, mode), 0);
	assert_int_equal(rename(tmp, path), 0);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	char *base = make_temp_dir("nodes");
	f->dir = base;
	snprintf(f->path, sizeof(f->path), "%s/nodes.yaml", base);
	chmod(base, 0755);
	put(f->path, FULL, 0644);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	rm_rf(f->dir);
	free(f->dir);
	free(f);
	return 0;
}

static fleet_err try_open(struct fx *f, struct fleet_inventory **inv, struct fleet_errctx *ec)
{
	return fleet_nodes_file_open(f->path, inv, ec);
}

static void test_root_only_rule(void **state)
{
	struct fx *f = *state;
	struct fleet_inventory *inv;
	struct fleet_errctx ec;
	assert_int_equal(try_open(f, &inv, &ec), FLEET_OK);
	inv->ops->close(inv);
	static const mode_t bad_modes[] = {0664, 0646, 0666};
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(chmod(f->path, bad_modes[i]), 0);
		assert_int_equal(try_open(f, &inv, &ec), FLEET_E_UNSAFE);
		assert_non_null(strstr(ec.detail, "writable by group or others"));
		assert_null(inv);
	}
	assert_int_equal(chmod(f->path, 0644), 0);
	assert_int_equal(chown(f->path, 65534, 0), 0);
	assert_int_equal(try_open(f, &inv, &ec), FLEET_E_UNSAFE);
	assert_non_null(strstr(ec.detail, "not owned by root"));
	assert_int_equal(chown(f->path, 0, 0), 0);
	/* The directory: whoever can write it can replace the file. */
	assert_int_equal(chmod(f->dir, 0775), 0);
	assert_int_equal(try_open(f, &inv, &ec), FLEET_E_UNSAFE);
	assert_non_null(strstr(ec.detail, "directory is writable by group or others"));
	assert_int_equal(chmod(f->dir, 01777), 0); /* sticky is no excuse here */
	assert_int_equal(try_open(f, &inv, &ec), FLEET_E_UNSAFE);
	assert_int_equal(chmod(f->dir, 0755), 0);
	assert_int_equal(chown(f->dir, 65534, 0), 0);
	assert_int_equal(try_open(f, &inv, &ec), FLEET_E_UNSAFE);
	assert_non_null(strstr(ec.detail, "directory is not owned by root"));
	assert_int_equal(chown(f->dir, 0, 0), 0);
	/* A symbolic link is not followed. */
	char target[600];
	snprintf(target, sizeof(target), "%s/real.yaml", f->dir);
	assert_int_equal(rename(f->path, target), 0);
	assert_int_equal(symlink(target, f->path), 0);
	assert_int_equal(try_open(f, &inv, &ec), FLEET_E_UNSAFE);
	assert_non_null(strstr(ec.detail, "symbolic link"));
	unlink(f->path);
	assert_int_equal(try_open(f, &inv, &ec), FLEET_E_NOT_FOUND);
	char text[sizeof(ec.detail) + 80];
	assert_non_null(
		strstr(fleet_errctx_text(&ec, text, sizeof(text)), "No such file or directory"));
	put(f->path, "version: 1\nnodes: [\n", 0644);
	assert_int_equal(try_open(f, &inv, &ec), FLEET_E_MALFORMED);
	assert_non_null(strstr(ec.detail, "line 3"));
}

static void test_ancestor_rule(void **state)
{
	struct fx *f = *state;
	/* dir/sub/nodes.yaml with dir group-writable (not sticky): refused. */
	char sub[600], p[700];
	snprintf(sub, sizeof(sub), "%s/sub", f->dir);
	assert_int_equal(mkdir(sub, 0755), 0);
	snprintf(p, sizeof(p), "%s/nodes.yaml", sub);
	put(p, FULL, 0644);
	struct fleet_inventory *inv;
	struct fleet_errctx ec;
	assert_int_equal(fleet_nodes_file_open(p, &inv, &ec), FLEET_OK);
	inv->ops->close(inv);
	assert_int_equal(chmod(f->dir, 0777), 0);
	assert_int_equal(fleet_nodes_file_open(p, &inv, &ec), FLEET_E_UNSAFE);
	assert_non_null(strstr(ec.detail, "ancestor directory"));
	assert_int_equal(chmod(f->dir, 01777), 0); /* as /tmp is: allowed above */
	assert_int_equal(fleet_nodes_file_open(p, &inv, &ec), FLEET_OK);
	inv->ops->close(inv);
	chmod(f->dir, 0755);
}

static void test_lookups_and_binding_author(void **state)
{
	struct fx *f = *state;
	struct timespec ts[2] = {{.tv_sec = 1700000000}, {.tv_sec = 1700000000}};
	assert_int_equal(utimensat(AT_FDCWD, f->path, ts, 0), 0);
	struct fleet_inventory *inv;
	struct fleet_errctx ec;
	assert_int_equal(try_open(f, &inv, &ec), FLEET_OK);
	struct fleet_inv_device d;
	assert_int_equal(inv->ops->find_by_serial(inv, "ser-1", &d, &ec), FLEET_INV_OK);
	assert_string_equal(d.name, "w1");
	long id = d.id;
	assert_int_equal(inv->ops->find_by_serial(inv, "SER-9", &d, &ec), FLEET_INV_NOT_FOUND);
	assert_int_equal(inv->ops->get(inv, id, &d, &ec), FLEET_INV_OK);
	assert_string_equal(d.serial, "SER-1");
	assert_int_equal(inv->ops->get(inv, 12345, &d, &ec), FLEET_INV_NOT_FOUND);
	struct fleet_inv_binding_change bc;
	assert_int_equal(inv->ops->binding_change(inv, id, &bc, &ec), FLEET_INV_OK);
	assert_true(bc.found);
	assert_string_equal(bc.user, FLEET_NODES_FILE_AUTHOR);
	assert_string_equal(bc.user, "nodes-file");
	assert_int_equal(bc.when, 1700000000);
	assert_int_equal(inv->ops->find_by_serial(inv, "SER-2", &d, &ec), 0);
	assert_int_equal(inv->ops->binding_change(inv, d.id, &bc, &ec), 0);
	assert_false(bc.found); /* cp1 declares no binding */
	struct fleet_inv_device *all;
	struct fleet_inv_malformed *bad;
	size_t n, n_bad;
	assert_int_equal(inv->ops->list(inv, &all, &n, &bad, &n_bad, &ec), FLEET_INV_OK);
	assert_int_equal(n, 2);
	assert_int_equal(n_bad, 0); /* the file is checked whole on load */
	assert_null(bad);
	free(all);
	inv->ops->close(inv);
}

/* The file unchanged, so nothing is read again: the listing's copy and the
 * in-memory overlay are the only allocations, and each failing is NOMEM,
 * "out of memory", never UNAVAILABLE. With memory again, all is as before. */
static void test_out_of_memory_is_nomem(void **state)
{
	struct fx *f = *state;
	struct fleet_inventory *inv;
	struct fleet_errctx ec;
	struct fleet_inv_device d, *all = NULL;
	struct fleet_inv_malformed *bad = NULL;
	size_t n = 0, n_bad = 0;
	assert_int_equal(try_open(f, &inv, &ec), FLEET_OK);
	assert_int_equal(inv->ops->find_by_serial(inv, "SER-1", &d, &ec), FLEET_INV_OK);
	fail_alloc = true;
	fleet_err listed = inv->ops->list(inv, &all, &n, &bad, &n_bad, &ec);
	fleet_err wrote = inv->ops->write_ek_hashes(inv, d.id, HB, "", &ec);
	fleet_err status = inv->ops->set_status(inv, d.id, "active", &ec);
	fail_alloc = false;
	assert_int_equal(listed, FLEET_INV_NOMEM);
	assert_null(all);
	assert_int_equal(wrote, FLEET_INV_NOMEM);
	assert_int_equal(status, FLEET_INV_NOMEM);
	assert_string_equal(ec.detail, "out of memory");
	assert_int_equal(inv->ops->list(inv, &all, &n, &bad, &n_bad, &ec), FLEET_INV_OK);
	assert_int_equal(n, 2);
	free(all);
	assert_int_equal(inv->ops->write_ek_hashes(inv, d.id, HB, "", &ec), FLEET_INV_OK);
	inv->ops->close(inv);
}

static void test_fleetd_never_writes_the_file(void **state)
{
	struct fx *f = *state;
	struct fleet_inventory *inv;
	struct fleet_errctx ec;
	assert_int_equal(try_open(f, &inv, &ec), FLEET_OK);
	struct fleet_inv_device d;
	assert_int_equal(inv->ops->find_by_serial(inv, "SER-1", &d, &ec), 0);
	struct stat before, after;
	assert_int_equal(stat(f->path, &before), 0);
	assert_int_equal(inv->ops->write_ek_hashes(inv, d.id, HB, "", &ec), FLEET_INV_OK);
	assert_int_equal(inv->ops->write_ek_hashes(inv, d.id, "XYZ", "", &ec), FLEET_INV_INVALID);
	assert_int_equal(inv->ops->set_status(inv, d.id, "active", &ec), FLEET_INV_OK);
	assert_int_equal(inv->ops->set_status(inv, d.id, "gone", &ec), FLEET_INV_INVALID);
	assert_int_equal(inv->ops->set_status(inv, 4242, "active", &ec), FLEET_INV_NOT_FOUND);
	struct fleet_buf b;
	fb_init(&b);
	read_file_or_fail(f->path, &b);
	assert_int_equal(b.len, strlen(FULL));
	assert_memory_equal(b.data, FULL, b.len);
	fb_free(&b);
	assert_int_equal(stat(f->path, &after), 0);
	assert_int_equal(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);
	/* This process remembers what it was told... */
	assert_int_equal(inv->ops->get(inv, d.id, &d, &ec), 0);
	assert_string_equal(d.status, "active");
	assert_string_equal(d.ek_hash, HB);
	assert_string_equal(d.approved_ek_hash, HA); /* the binding is untouched */
	/* ...until the operator changes that node's status in the file. */
	const char *edited = "version: 1\nnodes:\n  - name: w1\n    serial: SER-1\n"
			     "    status: staged\n    class: worker\n";
	put(f->path, edited, 0644);
	assert_int_equal(inv->ops->get(inv, d.id, &d, &ec), 0);
	assert_string_equal(d.status, "staged");
	inv->ops->close(inv);
}

static void test_reload_rechecks(void **state)
{
	struct fx *f = *state;
	struct fleet_inventory *inv;
	struct fleet_errctx ec;
	assert_int_equal(try_open(f, &inv, &ec), FLEET_OK);
	struct fleet_inv_device d;
	/* An edit is seen without a restart. */
	put(f->path, "version: 1\nnodes:\n  - name: w7\n    serial: SER-7\n    status: planned\n"
		     "    class: worker\n", 0644);
	assert_int_equal(inv->ops->find_by_serial(inv, "SER-7", &d, &ec), 0);
	assert_int_equal(inv->ops->find_by_serial(inv, "SER-1", &d, &ec), FLEET_INV_NOT_FOUND);
	/* A file opened to others since: no answer, not even the old one. */
	assert_int_equal(chmod(f->path, 0666), 0);
	assert_int_equal(inv->ops->find_by_serial(inv, "SER-7", &d, &ec), FLEET_INV_UNAVAILABLE);
	assert_non_null(strstr(ec.detail, "writable by group or others"));
	assert_int_equal(chmod(f->path, 0644), 0);
	assert_int_equal(inv->ops->find_by_serial(inv, "SER-7", &d, &ec), 0);
	/* A broken edit: INVALID with the line, not the last good copy. */
	put(f->path, "version: 1\nnodes:\n  - name: w7\n    serial: SER-7\n    status: planned\n"
		     "    class: worker\n    typo: 1\n", 0644);
	assert_int_equal(inv->ops->find_by_serial(inv, "SER-7", &d, &ec), FLEET_INV_INVALID);
	assert_non_null(strstr(ec.detail, "line 7"));
	inv->ops->close(inv);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_full),
		cmocka_unit_test(test_parse_refusals),
		T(test_root_only_rule),
		T(test_ancestor_rule),
		T(test_lookups_and_binding_author),
		T(test_fleetd_never_writes_the_file),
		T(test_out_of_memory_is_nomem),
		T(test_reload_rechecks),
	};
	if (geteuid() != 0) {
		/* The ownership rules need chown; the parse tests alone. */
		printf("SKIP: the ownership tests need root\n");
		return TEST_SKIP_EXIT;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
