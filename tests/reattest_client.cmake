# tpm-reattest, the node's hourly re-check client (tpm-reattest/): its run on
# a real TPM (swtpm) against fleetd's own check component (fleetd/reattest/)
# with a real CA and store, in-process (no HTTPS); and its systemd service
# and timer (systemd-analyze verify and the offline security check).
fleet_test(test_tpm_reattest tpm tpm/test_tpm_reattest.c
           LIBS tpmreattest fleetd_reattest fleet_fwsim fleet_tpm_evidence fleet_swtpm)
fleet_script_test(tpm_reattest_systemd unit systemd/verify_unit.sh tpm-reattest)
