/*
 * identity.c: SMBIOS identity and NIC addresses from sysfs, the LLDP
 * neighbour from lldpd.
 */
#include "tink-attest/identity.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "lib/file_read.h"
#include "tink-attest/log.h"

extern char **environ;

#define SYSFS_VALUE_MAX 4096 /* no DMI string or MAC file is near this */
#define LLDP_OUTPUT_MAX (1024u * 1024)
#define LLDPCLI_TIMEOUT_MS 10000

static int fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

/* Read a small sysfs file into out (NUL-terminated, trailing whitespace
 * removed). 0; 1 when the file does not exist; -1 on other errors (errno
 * says why: ELOOP a symlink, EINVAL not a regular file, EFBIG too long).
 * The machine's claims, checked by fleetd against the inventory: data
 * (docs/files.md), through the one reader all the same. */
static int read_value(const char *path, char *out, size_t cap)
{
	const struct fleet_file_policy policy = {
		.what = "the sysfs value",
		.max_size = cap - 2, /* as before: a value must leave room to spare */
		.size_by_read = true,
	};
	struct fleet_errctx fe;
	struct fleet_buf b;
	fb_init(&b);
	fleet_err e = fleet_file_read(AT_FDCWD, path, &policy, &b, &fe);
	if (e != FLEET_OK) {
		if (e == FLEET_E_NOT_FOUND)
			return 1;
		errno = e == FLEET_E_TOO_LARGE			  ? EFBIG
			: fe.reason && !strcmp(fe.reason, "symlink")	  ? ELOOP
			: fe.reason && !strcmp(fe.reason, "not-regular") ? EINVAL
			: fe.sys_errno					  ? fe.sys_errno
									  : EIO;
		return -1;
	}
	size_t n = b.len;
	if (n)
		memcpy(out, b.data, n);
	fb_free(&b);
	out[n] = '\0';
	while (n > 0 && isspace((unsigned char)out[n - 1]))
		out[--n] = '\0';
	return 0;
}

/* Printable ASCII only: what SMBIOS strings are, and nothing a log or a
 * JSON string could be confused by. */
static int printable(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
			return 0;
	return 1;
}

static int dmi_field(const char *root, const char *name, char *out, size_t cap, int required,
		     char *err, size_t errlen)
{
	char path[4096], v[SYSFS_VALUE_MAX];
	snprintf(path, sizeof(path), "%s/class/dmi/id/%s", root, name);
	int r = read_value(path, v, sizeof(v));
	if (r == 1 && !required) {
		out[0] = '\0';
		return 0;
	}
	if (r != 0)
		return fail(err, errlen, "cannot read %s: %s", path,
			    r == 1 ? "no such file" : strerror(errno));
	if (!printable(v))
		return fail(err, errlen, "%s holds control or non-ASCII characters", path);
	if (strlen(v) >= cap)
		return fail(err, errlen, "%s is %zu characters; the protocol allows %zu", path,
			    strlen(v), cap - 1);
	if (required && v[0] == '\0')
		return fail(err, errlen, "%s is empty", path);
	memcpy(out, v, strlen(v) + 1);
	return 0;
}

/* "aa:bb:cc:dd:ee:ff" with hex digits; lowercased in place. */
static int mac_ok(char *m)
{
	if (strlen(m) != FLEET_WIRE_MAC_LEN)
		return 0;
	for (size_t i = 0; i < FLEET_WIRE_MAC_LEN; i++) {
		if (i % 3 == 2) {
			if (m[i] != ':')
				return 0;
		} else if (!isxdigit((unsigned char)m[i])) {
			return 0;
		}
		m[i] = (char)tolower((unsigned char)m[i]);
	}
	return 1;
}

static int cmp_mac(const void *a, const void *b)
{
	return strcmp(a, b);
}

