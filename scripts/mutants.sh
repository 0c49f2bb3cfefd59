#!/usr/bin/env bash
# Mutation check of the admission rules (fleetd/admission/admission.h): each
# mutant under tests/mutants/ removes or weakens one rule, and the e2e test
# (tests/e2e/test_admission.c, `ctest -R test_admission`) must FAIL with it.
#
#   scripts/mutants.sh                 every tests/mutants/*.mutant
#   scripts/mutants.sh tests/mutants/05-device-serial-not-reread.mutant ...
#
# A mutant file (NN-name.mutant) holds comment lines (#: the rule, the test
# that kills it), "file: PATH" (relative to the source tree), optionally
# "test: NAME" (the ctest test that must fail; default test_admission),
# optionally "build: TARGET..." (what to rebuild when NAME is a script
# test, not a target), then
#   @@ original      the exact text to replace, whole lines, matching once
#   @@ replacement   what replaces it (may be empty)
#   @@ end
# A snippet rather than a patch, so unrelated edits to the file do not break
# it; when the snippet no longer matches exactly once the run says which
# mutant is stale and fails: update the snippet with the code.
#
# Nothing touches the working tree. The tree (tracked and untracked files that
# git does not ignore, uncommitted edits included) is copied to a temporary
# directory, built there once (fleetd, tink-attest, fleetctl and the mutants'
# tests) and tested unmutated: that run must pass. Then, per mutant, the file is
# mutated, the fleetd target and the mutant's test are rebuilt (tink-attest
# stays the unmutated one), the test runs, and the file is restored.
# Prints KILLED or SURVIVED per mutant; exits 1 if any survived, a snippet no
# longer matches, a mutant does not build, or the unmutated test fails.
# About 25 s per test_admission mutant on 2 cores, 80 s per test_admission_state
# one (those two suites' 37 mutants some 25 minutes; the other suites' on top).
# For developers and a CI job; not part of .ci/run. docs/testing.md describes it.
#
# Environment: MUTANTS_JOBS (build parallelism, default nproc),
# MUTANTS_TIMEOUT (seconds per test run, default 300), MUTANTS_KEEP=1 (keep
# the scratch directory and print its path).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
jobs=${MUTANTS_JOBS:-$(nproc)}
timeout=${MUTANTS_TIMEOUT:-300}

