# Adversarial review of the running node's re-check and renewal: fleetd's
# side (tests/tpm/test_reattest_attack.c, on test_reattest.c's fixtures)
# and the node's client (tests/tpm/test_tpm_reattest_attack.c, on
# test_tpm_reattest.c's). test_hole_* fail on the reviewed code.
fleet_test(test_reattest_attack tpm tpm/test_reattest_attack.c
           LIBS fleetd_reattest fleet_fwsim fleet_tpm_evidence fleet_swtpm)
fleet_test(test_tpm_reattest_attack tpm tpm/test_tpm_reattest_attack.c
           LIBS tpmreattest fleetd_reattest fleet_fwsim fleet_tpm_evidence fleet_swtpm)
