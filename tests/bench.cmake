# The benchmarks, run tiny so they cannot rot (docs/benchmark.md): they must
# run and print every key; no figure is checked.
fleet_script_test(bench_admission_smoke bench bench/admission_smoke.sh)
set_tests_properties(bench_admission_smoke PROPERTIES TIMEOUT 300 RUN_SERIAL TRUE)
# The bench label: bench/pass (docs/benchmark-pass.md) at 2,000 devices, its
# output keys and its correctness (every eligible and revoked device in
# spire-nodes.json), never its timing. Skips without python3 or openssl.
add_test(NAME bench_pass_small
         COMMAND bash ${PROJECT_SOURCE_DIR}/bench/pass_check.sh ${PROJECT_BINARY_DIR} 2000)
set_tests_properties(bench_pass_small PROPERTIES LABELS bench SKIP_RETURN_CODE 77 TIMEOUT 300)
# The same on the PostgreSQL store (docs/benchmark-pass.md, "On PostgreSQL"):
# the pass's bulk reads through libpq, correct at 2,000 devices.
add_test(NAME bench_pass_small_pg
         COMMAND bash ${PROJECT_SOURCE_DIR}/bench/pass_check.sh ${PROJECT_BINARY_DIR} 2000)
set_tests_properties(bench_pass_small_pg PROPERTIES LABELS "bench;pg" SKIP_RETURN_CODE 77
  TIMEOUT 300 FIXTURES_REQUIRED pg ENVIRONMENT "FLEET_TEST_PG=${FLEET_PG_DIR}/conninfo")
