# The attestation protocol: wire format and bindings (lib/attest_wire*.c,
# lib/attest_b64.c, lib/attest_bindings.c) and fleetd's side of each round
# (fleetd/attest/attest_server_*.c) against a real TPM.
# The round functions are the fleetattest library (lib/CMakeLists.txt), which
# every fleet_test links.
fleet_test(test_attest_wire unit unit/test_attest_wire.c)
fleet_test(test_attest_bindings unit unit/test_attest_bindings.c)
add_library(fleet_tpm_evidence STATIC tpm/tpm_evidence.c)
target_link_libraries(fleet_tpm_evidence PUBLIC fleet fleet_swtpm PkgConfig::TSS2)
fleet_test(test_attest_server tpm tpm/test_attest_server.c
           LIBS fleet_tpm_evidence fleet_swtpm)
# The intake's EK stage with minted certificates (OAEP-labelled SPKI, EK
# attribute rules) that no swtpm certificate shows.
fleet_test(test_attest_intake_ek unit unit/test_attest_intake_ek.c
           LIBS fleet_x509_mint)
