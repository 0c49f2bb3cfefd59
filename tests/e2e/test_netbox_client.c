/*
 * test_netbox_client.c: fleetd's NetBox client (fleetd/inventory/netbox.c)
 * against the contract fake (tests/fakes/netbox_fake.py) over real TLS with
 * certificates this test mints. Skips (77) without python3 or openssl.
 *
 * Linked with -Wl,--wrap=reallocarray (tests/netbox.cmake): the client's
 * listing grows its device arrays with reallocarray, and the wrapper below
 * can make that fail, to see fleetd out of memory said as that and not as
 * NetBox being down. Nothing in the client knows.
 */
#include "tests/testutil.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "fleetd/inventory/json_view.h"
#include "fleetd/inventory/netbox.h"
#include "tests/e2e/netbox_harness.h"

#define V1 "0123456789abcdef0123456789abcdef01234567"
#define V1_RO "89abcdef0123456789abcdef0123456789abcdef"
/* valid tokens of users lacking one permission each */
#define V1_NOVIEW "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define V1_NOCHANGE "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define V1_NOLOG "cccccccccccccccccccccccccccccccccccccccc"
#define V2 "nbt_AbCdEf123456.s3cretS3cretS3cretS3cretS3cretS3cretS3c"
#define H1 "1111111111111111111111111111111111111111111111111111111111111111"
#define H2 "2222222222222222222222222222222222222222222222222222222222222222"
#define H3 "3333333333333333333333333333333333333333333333333333333333333333"
#define H4 "4444444444444444444444444444444444444444444444444444444444444444"

void *__real_reallocarray(void *p, size_t n, size_t size);
void *__wrap_reallocarray(void *p, size_t n, size_t size);

/* What fails: nothing, the listing's arrays (devices and malformed
 * records), or the reader's token array (json_view.c); told apart by the
 * element size, which differs between the three. */
enum { FAIL_NONE, FAIL_LIST, FAIL_READER };
static atomic_int fail_reallocarray;

void *__wrap_reallocarray(void *p, size_t n, size_t size)
{
	int f = atomic_load(&fail_reallocarray);
	if ((f == FAIL_LIST && (size == sizeof(struct fleet_inv_device) ||
				size == sizeof(struct fleet_inv_malformed))) ||
	    (f == FAIL_READER && size == sizeof(struct jv_tok))) {
		errno = ENOMEM;
		return NULL;
	}
	return __real_reallocarray(p, n, size);
}

static struct fleet_inventory *open_with(const char *base, const char *token, const char *ca,
					 long timeout_ms)
{
	struct fleet_errctx ec;
	struct fleet_netbox_config c = {.base_url = base, .token = token, .ca_file = ca,
					.timeout_ms = timeout_ms, .page_size = 50};
	struct fleet_inventory *inv = fleet_netbox_open(&c, &ec);
	if (!inv)
		fail_msg("fleet_netbox_open: %s", ec.detail);
	return inv;
}

static struct fleet_inventory *open_v1(void)
{
	return open_with(E.base, V1, E.ca, 5000);
}

#define DEV9 "{\"id\": 9, \"name\": \"w9\", \"serial\": \"SN-NOBIND\", \"status\": " \
	     "{\"value\": \"planned\", \"label\": \"Planned\"}, \"primary_ip4\": null, " \
	     "\"custom_fields\": {}}"

static void expect_invalid_get(struct fleet_inventory *inv, long id, const char *needle)
{
	struct fleet_inv_device d;
	struct fleet_errctx ec;
	assert_int_equal(inv->ops->get(inv, id, &d, &ec), FLEET_INV_INVALID);
	if (needle && !strstr(ec.detail, needle))
		fail_msg("error \"%s\" does not name %s", ec.detail, needle);
	print_message("refused: %s\n", ec.detail);
	assert_int_equal(d.id, 0);
}

static void write_seed(const char *path)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f,
		"{\"paginate_count\": 2, \"max_page_size\": 2,\n"
		" \"tokens\": {\"" V1 "\": {\"user\": \"fleetd\"}, \"" V2 "\": {\"user\": \"fleetd\"},\n"
		"            \"" V1_RO "\": {\"user\": \"reader\", \"write\": false},\n"
		"            \"" V1_NOVIEW "\": {\"user\": \"u1\", \"perms\": [\"dcim.change_device\",\n"
		"                                  \"core.view_objectchange\"]},\n"
		"            \"" V1_NOCHANGE "\": {\"user\": \"u2\", \"perms\": [\"dcim.view_device\",\n"
		"                                    \"core.view_objectchange\"]},\n"
		"            \"" V1_NOLOG "\": {\"user\": \"u3\", \"perms\": [\"dcim.view_device\",\n"
		"                                 \"dcim.change_device\"]}},\n"
		" \"custom_fields\": [\"class\", \"install_disk\", \"install_disk_serial\", \"bmc_type\",\n"
		"   \"tpm_version\", \"amt\", \"secure_boot_expected\", \"expected_port\",\n"
		"   \"approved_ek_hash\", \"approved_ek_hash_ecc\", \"ek_hash\", \"ek_hash_ecc\",\n"
		"   \"desired_action\", \"notes\"],\n"
		" \"devices\": [\n"
		"  {\"id\": 1, \"name\": \"w1\", \"serial\": \"SN-Alpha-01\", \"status\": \"planned\",\n"
		"   \"primary_ip4\": \"10.0.0.5/24\", \"created_by\": \"terraform\",\n"
		"   \"custom_fields\": {\"class\": \"worker\", \"install_disk\": \"/dev/nvme0n1\",\n"
		"     \"install_disk_serial\": \"S5GXNF0R123456\", \"bmc_type\": \"ipmi\",\n"
		"     \"tpm_version\": \"2.0\", \"amt\": true, \"secure_boot_expected\": false,\n"
		"     \"expected_port\": \"sw1:Ethernet12\", \"approved_ek_hash\": \"" H1 "\",\n"
		"     \"approved_ek_hash_ecc\": \"" H2 "\", \"ek_hash\": null,\n"
		"     \"desired_action\": \"provision\"}},\n"
		"  {\"id\": 2, \"name\": \"w2\", \"serial\": \"DUP-1\"},\n"
		"  {\"id\": 3, \"name\": \"w3\", \"serial\": \"dup-1\"},\n"
		"  {\"id\": 4, \"name\": \"w4\", \"serial\": \"SN-BIND\", \"created_by\": \"terraform\",\n"
		"   \"custom_fields\": {\"approved_ek_hash\": \"" H1 "\"}},\n"
		"  {\"id\": 5, \"name\": \"w5\", \"serial\": \"SN-5\"},\n"
		"  {\"id\": 6, \"name\": \"w6\", \"serial\": \"SN-6\"},\n"
		"  {\"id\": 7, \"name\": \"w7\", \"serial\": \"SN-7\"},\n"
		"  {\"id\": 8, \"name\": \"w8\", \"serial\": \"SN-WRITE\", \"status\": \"planned\",\n"
		"   \"primary_ip4\": \"10.0.0.8/24\", \"created_by\": \"terraform\",\n"
		"   \"custom_fields\": {\"class\": \"worker\", \"approved_ek_hash\": \"" H1 "\",\n"
		"     \"desired_action\": \"provision\"}},\n"
		"  {\"id\": 9, \"name\": \"w9\", \"serial\": \"SN-NOBIND\", \"created_by\": \"terraform\",\n"
		"   \"custom_fields\": {\"class\": \"worker\"}},\n"
		"  {\"id\": 10, \"name\": \"w10\", \"serial\": \"SN-ORDER\", \"created_by\": \"terraform\",\n"
		"   \"custom_fields\": {\"approved_ek_hash\": \"" H1 "\"}}\n"
		" ]}\n");
	fclose(f);
}

static int setup(void **st)
{
	nbf_setup(write_seed);
	return 0;
}

static int teardown(void **st)
{
	nbf_teardown();
	return 0;
}

static void test_open_refuses_bad_config(void **st)
{
	struct fleet_errctx ec;
	struct fleet_netbox_config c = {.base_url = "http://127.0.0.1:1", .token = V1};
	assert_null(fleet_netbox_open(&c, &ec));
	assert_non_null(strstr(ec.detail, "https"));
	c.base_url = "https://user:pw@netbox.example";
	assert_null(fleet_netbox_open(&c, &ec));
	c.base_url = "https://netbox.example";
	c.token = "not-a-token-but-a-secret";
	assert_null(fleet_netbox_open(&c, &ec));
	assert_null(strstr(ec.detail, "not-a-token-but-a-secret"));
	c.token = "nbt_key.sec ret";
	assert_null(fleet_netbox_open(&c, &ec));
}

