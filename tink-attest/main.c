/*
 * tink-attest: HookOS's attestation client (docs/tink-attest.md).
 */
#include <stdio.h>
#include <stdlib.h>

#include "tink-attest/config.h"
#include "tink-attest/log.h"
#include "tink-attest/tink.h"

int main(int argc, char **argv)
{
	struct tink_options o;
	struct tink_result res;
	char msg[512] = "";

	/* ESYS logs every TPM error code itself; tink-attest says what failed
	 * in one line. TSS2_LOG in the environment still wins. */
	setenv("TSS2_LOG", "all+NONE", 0);
	int rc = tink_options_parse(argc, argv, &o, msg, sizeof(msg));
	if (rc != 0) {
		tink_log("%s", msg);
		tink_usage(stderr);
		tink_options_free(&o);
		return rc;
	}
	if (o.help) {
		tink_usage(stdout);
		tink_options_free(&o);
		return 0;
	}
	struct fleet_errctx ec = {0};
	if (o.cmdline ? tink_ca_from_cmdline(o.cmdline, &o.curl.ca_pem, &ec) != FLEET_OK
		      : tink_ca_from_file(o.curl.ca_file, &o.curl.ca_pem, &ec) != FLEET_OK) {
		char text[sizeof(ec.detail) + sizeof(ec.ossl) + 80];
		tink_log("%s", fleet_errctx_text(&ec, text, sizeof(text)));
		tink_options_free(&o);
		return TINK_EXIT_USAGE;
	}
	o.curl.ca_file = NULL; /* read: libcurl takes the bytes */
	if (tink_curl_global_init() != 0) {
		tink_log("libcurl failed to initialise");
		tink_options_free(&o);
		return TINK_EXIT_LOCAL;
	}
	struct tink_transport tx = tink_curl_transport(&o.curl);
	rc = tink_run(&o.run, &tx, &res);
	if (rc != TINK_EXIT_CONFIRMED)
		tink_log("%s (exit %d, %s)", res.message, rc, tink_exit_name(rc));
	tink_options_free(&o);
	return rc;
}
