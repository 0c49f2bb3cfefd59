# clusters/folly: the manifests say what their README says.
add_test(NAME folly_manifests COMMAND /usr/bin/python3
         ${CMAKE_CURRENT_SOURCE_DIR}/clusters/test_folly_manifests.py)
set_tests_properties(folly_manifests PROPERTIES LABELS unit SKIP_RETURN_CODE 77
  ENVIRONMENT "FLEET_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
# clusters/folly/tinkerbell: the Template against the Tinkerbell CRD, and the
# check of /worker/fleet/code and proof before any disk is written.
add_test(NAME folly_talos_template COMMAND /usr/bin/python3
         ${CMAKE_CURRENT_SOURCE_DIR}/clusters/test_talos_template.py)
set_tests_properties(folly_talos_template PROPERTIES LABELS unit SKIP_RETURN_CODE 77
  ENVIRONMENT "FLEET_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
# clusters/folly/monitoring: the control-plane re-check alert on
# fleetd_reattest_failed_total, and the header that states it as the contract.
add_test(NAME folly_fleetd_alerts COMMAND /usr/bin/python3
         ${CMAKE_CURRENT_SOURCE_DIR}/clusters/test_fleetd_alerts.py)
set_tests_properties(folly_fleetd_alerts PROPERTIES LABELS unit SKIP_RETURN_CODE 77
  ENVIRONMENT "FLEET_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
