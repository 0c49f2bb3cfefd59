# roots/: the manifest of manufacturer EK CAs against the real ones in
# ../shared/data/ek-roots, fetch-roots installing them (fleetctl loads the
# directory as fleetd does) and refusing a changed or substituted certificate.
add_test(NAME roots_manifest COMMAND /usr/bin/python3
         ${CMAKE_CURRENT_SOURCE_DIR}/roots/test_roots.py)
set_tests_properties(roots_manifest PROPERTIES LABELS unit SKIP_RETURN_CODE 77
  ENVIRONMENT "FLEET_SOURCE_DIR=${PROJECT_SOURCE_DIR};FLEET_SHARED_DATA=${FLEET_SHARED_DATA};FLEETCTL=$<TARGET_FILE:fleetctl>")
