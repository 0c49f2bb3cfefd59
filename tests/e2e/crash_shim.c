/*
 * crash_shim.c: kill -9 at a chosen write point, for tests only, loaded
 * into the fleetd binary with LD_PRELOAD (fleetd itself knows nothing of
 * it). While the file named by FLEET_CRASH_ARM exists and holds N, the
 * process counts its calls to the functions every durable write goes
 * through (sqlite3_step, sqlite3_exec, fsync, fdatasync, and write(2) on
 * verdicts.jsonl) and raises SIGKILL at the Nth, before it runs. The count
 * so far is written to FLEET_CRASH_ARM.count, so a test knows when N has
 * passed every point of a round.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

static long counted;

static void point(void)
{
	const char *arm = getenv("FLEET_CRASH_ARM");
	char buf[32] = "", cpath[600];
	if (!arm)
		return;
	int fd = open(arm, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		counted = 0; /* disarmed: the next arming counts from one */
		return;
	}
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	long at = strtol(buf, NULL, 10);
	counted++;
	snprintf(cpath, sizeof(cpath), "%s.count", arm);
	FILE *f = fopen(cpath, "w");
	if (f) {
		fprintf(f, "%ld\n", counted);
		fclose(f);
	}
	if (counted == at)
		kill(getpid(), SIGKILL);
}

#define REAL(ret, name, ...)                                     \
	static ret (*real)(__VA_ARGS__);                           \
	if (!real)                                                 \
		real = (ret (*)(__VA_ARGS__))dlsym(RTLD_NEXT, name)

typedef struct sqlite3_stmt sqlite3_stmt;
typedef struct sqlite3 sqlite3;

int sqlite3_step(sqlite3_stmt *s)
{
	REAL(int, "sqlite3_step", sqlite3_stmt *);
	point();
	return real(s);
}

int sqlite3_exec(sqlite3 *db, const char *sql, int (*cb)(void *, int, char **, char **), void *a,
		 char **err)
{
	REAL(int, "sqlite3_exec", sqlite3 *, const char *, int (*)(void *, int, char **, char **),
	     void *, char **);
	point();
	return real(db, sql, cb, a, err);
}

int fsync(int fd)
{
	REAL(int, "fsync", int);
	point();
	return real(fd);
}

int fdatasync(int fd)
{
	REAL(int, "fdatasync", int);
	point();
	return real(fd);
}

static int is_vlog(int fd)
{
	char p[64], t[512];
	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(p, t, sizeof(t) - 1);
	if (n <= 0)
		return 0;
	t[n] = '\0';
	return strstr(t, "/verdicts.jsonl") != NULL;
}

ssize_t write(int fd, const void *b, size_t n)
{
	REAL(ssize_t, "write", int, const void *, size_t);
	if (fd > 2 && getenv("FLEET_CRASH_ARM") && is_vlog(fd))
		point();
	return real(fd, b, n);
}
