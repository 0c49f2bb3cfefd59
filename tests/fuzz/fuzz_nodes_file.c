/*
 * fuzz_nodes_file.c: the nodes-file parser. Whatever it accepts must hold
 * what the inventory promises its callers: printable, terminated strings;
 * hashes empty or 64 lowercase hex; unique, non-zero ids; serials unique
 * ignoring case. Whatever it refuses must come with a terminated message.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fleetd/inventory/nodes_file.h"
#include "lib/hex.h"

static void check_str(const char *s, size_t cap, int may_be_empty)
{
	size_t n = strnlen(s, cap);
	if (n == cap || (!may_be_empty && n == 0))
		abort();
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] >= 0x7f)
			abort();
}

static void check_hash(const char *h)
{
	size_t n = strnlen(h, 65);
	if (n != 0 && (n != 64 || !fleet_hex_is_lower(h, 64)))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fleet_inv_device *d;
	size_t n;
	struct fleet_errctx err;
	if (fleet_nodes_file_parse(data, size, &d, &n, &err) != FLEET_OK) {
		if (d || strnlen(err.detail, sizeof(err.detail)) == sizeof(err.detail) ||
		    !err.detail[0])
			abort();
		return 0;
	}
	if (n > FLEET_NODES_FILE_MAX_NODES)
		abort();
	for (size_t i = 0; i < n; i++) {
		check_str(d[i].name, sizeof(d[i].name), 0);
		check_str(d[i].serial, sizeof(d[i].serial), 0);
		check_str(d[i].status, sizeof(d[i].status), 0);
		check_str(d[i].class_name, sizeof(d[i].class_name), 0);
		check_str(d[i].primary_ip4, sizeof(d[i].primary_ip4), 1);
		check_str(d[i].install_disk, sizeof(d[i].install_disk), 1);
		check_str(d[i].install_disk_serial, sizeof(d[i].install_disk_serial), 1);
		check_str(d[i].expected_port, sizeof(d[i].expected_port), 1);
		check_str(d[i].desired_action, sizeof(d[i].desired_action), 1);
		check_hash(d[i].approved_ek_hash);
		check_hash(d[i].approved_ek_hash_ecc);
		if (d[i].ek_hash[0] || d[i].ek_hash_ecc[0] || d[i].id <= 0 ||
		    d[i].id != fleet_nodes_file_id(d[i].serial) || d[i].amt < -1 || d[i].amt > 1 ||
		    d[i].secure_boot_expected < -1 || d[i].secure_boot_expected > 1)
			abort();
		for (size_t j = 0; j < i; j++)
			if (d[j].id == d[i].id || !strcasecmp(d[j].serial, d[i].serial))
				abort();
	}
	free(d);
	return 0;
}
