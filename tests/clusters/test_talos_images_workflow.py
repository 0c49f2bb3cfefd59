#!/usr/bin/python3
""".github/workflows/talos-images.yml through the real action-validator.

action-validator (@action-validator/cli, npm) checks the workflow against
GitHub's published schema. Looked for under $FLEET_NPM_PREFIX, then
/usr/local/lib/fleet-npm; skips (77) saying how to install it when absent.
- the workflow validates;
- a copy with an unknown key in a job (`colour: blue`) is refused;
- a copy with an unknown top-level key is refused;
- the workflow runs scripts/update-class-image.py and POSTs a schematic to the
  Image Factory, for each class's schematic file that exists.
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

root = os.environ.get("FLEET_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..", "..")
wf = os.path.join(root, ".github", "workflows", "talos-images.yml")
failures = []


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        failures.append(what)


av = None
for prefix in (os.environ.get("FLEET_NPM_PREFIX"), "/usr/local/lib/fleet-npm"):
    if prefix and os.access(os.path.join(prefix, "node_modules", ".bin", "action-validator"),
                            os.X_OK):
        av = os.path.join(prefix, "node_modules", ".bin", "action-validator")
        break
if not av or not shutil.which("node"):
    print("SKIP: action-validator is not installed: apt-get install npm; "
          "npm install --prefix /usr/local/lib/fleet-npm @action-validator/cli "
          "(or set FLEET_NPM_PREFIX to the prefix used)")
    sys.exit(77)


def validate(path):
    return subprocess.run([av, path], capture_output=True, text=True)


text = open(wf).read()
r = validate(wf)
check(r.returncode == 0, "talos-images.yml validates (%s)" % r.stdout.strip()[:300])

tmp = tempfile.mkdtemp(prefix="talos-wf-")
try:
    broken = re.sub(r"(?m)^(    runs-on: .*)$", r"\1\n    colour: blue", text, count=1)
    check(broken != text, "the broken copy differs")
    p = os.path.join(tmp, "job-key.yml")
    open(p, "w").write(broken)
    r = validate(p)
    check(r.returncode != 0 and "colour" in r.stdout + r.stderr,
          "a copy with an unknown job key (colour) is refused, naming it")
    p = os.path.join(tmp, "top-key.yml")
    open(p, "w").write(text + "\nfrobnicate: true\n")
    r = validate(p)
    check(r.returncode != 0 and "frobnicate" in r.stdout + r.stderr,
          "a copy with an unknown top-level key is refused, naming it")
finally:
    shutil.rmtree(tmp)

check("scripts/update-class-image.py" in text, "the workflow writes digests with the script")
check("https://factory.talos.dev/schematics" in text, "the workflow POSTs the schematic")
import json
classes = json.load(open(os.path.join(root, "clusters", "folly", "fleet", "classes.json")))
for name, c in sorted(classes["classes"].items()):
    if c.get("role") != "none":
        sp = os.path.join(root, "clusters", "folly", "images", name + ".schematic.json")
        ok = os.path.isfile(sp)
        if ok:
            ok = isinstance(json.load(open(sp)).get("customization"), dict)
        check(ok, "class %s has a schematic with a customization (%s)" % (name, sp))

if failures:
    print("%d failed" % len(failures))
    sys.exit(1)
print("all passed")
