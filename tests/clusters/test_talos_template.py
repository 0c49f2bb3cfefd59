#!/usr/bin/python3
"""clusters/folly/tinkerbell/talos-install-template.yaml keeps its rules.

  1. The object validates against the Template CRD's openAPIV3Schema
     (../shared/contracts/tinkerbell/tinkerbell.org_templates.yaml; skips, 77,
     without the contracts, python3-yaml or python3-jsonschema).
  2. spec.data, its Go template variables filled, is a Tinkerbell workflow
     (version, tasks, actions with name and image).
  3. The ordering rule: the first action is the check of /worker/fleet/code
     and /worker/fleet/proof, it touches no disk, and it precedes every
     action that writes one (mounts /dev, or runs wipefs, dd, sgdisk,
     blkdiscard or the installer).
  4. The check's own script, run here with sh on a temporary directory,
     passes both files as the entrypoint writes them and refuses each
     missing, empty, linked, wrongly-moded or malformed one.
  5. The installer puts the code in META 0x0b (INSTALLER_META_BASE64 of
     "0xb=<code>") and talos.config= fetches https://<fleetd>/config?code=${code}.
  6. The rule is live: the same template with the check moved after the wipe
     is refused by the check of 3.
"""
import copy
import os
import re
import shutil
import subprocess
import sys
import tempfile

try:
    import yaml
    import jsonschema
except ImportError as e:
    print("SKIP: %s (python3-yaml and python3-jsonschema)" % e)
    sys.exit(77)

root = os.environ.get("FLEET_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..", "..")
path = os.environ.get("FLEET_TEMPLATE") or os.path.join(
    root, "clusters", "folly", "tinkerbell", "talos-install-template.yaml")
crd_path = os.path.join(root, "..", "shared", "contracts", "tinkerbell",
                        "tinkerbell.org_templates.yaml")
failures = []

CHECK = "fleet-require-code-and-proof"
VARS = {
    "device_1": "52:54:00:12:34:56",
    "fleet_tools_image": "ghcr.io/folly/fleet-tools@sha256:" + "1" * 64,
    "installer_image": "ghcr.io/folly/talos-installer-worker@sha256:" + "2" * 64,
    "install_disk_serial": "S4EVNX0R123456",
    "fleetd_host": "fleetd.folly.example:8443",
}
DISK_WORDS = re.compile(r"\b(wipefs|dd|sgdisk|blkdiscard|installer|mkfs[.\w]*|parted)\b")


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        failures.append(what)


def fill(data):
    used = set(re.findall(r"\{\{\s*\.(\w+)\s*\}\}", data))
    check(used <= set(VARS), "the template uses only the documented variables (%s)"
          % ", ".join(sorted(used - set(VARS))) if used - set(VARS) else
          "the template uses only the documented variables")
    return re.sub(r"\{\{\s*\.(\w+)\s*\}\}", lambda m: VARS.get(m.group(1), "X"), data)


def script(action):
    cmd = action.get("command") or []
    return "\n".join(str(c) for c in cmd)


def writes_disk(task, action):
    vols = (action.get("volumes") or []) + (task.get("volumes") or [])
    if any(str(v).split(":")[0] == "/dev" for v in vols):
        return True
    return bool(DISK_WORDS.search(script(action)))


def ordering_ok(wf):
    """The rule of 3; returns the reasons it is broken (empty: kept)."""
    broken = []
    first = True
    seen_check = False
    for task in wf.get("tasks") or []:
        for a in task.get("actions") or []:
            if a.get("name") == CHECK:
                if not first:
                    broken.append("the check is not the first action")
                if writes_disk(task, a):
                    broken.append("the check itself touches a disk")
                seen_check = True
            elif writes_disk(task, a) and not seen_check:
                broken.append("%s writes a disk before the check" % a.get("name"))
            first = False
    if not seen_check:
        broken.append("no check action")
    return broken


with open(path) as f:
    obj = yaml.safe_load(f)

# 1. The CRD.
if not os.path.exists(crd_path):
    print("SKIP: ../shared/contracts is not here (%s)" % crd_path)
    sys.exit(77)
with open(crd_path) as f:
    crd = yaml.safe_load(f)
version = [v for v in crd["spec"]["versions"] if v["name"] == "v1alpha1"][0]
schema = version["schema"]["openAPIV3Schema"]
errs = list(jsonschema.Draft7Validator(schema).iter_errors(obj))
check(not errs, "the Template validates against the CRD's openAPIV3Schema%s"
      % ("" if not errs else ": " + "; ".join(e.message for e in errs)))
check(obj.get("apiVersion") == "tinkerbell.org/v1alpha1" and obj.get("kind") == "Template"
      and crd["spec"]["group"] == "tinkerbell.org" and crd["spec"]["names"]["kind"] == "Template",
      "apiVersion tinkerbell.org/v1alpha1, kind Template, as the CRD names them")
