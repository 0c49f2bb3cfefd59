#!/usr/bin/python3
"""The manifests of clusters/folly/tinkerbell-access say what their README says.

Kubernetes cannot run here, so this reads them as data: each document has the
shape the API takes (apiVersion, kind, metadata.name), the policy stops anyone
but fleetd's service account approving a request from fleetd's bootstrap group,
Talos's auto-approval binding names a group nobody is in, and no rule grants a
wildcard or more than the README lists. Needs python3-yaml; skips (77) without.
"""
import os
import sys

try:
    import yaml
except ImportError:
    print("SKIP: python3-yaml is not installed")
    sys.exit(77)

root = os.environ.get("FLEET_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..", "..")
base = os.path.join(root, "clusters", "folly", "tinkerbell-access")
failures = []


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        failures.append(what)


def load(name):
    with open(os.path.join(base, name)) as f:
        docs = [d for d in yaml.safe_load_all(f) if d is not None]
    for d in docs:
        check(isinstance(d, dict) and d.get("apiVersion") and d.get("kind")
              and (d.get("metadata") or {}).get("name"),
              "%s: %s %s has apiVersion, kind and a name" % (
                  name, d.get("kind"), (d.get("metadata") or {}).get("name")))
    return docs


def find(docs, kind, name):
    for d in docs:
        if d.get("kind") == kind and d["metadata"]["name"] == name:
            return d
    return None


def rules_of(docs):
    for d in docs:
        if d.get("kind") in ("Role", "ClusterRole"):
            for r in d.get("rules", []):
                yield d, r


SA = "system:serviceaccount:fleet-system:fleetd"
GROUP = "system:bootstrappers:fleetd"

docs = load("node-client-approval.yaml")
vap = find(docs, "ValidatingAdmissionPolicy", "fleetd-node-client-approval")
check(vap is not None, "the ValidatingAdmissionPolicy exists")
if vap:
    spec = vap["spec"]
    check(spec.get("failurePolicy") == "Fail", "the policy fails closed")
    rr = spec["matchConstraints"]["resourceRules"]
    check(any("certificatesigningrequests/approval" in r.get("resources", [])
              and "UPDATE" in r.get("operations", []) for r in rr),
          "the policy matches UPDATE of certificatesigningrequests/approval")
    exprs = " ".join(v["expression"] for v in spec["validations"])
    check(GROUP in exprs and SA in exprs,
          "the policy names fleetd's bootstrap group and fleetd's service account")
binding = find(docs, "ValidatingAdmissionPolicyBinding", "fleetd-node-client-approval")
check(binding is not None and binding["spec"]["policyName"] == "fleetd-node-client-approval"
      and binding["spec"]["validationActions"] == ["Deny"],
      "the policy's binding denies")
auto = find(docs, "ClusterRoleBinding", "system-bootstrap-approve-node-client-csr")
check(auto is not None, "Talos's auto-approval binding is overridden")
if auto:
    subjects = auto.get("subjects", [])
    check(len(subjects) == 1 and subjects[0]["kind"] == "Group"
          and not subjects[0]["name"].startswith("system:"),
          "the auto-approval binding names one group nobody is put in")
    check(auto["roleRef"]["name"] ==
          "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
          "the auto-approval binding is the nodeclient role's")
for d, r in rules_of(docs):
    check("*" not in r.get("verbs", []) and "*" not in r.get("resources", [])
          and "*" not in r.get("apiGroups", []),
          "%s: no wildcard" % d["metadata"]["name"])
    if "signers" in r.get("resources", []):
        check(r.get("resourceNames") == ["kubernetes.io/kube-apiserver-client-kubelet"]
              and r.get("verbs") == ["approve"],
              "approval on the kubelet client signer only")
    if "secrets" in r.get("resources", []):
        check(d["kind"] == "Role" and d["metadata"].get("namespace") == "kube-system",
              "secrets only in kube-system")

cordon = load("fleet-controller-cordon.yaml")
rules = list(rules_of(cordon))
check(len(rules) == 1 and rules[0][1]["resources"] == ["nodes"]
      and sorted(rules[0][1]["verbs"]) == ["get", "list", "patch"],
      "cordon: nodes get, list, patch and nothing else")

if failures:
    print("%d failed" % len(failures))
    sys.exit(1)
