/* store_schema_test.h: what the migration tests drop to make a store of an
 * older schema version: every table a later migration adds, children
 * first. One place, so a new migration changes one line. */
#ifndef FLEET_STORE_SCHEMA_TEST_H
#define FLEET_STORE_SCHEMA_TEST_H

/* The tables of schema versions 6 to 9 (the join service, shared sessions). */
#define DROP_JOIN_TABLES                                                              \
	"DROP TABLE admission_sessions; "                                              \
	"DROP TABLE join_requests; DROP TABLE site_leases; "                           \
	"DROP TABLE node_bindings; DROP TABLE node_certs; DROP TABLE nodes; "          \
	"DROP TABLE attestation_uses; DROP TABLE join_tokens; DROP TABLE pools; "

#endif
