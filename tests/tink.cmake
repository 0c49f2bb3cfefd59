# tink-attest, the HookOS client (tink-attest/, docs/tink-attest.md): its
# identity and LLDP parsing, the three rounds in-process against fleetd's
# shipped admission (and its store) on a real swtpm, and the program itself.
fleet_test(test_tink_identity unit unit/test_tink_identity.c LIBS tinkattest)
fleet_test(test_tink_attest tpm tpm/test_tink_attest.c tpm/inproc_server.c
           LIBS tinkattest fleetd_admission fleet_fwsim fleet_swtpm)
fleet_script_test(tink_attest_cli tpm tpm/tink_attest_cli.sh)
set_property(TEST tink_attest_cli APPEND PROPERTY ENVIRONMENT
  "TINK_ATTEST=$<TARGET_FILE:tink-attest>")
