# The reconcile pass (fleetd/pass/): spire-nodes.json from the store and the
# inventory, and nothing decided from an inventory error.
fleet_test(test_pass unit unit/test_pass.c LIBS fleetdcore fleet_store_location)
fleet_pg_twin(test_pass)
# The allocator policy the daemon sets for its passes (pass.h
# fleet_pass_malloc_setup): its own process, as the setting is global.
fleet_test(test_pass_malloc unit unit/test_pass_malloc.c LIBS fleetdcore)
# Binding author records (pass.h B1..B6) over the real store and a scripted
# inventory whose change log the test purges, breaks or changes mid-read.
fleet_test(test_pass_authors unit unit/test_pass_authors.c LIBS fleetdcore)
# The pass against the NetBox contract fake (tests/fakes/netbox_fake.py):
# malformed devices judged one by one, EK hashes written back; skips without
# python3 or openssl.
fleet_test(test_pass_netbox e2e e2e/test_pass_netbox.c e2e/netbox_harness.c
           LIBS fleetdcore fleet_x509_mint)
set_tests_properties(test_pass_netbox PROPERTIES TIMEOUT 180)