# The schema is loose (spec.data is any string): show it refuses what it can.
bad = copy.deepcopy(obj)
bad["spec"]["data"] = {"tasks": []}
check(list(jsonschema.Draft7Validator(schema).iter_errors(bad)),
      "the CRD schema refuses a spec.data that is not a string")

# 2. The workflow.
wf = yaml.safe_load(fill(obj["spec"]["data"]))
check(isinstance(wf, dict) and wf.get("version") == "0.1" and wf.get("tasks"),
      "spec.data is a Tinkerbell workflow (version 0.1, tasks)")
actions = [(t, a) for t in wf["tasks"] for a in t["actions"]]
check(all(a.get("name") and a.get("image") for _, a in actions),
      "every action has a name and an image")
check(wf["tasks"][0].get("worker") == VARS["device_1"], "the task runs on the worker's MAC")

# 3. Ordering.
broken = ordering_ok(wf)
check(not broken, "the check precedes every disk-writing action%s"
      % ("" if not broken else ": " + "; ".join(broken)))
names = [a["name"] for _, a in actions]
check([n for n in names if writes_disk(*[x for x in actions if x[1]["name"] == n][0])]
      == ["wipe-install-disk", "install-talos"],
      "the disk-writing actions are the wipe and the install, in that order")

# 6. The rule is live: move the check after the wipe.
moved = copy.deepcopy(wf)
acts = moved["tasks"][0]["actions"]
chk = acts.pop(0)
acts.insert(1, chk)
check(bool(ordering_ok(moved)), "moved after the wipe, the check is refused")
dropped = copy.deepcopy(wf)
dropped["tasks"][0]["actions"].pop(0)
check(bool(ordering_ok(dropped)), "without the check, the template is refused")

# 4. The check's script on real files.
sh = shutil.which("sh")
chk_action = [a for _, a in actions if a["name"] == CHECK][0]
body = chk_action["command"][-1]
check(chk_action["command"][:2] == ["/bin/sh", "-c"], "the check is a sh -c script")
check("/worker/fleet/code" in body and "/worker/fleet/proof" in body,
      "the check names both files")
if sh:
    d = tempfile.mkdtemp(prefix="fleet-template-")
    try:
        fleet = os.path.join(d, "fleet")
        local = body.replace("/worker/fleet", fleet)

        def run():
            return subprocess.run([sh, "-c", local], capture_output=True, text=True).returncode

        def put(name, data, mode=0o600):
            p = os.path.join(fleet, name)
            if os.path.lexists(p):
                os.unlink(p)
            with open(p, "w") as f:
                f.write(data)
            os.chmod(p, mode)

        os.mkdir(fleet)
        good_code = "0123456789abcdef" * 4
        check(run() != 0, "the check refuses when neither file is there")
        put("code", good_code)
        check(run() != 0, "the check refuses the code without the proof")
        put("proof", "{\"v\":1}\nsig\n")
        check(run() == 0, "the check passes both files as the entrypoint writes them")
        os.unlink(os.path.join(fleet, "code"))
        check(run() != 0, "the check refuses the proof without the code")
        put("code", good_code, 0o644)
        check(run() != 0, "the check refuses a code of mode 0644")
        put("code", good_code)
        put("proof", "", 0o600)
        check(run() != 0, "the check refuses an empty proof")
        put("proof", "x", 0o640)
        check(run() != 0, "the check refuses a proof of mode 0640")
        put("proof", "x")
        os.rename(os.path.join(fleet, "proof"), os.path.join(d, "real-proof"))
        os.symlink(os.path.join(d, "real-proof"), os.path.join(fleet, "proof"))
        check(run() != 0, "the check refuses a proof that is a symbolic link")
        os.unlink(os.path.join(fleet, "proof"))
        os.mkdir(os.path.join(fleet, "proof"))
        check(run() != 0, "the check refuses a proof that is a directory")
        os.rmdir(os.path.join(fleet, "proof"))
        put("proof", "x")
        check(run() == 0, "the check passes again once the proof is a file")
        put("code", good_code.upper())
        check(run() != 0, "the check refuses an upper-case code")
        put("code", good_code[:63])
        check(run() != 0, "the check refuses a code of 63 digits")
    finally:
        shutil.rmtree(d)
else:
    print("note: no sh here; the check's script is not run")

# 5. META 0x0b and talos.config.
inst = [a for _, a in actions if a["name"] == "install-talos"][0]
text = script(inst)
check(VARS["installer_image"] in text, "the install runs the class's installer by digest")
check("0xb=%s" in text and "INSTALLER_META_BASE64" in text and "-e INSTALLER_META_BASE64" in text,
      "the installer gets META 0x0b=<code> through INSTALLER_META_BASE64, not on argv")
check("talos.config=https://%s/config?code=${code}" % VARS["fleetd_host"] in text,
      "talos.config= is https://<fleetd>/config?code=${code}")
check("/worker/fleet/code" in text, "the code comes from /worker/fleet/code")

if failures:
    print("%d failure(s)" % len(failures))
    sys.exit(1)
print("all checks passed")