static void test_find_by_serial_case_insensitive_with_all_fields(void **st)
{
	struct fleet_inventory *inv = open_v1();
	struct fleet_inv_device d;
	struct fleet_errctx ec;
	assert_int_equal(inv->ops->find_by_serial(inv, "sn-ALPHA-01", &d, &ec), FLEET_INV_OK);
	assert_int_equal(d.id, 1);
	assert_string_equal(d.name, "w1");
	assert_string_equal(d.serial, "SN-Alpha-01");
	assert_string_equal(d.status, "planned");
	assert_string_equal(d.primary_ip4, "10.0.0.5/24");
	assert_string_equal(d.class_name, "worker");
	assert_string_equal(d.install_disk, "/dev/nvme0n1");
	assert_string_equal(d.install_disk_serial, "S5GXNF0R123456");
	assert_string_equal(d.bmc_type, "ipmi");
	assert_string_equal(d.tpm_version, "2.0");
	assert_int_equal(d.amt, 1);
	assert_int_equal(d.secure_boot_expected, 0);
	assert_string_equal(d.expected_port, "sw1:Ethernet12");
	assert_string_equal(d.desired_action, "provision");
	assert_string_equal(d.approved_ek_hash, H1);
	assert_string_equal(d.approved_ek_hash_ecc, H2);
	assert_string_equal(d.ek_hash, "");
	assert_string_equal(d.ek_hash_ecc, "");
	/* the lookup went out as NetBox's serial filter, with the v1 scheme */
	json_t *s = nbf_state();
	json_t *log = json_object_get(s, "log");
	json_t *last = json_array_get(log, json_array_size(log) - 1);
	assert_non_null(strstr(json_string_value(json_object_get(last, "query")),
			       "serial=sn-ALPHA-01"));
	assert_string_equal(json_string_value(json_object_get(last, "scheme")), "Token");
	json_decref(s);
	/* unset booleans read as -1 */
	assert_int_equal(inv->ops->find_by_serial(inv, "SN-NOBIND", &d, &ec), FLEET_INV_OK);
	assert_int_equal(d.amt, -1);
	assert_int_equal(d.secure_boot_expected, -1);
	assert_string_equal(d.primary_ip4, "");
	inv->ops->close(inv);
}

static void test_find_refuses_ambiguous_and_unknown(void **st)
{
	struct fleet_inventory *inv = open_v1();
	struct fleet_inv_device d;
	struct fleet_errctx ec;
	assert_int_equal(inv->ops->find_by_serial(inv, "Dup-1", &d, &ec), FLEET_INV_AMBIGUOUS);
	assert_int_equal(d.id, 0);
	assert_non_null(strstr(ec.detail, "refusing to guess"));
	print_message("refused: %s\n", ec.detail);
	assert_int_equal(inv->ops->find_by_serial(inv, "SN-NONE", &d, &ec), FLEET_INV_NOT_FOUND);
	/* an empty serial would be no filter at all: not even asked */
	size_t before = nbf_log_len();
	assert_int_equal(inv->ops->find_by_serial(inv, "", &d, &ec), FLEET_INV_NOT_FOUND);
	assert_int_equal(nbf_log_len(), before);
	assert_int_equal(inv->ops->get(inv, 999, &d, &ec), FLEET_INV_NOT_FOUND);
	assert_int_equal(inv->ops->get(inv, 8, &d, &ec), FLEET_INV_OK);
	assert_string_equal(d.serial, "SN-WRITE");
	inv->ops->close(inv);
}

static void test_binding_change_author(void **st)
{
	struct fleet_inventory *inv = open_v1();
	struct fleet_inv_binding_change b;
	struct fleet_errctx ec;
	assert_int_equal(inv->ops->binding_change(inv, 4, &b, &ec), FLEET_INV_OK);
	assert_true(b.found);
	assert_string_equal(b.user, "terraform");
	/* a human editing another field does not become the binding's author */
	nbf_ctl("/_fake/change", "{\"device\": 4, \"user\": \"alice\", "
			     "\"custom_fields\": {\"class\": \"storage\"}}");
	assert_int_equal(inv->ops->binding_change(inv, 4, &b, &ec), FLEET_INV_OK);
	assert_string_equal(b.user, "terraform");
	/* a human changing the binding does */
	nbf_ctl("/_fake/change", "{\"device\": 4, \"user\": \"alice\", "
			     "\"custom_fields\": {\"approved_ek_hash_ecc\": \"" H3 "\"}}");
	assert_int_equal(inv->ops->binding_change(inv, 4, &b, &ec), FLEET_INV_OK);
	assert_string_equal(b.user, "alice");
	long alice_change = b.change_id;
	json_t *s = nbf_state();
	json_t *ch = json_object_get(s, "changes");
	assert_int_equal(json_integer_value(json_object_get(
				 json_array_get(ch, json_array_size(ch) - 1), "id")),
			 alice_change);
	json_decref(s);
	/* fleetd writing ek_hash is not a binding change */
	assert_int_equal(inv->ops->write_ek_hashes(inv, 4, H2, "", &ec), FLEET_INV_OK);
	assert_int_equal(inv->ops->binding_change(inv, 4, &b, &ec), FLEET_INV_OK);
	assert_string_equal(b.user, "alice");
	assert_int_equal(b.change_id, alice_change);
	/* a device whose binding was never set */
	assert_int_equal(inv->ops->binding_change(inv, 9, &b, &ec), FLEET_INV_OK);
	assert_false(b.found);
	assert_string_equal(b.user, "");
	inv->ops->close(inv);
}

static void test_binding_change_newest_by_time_not_by_order(void **st)
{
	struct fleet_inventory *inv = open_v1();
	struct fleet_inv_binding_change b;
	struct fleet_errctx ec;
	/* ids ascending: terraform (now), carol (2099), bob (2001) */
	nbf_ctl("/_fake/change", "{\"device\": 10, \"user\": \"carol\", \"time\": "
			     "\"2099-01-01T00:00:00Z\", \"custom_fields\": "
			     "{\"approved_ek_hash\": \"" H2 "\"}}");
	nbf_ctl("/_fake/change", "{\"device\": 10, \"user\": \"bob\", \"time\": "
			     "\"2001-01-01T00:00:00Z\", \"custom_fields\": "
			     "{\"approved_ek_hash\": \"" H3 "\"}}");
	nbf_ctl("/_fake/ignore_ordering", "{\"on\": true}");
	fleet_err r = inv->ops->binding_change(inv, 10, &b, &ec);
	nbf_ctl("/_fake/ignore_ordering", "{\"on\": false}");
	assert_int_equal(r, FLEET_INV_OK);
	assert_string_equal(b.user, "carol");
	assert_int_equal(b.when, 4070908800); /* 2099-01-01T00:00:00Z */
	inv->ops->close(inv);
}

static void test_write_ek_hashes_writes_only_those(void **st)
{
	struct fleet_inventory *inv = open_v1();
	struct fleet_errctx ec;
	json_t *before = nbf_state();
	assert_int_equal(inv->ops->write_ek_hashes(inv, 8, H4, "", &ec), FLEET_INV_OK);
	json_t *after = nbf_state();
	/* every other device is as it was */
	for (long id = 1; id <= 10; id++)
		if (id != 8)
			assert_true(json_equal(nbf_device(before, id), nbf_device(after, id)));
	json_t *d0 = json_deep_copy(nbf_device(before, 8));
	json_t *d1 = nbf_device(after, 8);
	json_t *cf0 = json_object_get(d0, "custom_fields");
	assert_string_equal(json_string_value(json_object_get(json_object_get(d1, "custom_fields"),
							      "ek_hash")), H4);
	assert_true(json_is_null(json_object_get(json_object_get(d1, "custom_fields"),
						 "ek_hash_ecc")));
	json_object_set_new(cf0, "ek_hash", json_string(H4));
	json_object_set_new(cf0, "ek_hash_ecc", json_null());
	assert_true(json_equal(d0, d1)); /* only those two changed */
	json_decref(d0);
	/* the PATCH carried nothing else */
	json_t *log = json_object_get(after, "log");
	json_t *req = json_array_get(log, json_array_size(log) - 1);
	assert_string_equal(json_string_value(json_object_get(req, "method")), "PATCH");
	assert_string_equal(json_string_value(json_object_get(req, "path")), "/api/dcim/devices/8/");
	json_t *body = json_loads(json_string_value(json_object_get(req, "body")), 0, NULL);
	assert_int_equal(json_object_size(body), 1);
	assert_int_equal(json_object_size(json_object_get(body, "custom_fields")), 2);
	json_decref(body);
	/* and NetBox logged it as fleetd's change */
	json_t *ch = json_object_get(after, "changes");
	json_t *last = json_array_get(ch, json_array_size(ch) - 1);
	assert_string_equal(json_string_value(json_object_get(last, "user_name")), "fleetd");
	assert_int_equal(json_integer_value(json_object_get(last, "changed_object_id")), 8);
	json_decref(before);
	json_decref(after);
	/* a malformed hash is refused before anything is sent */
	size_t n = nbf_log_len();
	assert_int_equal(inv->ops->write_ek_hashes(inv, 8, "ABCDEF", "", &ec), FLEET_INV_INVALID);
	assert_int_equal(inv->ops->write_ek_hashes(inv, 8, "", H1 "0", &ec), FLEET_INV_INVALID);
	assert_int_equal(nbf_log_len(), n);
	/* NetBox must answer with what was written, or the write did not happen */
	nbf_canned("/api/dcim/devices/8/", 200, "application/json",
	       "{\"id\": 8, \"name\": \"w8\", \"serial\": \"SN-WRITE\", \"status\": "
	       "{\"value\": \"planned\"}, \"custom_fields\": {\"ek_hash\": null}}");
	assert_int_equal(inv->ops->write_ek_hashes(inv, 8, H3, "", &ec), FLEET_INV_INVALID);
	assert_non_null(strstr(ec.detail, "other EK hashes"));
	inv->ops->close(inv);
}

/* err holds no control byte: NetBox's text is sanitized on the way in
 * (lib/sanitize.h; displayable UTF-8 passes). */
static void assert_printable(const char *s)
{
	for (; *s; s++)
		assert_true((unsigned char)*s >= 0x20 && (unsigned char)*s != 0x7f);
}

