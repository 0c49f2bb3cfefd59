# The token-based attestors' evidence (x509pop, the signed discovery
# assertion and its body), the renewal's request and ES256 (lib/join_evidence.h,
# JE1-JE6). The fuzz target is tests/fuzz/fuzz_join_evidence.c (globbed),
# seeds in tests/fuzz/corpus/fuzz_join_evidence/ (test_corpus_seeds checks
# they are valid).
fleet_test(test_join_evidence unit unit/test_join_evidence.c unit/wire_test.c)
