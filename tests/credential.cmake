# MakeCredential (lib/tpm_credential.c, lib/tpm_kdf.c): KDF known answers and
# refusals without a TPM; ActivateCredential round trips in swtpm.
fleet_test(test_tpm_credential unit unit/test_tpm_credential.c)
fleet_test(test_activate_credential tpm tpm/test_activate_credential.c LIBS fleet_swtpm)
