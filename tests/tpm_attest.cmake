# TPM structures and attestation checks: public areas, names, quotes,
# certifications (lib/tpm_public.c, lib/tpm_attest.c, fleetctl quote|certify).
fleet_test(test_tpm_public unit unit/test_tpm_public.c)
fleet_test(test_quote_certify tpm tpm/test_quote_certify.c LIBS fleet_swtpm)
fleet_script_test(quote_cli tpm tpm/quote_cli.sh)
# scripts/swtpm-env.sh when its port pair is taken before swtpm binds it.
fleet_script_test(swtpm_env_cli tpm tpm/swtpm_env_cli.sh)
