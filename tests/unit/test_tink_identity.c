/*
 * test_tink_identity.c: what tink-attest reads about the machine before it
 * touches the TPM: SMBIOS and NIC addresses from a sysfs tree, the LLDP
 * neighbour from lldpd's JSON (the shapes lldpd's own integration tests
 * pin), and the pinned CA from a kernel command line; and how the writer
 * of its output files says a failure (output.h).
 */
#include "tests/testutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tink-attest/config.h"
#include "tink-attest/identity.h"
#include "tink-attest/output.h"

static void put(const char *root, const char *rel, const char *text)
{
	char path[1024], cmd[1200];
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\"", path);
	assert_int_equal(system(cmd), 0);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static void mkd(const char *root, const char *rel)
{
	char cmd[1200];
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s/%s'", root, rel);
	assert_int_equal(system(cmd), 0);
}

static void sysfs_identity(void **st)
{
	(void)st;
	char *root = make_temp_dir("sysfs");
	struct fleet_errctx ec;
	struct tink_identity id;
	put(root, "class/dmi/id/product_serial", "SN-0042\n");
	put(root, "class/dmi/id/product_uuid", "4c4c4544-0042-3010-8057-b4c04f4a4d32\n");
	put(root, "class/dmi/id/bios_version", "2.19.1 \n");
	/* Two physical NICs (unsorted, one upper case), a bond with a copy of
	 * one address and no device, and lo. */
	mkd(root, "class/net/eno2/device");
	put(root, "class/net/eno2/address", "B4:96:91:00:00:02\n");
	mkd(root, "class/net/eno1/device");
	put(root, "class/net/eno1/address", "b4:96:91:00:00:01\n");
	put(root, "class/net/bond0/address", "b4:96:91:00:00:01\n");
	put(root, "class/net/lo/address", "00:00:00:00:00:00\n");

	assert_int_equal(tink_identity_read_sysfs(root, &id, &ec), 0);
	assert_string_equal(id.serial, "SN-0042");
	assert_string_equal(id.product_uuid, "4c4c4544-0042-3010-8057-b4c04f4a4d32");
	assert_string_equal(id.bios_version, "2.19.1");
	assert_int_equal(id.n_macs, 2);
	assert_string_equal(id.macs[0], "b4:96:91:00:00:01");
	assert_string_equal(id.macs[1], "b4:96:91:00:00:02");

	/* A serial with a control character is refused, not cleaned. */
	put(root, "class/dmi/id/product_serial", "SN-\x1b[2J0042\n");
	assert_int_equal(tink_identity_read_sysfs(root, &id, &ec), FLEET_E_MALFORMED);
	assert_non_null(strstr(ec.detail, "control"));
	/* One over the protocol's cap is refused, not truncated. */
	char longs[FLEET_WIRE_MAX_SERIAL + 3];
	memset(longs, 'A', FLEET_WIRE_MAX_SERIAL + 1);
	longs[FLEET_WIRE_MAX_SERIAL + 1] = '\n';
	longs[FLEET_WIRE_MAX_SERIAL + 2] = '\0';
	put(root, "class/dmi/id/product_serial", longs);
	assert_int_equal(tink_identity_read_sysfs(root, &id, &ec), FLEET_E_TOO_LARGE);
	assert_non_null(strstr(ec.detail, "the protocol allows 64"));
	longs[FLEET_WIRE_MAX_SERIAL] = '\n';
	longs[FLEET_WIRE_MAX_SERIAL + 1] = '\0';
	put(root, "class/dmi/id/product_serial", longs);
	assert_int_equal(tink_identity_read_sysfs(root, &id, &ec), 0);
	/* A NIC address that is not a MAC. */
	put(root, "class/net/eno2/address", "b4:96:91:00:00\n");
	assert_int_equal(tink_identity_read_sysfs(root, &id, &ec), FLEET_E_MALFORMED);
	put(root, "class/net/eno2/address", "b4:96:91:00:00:02\n");
	/* No serial at all. */
	char p[1024];
	snprintf(p, sizeof(p), "%s/class/dmi/id/product_serial", root);
	assert_int_equal(unlink(p), 0);
	assert_int_equal(tink_identity_read_sysfs(root, &id, &ec), FLEET_E_NOT_FOUND);
	assert_non_null(strstr(ec.detail, "product_serial"));
	rm_rf(root);
	free(root);
}

static fleet_err parse(const char *json, struct fleet_network_report *r)
{
	struct fleet_errctx ec;
	fleet_err rc = tink_lldp_parse(json, strlen(json), r, &ec);
	if (rc != FLEET_OK)
		printf("  %s\n", ec.detail);
	return rc;
}

