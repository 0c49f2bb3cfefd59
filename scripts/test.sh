#!/usr/bin/env bash
# The test command of the README: install dependencies, build, run every test
# once.
#
# Every test except the load and bench groups runs under AddressSanitizer +
# UndefinedBehaviorSanitizer (build-asan): one run that also proves the tree
# free of the memory errors, leaks and undefined behaviour a plain build would
# hide. load and bench run on a Release build (build-rel): their figures and
# their 50-machine runs mean nothing under ASan, which would also make them
# take longer than all the rest. (Before issue 16 closed, the whole suite ran
# twice, plain and under ASan: ten minutes of CI for no extra check.)
#
# Extra arguments go to ctest in the sanitizer build only (e.g. -L unit, or
# -R test_store); give -L load or -L bench to run those groups there instead.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/deps.sh

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DFLEET_SANITIZE=ON >/dev/null
cmake --build build-asan -j"$(nproc)"
if [ $# -gt 0 ]; then
  cd build-asan && exec ctest --output-on-failure -j"$(nproc)" "$@"
fi
(cd build-asan && ctest --output-on-failure -j"$(nproc)" -LE 'load|bench')

cmake -S . -B build-rel -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build-rel -j"$(nproc)"
(cd build-rel && ctest --output-on-failure -j"$(nproc)" -L 'load|bench')
