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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "lib/file_read.h"
#include "lib/sanitize.h"
#include "tink-attest/log.h"

extern char **environ;

#define SYSFS_VALUE_MAX 4096 /* no DMI string or MAC file is near this */
#define LLDP_OUTPUT_MAX (1024u * 1024)
#define LLDPCLI_TIMEOUT_MS 10000

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
		errno = fleet_file_errno(e, &fe, EIO);
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
	return fleet_ascii_printable(s, strlen(s), FLEET_ASCII_SPACE);
}

static fleet_err dmi_field(const char *root, const char *name, char *out, size_t cap, int required,
			   struct fleet_errctx *ec)
{
	char path[4096], v[SYSFS_VALUE_MAX];
	snprintf(path, sizeof(path), "%s/class/dmi/id/%s", root, name);
	int r = read_value(path, v, sizeof(v));
	if (r == 1 && !required) {
		out[0] = '\0';
		return FLEET_OK;
	}
	if (r == 1)
		return fleet_errctx_msg(ec, FLEET_E_NOT_FOUND, "cannot read %s: no such file",
					path);
	if (r != 0)
		return fleet_errctx_errno(ec, FLEET_E_IO, errno, "cannot read %s", path);
	if (!printable(v))
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED,
					"%s holds control or non-ASCII characters", path);
	if (strlen(v) >= cap)
		return fleet_errctx_msg(ec, FLEET_E_TOO_LARGE,
					"%s is %zu characters; the protocol allows %zu", path,
					strlen(v), cap - 1);
	if (required && v[0] == '\0')
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED, "%s is empty", path);
	memcpy(out, v, strlen(v) + 1);
	return FLEET_OK;
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

static fleet_err read_macs(const char *root, struct tink_identity *id, struct fleet_errctx *ec)
{
	char dir[4096];
	snprintf(dir, sizeof(dir), "%s/class/net", root);
	DIR *d = opendir(dir);
	if (!d)
		return fleet_errctx_errno(ec, errno == ENOENT ? FLEET_E_NOT_FOUND : FLEET_E_IO,
					  errno, "cannot list %s", dir);
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
			return fleet_errctx_msg(ec, FLEET_E_MALFORMED, "%s is not a MAC address",
						path);
		}
		if (strcmp(mac, "00:00:00:00:00:00") == 0)
			continue;
		if (id->n_macs == FLEET_WIRE_MAX_MACS) {
			closedir(d);
			return fleet_errctx_msg(ec, FLEET_E_TOO_LARGE,
						"more than %d network interfaces in %s",
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
	return FLEET_OK;
}

fleet_err tink_identity_read_sysfs(const char *root, struct tink_identity *id,
				   struct fleet_errctx *ec)
{
	fleet_err e;
	memset(id, 0, sizeof(*id));
	if ((e = dmi_field(root, "product_serial", id->serial, sizeof(id->serial), 1, ec)) ||
	    (e = dmi_field(root, "product_uuid", id->product_uuid, sizeof(id->product_uuid), 0,
			   ec)) ||
	    (e = dmi_field(root, "bios_version", id->bios_version, sizeof(id->bios_version), 0,
			   ec)))
		return e;
	return read_macs(root, id, ec);
}

/* ---- LLDP --------------------------------------------------------------- */

static fleet_err copy_field(const char *what, const char *v, char *out, struct fleet_errctx *ec)
{
	size_t n = strlen(v);
	if (n > FLEET_WIRE_MAX_LLDP_FIELD)
		return fleet_errctx_msg(ec, FLEET_E_TOO_LARGE,
					"LLDP %s is %zu bytes; the protocol allows %d", what, n,
					FLEET_WIRE_MAX_LLDP_FIELD);
	/* The wire's own rule (C0, DEL and C1 refused), so a neighbour this
	 * side accepts is always one the intake can carry. */
	if (!fleet_wire_text_ok(v, n))
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED, "LLDP %s holds control characters",
					what);
	memcpy(out, v, n + 1);
	return FLEET_OK;
}

/* {"id":{"type":..,"value":".."}} -> value */
static const char *id_value(json_t *obj)
{
	json_t *id = json_object_get(obj, "id");
	json_t *v = json_is_object(id) ? json_object_get(id, "value") : NULL;
	return json_is_string(v) ? json_string_value(v) : NULL;
}

/* One interface's neighbour: {"via":..,"chassis":{..},"port":{..}}. */
static fleet_err neighbour(json_t *ifc, struct fleet_network_report *out, struct fleet_errctx *ec)
{
	json_t *chassis = json_object_get(ifc, "chassis");
	json_t *port = json_object_get(ifc, "port");
	if (!json_is_object(chassis) || !json_is_object(port))
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED,
					"LLDP neighbour without chassis or port object");
	const char *cid = id_value(chassis), *name = "";
	if (!cid) {
		/* {"<sysname>": {"id": ..}}: exactly one key, the system name. */
		const char *key;
		json_t *val;
		if (json_object_size(chassis) != 1)
			return fleet_errctx_msg(ec, FLEET_E_MALFORMED,
						"LLDP chassis of unknown shape");
		json_object_foreach(chassis, key, val)
		{
			name = key;
			cid = id_value(val);
		}
	}
	const char *pid = id_value(port);
	if (!cid || !pid)
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED,
					"LLDP neighbour without chassis or port id");
	fleet_err e;
	if ((e = copy_field("chassis id", cid, out->chassis_id, ec)) ||
	    (e = copy_field("port id", pid, out->port_id, ec)) ||
	    (e = copy_field("system name", name, out->system_name, ec)))
		return e;
	return FLEET_OK;
}

