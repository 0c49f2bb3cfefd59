# The NetBox v4 inventory (fleetd/inventory/netbox.c, docs/netbox.md) against
# its contract fake (tests/fakes/netbox_fake.py) over TLS; skips without
# python3 or openssl.
fleet_test(test_netbox_client e2e e2e/test_netbox_client.c e2e/netbox_harness.c
           LIBS fleetdcore)
set_tests_properties(test_netbox_client PROPERTIES TIMEOUT 180)
# reallocarray wrapped at link time: the test makes the client's listing run
# out of memory (fleetd/inventory/netbox.c grows its arrays with it).
target_link_options(test_netbox_client PRIVATE "LINKER:--wrap=reallocarray")
