# spire-nodes.json (fleetd/spire/, docs/spire-nodes.md): eligibility from a
# real store and an in-test inventory; and the atomic write under kill -9.
fleet_test(test_spire_nodes unit unit/test_spire_nodes.c LIBS fleetdcore fleet_applier fleet_x509_mint)
# The format both sides share (lib/spire_nodes_format.h): its limits, the
# file-size cap's derivation, the canonical order, times.
fleet_test(test_spire_nodes_format unit unit/test_spire_nodes_format.c)
fleet_test(test_spire_nodes_atomic e2e e2e/test_spire_nodes_atomic.c LIBS fleetdcore)
set_tests_properties(test_spire_nodes_atomic PROPERTIES TIMEOUT 300)
# 50,000 machines end to end: the store, the pass, the file, the applier's
# plan (directly, and the real binary against the spire-server fake).
add_executable(test_spire_fleet_50k e2e/test_spire_fleet_50k.c)
target_link_libraries(test_spire_fleet_50k PRIVATE fleetdcore fleet_applier fleet_testutil)
add_test(NAME test_spire_fleet_50k COMMAND test_spire_fleet_50k
         $<TARGET_FILE:spire-server-fleet-entries> ${CMAKE_CURRENT_SOURCE_DIR}/fakes/spire_server_fake.py)
set_tests_properties(test_spire_fleet_50k PROPERTIES LABELS e2e TIMEOUT 300)
