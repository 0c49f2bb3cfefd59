#!/usr/bin/python3
# Contract fake of talosctl v1.13.9 (siderolabs/talos tag v1.13.9, commit
# 3ebd10a7c1bd0f81742bdcd0c3fe56d727db7401), checked against these sources:
#   cmd/talosctl/main.go, cmd/talosctl/cmd/root.go      exit 1; the error is
#       printed bare (SilenceErrors: no "Error: " prefix), then a blank line
#       and the usage when it names a flag, a command or arg(s)
#   cmd/talosctl/cmd/mgmt/gen/{gen,secrets,config}.go   flags, defaults,
#       output paths (controlplane.yaml, worker.yaml, talosconfig), --force
#   cmd/talosctl/cmd/mgmt/validate.go, internal/app/machined/pkg/runtime/mode.go
#   cmd/talosctl/cmd/talos/version.go, pkg/machinery/version/version.go
#   pkg/machinery/config/generate/{generate,init,controlplane,worker,network,
#       registry,talosconfig,options}.go, pkg/machinery/config/contract.go
#   pkg/machinery/config/generate/secrets/{bundle,secrets,ca,utils}.go and
#       siderolabs/crypto v0.6.5 x509 (CA shape, PEM types, RSA-4096 SA key)
#   pkg/machinery/config/bundle/bundle.go (which patch goes to which type)
#   pkg/machinery/config/configpatcher/{load,apply,strategic,json6902}.go,
#       pkg/machinery/config/merge/merge.go (strategic merge rules),
#       configloader/internal/decoder/{decoder,delete,selector}.go
#   pkg/machinery/config/container/container.go (multi-document encoding,
#       validation wrapping), types/v1alpha1/v1alpha1_validation.go,
#       types/network/hostname.go, siderolabs/gen xyaml (unknown keys)
#   pkg/machinery/config/types/v1alpha1/v1alpha1_types.go (docgen:nodoc
#       fields the schema omits, omitempty: NODOC and GO_STRUCTS below)
#   pkg/machinery/config/types/v1alpha1/testdata/stability/v1.13/*.yaml and
#       pkg/machinery/config/configpatcher/testdata/ (the exact documents this
#       fake reproduces byte for byte: tests/talos/talos_testdata_check.py)
#   spf13/cobra v1.10.2 (command.go, args.go), spf13/pflag v1.0.10 (flag.go,
#       errors.go), hashicorp/go-multierror (format.go), go.yaml.in/yaml/v4
#       rc.4 (representer.go: quoting, map key order)
# See tests/fakes/README.md for what it reproduces and what it approximates.
"""talosctl contract fake: gen secrets, gen config, validate, version --client.

Needs /usr/bin/python3 with python3-yaml; validate also python3-jsonschema;
gen config and validate read the real Talos v1.13.9 JSON Schema from
$FLEET_TALOS_SCHEMA (default ../shared/contracts/talos/config.schema.json
beside the repository) and refuse to run without it. Keys and certificates
come from python3-cryptography when importable, else from the openssl CLI
(FAKE_TALOSCTL_CRYPTO=openssl forces the CLI).
"""

import base64
import copy
import csv
import datetime
import io
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import urllib.parse

try:
    import yaml
except ImportError:  # pragma: no cover
    sys.stderr.write("talosctl fake: python3-yaml is required\n")
    sys.exit(1)

TAG = "v1.13.9"
SHA = "3ebd10a7"
DEFAULT_K8S = "1.36.3"
INSTALLER_REPO = "ghcr.io/siderolabs/installer"
KUBELET_IMAGE = "ghcr.io/siderolabs/kubelet"
APISERVER_IMAGE = "registry.k8s.io/kube-apiserver"
CONTROLLER_MANAGER_IMAGE = "registry.k8s.io/kube-controller-manager"
PROXY_IMAGE = "registry.k8s.io/kube-proxy"
SCHEDULER_IMAGE = "registry.k8s.io/kube-scheduler"
LABEL_EXCLUDE_LB = "node.kubernetes.io/exclude-from-external-load-balancers"
CA_VALIDITY = datetime.timedelta(hours=87600)
ADMIN_VALIDITY = datetime.timedelta(hours=24 * 365)


class CmdError(Exception):
    """An error RunE (or cobra) returns: printed as talosctl's Execute does."""


class FakeLimit(CmdError):
    """Something the real talosctl does that this fake does not."""


def fake_limit(what):
    return FakeLimit("talosctl fake: %s is not implemented by this fake "
                     "(it follows talosctl %s for gen secrets, gen config, "
                     "validate and version --client)" % (what, TAG))


def go_quote(s):
    return json.dumps(s, ensure_ascii=False)


def multierr(errs):
    """hashicorp/go-multierror ListFormatFunc."""
    if len(errs) == 1:
        return "1 error occurred:\n\t* %s\n\n" % errs[0]
    return "%d errors occurred:\n\t%s\n\n" % (
        len(errs), "\n\t".join("* " + e for e in errs))


def enoent(path):
    return "open %s: no such file or directory" % path


def read_file(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        raise CmdError(enoent(path))
    except IsADirectoryError:
        raise CmdError("read %s: is a directory" % path)
    except PermissionError:
        raise CmdError("open %s: permission denied" % path)


# ---------------------------------------------------------------- YAML
# go-yaml resolves only true/false as booleans (YAML 1.2 core); PyYAML's 1.1
# resolver would turn `auto: off` (HostnameConfig) into False.
class GoLoader(yaml.SafeLoader):
    pass


GoLoader.yaml_implicit_resolvers = {
    k: [(t, r) for (t, r) in v if t not in (
        "tag:yaml.org,2002:bool", "tag:yaml.org,2002:timestamp",
        "tag:yaml.org,2002:int", "tag:yaml.org,2002:float")]
    for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()}
GoLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool",
    re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))
GoLoader.add_implicit_resolver(
    "tag:yaml.org,2002:int",
    re.compile(r"^(?:[-+]?[0-9]+|0x[0-9a-fA-F]+|0o[0-7]+|0b[01]+)$"),
    list("-+0123456789"))
GoLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
               r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"),
    list("-+0123456789."))


def _construct_go_int(loader, node):
    v = loader.construct_scalar(node).replace("_", "")
    sign = -1 if v.startswith("-") else 1
    v = v.lstrip("+-")
    if v.startswith("0o"):
        return sign * int(v[2:], 8)
    return sign * int(v, 0) if v[:2] in ("0x", "0b") else sign * int(v, 10)


GoLoader.add_constructor("tag:yaml.org,2002:int", _construct_go_int)


def _construct_mapping_nodup(loader, node):
    seen = {}
    for k, _ in node.value:
        key = loader.construct_object(k, deep=True)
        if isinstance(key, (str, int, float, bool)) and key in seen:
            raise CmdError("yaml: unmarshal errors:\n  line %d: mapping key %s "
                           "already defined at line %d" % (
                               k.start_mark.line + 1, go_quote(str(key)),
                               seen[key]))
        seen[key] = k.start_mark.line + 1
    loader.flatten_mapping(node)
    return {loader.construct_object(k, deep=True):
            loader.construct_object(v, deep=True) for k, v in node.value}


GoLoader.add_constructor("tag:yaml.org,2002:map", _construct_mapping_nodup)


def yaml_err(e):
    msg = getattr(e, "problem", None) or str(e)
    mark = getattr(e, "problem_mark", None)
    if mark is not None:
        return "yaml: line %d: %s" % (mark.line + 1, msg)
    return "yaml: %s" % msg


def load_documents(text):
    """[(line, node-or-None, value)] for each YAML document, as go-yaml's
    decoder sees them (line of the top node, 1-based)."""
    out = []
    try:
        for node in yaml.compose_all(text, Loader=GoLoader):
            if node is None:
                continue
            loader = GoLoader("")
            value = loader.construct_document(node)
            out.append((node.start_mark.line + 1, node, value))
    except yaml.YAMLError as e:
        raise CmdError("decode error: " + yaml_err(e))
    return out


_resolver = yaml.resolver.Resolver()


def _plain_ok(s):
    if s == "" or "\n" in s:
        return False
    if _resolver.resolve(yaml.ScalarNode, s, (True, False)) != \
            "tag:yaml.org,2002:str":
        return False  # go-yaml quotes anything that would resolve otherwise,
        # and the YAML 1.1 booleans / base-60 numbers (isOldBool, isBase60Float)
    a = yaml.emitter.Emitter(io.StringIO()).analyze_scalar(s)
    return a.allow_block_plain and not a.multiline


def _dq(s):
    out = ['"']
    for ch in s:
        o = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif o < 0x20 or o == 0x7f:
            out.append("\\x%02X" % o)
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def fmt_scalar(v):
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if v != v:
            return ".nan"
        if v in (float("inf"), float("-inf")):
            return ".inf" if v > 0 else "-.inf"
        r = repr(v)
        return r[:-2] if r.endswith(".0") else r
    s = str(v)
    return s if _plain_ok(s) else _dq(s)


def _go_key_less(a, b):
    """go-yaml keyList.Less for string keys (digit runs compare as numbers,
    letters before other characters)."""
    ar, br = list(a), list(b)
    digits = False
    for i in range(min(len(ar), len(br))):
        if ar[i] == br[i]:
            digits = ar[i].isdigit()
            continue
        al, bl = ar[i].isalpha(), br[i].isalpha()
        if al and bl:
            return ar[i] < br[i]
        if al or bl:
            return al if digits else bl
        an = bn = 0
        if ar[i] == "0" or br[i] == "0":
            j = i - 1
            while j >= 0 and ar[j].isdigit():
                if ar[j] != "0":
                    an = bn = 1
                    break
                j -= 1
        ai = i
        while ai < len(ar) and ar[ai].isdigit():
            an = an * 10 + int(ar[ai])
            ai += 1
        bi = i
        while bi < len(br) and br[bi].isdigit():
            bn = bn * 10 + int(br[bi])
            bi += 1
        if an != bn:
            return an < bn
        if ai != bi:
            return ai < bi
        return ar[i] < br[i]
    return len(ar) < len(br)


def go_sorted(keys):
    import functools
    return sorted(keys, key=functools.cmp_to_key(
        lambda a, b: -1 if _go_key_less(str(a), str(b)) else
        (1 if _go_key_less(str(b), str(a)) else 0)))


def _literal(s, ind):
    """go-yaml's literal block for a multi-line string, content at ind."""
    chomp = "-" if not s.endswith("\n") else ("+" if s.endswith("\n\n") else "")
    head = "|" + ("4" if s[:1] in (" ", "\n") else "") + chomp
    body = s if chomp == "-" else s[:-1]
    return head, [(" " * ind + ln) if ln else "" for ln in body.split("\n")]