/* A refused PATCH says which field and why, whatever shape NetBox gives it. */
static void test_bad_write_names_the_field(void **st)
{
	struct fleet_inventory *inv = open_v1();
	struct fleet_errctx ec;
	/* an administrator gave ek_hash a validation regex the value misses:
	 * NetBox's model validation, rendered under "__all__" */
	nbf_ctl("/_fake/custom_field", "{\"name\": \"ek_hash\", \"validation_regex\": \"^0\"}");
	assert_int_equal(inv->ops->write_ek_hashes(inv, 8, H3, "", &ec), FLEET_INV_INVALID);
	print_message("refused: %s\n", ec.detail);
	assert_non_null(strstr(ec.detail, "HTTP 400: Invalid value for custom field 'ek_hash': "
					  "Value must match regex '^0'"));
	nbf_ctl("/_fake/custom_field", "{\"name\": \"ek_hash\"}");
	/* a custom field that does not exist (4.5.8 and later): the error is
	 * nested under custom_fields, then the field's name */
	nbf_ctl("/_fake/custom_field", "{\"name\": \"ek_hash_ecc\", \"delete\": true}");
	assert_int_equal(inv->ops->write_ek_hashes(inv, 8, H3, H4, &ec), FLEET_INV_INVALID);
	print_message("refused: %s\n", ec.detail);
	assert_non_null(strstr(ec.detail, "custom_fields.ek_hash_ecc: Custom field 'ek_hash_ecc' "
					  "does not exist for this object type."));
	nbf_ctl("/_fake/custom_field", "{\"name\": \"ek_hash_ecc\"}");
	/* the other shapes DRF renders: a list under the field, a list under
	 * the nested name */
	const char *p8 = "/api/dcim/devices/8/";
	nbf_canned(p8, 400, "application/json",
		   "{\"custom_fields\": [\"Invalid data format. Custom field data must be passed "
		   "as a dictionary mapping field names to their values.\"]}");
	assert_int_equal(inv->ops->write_ek_hashes(inv, 8, H3, "", &ec), FLEET_INV_INVALID);
	assert_non_null(strstr(ec.detail, "(HTTP 400: custom_fields: Invalid data format."));
	nbf_canned(p8, 400, "application/json",
		   "{\"custom_fields\": {\"ek_hash\": [\"Ensure this field has no more than 64 "
		   "characters.\"]}, \"status\": [\"\\\"x\\\" is not a valid choice.\"]}");
	assert_int_equal(inv->ops->write_ek_hashes(inv, 8, H3, "", &ec), FLEET_INV_INVALID);
	assert_non_null(strstr(ec.detail,
			       "custom_fields.ek_hash: Ensure this field has no more than 64 "
			       "characters.; status: \"x\" is not a valid choice."));
	/* NetBox's text is untrusted: control characters are escaped (\xNN),
	 * each message and the whole are capped, the rest counted */
	json_t *cf = json_object(), *body = json_object();
	char big[5000];
	memset(big, 'm', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	json_object_set_new(cf, "ek_hash", json_string("bad\n\x1b[31mred\xc3\xa9"));
	for (int i = 0; i < 8; i++) {
		char k[16];
		snprintf(k, sizeof(k), "f%d", i);
		json_object_set_new(cf, k, json_pack("[s]", big));
	}
	json_object_set_new(body, "custom_fields", cf);
	char *text = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	nbf_canned(p8, 400, "application/json", text);
	free(text);
	assert_int_equal(inv->ops->write_ek_hashes(inv, 8, H3, "", &ec), FLEET_INV_INVALID);
	print_message("refused: %s\n", ec.detail);
	assert_printable(ec.detail);
	assert_non_null(strstr(ec.detail, "custom_fields.ek_hash: bad\\x0A\\x1B[31mred\xc3\xa9"));
	assert_non_null(strstr(ec.detail, "[+4879]")); /* a capped message says how much is left */
	assert_non_null(strstr(ec.detail, "(+6 more)"));
	assert_true(strlen(ec.detail) < 500);
	/* a body nested deeper than any NetBox error is not walked to the end */
	nbf_canned(p8, 400, "application/json",
		   "{\"a\": {\"b\": {\"c\": {\"d\": {\"e\": {\"f\": \"deep\"}}}}}}");
	assert_int_equal(inv->ops->write_ek_hashes(inv, 8, H3, "", &ec), FLEET_INV_INVALID);
	assert_null(strstr(ec.detail, "deep"));
	assert_non_null(strstr(ec.detail, "HTTP 400"));
	inv->ops->close(inv);
}

static void test_set_status(void **st)
{
	struct fleet_inventory *inv = open_with(E.base, V2, E.ca, 5000);
	struct fleet_inv_device d;
	struct fleet_errctx ec;
	assert_int_equal(inv->ops->set_status(inv, 8, "active", &ec), FLEET_INV_OK);
	json_t *s = nbf_state();
	assert_string_equal(json_string_value(json_object_get(nbf_device(s, 8), "status")),
			    "active");
	json_t *log = json_object_get(s, "log");
	json_t *req = json_array_get(log, json_array_size(log) - 1);
	assert_string_equal(json_string_value(json_object_get(req, "body")),
			    "{\"status\":\"active\"}");
	assert_string_equal(json_string_value(json_object_get(req, "scheme")), "Bearer");
	json_t *ch = json_object_get(s, "changes");
	assert_string_equal(json_string_value(json_object_get(
				    json_array_get(ch, json_array_size(ch) - 1), "user_name")),
			    "fleetd");
	json_decref(s);
	assert_int_equal(inv->ops->get(inv, 8, &d, &ec), FLEET_INV_OK);
	assert_string_equal(d.status, "active");
	assert_string_equal(d.ek_hash, H4);
	/* NetBox refuses a status it does not know: its reason comes back */
	assert_int_equal(inv->ops->set_status(inv, 8, "bogus", &ec), FLEET_INV_INVALID);
	assert_non_null(strstr(ec.detail, "not a valid choice"));
	assert_int_equal(inv->ops->set_status(inv, 8, "Active; DROP", &ec), FLEET_INV_INVALID);
	nbf_canned("/api/dcim/devices/8/", 200, "application/json",
	       "{\"id\": 8, \"name\": \"w8\", \"serial\": \"SN-WRITE\", \"status\": "
	       "{\"value\": \"active\"}, \"custom_fields\": {}}");
	assert_int_equal(inv->ops->set_status(inv, 8, "failed", &ec), FLEET_INV_INVALID);
	inv->ops->close(inv);
}

static void test_list_follows_pagination(void **st)
{
	struct fleet_inventory *inv = open_with(E.base, V2, E.ca, 5000);
	struct fleet_inv_device *v = NULL;
	struct fleet_inv_malformed *bad = NULL;
	size_t n = 0, n_bad = 0, pages = 0, i;
	struct fleet_errctx ec;
	size_t before = nbf_log_len();
	assert_int_equal(inv->ops->list(inv, &v, &n, &bad, &n_bad, &ec), FLEET_INV_OK);
	assert_int_equal(n, 10);
	assert_int_equal(n_bad, 0);
	assert_null(bad); /* none malformed: nothing handed out */
	bool seen[11] = {false};
	for (i = 0; i < n; i++) {
		assert_true(v[i].id >= 1 && v[i].id <= 10);
		assert_false(seen[v[i].id]);
		seen[v[i].id] = true;
	}
	free(v);
	json_t *s = nbf_state();
	json_t *req;
	json_array_foreach(json_object_get(s, "log"), i, req)
		if (i >= before && !strcmp(json_string_value(json_object_get(req, "path")),
					   "/api/dcim/devices/"))
			pages++;
	json_decref(s);
	assert_int_equal(pages, 5); /* MAX_PAGE_SIZE 2 */
	inv->ops->close(inv);
}

/*
 * A listing with allocations of kind `mode` failing: NOMEM, said as what it
 * is (want in the detail), never UNAVAILABLE (NetBox answered); nothing is
 * handed out, and the next listing, with memory again, is whole. What the
 * refusal said goes to detail.
 */
static void listing_without_memory(struct fleet_inventory *inv, int mode, const char *want,
				   char *detail, size_t detail_len)
{
	struct fleet_inv_device *v = NULL;
	struct fleet_inv_malformed *bad = NULL;
	size_t n = 0, n_bad = 0;
	struct fleet_errctx ec;
	atomic_store(&fail_reallocarray, mode);
	fleet_err r = inv->ops->list(inv, &v, &n, &bad, &n_bad, &ec);
	atomic_store(&fail_reallocarray, FAIL_NONE);
	print_message("refused: %s\n", ec.detail);
	snprintf(detail, detail_len, "%s", ec.detail);
	assert_int_equal(r, FLEET_INV_NOMEM);
	assert_string_equal(fleet_err_str(r), "out-of-memory");
	assert_non_null(strstr(ec.detail, want));
	assert_null(v);
	assert_null(bad);
	assert_int_equal(n + n_bad, 0);
	assert_int_equal(inv->ops->list(inv, &v, &n, &bad, &n_bad, &ec), FLEET_INV_OK);
	assert_int_equal(n, 10);
	free(v);
	free(bad);
}

/* fleetd out of memory growing the listing's arrays: NetBox is not named. */
static void test_out_of_memory_is_not_netbox_down(void **st)
{
	struct fleet_inventory *inv = open_v1();
	char detail[sizeof(((struct fleet_errctx *)0)->detail)];
	listing_without_memory(inv, FAIL_LIST, "out of memory listing devices", detail,
			       sizeof(detail));
	assert_null(strstr(detail, "NetBox"));
	inv->ops->close(inv);
}

/* fleetd out of memory reading an answer (json_view.c's token array):
 * NOMEM, said as fleetd's own, for a listing and a single GET alike. */
static void test_out_of_memory_reading_an_answer(void **st)
{
	struct fleet_inventory *inv = open_v1();
	struct fleet_inv_device d;
	struct fleet_errctx ec;
	char detail[sizeof(ec.detail)];
	listing_without_memory(inv, FAIL_READER, "out of memory reading NetBox's answer to GET",
			       detail, sizeof(detail));
	atomic_store(&fail_reallocarray, FAIL_READER);
	fleet_err g = inv->ops->get(inv, 1, &d, &ec);
	atomic_store(&fail_reallocarray, FAIL_NONE);
	assert_int_equal(g, FLEET_INV_NOMEM);
	assert_string_equal(ec.detail, "out of memory reading NetBox's answer to GET");
	assert_int_equal(inv->ops->get(inv, 1, &d, &ec), FLEET_INV_OK);
	inv->ops->close(inv);
}

/* Requests after the first `before` of the fake's log to path; how many of
 * them came through the prefix-stripping proxy. */
static size_t log_count(size_t before, const char *path, size_t *proxied)
{
	json_t *s = nbf_log(), *req;
	size_t i, n = 0;
	if (proxied)
		*proxied = 0;
	json_array_foreach(json_object_get(s, "log"), i, req) {
		if (i < before || strcmp(json_string_value(json_object_get(req, "path")), path))
			continue;
		n++;
		if (proxied && json_is_true(json_object_get(req, "proxied")))
			(*proxied)++;
	}
	json_decref(s);
	return n;
}

/* Behind a reverse proxy that maps https://host/netbox/ to NetBox's root,
 * NetBox's next links lack /netbox: the walk follows them under base_url's
 * prefix, and still refuses a link that leaves the endpoint. */
static void test_next_links_behind_a_prefix_stripping_proxy(void **st)
{
	char base[96];
	struct fleet_errctx ec;
	struct fleet_inv_device *v = NULL;
	struct fleet_inv_malformed *bad = NULL;
	size_t n = 0, n_bad = 0, proxied = 0;
	snprintf(base, sizeof(base), "%s/netbox", E.base);
	nbf_ctl("/_fake/proxy", "{\"strip_prefix\": \"/netbox\"}");
	struct fleet_inventory *inv = open_with(base, V1, E.ca, 5000);
	size_t before = nbf_log_len();
	fleet_err r = inv->ops->list(inv, &v, &n, &bad, &n_bad, &ec);
	if (r != FLEET_INV_OK)
		fail_msg("listing behind the proxy: %s", ec.detail);
	assert_int_equal(n + n_bad, 10);
	free(v);
	free(bad);
	assert_int_equal(log_count(before, "/api/dcim/devices/", &proxied), 5);
	assert_int_equal(proxied, 5); /* every page asked through the prefix */
	/* a link naming another host is still asked of base_url, prefix kept */
	nbf_canned("/api/dcim/devices/", 200, "application/json",
		   "{\"count\": 10, \"previous\": null, \"next\": \"https://evil.invalid:8443"
		   "/api/dcim/devices/?exclude=config_context&limit=2&offset=2\", \"results\": ["
		   DEV9 "]}");
	before = nbf_log_len();
	assert_int_equal(inv->ops->list(inv, &v, &n, &bad, &n_bad, &ec), FLEET_INV_OK);
	free(v);
	free(bad);
	assert_int_equal(log_count(before, "/api/dcim/devices/", &proxied), 5);
	assert_int_equal(proxied, 5);
	/* links that leave the endpoint, with or without a prefix */
	static const char *const away[] = {
		"https://127.0.0.1/api/users/tokens/?limit=2&offset=2",
		"https://127.0.0.1/netbox/api/users/tokens/?limit=2&offset=2",
		"https://127.0.0.1/api/dcim/devices/1/api/dcim/devices/?limit=2&offset=2",
		"https://127.0.0.1/api/dcim/devices/../../users/tokens/?limit=2&offset=2",
		"https://127.0.0.1/netbox/dcim/devices/?limit=2&offset=2",
		"https://127.0.0.1/api/dcim/devices/",
	};
	for (size_t i = 0; i < sizeof(away) / sizeof(away[0]); i++) {
		char body[512];
		snprintf(body, sizeof(body), "{\"count\": 3, \"previous\": null, \"next\": \"%s\", "
			 "\"results\": [" DEV9 "]}", away[i]);
		nbf_canned("/api/dcim/devices/", 200, "application/json", body);
		assert_int_equal(inv->ops->list(inv, &v, &n, &bad, &n_bad, &ec), FLEET_INV_INVALID);
		assert_null(v);
		assert_non_null(strstr(ec.detail, "next page link"));
	}
	inv->ops->close(inv);
	nbf_ctl("/_fake/proxy", "{\"strip_prefix\": \"\"}");
}

/* The TCP connections the fake's log shows for requests after the first
 * `before`. */
static size_t connections_since(size_t before, size_t *requests)
{
	json_t *s = nbf_log(), *req;
	long ids[64];
	size_t i, n = 0;
	*requests = 0;
	json_array_foreach(json_object_get(s, "log"), i, req) {
		if (i < before)
			continue;
		long c = (long)json_integer_value(json_object_get(req, "conn"));
		bool known = false;
		for (size_t k = 0; k < n; k++)
			known = known || ids[k] == c;
		if (!known && n < 64)
			ids[n++] = c;
		(*requests)++;
	}
	json_decref(s);
	return n;
}

struct getter {
	struct fleet_inventory *inv;
	int ok;
};

static void *get_many(void *arg)
{
	struct getter *g = arg;
	for (int i = 0; i < 10; i++) {
		struct fleet_inv_device d;
		struct fleet_errctx ec;
		long id = 1 + i % 10;
		if (g->inv->ops->get(g->inv, id, &d, &ec) != FLEET_INV_INVALID && d.id == id)
			g->ok++;
	}
	return NULL;
}

/* A pass's pages go over one TLS connection, not one handshake each; calls
 * from several threads at once still work, each on a connection of its own. */
static void test_a_listing_reuses_one_connection(void **st)
{
	struct fleet_inventory *inv = open_v1();
	struct fleet_inv_device *v = NULL, d;
	struct fleet_inv_malformed *bad = NULL;
	struct fleet_inv_binding_change b;
	struct fleet_netbox_stats stats;
	size_t n = 0, n_bad = 0, requests;
	struct fleet_errctx ec;
	size_t before = nbf_log_len();
	assert_int_equal(inv->ops->list(inv, &v, &n, &bad, &n_bad, &ec), FLEET_INV_OK);
	free(v);
	free(bad);
	assert_int_equal(inv->ops->binding_change(inv, 4, &b, &ec), FLEET_INV_OK);
	assert_int_equal(inv->ops->get(inv, 1, &d, &ec), FLEET_INV_OK);
	assert_int_equal(connections_since(before, &requests), 1);
	assert_true(requests >= 7); /* 5 pages, the change log's pages, the device */
	fleet_netbox_stats(inv, &stats);
	assert_int_equal(stats.connections, 1);
	assert_int_equal(stats.requests, requests);
	assert_true(stats.bytes > 0);
	/* four threads at once */
	pthread_t t[4];
	struct getter g[4];
	for (int i = 0; i < 4; i++) {
		g[i] = (struct getter){.inv = inv};
		assert_int_equal(pthread_create(&t[i], NULL, get_many, &g[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(g[i].ok, 10);
	}
	fleet_netbox_stats(inv, &stats);
	assert_int_equal(stats.requests, requests + 40);
	assert_true(stats.connections >= 1 && stats.connections <= 5);
	print_message("%llu requests over %llu connections\n", stats.requests, stats.connections);
	inv->ops->close(inv);
	/* the stats of an inventory that is not NetBox's are zero, not a crash */
	struct fleet_inventory other = {.ops = NULL};
	fleet_netbox_stats(&other, &stats);
	assert_int_equal(stats.requests, 0);
}

/* Give device id a "notes" custom field of n bytes (0: clear it). */
static void set_notes(long id, size_t n)
{
	json_t *cf = json_object();
	if (n) {
		char *v = malloc(n + 1);
		assert_non_null(v);
		memset(v, 'n', n);
		v[n] = '\0';
		json_object_set_new(cf, "notes", json_string(v));
		free(v);
	} else {
		json_object_set_new(cf, "notes", json_null());
	}
	json_t *req = json_pack("{s:I, s:s, s:o}", "device", (json_int_t)id, "user", "admin",
				"custom_fields", cf);
	char *text = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	nbf_ctl("/_fake/change", text);
	free(text);
}

/* A page over the response cap is asked again with half the limit from the
 * same offset; one object over the cap alone still fails, and says so. */
static void test_a_page_over_the_cap_is_asked_in_halves(void **st)
{
	struct fleet_inventory *inv = open_with(E.base, V1, E.ca, 20000);
	struct fleet_inv_device *v = NULL;
	struct fleet_inv_malformed *bad = NULL;
	struct fleet_netbox_stats s0, s1;
	size_t n = 0, n_bad = 0;
	struct fleet_errctx ec;
	/* w2 and w3 share the second page (by name: w1, w10, w2, w3, ...):
	 * 2 x 5 MiB is over 8 MiB, each alone is not */
	set_notes(2, 5u << 20);
	set_notes(3, 5u << 20);
	fleet_netbox_stats(inv, &s0);
	size_t before = nbf_log_len();
	fleet_err r = inv->ops->list(inv, &v, &n, &bad, &n_bad, &ec);
	if (r != FLEET_INV_OK)
		fail_msg("listing with big devices: %s", ec.detail);
	assert_int_equal(n + n_bad, 10);
	bool seen2 = false, seen3 = false;
	for (size_t i = 0; i < n; i++) {
		seen2 = seen2 || v[i].id == 2;
		seen3 = seen3 || v[i].id == 3;
	}
	assert_true(seen2 && seen3);
	free(v);
	free(bad);
	fleet_netbox_stats(inv, &s1);
	assert_int_equal(s1.smaller_pages - s0.smaller_pages, 1);
	/* the page was asked again from the same offset with limit=1 */
	json_t *s = nbf_log();
	json_t *second = json_array_get(json_object_get(s, "log"), before + 1);
	json_t *third = json_array_get(json_object_get(s, "log"), before + 2);
	const char *q2 = json_string_value(json_object_get(second, "query"));
	const char *q3 = json_string_value(json_object_get(third, "query"));
	print_message("over the cap: %s, then: %s\n", q2, q3);
	assert_non_null(strstr(q2, "offset=2"));
	assert_non_null(strstr(q3, "offset=2"));
	assert_non_null(strstr(q3, "limit=1"));
	assert_null(strstr(q3, "limit=2"));
	json_decref(s);
	/* one device over the cap alone */
	set_notes(3, 0);
	set_notes(2, 9u << 20);
	assert_int_equal(inv->ops->list(inv, &v, &n, &bad, &n_bad, &ec), FLEET_INV_INVALID);
	print_message("refused: %s\n", ec.detail);
	assert_null(v);
	assert_non_null(strstr(ec.detail,
			       "single object of /api/dcim/devices/ (at offset 2) is over "
			       "8388608 bytes"));
	set_notes(2, 0);
	/* the change log holds the 5 and 9 MiB values: out of the way of the
	 * state dumps of the tests after this one */
	nbf_ctl("/_fake/purge", "{\"device\": 2}");
	nbf_ctl("/_fake/purge", "{\"device\": 3}");
	inv->ops->close(inv);
}

#define FIELDS "fields=id,name,serial,status,primary_ip4,custom_fields"

/* The query of the fake log's last request. */
static char *last_query(void)
{
	json_t *s = nbf_log();
	json_t *log = json_object_get(s, "log");
	char *q = strdup(json_string_value(
		json_object_get(json_array_get(log, json_array_size(log) - 1), "query")));
	json_decref(s);
	return q;
}

static void assert_asks_fields(void)
{
	char *q = last_query(), *c;
	while ((c = strstr(q, "%2C"))) { /* NetBox's next links encode the commas */
		*c = ',';
		memmove(c + 1, c + 3, strlen(c + 3) + 1);
	}
	if (!strstr(q, FIELDS) || !strstr(q, "exclude=config_context"))
		fail_msg("device read without fields=: %s", q);
	free(q);
}

/* Devices are read with fields= (only what fleetd reads); a NetBox that
 * ignores it still works and is noticed; one that honours it but leaves out
 * a field asked for is not read as "unset". */
static void test_device_reads_ask_only_for_the_fields_read(void **st)
{
	struct fleet_inventory *inv = open_v1();
	struct fleet_inv_device d, *v = NULL, *w = NULL;
	struct fleet_inv_malformed *bad = NULL;
	struct fleet_netbox_stats s0, s1, s2;
	size_t n = 0, n_bad = 0, m = 0, m_bad = 0;
	struct fleet_errctx ec;
	fleet_netbox_stats(inv, &s0);
	assert_int_equal(inv->ops->get(inv, 1, &d, &ec), FLEET_INV_OK);
	assert_asks_fields();
	assert_string_equal(d.primary_ip4, "10.0.0.5/24");
	assert_string_equal(d.approved_ek_hash, H1);
	assert_int_equal(inv->ops->find_by_serial(inv, "SN-Alpha-01", &d, &ec), FLEET_INV_OK);
	assert_asks_fields();
	assert_int_equal(inv->ops->list(inv, &v, &n, &bad, &n_bad, &ec), FLEET_INV_OK);
	assert_asks_fields();
	free(bad);
	fleet_netbox_stats(inv, &s1);
	assert_int_equal(s1.fields_ignored, s0.fields_ignored); /* only what was asked */
	/* a NetBox that ignores fields= (before 4.0): the same devices, more bytes */
	nbf_ctl("/_fake/ignore_fields", "{\"on\": true}");
	assert_int_equal(inv->ops->list(inv, &w, &m, &bad, &m_bad, &ec), FLEET_INV_OK);
	free(bad);
	fleet_netbox_stats(inv, &s2);
	nbf_ctl("/_fake/ignore_fields", "{\"on\": false}");
	assert_int_equal(m, n);
	assert_int_equal(m_bad, n_bad);
	assert_memory_equal(v, w, n * sizeof(*v));
	assert_int_equal(s2.fields_ignored - s1.fields_ignored, n + n_bad);
	/* s0..s1 also holds a get and a lookup: three device answers more */
	unsigned long long with = s1.bytes - s0.bytes, whole = s2.bytes - s1.bytes;
	print_message("listing of %zu devices: %llu bytes with fields=, %llu without\n", n + n_bad,
		      with, whole);
	assert_true(whole > 2 * with);
	free(v);
	free(w);
	/* honoured, but a field asked for is not there: missing, not unset */
	nbf_canned("/api/dcim/devices/1/", 200, "application/json",
		   "{\"id\": 1, \"name\": \"w1\", \"serial\": \"SN-Alpha-01\", \"status\": "
		   "{\"value\": \"planned\"}, \"custom_fields\": {}}");
	expect_invalid_get(inv, 1, "left out primary_ip4");
	nbf_canned("/api/dcim/devices/", 200, "application/json",
		   "{\"count\": 2, \"next\": null, \"previous\": null, \"results\": [" DEV9 ", "
		   "{\"id\": 7, \"serial\": \"SN-7\", \"status\": {\"value\": \"planned\"}, "
		   "\"primary_ip4\": null, \"custom_fields\": {}}]}");
	assert_int_equal(inv->ops->list(inv, &v, &n, &bad, &n_bad, &ec), FLEET_INV_OK);
	assert_int_equal(n, 1);
	assert_int_equal(n_bad, 1);
	assert_int_equal(bad[0].id, 7);
	assert_string_equal(bad[0].reason, "name:missing");
	free(v);
	free(bad);
	inv->ops->close(inv);
}

#define FLEET_10K 10000

/* A fleet as folly's Terraform declares it: every custom field set. */
static void write_10k_seed(const char *path)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "{\"paginate_count\": 50, \"max_page_size\": 1000,\n"
		   " \"tokens\": {\"" V1 "\": {\"user\": \"fleetd\"}},\n"
		   " \"custom_fields\": [\"class\", \"install_disk\", \"install_disk_serial\", "
		   "\"bmc_type\", \"tpm_version\", \"amt\", \"secure_boot_expected\", "
		   "\"expected_port\", \"approved_ek_hash\", \"approved_ek_hash_ecc\", \"ek_hash\", "
		   "\"ek_hash_ecc\", \"desired_action\"],\n \"devices\": [\n");
	for (int i = 1; i <= FLEET_10K; i++)
		fprintf(f, "%s  {\"id\": %d, \"name\": \"w%05d\", \"serial\": \"SN-%08d\", "
			   "\"status\": \"%s\", \"primary_ip4\": \"10.%d.%d.%d/16\", "
			   "\"created_by\": \"terraform\", \"custom_fields\": {\"class\": \"worker\", "
			   "\"install_disk\": \"/dev/nvme0n1\", \"install_disk_serial\": "
			   "\"S5GXNF0R%06d\", \"bmc_type\": \"ipmi\", \"tpm_version\": \"2.0\", "
			   "\"amt\": false, \"secure_boot_expected\": true, \"expected_port\": "
			   "\"sw%d:Ethernet%d\", \"approved_ek_hash\": \"%064x\", "
			   "\"approved_ek_hash_ecc\": \"%064x\", \"ek_hash\": \"%064x\", "
			   "\"ek_hash_ecc\": \"%064x\", \"desired_action\": \"provision\"}}",
			i > 1 ? ",\n" : "", i, i, i, i % 10 ? "active" : "planned", i / 65536,
			(i / 256) % 256, i % 256, i, i / 48, i % 48, i, i + 1, i, i + 1);
	fprintf(f, "\n ]}\n");
	fclose(f);
}

/* The figures docs/netbox.md quotes: a pass's listing of 10,000 devices
 * with fields= and without (a NetBox that ignores it sends what a client
 * not asking gets), and the connections it takes. */
static void test_fields_cut_a_10k_listing(void **st)
{
	char seed[600], base[64], saved[64];
	struct fleet_errctx ec;
	struct fleet_netbox_stats s0, s1, s2;
	struct fleet_inv_device *v = NULL;
	struct fleet_inv_malformed *bad = NULL;
	size_t n = 0, n_bad = 0;
	snprintf(seed, sizeof(seed), "%s/seed-10k.json", E.dir);
	write_10k_seed(seed);
	pid_t pid = nbf_start_seed(E.cert, E.key, seed, base, sizeof(base));
	struct fleet_netbox_config c = {.base_url = base, .token = V1, .ca_file = E.ca,
					.timeout_ms = 20000};
	struct fleet_inventory *inv = fleet_netbox_open(&c, &ec);
	assert_non_null(inv);
	fleet_netbox_stats(inv, &s0);
	assert_int_equal(inv->ops->list(inv, &v, &n, &bad, &n_bad, &ec), FLEET_INV_OK);
	assert_int_equal(n, FLEET_10K);
	assert_int_equal(n_bad, 0);
	free(v);
	fleet_netbox_stats(inv, &s1);
	memcpy(saved, E.base, sizeof(saved));
	memcpy(E.base, base, sizeof(E.base));
	nbf_ctl("/_fake/ignore_fields", "{\"on\": true}");
	memcpy(E.base, saved, sizeof(E.base));
	assert_int_equal(inv->ops->list(inv, &v, &n, &bad, &n_bad, &ec), FLEET_INV_OK);
	assert_int_equal(n, FLEET_10K);
	free(v);
	fleet_netbox_stats(inv, &s2);
	inv->ops->close(inv);
	nbf_stop(pid);
	unsigned long long with = s1.bytes - s0.bytes, whole = s2.bytes - s1.bytes;
	print_message("10000 devices: %llu bytes with fields=, %llu without (%.2fx); "
		      "%llu pages over %llu connection(s)\n",
		      with, whole, (double)whole / (double)with, s1.requests - s0.requests,
		      s1.connections - s0.connections);
	assert_true(2 * whole > 5 * with); /* over 2.5x */
	assert_int_equal(s1.requests - s0.requests, FLEET_10K / 100);
	assert_int_equal(s1.connections - s0.connections, 1);
}

static void test_bad_tokens_are_unavailable(void **st)
{
	struct fleet_inv_device d;
	struct fleet_errctx ec;
	struct fleet_inventory *inv =
		open_with(E.base, "ffffffffffffffffffffffffffffffffffffffff", E.ca, 5000);
	assert_int_equal(inv->ops->find_by_serial(inv, "SN-Alpha-01", &d, &ec),
			 FLEET_INV_UNAVAILABLE);
	assert_non_null(strstr(ec.detail, "Invalid v1 token"));
	assert_non_null(strstr(ec.detail, "refused fleetd's token"));
	print_message("refused: %s\n", ec.detail);
	assert_null(strstr(ec.detail, "ffffffffff"));
	inv->ops->close(inv);
	inv = open_with(E.base, "nbt_AbCdEf123456.wrongwrongwrong", E.ca, 5000);
	assert_int_equal(inv->ops->get(inv, 1, &d, &ec), FLEET_INV_UNAVAILABLE);
	assert_non_null(strstr(ec.detail, "Invalid v2 token"));
	assert_null(strstr(ec.detail, "wrongwrong"));
	inv->ops->close(inv);
	/* a read-only token may read but its write is refused, and said so */
	inv = open_with(E.base, V1_RO, E.ca, 5000);
	assert_int_equal(inv->ops->get(inv, 1, &d, &ec), FLEET_INV_OK);
	assert_int_equal(inv->ops->set_status(inv, 1, "active", &ec), FLEET_INV_UNAVAILABLE);
	assert_non_null(strstr(ec.detail, "HTTP 403"));
	inv->ops->close(inv);
}

static void expect_denied(fleet_err r, const char *err, const char *perm)
{
	print_message("refused: %s\n", err);
	assert_int_equal(r, FLEET_INV_UNAVAILABLE);
	assert_non_null(strstr(err, "HTTP 403"));
	assert_non_null(strstr(err, perm));
	assert_non_null(strstr(err, "lacks"));
	assert_null(strstr(err, "token (HTTP")); /* not a token refusal */
}

/* A 403 of a valid token lacking a permission names the permission; a bad
 * token is a token problem; a 403 in no NetBox words is neither. */
static void test_permission_refusals_name_the_permission(void **st)
{
	struct fleet_inv_device d, *v = NULL;
	struct fleet_inv_malformed *bad = NULL;
	struct fleet_inv_binding_change b;
	size_t n = 0, n_bad = 0;
	struct fleet_errctx ec;
	struct fleet_inventory *inv = open_with(E.base, V1_NOVIEW, E.ca, 5000);
	expect_denied(inv->ops->list(inv, &v, &n, &bad, &n_bad, &ec), ec.detail,
		      "dcim.view_device permission (HTTP 403: You do not have permission");
	assert_null(v);
	expect_denied(inv->ops->get(inv, 1, &d, &ec), ec.detail, "dcim.view_device");
	expect_denied(inv->ops->find_by_serial(inv, "SN-5", &d, &ec), ec.detail,
		      "dcim.view_device");
	inv->ops->close(inv);
	inv = open_with(E.base, V1_NOCHANGE, E.ca, 5000);
	assert_int_equal(inv->ops->get(inv, 8, &d, &ec), FLEET_INV_OK);
	expect_denied(inv->ops->set_status(inv, 8, "active", &ec), ec.detail, "dcim.change_device");
	expect_denied(inv->ops->write_ek_hashes(inv, 8, H3, "", &ec), ec.detail,
		      "dcim.change_device");
	inv->ops->close(inv);
	inv = open_with(E.base, V1_NOLOG, E.ca, 5000);
	expect_denied(inv->ops->binding_change(inv, 4, &b, &ec), ec.detail,
		      "core.view_objectchange");
	assert_false(b.found);
	inv->ops->close(inv);
	/* a token that may not write gets the same words from NetBox */
	inv = open_with(E.base, V1_RO, E.ca, 5000);
	expect_denied(inv->ops->set_status(inv, 8, "active", &ec), ec.detail,
		      "dcim.change_device permission, or its token is not write-enabled");
	inv->ops->close(inv);
	/* the token's own refusals stay token problems */
	inv = open_v1();
	static const char *const token_words[] = {
		"{\"detail\": \"Authentication credentials were not provided.\"}",
		"{\"detail\": \"Token expired\"}",
		"{\"detail\": \"Source IP 192.0.2.7 is not permitted to authenticate using this "
		"token.\"}",
	};
	for (size_t i = 0; i < 3; i++) {
		nbf_canned("/api/dcim/devices/1/", 403, "application/json", token_words[i]);
		assert_int_equal(inv->ops->get(inv, 1, &d, &ec), FLEET_INV_UNAVAILABLE);
		print_message("refused: %s\n", ec.detail);
		assert_non_null(strstr(ec.detail, "refused fleetd's token (HTTP 403: "));
		assert_null(strstr(ec.detail, "permission"));
	}
	/* a 403 NetBox did not word: a proxy's page */
	nbf_canned("/api/dcim/devices/1/", 403, "text/html", "<html>403 Forbidden</html>");
	assert_int_equal(inv->ops->get(inv, 1, &d, &ec), FLEET_INV_UNAVAILABLE);
	print_message("refused: %s\n", ec.detail);
	assert_non_null(strstr(ec.detail, "proxy"));
	assert_null(strstr(ec.detail, "lacks"));
	inv->ops->close(inv);
}

static void test_server_errors_are_unavailable(void **st)
{
	struct fleet_inventory *inv = open_v1();
	struct fleet_inv_device d, *v = NULL;
	struct fleet_inv_binding_change b;
	struct fleet_inv_malformed *bad = NULL;
	size_t n = 7, n_bad = 7;
	struct fleet_errctx ec;
	nbf_ctl("/_fake/fail", "{\"status\": 503}");
	assert_int_equal(inv->ops->find_by_serial(inv, "SN-Alpha-01", &d, &ec),
			 FLEET_INV_UNAVAILABLE);
	assert_non_null(strstr(ec.detail, "HTTP 503"));
	nbf_ctl("/_fake/fail", "{\"status\": 500}");
	assert_int_equal(inv->ops->binding_change(inv, 4, &b, &ec), FLEET_INV_UNAVAILABLE);
	assert_false(b.found);
	/* a failure on a later page fails the whole listing */
	nbf_ctl("/_fake/fail", "{\"status\": 502, \"after\": 2}");
	assert_int_equal(inv->ops->list(inv, &v, &n, &bad, &n_bad, &ec), FLEET_INV_UNAVAILABLE);
	assert_null(v);
	assert_int_equal(n, 0);
	assert_null(bad);
	assert_int_equal(n_bad, 0);
	/* and once NetBox is back, so is the answer */
	assert_int_equal(inv->ops->find_by_serial(inv, "SN-Alpha-01", &d, &ec), FLEET_INV_OK);
	inv->ops->close(inv);
}

static long ms_since(const struct timespec *t0)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000L + (t.tv_nsec - t0->tv_nsec) / 1000000L;
}

/* The requests of the fake's log after the first `before`. */
static size_t requests_since(size_t before)
{
	return nbf_log_len() - before;
}

/* A 429/503 that says when to come back is asked again, within bounds; one
 * that asks too much is UNAVAILABLE naming its Retry-After. */
static void test_retry_after_is_honoured_within_bounds(void **st)
{
	struct fleet_inventory *inv = open_with(E.base, V1, E.ca, 4000);
	struct fleet_inv_device d;
	struct fleet_netbox_stats s0, s1;
	struct timespec t0;
	struct fleet_errctx ec;
	size_t before;
	long ms;
	/* seconds */
	fleet_netbox_stats(inv, &s0);
	before = nbf_log_len();
	nbf_ctl("/_fake/fail", "{\"status\": 429, \"retry_after\": \"1\"}");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(inv->ops->get(inv, 1, &d, &ec), FLEET_INV_OK);
	ms = ms_since(&t0);
	assert_true(ms >= 950 && ms < 3000);
	assert_int_equal(requests_since(before), 2);
	fleet_netbox_stats(inv, &s1);
	assert_int_equal(s1.retries - s0.retries, 1);
	/* an HTTP-date, two seconds on (one or two, at a second's precision) */
	nbf_ctl("/_fake/fail", "{\"status\": 503, \"retry_after_in\": 2}");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(inv->ops->get(inv, 1, &d, &ec), FLEET_INV_OK);
	ms = ms_since(&t0);
	assert_true(ms >= 900 && ms < 3500);
	/* a PATCH is asked again too: it sets values, twice is once */
	nbf_ctl("/_fake/fail", "{\"status\": 429, \"retry_after\": \"0\"}");
	assert_int_equal(inv->ops->set_status(inv, 8, "active", &ec), FLEET_INV_OK);
	/* longer than fleetd waits: not waited for, and said so */
	nbf_ctl("/_fake/fail", "{\"status\": 503, \"retry_after\": \"120\"}");
	before = nbf_log_len();
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(inv->ops->get(inv, 1, &d, &ec), FLEET_INV_UNAVAILABLE);
	assert_true(ms_since(&t0) < 1000);
	print_message("refused: %s\n", ec.detail);
	assert_non_null(strstr(ec.detail, "HTTP 503, Retry-After: 120, over the 5 s fleetd waits"));
	assert_int_equal(requests_since(before), 1);
	/* within the cap but past the request's own budget (4 s) */
	nbf_ctl("/_fake/fail", "{\"status\": 429, \"retry_after\": \"2\"}");
	nbf_ctl("/_fake/delay", "{\"ms\": 2500}");
	assert_int_equal(inv->ops->get(inv, 1, &d, &ec), FLEET_INV_UNAVAILABLE);
	print_message("refused: %s\n", ec.detail);
	assert_non_null(strstr(ec.detail, "Retry-After: 2, past this request's time budget"));
	/* still busy after the bounded retries */
	nbf_ctl("/_fake/fail", "{\"status\": 429, \"retry_after\": \"0\", \"count\": 3}");
	before = nbf_log_len();
	assert_int_equal(inv->ops->get(inv, 1, &d, &ec), FLEET_INV_UNAVAILABLE);
	print_message("refused: %s\n", ec.detail);
	assert_non_null(strstr(ec.detail, "still so after 2 retries"));
	assert_int_equal(requests_since(before), 3);
	/* a Retry-After in neither form is quoted, sanitized, and not obeyed */
	nbf_ctl("/_fake/fail", "{\"status\": 503, \"retry_after\": \"soon, maybe\"}");
	assert_int_equal(inv->ops->get(inv, 1, &d, &ec), FLEET_INV_UNAVAILABLE);
	print_message("refused: %s\n", ec.detail);
	assert_non_null(strstr(ec.detail, "Retry-After \"soon, maybe\" is neither seconds nor an "
					  "HTTP-date"));
	/* a Retry-After on another status means nothing */
	nbf_ctl("/_fake/fail", "{\"status\": 502, \"retry_after\": \"0\"}");
	before = nbf_log_len();
	assert_int_equal(inv->ops->get(inv, 1, &d, &ec), FLEET_INV_UNAVAILABLE);
	assert_int_equal(requests_since(before), 1);
	assert_int_equal(inv->ops->get(inv, 1, &d, &ec), FLEET_INV_OK);
	inv->ops->close(inv);
}

static void test_timeout_is_unavailable_and_bounded(void **st)
{
	struct fleet_inventory *inv = open_with(E.base, V1, E.ca, 1000);
	struct fleet_inv_binding_change b;
	struct fleet_errctx ec;
	struct timespec t0;
	nbf_ctl("/_fake/delay", "{\"ms\": 4000}");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(inv->ops->binding_change(inv, 4, &b, &ec), FLEET_INV_UNAVAILABLE);
	long ms = ms_since(&t0);
	assert_true(ms >= 900 && ms < 2500);
	assert_non_null(strstr(ec.detail, "within 1000 ms"));
	print_message("refused: %s\n", ec.detail);
	assert_false(b.found);
	inv->ops->close(inv);
}

static void test_tls_is_verified(void **st)
{
	struct fleet_inv_device d;
	char base2[64];
	struct fleet_errctx ec;
	size_t before = nbf_log_len();
	/* a CA that did not sign NetBox's certificate */
	struct fleet_inventory *inv = open_with(E.base, V1, E.rogue_ca, 5000);
	assert_int_equal(inv->ops->get(inv, 1, &d, &ec), FLEET_INV_UNAVAILABLE);
	print_message("refused: %s\n", ec.detail);
	inv->ops->close(inv);
	/* the system store does not know the test CA either */
	inv = open_with(E.base, V1, NULL, 5000);
	assert_int_equal(inv->ops->get(inv, 1, &d, &ec), FLEET_INV_UNAVAILABLE);
	inv->ops->close(inv);
	/* the right CA, but a certificate for another name */
	pid_t p2 = nbf_start(E.badname_cert, E.key, base2, sizeof(base2));
	inv = open_with(base2, V1, E.ca, 5000);
	fleet_err r = inv->ops->get(inv, 1, &d, &ec);
	inv->ops->close(inv);
	nbf_stop(p2);
	assert_int_equal(r, FLEET_INV_UNAVAILABLE);
	/* no request (and no token) reached the HTTP layer */
	assert_int_equal(nbf_log_len(), before);
	/* NetBox not under this path prefix: its 404 is not an answer */
	char prefixed[96];
	snprintf(prefixed, sizeof(prefixed), "%s/netbox/", E.base);
	inv = open_with(prefixed, V1, E.ca, 5000);
	assert_int_equal(inv->ops->find_by_serial(inv, "SN-Alpha-01", &d, &ec),
			 FLEET_INV_UNAVAILABLE);
	inv->ops->close(inv);
}

static void test_malformed_answers_are_invalid(void **st)
{
	struct fleet_inventory *inv = open_v1();
	const char *p1 = "/api/dcim/devices/1/";
	nbf_canned(p1, 200, "application/json", "{\"id\": 1, ");
	expect_invalid_get(inv, 1, "not a JSON object");
	/* JSON, but an array: said as before the reader, in jansson's words */
	nbf_canned(p1, 200, "application/json", "[{\"id\": 1}]");
	expect_invalid_get(inv, 1, "is not a JSON object (line -1: another JSON value)");
	/* a NUL after a number, which jansson skipped (json_view.h J1): refused,
	 * with the reader's own reason, since jansson has none */
	nbf_ctl("/_fake/raw", "{\"path\": \"/api/dcim/devices/1/\", \"status\": 200, "
			      "\"body\": \"{\\\"id\\\": 1\\u0000}\"}");
	expect_invalid_get(inv, 1, "is not a JSON object (offset 8: '}' expected)");
	nbf_canned(p1, 200, "text/html", "<html>Log in</html>");
	expect_invalid_get(inv, 1, "Content-Type");
	nbf_canned(p1, 200, "application/json",
	       "{\"id\": 1, \"name\": \"w1\", \"serial\": \"SN-Alpha-01\", \"status\": "
	       "{\"value\": \"planned\"}, \"custom_fields\": {\"approved_ek_hash\": \"" H2 "\", "
	       "\"approved_ek_hash\": \"" H1 "\"}}");
	expect_invalid_get(inv, 1, "not a JSON object");
	nbf_canned(p1, 200, "application/json",
	       "{\"id\": 1, \"name\": \"w1\", \"serial\": \"SN-Alpha-01\", \"status\": "
	       "\"planned\", \"custom_fields\": {}}");
	expect_invalid_get(inv, 1, "status");
	nbf_canned(p1, 200, "application/json",
	       "{\"id\": 1, \"name\": \"w1\", \"serial\": \"SN-Alpha-01\", \"status\": "
	       "{\"value\": \"planned\"}, \"primary_ip4\": {\"address\": \"10.0.0.500/24\"}, "
	       "\"custom_fields\": {}}");
	expect_invalid_get(inv, 1, "primary_ip4");
	nbf_canned(p1, 200, "application/json",
	       "{\"id\": \"1\", \"serial\": \"x\", \"status\": {\"value\": \"planned\"}, "
	       "\"custom_fields\": {}}");
	expect_invalid_get(inv, 1, "id");
	/* an answer about another device than the one asked for */
	nbf_canned(p1, 200, "application/json", DEV9);
	expect_invalid_get(inv, 1, "device 9");
	/* a redirect is not followed: the token stays with base_url */
	struct fleet_inv_device d;
	struct fleet_errctx ec;
	char loc[128], *req;
	snprintf(loc, sizeof(loc), "%s/api/dcim/devices/1/", E.base);
	json_t *j = json_pack("{s:s, s:i, s:s, s:s}", "path", p1, "status", 302, "body", "",
			      "location", loc);
	req = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	nbf_ctl("/_fake/raw", req);
	free(req);
	assert_int_equal(inv->ops->get(inv, 1, &d, &ec), FLEET_INV_UNAVAILABLE);
	assert_non_null(strstr(ec.detail, "redirected"));
	/* over the size cap */
	size_t big = FLEET_NETBOX_MAX_RESPONSE + 4096;
	char *huge = malloc(big + 3);
	assert_non_null(huge);
	memset(huge, ' ', big + 2);
	huge[0] = '{';
	huge[big + 1] = '}';
	huge[big + 2] = '\0';
	nbf_canned(p1, 200, "application/json", huge);
	free(huge);
	expect_invalid_get(inv, 1, "over");
	inv->ops->close(inv);
}

static void test_custom_field_values_are_checked(void **st)
{
	struct fleet_inventory *inv = open_v1();
	struct fleet_inv_device d;
	char req[512];
	struct fleet_errctx ec;
	char longv[201];
	memset(longv, 'x', 200);
	longv[200] = '\0';
	nbf_ctl("/_fake/change", "{\"device\": 5, \"user\": \"admin\", "
			     "\"custom_fields\": {\"amt\": \"yes\"}}");
	expect_invalid_get(inv, 5, "amt");
	/* the same device through the serial lookup is refused too */
	assert_int_equal(inv->ops->find_by_serial(inv, "SN-5", &d, &ec), FLEET_INV_INVALID);
	/* a listing judges each device: the bad one is reported with a stable
	 * reason (not skipped: a device skipped would look absent from NetBox,
	 * and absent devices are revoked), the others are listed */
	struct fleet_inv_device *v = NULL;
	struct fleet_inv_malformed *bad = NULL;
	size_t n = 0, n_bad = 0;
	assert_int_equal(inv->ops->list(inv, &v, &n, &bad, &n_bad, &ec), FLEET_INV_OK);
	assert_int_equal(n, 9);
	for (size_t i = 0; i < n; i++)
		assert_int_not_equal(v[i].id, 5);
	assert_int_equal(n_bad, 1);
	assert_int_equal(bad[0].id, 5);
	assert_string_equal(bad[0].serial, "SN-5");
	assert_string_equal(bad[0].reason, "custom_fields.amt:not-boolean");
	free(v);
	free(bad);
	nbf_ctl("/_fake/change", "{\"device\": 5, \"user\": \"admin\", "
			     "\"custom_fields\": {\"amt\": null}}");
	snprintf(req, sizeof(req), "{\"device\": 6, \"user\": \"admin\", "
		 "\"custom_fields\": {\"class\": \"%s\"}}", longv);
	nbf_ctl("/_fake/change", req);
	expect_invalid_get(inv, 6, "class");
	nbf_ctl("/_fake/change", "{\"device\": 6, \"user\": \"admin\", "
			     "\"custom_fields\": {\"class\": \"worker\\u0007\"}}");
	expect_invalid_get(inv, 6, "class");
	nbf_ctl("/_fake/change", "{\"device\": 6, \"user\": \"admin\", "
			     "\"custom_fields\": {\"class\": 7}}");
	expect_invalid_get(inv, 6, "class");
	nbf_ctl("/_fake/change", "{\"device\": 6, \"user\": \"admin\", "
			     "\"custom_fields\": {\"class\": null}}");
	nbf_ctl("/_fake/change", "{\"device\": 7, \"user\": \"admin\", \"custom_fields\": "
			     "{\"approved_ek_hash\": \"ABCDEF" H1 "\"}}");
	expect_invalid_get(inv, 7, "approved_ek_hash");
	nbf_ctl("/_fake/change", "{\"device\": 7, \"user\": \"admin\", \"custom_fields\": "
			     "{\"approved_ek_hash\": \"" H1 "\", \"ek_hash_ecc\": "
			     "\"AAAA" H1 "\"}}");
	expect_invalid_get(inv, 7, "ek_hash_ecc");
	nbf_ctl("/_fake/change", "{\"device\": 7, \"user\": \"admin\", \"custom_fields\": "
			     "{\"approved_ek_hash\": null, \"ek_hash_ecc\": null}}");
	assert_int_equal(inv->ops->get(inv, 7, &d, &ec), FLEET_INV_OK);
	/* a change-log author longer than the inventory holds is refused, not cut */
	struct fleet_inv_binding_change b;
	snprintf(req, sizeof(req), "{\"device\": 5, \"user\": \"%s\", "
		 "\"custom_fields\": {\"approved_ek_hash\": \"" H1 "\"}}", longv);
	nbf_ctl("/_fake/change", req);
	assert_int_equal(inv->ops->binding_change(inv, 5, &b, &ec), FLEET_INV_INVALID);
	assert_non_null(strstr(ec.detail, "user_name"));
	assert_false(b.found);
	inv->ops->close(inv);
}

static void test_unfiltered_answers_and_foreign_links_are_refused(void **st)
{
	struct fleet_inventory *inv = open_v1();
	struct fleet_inv_device d, *v = NULL;
	struct fleet_inv_binding_change b;
	struct fleet_inv_malformed *bad = NULL;
	size_t n = 0, n_bad = 0;
	struct fleet_errctx ec;
	/* NetBox answering the serial lookup with another serial: the filter
	 * was not applied, and nothing is picked from an unfiltered list */
	nbf_canned("/api/dcim/devices/", 200, "application/json",
	       "{\"count\": 1, \"next\": null, \"previous\": null, \"results\": [" DEV9 "]}");
	assert_int_equal(inv->ops->find_by_serial(inv, "SN-Alpha-01", &d, &ec), FLEET_INV_INVALID);
	assert_int_equal(d.id, 0);
	nbf_canned("/api/core/object-changes/", 200, "application/json",
	       "{\"count\": 1, \"next\": null, \"previous\": null, \"results\": [{\"id\": 3, "
	       "\"time\": \"2026-01-01T00:00:00Z\", \"user_name\": \"mallory\", \"action\": "
	       "{\"value\": \"update\"}, \"changed_object_type\": \"dcim.interface\", "
	       "\"changed_object_id\": 1, \"prechange_data\": null, \"postchange_data\": "
	       "{\"custom_fields\": {\"approved_ek_hash\": \"" H1 "\"}}}]}");
	assert_int_equal(inv->ops->binding_change(inv, 1, &b, &ec), FLEET_INV_INVALID);
	assert_false(b.found);
	nbf_canned("/api/core/object-changes/", 200, "application/json",
	       "{\"count\": 1, \"next\": null, \"previous\": null, \"results\": [{\"id\": 3, "
	       "\"time\": \"2026-01-01T00:00:00Z\", \"user_name\": \"mallory\", \"action\": "
	       "{\"value\": \"update\"}, \"changed_object_type\": \"dcim.device\", "
	       "\"changed_object_id\": 2, \"prechange_data\": null, \"postchange_data\": "
	       "{\"custom_fields\": {\"approved_ek_hash\": \"" H1 "\"}}}]}");
	assert_int_equal(inv->ops->binding_change(inv, 1, &b, &ec), FLEET_INV_INVALID);
	assert_non_null(strstr(ec.detail, "another object"));
	/* a next link naming another endpoint is not followed */
	nbf_canned("/api/dcim/devices/", 200, "application/json",
	       "{\"count\": 3, \"previous\": null, \"next\": \"https://127.0.0.1/api/users/"
	       "tokens/?limit=2&offset=2\", \"results\": [" DEV9 "]}");
	assert_int_equal(inv->ops->list(inv, &v, &n, &bad, &n_bad, &ec), FLEET_INV_INVALID);
	assert_null(v);
	/* a next link naming another host is re-based onto base_url: the token
	 * never leaves for evil.invalid, and the walk goes on at NetBox */
	size_t before = nbf_log_len();
	nbf_canned("/api/dcim/devices/", 200, "application/json",
	       "{\"count\": 10, \"previous\": null, \"next\": \"https://evil.invalid:8443"
	       "/api/dcim/devices/?exclude=config_context&limit=2&offset=2\", \"results\": ["
	       DEV9 "]}");
	assert_int_equal(inv->ops->list(inv, &v, &n, &bad, &n_bad, &ec), FLEET_INV_OK);
	free(v);
	free(bad);
	assert_int_equal(n, 9); /* the canned one, then offsets 2..9 */
	json_t *s = nbf_state();
	json_t *req = json_array_get(json_object_get(s, "log"), before + 1);
	assert_non_null(strstr(json_string_value(json_object_get(req, "query")), "offset=2"));
	json_decref(s);
	inv->ops->close(inv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_open_refuses_bad_config),
		cmocka_unit_test(test_find_by_serial_case_insensitive_with_all_fields),
		cmocka_unit_test(test_find_refuses_ambiguous_and_unknown),
		cmocka_unit_test(test_binding_change_author),
		cmocka_unit_test(test_binding_change_newest_by_time_not_by_order),
		cmocka_unit_test(test_write_ek_hashes_writes_only_those),
		cmocka_unit_test(test_bad_write_names_the_field),
		cmocka_unit_test(test_set_status),
		cmocka_unit_test(test_list_follows_pagination),
		cmocka_unit_test(test_out_of_memory_is_not_netbox_down),
		cmocka_unit_test(test_out_of_memory_reading_an_answer),
		cmocka_unit_test(test_next_links_behind_a_prefix_stripping_proxy),
		cmocka_unit_test(test_a_listing_reuses_one_connection),
		cmocka_unit_test(test_a_page_over_the_cap_is_asked_in_halves),
		cmocka_unit_test(test_device_reads_ask_only_for_the_fields_read),
		cmocka_unit_test(test_fields_cut_a_10k_listing),
		cmocka_unit_test(test_bad_tokens_are_unavailable),
		cmocka_unit_test(test_permission_refusals_name_the_permission),
		cmocka_unit_test(test_server_errors_are_unavailable),
		cmocka_unit_test(test_timeout_is_unavailable_and_bounded),
		cmocka_unit_test(test_retry_after_is_honoured_within_bounds),
		cmocka_unit_test(test_tls_is_verified),
		cmocka_unit_test(test_malformed_answers_are_invalid),
		cmocka_unit_test(test_custom_field_values_are_checked),
		cmocka_unit_test(test_unfiltered_answers_and_foreign_links_are_refused),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
