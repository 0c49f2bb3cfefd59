# The foundation: reader, buffers, hex, errors, and the swtpm harness.
fleet_test(test_reader unit unit/test_reader.c)
fleet_test(test_swtpm_harness tpm tpm/test_swtpm_harness.c LIBS fleet_swtpm)
