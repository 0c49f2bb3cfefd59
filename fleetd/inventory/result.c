#include "fleetd/inventory/inventory.h"

const char *fleet_inv_result_str(enum fleet_inv_result r)
{
	switch (r) {
	case FLEET_INV_OK:
		return "ok";
	case FLEET_INV_NOT_FOUND:
		return "not-found";
	case FLEET_INV_AMBIGUOUS:
		return "ambiguous";
	case FLEET_INV_UNAVAILABLE:
		return "unavailable";
	case FLEET_INV_INVALID:
		return "invalid";
	}
	return "unknown";
}
