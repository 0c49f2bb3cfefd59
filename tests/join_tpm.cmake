# The tpm attestor and the renewal of a TPM-held key (issue 14): the join
# service in process over a real store and CA, two swtpm machines driven by
# tink-attest's TPM client (tests/tpm/test_join_tpm.c).
fleet_test(test_join_tpm tpm tpm/test_join_tpm.c LIBS fleetd_join tinkattest fleet_swtpm
           fleet_store_location)
fleet_pg_twin(test_join_tpm) # the same on PostgreSQL (tests/CMakeLists.txt)
# Its messages (lib/tpm_join_evidence.h TE1-TE5); the fuzz targets are
# tests/fuzz/fuzz_tpm_join_evidence.c and fuzz_tpm_resolve.c (globbed).
fleet_test(test_tpm_join_evidence unit unit/test_tpm_join_evidence.c unit/wire_test.c)
# Over HTTPS: fleet-join --attestor tpm against two fleetd processes that
# share only the store and the challenge key (tests/e2e/join_tpm_e2e.sh).
fleet_script_test(join_tpm_e2e e2e e2e/join_tpm_e2e.sh)
# The cloud-iid attestor through the real fleetd over HTTPS (an OIDC
# issuer's RS256 tokens signed with openssl; tests/e2e/join_cloud_iid_e2e.sh).
fleet_script_test(join_cloud_iid_e2e e2e e2e/join_cloud_iid_e2e.sh)
# Two fleetd replicas on one real PostgreSQL store, tink-attest's rounds
# alternating between them through a relay (tests/e2e/replicas_pg_e2e.sh).
fleet_script_test(replicas_pg_e2e e2e e2e/replicas_pg_e2e.sh)
set_tests_properties(replicas_pg_e2e PROPERTIES LABELS "e2e;pg" FIXTURES_REQUIRED pg)
set_property(TEST replicas_pg_e2e APPEND PROPERTY ENVIRONMENT "FLEET_TEST_PG=${FLEET_PG_DIR}/conninfo")
