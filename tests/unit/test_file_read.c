/*
 * test_file_read.c: the one reader of trusted files (lib/file_read.h).
 *
 * The file checked is the file read: a path swapped after the check still
 * reads the checked bytes (the API opens once; fleet_file_open is the check,
 * fleet_file_read_open the read, and nothing in between looks the name up
 * again). A symbolic link, a FIFO, a directory, a file others may read (a
 * secret) or write (configuration), one another user owns, one over the cap
 * and one that grows past it while read are each refused with a stable
 * reason and a sentence naming the path, in the one error context: a rule's
 * refusal is FLEET_E_UNSAFE, a missing file FLEET_E_NOT_FOUND, one over the
 * cap FLEET_E_TOO_LARGE, a failed open FLEET_E_IO with its errno.
 */
#include "tests/testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/file_read.h"

static int setup(void **state)
{
	*state = temp_file_new("file-read", "file");
	return 0;
}

static int teardown(void **state)
{
	temp_file_free(*state);
	return 0;
}

static void put(const char *path, const char *text, mode_t mode)
{
	unlink(path);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

static const struct fleet_file_policy secret = FLEET_FILE_POLICY_SECRET("the key", 4096);
static const struct fleet_file_policy shared = FLEET_FILE_POLICY_SECRET_SHARED("the key", 4096);
static const struct fleet_file_policy config = FLEET_FILE_POLICY_CONFIG("the config", 4096);
static const struct fleet_file_policy data = FLEET_FILE_POLICY_DATA("the log", 4096);

/* Read path under policy: the result, and fe's reason (or "ok"). */
static fleet_err try_read(const char *path, const struct fleet_file_policy *p,
			  struct fleet_errctx *fe)
{
	struct fleet_buf b;
	fb_init(&b);
	fleet_err e = fleet_file_read(AT_FDCWD, path, p, &b, fe);
	if (e == FLEET_OK) {
		assert_null(fe->reason);
		fe->reason = "ok";
	} else {
		assert_null(b.data); /* nothing is left behind on a refusal */
		assert_non_null(strstr(fe->detail, path));
		assert_non_null(strstr(fe->detail, fe->reason));
	}
	fb_free(&b);
	return e;
}

/* Refused with this code and reason (FLEET_E_UNSAFE: by a rule). */
static void refused(const char *path, const struct fleet_file_policy *p, const char *reason,
		    fleet_err want, const char *says)
{
	struct fleet_errctx fe;
	fleet_err e = try_read(path, p, &fe);
	if (e == FLEET_OK || strcmp(fe.reason, reason) != 0 || e != want || fe.err != want ||
	    (says && !strstr(fe.detail, says)))
		fail_msg("%s: want %s (%s), got %s: %s", path, reason, says ? says : "",
			 fleet_err_str(e), e ? fe.detail : "read");
}

static void accepted(const char *path, const struct fleet_file_policy *p)
{
	struct fleet_errctx fe;
	if (try_read(path, p, &fe) != FLEET_OK)
		fail_msg("%s: refused: %s", path, fe.detail);
}

static void test_reads_the_bytes(void **state)
{
	struct temp_file *f = *state;
	put(f->path, "hello\n", 0600);
	struct fleet_buf b;
	struct fleet_errctx fe;
	fb_init(&b);
	assert_int_equal(fleet_file_read(AT_FDCWD, f->path, &secret, &b, &fe), FLEET_OK);
	assert_int_equal(b.len, 6);
	assert_memory_equal(b.data, "hello\n", 6);
	assert_true(b.secret); /* a secret lands in a secret buffer */
	assert_int_equal(b.max, 4097); /* capped, with room for a NUL */
	assert_int_equal(fb_put_u8(&b, 0), FLEET_OK);
	fb_free(&b);
	assert_int_equal(fleet_file_read(AT_FDCWD, f->path, &config, &b, &fe), FLEET_OK);
	assert_false(b.secret);
	fb_free(&b);
	/* Relative to a directory descriptor. */
	int dfd = open(f->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_int_equal(fleet_file_read(dfd, "file", &config, &b, &fe), FLEET_OK);
	assert_int_equal(b.len, 6);
	fb_free(&b);
	close(dfd);
	/* An empty file is read as empty. */
	put(f->path, "", 0600);
	accepted(f->path, &secret);
	/* The buffer must be empty: nothing is appended to or leaked. */
	put(f->path, "x", 0600);
	fb_init(&b);
	fb_put(&b, "y", 1);
	assert_int_equal(fleet_file_read(AT_FDCWD, f->path, &config, &b, &fe), FLEET_E_INVALID_ARG);
	assert_string_equal(fe.reason, "invalid");
	fb_free(&b);
}

static void test_missing(void **state)
{
	struct temp_file *f = *state;
	struct fleet_errctx fe;
	char text[sizeof(fe.detail) + 80];
	assert_int_equal(try_read(f->path, &config, &fe), FLEET_E_NOT_FOUND);
	assert_string_equal(fe.reason, "not-found");
	assert_int_equal(fe.sys_errno, ENOENT);
	/* The system's reason follows the sentence, as it always did. */
	assert_non_null(strstr(fleet_errctx_text(&fe, text, sizeof(text)),
			       "cannot open it: No such file or directory"));
	/* One that cannot be opened (not as root, who opens anything). */
	if (geteuid() != 0) {
		put(f->path, "x", 0000);
		assert_int_equal(try_read(f->path, &data, &fe), FLEET_E_IO);
		assert_string_equal(fe.reason, "open-failed");
		assert_int_equal(fe.sys_errno, EACCES);
	}
}

/* A symlinked key is refused, even to a file that would pass. */
static void test_symlink_refused(void **state)
{
	struct temp_file *f = *state;
	char target[700];
	snprintf(target, sizeof(target), "%s/real", f->dir);
	put(target, "key\n", 0600);
	accepted(target, &secret);
	assert_int_equal(symlink(target, f->path), 0);
	refused(f->path, &secret, "symlink", FLEET_E_UNSAFE, "symbolic link");
	refused(f->path, &data, "symlink", FLEET_E_UNSAFE, NULL); /* whatever the policy */
	/* A link in a directory above is not the file's business. */
	char sub[700], via[800];
	snprintf(sub, sizeof(sub), "%s/sub", f->dir);
	assert_int_equal(mkdir(sub, 0700), 0);
	snprintf(via, sizeof(via), "%s/link", f->dir);
	assert_int_equal(symlink(sub, via), 0);
	snprintf(target, sizeof(target), "%s/sub/k", f->dir);
	put(target, "k", 0600);
	snprintf(target, sizeof(target), "%s/link/k", f->dir);
	accepted(target, &secret);
}

/* The errno a refusal is said as, where a caller speaks errno (the SPIRE
 * writer's previous file, tink-attest's sysfs reads). */
static void test_errno_of_refusals(void **state)
{
	struct temp_file *f = *state;
	struct fleet_errctx ec;
	struct fleet_buf b;
	char target[700];
	snprintf(target, sizeof(target), "%s/real", f->dir);
	put(target, "0123456789", 0600);
	const struct fleet_file_policy small = {.what = "t", .max_size = 4};
	fb_init(&b);
	fleet_err e = fleet_file_read(AT_FDCWD, target, &small, &b, &ec);
	assert_int_equal(fleet_file_errno(e, &ec, EIO), EFBIG);
	assert_int_equal(symlink(target, f->path), 0);
	e = fleet_file_read(AT_FDCWD, f->path, &data, &b, &ec);
	assert_int_equal(fleet_file_errno(e, &ec, EIO), ELOOP);
	e = fleet_file_read(AT_FDCWD, f->dir, &data, &b, &ec);
	assert_int_equal(fleet_file_errno(e, &ec, EIO), EINVAL);
	char missing[800];
	snprintf(missing, sizeof(missing), "%s/nothing/here", f->dir);
	e = fleet_file_read(AT_FDCWD, missing, &data, &b, &ec);
	assert_int_equal(fleet_file_errno(e, &ec, EIO), ENOENT);
	memset(&ec, 0, sizeof(ec));
	assert_int_equal(fleet_file_errno(FLEET_E_NOMEM, &ec, ENOMEM), ENOMEM);
	fb_free(&b);
}

/* A world- or group-readable key is refused; the shared policy lets the
 * group read, never write; configuration may be read by all, written by
 * nobody else; data has no mode rule. */
static void test_mode_rules(void **state)
{
	struct temp_file *f = *state;
	static const struct {
		const struct fleet_file_policy *policy;
		mode_t mode;
		const char *reason; /* NULL: accepted */
		const char *says;
	} cases[] = {
		{&secret, 0644, "world-readable", "mode 0600 or stricter"},
		{&secret, 0640, "group-readable", "group or others"},
		{&secret, 0601, "world-readable", NULL},
		{&secret, 0400, NULL, NULL},
		{&secret, 0600, NULL, NULL},
		{&shared, 0640, NULL, NULL},
		{&shared, 0660, "group-writable", "writable by group or others"},
		{&shared, 0644, "world-readable", "mode 0640 or stricter"},
		{&config, 0644, NULL, NULL},
		{&config, 0664, "group-writable", "writable by group or others"},
		{&config, 0646, "world-writable", "mode 0646"},
		{&data, 0666, NULL, NULL},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		put(f->path, "key\n", cases[i].mode);
		if (cases[i].reason)
			refused(f->path, cases[i].policy, cases[i].reason, FLEET_E_UNSAFE,
				cases[i].says);
		else
			accepted(f->path, cases[i].policy);
	}
}

static void test_owner_rule(void **state)
{
	struct temp_file *f = *state;
	if (geteuid() != 0)
		skip(); /* chown needs root */
	put(f->path, "a: b\n", 0644);
	assert_int_equal(chown(f->path, 65534, 65534), 0);
	refused(f->path, &config, "owner", FLEET_E_UNSAFE, "not owned by root");
	refused(f->path, &secret, "owner", FLEET_E_UNSAFE, "its owner is uid 65534");
	accepted(f->path, &data); /* data: anyone's */
	const struct fleet_file_policy nobody = {
		.what = "x", .max_size = 10, .owners = FLEET_FILE_OWNER_EUID};
	refused(f->path, &nobody, "owner", FLEET_E_UNSAFE, NULL);
	assert_int_equal(chown(f->path, 0, 0), 0);
	accepted(f->path, &config);
}

/* A FIFO does not hang the reader (O_NONBLOCK) and is refused; so is a
 * directory. */
static void test_not_regular(void **state)
{
	struct temp_file *f = *state;
	assert_int_equal(mkfifo(f->path, 0600), 0);
	refused(f->path, &secret, "not-regular", FLEET_E_UNSAFE, "not a regular file");
	unlink(f->path);
	assert_int_equal(mkdir(f->path, 0700), 0);
	refused(f->path, &data, "not-regular", FLEET_E_UNSAFE, NULL);
	rmdir(f->path);
	refused("/dev/null", &data, "not-regular", FLEET_E_UNSAFE, NULL);
}

static void test_size_cap(void **state)
{
	struct temp_file *f = *state;
	const struct fleet_file_policy small = FLEET_FILE_POLICY_CONFIG("the config", 8);
	put(f->path, "12345678", 0644);
	accepted(f->path, &small);
	put(f->path, "123456789", 0644);
	refused(f->path, &small, "too-large", FLEET_E_TOO_LARGE, "more than the 8 allowed");
	struct fleet_errctx fe;
	assert_int_equal(try_read(f->path, &small, &fe), FLEET_E_TOO_LARGE);
	/* /proc says 0 bytes and holds more: the read, not fstat, finds it out. */
	const struct fleet_file_policy proc = FLEET_FILE_POLICY_DATA("status", 16);
	assert_int_equal(try_read("/proc/self/status", &proc, &fe), FLEET_E_TOO_LARGE);
	assert_string_equal(fe.reason, "too-large");
	assert_non_null(strstr(fe.detail, "grew past the 16 bytes"));
	const struct fleet_file_policy proc_ok = FLEET_FILE_POLICY_DATA("status", 1u << 20);
	accepted("/proc/self/status", &proc_ok);
	/* size_by_read: an fstat size over the cap (sysfs's page size) is not
	 * held against the file, what is read is. */
	const struct fleet_file_policy by_read = {
		.what = "sysfs", .max_size = 8, .size_by_read = true};
	put(f->path, "1234567", 0644);
	assert_int_equal(truncate(f->path, 4096), 0); /* says 4096, holds 4096 */
	assert_int_equal(try_read(f->path, &by_read, &fe), FLEET_E_TOO_LARGE);
	assert_non_null(strstr(fe.detail, "grew past"));
}

/*
 * The check-then-read race. A token file is opened and checked; then
 * another file (the attacker's, world-readable) is renamed over its path;
 * then the descriptor is read: the bytes are the checked file's. Opening
 * the path again (what the daemon did before, by fb_read_file) gets the
 * attacker's bytes: the swap did happen.
 */
static void test_swap_after_check_reads_checked_bytes(void **state)
{
	struct temp_file *f = *state;
	char evil[700];
	snprintf(evil, sizeof(evil), "%s/evil", f->dir);
	put(f->path, "good-token\n", 0600);
	put(evil, "evil-token\n", 0644);
	struct fleet_file file;
	struct fleet_errctx fe;
	assert_int_equal(fleet_file_open(AT_FDCWD, f->path, &secret, &file, &fe), FLEET_OK);
	assert_true(file.fd >= 0);
	assert_int_equal(file.st.st_mode & 07777, 0600);
	assert_int_equal(rename(evil, f->path), 0); /* the swap */
	struct fleet_buf b;
	fb_init(&b);
	assert_int_equal(fleet_file_read_open(&file, &b, &fe), FLEET_OK);
	fleet_file_close(&file);
	assert_int_equal(file.fd, -1);
	assert_int_equal(b.len, 11);
	assert_memory_equal(b.data, "good-token\n", 11);
	fb_free(&b);
	/* By path, the swapped file is what is there now, and it is refused. */
	refused(f->path, &secret, "world-readable", FLEET_E_UNSAFE, NULL);
}

static void test_bad_arguments(void **state)
{
	struct temp_file *f = *state;
	struct fleet_errctx fe;
	struct fleet_buf b;
	const struct fleet_file_policy uncapped = {.what = "x"};
	put(f->path, "x", 0600);
	fb_init(&b);
	assert_int_equal(fleet_file_read(AT_FDCWD, f->path, &uncapped, &b, &fe),
			 FLEET_E_INVALID_ARG);
	assert_int_equal(fleet_file_read(AT_FDCWD, f->path, NULL, &b, &fe), FLEET_E_INVALID_ARG);
	assert_int_equal(fleet_file_read(AT_FDCWD, "", &config, &b, &fe), FLEET_E_INVALID_ARG);
	assert_null(b.data);
	/* No error struct: still refused. */
	assert_int_equal(fleet_file_read(AT_FDCWD, "/nonexistent/x", &config, &b, NULL),
			 FLEET_E_NOT_FOUND);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_reads_the_bytes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_symlink_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errno_of_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mode_rules, setup, teardown),
		cmocka_unit_test_setup_teardown(test_owner_rule, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_regular, setup, teardown),
		cmocka_unit_test_setup_teardown(test_size_cap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_swap_after_check_reads_checked_bytes, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_bad_arguments, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