fleet_err tink_lldp_parse(const char *json, size_t len, struct fleet_network_report *out,
			  struct fleet_errctx *ec)
{
	json_error_t je;
	memset(out, 0, sizeof(*out));
	json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
	if (!root)
		return fleet_errctx_msg(ec,
					json_error_code(&je) == json_error_out_of_memory
						? FLEET_E_NOMEM
						: FLEET_E_MALFORMED,
					"LLDP output is not JSON (line %d: %s)", je.line, je.text);
	fleet_err rc = FLEET_E_MALFORMED;
	json_t *lldp = json_object_get(root, "lldp");
	if (!json_is_object(lldp)) {
		fleet_errctx_msg(ec, rc, "LLDP output has no \"lldp\" object");
		goto out;
	}
	json_t *ifs = json_object_get(lldp, "interface");
	json_t *first = NULL;
	if (!ifs) {
		rc = FLEET_OK; /* no neighbour */
		goto out;
	}
	/* One interface: {"eth0": {..}}; several: [{"eth0": {..}}, {"eth1": {..}}]. */
	json_t *holder = json_is_array(ifs) ? json_array_get(ifs, 0) : ifs;
	if (!json_is_object(holder) || json_object_size(holder) != 1) {
		if (json_is_array(ifs) && json_array_size(ifs) == 0) {
			rc = FLEET_OK;
			goto out;
		}
		fleet_errctx_msg(ec, rc, "LLDP \"interface\" of unknown shape");
		goto out;
	}
	const char *key;
	json_t *val;
	json_object_foreach(holder, key, val) first = val;
	if (!json_is_object(first)) {
		fleet_errctx_msg(ec, rc, "LLDP interface entry is not an object");
		goto out;
	}
	rc = neighbour(first, out, ec);
	if (rc != 0)
		memset(out, 0, sizeof(*out));
out:
	json_decref(root);
	return rc;
}

/* Run lldpcli without a shell, its output capped and its time bounded. */
static fleet_err run_lldpcli(struct fleet_buf *outb, struct fleet_errctx *ec)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) != 0)
		return fleet_errctx_errno(ec, FLEET_E_IO, errno, "pipe");
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
		return fleet_errctx_errno(ec, sr == ENOENT ? FLEET_E_NOT_FOUND : FLEET_E_IO, sr,
					  "cannot run lldpcli");
	}
	fleet_err rc = FLEET_OK;
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
			rc = fleet_errctx_msg(ec, FLEET_E_IO, "lldpcli did not finish in %d s",
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
			rc = fleet_errctx_msg(ec, FLEET_E_TOO_LARGE, "lldpcli output over %u bytes",
					      LLDP_OUTPUT_MAX);
			break;
		}
		fb_put(outb, chunk, (size_t)r);
	}
	close(p[0]);
	if (rc != FLEET_OK)
		kill(pid, SIGKILL);
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (rc == FLEET_OK && !(WIFEXITED(st) && WEXITSTATUS(st) == 0))
		rc = fleet_errctx_msg(ec, FLEET_E_IO, "lldpcli failed (is lldpd running?)");
	if (rc == FLEET_OK && fb_err(outb) != FLEET_OK)
		rc = fleet_errctx_msg(ec, FLEET_E_NOMEM, "out of memory reading lldpcli output");
	return rc;
}

fleet_err tink_lldp_read(const char *file, struct fleet_network_report *out,
			 struct fleet_errctx *ec)
{
	struct fleet_buf b;
	fleet_err rc;
	memset(out, 0, sizeof(*out));
	fb_init(&b);
	if (file) {
		/* lldpcli's output saved to a file (tests, debugging): data,
		 * refused as the reader says (lib/file_read.h). */
		const struct fleet_file_policy policy =
			FLEET_FILE_POLICY_DATA("the LLDP file", LLDP_OUTPUT_MAX);
		if ((rc = fleet_file_read(AT_FDCWD, file, &policy, &b, ec)) != FLEET_OK)
			return fleet_errctx_wrap(ec, rc, "cannot read ", NULL);
		rc = tink_lldp_parse((const char *)b.data, b.len, out, ec);
		fb_free(&b);
		return rc;
	}
	/* lldpcli's failure is not fatal: said, and the report left empty. */
	struct fleet_errctx why;
	char text[sizeof(why.detail) + 80];
	fb_init_capped(&b, LLDP_OUTPUT_MAX); /* lldpcli's output: untrusted, capped */
	if (run_lldpcli(&b, &why) != FLEET_OK) {
		tink_log("warning: no LLDP neighbour: %s",
			 fleet_errctx_text(&why, text, sizeof(text)));
		fb_free(&b);
		return FLEET_OK;
	}
	rc = tink_lldp_parse((const char *)b.data, b.len, out, &why);
	fb_free(&b);
	if (rc != FLEET_OK) {
		tink_log("warning: no LLDP neighbour: %s",
			 fleet_errctx_text(&why, text, sizeof(text)));
		memset(out, 0, sizeof(*out));
	}
	return FLEET_OK;
}
