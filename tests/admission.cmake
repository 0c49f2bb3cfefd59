# fleetd's admission (fleetd/admission/, docs/admission.md) end to end: the
# fleetd binary with a configuration the test writes, two swtpm machines
# booted by the firmware simulator, tink-attest (the binary, and its library
# where a hook between rounds is needed), the NetBox contract fake. Skips
# without swtpm, python3 or openssl.
if(TARGET fleetd)
  fleet_test(test_admission e2e e2e/test_admission.c e2e/admission_harness.c e2e/admission_fixture.c
             e2e/netbox_harness.c e2e/http_client.c
             LIBS fleetdcore tinkattest fleet_fwsim fleet_swtpm OpenSSL::SSL)
  target_compile_definitions(test_admission PRIVATE
    FLEETD_BIN="$<TARGET_FILE:fleetd>" TINK_ATTEST_BIN="$<TARGET_FILE:tink-attest>")
  add_dependencies(test_admission fleetd tink-attest fleetctl)
  set_tests_properties(test_admission PROPERTIES TIMEOUT 900)
endif()
# The open-session table on its own (I2: one session per serial, the cap,
# expiry, checked-out entries).
fleet_test(test_admission_sessions unit unit/test_admission_sessions.c LIBS fleetdcore
           fleet_store_location)
# The same cases on the shared table (sessions.h SH1-SH4) in a SQLite store,
# and on PostgreSQL (fleet_pg_twin), with the cases only it has.
add_test(NAME test_admission_sessions_shared COMMAND test_admission_sessions)
set_tests_properties(test_admission_sessions_shared PROPERTIES LABELS unit
                     SKIP_RETURN_CODE 77 ENVIRONMENT "FLEET_TEST_SESSIONS_SHARED=1")

# Admission's state under attack and outage (test_admission_state.c): a
# forger on 127.0.0.2, kill -9 at every durable write through an
# LD_PRELOAD shim that only this test loads into fleetd.
if(TARGET fleetd)
  add_library(fleet_crash_shim MODULE e2e/crash_shim.c)
  target_link_libraries(fleet_crash_shim PRIVATE ${CMAKE_DL_LIBS})
  fleet_test(test_admission_state e2e e2e/test_admission_state.c e2e/admission_harness.c
             e2e/admission_fixture.c e2e/netbox_harness.c e2e/http_client.c
             LIBS fleetdcore tinkattest fleet_fwsim fleet_swtpm OpenSSL::SSL)
  target_compile_definitions(test_admission_state PRIVATE
    FLEETD_BIN="$<TARGET_FILE:fleetd>" TINK_ATTEST_BIN="$<TARGET_FILE:tink-attest>"
    CRASH_SHIM="$<TARGET_FILE:fleet_crash_shim>")
  add_dependencies(test_admission_state fleetd tink-attest fleetctl fleet_crash_shim)
  set_tests_properties(test_admission_state PROPERTIES TIMEOUT 900)
endif()

# Intake's bounded inventory lookup (fleetd/admission/lookup.h).
fleet_test(test_admission_lookup unit unit/test_admission_lookup.c LIBS fleetdcore)

# The daemon's pass against a slow NetBox, as systemd sees it: watchdog
# pings independent of the pass (fleetd/pass/pass_runner.h).
if(TARGET fleetd)
  fleet_test(test_daemon_pass e2e e2e/test_daemon_pass.c e2e/admission_harness.c
             e2e/admission_fixture.c e2e/netbox_harness.c e2e/http_client.c
             LIBS fleetdcore tinkattest fleet_fwsim fleet_swtpm OpenSSL::SSL)
  target_compile_definitions(test_daemon_pass PRIVATE
    FLEETD_BIN="$<TARGET_FILE:fleetd>" TINK_ATTEST_BIN="$<TARGET_FILE:tink-attest>")
  add_dependencies(test_daemon_pass fleetd tink-attest)
  set_tests_properties(test_daemon_pass PROPERTIES TIMEOUT 300)
endif()

# I7's binding author once NetBox purged its change log (pass.h B1..B6,
# docs/admission.md "Binding authors"): the fleetd binary and its passes,
# swtpm machines, the NetBox fake's housekeeping (/_fake/purge).
if(TARGET fleetd)
  fleet_test(test_binding_author e2e e2e/test_binding_author.c e2e/admission_harness.c
             e2e/admission_fixture.c e2e/netbox_harness.c e2e/http_client.c
             LIBS fleetdcore tinkattest fleet_fwsim fleet_swtpm OpenSSL::SSL)
  target_compile_definitions(test_binding_author PRIVATE
    FLEETD_BIN="$<TARGET_FILE:fleetd>" TINK_ATTEST_BIN="$<TARGET_FILE:tink-attest>")
  add_dependencies(test_binding_author fleetd tink-attest fleetctl)
  set_tests_properties(test_binding_author PROPERTIES TIMEOUT 600)
endif()
add_test(NAME test_admission_sessions_shared_pg COMMAND test_admission_sessions)
set_tests_properties(test_admission_sessions_shared_pg PROPERTIES LABELS "unit;pg"
                     SKIP_RETURN_CODE 77 FIXTURES_REQUIRED pg
                     ENVIRONMENT "FLEET_TEST_SESSIONS_SHARED=1;FLEET_TEST_PG=${FLEET_PG_DIR}/conninfo")