if [ $# -gt 0 ]; then
  specs=("$@")
else
  specs=("$root"/tests/mutants/*.mutant)
fi
[ -e "${specs[0]}" ] || { echo "mutants: no tests/mutants/*.mutant" >&2; exit 1; }
for s in "${specs[@]}"; do
  [ -f "$s" ] || { echo "mutants: no such mutant file: $s" >&2; exit 1; }
done

scratch=$(mktemp -d "${TMPDIR:-/tmp}/fleetd-mutants.XXXXXX")
cleanup() {
  if [ "${MUTANTS_KEEP:-0}" = 1 ]; then echo "mutants: kept $scratch"; else rm -rf "$scratch"; fi
}
trap cleanup EXIT
src=$scratch/src
build=$scratch/build
mkdir -p "$src"

# mutate SPEC TREE check|apply: check that the snippet matches exactly once
# in TREE's file, or replace it there. Prints the file path on success.
mutate() {
  python3 - "$1" "$2" "$3" <<'PY'
import sys
spec, tree, mode = sys.argv[1:4]
path, orig, repl, part = None, [], [], None
for line in open(spec, encoding="utf-8").read().splitlines(keepends=True):
    tag = line.rstrip("\n")
    if part is None and tag.startswith("#"):
        continue
    if part is None and tag.startswith("file:"):
        path = tag[5:].strip()
    elif part is None and (tag.startswith("test:") or tag.startswith("build:")):
        pass  # read by the shell (test_of, build_of)
    elif tag == "@@ original":
        part = orig
    elif tag == "@@ replacement":
        part = repl
    elif tag == "@@ end":
        part = "end"
    elif isinstance(part, list):
        part.append(line)
    elif tag.strip():
        sys.exit(f"{spec}: unexpected line {tag!r}")
if not path or part != "end" or not orig:
    sys.exit(f"{spec}: needs file:, @@ original, @@ replacement and @@ end")
orig, repl = "".join(orig), "".join(repl)
full = f"{tree}/{path}"
try:
    text = open(full, encoding="utf-8").read()
except OSError as e:
    sys.exit(f"{spec}: {path}: {e.strerror}")
n = text.count(orig)
if n != 1:
    sys.exit(f"{spec}: the original snippet matches {path} {n} times, not once (stale mutant?)")
if mode == "apply":
    open(full, "w", encoding="utf-8").write(text.replace(orig, repl))
print(path)
PY
}

test_of() { # the ctest test a mutant names (default test_admission)
  local t
  t=$(sed -n 's/^test:[[:space:]]*//p' "$1" | head -n 1)
  echo "${t:-test_admission}"
}
# "build: TARGET..." (optional): what to rebuild for the test when it is not
# a target of its own (a script test: the programs it runs).
build_of() {
  local b
  b=$(sed -n 's/^build:[[:space:]]*//p' "$1" | head -n 1)
  echo "${b:-$(test_of "$1")}"
}
tests=$(for s in "${specs[@]}"; do test_of "$s"; done | sort -u)
targets=$(for s in "${specs[@]}"; do build_of "$s"; done | tr ' ' '\n' | sort -u)

stale=0
for s in "${specs[@]}"; do
  mutate "$s" "$root" check >/dev/null || stale=$((stale + 1))
done
if [ "$stale" -gt 0 ]; then
  echo "mutants: $stale mutant(s) no longer match the source; nothing was run" >&2
  exit 1
fi

echo "mutants: copying the tree to $src"
(cd "$root" && git ls-files -z -co --exclude-standard |
  tar --null --ignore-failed-read -T - -cf - 2>/dev/null) | tar -xf - -C "$src"

# Tests read ../shared beside the tree (contracts, data): the copy gets it too,
# or every test needing it would skip, and a skipped test kills no mutant.
[ -d "$root/../shared" ] && ln -s "$(cd "$root/../shared" && pwd)" "$scratch/shared"

echo "mutants: building (unmutated)"
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$scratch/configure.log" 2>&1 ||
  { cat "$scratch/configure.log"; exit 1; }
# shellcheck disable=SC2086 # $tests: one word per test
cmake --build "$build" -j"$jobs" --target fleetd tink-attest fleetctl $targets \
  >"$scratch/build.log" 2>&1 || { tail -40 "$scratch/build.log"; exit 1; }

run_test() { # test, log file; returns ctest's status
  (cd "$build" && ctest -R "^$1\$" --timeout "$timeout" --output-on-failure) >"$2" 2>&1
}
for t in $tests; do
  if ! run_test "$t" "$scratch/baseline-$t.log"; then
    tail -40 "$scratch/baseline-$t.log"
    echo "mutants: $t fails without any mutant; fix that first" >&2
    exit 1
  fi
  if grep -q "Skipped\|\*\*\*Not Run" "$scratch/baseline-$t.log"; then
    tail -20 "$scratch/baseline-$t.log"
    echo "mutants: $t skips here, so no mutant of it can be judged" >&2
    exit 1
  fi
  echo "mutants: $t passes unmutated"
done

killed=0 survived=0 broken=0
for s in "${specs[@]}"; do
  name=$(basename "$s" .mutant)
  t=$(test_of "$s")
  file=$(mutate "$s" "$src" check)
  cp -p "$src/$file" "$scratch/pristine"
  mutate "$s" "$src" apply >/dev/null
  # fleetd, and the test itself: a unit test links the mutated code too.
  # shellcheck disable=SC2046 # build_of: one word per target
  if ! cmake --build "$build" -j"$jobs" --target fleetd $(build_of "$s") >"$scratch/$name.build.log" 2>&1; then
    echo "BUILD-FAILED $name (the mutant does not compile: $scratch/$name.build.log)"
    tail -15 "$scratch/$name.build.log"
    broken=$((broken + 1))
  elif run_test "$t" "$scratch/$name.log"; then
    echo "SURVIVED     $name ($file): $t passed with the rule removed"
    survived=$((survived + 1))
  else
    failed=$(grep -E '^\[  FAILED  \] [a-z_]+$' "$scratch/$name.log" | awk '{print $4}' |
      sort -u | paste -sd, - || true)
    echo "KILLED       $name (${failed:-$t failed})"
    killed=$((killed + 1))
  fi
  # Restored with a new mtime, so the next build recompiles it.
  cp "$scratch/pristine" "$src/$file"
  touch "$src/$file"
done

total=${#specs[@]}
echo "mutants: $killed killed, $survived survived, $broken did not build, of $total"
[ "$survived" -eq 0 ] && [ "$broken" -eq 0 ]
