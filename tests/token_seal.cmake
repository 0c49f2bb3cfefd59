# Sealed join tokens (lib/token_seal.h, TS1-TS12): ECDH-ES P-256 + HKDF-SHA256
# + AES-256-GCM, its known answer from tests/unit/token_seal_vectors.py. The
# fuzz target tests/fuzz/fuzz_token_seal.c runs its seeds as
# fuzz_token_seal_corpus.
fleet_test(test_token_seal unit unit/test_token_seal.c)
