/* tink-attest's parser of `lldpcli -f json show neighbors`: the neighbour's
 * chassis id, port id and system name come from the network, from whatever
 * answers on the wire as a switch. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tink-attest/identity.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fleet_network_report r;
	struct fleet_errctx ec;
	memset(&r, 0, sizeof(r));
	if (tink_lldp_parse((const char *)data, size, &r, &ec) == FLEET_OK) {
		/* Whatever was accepted fits its fields, terminated. */
		if (strnlen(r.chassis_id, sizeof(r.chassis_id)) == sizeof(r.chassis_id) ||
		    strnlen(r.port_id, sizeof(r.port_id)) == sizeof(r.port_id) ||
		    strnlen(r.system_name, sizeof(r.system_name)) == sizeof(r.system_name))
			__builtin_trap();
	}
	return 0;
}