static void lldp_shapes(void **st)
{
	(void)st;
	struct fleet_network_report r;
	/* One interface, chassis keyed by its system name. */
	assert_int_equal(
		parse("{\"lldp\":{\"interface\":{\"eth0\":{\"via\":\"LLDP\",\"rid\":\"1\","
		      "\"age\":\"0 day, 00:00:12\",\"chassis\":{\"ns-2.example.com\":{\"id\":"
		      "{\"type\":\"mac\",\"value\":\"00:00:00:00:00:02\"},\"descr\":\"x\","
		      "\"capability\":[{\"type\":\"Bridge\",\"enabled\":false}]}},\"port\":{\"id\":"
		      "{\"type\":\"mac\",\"value\":\"00:00:00:00:00:03\"},\"descr\":\"eth1\","
		      "\"ttl\":\"120\"}}}}}",
		      &r),
		0);
	assert_string_equal(r.chassis_id, "00:00:00:00:00:02");
	assert_string_equal(r.port_id, "00:00:00:00:00:03");
	assert_string_equal(r.system_name, "ns-2.example.com");
	/* Several interfaces: an array of one-key objects; the first wins.
	 * The chassis without a system name has its id directly. */
	assert_int_equal(
		parse("{\"lldp\":{\"interface\":[{\"eno1\":{\"via\":\"LLDP\",\"chassis\":{\"id\":"
		      "{\"type\":\"local\",\"value\":\"SW-17\"}},\"port\":{\"id\":{\"type\":"
		      "\"ifname\",\"value\":\"Gi1/0/7\"}}}},{\"eno2\":{\"via\":\"LLDP\",\"chassis\":"
		      "{\"other\":{\"id\":{\"type\":\"mac\",\"value\":\"aa:aa:aa:aa:aa:aa\"}}},"
		      "\"port\":{\"id\":{\"type\":\"ifname\",\"value\":\"Gi1/0/8\"}}}}]}}",
		      &r),
		0);
	assert_string_equal(r.chassis_id, "SW-17");
	assert_string_equal(r.port_id, "Gi1/0/7");
	assert_string_equal(r.system_name, "");
	/* No neighbour: lldpd prints an empty "lldp" object. */
	assert_int_equal(parse("{\"lldp\":{}}", &r), 0);
	assert_string_equal(r.port_id, "");
	/* Not lldpd's shape, not JSON, a duplicate key, a control character. */
	assert_int_equal(parse("{\"neighbors\":[]}", &r), FLEET_E_MALFORMED);
	assert_int_equal(parse("{\"lldp\":", &r), FLEET_E_MALFORMED);
	assert_int_equal(parse("{\"lldp\":{},\"lldp\":{}}", &r), FLEET_E_MALFORMED);
	assert_int_equal(
		parse("{\"lldp\":{\"interface\":{\"eth0\":{\"chassis\":{\"id\":{\"value\":\"a\"}},"
		      "\"port\":{\"id\":{\"value\":\"p\\u0007\"}}}}}}",
		      &r),
		FLEET_E_MALFORMED);
	assert_string_equal(r.port_id, ""); /* a refused report leaves nothing behind */
	/* A C1 control (U+0085) is as unsendable as a C0 one: the wire encoder
	 * refuses it, so the parser must too (found in review). Then the
	 * report it accepts is always one the intake can encode. */
	assert_int_equal(
		parse("{\"lldp\":{\"interface\":{\"eth0\":{\"chassis\":{\"tor-a\\u0085\":"
		      "{\"id\":{\"value\":\"a\"}}},\"port\":{\"id\":{\"value\":\"p\"}}}}}}",
		      &r),
		FLEET_E_MALFORMED);
	struct fleet_buf enc;
	fb_init(&enc);
	assert_int_equal(parse("{\"lldp\":{\"interface\":{\"eth0\":{\"chassis\":{\"tor-a\":"
			       "{\"id\":{\"value\":\"a\"}}},\"port\":{\"id\":{\"value\":"
			       "\"p\"}}}}}}",
			       &r),
			 0);
	assert_int_equal(fleet_network_report_encode(&r, &enc), FLEET_OK);
	fb_free(&enc);
}

