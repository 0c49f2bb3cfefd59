# The tpm attestor and the renewal of a TPM-held key (issue 14): the join
# service in process over a real store and CA, two swtpm machines driven by
# tink-attest's TPM client (tests/tpm/test_join_tpm.c).
fleet_test(test_join_tpm tpm tpm/test_join_tpm.c LIBS fleetd_join tinkattest fleet_swtpm)
