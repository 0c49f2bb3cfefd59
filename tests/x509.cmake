# EK certificates (loader, ek_hash, chains) and the identity CA.
add_library(fleet_x509_mint STATIC unit/x509_mint.c)
target_link_libraries(fleet_x509_mint PUBLIC fleet fleet_testutil)
fleet_test(test_x509_ek unit unit/test_x509_ek.c LIBS fleet_x509_mint)
fleet_test(test_ca unit unit/test_ca.c LIBS fleet_x509_mint)
fleet_test(test_ek_chain_swtpm tpm tpm/test_ek_chain_swtpm.c LIBS fleet_swtpm)
fleet_test(test_ek_interop interop interop/test_ek_interop.c)
fleet_script_test(ek_hash_cli interop interop/ek_hash_cli.sh)
