#!/usr/bin/env bash
# Every mutant's "@@ original" snippet matches its file exactly once, so
# scripts/mutants.sh can still apply it: a refactor that changes the code a
# mutant targets must update the mutant in the same change, or this fails
# naming the mutant. Cheap (no build); the mutants themselves run with
# scripts/mutants.sh, outside .ci/run.
set -euo pipefail
root=${FLEET_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
python3 - "$root" <<'PY'
import glob, os, re, sys
root = sys.argv[1]
bad = 0
files = sorted(glob.glob(os.path.join(root, "tests/mutants/*.mutant")))
for m in files:
    t = open(m).read()
    f = re.search(r"^file: (.*)$", t, re.M)
    if not f or "@@ original\n" not in t or "@@ replacement" not in t:
        print(f"{os.path.basename(m)}: no file: line or no @@ original/@@ replacement")
        bad += 1
        continue
    orig = t.split("@@ original\n", 1)[1].split("@@ replacement", 1)[0]
    path = os.path.join(root, f.group(1).strip())
    n = open(path).read().count(orig) if os.path.exists(path) else -1
    if n != 1:
        print(f"{os.path.basename(m)}: its original snippet matches {f.group(1)} {n} times (want 1)")
        bad += 1
print(f"{len(files) - bad} of {len(files)} mutants current")
sys.exit(1 if bad else 0)
PY
