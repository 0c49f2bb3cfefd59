# tink-attest, the HookOS client (tink-attest/, docs/tink-attest.md): its
# identity and LLDP parsing, the three rounds in-process against fleetd's
# round functions on a real swtpm, and the program itself.
fleet_test(test_tink_identity unit unit/test_tink_identity.c LIBS tinkattest)
fleet_test(test_tink_attest tpm tpm/test_tink_attest.c tpm/inproc_server.c
           LIBS tinkattest fleet_fwsim fleet_swtpm)
fleet_script_test(tink_attest_cli tpm tpm/tink_attest_cli.sh)
set_property(TEST tink_attest_cli APPEND PROPERTY ENVIRONMENT
  "TINK_ATTEST=$<TARGET_FILE:tink-attest>")
