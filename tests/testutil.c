#include "tests/testutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/file_read.h"

const char *shared_data_dir(void)
{
	static int checked;
	static const char *dir;
	if (!checked) {
		struct stat st;
		checked = 1;
		if (stat(FLEET_SHARED_DATA, &st) == 0 && S_ISDIR(st.st_mode))
			dir = FLEET_SHARED_DATA;
		else
			printf("SKIP: %s not found (the shared real-world data is not "
			       "beside this checkout)\n", FLEET_SHARED_DATA);
	}
	return dir;
}

void require_shared_data_or_skip(void)
{
	if (!shared_data_dir())
		exit(TEST_SKIP_EXIT);
}

void read_file_or_fail(const char *path, struct fleet_buf *out)
{
	fb_init(out);
	if (fleet_file_read_data(path, 64u << 20, out, NULL) != FLEET_OK)
		fail_msg("cannot read %s: %s", path, strerror(errno));
}

char *make_temp_dir(const char *tag)
{
	char tmpl[256];
	const char *base = getenv("TMPDIR");
	snprintf(tmpl, sizeof(tmpl), "%s/fleet-%s-XXXXXX", base ? base : "/tmp", tag);
	char *d = mkdtemp(tmpl);
	if (!d)
		return NULL;
	return strdup(d);
}

struct temp_file *temp_file_new(const char *tag, const char *name)
{
	struct temp_file *t = calloc(1, sizeof(*t));
	assert_non_null(t);
	t->dir = make_temp_dir(tag);
	assert_non_null(t->dir);
	snprintf(t->path, sizeof(t->path), "%s/%s", t->dir, name);
	return t;
}

void temp_file_free(struct temp_file *t)
{
	if (!t)
		return;
	rm_rf(t->dir);
	free(t->dir);
	free(t);
}

void rm_rf(const char *path)
{
	if (!path || !*path || strcmp(path, "/") == 0)
		return;
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
	if (system(cmd) != 0)
		fprintf(stderr, "warning: could not remove %s\n", path);
}

int run_capture(const char *cmd, struct fleet_buf *out)
{
	FILE *p = popen(cmd, "r");
	if (!p)
		return -1;
	char chunk[4096];
	size_t n;
	while ((n = fread(chunk, 1, sizeof(chunk), p)) > 0)
		if (out)
			fb_put(out, chunk, n);
	if (out)
		fb_put_u8(out, 0), out->len--; /* NUL-terminate, not counted */
	int st = pclose(p);
	if (st == -1 || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

const char *fleetctl_path(void)
{
	const char *p = getenv("FLEETCTL");
	return p ? p : FLEET_BINARY_DIR "/fleetctl/fleetctl";
}

void stderr_capture_start(struct stderr_capture *c)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(c->path, sizeof(c->path), "%s/fleet-stderr-XXXXXX", tmp ? tmp : "/tmp");
	int fd = mkstemp(c->path);
	assert_true(fd >= 0);
	fflush(stderr);
	c->saved = dup(STDERR_FILENO);
	assert_true(dup2(fd, STDERR_FILENO) >= 0);
	close(fd);
}

char *stderr_capture_end(struct stderr_capture *c)
{
	fflush(stderr);
	dup2(c->saved, STDERR_FILENO);
	close(c->saved);
	struct fleet_buf b;
	fb_init(&b);
	assert_int_equal(fleet_file_read_data(c->path, 256u << 20, &b, NULL), FLEET_OK);
	fb_put_u8(&b, 0);
	unlink(c->path);
	char *s = strdup((const char *)b.data);
	fb_free(&b);
	return s;
}

size_t count_lines(const char *s)
{
	size_t n = 0;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}