static void ca_from_cmdline(void **st)
{
	(void)st;
	char *dir = make_temp_dir("cmdline"), cmd[2048], path[600];
	struct fleet_errctx ec = {0};
	struct fleet_buf pem;
	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 "
		 "-nodes -keyout k.pem -subj /CN=fleetd-ca -days 2 -outform DER -out ca.der "
		 ">/dev/null 2>&1 && printf 'BOOT_IMAGE=/vmlinuz fleet_ca=%%s quiet\\n' "
		 "\"$(base64 -w0 ca.der)\" >cmdline && printf 'ro fleet_ca=%%s\\n' "
		 "\"$(base64 -w0 ca.der | tr '+/' '-_' | tr -d =)\" >cmdline-url && "
		 "printf 'ro fleet_ca=AAAA\\n' >cmdline-bad && printf 'ro quiet\\n' >cmdline-none",
		 dir);
	assert_int_equal(system(cmd), 0);
	const char *good[] = {"cmdline", "cmdline-url"};
	for (int i = 0; i < 2; i++) {
		fb_init(&pem);
		snprintf(path, sizeof(path), "%s/%s", dir, good[i]);
		assert_int_equal(tink_ca_from_cmdline(path, &pem, &ec), FLEET_OK);
		assert_true(pem.len > 27);
		assert_memory_equal(pem.data, "-----BEGIN CERTIFICATE-----", 27);
		fb_free(&pem);
	}
	fb_init(&pem);
	snprintf(path, sizeof(path), "%s/cmdline-bad", dir);
	assert_int_equal(tink_ca_from_cmdline(path, &pem, &ec), FLEET_E_MALFORMED);
	assert_non_null(strstr(ec.detail, "not a DER certificate"));
	snprintf(path, sizeof(path), "%s/cmdline-none", dir);
	assert_int_equal(tink_ca_from_cmdline(path, &pem, &ec), FLEET_E_MALFORMED);
	assert_non_null(strstr(ec.detail, "no fleet_ca="));
	fb_free(&pem);
	rm_rf(dir);
	free(dir);
}

static void options(void **st)
{
	(void)st;
	struct tink_options o;
	char msg[300];
	char *ok[] = {"tink-attest", "--url", "https://fleetd:8443/", "--ca", "/ca.pem",
		      "--attempts", "3", NULL};
	unsetenv("TPM2TOOLS_TCTI");
	setenv("TCTI", "swtpm:port=2321", 1);
	assert_int_equal(tink_options_parse(7, ok, &o, msg, sizeof(msg)), 0);
	assert_string_equal(o.curl.base_url, "https://fleetd:8443");
	assert_string_equal(o.run.tcti, "swtpm:port=2321");
	assert_int_equal(o.curl.attempts, 3);
	tink_options_free(&o);
	setenv("TPM2TOOLS_TCTI", "mssim:port=2321", 1);
	assert_int_equal(tink_options_parse(7, ok, &o, msg, sizeof(msg)), 0);
	assert_string_equal(o.run.tcti, "mssim:port=2321");
	tink_options_free(&o);
	unsetenv("TPM2TOOLS_TCTI");
	unsetenv("TCTI");
	assert_int_equal(tink_options_parse(7, ok, &o, msg, sizeof(msg)), 0);
	assert_string_equal(o.run.tcti, "device:/dev/tpmrm0");
	tink_options_free(&o);

	char *http[] = {"tink-attest", "--url", "http://fleetd", "--ca", "/ca.pem", NULL};
	assert_int_equal(tink_options_parse(5, http, &o, msg, sizeof(msg)), TINK_EXIT_USAGE);
	tink_options_free(&o);
	char *noca[] = {"tink-attest", "--url", "https://fleetd", NULL};
	assert_int_equal(tink_options_parse(3, noca, &o, msg, sizeof(msg)), TINK_EXIT_USAGE);
	assert_non_null(strstr(msg, "CA"));
	tink_options_free(&o);
	char *zero[] = {"tink-attest", "--url", "https://f", "--ca", "c", "--attempts", "0", NULL};
	assert_int_equal(tink_options_parse(7, zero, &o, msg, sizeof(msg)), TINK_EXIT_USAGE);
	tink_options_free(&o);
}

/* output.h: a file written whole or not at all; a failure is the sentence
 * tink-attest prints, with the system's errno beside it. */
static void output_failure_in_context(void **st)
{
	(void)st;
	char *dir = make_temp_dir("tinkout");
	char missing[600], path[700], text[600];
	struct fleet_errctx ec = {0};
	assert_int_equal(tink_write_file(dir, "code", "abc", 3, 0600, &ec), FLEET_OK);
	snprintf(path, sizeof(path), "%s/code", dir);
	assert_int_equal(access(path, R_OK), 0);
	snprintf(missing, sizeof(missing), "%s/missing", dir);
	assert_int_equal(tink_write_file(missing, "code", "abc", 3, 0600, &ec), FLEET_E_IO);
	assert_int_equal(ec.sys_errno, ENOENT);
	snprintf(path, sizeof(path), "cannot create a file in %s: %s", missing, strerror(ENOENT));
	assert_string_equal(fleet_errctx_text(&ec, text, sizeof(text)), path);
	rm_rf(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sysfs_identity),
		cmocka_unit_test(lldp_shapes),
		cmocka_unit_test(ca_from_cmdline),
		cmocka_unit_test(options),
		cmocka_unit_test(output_failure_in_context),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
