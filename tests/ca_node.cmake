# Node certificates from a PKCS#10 CSR (lib/ca.h NC1-NC11) and the identity
# reader (NR1-NR6). The fuzz target tests/fuzz/fuzz_node_csr.c runs its seeds
# as fuzz_node_csr_corpus; test_ca_node's test_fuzz_seed checks that
# corpus/fuzz_node_csr/valid-p256.der still issues.
fleet_test(test_ca_node unit unit/test_ca_node.c LIBS fleet_x509_mint)
