#!/usr/bin/python3
"""Compare the talosctl fake with Talos's own golden files (not run by ctest:
it needs a Talos source tree, which ../shared does not hold).

    git clone --depth 1 --branch v1.13.9 https://github.com/siderolabs/talos
    tests/talos/talos_testdata_check.py talos

1. pkg/machinery/config/types/v1alpha1/testdata/stability/v1.13/: the worker
   and controlplane documents generate.NewInput writes for the v1.13 contract
   ("base"), and with the options of its "with overrides" case plus
   stability/patch.yaml ("overrides"), from stability/secrets.yaml: the fake's
   `gen config` must write them byte for byte. Options `gen config` has no
   flag for (extra kernel args, sysctls, CNI, local API server port,
   scheduling on control planes) go in as config patches.
2. pkg/machinery/config/configpatcher/testdata/: the inputs, patches and
   expected outputs of configpatcher's apply_test.go (strategic merge,
   JSON6902, multi-document, $patch: delete), and its expected errors.

Prints one line per case and exits 1 on any difference. Needs the schema
(FLEET_TALOS_SCHEMA or ../shared/contracts) like the fake.
"""

import difflib
import importlib.util
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
FAKE = os.path.join(HERE, "..", "fakes", "talosctl_fake.py")


def load_fake():
    spec = importlib.util.spec_from_file_location("talosctl_fake", FAKE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def report(name, got, want):
    if got == want:
        print("same: " + name)
        return 0
    print("DIFFERENT: " + name)
    sys.stdout.writelines(difflib.unified_diff(
        want.splitlines(True), got.splitlines(True), "talos", "fake"))
    return 1


def stability(talos, fake_mod):
    d = os.path.join(talos, "pkg/machinery/config/types/v1alpha1/testdata/stability")
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        opts = os.path.join(tmp, "opts.yaml")
        with open(opts, "w") as f:
            f.write("machine:\n  install:\n    extraKernelArgs: [foo=bar, bar=baz]\n"
                    "  sysctls:\n    foo: bar\ncluster:\n  network:\n    cni:\n"
                    "      name: custom\n      urls: [https://example.com/cni.yaml]\n")
        cpopts = os.path.join(tmp, "cpopts.yaml")
        with open(cpopts, "w") as f:
            f.write("cluster:\n  controlPlane:\n    localAPIServerPort: 5443\n"
                    "  allowSchedulingOnControlPlanes: true\n")
        common = ["gen", "config", "base", "https://base:6443", "--with-secrets",
                  os.path.join(d, "secrets.yaml"), "--kubernetes-version", "1.28.0",
                  "--talos-version", "v1.13", "--install-image", "", "-o", "-",
                  "--with-docs=false", "--with-examples=false"]
        flavours = {
            "base": ["--install-disk", ""],
            "overrides": ["--install-disk", "/dev/vda", "--additional-sans", "foo,bar",
                          "--dns-domain", "example.com", "--registry-mirror",
                          "ghcr.io=https://ghcr.io.my-mirror.com",
                          "--config-patch", "@" + opts,
                          "--config-patch-control-plane", "@" + cpopts,
                          "--config-patch", "@" + os.path.join(d, "patch.yaml")],
        }
        for flavour, extra in flavours.items():
            for t in ("worker", "controlplane"):
                p = subprocess.run([sys.executable, FAKE] + common + extra + ["-t", t],
                                   capture_output=True, text=True)
                got = p.stdout if p.returncode == 0 else "exit %d: %s" % (
                    p.returncode, p.stderr)
                with open(os.path.join(d, "v1.13", "%s-%s.yaml" % (flavour, t))) as f:
                    bad += report("stability/v1.13/%s-%s.yaml" % (flavour, t), got, f.read())
    return bad


def configpatcher(talos, f):
    d = os.path.join(talos, "pkg/machinery/config/configpatcher/testdata")
    schema = f.Schema.load()
    cases = [
        ("apply/config.yaml", ["apply/strategic1.yaml", "apply/jsonpatch1.yaml",
                               "apply/jsonpatch2.yaml", "apply/strategic2.yaml",
                               "apply/strategic3.yaml"], "apply/expected.yaml"),
        ("multidoc/config.yaml", ["multidoc/strategic1.yaml", "multidoc/strategic2.yaml"],
         "multidoc/expected.yaml"),
        ("multidoc/config.yaml", ["multidoc/jsonpatch.yaml", "multidoc/strategic1.yaml"],
         "!JSON6902 patches are not supported for multi-document machine configuration"),
        ("auditpolicy/config.yaml", ["auditpolicy/patch1.yaml"], "auditpolicy/expected.yaml"),
        ("patchdelete/config.yaml", ["patchdelete/strategic1.yaml"],
         "patchdelete/expected.yaml"),
        ("patchdelete/controlplane_orig.yaml", ["patchdelete/strategic2.yaml",
                                                "patchdelete/strategic3.yaml",
                                                "patchdelete/strategic4.yaml"],
         "patchdelete/controlplane_expected.yaml"),
        ("patchdeletemissing/config.yaml", ["patchdeletemissing/strategic1.yaml"],
         "!patch delete: path 'machine.network.hostname' in document '/v1alpha1': "
         "failed to delete path 'machine.network.hostname': lookup failed"),
        ("patchlink/base.yaml", ["patchlink/patch.yaml"], "patchlink/expected.yaml"),
    ]
    bad = 0
    for cfg, patches, expected in cases:
        name = "configpatcher %s + %s" % (cfg, ", ".join(patches))
        with open(os.path.join(d, cfg), "rb") as fh:
            docs = f.docs_only(f.decode_config(fh.read(), schema))
        try:
            ps = f.load_patches(["@" + os.path.join(d, p) for p in patches], schema)
            got = f.encode_config(f.apply_patches(docs, ps, schema), schema)
        except f.CmdError as e:
            got = "!" + str(e)
        if expected.startswith("!"):
            want = expected
        else:
            with open(os.path.join(d, expected)) as fh:
                want = fh.read()
        bad += report(name, got, want)
    return bad


def main(argv):
    if len(argv) != 2:
        sys.exit(__doc__)
    fake_mod = load_fake()
    bad = stability(argv[1], fake_mod) + configpatcher(argv[1], fake_mod)
    print("%d difference(s)" % bad)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
