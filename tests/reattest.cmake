# The hourly re-check: its wire format (lib/reattest_wire.c) and fleetd's
# side (fleetd/reattest/, RA1-RA12) against a real TPM and store.
fleet_test(test_reattest_wire unit unit/test_reattest_wire.c)
fleet_test(test_reattest tpm tpm/test_reattest.c
           LIBS fleetd_reattest fleet_fwsim fleet_tpm_evidence fleet_swtpm)
