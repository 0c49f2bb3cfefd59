# The tpm attestor's sealed round-one state (lib/challenge_state.h CS1-CS3;
# issue 14): AES-256-GCM under the challenge key, bound to the CSR, at most
# 5 minutes. tests/fuzz/fuzz_challenge_state.c runs its seeds as
# fuzz_challenge_state_corpus.
fleet_test(test_challenge_state unit unit/test_challenge_state.c)
