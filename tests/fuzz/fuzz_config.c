/*
 * fuzz_config.c: the fleetd.yaml parser. An accepted configuration must be
 * one the daemon can act on (an inventory kind with its section, absolute
 * paths, at least one class, a binding author); a refusal must come with a
 * terminated message and leave the defaults behind.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fleetd/config/config.h"

static void check_path(const char *p, size_t cap, int may_be_empty)
{
	size_t n = strnlen(p, cap);
	if (n == cap || (n == 0 && !may_be_empty) || (n && p[0] != '/') || strstr(p, "/../"))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fleet_config c;
	struct fleet_errctx err;
	if (fleet_config_parse(data, size, &c, &err) != FLEET_OK) {
		if (strnlen(err.detail, sizeof(err.detail)) == sizeof(err.detail) ||
		    !err.detail[0] ||
		    c.n_classes != 0 || c.listen_port != 8443)
			abort();
		return 0;
	}
	check_path(c.tls_cert, sizeof(c.tls_cert), 0);
	check_path(c.tls_key, sizeof(c.tls_key), 0);
	check_path(c.state_dir, sizeof(c.state_dir), 0);
	check_path(c.roots_dir, sizeof(c.roots_dir), 0);
	check_path(c.ca_dir, sizeof(c.ca_dir), 0);
	check_path(c.profiles_dir, sizeof(c.profiles_dir), 0);
	if (c.n_classes < 1 || c.n_classes > FLEET_CONFIG_MAX_CLASSES || !c.binding_author[0] ||
	    c.listen_port == 0)
		abort();
	for (size_t i = 0; i < c.n_classes; i++)
		if (!c.classes[i].name[0] || strchr(c.classes[i].profile, '/') ||
		    fleet_config_profile_for(&c, c.classes[i].name) != c.classes[i].profile)
			abort();
	if (c.inventory == FLEET_INVENTORY_FILE) {
		check_path(c.nodes_file, sizeof(c.nodes_file), 0);
		if (strcmp(c.binding_author, "nodes-file") != 0 || c.netbox_url[0])
			abort();
	} else if (c.inventory == FLEET_INVENTORY_NETBOX) {
		check_path(c.netbox_token_file, sizeof(c.netbox_token_file), 0);
		check_path(c.netbox_ca_file, sizeof(c.netbox_ca_file), 1);
		if (strncmp(c.netbox_url, "https://", 8) != 0 || c.nodes_file[0])
			abort();
	} else {
		abort();
	}
	return 0;
}
