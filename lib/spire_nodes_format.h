/*
 * spire_nodes_format.h: what spire-nodes.json's two sides must agree on,
 * in the one place both include: fleetd writes the file (fleetd/spire/), the
 * root applier on the SPIRE host reads it (spire-server-fleet-entries/),
 * and the applier links nothing of fleetd (docs/ARCHITECTURE.md). The
 * format itself is docs/spire-nodes.md.
 */
#ifndef FLEET_SPIRE_NODES_FORMAT_H
#define FLEET_SPIRE_NODES_FORMAT_H

#include <stdbool.h>

/* A SPIFFE trust domain name is at most 255 bytes. */
#define FLEET_SPIRE_TRUST_DOMAIN_MAX 255
/* Names the format carries: 1..63 of [A-Za-z0-9._-], starting with a
 * letter or digit (a SPIFFE path segment and a registration-ID suffix). */
#define FLEET_SPIRE_NAME_MAX 63

/* True when s is a name the format carries (FLEET_SPIRE_NAME_MAX). */
bool fleet_spire_name_ok(const char *s);
/* True when s is a trust domain the format carries: 1..255 of [a-z0-9._-]
 * (SPIFFE's trust domain characters). */
bool fleet_spire_trust_domain_ok(const char *s);

#endif