def _nested(ind):
    """libyaml increase_indent: align to the next multiple of the indent (4)."""
    return 4 * ((ind + 4) // 4)


def _key(k):
    if isinstance(k, str):
        return k if _plain_ok(k) else _dq(k)
    return fmt_scalar(k)


def _inline(val, ind):
    """(text after "key: " or "- ", continuation lines) for a leaf value."""
    if isinstance(val, dict):
        return "{}", []
    if isinstance(val, list):
        return "[]", []
    if isinstance(val, str) and "\n" in val and val.strip():
        return _literal(val, ind)
    return fmt_scalar(val), []


def emit_map(d, sch, ind, schema):
    lines = []
    child = _nested(ind)
    for k in schema.ordered_keys(d, sch):
        val, ks = d[k], schema.child(sch, k)
        if isinstance(val, dict) and val:
            lines.append(" " * ind + _key(k) + ":")
            lines.extend(emit_map(val, ks, child, schema))
        elif isinstance(val, list) and val:
            lines.append(" " * ind + _key(k) + ":")
            lines.extend(emit_seq(val, ks, child, schema))
        else:
            head, more = _inline(val, child)
            lines.append(" " * ind + _key(k) + ": " + head)
            lines.extend(more)
    return lines


def emit_seq(lst, sch, ind, schema):
    """A block sequence with its dashes at ind; an item's mapping keys sit
    after the "- " (libyaml: the first indent inside a sequence skips it)."""
    lines = []
    isch = schema.item(sch)
    for item in lst:
        if isinstance(item, dict) and item:
            sub = emit_map(item, isch, ind + 2, schema)
        elif isinstance(item, list) and item:
            sub = emit_seq(item, isch, ind + 2, schema)
        else:
            head, more = _inline(item, _nested(ind))
            lines.append(" " * ind + "- " + head)
            lines.extend(more)
            continue
        sub[0] = " " * ind + "- " + sub[0][ind + 2:]
        lines.extend(sub)
    return lines


def emit_doc(v, sch, schema):
    if isinstance(v, dict) and not v:
        return "{}\n"
    if isinstance(v, dict):
        return "\n".join(emit_map(v, sch, 0, schema)) + "\n"
    if isinstance(v, list) and v:
        return "\n".join(emit_seq(v, sch, 0, schema)) + "\n"
    if isinstance(v, list):
        return "[]\n"
    return fmt_scalar(v) + "\n"


# ---------------------------------------------------------------- schema
UNSTRUCTURED = {"x-fake": "unstructured"}   # map[string]any: keys sorted

# Fields the real decoder accepts but the schema leaves out (`docgen:nodoc`
# in pkg/machinery/config/types/v1alpha1/v1alpha1_types.go @ v1.13.9):
# definition: [(field, the field it follows in the Go struct, Go type)].
NODOC = {
    "v1alpha1.Config": [("persist", "debug", "*bool")],
    "v1alpha1.MachineConfig": [
        ("network", "pods", "*NetworkConfig"),
        ("disks", "network", "[]*MachineDisk"),
        ("env", "files", "map[string]string"),
        ("time", "env", "*TimeConfig"),
        ("registries", "sysfs", "RegistriesConfig"),
        ("systemDiskEncryption", "registries", "*SystemDiskEncryptionConfig")],
    "v1alpha1.ClusterConfig": [
        ("allowSchedulingOnMasters", "adminKubeconfig", "*bool")],
    "v1alpha1.InstallConfig": [
        ("extraKernelArgs", "diskSelector", "[]string"),
        ("extensions", "image", "[]InstallExtensionConfig"),
        ("bootloader", "extensions", "*bool")],
    "v1alpha1.APIServerConfig": [
        ("disablePodSecurityPolicy", "certSANs", "*bool")],
    "v1alpha1.EtcdConfig": [("subnet", "extraArgs", "string")],
    "v1alpha1.FeaturesConfig": [
        ("rbac", None, "*bool"), ("stableHostname", "rbac", "*bool"),
        ("apidCheckExtKeyUsage", "kubernetesTalosAPIAccess", "*bool")],
}

# The same file's structs, as far as the schema does not say them: every field
# (yaml name, Go type, omitempty) of the undocumented structs under the fields
# above, and the fields without omitempty of the documented ones (go-yaml
# writes those even when zero: `type: ""`, `cluster: null`, `routes: []`).
# Generated from v1alpha1_types.go @ v1.13.9.
GO_STRUCTS = {
    'AdmissionPluginConfig':
        [('name', 'string', 0), ('configuration', 'Unstructured', 0)],
    'AuthorizationConfigAuthorizerConfig':
        [('type', 'string', 0), ('name', 'string', 0)],
    'Bond':
        [('interfaces', '[]string', 0),
         ('deviceSelectors', '[]NetworkDeviceSelector', 1),
         ('arpIPTarget', '[]string', 1), ('mode', 'string', 0),
         ('xmitHashPolicy', 'string', 1), ('lacpRate', 'string', 1),
         ('adActorSystem', 'string', 1), ('arpValidate', 'string', 1),
         ('arpAllTargets', 'string', 1), ('primary', 'string', 1),
         ('primaryReselect', 'string', 1), ('failOverMac', 'string', 1),
         ('adSelect', 'string', 1), ('miimon', 'uint32', 1),
         ('updelay', 'uint32', 1), ('downdelay', 'uint32', 1),
         ('arpInterval', 'uint32', 1), ('resendIgmp', 'uint32', 1),
         ('minLinks', 'uint32', 1), ('lpInterval', 'uint32', 1),
         ('packetsPerSlave', 'uint32', 1), ('numPeerNotif', 'uint8', 1),
         ('tlbDynamicLb', 'uint8', 1), ('allSlavesActive', 'uint8', 1),
         ('useCarrier', '*bool', 1), ('adActorSysPrio', 'uint16', 1),
         ('adUserPortKey', 'uint16', 1), ('peerNotifyDelay', 'uint32', 1)],
    'Bridge':
        [('interfaces', '[]string', 0), ('stp', '*STP', 1),
         ('vlan', '*BridgeVLAN', 1)],
    'BridgePort': [('master', 'string', 1)],
    'BridgeVLAN': [('vlanFiltering', '*bool', 1)],
    'ClusterConfig': [('controlPlane', '*ControlPlaneConfig', 0)],
    'ClusterDiscoveryConfig': [('registries', 'DiscoveryRegistriesConfig', 0)],
    'ClusterInlineManifest': [('name', 'string', 0), ('contents', 'string', 0)],
    'ClusterNetworkConfig':
        [('dnsDomain', 'string', 0), ('podSubnets', '[]string', 0),
         ('serviceSubnets', '[]string', 0)],
    'Config':
        [('version', 'string', 0), ('machine', '*MachineConfig', 0),
         ('cluster', '*ClusterConfig', 0)],
    'ControlPlaneConfig': [('endpoint', '*Endpoint', 0)],
    'DHCPOptions':
        [('routeMetric', 'uint32', 0), ('ipv4', '*bool', 1),
         ('ipv6', '*bool', 1), ('duidv6', 'string', 1)],
    'Device':
        [('interface', 'string', 1),
         ('deviceSelector', '*NetworkDeviceSelector', 1),
         ('addresses', '[]string', 1), ('cidr', 'string', 1),
         ('routes', '[]*Route', 1), ('bond', '*Bond', 1),
         ('bridge', '*Bridge', 1), ('bridgePort', '*BridgePort', 1),
         ('vlans', '[]*Vlan', 1), ('mtu', 'int', 1), ('dhcp', '*bool', 1),
         ('ignore', '*bool', 1), ('dummy', '*bool', 1),
         ('dhcpOptions', '*DHCPOptions', 1),
         ('wireguard', '*DeviceWireguardConfig', 1),
         ('vip', '*DeviceVIPConfig', 1)],
    'DeviceVIPConfig':
        [('ip', 'string', 1), ('equinixMetal', '*VIPEquinixMetalConfig', 1),
         ('hcloud', '*VIPHCloudConfig', 1)],
    'DeviceWireguardConfig':
        [('privateKey', 'string', 1), ('listenPort', 'int', 1),
         ('firewallMark', 'int', 1), ('peers', '[]*DeviceWireguardPeer', 1)],
    'DeviceWireguardPeer':
        [('publicKey', 'string', 1), ('endpoint', 'string', 1),
         ('persistentKeepaliveInterval', 'time.Duration', 1),
         ('allowedIPs', '[]string', 1)],
    'DiscoveryRegistriesConfig':
        [('kubernetes', 'RegistryKubernetesConfig', 0),
         ('service', 'RegistryServiceConfig', 0)],
    'DiskPartition': [('size', 'DiskSize', 1), ('mountpoint', 'string', 1)],
    'EncryptionConfig':
        [('provider', 'string', 0), ('keys', '[]*EncryptionKey', 0),
         ('cipher', 'string', 1), ('keySize', 'uint', 1),
         ('blockSize', 'uint64', 1), ('options', '[]string', 1)],
    'EncryptionKey':
        [('static', '*EncryptionKeyStatic', 1),
         ('nodeID', '*EncryptionKeyNodeID', 1),
         ('kms', '*EncryptionKeyKMS', 1), ('slot', 'int', 0),
         ('tpm', '*EncryptionKeyTPM', 1)],
    'EncryptionKeyKMS': [('endpoint', 'string', 0)],
    'EncryptionKeyNodeID': [],
    'EncryptionKeyStatic': [('passphrase', 'string', 1)],
    'EncryptionKeyTPM': [('checkSecurebootStatusOnEnroll', '*bool', 1)],
    'EtcdConfig': [('ca', '*PEMEncodedCertificateAndKey', 0)],
    'ExtraHost': [('ip', 'string', 0), ('aliases', '[]string', 0)],
    'ExtraMount': [('destination', 'string', 0)],
    'InstallConfig': [('wipe', '*bool', 0)],
    'InstallExtensionConfig': [('image', 'string', 0)],
    'KernelModuleConfig': [('name', 'string', 0)],
    'KubeSpanFilters':
        [('endpoints', '[]string', 1),
         ('excludeAdvertisedNetworks', '[]string', 1)],
    'LinuxIDMapping':
        [('containerID', 'uint32', 0), ('hostID', 'uint32', 0),
         ('size', 'uint32', 0)],
    'LoggingConfig': [('destinations', '[]LoggingDestination', 0)],
    'LoggingDestination':
        [('endpoint', '*Endpoint', 0), ('format', 'string', 0)],
    'MachineConfig':
        [('type', 'string', 0), ('token', 'string', 0),
         ('certSANs', '[]string', 0)],
    'MachineDisk':
        [('device', 'string', 1), ('partitions', '[]*DiskPartition', 1)],
    'MachineFile':
        [('content', 'string', 0), ('permissions', 'FileMode', 0),
         ('path', 'string', 0), ('op', 'string', 0)],
    'MachineSeccompProfile':
        [('name', 'string', 0), ('value', 'Unstructured', 0)],
    'NetworkConfig':
        [('hostname', 'string', 1), ('interfaces', '[]*Device', 1),
         ('nameservers', '[]string', 1), ('searchDomains', '[]string', 1),
         ('extraHostEntries', '[]*ExtraHost', 1),
         ('kubespan', '*NetworkKubeSpan', 1),
         ('disableSearchDomain', '*bool', 1)],
    'NetworkDeviceSelector':
        [('busPath', 'string', 1), ('hardwareAddr', 'string', 1),
         ('permanentAddr', 'string', 1), ('pciID', 'string', 1),
         ('driver', 'string', 1), ('physical', '*bool', 1)],
    'NetworkKubeSpan':
        [('enabled', '*bool', 1), ('advertiseKubernetesNetworks', '*bool', 1),
         ('allowDownPeerBypass', '*bool', 1),
         ('harvestExtraEndpoints', '*bool', 1), ('mtu', '*uint32', 1),
         ('filters', '*KubeSpanFilters', 1)],
    'RegistriesConfig':
        [('mirrors', 'map[string]*RegistryMirrorConfig', 1),
         ('config', 'map[string]*RegistryConfig', 1)],
    'RegistryAuthConfig':
        [('username', 'string', 1), ('password', 'string', 1),
         ('auth', 'string', 1), ('identityToken', 'string', 1)],
    'RegistryConfig':
        [('tls', '*RegistryTLSConfig', 1), ('auth', '*RegistryAuthConfig', 1)],
    'RegistryMirrorConfig':
        [('endpoints', '[]string', 0), ('overridePath', '*bool', 1),
         ('skipFallback', '*bool', 1)],
    'RegistryTLSConfig':
        [('clientIdentity', '*PEMEncodedCertificateAndKey', 1),
         ('ca', 'Base64Bytes', 1), ('insecureSkipVerify', '*bool', 1)],
    'Route':
        [('network', 'string', 0), ('gateway', 'string', 0),
         ('source', 'string', 1), ('metric', 'uint32', 1),
         ('mtu', 'uint32', 1)],
    'STP': [('enabled', '*bool', 1)],
    'SystemDiskEncryptionConfig':
        [('state', '*EncryptionConfig', 1),
         ('ephemeral', '*EncryptionConfig', 1)],
    'TimeConfig':
        [('disabled', '*bool', 1), ('servers', '[]string', 1),
         ('bootTimeout', 'time.Duration', 1)],
    'VIPEquinixMetalConfig': [('apiToken', 'string', 0)],
    'VIPHCloudConfig': [('apiToken', 'string', 0)],
    'Vlan':
        [('addresses', '[]string', 1), ('cidr', 'string', 1),
         ('routes', '[]*Route', 0), ('dhcp', '*bool', 1),
         ('vlanId', 'uint16', 0), ('mtu', 'uint32', 1),
         ('vip', '*DeviceVIPConfig', 1), ('dhcpOptions', '*DHCPOptions', 1)],
    'VolumeMountConfig':
        [('hostPath', 'string', 0), ('mountPath', 'string', 0)],
}


_GO_INT = {"int", "uint", "uint8", "uint16", "uint32", "uint64", "int64"}


def go_schema(t):
    """A schema-like node for a Go type of v1alpha1_types.go."""
    if t.startswith("*"):
        t = t[1:]
    if t == "string" or t == "Base64Bytes":
        return {"type": "string"}
    if t == "bool":
        return {"type": "boolean"}
    if t in _GO_INT:
        return {"type": "integer"}
    if t.startswith("[]"):
        return {"type": "array", "items": go_schema(t[2:])}
    if t.startswith("map["):
        return {"type": "object",
                "additionalProperties": go_schema(t[t.index("]") + 1:])}
    if t == "Unstructured":
        return UNSTRUCTURED
    if t == "PEMEncodedCertificateAndKey":
        return {"type": "object", "additionalProperties": False, "properties": {
            "crt": {"type": "string"}, "key": {"type": "string"}}}
    if t in GO_STRUCTS:
        return {"x-go": t}
    return {}  # time.Duration, DiskSize, FileMode: any scalar


def go_zero(t):
    if t.startswith("*"):
        return None
    if t == "string":
        return ""
    if t in _GO_INT:
        return 0
    if t.startswith("[]"):
        return []
    if t.startswith("map[") or t == "Unstructured":
        return {}
    return {}  # a struct value: filled in by fill_zero


def default_schema_path():
    repo = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    return os.path.join(repo, "..", "shared", "contracts", "talos",
                        "config.schema.json")


class Schema:
    def __init__(self, path):
        with open(path) as f:
            self.raw = json.load(f)
        self.defs = self.raw["$defs"]
        self.path = path
        self.kinds = {}
        for name, d in self.defs.items():
            p = d.get("properties", {})
            if "kind" in p and "enum" in p["kind"]:
                for k in p["kind"]["enum"]:
                    for av in p.get("apiVersion", {}).get("enum", ["v1alpha1"]):
                        self.kinds[(k, av)] = name
        self._props = {}
        self._name_of = {id(d): n for n, d in self.defs.items()}

    @classmethod
    def load(cls):
        path = os.environ.get("FLEET_TALOS_SCHEMA") or default_schema_path()
        if not os.path.isfile(path):
            raise CmdError(
                "talosctl fake: the Talos v1.13.9 machine-config JSON Schema "
                "is needed and was not found at %s (set FLEET_TALOS_SCHEMA)"
                % path)
        try:
            return cls(path)
        except (OSError, ValueError, KeyError) as e:
            raise CmdError("talosctl fake: cannot read the Talos schema %s: %s"
                           % (path, e))

    def deref(self, s):
        while isinstance(s, dict) and "$ref" in s:
            s = self.defs[s["$ref"].split("/")[-1]]
        if isinstance(s, dict) and "oneOf" in s and "properties" not in s:
            objs = [self.deref(o) for o in s["oneOf"]]
            for o in objs:
                if isinstance(o, dict) and o.get("type") == "object":
                    return o
            return None
        return s

    def def_name(self, s):
        return self._name_of.get(id(s))

    def go_name(self, s):
        """The Go struct behind a schema node (v1alpha1.X definitions and the
        undocumented structs), or None."""
        if isinstance(s, dict) and "x-go" in s:
            return s["x-go"]
        name = self.def_name(s)
        return name[len("v1alpha1."):] if name and name.startswith("v1alpha1.") \
            else None

    def _nodoc(self, s):
        return NODOC.get(self.def_name(s), [])

    def props(self, s):
        """Ordered field names of a struct (nodoc fields in place), or None
        for a map / unstructured / unknown schema."""
        s = self.deref(s)
        if not isinstance(s, dict):
            return None
        if "x-go" in s:
            return [f for f, _, _ in GO_STRUCTS[s["x-go"]]]
        if "properties" not in s:
            return None
        key = id(s)
        if key not in self._props:
            names = list(s["properties"].keys())
            for field, after, _ in self._nodoc(s):
                names.insert(names.index(after) + 1 if after else 0, field)
            self._props[key] = names
        return self._props[key]

    def is_struct(self, s):
        return self.props(s) is not None

    def child(self, s, key):
        s = self.deref(s)
        if s is UNSTRUCTURED:
            return UNSTRUCTURED
        if not isinstance(s, dict):
            return None
        if "x-go" in s:
            t = next((t for f, t, _ in GO_STRUCTS[s["x-go"]] if f == key), None)
            return go_schema(t) if t else None
        for field, _, t in self._nodoc(s):
            if field == key:
                return go_schema(t)
        if "properties" in s:
            c = s["properties"].get(key)
            return self.deref(c) if c is not None else None
        pp = s.get("patternProperties")
        if pp:
            return self.deref(next(iter(pp.values())))
        ap = s.get("additionalProperties")
        if isinstance(ap, dict):
            return self.deref(ap)
        if s.get("type") == "object":
            return UNSTRUCTURED
        return None

    def item(self, s):
        s = self.deref(s)
        if s is UNSTRUCTURED:
            return s
        if isinstance(s, dict) and isinstance(s.get("items"), dict):
            return self.deref(s["items"])
        return None

    def ordered_keys(self, d, s):
        names = self.props(s)
        if names is not None:
            known = [k for k in names if k in d]
            return known + [k for k in d if k not in names]
        return go_sorted(d.keys())  # Go maps: go-yaml sorts the keys

    def doc_schema(self, doc):
        if is_v1alpha1(doc):
            return self.defs["v1alpha1.Config"]
        name = self.kinds.get((doc.get("kind"), doc.get("apiVersion")))
        return self.defs[name] if name else None

    def unknown_keys(self, v, s):
        """The part of v the Go types would not accept (xyaml.CheckUnknownKeys)."""
        s = self.deref(s)
        if s is None or s is UNSTRUCTURED:
            return None
        if isinstance(v, dict):
            names = self.props(s)
            unknown = {}
            for k, val in v.items():
                if names is not None and k not in names:
                    unknown[k] = val
                    continue
                inner = self.unknown_keys(val, self.child(s, k))
                if inner is not None:
                    unknown[k] = inner
            return unknown or None
        if isinstance(v, list):
            out = [u for u in (self.unknown_keys(i, self.item(s)) for i in v)
                   if u is not None]
            return out or None
        return None

    def coerce(self, v, s):
        """go-yaml decodes any scalar into a string field (disk: 5 is "5")."""
        s = self.deref(s)
        if isinstance(v, dict):
            for k in list(v):
                v[k] = self.coerce(v[k], self.child(s, k))
        elif isinstance(v, list):
            isch = self.item(s)
            for i, x in enumerate(v):
                v[i] = self.coerce(x, isch)
        elif isinstance(s, dict) and s.get("type") == "string" and \
                v is not None and not isinstance(v, str):
            return fmt_scalar(v).strip('"') if not isinstance(v, bool) \
                else ("true" if v else "false")
        return v

    def fill_zero(self, v, s):
        """What the typed encoder writes: a field without omitempty even when
        it is zero, an omitempty slice or map not when it is empty."""
        s = self.deref(s)
        if isinstance(v, dict):
            go = self.go_name(s)
            keep = {f for f, _, omitempty in GO_STRUCTS.get(go, []) if not omitempty} \
                if go else set()
            for f, t, omitempty in GO_STRUCTS.get(go, []) if go else []:
                if not omitempty and f not in v:
                    v[f] = go_zero(t)
            if self.is_struct(s):
                for k in list(v):
                    ks = self.deref(self.child(s, k))
                    if k not in keep and v[k] in ([], {}) and (
                            ks is UNSTRUCTURED or not self.is_struct(ks)):
                        del v[k]
            for k in v:
                self.fill_zero(v[k], self.child(s, k))
        elif isinstance(v, list):
            for x in v:
                self.fill_zero(x, self.item(s))
        return v


def is_v1alpha1(doc):
    return isinstance(doc, dict) and "kind" not in doc and "apiVersion" not in doc


def doc_id(doc):
    """(apiVersion, kind, name) as strategic merge and the decoder key documents."""
    if is_v1alpha1(doc):
        return ("", "v1alpha1", "")
    return (str(doc.get("apiVersion", "")), str(doc.get("kind", "")),
            str(doc.get("name", "") or ""))


def encode_config(docs, schema):
    """container.encodeToBuf: the v1alpha1 document first, '---' between."""
    ordered = [d for d in docs if is_v1alpha1(d)] + \
              [d for d in docs if not is_v1alpha1(d)]
    out = ""
    for d in ordered:
        if out:
            out += "---\n"
        sch = schema.doc_schema(d)
        if is_v1alpha1(d):
            d = schema.fill_zero(copy.deepcopy(d), sch)
        out += emit_doc(d, sch, schema)
    return out


# ---------------------------------------------------------------- decoding
class Selector:
    """A `$patch: delete` (configloader/internal/decoder/selector.go); key and
    value pick a list element by one of its fields."""

    def __init__(self, path, api_version, kind, name, key="", value=""):
        self.path, self.api_version, self.kind, self.name = \
            path, api_version, kind, name
        self.key, self.value = key, value

    def id(self):
        return (self.api_version, self.kind, self.name)


def _deletes(v, path, found, line):
    """processNode: take the `$patch: delete` marks out of v, recording
    (path, key, value) for each; True when v itself is left to delete."""
    if isinstance(v, dict):
        if v.get("$patch") == "delete":
            if any(p.startswith("[") for p in path):
                raise CmdError("error processing patch delete statements at "
                               "line %d: cannot delete an inner key in '%s'"
                               % (line, ".".join(path)))
            found.append((list(path), "", ""))
            return True
        for k in list(v.keys()):
            if _deletes(v[k], path + [str(k)], found, line):
                del v[k]
                if not v:
                    return True
    elif isinstance(v, list):
        i = 0
        while i < len(v):
            item = v[i]
            if isinstance(item, dict) and item.get("$patch") == "delete":
                rest = [(k, x) for k, x in item.items() if k != "$patch"]
                if not rest:
                    raise CmdError("error processing patch delete statements at "
                                   "line %d: no key:val found in sequence node "
                                   "for path %s" % (line, ".".join(path)))
                k, x = rest[0]
                found.append((path + ["[%d]" % i], str(k),
                              "" if isinstance(x, (dict, list)) else
                              (fmt_scalar(x).strip('"') if x is not None else "")))
                del v[i]
                if not v:
                    return True
                continue
            if _deletes(item, path + ["[%d]" % i], found, line):
                del v[i]
                if not v:
                    return True
                continue
            i += 1
    return False


def _empty_doc(d):
    return isinstance(d, dict) and all(
        k in ("version", "kind", "name") and not isinstance(v, (dict, list))
        for k, v in d.items())


def decode_config(text, schema, allow_delete=False):
    """configloader.NewFromBytes: the documents, strictly decoded; with
    allow_delete also the delete selectors. Returns [("doc", d) | ("sel", s)]."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    out = []
    seen = set()
    for line, node, value in load_documents(text):
        if isinstance(node, yaml.ScalarNode) and value is None:
            continue
        if not isinstance(node, yaml.MappingNode):
            raise CmdError("expected a YAML document at line %d" % line)
        if allow_delete:
            found = []
            root = copy.deepcopy(value)
            whole = _deletes(root, [], found, line)
            api_version = str(value.get("apiVersion", "") or "")
            kind = str(value.get("kind", "") or "")
            if found and bool(kind) != bool(api_version):
                raise CmdError("error processing patch delete statements at "
                               "line %d: kind and apiVersion must be both set "
                               "for path %s" % (line, ".".join(found[0][0])))
            for p, k, x in found:
                out.append(("sel", Selector(p, api_version, kind or "v1alpha1",
                                            str(value.get("name", "") or ""),
                                            k, x)))
            if whole or _empty_doc(root):
                continue  # processNode: a document left empty is dropped
            value = root
        api_version = value.get("apiVersion")
        kind = value.get("kind")
        name = value.get("name")
        did = (str(api_version or ""), str(kind or "v1alpha1"), str(name or ""))
        if did in seen:
            raise CmdError("duplicate document %s/%s/%s is not allowed (line %d)"
                           % (did + (line,)))
        seen.add(did)
        version = str(api_version or "")
        if any(k in value for k in ("machine", "cluster", "debug", "persist")):
            version = "v1alpha1"
        prefix = "error decoding document %s/%s/%s (line %d): " % (did + (line,))
        if version == "v1alpha1" and not kind:
            sch = schema.defs["v1alpha1.Config"]
        elif not kind:
            raise CmdError(prefix + "missing kind")
        elif not version:
            raise CmdError(prefix + "missing apiVersion")
        else:
            defname = schema.kinds.get((kind, version))
            if defname is None:
                raise CmdError(prefix + "%s %s: not registered" % (
                    go_quote(str(kind)), go_quote(version)))
            sch = schema.defs[defname]
        unknown = schema.unknown_keys(value, sch)
        if unknown is not None:
            raise CmdError(prefix + "unknown keys found during decoding:\n" +
                           emit_doc(unknown, None, schema))
        size = _d(value, "machine", "install", "diskSelector", "size") \
            if is_v1alpha1(value) else None
        if size is not None:
            err = check_disk_size(str(size))
            if err:
                raise CmdError(prefix + err)
        out.append(("doc", schema.coerce(value, sch)))
    return out


_HUMAN = {"": 1, "b": 1, "k": 1000, "kb": 1000, "kib": 1024, "m": 1000 ** 2,
          "mb": 1000 ** 2, "mib": 1024 ** 2, "g": 1000 ** 3, "gb": 1000 ** 3,
          "gib": 1024 ** 3, "t": 1000 ** 4, "tb": 1000 ** 4, "tib": 1024 ** 4,
          "p": 1000 ** 5, "pb": 1000 ** 5, "pib": 1024 ** 5}


def check_disk_size(cond):
    """InstallDiskSizeMatcher.UnmarshalYAML (humanize.ParseBytes)."""
    m = re.match(r"^\s*(>=|<=|>|<|==)?\s*(.*)$", cond.strip())
    num = re.match(r"^([0-9.]+)\s*([A-Za-z]*)$", m.group(2).strip())
    if not num or num.group(2).lower() not in _HUMAN:
        return "failed to parse disk size %s: strconv.ParseFloat: parsing %s: " \
               "invalid syntax" % (m.group(2), go_quote(m.group(2)))
    return None


def docs_only(items):
    return [v for t, v in items if t == "doc"]


# ---------------------------------------------------------------- patches
REPLACE_FIELDS = {"podSubnets", "serviceSubnets", "auditPolicy"}
KEYED_LISTS = {"interfaces": ("interface", "deviceSelector"),
               "configFiles": ("mountPath",),
               "vlans": ("vlanId",), "admissionControl": ("name",)}


def _is_zero(v):
    return v is None or (isinstance(v, str) and v == "") or \
        (isinstance(v, (int, float)) and not isinstance(v, bool) and v == 0)


def merge_into(left, right, sch, schema, path):
    """merge.Merge on the YAML tree, typed by the schema (merge.go rules)."""
    struct = schema.is_struct(sch)
    for k, rv in right.items():
        ks = schema.child(sch, k)
        if k in left and left[k] is not None:
            left[k] = merge_value(left[k], rv, ks, schema, path + [str(k)], k)
        elif rv is None or (struct and _is_zero(rv)):
            continue
        else:
            left[k] = copy.deepcopy(rv)


def merge_value(lv, rv, sch, schema, path, key):
    if rv is None:
        return lv
    if key in REPLACE_FIELDS:
        return copy.deepcopy(rv) if rv not in ({}, []) else lv
    if isinstance(lv, dict) and isinstance(rv, dict):
        if key == "extraArgs":  # v1alpha1.Args.Merge: maps.Copy
            lv.update(copy.deepcopy(rv))
            return lv
        merge_into(lv, rv, sch, schema, path)
        return lv
    if isinstance(lv, list) and isinstance(rv, list):
        if key in KEYED_LISTS:
            return merge_keyed(lv, rv, KEYED_LISTS[key], schema.item(sch),
                               schema, path)
        return lv + copy.deepcopy(rv)
    if isinstance(lv, (dict, list)) or isinstance(rv, (dict, list)):
        raise CmdError("merge type mismatch at %s" % ".".join(path))
    if isinstance(rv, bool):
        return rv
    if _is_zero(rv):
        return lv
    return rv


def merge_keyed(lv, rv, keys, isch, schema, path):
    for item in rv:
        existing = None
        if isinstance(item, dict):
            for k in keys:
                if item.get(k) not in (None, "", {}):
                    for cand in lv:
                        if isinstance(cand, dict) and cand.get(k) == item[k]:
                            existing = cand
                            break
                    break
        if existing is not None:
            merge_into(existing, item, isch, schema, path)
        else:
            lv.append(copy.deepcopy(item))
    return lv


def apply_selector(docs, sel, schema):
    """selector.ApplyTo on the matching document."""
    target = None
    for d in docs:
        if doc_id(d) == sel.id() or (sel.kind == "v1alpha1" and is_v1alpha1(d)):
            target = d
            break
    if target is None:
        raise fake_limit("`$patch: delete` of %s/%s%s, which the configuration "
                         "does not hold," % (sel.api_version, sel.kind,
                                            "/" + sel.name if sel.name else ""))
    where = ".".join(sel.path)
    prefix = "patch delete: path '%s' in document '%s/%s': " % (
        where, sel.api_version, sel.kind)
    if not sel.path:
        if is_v1alpha1(target):
            raise CmdError(prefix + "can't delete the root of the legacy document")
        docs.remove(target)
        return
    lookup = CmdError(prefix + "failed to delete path '%s': lookup failed" % where)
    path = sel.path[:-1] if sel.path[-1].startswith("[") else sel.path
    cur, sch = target, schema.doc_schema(target)
    for i, p in enumerate(path):
        last = i == len(path) - 1
        if not isinstance(cur, dict):
            raise lookup
        if last and not sel.path[-1].startswith("["):
            if p in cur:
                del cur[p]
                return
            if schema.is_struct(sch) and p in schema.props(sch):
                return  # a struct field: set to its zero value, already zero
            raise lookup
        if p not in cur or cur[p] is None:
            raise lookup
        cur, sch = cur[p], schema.child(sch, p)
    if not isinstance(cur, list):
        raise CmdError(prefix + "failed to delete path '%s': searching for a key "
                       "in a non-slice" % where)
    for i, item in enumerate(cur):
        if isinstance(item, dict) and isinstance(item.get(sel.key), str) and \
                item[sel.key] == sel.value:
            del cur[i]
            return
    raise lookup


def strategic_merge(docs, patch_items, schema):
    """configpatcher.StrategicMerge: documents matched by (apiVersion, kind, name)."""
    docs = copy.deepcopy(docs)
    for t, p in patch_items:
        if t == "sel":
            apply_selector(docs, p, schema)
            continue
        pid = doc_id(p)
        target = next((d for d in docs if doc_id(d) == pid), None)
        if target is None:
            docs.append(copy.deepcopy(p))
        else:
            merge_into(target, p, schema.doc_schema(target), schema, [])
    check_container(docs)
    return docs


def check_container(docs):
    seen = set()
    for d in docs:
        if is_v1alpha1(d):
            if "v1alpha1" in seen:
                raise CmdError("duplicate v1alpha1.Config")
            seen.add("v1alpha1")
            continue
        i = "%s/%s" % (d.get("kind"), d.get("name") or "")
        if i in seen:
            raise CmdError("duplicate document: %s" % i)
        seen.add(i)


class JSONPatch(list):
    pass


def load_patch(contents, schema):
    """configpatcher.LoadPatch."""
    try:
        items = decode_config(contents, schema, allow_delete=True)
        if not items:
            raise CmdError("config not found")
        return items
    except CmdError as e:
        strategic_err = e
    text = contents.decode("utf-8", "replace") if isinstance(contents, bytes) \
        else contents
    try:
        p = json.loads(text)
        if isinstance(p, list) and all(isinstance(o, dict) for o in p):
            return JSONPatch(p)
        json_err = CmdError("json: cannot unmarshal object into Go value of "
                            "type jsonpatch.Patch")
    except ValueError as e:
        json_err = CmdError("invalid character: %s" % e)
    try:
        p = yaml.load(text, Loader=GoLoader)
        if isinstance(p, list) and all(isinstance(o, dict) for o in p):
            return JSONPatch(p)
        raise ValueError
    except (yaml.YAMLError, ValueError):
        if text.strip().startswith("["):
            raise json_err
        raise strategic_err


def load_patches(args, schema):
    """configpatcher.LoadPatches: @file, bare file name, or inline."""
    result = []
    for s in args:
        if s.startswith("@"):
            contents = read_file(s[1:])
        elif not any(c in s for c in "\n ") and not s.startswith("[") and \
                not s.startswith("{"):
            contents = read_file(s)
        else:
            contents = s.encode()
        p = load_patch(contents, schema)
        if isinstance(p, JSONPatch) and result and isinstance(result[-1], JSONPatch):
            result[-1].extend(p)
        else:
            result.append(p)
    return result


def _ptr_split(ptr):
    if ptr == "":
        return []
    if not ptr.startswith("/"):
        raise CmdError("invalid JSON pointer %s" % go_quote(ptr))
    return [t.replace("~1", "/").replace("~0", "~") for t in ptr[1:].split("/")]


def _ptr_parent(doc, ptr, op):
    toks = _ptr_split(ptr)
    if not toks:
        raise CmdError("%s operation does not apply: doc is missing path: %s"
                       % (op, go_quote(ptr)))
    cur = doc
    for t in toks[:-1]:
        if isinstance(cur, dict) and t in cur:
            cur = cur[t]
        elif isinstance(cur, list) and t.isdigit() and int(t) < len(cur):
            cur = cur[int(t)]
        else:
            raise CmdError("%s operation does not apply: doc is missing path: "
                           "%s: missing value" % (op, go_quote(ptr)))
    return cur, toks[-1]


def _ptr_get(doc, ptr, op):
    parent, last = _ptr_parent(doc, ptr, op)
    if isinstance(parent, dict) and last in parent:
        return parent[last]
    if isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        return parent[int(last)]
    raise CmdError("%s operation does not apply: doc is missing key: %s: "
                   "missing value" % (op, go_quote(ptr)))


def _ptr_add(doc, ptr, value, op="add"):
    parent, last = _ptr_parent(doc, ptr, op)
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        if last == "-":
            parent.append(value)
        elif last.isdigit() and int(last) <= len(parent):
            parent.insert(int(last), value)
        else:
            raise CmdError("add operation does not apply: doc is missing path: "
                           "%s: invalid index" % go_quote(ptr))
    else:
        raise CmdError("%s operation does not apply: doc is missing path: %s"
                       % (op, go_quote(ptr)))


def _ptr_remove(doc, ptr, op="remove"):
    parent, last = _ptr_parent(doc, ptr, op)
    if isinstance(parent, dict) and last in parent:
        return parent.pop(last)
    if isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        return parent.pop(int(last))
    raise CmdError("%s operation does not apply: doc is missing path: %s: "
                   "missing value" % (op, go_quote(ptr)))


def json6902(docs, patch, schema):
    """configpatcher.JSON6902 (RFC 6902 on the single-document config)."""
    if len(docs) != 1:
        raise CmdError("JSON6902 patches are not supported for multi-document "
                       "machine configuration")
    doc = json.loads(json.dumps(docs[0]))
    try:
        for op in patch:
            kind = op.get("op")
            path = op.get("path", "")
            if kind == "add":
                _ptr_add(doc, path, copy.deepcopy(op.get("value")))
            elif kind == "remove":
                _ptr_remove(doc, path)
            elif kind == "replace":
                _ptr_get(doc, path, "replace")
                _ptr_remove(doc, path, "replace")
                _ptr_add(doc, path, copy.deepcopy(op.get("value")), "replace")
            elif kind == "move":
                v = _ptr_remove(doc, op.get("from", ""), "move")
                _ptr_add(doc, path, v, "move")
            elif kind == "copy":
                v = _ptr_get(doc, op.get("from", ""), "copy")
                _ptr_add(doc, path, copy.deepcopy(v), "copy")
            elif kind == "test":
                if _ptr_get(doc, path, "test") != op.get("value"):
                    raise CmdError("testing value %s failed: test failed"
                                   % go_quote(path))
            else:
                raise CmdError("Unexpected kind: %s" % kind)
    except CmdError as e:
        raise CmdError("failure applying rfc6902 patches to talos machine "
                       "config: %s" % e)
    text = encode_config([doc], schema)
    return docs_only(decode_config(text, schema))


def apply_patches(docs, patches, schema):
    """configpatcher.Apply."""
    for p in patches:
        if isinstance(p, JSONPatch):
            docs = json6902(docs, p, schema)
        else:
            docs = strategic_merge(docs, p, schema)
    return docs


# ---------------------------------------------------------------- crypto
def _now():
    return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)


def _relabel(pem, old, new):
    return pem.replace(b"BEGIN " + old, b"BEGIN " + new).replace(
        b"END " + old, b"END " + new)


class CryptographyBackend:
    name = "python3-cryptography"

    def __init__(self):
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
        from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
        self.x509, self.hashes, self.ser = x509, hashes, serialization
        self.ec, self.ed25519, self.rsa = ec, ed25519, rsa
        self.EKU, self.NameOID = ExtendedKeyUsageOID, NameOID

    def _name(self, orgs):
        return self.x509.Name([self.x509.NameAttribute(
            self.NameOID.ORGANIZATION_NAME, o) for o in orgs])

    def _key_pem(self, key, fmt):
        return key.private_bytes(self.ser.Encoding.PEM, fmt,
                                 self.ser.NoEncryption())

    def _cert(self, subject, issuer, pub, sign_key, digest, not_after, ca,
              eku, skid=True):
        x509 = self.x509
        now = _now()
        b = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer)
             .public_key(pub)
             .serial_number(int.from_bytes(os.urandom(16), "big") | 1)
             .not_valid_before(now).not_valid_after(now + not_after)
             .add_extension(x509.KeyUsage(
                 digital_signature=True, content_commitment=False,
                 key_encipherment=False, data_encipherment=False,
                 key_agreement=False, key_cert_sign=ca, crl_sign=False,
                 encipher_only=False, decipher_only=False), critical=True)
             .add_extension(x509.ExtendedKeyUsage(eku), critical=False)
             .add_extension(x509.BasicConstraints(ca=ca, path_length=None),
                            critical=True))
        if skid:
            b = b.add_extension(x509.SubjectKeyIdentifier(os.urandom(20)),
                                critical=False)
        return b.sign(sign_key, digest).public_bytes(self.ser.Encoding.PEM)

    def ec_ca(self, orgs):
        key = self.ec.generate_private_key(self.ec.SECP256R1())
        name = self._name(orgs)
        crt = self._cert(name, name, key.public_key(), key, self.hashes.SHA256(),
                         CA_VALIDITY, True,
                         [self.EKU.SERVER_AUTH, self.EKU.CLIENT_AUTH])
        return crt, self._key_pem(key, self.ser.PrivateFormat.TraditionalOpenSSL)

    def ed25519_ca(self, orgs):
        key = self.ed25519.Ed25519PrivateKey.generate()
        name = self._name(orgs)
        crt = self._cert(name, name, key.public_key(), key, None, CA_VALIDITY,
                         True, [self.EKU.SERVER_AUTH, self.EKU.CLIENT_AUTH])
        return crt, _relabel(self._key_pem(key, self.ser.PrivateFormat.PKCS8),
                             b"PRIVATE KEY", b"ED25519 PRIVATE KEY")

    def rsa_key(self, bits):
        key = self.rsa.generate_private_key(public_exponent=65537, key_size=bits)
        return self._key_pem(key, self.ser.PrivateFormat.TraditionalOpenSSL)

    def ec_key(self):
        key = self.ec.generate_private_key(self.ec.SECP256R1())
        return self._key_pem(key, self.ser.PrivateFormat.TraditionalOpenSSL)

    def client_cert(self, ca_crt, ca_key, orgs, validity):
        ca = self.x509.load_pem_x509_certificate(ca_crt)
        cakey = self.ser.load_pem_private_key(
            _relabel(ca_key, b"ED25519 PRIVATE KEY", b"PRIVATE KEY"), None)
        key = self.ed25519.Ed25519PrivateKey.generate()
        crt = self._cert(self._name(orgs), ca.subject, key.public_key(), cakey,
                         None, validity, False, [self.EKU.CLIENT_AUTH],
                         skid=False)
        return crt, _relabel(self._key_pem(key, self.ser.PrivateFormat.PKCS8),
                             b"PRIVATE KEY", b"ED25519 PRIVATE KEY")

    def check_cert(self, pem):
        try:
            self.x509.load_pem_x509_certificate(pem)
        except ValueError as e:
            return "failed to parse certificate: %s" % e
        return None

    def check_key(self, pem):
        pem = _relabel(pem, b"ED25519 PRIVATE KEY", b"PRIVATE KEY")
        try:
            try:  # cryptography >= 39: skip the slow RSA consistency check
                self.ser.load_pem_private_key(
                    pem, None, unsafe_skip_rsa_key_validation=True)
            except TypeError:
                self.ser.load_pem_private_key(pem, None)
        except (ValueError, TypeError) as e:
            return "failed to parse PEM block: %s" % e
        return None


class OpensslBackend:
    name = "openssl CLI"

    def _run(self, args, data=None):
        p = subprocess.run(["openssl"] + args, input=data, capture_output=True)
        if p.returncode != 0:
            raise CmdError("talosctl fake: openssl %s failed: %s" % (
                " ".join(args[:2]), p.stderr.decode(errors="replace").strip()))
        return p.stdout

    def _ext_cnf(self, d, ca, eku):
        path = os.path.join(d, "ext.cnf")
        with open(path, "w") as f:
            f.write("[req]\ndistinguished_name = dn\nprompt = no\n[dn]\n[ext]\n")
            f.write("keyUsage = critical, digitalSignature%s\n" %
                    (", keyCertSign" if ca else ""))
            f.write("extendedKeyUsage = %s\n" % eku)
            f.write("basicConstraints = critical, CA:%s\n" %
                    ("TRUE" if ca else "FALSE"))
            if ca:
                f.write("subjectKeyIdentifier = %s\n" % os.urandom(20).hex())
        return path

    @staticmethod
    def _subj(orgs):
        return "/" + "/".join("O=" + o.replace("/", "\\/") for o in orgs) \
            if orgs else "/"

    def _self_signed(self, keyargs, orgs, digest, relabel=None):
        with tempfile.TemporaryDirectory() as d:
            key = os.path.join(d, "key.pem")
            self._run(keyargs + ["-out", key])
            cnf = self._ext_cnf(d, True, "serverAuth, clientAuth")
            args = ["req", "-x509", "-new", "-key", key, "-subj",
                    self._subj(orgs), "-days", "3650", "-set_serial",
                    "0x" + os.urandom(16).hex(), "-config", cnf,
                    "-extensions", "ext"] + (["-" + digest] if digest else [])
            crt = self._run(args)
            with open(key, "rb") as f:
                kp = f.read()
        if relabel:
            kp = _relabel(kp, b"PRIVATE KEY", relabel)
        return crt, kp

    def ec_ca(self, orgs):
        return self._self_signed(["ecparam", "-name", "prime256v1", "-genkey",
                                  "-noout"], orgs, "sha256")

    def ed25519_ca(self, orgs):
        return self._self_signed(["genpkey", "-algorithm", "ed25519"], orgs,
                                 None, b"ED25519 PRIVATE KEY")

    def rsa_key(self, bits):
        try:
            return self._run(["genrsa", "-traditional", str(bits)])
        except CmdError:
            return self._run(["genrsa", str(bits)])

    def ec_key(self):
        return self._run(["ecparam", "-name", "prime256v1", "-genkey", "-noout"])

    def client_cert(self, ca_crt, ca_key, orgs, validity):
        with tempfile.TemporaryDirectory() as d:
            paths = {n: os.path.join(d, n) for n in
                     ("ca.crt", "ca.key", "key.pem", "csr.pem")}
            with open(paths["ca.crt"], "wb") as f:
                f.write(ca_crt)
            with open(paths["ca.key"], "wb") as f:
                f.write(_relabel(ca_key, b"ED25519 PRIVATE KEY", b"PRIVATE KEY"))
            self._run(["genpkey", "-algorithm", "ed25519", "-out", paths["key.pem"]])
            cnf = self._ext_cnf(d, False, "clientAuth")
            self._run(["req", "-new", "-key", paths["key.pem"], "-subj",
                       self._subj(orgs), "-config", cnf, "-out", paths["csr.pem"]])
            crt = self._run(["x509", "-req", "-in", paths["csr.pem"], "-CA",
                             paths["ca.crt"], "-CAkey", paths["ca.key"],
                             "-set_serial", "0x" + os.urandom(16).hex(),
                             "-days", str(validity.days), "-extfile", cnf,
                             "-extensions", "ext"])
            with open(paths["key.pem"], "rb") as f:
                kp = _relabel(f.read(), b"PRIVATE KEY", b"ED25519 PRIVATE KEY")
        return crt, kp

    def check_cert(self, pem):
        p = subprocess.run(["openssl", "x509", "-noout"], input=pem,
                           capture_output=True)
        return None if p.returncode == 0 else "failed to parse certificate"

    def check_key(self, pem):
        p = subprocess.run(["openssl", "pkey", "-noout"], input=_relabel(
            pem, b"ED25519 PRIVATE KEY", b"PRIVATE KEY"), capture_output=True)
        return None if p.returncode == 0 else "failed to parse PEM block"


def crypto_backend():
    if os.environ.get("FAKE_TALOSCTL_CRYPTO") != "openssl":
        try:
            return CryptographyBackend()
        except ImportError:
            pass
    return OpensslBackend()


# ---------------------------------------------------------------- secrets
def parse_contract(v):
    """config.ParseContractFromVersion: (major, minor)."""
    v = "v" + v[1:] if v.startswith("v") else "v" + v
    m = re.match(r"^v(\d+)\.(\d+)($|\.)", v)
    if not m:
        raise CmdError("error parsing version %s" % go_quote(v))
    return (int(m.group(1)), int(m.group(2)))


def greater(contract, other):
    return contract is None or contract > other


def _token_part(n):
    chars = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = []
    while len(out) < n:
        b = os.urandom(1)[0]
        if b < 252:
            out.append(chars[b % 36])
    return "".join(out)


def gen_token():
    return _token_part(6) + "." + _token_part(16)


def b64(data):
    return base64.b64encode(data).decode()


def new_bundle(crypto, contract=None):
    """secrets.NewBundle (populate)."""
    etcd = crypto.ec_ca(["etcd"])
    k8s = crypto.ec_ca(["kubernetes"])
    agg = crypto.ec_ca([])  # CommonName("front-proxy") does not reach a CA subject
    sa = crypto.rsa_key(4096) if greater(contract, (1, 6)) else crypto.ec_key()
    talos = crypto.ed25519_ca(["talos"])
    secrets = {"bootstraptoken": gen_token()}
    if greater(contract, (1, 2)):
        secrets["secretboxencryptionsecret"] = b64(os.urandom(32))
    else:
        secrets["aescbcencryptionsecret"] = b64(os.urandom(32))
    return {
        "cluster": {"id": base64.urlsafe_b64encode(os.urandom(32)).decode(),
                    "secret": b64(os.urandom(32))},
        "secrets": secrets,
        "trustdinfo": {"token": gen_token()},
        "certs": {
            "etcd": {"crt": b64(etcd[0]), "key": b64(etcd[1])},
            "k8s": {"crt": b64(k8s[0]), "key": b64(k8s[1])},
            "k8saggregator": {"crt": b64(agg[0]), "key": b64(agg[1])},
            "k8sserviceaccount": {"key": b64(sa)},
            "os": {"crt": b64(talos[0]), "key": b64(talos[1])},
        },
    }


def bundle_yaml(bundle):
    out = []
    for sect, keys in (("cluster", ("id", "secret")),
                       ("secrets", ("bootstraptoken", "aescbcencryptionsecret",
                                    "secretboxencryptionsecret")),
                       ("trustdinfo", ("token",))):
        out.append(sect + ":")
        for k in keys:
            if k in bundle[sect] or not k.endswith("encryptionsecret"):
                out.append("    %s: %s" % (k, fmt_scalar(bundle[sect].get(k, ""))))
    out.append("certs:")
    for name in ("etcd", "k8s", "k8saggregator", "k8sserviceaccount", "os"):
        out.append("    %s:" % name)
        c = bundle["certs"][name]
        for k in (("key",) if name == "k8sserviceaccount" else ("crt", "key")):
            out.append("        %s: %s" % (k, fmt_scalar(c.get(k, ""))))
    return "\n".join(out) + "\n"


def load_bundle(path, crypto):
    """secrets.LoadBundle and Bundle.Validate."""
    data = read_file(path)
    try:
        raw = yaml.load(data.decode("utf-8", "replace"), Loader=GoLoader) or {}
    except yaml.YAMLError as e:
        raise CmdError("failed to load secrets bundle: " + yaml_err(e))
    if not isinstance(raw, dict):
        raise CmdError("failed to load secrets bundle: yaml: unmarshal errors")
    errs = []

    def sect(name):
        v = raw.get(name)
        return v if isinstance(v, dict) else None

    cl, se, tr, certs = sect("cluster"), sect("secrets"), sect("trustdinfo"), \
        sect("certs")
    if cl is None:
        errs.append("cluster is required")
    else:
        if not cl.get("id"):
            errs.append("cluster.id is required")
        if not cl.get("secret"):
            errs.append("cluster.secret is required")
    if se is None:
        errs.append("secrets is required")
    else:
        if not se.get("bootstraptoken"):
            errs.append("secrets.bootstraptoken is required")
        a, s = se.get("aescbcencryptionsecret"), se.get("secretboxencryptionsecret")
        if not a and not s:
            errs.append("one of [secrets.secretboxencryptionsecret, "
                        "secrets.aescbcencryptionsecret] is required")
        if a and s:
            errs.append("only one of [secrets.secretboxencryptionsecret, "
                        "secrets.aescbcencryptionsecret] is allowed")
    if tr is None:
        errs.append("trustdinfo is required")
    elif not tr.get("token"):
        errs.append("trustdinfo.token is required")
    decoded = {}
    if certs is None:
        errs.append("certs is required")
    else:
        cerrs = []
        for name in ("etcd", "k8s", "k8saggregator", "os", "k8sserviceaccount"):
            c = certs.get(name)
            if not isinstance(c, dict):
                cerrs.append("certs.%s is required" % name)
                continue
            try:
                pems = {k: base64.b64decode(str(c.get(k, "")), validate=True)
                        for k in ("crt", "key") if k in c}
            except ValueError as e:
                raise CmdError("failed to load secrets bundle: illegal base64 "
                               "data in certs.%s: %s" % (name, e))
            decoded[name] = pems
            if name == "k8sserviceaccount":
                err = crypto.check_key(pems.get("key", b""))
                if err:
                    cerrs.append("certs.k8sserviceaccount.key is invalid: %s" % err)
                continue
            err = crypto.check_key(pems.get("key", b"")) or \
                crypto.check_cert(pems.get("crt", b""))
            if err:
                cerrs.append("certs.%s is invalid: %s" % (name, err))
        errs.extend(cerrs)  # multierror.Append flattens validateCerts' list
    if errs:
        raise CmdError("failed to validate secrets bundle: " + multierr(errs))
    return {"cluster": cl, "secrets": se, "trustdinfo": tr, "certs": certs}


# ---------------------------------------------------------------- generate
def generate(mtype, bundle, o):
    """generate.Input.{worker,controlPlane}() for the v1.13 contract."""
    crt = lambda n: bundle["certs"][n]["crt"]  # noqa: E731
    key = lambda n: bundle["certs"][n].get("key", "")  # noqa: E731
    k8s = o["k8s"]
    machine = {"type": mtype, "token": bundle["trustdinfo"]["token"]}
    machine["ca"] = {"crt": crt("os"), "key": key("os") if mtype != "worker" else ""}
    machine["certSANs"] = list(o["sans"])
    kubelet = {}
    if k8s:
        kubelet["image"] = "%s:v%s" % (KUBELET_IMAGE, k8s)
    kubelet["defaultRuntimeSeccompProfileEnabled"] = True
    kubelet["disableManifestsDirectory"] = True
    machine["kubelet"] = kubelet
    install = {}
    if o["install_disk"]:
        install["disk"] = o["install_disk"]
    if o["install_image"]:
        install["image"] = o["install_image"]
    install["wipe"] = False
    install["grubUseUKICmdline"] = True
    machine["install"] = install
    machine["features"] = {
        "diskQuotaSupport": True,
        "kubePrism": {"enabled": True, "port": 7445},
        "hostDNS": {"enabled": True, "forwardKubeDNSToHost": True}}
    cluster = {"id": bundle["cluster"]["id"], "secret": bundle["cluster"]["secret"],
               "controlPlane": {"endpoint": o["endpoint"]},
               "clusterName": o["cluster_name"],
               "network": {"dnsDomain": o["dns_domain"],
                           "podSubnets": ["10.244.0.0/16"],
                           "serviceSubnets": ["10.96.0.0/12"]},
               "token": bundle["secrets"]["bootstraptoken"]}
    if not o["dns_domain"]:
        del cluster["network"]["dnsDomain"]
    discovery = {"enabled": o["discovery"],
                 "registries": {"kubernetes": {"disabled": True}, "service": {}}}
    if mtype == "worker":
        cluster["ca"] = {"crt": crt("k8s"), "key": ""}
    else:
        machine["nodeLabels"] = {LABEL_EXCLUDE_LB: ""}
        se = bundle["secrets"]
        if se.get("secretboxencryptionsecret"):
            cluster["secretboxEncryptionSecret"] = se["secretboxencryptionsecret"]
        cluster["ca"] = {"crt": crt("k8s"), "key": key("k8s")}
        cluster["aggregatorCA"] = {"crt": crt("k8saggregator"),
                                   "key": key("k8saggregator")}
        cluster["serviceAccount"] = {"key": key("k8sserviceaccount")}
        api = {}
        if k8s:
            api["image"] = "%s:v%s" % (APISERVER_IMAGE, k8s)
        if o["sans"]:
            api["certSANs"] = list(o["sans"])
        api["admissionControl"] = [{
            "name": "PodSecurity",
            "configuration": {
                "apiVersion": "pod-security.admission.config.k8s.io/v1alpha1",
                "kind": "PodSecurityConfiguration",
                "defaults": {"enforce": "baseline", "enforce-version": "latest",
                             "audit": "restricted", "audit-version": "latest",
                             "warn": "restricted", "warn-version": "latest"},
                "exemptions": {"usernames": [], "runtimeClasses": [],
                               "namespaces": ["kube-system"]}}}]
        api["auditPolicy"] = {"apiVersion": "audit.k8s.io/v1", "kind": "Policy",
                              "rules": [{"level": "Metadata"}]}
        cluster["apiServer"] = api
        for field, image in (("controllerManager", CONTROLLER_MANAGER_IMAGE),
                             ("proxy", PROXY_IMAGE),
                             ("scheduler", SCHEDULER_IMAGE)):
            cluster[field] = {"image": "%s:v%s" % (image, k8s)} if k8s else {}
        cluster["etcd"] = {"ca": {"crt": crt("etcd"), "key": key("etcd")}}
    cluster["discovery"] = discovery
    docs = [{"version": "v1alpha1", "debug": False, "persist": True,
             "machine": machine, "cluster": cluster}]
    mirrors = []
    for host, endpoints in o["mirrors"].items():
        mirrors.append({"apiVersion": "v1alpha1", "kind": "RegistryMirrorConfig",
                        "name": host,
                        "endpoints": [{"url": e} for e in endpoints]})
    docs.extend(sorted(mirrors, key=lambda d: d["name"]))
    docs.append({"apiVersion": "v1alpha1", "kind": "HostnameConfig",
                 "auto": "stable"})
    if o["kubespan"]:
        docs.append({"apiVersion": "v1alpha1", "kind": "KubeSpanConfig",
                     "enabled": True})
    return docs


def talosconfig_yaml(name, bundle, crypto):
    """generate.Input.Talosconfig: an os:admin client certificate."""
    os_crt = base64.b64decode(bundle["certs"]["os"]["crt"])
    os_key = base64.b64decode(bundle["certs"]["os"]["key"])
    crt, key = crypto.client_cert(os_crt, os_key, ["os:admin"], ADMIN_VALIDITY)
    ctx = {"endpoints": [], "ca": b64(os_crt), "crt": b64(crt), "key": b64(key)}
    lines = ["context: " + fmt_scalar(name), "contexts:",
             "    %s:" % (name if _plain_ok(name) else _dq(name)),
             "        endpoints: []"]
    for k in ("ca", "crt", "key"):
        lines.append("        %s: %s" % (k, ctx[k]))
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- validate
_DNS_RE = re.compile(r"^([a-zA-Z0-9_]{1}[a-zA-Z0-9_-]{0,62}){1}"
                     r"(\.[a-zA-Z0-9_]{1}[a-zA-Z0-9_-]{0,62})*[\._]?$")


def validate_endpoint_uri(ep):
    """siderolabs/net ValidateEndpointURI."""
    try:
        u = urllib.parse.urlsplit(ep)
    except ValueError as e:
        return str(e)
    host = u.netloc.rsplit("@", 1)[-1]
    if host.count(":") > 2 and ("[" not in host or "]" not in host):
        return "IPv6 addresses MUST be enclosed by square brackets"
    hostname = host
    port = ""
    if host.startswith("["):
        hostname, _, rest = host[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    elif ":" in host:
        hostname, _, port = host.rpartition(":")
    if hostname == "":
        return "hostname must not be blank"
    if port:
        if not port.isdigit():
            return "port number must be numeric"
        if not 1 <= int(port) <= 65535:
            return "port number must be between 1 and 65535"
    return None


def _d(v, *path):
    for p in path:
        if not isinstance(v, dict):
            return None
        v = v.get(p)
    return v


def validate_cluster(c, is_cp):
    """v1alpha1.ClusterConfig.Validate."""
    if not isinstance(c, dict):
        return ["cluster instructions are required"]
    ep = _d(c, "controlPlane", "endpoint")
    if ep is None:
        return ["cluster controlplane endpoint is required"]
    errs = []
    err = validate_endpoint_uri(str(ep))
    if err:
        errs.append("invalid controlplane endpoint: " + err)
    dns = _d(c, "network", "dnsDomain")
    if dns and not (len(dns) - dns.count(".") <= 255 and _DNS_RE.match(str(dns))):
        errs.append("%s is not a valid DNS name" % go_quote(str(dns)))
    if c.get("etcd") is not None and not is_cp:
        errs.append("etcd config is only allowed on control plane machines")
    if not is_cp and _d(c, "ca", "key"):
        errs.append("cluster CA key is not allowed on non-controlplane nodes "
                    "(.cluster.ca)")
    disc = c.get("discovery")
    if isinstance(disc, dict) and disc.get("enabled") and \
            not _d(disc, "registries", "service", "disabled"):
        endpoint = _d(disc, "registries", "service", "endpoint") or \
            "https://discovery.talos.dev/"
        u = urllib.parse.urlsplit(str(endpoint))
        if not u.scheme or not u.netloc:
            errs.append("cluster discovery service registry endpoint is invalid: "
                        "parse %s: invalid URI for request" % go_quote(str(endpoint)))
        elif u.path not in ("", "/"):
            errs.append("cluster discovery service path should be empty")
        if not c.get("id"):
            errs.append("cluster discovery service requires .cluster.id")
        if not c.get("secret"):
            errs.append("cluster discovery service requires .cluster.secret")
    return errs


def validate_cni(cni):
    name = (cni or {}).get("name", "flannel") if isinstance(cni, dict) else "flannel"
    urls = (cni or {}).get("urls") if isinstance(cni, dict) else None
    warnings, errs = [], []
    if name in ("flannel", "none"):
        if urls:
            errs.append('"urls" field should be empty for %s CNI' % go_quote(name))
    elif name == "custom":
        if not urls:
            warnings.append('"urls" field should not be empty for %s CNI'
                            % go_quote(name))
        for u in urls or []:
            e = validate_endpoint_uri(str(u))
            if e:
                errs.append(e)
    else:
        errs.append('cni name should be one of ["flannel", "custom", "none"]')
    return warnings, errs


MACHINE_TYPES = {"init": "init", "controlplane": "controlplane",
                 "worker": "worker", "join": "worker", "": "worker",
                 "unknown": "unknown"}


def validate_v1alpha1(c, mode, strict):
    """v1alpha1.Config.Validate (the checks this fake reproduces)."""
    m = c.get("machine")
    if not isinstance(m, dict):
        return [], ["machine instructions are required"]
    warnings, errs = [], []
    mtype_raw = str(m.get("type") or "")
    mtype = MACHINE_TYPES.get(mtype_raw, "unknown")
    is_cp = mtype in ("init", "controlplane")
    errs.extend(validate_cluster(c.get("cluster"), is_cp))
    inst = m.get("install")
    if mode == "metal":
        if not isinstance(inst, dict):
            errs.append('install instructions are required in "metal" mode')
        else:
            sel = inst.get("diskSelector")
            matcher = False
            if isinstance(sel, dict):
                if sel.get("name"):
                    errs.append("install disk selector is invalid: selector on "
                                "name is not supported")
                elif sel.get("type") not in (None, "", "nvme", "sd", "hdd", "ssd"):
                    errs.append("install disk selector is invalid: unsupported "
                                "disk type %s" % go_quote(str(sel["type"])))
                else:
                    matcher = True
            if not inst.get("disk") and not matcher:
                errs.append("either install disk or diskSelector should be defined")
            if inst.get("extraKernelArgs") and inst.get("grubUseUKICmdline"):
                errs.append("install.extraKernelArgs and install.grubUseUKICmdline "
                            "can't be used together")
    hostdns = _d(m, "features", "hostDNS") or {}
    if mode == "container":
        if not hostdns.get("enabled"):
            errs.append("feature HostDNS should be enabled in container mode "
                        "(.machine.features.hostDNS.enabled)")
        if not hostdns.get("forwardKubeDNSToHost"):
            errs.append("feature HostDNS should forward kube-dns to host in "
                        "container mode (.machine.features.hostDNS."
                        "forwardKubeDNSToHost)")
    if hostdns.get("forwardKubeDNSToHost") and not hostdns.get("enabled"):
        errs.append("feature hostDNS.forwardKubeDNSToHost requires hostDNS.enabled "
                    "to be true (.machine.features.hostDNS)")
    if mtype != "unknown" and mtype != mtype_raw:
        warnings.append("use %s instead of %s for machine type" % (
            go_quote(mtype), go_quote(mtype_raw)))
    ca = m.get("ca")
    accepted = m.get("acceptedCAs") or []
    if ca is None and not accepted:
        errs.append("issuing CA or some accepted CAs are required (.machine.ca, "
                    "machine.acceptedCAs)")
    if is_cp:
        w, e = validate_cni(_d(c, "cluster", "network", "cni"))
        warnings.extend(w)
        errs.extend(e)
        if ca is None:
            errs.append("issuing CA is required (.machine.ca)")
        elif not _d(m, "ca", "key"):
            errs.append("issuing CA key is required for controlplane nodes "
                        "(.machine.ca.key)")
    elif mtype == "worker":
        for dev in _d(m, "network", "interfaces") or []:
            if isinstance(dev, dict):
                if dev.get("vip") is not None:
                    errs.append("virtual (shared) IP is not allowed on "
                                "non-controlplane nodes")
                for vl in dev.get("vlans") or []:
                    if isinstance(vl, dict) and vl.get("vip") is not None:
                        errs.append("virtual (shared) IP is not allowed on "
                                    "non-controlplane nodes")
        if isinstance(ca, dict):
            if ca.get("key"):
                errs.append("issuing Talos API CA key is not allowed on "
                            "non-controlplane nodes (.machine.ca)")
            if not ca.get("crt") and not accepted:
                errs.append("trusted CA certificates are required on "
                            "non-controlplane nodes (.machine.ca.crt, "
                            ".machine.acceptedCAs)")
        if _d(c, "cluster", "ca", "key"):
            errs.append("issuing Kubernetes API CA key is not allowed on "
                        "non-controlplane nodes (.cluster.ca)")
    else:
        errs.append("unknown machine type %s" % go_quote(mtype_raw))
    if isinstance(inst, dict):
        seen = set()
        exts = [e.get("image") for e in inst.get("extensions") or []
                if isinstance(e, dict)]
        for img in exts:
            if img in seen:
                errs.append("duplicate system extension %s" % go_quote(str(img)))
            seen.add(img)
        if seen:
            warnings.append(".machine.install.extensions is deprecated, please see "
                            "https://docs.siderolabs.com/talos/latest/"
                            "platform-specific-installations/boot-assets")
    if _d(m, "features", "kubernetesTalosAPIAccess", "enabled") and not is_cp:
        errs.append("feature Kubernetes Talos API Access can only be enabled on "
                    "control plane machines")
    if c.get("persist") is False:
        errs.append(".persist should be enabled")
    if strict:
        errs.extend("warning: " + w for w in warnings)
        warnings = []
    return warnings, errs


def validate_hostname_doc(d):
    errs = []
    auto, host = d.get("auto"), d.get("hostname") or ""
    if auto is None and not host:
        errs.append("either 'auto' or 'hostname' must be set")
    if (auto or "") != "off" and host:
        errs.append("'auto' and 'hostname' cannot be set at the same time")
    if auto not in (None, "off", "stable"):
        errs.append("invalid value for 'auto': %s" % auto)
    if host:
        if len(host) > 253:
            errs.append("fqdn is too long: %d" % len(host))
        first = host.split(".", 1)[0]
        if not 0 < len(first) <= 63:
            errs.append("invalid hostname %s" % go_quote(first))
    return errs


def validate_container(docs, mode, strict):
    """container.Container.Validate."""
    warnings, top = [], []
    v1 = next((d for d in docs if is_v1alpha1(d)), None)
    if v1 is not None:
        w, e = validate_v1alpha1(v1, mode, strict)
        warnings.extend(w)
        if e:
            top.append("v1alpha1.Config: " + multierr(e))
    for d in docs:
        if d.get("kind") == "HostnameConfig":
            e = validate_hostname_doc(d)
            if e:
                top.append("HostnameConfig: " + "\n".join(e))
    if v1 is not None:
        for d in docs:
            if d.get("kind") == "HostnameConfig":
                if _d(v1, "machine", "network", "hostname"):
                    top.append("static hostname is already set in v1alpha1 config")
                elif _d(v1, "machine", "features", "stableHostname"):
                    top.append("stable hostname is already set in v1alpha1 config")
    return warnings, top


def strip_nodoc(v, sch, schema):
    """A copy of v without the fields the schema does not document."""
    sch = schema.deref(sch)
    if isinstance(v, dict):
        nodoc = {f for f, _, _ in NODOC.get(schema.def_name(sch), [])} \
            if isinstance(sch, dict) else set()
        return {k: strip_nodoc(x, schema.child(sch, k), schema)
                for k, x in v.items() if k not in nodoc}
    if isinstance(v, list):
        return [strip_nodoc(x, schema.item(sch), schema) for x in v]
    return v


def schema_errors(text, schema):
    """The fake's own layer: each document against its definition in the
    real JSON Schema (talosctl itself does not read the schema)."""
    try:
        import jsonschema
    except ImportError:
        raise CmdError("talosctl fake: validate needs python3-jsonschema")
    errs = []
    for line, node, value in load_documents(text):
        if value is None:
            continue
        if not isinstance(value, dict):
            continue
        sch = schema.doc_schema(value)
        if sch is None:
            continue
        name = schema.def_name(sch)
        validator = jsonschema.Draft202012Validator(
            {"$ref": "#/$defs/" + name, "$defs": schema.defs})
        for e in sorted(validator.iter_errors(strip_nodoc(value, sch, schema)),
                        key=lambda e: list(map(str, e.absolute_path))):
            where = ".".join(str(p) for p in e.absolute_path) or "(document)"
            errs.append("schema (talosctl fake, not talosctl): %s (line %d): "
                        "%s: %s" % (name, line, where, e.message))
    return errs


# ---------------------------------------------------------------- cobra/pflag
class Flag:
    def __init__(self, name, short, kind, default, usage, hidden=False):
        self.name, self.short, self.kind = name, short, kind
        self.default, self.usage, self.hidden = default, usage, hidden

    def varname(self):
        return {"string": "string", "stringSlice": "strings",
                "stringArray": "stringArray", "bool": ""}[self.kind]


class Command:
    def __init__(self, name, use, short, run=None, args=None, flags=(),
                 pflags=(), required=(), stub=False):
        self.name, self.use, self.short, self.run = name, use, short, run
        self.args = args
        self.flags = list(flags)
        self.pflags = list(pflags)
        self.required = list(required)
        self.children = []
        self.parent = None
        self.stub = stub

    def add(self, *cmds):
        for c in cmds:
            c.parent = self
            self.children.append(c)
        return self

    def path(self):
        return (self.parent.path() + " " if self.parent else "") + self.name

    def inherited(self):
        out = []
        p = self.parent
        while p is not None:
            out.extend(p.pflags)
            p = p.parent
        return out

    def all_flags(self):
        help_flag = Flag("help", "h", "bool", False, "help for " + self.name)
        return self.flags + self.pflags + self.inherited() + [help_flag]

    def find_flag(self, name=None, short=None):
        for f in self.all_flags():
            if (name is not None and f.name == name) or \
                    (short is not None and f.short == short):
                return f
        return None

    def child(self, name):
        return next((c for c in self.children if c.name == name), None)

    def usage(self):
        lines = ["Usage:"]
        if self.run or self.stub:
            lines.append("  " + (self.parent.path() + " " if self.parent else "")
                         + self.use + (" [flags]" if self.all_flags() else ""))
        if self.children:
            lines.append("  %s [command]" % self.path())
            lines.append("")
            lines.append("Available Commands:")
            w = max(len(c.name) for c in self.children)
            for c in sorted(self.children, key=lambda c: c.name):
                lines.append("  %s %s" % (c.name.ljust(w), c.short))
        local = [f for f in self.flags + self.pflags if not f.hidden] + \
            [Flag("help", "h", "bool", False, "help for " + self.name)]
        lines.append("")
        lines.append("Flags:")
        lines.extend(flag_usages(local))
        inh = [f for f in self.inherited() if not f.hidden]
        if inh:
            lines.append("")
            lines.append("Global Flags:")
            lines.extend(flag_usages(inh))
        if self.children:
            lines.append("")
            lines.append('Use "%s [command] --help" for more information about '
                         'a command.' % self.path())
        return "\n".join(lines) + "\n"


def flag_usages(flags):
    rows = []
    for f in sorted(flags, key=lambda f: f.name):
        left = ("  -%s, --%s" % (f.short, f.name)) if f.short else \
            ("      --%s" % f.name)
        if f.varname():
            left += " " + f.varname()
        usage = f.usage
        d = f.default
        if f.kind == "bool" and d:
            usage += " (default true)"
        elif f.kind == "string" and d:
            usage += " (default %s)" % go_quote(d)
        elif f.kind in ("stringSlice", "stringArray") and d:
            usage += " (default [%s])" % ",".join(d)
        rows.append((left, usage))
    w = max(len(r[0]) for r in rows)
    return [left.ljust(w) + "   " + usage for left, usage in rows]


GO_BOOL = {"1": True, "t": True, "T": True, "TRUE": True, "true": True,
           "True": True, "0": False, "f": False, "F": False, "FALSE": False,
           "false": False, "False": False}


class HelpRequested(Exception):
    pass


def parse_flags(cmd, args):
    """pflag FlagSet.Parse (interspersed, ContinueOnError)."""
    values = {}
    changed = set()

    def flag_name(f):
        return "-%s, --%s" % (f.short, f.name) if f.short else "--" + f.name

    def set_value(f, v):
        if f.kind == "bool":
            if v not in GO_BOOL:
                raise CmdError('invalid argument %s for %s flag: strconv.ParseBool: '
                               'parsing %s: invalid syntax' % (
                                   go_quote(v), go_quote(flag_name(f)), go_quote(v)))
            values[f.name] = GO_BOOL[v]
        elif f.kind == "string":
            values[f.name] = v
        elif f.kind == "stringSlice":
            items = [] if v == "" else next(csv.reader([v]))
            values[f.name] = (values[f.name] if f.name in changed else []) + items
        elif f.kind == "stringArray":
            values[f.name] = (values[f.name] if f.name in changed else []) + [v]
        changed.add(f.name)

    for f in cmd.all_flags():
        values[f.name] = copy.deepcopy(f.default)
    positional = []
    i = 0
    while i < len(args):
        s = args[i]
        i += 1
        if len(s) < 2 or s[0] != "-":
            positional.append(s)
            continue
        if s == "--":
            positional.extend(args[i:])
            break
        if s.startswith("--"):
            name = s[2:]
            if not name or name[0] in "-=":
                raise CmdError("bad flag syntax: %s" % s)
            name, eq, val = name.partition("=")
            f = cmd.find_flag(name=name)
            if f is None:
                raise CmdError("unknown flag: --%s" % name)
            if eq:
                value = val
            elif f.kind == "bool":
                value = "true"
            elif i < len(args):
                value = args[i]
                i += 1
            else:
                raise CmdError("flag needs an argument: --%s" % name)
            set_value(f, value)
            continue
        shorts = s[1:]
        while shorts:
            c = shorts[0]
            f = cmd.find_flag(short=c)
            if f is None:
                raise CmdError("unknown shorthand flag: '%s' in -%s" % (c, s[1:]))
            if len(shorts) > 2 and shorts[1] == "=":
                value, shorts = shorts[2:], ""
            elif f.kind == "bool":
                value, shorts = "true", shorts[1:]
            elif len(shorts) > 1:
                value, shorts = shorts[1:], ""
            elif i < len(args):
                value, shorts = args[i], ""
                i += 1
            else:
                raise CmdError("flag needs an argument: '%s' in -%s" % (c, s[1:]))
            set_value(f, value)
    if values.get("help"):
        raise HelpRequested()
    return values, changed, positional


def strip_flags(args, cmd):
    """cobra stripFlags: the arguments that may name a subcommand."""
    out = []
    i = 0
    while i < len(args):
        s = args[i]
        i += 1
        if s == "--":
            break
        if s.startswith("--") and "=" not in s:
            f = cmd.find_flag(name=s[2:])
            if f is None or f.kind != "bool":
                i += 1
        elif s.startswith("-") and not s.startswith("--") and "=" not in s \
                and len(s) == 2:
            f = cmd.find_flag(short=s[1])
            if f is None or f.kind != "bool":
                i += 1
        elif s and not s.startswith("-"):
            out.append(s)
    return out


def find_command(root, args):
    """cobra Command.Find."""
    cmd = root
    args = list(args)
    while True:
        words = strip_flags(args, cmd)
        if not words:
            break
        nxt = cmd.child(words[0])
        if nxt is None:
            break
        args.remove(words[0])
        cmd = nxt
    if cmd.args is None and cmd.children and cmd.parent is None:
        words = strip_flags(args, cmd)
        if words:
            sugg = [c.name for c in cmd.children if levenshtein(
                words[0].lower(), c.name.lower()) <= 2 or
                c.name.lower().startswith(words[0].lower())]
            msg = "unknown command %s for %s" % (go_quote(words[0]),
                                                 go_quote(cmd.path()))
            if sugg:
                msg += "\n\nDid you mean this?\n" + "".join("\t%s\n" % s
                                                           for s in sugg)
            raise CommandError(cmd, msg)
    return cmd, args


def levenshtein(a, b):
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


class CommandError(CmdError):
    def __init__(self, cmd, msg):
        super().__init__(msg)
        self.cmd = cmd


def no_args(cmd, args):
    if args:
        raise CmdError("unknown command %s for %s" % (go_quote(args[0]),
                                                      go_quote(cmd.path())))


def exact_args(n):
    def check(cmd, args):
        if len(args) != n:
            raise CmdError("accepts %d arg(s), received %d" % (n, len(args)))
    return check


# ---------------------------------------------------------------- commands
def write_destination(data, dest, mode, force):
    """gen/config.go writeToDestination."""
    if dest == "-":
        sys.stdout.write(data)
        sys.stdout.flush()
        return
    if not force and os.path.exists(dest):
        raise CmdError('file %s already exists, use --force to overwrite'
                       % go_quote(dest))
    parent = os.path.dirname(dest) or "."
    try:
        os.makedirs(parent, exist_ok=True)
    except OSError as e:
        raise CmdError("failed to create output dir: mkdir %s: %s" % (
            parent, e.strerror.lower() if e.strerror else e))
    err = None
    try:
        fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        with os.fdopen(fd, "w") as f:
            f.write(data)
    except OSError as e:
        err = CmdError("open %s: %s" % (dest, (e.strerror or str(e)).lower()))
    sys.stderr.write("Created %s\n" % dest)
    if err:
        raise err


def run_gen_secrets(v, args):
    contract = None
    if v["talos-version"]:
        try:
            contract = parse_contract(v["talos-version"])
        except CmdError as e:
            raise CmdError("invalid talos-version: %s" % e)
    if v["from-kubernetes-pki"]:
        raise fake_limit("gen secrets --from-kubernetes-pki")
    if v["from-controlplane-config"]:
        raise fake_limit("gen secrets --from-controlplane-config")
    bundle = new_bundle(crypto_backend(), contract)
    data = bundle_yaml(bundle)
    out = v["output-file"]
    if out == "-":
        sys.stdout.write(data)
        return
    if not v["force"] and os.path.exists(out):
        raise CmdError('file %s already exists, use --force to overwrite'
                       % go_quote(out))
    try:
        fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(data)
    except OSError as e:
        raise CmdError("open %s: %s" % (out, (e.strerror or str(e)).lower()))


def validate_cluster_endpoint(ep):
    """gen/config.go validateClusterEndpoint."""
    u = urllib.parse.urlsplit(ep) if "://" in ep or "/" in ep else None
    scheme = u.scheme if u is not None else ""
    if u is None or not scheme:
        host = ep if u is None else (u.netloc or u.path)
        has_port = bool(re.search(r":\d*$", host))
        fixed = "https://" + host + ("" if has_port else ":6443")
        if not has_port:
            raise CmdError("no scheme and port specified for the cluster endpoint "
                           "URL\ntry: %s" % go_quote(fixed))
        raise CmdError("no scheme specified for the cluster endpoint URL\ntry: %s"
                       % go_quote(fixed))
    if scheme != "https":
        host = u.netloc or u.path
        fixed = "https://" + host + ("" if u.port else ":6443") + \
            (u.path if u.netloc else "")
        raise CmdError("the control plane endpoint URL should have scheme "
                       "https://\ntry: %s" % go_quote(fixed))
    err = validate_endpoint_uri(ep)
    if err:
        raise CmdError("error validating the cluster endpoint URL: %s" % err)


def run_gen_config(v, args):
    validate_cluster_endpoint(args[1])
    if v["version"] != "v1alpha1":
        raise CmdError("unknown config version: %s" % go_quote(v["version"]))
    types = v["output-types"]
    if not types:
        raise CmdError("at least one output type must be specified")
    if len(types) > 1 and v["output"] == "-":
        raise CmdError("can't use multiple output types with stdout")
    if v["output-dir"] and v["output"]:
        raise CmdError("can't use both output-dir and output")
    output = v["output-dir"] or v["output"]
    bad = ["invalid output type: %s" % go_quote(t) for t in types
           if t not in ("controlplane", "worker", "talosconfig")]
    if bad:
        raise CmdError(multierr(bad))
    if output == "-":
        paths = {t: "-" for t in types}
    elif output == "":
        paths = {"controlplane": os.path.join(os.getcwd(), "controlplane.yaml"),
                 "worker": os.path.join(os.getcwd(), "worker.yaml"),
                 "talosconfig": os.path.join(os.getcwd(), "talosconfig")}
    elif len(types) == 1 and not v["output-dir"]:
        paths = {t: output for t in types}
    else:
        paths = {"controlplane": os.path.join(output, "controlplane.yaml"),
                 "worker": os.path.join(output, "worker.yaml"),
                 "talosconfig": os.path.join(output, "talosconfig")}
    mirrors = {}
    for spec in v["registry-mirror"]:
        host, eq, url = spec.partition("=")
        if not eq:
            raise CmdError("invalid registry mirror spec: %s" % go_quote(spec))
        mirrors.setdefault(host, []).append(url)
    if v["talos-version"]:
        try:
            contract = parse_contract(v["talos-version"])
        except CmdError as e:
            raise CmdError("invalid talos-version: %s" % e)
        if contract < (1, 13):
            raise fake_limit("gen config for the v%d.%d contract (the fake "
                             "generates the v1.13 one)" % contract)
    crypto = crypto_backend()
    if v["with-secrets"]:
        try:
            bundle = load_bundle(v["with-secrets"], crypto)
        except CmdError as e:
            msg = str(e)
            if not msg.startswith("failed to"):
                msg = "failed to load secrets bundle: " + msg
            raise CmdError(msg)
    else:
        bundle = new_bundle(crypto)
    schema = Schema.load()
    patches = {}
    for flag in ("config-patch", "config-patch-control-plane",
                 "config-patch-worker"):
        try:
            patches[flag] = load_patches(v[flag], schema)
        except FakeLimit:
            raise
        except CmdError as e:
            raise CmdError("error parsing config JSON patch: %s" % e)
    opts = {"cluster_name": args[0], "endpoint": args[1],
            "k8s": v["kubernetes-version"][1:] if v["kubernetes-version"]
            .startswith("v") else v["kubernetes-version"],
            "install_disk": v["install-disk"], "install_image": v["install-image"],
            "sans": list(v["additional-sans"]), "dns_domain": v["dns-domain"],
            "discovery": v["with-cluster-discovery"], "kubespan": v["with-kubespan"],
            "mirrors": mirrors}
    cp = generate("controlplane", bundle, opts)
    worker = generate("worker", bundle, opts)
    for flag, cp_too, worker_too, what in (
            ("config-patch", True, True, "error patching configs"),
            ("config-patch-control-plane", True, False,
             "error patching control plane configs"),
            ("config-patch-worker", False, True, "error patching worker config")):
        try:
            if cp_too:
                cp = apply_patches(cp, patches[flag], schema)
            if worker_too:
                worker = apply_patches(worker, patches[flag], schema)
        except FakeLimit:
            raise
        except CmdError as e:
            raise CmdError("failed to generate config bundle: %s: %s" % (what, e))
    # --with-docs / --with-examples (true by default) make the real files carry
    # documentation comments; the fake writes the same YAML data without them
    for t in ("controlplane", "worker", "talosconfig"):
        if t not in types:
            continue
        if t == "controlplane":
            data = encode_config(cp, schema)
        elif t == "worker":
            data = encode_config(worker, schema)
        else:
            data = talosconfig_yaml(args[0], bundle, crypto)
        write_destination(data, paths[t], 0o644, v["force"])


def run_validate(v, args):
    path = v["config"]
    data = read_file(path)
    mode = v["mode"]
    schema = Schema.load()
    items = decode_config(data, schema)
    docs = docs_only(items)
    if not docs:
        raise CmdError("config not found")
    if mode not in ("cloud", "container", "metal", "metal-agent"):
        raise CmdError("unknown runtime mode: %s" % go_quote(mode))
    serrs = schema_errors(data.decode("utf-8", "replace"), schema)
    if serrs:
        raise CmdError(multierr(serrs))
    warnings, errs = validate_container(docs, mode, v["strict"])
    for w in warnings:
        sys.stderr.write("WARNING: %s\n" % w)
    if errs:
        raise CmdError(multierr(errs))
    sys.stdout.write("%s is valid for %s mode\n" % (path, mode))


def run_version(v, args):
    if v["json"]:
        raise fake_limit("version --json")
    print("Client:")
    if v["short"]:
        print("Talos %s" % TAG)
    else:
        arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(),
                                                           platform.machine())
        sys.stdout.write("\tTag:         %s\n\tSHA:         %s\n\tBuilt:       \n"
                         "\tGo version:  %s\n\tOS/Arch:     %s/%s\n" % (
                             TAG, SHA, "go1.26", sys.platform, arch))
    if v["client"]:
        return
    print("Server:")
    raise fake_limit("version without --client (it needs a Talos API)")


def stub(name, short):
    def run(v, args):
        raise fake_limit('"%s"' % name)
    return Command(name.split()[-1], name.split()[-1], short, run=run, stub=True)


def build():
    installer = "%s:%s" % (INSTALLER_REPO, os.environ.get("TAG", TAG))
    talos_pflags = [
        Flag("talosconfig", "", "string", "", "The path to the Talos configuration "
             "file. Defaults to 'TALOSCONFIG' env variable if set, otherwise "
             "'$HOME/.talos/config' and '/var/run/secrets/talos.dev/config' in "
             "order."),
        Flag("nodes", "n", "stringSlice", [], "target the specified nodes"),
        Flag("endpoints", "e", "stringSlice", [], "override default endpoints in "
             "Talos configuration"),
        Flag("cluster", "c", "string", "", "Cluster to connect to if a proxy "
             "endpoint is used."),
        Flag("context", "", "string", "", "Context to be used in command"),
        Flag("siderov1-keys-dir", "", "string", "", "The path to the SideroV1 auth "
             "PGP keys directory.")]
    gen_secrets = Command(
        "secrets", "secrets", "Generates a secrets bundle file which can later be "
        "used to generate a config", run=run_gen_secrets, args=no_args, flags=[
            Flag("output-file", "o", "string", "secrets.yaml",
                 'path of the output file, or "-" for stdout'),
            Flag("talos-version", "", "string", "", "the desired Talos version to "
                 "generate secrets bundle for (backwards compatibility, e.g. v0.8)"),
            Flag("from-controlplane-config", "", "string", "", "use the provided "
                 "controlplane Talos machine configuration as input"),
            Flag("from-kubernetes-pki", "p", "string", "", "use a Kubernetes PKI "
                 "directory (e.g. /etc/kubernetes/pki) as input"),
            Flag("kubernetes-bootstrap-token", "t", "string", "", "use the "
                 "provided bootstrap token as input")])
    all_types = ["controlplane", "worker", "talosconfig"]
    gen_config = Command(
        "config", "config <cluster name> <cluster endpoint>",
        "Generates a set of configuration files for Talos cluster",
        run=run_gen_config, args=exact_args(2), flags=[
            Flag("install-disk", "", "string", "/dev/sda", "the disk to install to"),
            Flag("install-image", "", "string", installer,
                 "the image used to perform an installation"),
            Flag("additional-sans", "", "stringSlice", [], "additional "
                 "Subject-Alt-Names for the APIServer certificate"),
            Flag("dns-domain", "", "string", "cluster.local",
                 "the dns domain to use for cluster"),
            Flag("version", "", "string", "v1alpha1",
                 "the desired machine config version to generate"),
            Flag("talos-version", "", "string", "", "the desired Talos version to "
                 "generate config for (backwards compatibility, e.g. v0.8)"),
            Flag("kubernetes-version", "", "string", DEFAULT_K8S,
                 "desired kubernetes version to run"),
            Flag("config-patch", "", "stringArray", [], "patch generated "
                 "machineconfigs (applied to all node types), use @file to read "
                 "a patch from file"),
            Flag("config-patch-control-plane", "", "stringArray", [], "patch "
                 "generated machineconfigs (applied to 'init' and 'controlplane' "
                 "types)"),
            Flag("config-patch-worker", "", "stringArray", [], "patch generated "
                 "machineconfigs (applied to 'worker' type)"),
            Flag("registry-mirror", "", "stringSlice", [], "list of registry "
                 "mirrors to use in format: <registry host>=<mirror URL>"),
            Flag("with-examples", "", "bool", True, "renders all machine configs "
                 "with the commented examples"),
            Flag("with-docs", "", "bool", True, "renders all machine configs "
                 "adding the documentation for each field"),
            Flag("with-cluster-discovery", "", "bool", True,
                 "enable cluster discovery feature"),
            Flag("with-kubespan", "", "bool", False, "enable KubeSpan feature"),
            Flag("with-secrets", "", "string", "",
                 "use a secrets file generated using 'gen secrets'"),
            Flag("output-types", "t", "stringSlice", all_types, "types of outputs "
                 'to be generated. valid types are: ["controlplane" "worker" '
                 '"talosconfig"]'),
            Flag("output", "o", "string", "", "destination to output generated "
                 "files. when multiple output types are specified, it must be a "
                 "directory. for a single output type, it must either be a file "
                 'path, or "-" for stdout'),
            Flag("output-dir", "", "string", "", "destination to output generated "
                 "files", hidden=True)])
    gen = Command("gen", "gen", "Generate CAs, certificates, and private keys",
                  pflags=[Flag("force", "f", "bool", False,
                               "will overwrite existing files")])
    gen.add(gen_secrets, gen_config,
            stub("gen ca", "Generates a self-signed X.509 certificate authority"),
            stub("gen crt", "Generates an X.509 Ed25519 certificate"),
            stub("gen csr", "Generates a CSR using an Ed25519 private key"),
            stub("gen key", "Generates an Ed25519 private key"),
            stub("gen keypair", "Generates an X.509 Ed25519 key pair"),
            stub("gen secureboot", "Generates secrets for the SecureBoot process"))
    validate = Command(
        "validate", "validate", "Validate config", run=run_validate, args=no_args,
        required=["mode"], flags=[
            Flag("config", "c", "string", "", "the path of the config file"),
            Flag("mode", "m", "string", "", "the mode to validate the config for "
                 "(valid values are metal, cloud, and container)"),
            Flag("strict", "", "bool", False, "treat validation warnings as errors")])
    version = Command(
        "version", "version", "Prints the version", run=run_version, args=no_args,
        flags=[Flag("short", "", "bool", False, "Print the short version"),
               Flag("client", "", "bool", False, "Print client version only"),
               Flag("insecure", "i", "bool", False, "use Talos maintenance mode API"),
               Flag("json", "", "bool", False, "", hidden=True)],
        pflags=talos_pflags)
    root = Command("talosctl", "talosctl", "A CLI for out-of-band management of "
                   "Kubernetes nodes created by Talos")
    root.add(gen, validate, version,
             stub("cluster", "A collection of commands for managing local "
                  "docker-based or QEMU-based clusters"),
             stub("machineconfig", "Machine config related commands"),
             stub("inject", "Inject Talos API resources into Kubernetes manifests"),
             stub("completion", "Output shell completion code for the specified "
                  "shell"))
    return root


def print_help(cmd):
    sys.stdout.write((cmd.short + "\n\n" if cmd.short else "") + cmd.usage())


def execute(argv):
    root = build()
    cmd = root
    try:
        if argv and argv[0] == "help":
            target, _ = find_command(root, argv[1:])
            print_help(target)
            return 0
        cmd, rest = find_command(root, argv)
        if cmd.stub:
            cmd.run({}, rest)
        values, changed, positional = parse_flags(cmd, rest)
        if cmd.run is None:
            print_help(cmd)  # cobra: not runnable is flag.ErrHelp, exit 0
            return 0
        if cmd.args:
            cmd.args(cmd, positional)
        missing = [f for f in cmd.required if f not in changed]
        if missing:
            raise CmdError('required flag(s) "%s" not set' % '", "'.join(missing))
        cmd.run(values, positional)
        return 0
    except HelpRequested:
        print_help(cmd)
        return 0
    except CmdError as e:
        if isinstance(e, CommandError):
            cmd = e.cmd
        msg = str(e)
        sys.stderr.write(msg + "\n")
        if "arg(s)" in msg or "flag" in msg or "command" in msg:
            sys.stderr.write("\n" + cmd.usage() + "\n")
        return 1


if __name__ == "__main__":
    sys.exit(execute(sys.argv[1:]))
