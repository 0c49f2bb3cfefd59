#!/usr/bin/env bash
# Build the libFuzzer targets with clang and run each for N seconds (default
# 30) from its seed corpus in tests/fuzz/corpus/<target>/, plus the shared
# real-world data where a target has some. New inputs go to a scratch corpus,
# never into the tree. A crash fails the run and leaves the input in build-fuzz/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}

CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFLEET_FUZZ=ON \
  -DFLEET_TESTS=ON >/dev/null
targets=$(for src in tests/fuzz/fuzz_*.c; do basename "$src" .c; done)
# shellcheck disable=SC2086 # one target name per word
cmake --build build-fuzz -j"$(nproc)" --target $targets >/dev/null

# One target per core at a time: each libFuzzer run is one process.
shared=../shared/data
export seconds shared
run_one() {
  local name=$1 seeds scratch extra=() d rc
  seeds=tests/fuzz/corpus/$name
  scratch=build-fuzz/corpus-$name
  rm -rf "$scratch" && mkdir -p "$scratch"
  # A target may name shared data directories to seed from, one per line in
  # tests/fuzz/corpus/<target>.shared (paths under ../shared/data).
  if [ -f "tests/fuzz/corpus/$name.shared" ] && [ -d "$shared" ]; then
    while read -r d; do [ -n "$d" ] && [ -d "$shared/$d" ] && extra+=("$shared/$d"); done \
      < "tests/fuzz/corpus/$name.shared"
  fi
  set +e
  (cd build-fuzz && ./tests/"$name" -max_total_time="$seconds" -max_len=131072 \
     -rss_limit_mb=2048 -print_final_stats=0 "../$scratch" "../$seeds" \
     "${extra[@]/#/../}") > "build-fuzz/log-$name" 2>&1
  rc=$?
  set -e
  { echo "-- $name: ${seconds}s (exit $rc)"; tail -3 "build-fuzz/log-$name"; } | flock build-fuzz -c cat
  return "$rc"
}
export -f run_one
# shellcheck disable=SC2086 # one target name per word
printf '%s\n' $targets | xargs -P "$(nproc)" -I{} bash -c 'run_one "$1"' _ {}
