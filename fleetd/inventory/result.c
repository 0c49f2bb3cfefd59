#include "fleetd/inventory/inventory.h"


const char *fleet_inv_bound_stop(const struct fleet_inv_bound *b)
{
	if (!b)
		return NULL;
	if (b->cancel && atomic_load(b->cancel))
		return "cancelled";
	if (b->deadline_ms) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		uint64_t now = (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
		if (now >= b->deadline_ms)
			return "past its deadline";
	}
	return NULL;
}
