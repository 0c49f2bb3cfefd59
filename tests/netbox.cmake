# The NetBox v4 inventory (fleetd/inventory/netbox.c, docs/netbox.md) against
# its contract fake (tests/fakes/netbox_fake.py) over TLS; skips without
# python3 or openssl.
fleet_test(test_netbox_client e2e e2e/test_netbox_client.c e2e/netbox_harness.c
           LIBS fleetdcore)
set_tests_properties(test_netbox_client PROPERTIES TIMEOUT 180)
# reallocarray wrapped at link time: the test makes the client's listing run
# out of memory (fleetd/inventory/netbox.c grows its arrays with it).
target_link_options(test_netbox_client PRIVATE "LINKER:--wrap=reallocarray")

# The reader of NetBox's answers (fleetd/inventory/json_view.h), against
# jansson, whose acceptance it mirrors; reallocarray wrapped to fail each
# allocation in turn.
fleet_test(test_json_view unit unit/test_json_view.c LIBS fleetdcore PkgConfig::JANSSON)
target_link_options(test_json_view PRIVATE "LINKER:--wrap=reallocarray")
