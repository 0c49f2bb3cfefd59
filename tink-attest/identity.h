/*
 * identity.h: what the machine says it is, read from sysfs and LLDP.
 *
 * Nothing here is proven (the TPM proves nothing about SMBIOS or the
 * switch); fleetd caps and checks every field. This side refuses values that
 * could not be sent honestly: a serial with control characters, one over the
 * protocol's cap, a malformed MAC. Truncating would send a different serial.
 */
#ifndef TINK_IDENTITY_H
#define TINK_IDENTITY_H

#include <stddef.h>

#include "lib/attest_wire.h"
#include "lib/fleet_err.h"

struct tink_identity {
	char serial[FLEET_WIRE_MAX_SERIAL + 1];
	char product_uuid[FLEET_WIRE_MAX_UUID + 1];
	char bios_version[FLEET_WIRE_MAX_BIOS + 1];
	size_t n_macs;
	char macs[FLEET_WIRE_MAX_MACS][FLEET_WIRE_MAC_LEN + 1];
	struct fleet_network_report lldp; /* empty strings: no neighbour heard */
};

/*
 * Read root/class/dmi/id/{product_serial,product_uuid,bios_version} and the
 * MAC of every physical NIC (root/class/net/IF with a device link; loopback,
 * bridges and other virtual interfaces have none), lowercase, sorted, without
 * duplicates. FLEET_OK, or the failure with ec (lib/fleet_err.h; may be
 * NULL) saying which file and why: FLEET_E_NOT_FOUND (no serial),
 * FLEET_E_IO (with errno), FLEET_E_MALFORMED, FLEET_E_TOO_LARGE. The serial
 * must be present.
 */
fleet_err tink_identity_read_sysfs(const char *root, struct tink_identity *id,
				   struct fleet_errctx *ec);

/*
 * The neighbour from `lldpcli -f json show neighbors` output (lldpd's "json"
 * format: {"lldp":{"interface":{"eth0":{...}}}}, or an array of such
 * one-key objects when several interfaces have neighbours; each chassis is
 * {"<sysname>":{"id":{"type","value"}}} or, without a system name,
 * {"id":{...}}). The first neighbour in lldpcli's order is taken. No
 * neighbour at all leaves out empty and returns FLEET_OK; a document of
 * another shape is FLEET_E_MALFORMED (a field over the protocol's cap
 * FLEET_E_TOO_LARGE), ec saying why.
 */
fleet_err tink_lldp_parse(const char *json, size_t len, struct fleet_network_report *out,
			  struct fleet_errctx *ec);

/* Read the neighbour from file (a saved lldpcli output), or, when file is
 * NULL, run lldpcli. lldpcli missing or failing is not fatal: the report
 * stays empty, a warning is printed (fleetd decides about the port) and the
 * result is FLEET_OK. A file that cannot be read or parsed is its failure. */
fleet_err tink_lldp_read(const char *file, struct fleet_network_report *out,
			 struct fleet_errctx *ec);

#endif