static int read_macs(const char *root, struct tink_identity *id, char *err, size_t errlen)
{
	char dir[4096];
	snprintf(dir, sizeof(dir), "%s/class/net", root);
	DIR *d = opendir(dir);
	if (!d)
		return fail(err, errlen, "cannot list %s: %s", dir, strerror(errno));
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		char path[4096 + 512], mac[SYSFS_VALUE_MAX];
		struct stat st;
		if (e->d_name[0] == '.')
			continue;
		/* Physical NICs have a device; lo, bridges, bonds, veths do not. */
		snprintf(path, sizeof(path), "%s/%s/device", dir, e->d_name);
		if (stat(path, &st) != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s/address", dir, e->d_name);
		if (read_value(path, mac, sizeof(mac)) != 0)
			continue;
		if (!mac_ok(mac)) {
			closedir(d);
			return fail(err, errlen, "%s is not a MAC address", path);
		}
		if (strcmp(mac, "00:00:00:00:00:00") == 0)
			continue;
		if (id->n_macs == FLEET_WIRE_MAX_MACS) {
			closedir(d);
			return fail(err, errlen, "more than %d network interfaces in %s",
				    FLEET_WIRE_MAX_MACS, dir);
		}
		memcpy(id->macs[id->n_macs++], mac, FLEET_WIRE_MAC_LEN + 1);
	}
	closedir(d);
	qsort(id->macs, id->n_macs, sizeof(id->macs[0]), cmp_mac);
	size_t w = 0;
	for (size_t i = 0; i < id->n_macs; i++)
		if (w == 0 || strcmp(id->macs[w - 1], id->macs[i]) != 0)
			memmove(id->macs[w++], id->macs[i], sizeof(id->macs[0]));
	id->n_macs = w;
	return 0;
}

int tink_identity_read_sysfs(const char *root, struct tink_identity *id, char *err,
			     size_t errlen)
{
	memset(id, 0, sizeof(*id));
	if (dmi_field(root, "product_serial", id->serial, sizeof(id->serial), 1, err, errlen) ||
	    dmi_field(root, "product_uuid", id->product_uuid, sizeof(id->product_uuid), 0, err,
		      errlen) ||
	    dmi_field(root, "bios_version", id->bios_version, sizeof(id->bios_version), 0, err,
		      errlen))
		return -1;
	return read_macs(root, id, err, errlen);
}

/* ---- LLDP --------------------------------------------------------------- */

static int copy_field(const char *what, const char *v, char *out, char *err, size_t errlen)
{
	size_t n = strlen(v);
	if (n > FLEET_WIRE_MAX_LLDP_FIELD)
		return fail(err, errlen, "LLDP %s is %zu bytes; the protocol allows %d", what, n,
			    FLEET_WIRE_MAX_LLDP_FIELD);
	/* The wire's own rule (C0, DEL and C1 refused), so a neighbour this
	 * side accepts is always one the intake can carry. */
	if (!fleet_wire_text_ok(v, n))
		return fail(err, errlen, "LLDP %s holds control characters", what);
	memcpy(out, v, n + 1);
	return 0;
}

/* {"id":{"type":..,"value":".."}} -> value */
static const char *id_value(json_t *obj)
{
	json_t *id = json_object_get(obj, "id");
	json_t *v = json_is_object(id) ? json_object_get(id, "value") : NULL;
	return json_is_string(v) ? json_string_value(v) : NULL;
}

/* One interface's neighbour: {"via":..,"chassis":{..},"port":{..}}. */
static int neighbour(json_t *ifc, struct fleet_network_report *out, char *err, size_t errlen)
{
	json_t *chassis = json_object_get(ifc, "chassis");
	json_t *port = json_object_get(ifc, "port");
	if (!json_is_object(chassis) || !json_is_object(port))
		return fail(err, errlen, "LLDP neighbour without chassis or port object");
	const char *cid = id_value(chassis), *name = "";
	if (!cid) {
		/* {"<sysname>": {"id": ..}}: exactly one key, the system name. */
		const char *key;
		json_t *val;
		if (json_object_size(chassis) != 1)
			return fail(err, errlen, "LLDP chassis of unknown shape");
		json_object_foreach(chassis, key, val)
		{
			name = key;
			cid = id_value(val);
		}
	}
	const char *pid = id_value(port);
	if (!cid || !pid)
		return fail(err, errlen, "LLDP neighbour without chassis or port id");
	if (copy_field("chassis id", cid, out->chassis_id, err, errlen) ||
	    copy_field("port id", pid, out->port_id, err, errlen) ||
	    copy_field("system name", name, out->system_name, err, errlen))
		return -1;
	return 0;
}

