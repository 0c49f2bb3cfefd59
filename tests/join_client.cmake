# fleet-join, the join service's client (tink-attest/join_client.h, FJ1-FJ8):
# the answer's checks (JW10), tokens, x509pop evidence, assertions and the
# join and renew runs over a transport of the test's own, against a CA made
# in a temporary directory; it also runs the fleet-join binary's assert and
# its usage errors. The HTTPS runs against fleetd are e2e tests of their own.
fleet_test(test_join_client unit unit/test_join_client.c LIBS tinkattest)
add_dependencies(test_join_client fleet-join)
