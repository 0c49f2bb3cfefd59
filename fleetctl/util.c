#include "fleetctl/util.h"

#include "fleetd/store/store.h"

#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fleetctl/fleetctl.h"
#include "lib/hex.h"
#include "lib/sanitize.h"
#include "lib/tpm.h"

int fleetctl_read(const char *group, const char *what, const char *path, size_t max,
		  struct fleet_buf *b)
{
	struct fleet_errctx fe;
	fb_free(b);
	fleet_err e = fleet_file_read_data(path, max, b, &fe);
	if (e == FLEET_OK)
		return 0;
	fprintf(stderr, "fleetctl: %s: cannot read %s%s%s: %s\n", group, what, *what ? " " : "",
		path, e == FLEET_E_TOO_LARGE ? "larger than fleetctl accepts" : fe.reason);
	return -1;
}

void fleetctl_print_json(json_t *o)
{
	if (!o)
		return;
	json_dumpf(o, stdout, JSON_COMPACT);
	fputc('\n', stdout);
	json_decref(o);
}

int fleetctl_refuse(const char *group, int json, const char *reason, const char *detail)
{
	if (json) {
		fleetctl_print_json(json_pack("{s:s, s:s, s:s}", "result", "refused", "reason",
					      reason, "detail", detail ? detail : ""));
	} else {
		printf("%s: refused: %s\n", group, reason);
		if (detail && detail[0])
			fprintf(stderr, "fleetctl: %s: %s\n", group, detail);
	}
	return FLEETCTL_EXIT_REFUSED;
}

int fleetctl_parse_opts(const char *group, int argc, char **argv, int first,
			const struct fleetctl_opt *opts, size_t n_opts, int *json)
{
	for (int i = first; i < argc; i++) {
		const char **slot = NULL;
		if (json && !strcmp(argv[i], "--json")) {
			*json = 1;
			continue;
		}
		for (size_t k = 0; k < n_opts && !slot; k++)
			if (!strcmp(argv[i], opts[k].name))
				slot = opts[k].slot;
		if (!slot || i + 1 >= argc || *slot) {
			fprintf(stderr, "fleetctl: %s: bad or repeated argument '%s'\n", group,
				argv[i]);
			return -1;
		}
		*slot = argv[++i];
	}
	return 0;
}

int fleetctl_nonce(const char *group, const char *hex, uint8_t *out, size_t cap, size_t *len)
{
	size_t n = strlen(hex) / 2;
	if (n == 0 || n > cap || fleet_hex_decode(hex, strlen(hex), out, n) != FLEET_OK) {
		fprintf(stderr, "fleetctl: %s: --nonce must be 1 to %zu bytes of hex\n", group,
			cap);
		return -1;
	}
	*len = n;
	return 0;
}

void fleetctl_attest_detail(const char *reason, fleet_err e, const struct fleet_buf *attest,
			    const struct fleet_buf *sig, char *detail, size_t len)
{
	struct fleet_errctx ec = {0};
	TPMS_ATTEST at;
	TPMT_SIGNATURE ts;
	fleet_err pe = FLEET_OK;
	if (reason && !strcmp(reason, "attest-malformed"))
		pe = fleet_tpm_attest_parse(attest->data, attest->len, &at, &ec);
	else if (reason && !strcmp(reason, "signature-malformed"))
		pe = fleet_tpm_signature_parse(sig->data, sig->len, &ts, &ec);
	if (pe != FLEET_OK)
		fleet_errctx_format(&ec, pe, detail, len);
	else
		snprintf(detail, len, "%s", fleet_err_str(e));
}

struct fleet_store *fleetctl_open_store(const char *group, const char *dir, int mode)
{
	struct fleet_store *st;
	struct fleet_errctx ec = {0};
	char err[sizeof(ec.detail) + 80];
	fleet_err e = fleet_store_open(dir, (enum fleet_store_mode)mode, &st, &ec);
	if (e) {
		fprintf(stderr, "fleetctl: %s: cannot open the store: %s (%s)\n", group,
			fleet_errctx_text(&ec, err, sizeof(err)), fleet_err_str(e));
		return NULL;
	}
	return st;
}

int fleetctl_fail(int code, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "fleetctl: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return code;
}

const char *fleetctl_state_dir(const char *dir)
{
	return dir ? dir : "/var/lib/fleetd";
}

int fleetctl_need_root(const char *what)
{
	if (geteuid() == 0)
		return 0;
	return fleetctl_fail(FLEETCTL_EXIT_PERMISSION, "%s: only root may do this (run it with sudo)",
			     what);
}

int fleetctl_store_code(fleet_err e)
{
	if (e == FLEET_STORE_E_NOT_FOUND)
		return FLEETCTL_EXIT_NOT_FOUND;
	if (e == FLEET_STORE_E_CONFLICT || e == FLEET_STORE_E_STATE)
		return FLEETCTL_EXIT_STATE;
	return FLEETCTL_EXIT_USAGE;
}

void fleetctl_operator_name(char out[FLEETCTL_OPERATOR_MAX])
{
	const char *su = getenv("SUDO_USER");
	if (geteuid() == 0 && su && su[0] && strlen(su) < FLEETCTL_OPERATOR_MAX &&
	    fleet_ascii_printable(su, strlen(su), 0) && getpwnam(su)) {
		snprintf(out, FLEETCTL_OPERATOR_MAX, "%s", su);
		return;
	}
	uid_t uid = getuid();
	struct passwd *pw = getpwuid(uid);
	if (pw && pw->pw_name && pw->pw_name[0] && strlen(pw->pw_name) < FLEETCTL_OPERATOR_MAX &&
	    fleet_ascii_printable(pw->pw_name, strlen(pw->pw_name), 0))
		snprintf(out, FLEETCTL_OPERATOR_MAX, "%s", pw->pw_name);
	else
		snprintf(out, FLEETCTL_OPERATOR_MAX, "uid %u", (unsigned)uid);
}
