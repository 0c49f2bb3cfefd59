# spire-server-fleet-entries: the file reader, the plan, and the real
# binary against the spire-server contract fake (tests/fakes/).
# The program is built here only until fleetd/CMakeLists.txt builds it.
fleet_test(test_applier_plan unit unit/test_applier_plan.c LIBS fleet_applier)
fleet_script_test(applier_cli e2e e2e/applier_cli.sh
  $<TARGET_FILE:spire-server-fleet-entries> ${CMAKE_CURRENT_SOURCE_DIR}/fakes/spire_server_fake.py)
