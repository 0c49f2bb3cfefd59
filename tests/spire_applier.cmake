# spire-server-fleet-entries: the file reader, the plan, and the real
# binary against the spire-server contract fake (tests/fakes/).
# The program is built here only until fleetd/CMakeLists.txt builds it.
if(NOT TARGET spire-server-fleet-entries)
  add_executable(spire-server-fleet-entries ${PROJECT_SOURCE_DIR}/fleetd/applier/main.c)
  target_link_libraries(spire-server-fleet-entries PRIVATE fleetdcore)
endif()
fleet_test(test_applier_plan unit unit/test_applier_plan.c LIBS fleetdcore)
fleet_script_test(applier_cli e2e e2e/applier_cli.sh
  $<TARGET_FILE:spire-server-fleet-entries> ${CMAKE_CURRENT_SOURCE_DIR}/fakes/spire_server_fake.py)
