#!/usr/bin/python3
"""clusters/folly as a whole: YAML, schemas, Tinkerbell CRDs, the kustomization.

- every YAML file under clusters/folly parses (python3-yaml);
- fleet/classes.schema.json and class-inputs.schema.json are valid Draft 2020-12
  schemas, classes.json and class-inputs.json (the examples) validate, and broken
  copies are refused: an unknown key, a digest that is not sha256:<64 hex>, an image
  with a tag, a class of role none with an image, an endpoint with a path;
- every tinkerbell.org object (in the files and in `kubectl kustomize` output)
  validates against the openAPIV3Schema of its CRD in
  ../shared/contracts/tinkerbell/ (skipped, saying so, without the contracts), and a
  Template whose spec.data is not a string is refused;
- kustomization.yaml lists every manifest file of the tree (resources or
  configMapGenerator files), nothing that is not there; a copy missing one is refused;
- `kubectl kustomize clusters/folly` succeeds and renders every object of the listed
  files; a kustomization naming a missing file makes kubectl fail.
Skips (77) without python3-yaml or python3-jsonschema.
"""
import copy
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

try:
    import yaml
    import jsonschema
except ImportError:
    print("SKIP: python3-yaml and python3-jsonschema are needed")
    sys.exit(77)

root = os.environ.get("FLEET_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..", "..")
folly = os.path.join(root, "clusters", "folly")
contracts = os.path.join(root, "..", "shared", "contracts", "tinkerbell")
failures = []


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        failures.append(what)


def rel(p):
    return os.path.relpath(p, folly)


# 1. Every YAML parses.
docs_of = {}
for p in sorted(glob.glob(os.path.join(folly, "**", "*.y*ml"), recursive=True)):
    try:
        with open(p) as f:
            docs_of[rel(p)] = [d for d in yaml.safe_load_all(f) if d is not None]
        check(True, "%s parses" % rel(p))
    except yaml.YAMLError as e:
        check(False, "%s parses: %s" % (rel(p), e))

# 2. The schemas and their examples.
V = jsonschema.Draft202012Validator


def valid(schema, doc):
    return not list(V(schema).iter_errors(doc))


for name in ("classes", "class-inputs"):
    with open(os.path.join(folly, "fleet", name + ".schema.json")) as f:
        schema = json.load(f)
    with open(os.path.join(folly, "fleet", name + ".json")) as f:
        example = json.load(f)
    try:
        V.check_schema(schema)
        check(True, "fleet/%s.schema.json is a Draft 2020-12 schema" % name)
    except jsonschema.SchemaError as e:
        check(False, "fleet/%s.schema.json is a schema: %s" % (name, e.message))
        continue
    errs = list(V(schema).iter_errors(example))
    check(not errs, "fleet/%s.json validates against its schema %s" % (
        name, [e.message for e in errs][:3]))
    cls = sorted(example["classes"])[0]
    broken = []
    b = copy.deepcopy(example); b["classes"][cls]["colour"] = "blue"
    broken.append(("an unknown key in a class", b))
    b = copy.deepcopy(example); b["extra"] = 1
    broken.append(("an unknown top-level key", b))
    if name == "classes":
        b = copy.deepcopy(example); b["classes"][cls]["digest"] = "sha256:" + "A" * 64
        broken.append(("a digest in uppercase", b))
        b = copy.deepcopy(example); b["classes"][cls]["digest"] = "sha256:" + "a" * 63
        broken.append(("a digest of 63 hex digits", b))
        b = copy.deepcopy(example); b["classes"][cls]["image"] += ":v1.13.9"
        broken.append(("an image with a tag", b))
        b = copy.deepcopy(example)
        b["classes"]["admit-only"] = {"role": "none", "image": "ghcr.io/x/y", "digest": "",
                                      "talos_version": ""}
        broken.append(("a class of role none with an image", b))
        b = copy.deepcopy(example); del b["classes"][cls]["digest"]
        broken.append(("an installing class without a digest key", b))
    else:
        b = copy.deepcopy(example); b["classes"][cls]["endpoint"] = "https://folly.lan:6443/x"
        broken.append(("an endpoint with a path", b))
        b = copy.deepcopy(example); b["classes"][cls]["kubernetes_version"] = "v1.32.4"
        broken.append(("a kubernetes_version with a v", b))
        b = copy.deepcopy(example); b["classes"][cls]["patches"] = ["machine: {}"]
        broken.append(("a patch that is not an object", b))
    for what, doc in broken:
        check(not valid(schema, doc), "fleet/%s.json with %s is refused" % (name, what))
    if name == "classes":
        good = copy.deepcopy(example)
        for c in good["classes"].values():
            c["digest"] = "sha256:" + "0" * 64
        check(valid(schema, good), "fleet/classes.json with every digest written validates")

