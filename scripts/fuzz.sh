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

shared=../shared/data
for src in tests/fuzz/fuzz_*.c; do
  name=$(basename "$src" .c)
  seeds=tests/fuzz/corpus/$name
  scratch=build-fuzz/corpus-$name
  rm -rf "$scratch" && mkdir -p "$scratch"
  extra=()
  # A target may name shared data directories to seed from, one per line in
  # tests/fuzz/corpus/<target>.shared (paths under ../shared/data).
  if [ -f "tests/fuzz/corpus/$name.shared" ] && [ -d "$shared" ]; then
    while read -r d; do [ -n "$d" ] && [ -d "$shared/$d" ] && extra+=("$shared/$d"); done \
      < "tests/fuzz/corpus/$name.shared"
  fi
  echo "-- $name: ${seconds}s"
  (cd build-fuzz && ./tests/"$name" -max_total_time="$seconds" -max_len=131072 \
     -rss_limit_mb=2048 -print_final_stats=0 "../$scratch" "../$seeds" \
     "${extra[@]/#/../}" 2>&1 | tail -3)
done
