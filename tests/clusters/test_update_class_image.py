#!/usr/bin/python3
"""scripts/update-class-image.py, run as the talos-images workflow runs it, on a copy.

- refused (exit 1, the file byte-identical): a digest of 63 hex digits, an uppercase
  digest, a tag without a digest, another repository than the class's image, an
  unknown class;
- a good update writes sha256:<64 hex> into that class's digest alone, the rest of
  the file unchanged, the result valid against fleet/classes.schema.json;
- idempotent: the same update again leaves the file byte-identical; a tag before
  the @ is dropped (the same bytes as without it).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

root = os.environ.get("FLEET_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..", "..")
script = os.path.join(root, "scripts", "update-class-image.py")
src = os.path.join(root, "clusters", "folly", "fleet", "classes.json")
failures = []


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        failures.append(what)


tmp = tempfile.mkdtemp(prefix="class-image-")
try:
    path = os.path.join(tmp, "classes.json")
    shutil.copy(src, path)
    orig = open(path, "rb").read()
    image = json.loads(orig)["classes"]["worker"]["image"]
    good = "sha256:" + "0123456789abcdef" * 4

    def run(cls, ref):
        return subprocess.run([sys.executable, script, "--file", path, cls, ref],
                              capture_output=True, text=True)

    for what, cls, ref in (
            ("a digest of 63 hex digits", "worker", image + "@sha256:" + "a" * 63),
            ("an uppercase digest", "worker", image + "@sha256:" + "A" * 64),
            ("a tag without a digest", "worker", image + ":v1.13.9"),
            ("a sha512 digest", "worker", image + "@sha512:" + "a" * 128),
            ("another repository", "worker", "ghcr.io/evil/installer@" + good),
            ("an unknown class", "gpu", image + "@" + good)):
        r = run(cls, ref)
        check(r.returncode == 1 and "refused" in r.stderr and open(path, "rb").read() == orig,
              "%s is refused, the file untouched (%s)" % (what, r.stderr.strip()))

    r = run("worker", image + "@" + good)
    after = json.loads(open(path).read())
    before = json.loads(orig)
    check(r.returncode == 0 and after["classes"]["worker"]["digest"] == good,
          "a good update pins the worker's digest (%s)" % r.stdout.strip())
    before["classes"]["worker"]["digest"] = good
    check(after == before, "nothing else in the file changed")
    check(open(path).read() == json.dumps(before, indent=2) + "\n",
          "the file is written deterministically (2-space indent, key order, newline)")
    try:
        import jsonschema
        schema = json.load(open(os.path.join(root, "clusters", "folly", "fleet",
                                             "classes.schema.json")))
        check(not list(jsonschema.Draft202012Validator(schema).iter_errors(after)),
              "the result validates against classes.schema.json")
    except ImportError:
        print("SKIP (part): python3-jsonschema is not installed: no schema check")
    once = open(path, "rb").read()
    r = run("worker", image + "@" + good)
    check(r.returncode == 0 and open(path, "rb").read() == once and "already" in r.stdout,
          "the same update again is a no-op")
    r = run("worker", image + ":v1.13.9@" + good)
    check(r.returncode == 0 and open(path, "rb").read() == once,
          "a tag before the digest is dropped: the same file")
    check(sorted(os.listdir(tmp)) == ["classes.json"], "no temporary file is left")
finally:
    shutil.rmtree(tmp)

if failures:
    print("%d failed" % len(failures))
    sys.exit(1)
print("all passed")