# 3. Tinkerbell objects against the CRDs.
crds = {}
if os.path.isdir(contracts):
    for p in glob.glob(os.path.join(contracts, "tinkerbell.org_*.yaml")):
        with open(p) as f:
            crd = yaml.safe_load(f)
        for v in crd["spec"]["versions"]:
            crds[(crd["spec"]["group"] + "/" + v["name"], crd["spec"]["names"]["kind"])] = \
                v["schema"]["openAPIV3Schema"]
    check(bool(crds), "the Tinkerbell CRDs are read from %s" % contracts)
else:
    print("SKIP (part): ../shared/contracts is not here (%s): no CRD check" % contracts)


def crd_check(obj, where):
    schema = crds.get((obj.get("apiVersion"), obj.get("kind")))
    check(schema is not None, "%s: %s %s has a CRD" % (where, obj.get("kind"),
                                                       obj["metadata"]["name"]))
    if schema is not None:
        errs = list(jsonschema.Draft7Validator(schema).iter_errors(obj))
        check(not errs, "%s: %s %s validates against its CRD %s" % (
            where, obj["kind"], obj["metadata"]["name"], [e.message for e in errs][:3]))
    return schema


tink = [(f, d) for f, ds in docs_of.items() for d in ds
        if isinstance(d, dict) and str(d.get("apiVersion", "")).startswith("tinkerbell.org/")]
check(bool(tink), "the tree holds Tinkerbell objects (%d)" % len(tink))
if crds:
    for f, d in tink:
        schema = crd_check(d, f)
        if schema is not None and d["kind"] == "Template":
            b = copy.deepcopy(d); b["spec"]["data"] = 5
            check(list(jsonschema.Draft7Validator(schema).iter_errors(b)) != [],
                  "%s with spec.data: 5 is refused by the CRD" % f)

# 4. The kustomization lists every manifest file, nothing more.
kust = docs_of.get("kustomization.yaml", [{}])[0]


def listed_files(k):
    out = list(k.get("resources", []))
    for g in k.get("configMapGenerator", []):
        out += [x.split("=", 1)[-1] for x in g.get("files", [])]
    return out


manifests = sorted(f for f in docs_of if f != "kustomization.yaml")
listed = listed_files(kust)
check(kust.get("kind") == "Kustomization", "kustomization.yaml is a Kustomization")
check(sorted(listed) == manifests and len(set(listed)) == len(listed),
      "the kustomization lists every manifest file once: missing %s, extra %s" % (
          sorted(set(manifests) - set(listed)), sorted(set(listed) - set(manifests))))
b = copy.deepcopy(kust); b["resources"] = b["resources"][1:]
check(sorted(listed_files(b)) != manifests,
      "a kustomization missing %s is refused" % kust["resources"][0])
for f in kust.get("resources", []):
    for d in docs_of.get(f, []):
        check(isinstance(d, dict) and d.get("apiVersion") and d.get("kind")
              and (d.get("metadata") or {}).get("name"),
              "%s: %s is a Kubernetes object" % (f, (d or {}).get("kind")))

# 5. kubectl kustomize.
kubectl = shutil.which("kubectl")
if not kubectl:
    print("SKIP (part): kubectl is not installed: `kubectl kustomize` not run")
else:
    r = subprocess.run([kubectl, "kustomize", folly], capture_output=True, text=True)
    check(r.returncode == 0, "kubectl kustomize clusters/folly succeeds %s" % r.stderr.strip())
    if r.returncode == 0:
        out = [d for d in yaml.safe_load_all(r.stdout) if d]
        keys = {(d["kind"], d["metadata"]["name"]) for d in out}
        want = {(d["kind"], d["metadata"]["name"]) for f in kust["resources"]
                for d in docs_of[f]}
        check(want <= keys, "it renders every object of the listed files (%d)" % len(want))
        check(("ConfigMap", "fleetd-alerts") in keys, "and the alerts ConfigMap")
        for d in out:
            if crds and str(d.get("apiVersion", "")).startswith("tinkerbell.org/"):
                crd_check(d, "kubectl kustomize output")
    tmp = tempfile.mkdtemp(prefix="folly-kust-")
    try:
        t = os.path.join(tmp, "folly")
        shutil.copytree(folly, t)
        os.remove(os.path.join(t, "tinkerbell-access", "fleet-controller-cordon.yaml"))
        r = subprocess.run([kubectl, "kustomize", t], capture_output=True, text=True)
        check(r.returncode != 0, "kubectl kustomize refuses a kustomization naming a "
              "missing file (%s)" % r.stderr.strip().splitlines()[-1:])
    finally:
        shutil.rmtree(tmp)

if failures:
    print("%d failed" % len(failures))
    sys.exit(1)
print("all passed")
