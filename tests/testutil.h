/* testutil.h: small helpers shared by the cmocka tests. */
#ifndef FLEET_TESTUTIL_H
#define FLEET_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "lib/buf.h"

#define TEST_SKIP_EXIT 77

/* Path under ../shared/data, or NULL (with a SKIP line printed once) when the
 * shared data is not there. */
const char *shared_data_dir(void);
/* Exit 77 with a message when ../shared/data is missing. */
void require_shared_data_or_skip(void);
/* Read a file fully; fails the test when it cannot. */
void read_file_or_fail(const char *path, struct fleet_buf *out);
/* A fresh private temp dir (mkdtemp); removed by rm_rf. */
char *make_temp_dir(const char *tag);
/* A fresh temp dir and the path of one file in it (not created): for a
 * cmocka setup; temp_file_free removes the dir with all in it. */
struct temp_file {
	char *dir;
	char path[600];
};
struct temp_file *temp_file_new(const char *tag, const char *name);
void temp_file_free(struct temp_file *t);
void rm_rf(const char *path);
/* Run a shell command, capture stdout into out (if not NULL); returns the
 * exit status (or -1). */
int run_capture(const char *cmd, struct fleet_buf *out);
/* This process's stderr into a private temp file, and back: what the
 * journal's stderr target wrote in between (the caller frees it). */
struct stderr_capture {
	int saved;
	char path[256];
};
void stderr_capture_start(struct stderr_capture *c);
char *stderr_capture_end(struct stderr_capture *c);
/* How many '\n' s holds. */
size_t count_lines(const char *s);
/* Path of the fleetctl binary under test. */
const char *fleetctl_path(void);

#endif