int tink_lldp_parse(const char *json, size_t len, struct fleet_network_report *out, char *err,
		    size_t errlen)
{
	json_error_t je;
	memset(out, 0, sizeof(*out));
	json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
	if (!root)
		return fail(err, errlen, "LLDP output is not JSON (line %d: %s)", je.line,
			    je.text);
	int rc = -1;
	json_t *lldp = json_object_get(root, "lldp");
	if (!json_is_object(lldp)) {
		fail(err, errlen, "LLDP output has no \"lldp\" object");
		goto out;
	}
	json_t *ifs = json_object_get(lldp, "interface");
	json_t *first = NULL;
	if (!ifs) {
		rc = 0; /* no neighbour */
		goto out;
	}
	/* One interface: {"eth0": {..}}; several: [{"eth0": {..}}, {"eth1": {..}}]. */
	json_t *holder = json_is_array(ifs) ? json_array_get(ifs, 0) : ifs;
	if (!json_is_object(holder) || json_object_size(holder) != 1) {
		if (json_is_array(ifs) && json_array_size(ifs) == 0) {
			rc = 0;
			goto out;
		}
		fail(err, errlen, "LLDP \"interface\" of unknown shape");
		goto out;
	}
	const char *key;
	json_t *val;
	json_object_foreach(holder, key, val) first = val;
	if (!json_is_object(first)) {
		fail(err, errlen, "LLDP interface entry is not an object");
		goto out;
	}
	rc = neighbour(first, out, err, errlen);
	if (rc != 0)
		memset(out, 0, sizeof(*out));
out:
	json_decref(root);
	return rc;
}

/* Run lldpcli without a shell, its output capped and its time bounded. */
static int run_lldpcli(struct fleet_buf *outb, char *err, size_t errlen)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) != 0)
		return fail(err, errlen, "pipe: %s", strerror(errno));
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, p[1], STDOUT_FILENO);
	posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
	char *argv[] = {"lldpcli", "-f", "json", "show", "neighbors", NULL};
	pid_t pid;
	int sr = posix_spawnp(&pid, "lldpcli", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(p[1]);
	if (sr != 0) {
		close(p[0]);
		return fail(err, errlen, "cannot run lldpcli: %s", strerror(sr));
	}
	int rc = 0;
	struct timespec start;
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		long spent = (now.tv_sec - start.tv_sec) * 1000 +
			     (now.tv_nsec - start.tv_nsec) / 1000000;
		struct pollfd pf = {.fd = p[0], .events = POLLIN};
		if (spent >= LLDPCLI_TIMEOUT_MS ||
		    poll(&pf, 1, (int)(LLDPCLI_TIMEOUT_MS - spent)) == 0) {
			rc = fail(err, errlen, "lldpcli did not finish in %d s",
				  LLDPCLI_TIMEOUT_MS / 1000);
			break;
		}
		uint8_t chunk[4096];
		ssize_t r = read(p[0], chunk, sizeof(chunk));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (outb->len + (size_t)r > LLDP_OUTPUT_MAX) {
			rc = fail(err, errlen, "lldpcli output over %u bytes", LLDP_OUTPUT_MAX);
			break;
		}
		fb_put(outb, chunk, (size_t)r);
	}
	close(p[0]);
	if (rc != 0)
		kill(pid, SIGKILL);
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (rc == 0 && !(WIFEXITED(st) && WEXITSTATUS(st) == 0))
		rc = fail(err, errlen, "lldpcli failed (is lldpd running?)");
	if (rc == 0 && fb_err(outb) != FLEET_OK)
		rc = fail(err, errlen, "out of memory reading lldpcli output");
	return rc;
}

int tink_lldp_read(const char *file, struct fleet_network_report *out, char *err,
		   size_t errlen)
{
	struct fleet_buf b;
	int rc;
	memset(out, 0, sizeof(*out));
	fb_init(&b);
	if (file) {
		/* lldpcli's output saved to a file (tests, debugging): data. */
		const struct fleet_file_policy policy =
			FLEET_FILE_POLICY_DATA("the LLDP file", LLDP_OUTPUT_MAX);
		struct fleet_errctx fe;
		char text[sizeof(fe.detail) + 80];
		if (fleet_file_read(AT_FDCWD, file, &policy, &b, &fe) != FLEET_OK)
			return fail(err, errlen, "cannot read %s",
				    fleet_errctx_text(&fe, text, sizeof(text)));
		rc = tink_lldp_parse((const char *)b.data, b.len, out, err, errlen);
		fb_free(&b);
		return rc;
	}
	fb_init_capped(&b, LLDP_OUTPUT_MAX); /* lldpcli's output: untrusted, capped */
	if (run_lldpcli(&b, err, errlen) != 0) {
		tink_log("warning: no LLDP neighbour: %s", err);
		fb_free(&b);
		return 0;
	}
	rc = tink_lldp_parse((const char *)b.data, b.len, out, err, errlen);
	fb_free(&b);
	if (rc != 0) {
		tink_log("warning: no LLDP neighbour: %s", err);
		memset(out, 0, sizeof(*out));
	}
	return 0;
}
