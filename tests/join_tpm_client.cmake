# fleet-join's tpm attestor (tink-attest/tpm_join.h, the tpm paths of
# join_client.h) on a real swtpm: the node key and its TPM-signed CSR, the
# challenge's answer checked with lib's verifiers, the join (both rounds) and
# the renewal with the AK's key_attestation over a transport of the test's own.
fleet_test(test_join_tpm_client tpm tpm/test_join_tpm_client.c LIBS tinkattest fleet_swtpm)
add_dependencies(test_join_tpm_client fleet-join)
# The same client against the join service itself (fleet_join_handle,
# fleet_join_renew) over a real store and CA: both sides of
# lib/tpm_join_evidence.h at once.
fleet_test(test_join_tpm_service tpm tpm/test_join_tpm_service.c
           LIBS fleetd_join tinkattest fleet_swtpm fleet_store_location)
fleet_pg_twin(test_join_tpm_service) # the same on PostgreSQL (tests/CMakeLists.txt)
