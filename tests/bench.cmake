# The benchmarks, run tiny so they cannot rot (docs/benchmark.md): they must
# run and print every key; no figure is checked.
fleet_script_test(bench_admission_smoke bench bench/admission_smoke.sh)
set_tests_properties(bench_admission_smoke PROPERTIES TIMEOUT 300 RUN_SERIAL TRUE)
