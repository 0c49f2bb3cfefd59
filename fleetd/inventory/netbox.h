/*
 * netbox.h: the NetBox v4 inventory (REST API, HTTPS only).
 *
 * fleetd reads devices (/api/dcim/devices/), reads the device change log
 * (/api/core/object-changes/) to learn who last changed the binding, and
 * writes exactly three things back: the custom fields ek_hash and
 * ek_hash_ecc, and the device status. docs/netbox.md says which fields are
 * read, how they are checked and what each failure means.
 *
 * Device reads ask only for the fields fleetd reads (fields=, NetBox 4.0 and
 * later); a NetBox that ignores it still works (the answers are larger, and
 * counted in the stats), and a device lacking a field asked for is INVALID.
 *
 * Every request verifies NetBox's certificate and host name, refuses any
 * scheme but https, follows no redirect, is bounded in time and in size, and
 * every value NetBox returns is checked before it reaches a caller: a wrong
 * type, an overlong string or an EK hash that is not 64 lowercase hex digits
 * is FLEET_INV_INVALID with the field named. The token is never logged and
 * never part of an error message.
 */
#ifndef FLEET_NETBOX_H
#define FLEET_NETBOX_H

#include <stddef.h>

#include "fleetd/inventory/inventory.h"

struct fleet_netbox_config {
	/* "https://netbox.example.org" or with a path prefix
	 * ("https://example.org/netbox"); the API lives under <base_url>/api/. */
	const char *base_url;
	/* A v1 token (40 hex digits, sent as "Authorization: Token <t>") or a v2
	 * token ("nbt_<key>.<secret>", sent as "Authorization: Bearer <t>"). */
	const char *token;
	/* PEM file of the CAs that may sign NetBox's certificate; NULL: the
	 * system's trust store. */
	const char *ca_file;
	/* Bound on each whole request, connect included; 0: 10000 ms. */
	long timeout_ms;
	/* Objects asked for per page (limit=); 0: 100. NetBox may return fewer
	 * (MAX_PAGE_SIZE); every "next" page is followed either way. */
	unsigned page_size;
};

/* Caps that hold for every call. A listing page over the response cap is
 * asked again with half the limit (down to one object) instead. */
#define FLEET_NETBOX_MAX_RESPONSE (8u << 20) /* bytes per HTTP response */
#define FLEET_NETBOX_MAX_PAGES 10000u        /* pages per listing */
#define FLEET_NETBOX_MAX_OBJECTS 100000u     /* objects per listing */

/*
 * Check the configuration and return the inventory, or NULL with the reason in
 * ec (may be NULL): FLEET_E_INVALID_ARG for the configuration, the file
 * reader's code for ca_file (lib/file_read.h), FLEET_E_NOMEM, FLEET_E_IO. The token is copied (and wiped on close); base_url must be https.
 * Calls may run concurrently from several threads: each request borrows a
 * curl handle of its own from a small pool, so requests one after another
 * (a pass's pages) reuse one TLS connection, and TLS sessions are shared
 * between handles. close must not race a call.
 */
struct fleet_inventory *fleet_netbox_open(const struct fleet_netbox_config *cfg,
					  struct fleet_errctx *ec);

/* What the client has done since it was opened; for tests, measurements and
 * metrics. Counts are totals over every thread. */
struct fleet_netbox_stats {
	unsigned long long requests;    /* HTTP exchanges, retries included */
	unsigned long long connections; /* connections opened (each a TLS handshake) */
	unsigned long long bytes;       /* response body bytes kept */
	unsigned long long retries;     /* requests asked again after a Retry-After */
	unsigned long long smaller_pages; /* pages asked again with half the limit,
					     their answer being over the cap */
	unsigned long long fields_ignored; /* device objects answered with fields
					      not asked for: NetBox ignored fields= */
};

/* *out = the stats of inv, which fleet_netbox_open returned; all zero for
 * any other inventory. */
void fleet_netbox_stats(struct fleet_inventory *inv, struct fleet_netbox_stats *out);

#endif
