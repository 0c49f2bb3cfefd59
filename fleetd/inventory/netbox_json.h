/*
 * netbox_json.h: NetBox v4 JSON objects to checked C structs (internal to
 * netbox.c). Nothing here does I/O; every function distrusts its input and
 * names the offending field in ec (lib/fleet_err.h; may be NULL).
 */
#ifndef FLEET_NETBOX_JSON_H
#define FLEET_NETBOX_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "fleetd/inventory/inventory.h"
#include "fleetd/inventory/json_view.h"

/* A device object, token o of j (GET /api/dcim/devices/N/ or one list
 * result). On INVALID, reason (may be NULL) gets the stable
 * "<field>:<problem>" of the first fault, e.g. "custom_fields.class:too-long". */
fleet_err nb_parse_device(const struct jv_doc *j, uint32_t o, struct fleet_inv_device *d,
			  char *reason, size_t reasonlen, struct fleet_errctx *ec);

/* One object change, reduced to what the binding rule needs. */
struct nb_change {
	long id;
	time_t when;
	long usec; /* sub-second part of the time, for ordering */
	char user[FLEET_INV_STR];
	bool binding_changed; /* approved_ek_hash or approved_ek_hash_ecc differ */
};

/* An entry of /api/core/object-changes/; it must be about dcim.device id. */
fleet_err nb_parse_change(const struct jv_doc *j, uint32_t o, long device_id,
			  struct nb_change *c, struct fleet_errctx *ec);

/* ISO 8601 as Django REST framework writes it: 2024-05-01T12:34:56[.ffffff]
 * then Z or +HH:MM / -HH:MM. Returns false on anything else. */
bool nb_parse_time(const char *s, time_t *t, long *usec);

/* 64 lowercase hex digits. */
bool nb_is_ek_hash(const char *s);

/* A status value NetBox could hold: 1..31 of [a-z0-9_-]. */
bool nb_is_status_slug(const char *s);

/* What a NetBox error body says, as "<field path>: <message>" for each
 * message ({"detail": "..."}, {"field": ["..."]}, nested objects such as
 * {"custom_fields": {"ek_hash": "..."}}, "__all__"), the first few joined
 * by "; " and the rest counted; sanitised (lib/sanitize.h), each path and
 * message capped ("[+N]"), all within outlen; "" when there is none. */
void nb_error_detail(const char *body, size_t len, char *out, size_t outlen);

#endif
