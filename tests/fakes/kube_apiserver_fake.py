#!/usr/bin/env python3
# Contract fake of the Kubernetes API server, Kubernetes v1.32 API (kube-apiserver v1.32.9), checked with the real kubectl v1.32 and Debian 12's kubectl v1.20.2 (package kubernetes-client) against it.
"""
Checked against the real sources (tags v0.32.9 of the staging repositories,
which are Kubernetes v1.32.9):
  kubernetes/apimachinery  pkg/api/errors/errors.go (NewNotFound,
      NewAlreadyExists, NewConflict, NewInvalid, NewResourceExpired,
      NewBadRequest, NewMethodNotSupported, NewUnauthorized),
      pkg/util/validation/field/errors.go (ErrorBody, the value formatting),
      pkg/util/errors/errors.go (aggregate: "[a, b]"),
      pkg/util/validation/validation.go (DNS-1123, config keys, RegexError),
      pkg/util/duration/duration.go (HumanDuration: the AGE column),
      pkg/apis/meta/v1/types.go (Status, Table)
  kubernetes/apiserver  pkg/endpoints/handlers/{create,rest,watch,response,
      delete}.go (fieldValidation default Warn, transformDecodeError's 400,
      the watch stream and its Table events with column definitions on the
      first event only, delete's Status), pkg/registry/rest/{create,update,
      meta,table}.go (BeforeCreate/BeforeUpdate, namespace matching, the
      default table), pkg/registry/generic/registry/store.go (finalizeDelete:
      a Status naming the resource as "kind"), pkg/storage/cacher/
      {cacher,watch_cache}.go (one watch cache per resource; "too old
      resource version: %d (%d)" as an ERROR event with a 410 Expired Status;
      RV 0/unset starts with synthetic ADDED events), pkg/storage/names
  kubernetes/apiextensions-apiserver  pkg/apiserver/validation/{validation,
      formats}.go (the openAPIV3Schema validator, which formats are checked,
      kubeOpenAPIResultToFieldErrors), pkg/apiserver/customresource_handler.go
      (pruning, unknown-field paths, strict decoding), pkg/apiserver/schema/
      {options.go,defaulting/prunenulls.go}, pkg/registry/customresource/
      tableconvertor/tableconvertor.go (additionalPrinterColumns)
  kubernetes/kube-openapi @ 32ad38e42d3f (the version v1.32 pins)
      pkg/validation/errors/schema.go, validate/{type,object_validator,
      slice_validator}.go: the messages and paths of schema errors
  kubernetes/kubernetes  pkg/apis/certificates/validation/validation.go,
      pkg/registry/certificates/certificates/strategy.go (CSR create,
      /approval and /status), pkg/printers/internalversion/printers.go
      (Secret, Node, CSR columns), pkg/registry/core/node/strategy.go,
      plugin/pkg/auth/authenticator/token/
      bootstrap/bootstrap.go (bootstrap-token authentication)
  kubernetes/client-go  discovery/discovery_client.go (legacy discovery is
      used when the answer is plain application/json; /openapi/v2 must be
      protobuf), openapi3/root.go
  kubernetes/cli-runtime  pkg/resource/query_param_verifier_v3.go (kubectl
      1.32 uses server-side field validation when /openapi/v3 shows the
      fieldValidation parameter on PATCH for the kind)
  kubernetes/kubectl  pkg/cmd/get/get.go (the Table Accept header),
      pkg/cmd/certificates/certificates.go (approve: PUT .../approval),
      pkg/drain/cordon.go (cordon: a strategic merge patch of
      spec.unschedulable), pkg/validation/schema.go (v1.32),
      pkg/util/openapi/validation (v1.20: a kind missing from /openapi/v2 is
      not validated client-side)
  kubernetes/api  core/v1 and certificates/v1 generated.proto, with
      apimachinery's meta/v1 and runtime generated.proto and
      runtime/serializer/protobuf (the protobuf bodies kubectl 1.32 sends)
  google/gnostic openapiv2/OpenAPIv2.proto (the protobuf of /openapi/v2)

What it serves, and only that:
  discovery  /version, /api, /api/v1, /apis, /apis/<group>,
             /apis/<group>/<version> in the legacy (unaggregated) form; a
             request preferring aggregated discovery (apidiscovery.k8s.io v2)
             gets the legacy form as application/json, which client-go
             detects and falls back on (downloadLegacy/downloadAPIs)
  openapi    /openapi/v2 (protobuf or JSON): a valid document with no
             definitions, so kubectl 1.20's client-side validation finds no
             schema and leaves validation to the server; /openapi/v3 and
             /openapi/v3/<gv>: paths whose PATCH carries fieldValidation and
             x-kubernetes-group-version-kind, so kubectl 1.32 asks the server
             to validate (fieldValidation=Strict); the CRDs' schemas under
             components.schemas (none for the built-in kinds)
  v1         namespaces (get/list/watch/create; default, kube-system,
             kube-public, kube-node-lease exist), secrets (create, get, list,
             watch, update, patch, delete; data base64, stringData merged
             into data on every write as Convert_v1_Secret_To_core_Secret
             does, type defaulted to Opaque and immutable, immutable secrets,
             config-key validation), nodes (create, get, list, watch, update,
             patch incl. nodes/status, delete)
  certificates.k8s.io/v1  certificatesigningrequests (create, get, list,
             watch, delete, update; PUT /approval; PUT /status): spec.username,
             uid and groups set from the requester, status cleared on create;
             the v1 validation: request a PEM CERTIFICATE REQUEST whose
             signature verifies (openssl), usages required/known/unique,
             signerName required and of the form example.com/name,
             expirationSeconds >= 600, condition rules (Approved/Denied
             status True only, mutually exclusive, no duplicates, no removal),
             status.certificate only CERTIFICATE PEM blocks, only via /status
             and never changed once set
  apiextensions.k8s.io/v1  customresourcedefinitions (get/list/watch): the
             CRD files given with --crd, Established
  CRDs       every served version of each --crd (tinkerbell.org/v1alpha1
             workflows, templates, hardware): create, get, list, watch,
             update, patch, delete, /status when the CRD has it. On every
             write: unknown fields pruned (and reported: 400 with
             fieldValidation=Strict, a Warning header with Warn, the default),
             non-nullable nulls pruned, defaults applied, status dropped on
             create and kept from the old object on updates of the main
             resource, generation kept and bumped when anything but
             metadata/status changes; then the version's openAPIV3Schema
             (as JSON Schema, python3-jsonschema Draft 4) and metadata.name
             (DNS-1123 subdomain): a failure is 422 Invalid with the
             apiserver's field errors ("spec.x: Unsupported value: ...")
  every kind Status errors (NotFound, AlreadyExists, Conflict on a stale
             metadata.resourceVersion, Invalid, BadRequest, MethodNotAllowed,
             NotAcceptable, UnsupportedMediaType, Unauthorized); lists with
             metadata.resourceVersion (typed lists' items without kind and
             apiVersion, custom resources' with); labelSelector (=, ==, !=,
             in, notin, exists, !exists) and fieldSelector (=, ==, != on each
             kind's selectable fields; others 400 "field label not
             supported"); limit/continue; Table answers (meta.k8s.io v1 and
             v1beta1, includeObject) with the real printers' columns; PATCH
             as application/merge-patch+json, application/json-patch+json,
             application/strategic-merge-patch+json (built-in kinds only;
             served as a merge patch: what kubectl cordon sends); dryRun=All;
             generateName; a missing namespace is 404 namespaces "x" not
             found; DELETE answers a Success Status; finalizers hold an
             object (deletionTimestamp set, 202) until an update removes them
  watch      ?watch=1: chunked newline-delimited {"type","object"} events,
             one global resourceVersion counter (etcd's revision) and one
             watch cache per resource of --default-watch-cache-size events;
             resourceVersion unset or 0 starts with ADDED events of the
             current objects, N resumes after N, N older than the cache is
             one ERROR event with the 410 Expired Status, N in the future
             waits 3 s then ERROR 504 "Too large resource version"; selectors
             turn entering/leaving objects into ADDED/DELETED;
             allowWatchBookmarks sends BOOKMARK every --bookmark-seconds;
             timeoutSeconds ends the stream, and so does falling behind the
             cache (as the cacher ends a slow watcher)
  auth       bearer tokens from --token-auth-file (the apiserver's CSV:
             token,user,uid,"group1,group2"); --enable-bootstrap-token-auth
             also accepts <id>.<secret> for a kube-system Secret
             bootstrap-token-<id> of type bootstrap.kubernetes.io/token with
             usage-bootstrap-authentication "true", a matching token-id and
             token-secret and an unexpired expiration: user
             system:bootstrap:<id>, groups system:bootstrappers and
             auth-extra-groups; every user gets system:authenticated.
             Anonymous requests are refused (--anonymous-auth=false): no or a
             bad token is 401 Unauthorized. No authorization: every
             authenticated user may do everything.

Approximated (documented, not hidden):
  * one process, memory only; watch caches and history as described; a list
    continue token pages the current state (the real server pages a
    snapshot); resourceVersionMatch is not honoured (any list is the latest).
  * JSON Schema stands in for kube-openapi's validator: the keywords map 1:1
    (type, enum, pattern, min/max*, required, items, properties,
    additionalProperties, allOf/anyOf/oneOf/not), nullable adds "null",
    x-kubernetes-int-or-string is [integer, string], other x-kubernetes-*
    are ignored, and only apiextensions' supported formats are checked (of
    those: date-time/datetime, date, uri (url.ParseRequestURI's absolute
    URI or absolute path), byte, uuid*, ipv4, ipv6, cidr, mac, hostname,
    email, bsonobjectid; the rest pass); int32/int64 and other unsupported
    formats are dropped as StripUnsupportedFormatsPostProcess does. Messages
    follow kube-openapi; a Go %#v of a map or list is shown as JSON; anyOf and
    oneOf failures give one error at the field without the nested list.
  * built-in kinds: unknown fields are found at the levels the fake knows
    (top level, metadata, Secret, Node spec/status, CSR spec/status and its
    conditions); deeper built-in fields are kept as sent. Only the validation
    listed above is done (no label/annotation syntax, no Node field checks).
  * strategic merge patch is a JSON merge patch ($patch directives are
    refused); server-side apply (application/apply-patch+yaml) is 415.
  * bodies: JSON, YAML, and protobuf (application/vnd.kubernetes.protobuf,
    which kubectl 1.32's typed client sends) for Namespace, Secret and
    CertificateSigningRequest only (others 415); answers are always JSON,
    which every client accepts (its Accept lists application/json). No CBOR.
  * discovery lists each kind's real verbs; a verb the fake does not serve
    (deletecollection, namespace delete, CRD writes, other subresources)
    is 405 MethodNotAllowed.
  * no managedFields, no admission beyond NamespaceLifecycle, no RBAC, no
    aggregated discovery, no /openapi/v2 definitions, no garbage collection.
  * CSR signature and PEM checks use openssl(1); the error texts for a
    malformed request or a bad signature are Go's usual ones but not
    byte-exact.

Test control, no auth, under /_fake/ (never part of Kubernetes):
  GET  /_fake/log             the API requests: method, path, query, user,
                              groups, accept, contentType, status, body
                              (never the Authorization header)
  GET  /_fake/state           every stored object by resource, and the
                              resourceVersion
  POST /_fake/seed            {"objects": [object, ...]} created as
                              system:admin through the normal create path
                              (nodes carry status as given)
  POST /_fake/certificate     {"name": csr, "certificate": "<PEM>"}: what the
                              signer does, through the /status rules
  POST /_fake/compact         empty every watch cache: any resourceVersion
                              older than the current one is then too old
  POST /_fake/clear_log       forget the request log
  POST /_fake/end_watches     {"expire": bool}: end every open watch stream
                              now (as an apiserver restart or a cacher
                              reset does); with expire, each first gets the
                              ERROR event with the 410 Expired Status

Usage: kube_apiserver_fake.py --tls-cert-file CERT --tls-private-key-file KEY
         --token-auth-file TOKENS [--crd FILE]... [--enable-bootstrap-token-auth]
         [--default-watch-cache-size N] [--bookmark-seconds S] [--secure-port P]
       prints the port once listening (P 0, the default, picks a free one).
"""
import argparse
import base64
import collections
import copy
import csv
import datetime
import hashlib
import ipaddress
import json
import random
import re
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

try:
    import yaml
except ImportError:  # YAML bodies and --crd need it
    yaml = None
try:
    import jsonschema
except ImportError:
    jsonschema = None

GIT_VERSION = "v1.32.9"
SERVER_VERSION = {
    "major": "1", "minor": "32", "gitVersion": GIT_VERSION,
    "gitCommit": "ea3db4b3a89f4b5b7d6b1a1e0e3ba6c2b3d5c0f9", "gitTreeState": "clean",
    "buildDate": "2025-09-09T19:38:43Z", "goVersion": "go1.23.12",
    "compiler": "gc", "platform": "linux/amd64",
}
META_DESC = {
    "name": "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names",
    "creationTimestamp": "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
}
OBJECT_META_FIELDS = {
    "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion",
    "generation", "creationTimestamp", "deletionTimestamp",
    "deletionGracePeriodSeconds", "labels", "annotations", "ownerReferences",
    "finalizers", "managedFields",
}
GENERATE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # apimachinery util/rand


# ---------------------------------------------------------------- Go-ish text

def go_quote(s):
    """strconv.Quote, near enough (json's escapes for control characters)."""
    return json.dumps(s, ensure_ascii=False)


def go_value(v):
    """fmt's %v / %q / %#v as field.Error.ErrorBody uses them."""
    if isinstance(v, GoBytes):
        return "[]byte{" + ", ".join("0x%x" % b for b in v.b) + "}"
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        r = repr(v)
        return r[:-2] if r.endswith(".0") else r
    if isinstance(v, str):
        return go_quote(v)
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False)


class GoBytes:
    """A []byte bad value: %#v prints []byte{0x2d, ...}."""
    def __init__(self, b):
        self.b = b


OMIT = object()  # field's omitValue


class FieldError:
    NAMES = {
        "FieldValueNotFound": "Not found", "FieldValueRequired": "Required value",
        "FieldValueDuplicate": "Duplicate value", "FieldValueInvalid": "Invalid value",
        "FieldValueNotSupported": "Unsupported value", "FieldValueForbidden": "Forbidden",
        "FieldValueTooLong": "Too long", "FieldValueTooMany": "Too many",
        "InternalError": "Internal error", "FieldValueTypeInvalid": "Invalid value",
    }

    def __init__(self, type_, field, bad=OMIT, detail=""):
        self.type, self.field, self.bad, self.detail = type_, field, bad, detail

    def body(self):
        t = self.NAMES[self.type]
        if self.type in ("FieldValueRequired", "FieldValueForbidden",
                         "FieldValueTooLong", "InternalError") or self.bad is OMIT:
            s = t
        else:
            s = "%s: %s" % (t, go_value(self.bad))
        if self.detail:
            s += ": " + self.detail
        return s

    def __str__(self):
        return "%s: %s" % (self.field, self.body())


def required(field, detail=""):
    return FieldError("FieldValueRequired", field, "", detail)


def invalid(field, value, detail):
    return FieldError("FieldValueInvalid", field, value, detail)


def not_supported(field, value, values):
    detail = ("supported values: " + ", ".join(go_quote(str(x)) for x in values)) if values else ""
    return FieldError("FieldValueNotSupported", field, value, detail)


def forbidden(field, detail):
    return FieldError("FieldValueForbidden", field, "", detail)


def duplicate(field, value):
    return FieldError("FieldValueDuplicate", field, value)


def too_long(field, maxlen):
    return FieldError("FieldValueTooLong", field, "<value omitted>",
                      "may not be more than %d bytes" % maxlen if maxlen >= 0 else "value is too long")


def too_many(field, actual, maxq):
    msg = "must have at most %d items" % maxq if maxq >= 0 else "has too many items"
    return FieldError("FieldValueTooMany", field, actual if actual >= 0 else OMIT, msg)


def aggregate(msgs):
    seen = []
    for m in msgs:
        if m not in seen:
            seen.append(m)
    if len(seen) == 1:
        return seen[0]
    return "[" + ", ".join(seen) + "]"


# ------------------------------------------------------------------ statuses

class APIError(Exception):
    def __init__(self, code, reason, message, details=None):
        super().__init__(message)
        self.code, self.reason, self.message, self.details = code, reason, message, details

    def status(self):
        s = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
             "message": self.message, "reason": self.reason}
        if self.details is not None:
            s["details"] = self.details
        s["code"] = self.code
        return s


def gr_string(res):
    return res.plural + ("." + res.group if res.group else "")


def gk_string(res):
    return res.kind + ("." + res.group if res.group else "")


def _details(res, name):
    d = {"name": name}
    if res.group:
        d["group"] = res.group
    d["kind"] = res.plural
    if not name:
        del d["name"]
    return d


def err_not_found(res, name):
    return APIError(404, "NotFound", '%s "%s" not found' % (gr_string(res), name), _details(res, name))


def err_already_exists(res, name):
    return APIError(409, "AlreadyExists", '%s "%s" already exists' % (gr_string(res), name),
                    _details(res, name))


def err_conflict(res, name):
    return APIError(409, "Conflict",
                    'Operation cannot be fulfilled on %s "%s": the object has been modified; '
                    'please apply your changes to the latest version and try again'
                    % (gr_string(res), name), _details(res, name))


def err_invalid(res, name, errs):
    causes = [{"reason": e.type, "message": e.body(), "field": e.field} for e in errs]
    details = {"name": name}
    if res.group:
        details["group"] = res.group
    details["kind"] = res.kind
    details["causes"] = causes
    msg = '%s "%s" is invalid' % (gk_string(res), name)
    if errs:
        msg += ": " + aggregate([str(e) for e in errs])
    return APIError(422, "Invalid", msg, details)


def err_bad_request(msg):
    return APIError(400, "BadRequest", msg)


def err_method(res, action):
    d = {"group": res.group, "kind": res.plural} if res.group else {"kind": res.plural}
    return APIError(405, "MethodNotAllowed",
                    '%s is not supported on resources of kind "%s"' % (action, gr_string(res)), d)


def err_expired(msg):
    return APIError(410, "Expired", msg)


def err_unauthorized():
    return APIError(401, "Unauthorized", "Unauthorized")


NOT_FOUND_PATH = APIError(404, "NotFound", "the server could not find the requested resource", {})


# --------------------------------------------------------------------- times

def now():
    return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)


def rfc3339(t):
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_rfc3339(s):
    try:
        return datetime.datetime.fromisoformat(s.replace("Z", "+00:00"))
    except (ValueError, AttributeError):
        return None


def human_duration(seconds):
    """apimachinery pkg/util/duration HumanDuration."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return "%ds" % s
    minutes = s // 60
    if minutes < 10:
        return "%dm" % minutes if s % 60 == 0 else "%dm%ds" % (minutes, s % 60)
    if minutes < 180:
        return "%dm" % minutes
    hours = s // 3600
    if hours < 8:
        return "%dh" % hours if minutes % 60 == 0 else "%dh%dm" % (hours, minutes % 60)
    if hours < 48:
        return "%dh" % hours
    if hours < 24 * 8:
        return "%dd" % (hours // 24) if hours % 24 == 0 else "%dd%dh" % (hours // 24, hours % 24)
    if hours < 24 * 365 * 2:
        return "%dd" % (hours // 24)
    if hours < 24 * 365 * 8:
        dy = (hours // 24) % 365
        return "%dy" % (hours // 24 // 365) if dy == 0 else "%dy%dd" % (hours // 24 // 365, dy)
    return "%dy" % (hours // 24 // 365)


def age(obj):
    ts = parse_rfc3339(obj.get("metadata", {}).get("creationTimestamp") or "")
    if ts is None:
        return "<unknown>"
    return human_duration((datetime.datetime.now(datetime.timezone.utc) - ts).total_seconds())


# --------------------------------------------------------------- validation

DNS1123_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN = DNS1123_LABEL + "(\\." + DNS1123_LABEL + ")*"
CONFIG_KEY = "[-._a-zA-Z0-9]+"


def regex_error(msg, fmt, *examples):
    if not examples:
        return msg + " (regex used for validation is '" + fmt + "')"
    return msg + " (e.g. " + " or ".join("'%s', " % e for e in examples) + \
        "regex used for validation is '" + fmt + "')"


def is_dns1123_subdomain(v):
    errs = []
    if len(v) > 253:
        errs.append("must be no more than 253 characters")
    if not re.fullmatch(DNS1123_SUBDOMAIN, v):
        errs.append(regex_error("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character", DNS1123_SUBDOMAIN, "example.com"))
    return errs


def is_dns1123_label(v):
    errs = []
    if len(v) > 63:
        errs.append("must be no more than 63 characters")
    if not re.fullmatch(DNS1123_LABEL, v):
        errs.append(regex_error("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character", DNS1123_LABEL, "my-name", "123-abc"))
    return errs


def is_config_map_key(v):
    errs = []
    if len(v) > 253:
        errs.append("must be no more than 253 characters")
    if not re.fullmatch(CONFIG_KEY, v):
        errs.append(regex_error("a valid config key must consist of alphanumeric characters, '-', '_' or '.'", CONFIG_KEY, "key.name", "KEY_NAME", "key-name"))
    if v == ".":
        errs.append("must not be '.'")
    elif v == "..":
        errs.append("must not be '..'")
    elif v.startswith(".."):
        errs.append("must not start with '..'")
    return errs


def path_segment_errors(name):
    for bad in (".", ".."):
        if name == bad:
            return ["may not be '%s'" % bad]
    return ["may not contain '%s'" % c for c in ("/", "%") if c in name]


def validate_object_meta(meta, namespaced, name_fn):
    """ValidateObjectMetaAccessor's name/namespace rules."""
    errs = []
    if meta.get("generateName"):
        for msg in name_fn(meta["generateName"], True):
            errs.append(invalid("metadata.generateName", meta["generateName"], msg))
    if not meta.get("name"):
        errs.append(required("metadata.name", "name or generateName is required"))
    else:
        for msg in name_fn(meta["name"], False):
            errs.append(invalid("metadata.name", meta["name"], msg))
    if namespaced:
        if not meta.get("namespace"):
            errs.append(required("metadata.namespace"))
    elif meta.get("namespace"):
        errs.append(forbidden("metadata.namespace", "not allowed on this type"))
    return errs


def name_subdomain(name, prefix):
    if prefix:
        name = name + "a"  # maskTrailingDash, near enough
    return is_dns1123_subdomain(name)


def name_label(name, prefix):
    if prefix:
        name = name + "a"
    return is_dns1123_label(name)


def name_any(name, prefix):
    return []


# ------------------------------------------------------------------- base64

B64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")


def b64_error(s):
    """Go's base64.StdEncoding: the byte where decoding fails, or None."""
    if not isinstance(s, str):
        return "json: cannot unmarshal %s into Go value of type []uint8" % json_type(s)
    clean = s.replace("\r", "").replace("\n", "")
    for i, ch in enumerate(clean):
        if not (ch.isalnum() and ch.isascii() or ch in "+/="):
            return "illegal base64 data at input byte %d" % i
    if len(clean) % 4:
        return "illegal base64 data at input byte %d" % (len(clean) - len(clean) % 4)
    try:
        base64.b64decode(clean, validate=True)
    except ValueError:
        return "illegal base64 data at input byte %d" % max(0, clean.find("=") if "=" in clean else len(clean) - 1)
    return None


def json_type(v):
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "object"
    return "null"


# ---------------------------------------------------------------------- PEM

PEM_RE = re.compile(r"-----BEGIN ([^-\r\n]*)-----\r?\n(.*?)-----END \1-----", re.S)


def pem_blocks(data):
    """encoding/pem Decode, repeated: [(type, headers, der)]."""
    out = []
    text = data.decode("latin-1")
    for m in PEM_RE.finditer(text):
        body = m.group(2)
        headers = {}
        lines = body.splitlines()
        if lines and ":" in lines[0]:
            i = 0
            while i < len(lines) and ":" in lines[i]:
                k, _, v = lines[i].partition(":")
                headers[k.strip()] = v.strip()
                i += 1
            lines = lines[i:]
        try:
            der = base64.b64decode("".join(l.strip() for l in lines), validate=True)
        except ValueError:
            continue
        out.append((m.group(1), headers, der))
    return out


def openssl(args, data):
    with tempfile.NamedTemporaryFile(delete=True) as f:
        f.write(data)
        f.flush()
        p = subprocess.run(["openssl"] + args + ["-in", f.name], capture_output=True)
        return p.returncode, p.stdout.decode(errors="replace") + p.stderr.decode(errors="replace")


def csr_error(request):
    """certificates.ParseCSR + CheckSignature: None or Go's error text."""
    blocks = pem_blocks(request)
    if not blocks or blocks[0][0] != "CERTIFICATE REQUEST":
        return "PEM block type must be CERTIFICATE REQUEST"
    der = blocks[0][2]
    rc, out = openssl(["req", "-inform", "DER", "-noout", "-text"], der)
    if rc != 0:
        return "asn1: structure error: tags don't match"
    rc, vout = openssl(["req", "-inform", "DER", "-noout", "-verify"], der)
    if rc != 0 or "verify OK" not in vout:
        if "id-ecPublicKey" in out:
            return "x509: ECDSA verification failure"
        if "ED25519" in out:
            return "x509: Ed25519 verification failure"
        return "crypto/rsa: verification error"
    return None


def certificate_error(pem_data):
    """validateCertificate of certificates/validation."""
    if not pem_data:
        return None
    blocks = pem_blocks(pem_data)
    for typ, headers, der in blocks:
        if typ != "CERTIFICATE":
            return 'only CERTIFICATE PEM blocks are allowed, found "%s"' % typ
        if headers:
            return "no PEM block headers are permitted"
        rc, _ = openssl(["x509", "-inform", "DER", "-noout"], der)
        if rc != 0:
            return "x509: malformed certificate"
    if not blocks:
        return "must contain at least one CERTIFICATE PEM block"
    return None


# ----------------------------------------------------------------- selectors

class SelectorError(Exception):
    pass


def parse_label_selector(s):
    """labels.Parse for =, ==, !=, in, notin, exists and !exists."""
    reqs = []
    s = (s or "").strip()
    if not s:
        return reqs
    parts, depth, cur = [], 0, ""
    for ch in s:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    for p in parts:
        p = p.strip()
        m = re.fullmatch(r"([^\s=!,()]+)\s+(in|notin)\s+\(([^)]*)\)", p)
        if m:
            vals = {v.strip() for v in m.group(3).split(",") if v.strip()}
            reqs.append((m.group(1), m.group(2), vals))
            continue
        m = re.fullmatch(r"([^\s=!,()]+)\s*(==|=|!=)\s*([^\s=!,()]*)", p)
        if m:
            op = {"==": "=", "=": "=", "!=": "!="}[m.group(2)]
            reqs.append((m.group(1), op, {m.group(3)}))
            continue
        m = re.fullmatch(r"(!?)([^\s=!,()]+)", p)
        if m:
            reqs.append((m.group(2), "!exists" if m.group(1) else "exists", set()))
            continue
        raise SelectorError("unable to parse requirement: %s" % p)
    return reqs


def labels_match(reqs, labels):
    labels = labels or {}
    for key, op, vals in reqs:
        has = key in labels
        v = labels.get(key)
        if op == "=" and not (has and v in vals):
            return False
        if op == "!=" and has and v in vals:
            return False
        if op == "in" and not (has and v in vals):
            return False
        if op == "notin" and has and v in vals:
            return False
        if op == "exists" and not has:
            return False
        if op == "!exists" and has:
            return False
    return True


def parse_field_selector(s, res):
    reqs = []
    s = (s or "").strip()
    if not s:
        return reqs
    for p in s.split(","):
        m = re.fullmatch(r"\s*([^=!]+?)\s*(==|=|!=)\s*(.*?)\s*", p)
        if not m:
            raise SelectorError("invalid selector: '%s'; can't understand '%s'" % (s, p))
        field, op, val = m.group(1), m.group(2), m.group(3)
        if field not in res.field_names():
            raise SelectorError('field label not supported: %s' % field)
        reqs.append((field, "!=" if op == "!=" else "=", val))
    return reqs


def fields_match(reqs, res, obj):
    fs = res.fields(obj)
    for field, op, val in reqs:
        if (fs.get(field, "") == val) != (op == "="):
            return False
    return True


# ------------------------------------------------------ CRD schema machinery

SUPPORTED_FORMATS = {
    "bsonobjectid", "uri", "email", "hostname", "ipv4", "ipv6", "cidr", "mac",
    "uuid", "uuid3", "uuid4", "uuid5", "isbn", "isbn10", "isbn13", "creditcard",
    "ssn", "hexcolor", "rgbcolor", "byte", "password", "date", "duration", "datetime",
}
DATETIME_RE = re.compile(
    r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:?\d{2})?")
UUID_RE = {
    "uuid": r"(?i)[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}",
    "uuid3": r"(?i)[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}",
    "uuid4": r"(?i)[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}",
    "uuid5": r"(?i)[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}",
}


def format_ok(fmt, v):
    """strfmt.Default for the formats apiextensions keeps (see docstring)."""
    if not isinstance(v, str):
        return True
    f = fmt.replace("-", "")
    if f == "datetime":
        return bool(DATETIME_RE.fullmatch(v)) and parse_rfc3339(
            re.sub(r"([+-]\d{2})(\d{2})$", r"\1:\2", v.replace(" ", "T").replace("t", "T").replace("z", "Z"))) is not None
    if f == "date":
        try:
            datetime.date.fromisoformat(v)
            return len(v) == 10
        except ValueError:
            return False
    if f == "uri":  # net/url.ParseRequestURI: an absolute URI or an absolute path
        if any(c in v for c in " \t\r\n\x7f") or v == "":
            return False
        return bool(re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", v)) or v.startswith("/")
    if f == "byte":
        return b64_error(v) is None
    if f in UUID_RE:
        return bool(re.fullmatch(UUID_RE[f], v))
    if f in ("ipv4", "ipv6"):
        try:
            ip = ipaddress.ip_address(v)
        except ValueError:
            return False
        return (ip.version == 4) == (f == "ipv4") or f == "ipv6"
    if f == "cidr":
        try:
            ipaddress.ip_network(v, strict=False)
            return "/" in v
        except ValueError:
            return False
    if f == "mac":
        return bool(re.fullmatch(r"(?i)([0-9a-f]{2}[:-]){5}[0-9a-f]{2}|([0-9a-f]{2}[:-]){7}[0-9a-f]{2}|([0-9a-f]{4}\.){2}[0-9a-f]{4}", v))
    if f == "hostname":
        return len(v) <= 255 and bool(re.fullmatch(r"(?i)([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*\.?", v))
    if f == "email":
        return bool(re.fullmatch(r"[^@\s<>]+@[^@\s<>]+", v))
    if f == "bsonobjectid":
        return bool(re.fullmatch(r"[0-9a-fA-F]{24}", v))
    return True


def to_jsonschema(s):
    """One CRD JSONSchemaProps node as Draft 4 JSON Schema (see docstring)."""
    if not isinstance(s, dict):
        return s
    out = {}
    types = []
    if s.get("type"):
        types = [s["type"]]
    if s.get("x-kubernetes-int-or-string"):
        types = ["integer", "string"]
    if types and s.get("nullable"):
        types.append("null")
    if types:
        out["type"] = types if len(types) > 1 else types[0]
    for k in ("pattern", "maxLength", "minLength", "maximum", "minimum",
              "exclusiveMaximum", "exclusiveMinimum", "multipleOf", "maxItems",
              "minItems", "uniqueItems", "maxProperties", "minProperties", "required"):
        if k in s:
            out[k] = s[k]
    if "enum" in s:
        out["enum"] = list(s["enum"]) + ([None] if s.get("nullable") else [])
    if s.get("format") and s["format"].replace("-", "") in SUPPORTED_FORMATS:
        out["format"] = s["format"]
    if "properties" in s:
        out["properties"] = {k: to_jsonschema(v) for k, v in s["properties"].items()}
    if "additionalProperties" in s:
        ap = s["additionalProperties"]
        out["additionalProperties"] = ap if isinstance(ap, bool) else to_jsonschema(ap)
    if "items" in s:
        it = s["items"]
        out["items"] = [to_jsonschema(x) for x in it] if isinstance(it, list) else to_jsonschema(it)
    for k in ("allOf", "anyOf", "oneOf"):
        if k in s:
            out[k] = [to_jsonschema(x) for x in s[k]]
    if "not" in s:
        out["not"] = to_jsonschema(s["not"])
    return out


def openapi_path(p):
    """kube-openapi's error Name: a.b, a[0].b (an absolute jsonschema path)."""
    out = ""
    for x in p:
        if isinstance(x, int):
            out += "[%d]" % x
        else:
            out += ("." if out else "") + x
    return out


def schema_type_of(v):
    """validate/type.go's schType for a value that failed "type"."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    return "object"


def crd_validator_class():
    """Draft 4, except that an integral float is an integer (kube-openapi's
    isFloatInt: 1.0 decodes as a float64 and passes type: integer)."""
    def is_integer(checker, v):
        return (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer())
    base = jsonschema.Draft4Validator
    return jsonschema.validators.extend(
        base, type_checker=base.TYPE_CHECKER.redefine("integer", is_integer))


def schema_errors(validator, obj):
    """kubeOpenAPIResultToFieldErrors over jsonschema's errors."""
    errs = []
    for e in validator.iter_errors(obj):
        name = openapi_path(e.absolute_path)
        kw, val, v = e.validator, e.validator_value, e.instance
        if kw == "required":
            for k in val:
                if isinstance(v, dict) and k not in v:
                    errs.append(required((name + "." + k) if name else k))
            continue
        field = name
        disp = name or "."
        if kw == "enum":
            vals = [x if isinstance(x, str) else json.dumps(x) for x in val if x is not None]
            errs.append(not_supported(field, v, vals))
        elif kw == "type":
            want = ",".join(val) if isinstance(val, list) else val
            st = schema_type_of(v)
            errs.append(FieldError("FieldValueTypeInvalid", field, st,
                                   "%s in body must be of type %s: %s" % (disp, want, go_quote(st))))
        elif kw == "format":
            errs.append(FieldError("FieldValueTypeInvalid", field, v,
                                   "%s in body must be of type %s: %s" % (disp, val, go_quote(v) if isinstance(v, str) else go_value(v))))
        elif kw == "pattern":
            errs.append(invalid(field, v, "%s in body should match '%s'" % (disp, val)))
        elif kw == "maxLength":
            errs.append(too_long(field, val))
        elif kw == "minLength":
            errs.append(invalid(field, v, "%s in body should be at least %d chars long" % (disp, val)))
        elif kw == "maxItems":
            errs.append(too_many(field, len(v), val))
        elif kw == "minItems":
            errs.append(invalid(field, v, "%s in body should have at least %d items" % (disp, val)))
        elif kw == "maxProperties":
            errs.append(too_many(field, len(v), val))
        elif kw == "minProperties":
            errs.append(invalid(field, v, "%s in body should have at least %d properties" % (disp, val)))
        elif kw == "maximum":
            rel = "less than" if e.schema.get("exclusiveMaximum") else "less than or equal to"
            errs.append(invalid(field, v, "%s in body should be %s %s" % (disp, rel, go_value(val))))
        elif kw == "minimum":
            rel = "greater than" if e.schema.get("exclusiveMinimum") else "greater than or equal to"
            errs.append(invalid(field, v, "%s in body should be %s %s" % (disp, rel, go_value(val))))
        elif kw == "multipleOf":
            errs.append(invalid(field, v, "%s in body should be a multiple of %s" % (disp, go_value(val))))
        elif kw == "uniqueItems":
            errs.append(invalid(field, v, "%s in body shouldn't contain duplicates" % disp))
        elif kw == "anyOf":
            errs.append(invalid(field, "", "%s in body must validate at least one schema (anyOf)" % disp))
        elif kw == "oneOf":
            errs.append(invalid(field, "", "%s in body must validate one and only one schema (oneOf)" % disp))
        elif kw == "not":
            errs.append(invalid(field, "", "%s in body must not validate the schema (not)" % disp))
        elif kw == "additionalProperties":
            errs.append(invalid(field, "", "%s in body is a forbidden property" % disp))
        else:
            errs.append(invalid(field, "", e.message))
    errs.sort(key=lambda x: x.field)
    return errs


def prune(x, s, path, unknown, root=False):
    """structuralpruning.PruneWithOptions with TrackUnknownFieldPaths."""
    if s is None:
        return
    if s.get("x-kubernetes-preserve-unknown-fields"):
        # keep everything; still descend into the declared properties
        if isinstance(x, dict):
            for k, v in x.items():
                if k in s.get("properties", {}):
                    prune(v, s["properties"][k], _key(path, k), unknown)
        return
    if isinstance(x, dict):
        props = s.get("properties", {})
        ap = s.get("additionalProperties")
        for k in list(x.keys()):
            if root and k in ("apiVersion", "kind"):
                continue
            if root and k == "metadata":
                continue  # ObjectMeta is coerced on its own
            if k in props:
                prune(x[k], props[k], _key(path, k), unknown)
            elif isinstance(ap, dict):
                prune(x[k], ap, _key(path, k), unknown)
            elif ap is True:
                continue
            else:
                unknown.append(_key(path, k))
                del x[k]
    elif isinstance(x, list):
        it = s.get("items")
        if isinstance(it, dict):
            for i, v in enumerate(x):
                prune(v, it, path + "[%d]" % i, unknown)


def _key(path, k):
    return (path + "." + k) if path else k


def prune_nulls(x, s):
    """defaulting.PruneNonNullableNullsWithoutDefaults."""
    if isinstance(x, dict):
        for k in list(x.keys()):
            sub = None
            if s:
                sub = s.get("properties", {}).get(k)
                if sub is None and isinstance(s.get("additionalProperties"), dict):
                    sub = s["additionalProperties"]
            if x[k] is None and sub is not None and not sub.get("nullable") and "default" not in sub:
                del x[k]
            else:
                prune_nulls(x[k], sub)
    elif isinstance(x, list):
        it = s.get("items") if s else None
        for v in x:
            prune_nulls(v, it if isinstance(it, dict) else None)


def apply_defaults(x, s):
    """structuraldefaulting.Default."""
    if not s:
        return
    if isinstance(x, dict):
        for k, sub in s.get("properties", {}).items():
            if "default" in sub and (k not in x or (x[k] is None and not sub.get("nullable"))):
                x[k] = copy.deepcopy(sub["default"])
            if k in x:
                apply_defaults(x[k], sub)
        ap = s.get("additionalProperties")
        if isinstance(ap, dict):
            for k in x:
                if k not in s.get("properties", {}):
                    apply_defaults(x[k], ap)
    elif isinstance(x, list) and isinstance(s.get("items"), dict):
        for v in x:
            apply_defaults(v, s["items"])


# ------------------------------------------------ built-in kinds: decoding

# Known fields for strict decoding of built-in kinds: dict = object with
# these fields (None = anything below), ("list", d) = list of objects.
ANY = None
TYPE_FIELDS = {"apiVersion": ANY, "kind": ANY, "metadata": "meta"}
SECRET_FIELDS = dict(TYPE_FIELDS, data=ANY, stringData=ANY, type=ANY, immutable=ANY)
NAMESPACE_FIELDS = dict(TYPE_FIELDS, spec={"finalizers": ANY},
                        status={"phase": ANY, "conditions": ANY})
NODE_FIELDS = dict(TYPE_FIELDS, spec={
    "podCIDR": ANY, "podCIDRs": ANY, "providerID": ANY, "unschedulable": ANY,
    "taints": ("list", {"key": ANY, "value": ANY, "effect": ANY, "timeAdded": ANY}),
    "configSource": ANY, "externalID": ANY,
}, status={
    "capacity": ANY, "allocatable": ANY, "phase": ANY, "conditions": ANY,
    "addresses": ANY, "daemonEndpoints": ANY, "nodeInfo": ANY, "images": ANY,
    "volumesInUse": ANY, "volumesAttached": ANY, "config": ANY,
    "runtimeHandlers": ANY, "features": ANY,
})
CSR_CONDITION = {"type": ANY, "status": ANY, "reason": ANY, "message": ANY,
                 "lastUpdateTime": ANY, "lastTransitionTime": ANY}
CSR_FIELDS = dict(TYPE_FIELDS, spec={
    "request": ANY, "signerName": ANY, "expirationSeconds": ANY, "usages": ANY,
    "username": ANY, "uid": ANY, "groups": ANY, "extra": ANY,
}, status={"conditions": ("list", CSR_CONDITION), "certificate": ANY})


def strict_unknown(x, known, path, unknown):
    if known is ANY or not isinstance(x, (dict, list)):
        return
    if known == "meta":
        known = {k: ANY for k in OBJECT_META_FIELDS}
    if isinstance(known, tuple):
        if isinstance(x, list):
            for i, v in enumerate(x):
                strict_unknown(v, known[1], path + "[%d]" % i, unknown)
        return
    if isinstance(x, dict):
        for k in list(x.keys()):
            if k not in known:
                unknown.append(_key(path, k))
                del x[k]
            else:
                strict_unknown(x[k], known[k], _key(path, k), unknown)


# ---------------------------------------------------------------- resources

class Resource:
    group = ""
    version = "v1"
    plural = singular = kind = ""
    namespaced = True
    short_names = ()
    categories = ()
    verbs = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
    subresources = {}  # name -> verbs
    typed = True       # built-in: list items without kind/apiVersion
    status_sub = False
    served_verbs = ("create", "get", "list", "watch", "update", "patch", "delete")

    @property
    def gv(self):
        return (self.group + "/" + self.version) if self.group else self.version

    @property
    def key(self):
        return (self.group, self.version, self.plural)

    @property
    def list_kind(self):
        return self.kind + "List"

    def name_fn(self, name, prefix):
        return name_subdomain(name, prefix)

    def field_names(self):
        return {"metadata.name", "metadata.namespace"} if self.namespaced else {"metadata.name"}

    def fields(self, obj):
        m = obj.get("metadata", {})
        f = {"metadata.name": m.get("name", "")}
        if self.namespaced:
            f["metadata.namespace"] = m.get("namespace", "")
        return f

    # strategies
    def decode(self, obj, unknown):
        strict_unknown(obj, self.known, "", unknown)

    def prepare_create(self, obj, user):
        pass

    def validate_create(self, obj):
        return validate_object_meta(obj["metadata"], self.namespaced, self.name_fn)

    def prepare_update(self, new, old, sub):
        pass

    def validate_update(self, new, old, sub):
        return self.validate_create(new)

    def columns(self):
        return [col("Name", "string", META_DESC["name"], "name"),
                col("Created At", "date", META_DESC["creationTimestamp"])]

    def cells(self, obj, wide):
        return [obj["metadata"]["name"], obj["metadata"].get("creationTimestamp")]


def col(name, typ, desc, fmt="", priority=0):
    return {"name": name, "type": typ, "format": fmt, "description": desc, "priority": priority}


class NamespaceRes(Resource):
    plural, singular, kind = "namespaces", "namespace", "Namespace"
    namespaced = False
    short_names = ("ns",)
    known = NAMESPACE_FIELDS
    served_verbs = ("create", "get", "list", "watch")
    subresources = {"finalize": ("update",), "status": ("get", "patch", "update")}

    def name_fn(self, name, prefix):
        return name_label(name, prefix)

    def field_names(self):
        return {"metadata.name", "status.phase"}

    def fields(self, obj):
        return {"metadata.name": obj["metadata"]["name"],
                "status.phase": obj.get("status", {}).get("phase", "")}

    def prepare_create(self, obj, user):
        obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
        obj["status"] = {"phase": "Active"}
        obj["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = obj["metadata"]["name"]

    def columns(self):
        return [col("Name", "string", META_DESC["name"], "name"),
                col("Status", "string", "The status of the namespace"),
                col("Age", "string", META_DESC["creationTimestamp"])]

    def cells(self, obj, wide):
        return [obj["metadata"]["name"], obj.get("status", {}).get("phase", ""), age(obj)]


class SecretRes(Resource):
    plural, singular, kind = "secrets", "secret", "Secret"
    known = SECRET_FIELDS

    def field_names(self):
        return {"metadata.name", "metadata.namespace", "type"}

    def fields(self, obj):
        f = super().fields(obj)
        f["type"] = obj.get("type", "")
        return f

    def decode(self, obj, unknown):
        super().decode(obj, unknown)
        data = obj.get("data")
        if data is not None and not isinstance(data, dict):
            raise err_bad_request('Secret in version "v1" cannot be handled as a Secret: json: cannot unmarshal %s into Go struct field Secret.data of type map[string][]uint8' % json_type(data))
        for k, v in (data or {}).items():
            e = b64_error(v)
            if e:
                raise err_bad_request('Secret in version "v1" cannot be handled as a Secret: ' + e)
        sd = obj.pop("stringData", None)
        if sd is not None:
            if not isinstance(sd, dict) or not all(isinstance(v, str) for v in sd.values()):
                raise err_bad_request('Secret in version "v1" cannot be handled as a Secret: json: cannot unmarshal into Go struct field Secret.stringData of type string')
            if sd:  # Convert_v1_Secret_To_core_Secret: StringData overwrites Data
                d = obj.get("data") or {}
                for k, v in sd.items():
                    d[k] = base64.b64encode(v.encode()).decode()
                obj["data"] = d
        if not obj.get("type"):
            obj["type"] = "Opaque"  # SetDefaults_Secret

    def validate_create(self, obj):
        errs = validate_object_meta(obj["metadata"], True, self.name_fn)
        total = 0
        for k, v in (obj.get("data") or {}).items():
            for msg in is_config_map_key(k):
                errs.append(invalid("data[%s]" % k, k, msg))
            total += len(base64.b64decode(v))
        if total > 1024 * 1024:
            errs.append(too_long("data", 1024 * 1024))
        return errs

    def validate_update(self, new, old, sub):
        errs = self.validate_create(new)
        if new.get("type") != old.get("type"):
            errs.append(invalid("type", new.get("type"), "field is immutable"))
        if old.get("immutable"):
            if not new.get("immutable"):
                errs.append(forbidden("immutable", "field is immutable when `immutable` is set"))
            if new.get("data") != old.get("data"):
                errs.append(forbidden("data", "field is immutable when `immutable` is set"))
        return errs

    def columns(self):
        return [col("Name", "string", META_DESC["name"], "name"),
                col("Type", "string", "The type of the secret"),
                col("Data", "string", "The number of entries in the secret"),
                col("Age", "string", META_DESC["creationTimestamp"])]

    def cells(self, obj, wide):
        return [obj["metadata"]["name"], obj.get("type", ""), len(obj.get("data") or {}), age(obj)]


class NodeRes(Resource):
    plural, singular, kind = "nodes", "node", "Node"
    namespaced = False
    short_names = ("no",)
    known = NODE_FIELDS
    status_sub = True
    subresources = {"proxy": ("create", "delete", "get", "patch", "update"),
                    "status": ("get", "patch", "update")}

    def field_names(self):
        return {"metadata.name", "spec.unschedulable"}

    def fields(self, obj):
        return {"metadata.name": obj["metadata"]["name"],
                "spec.unschedulable": "true" if obj.get("spec", {}).get("unschedulable") else "false"}

    def prepare_update(self, new, old, sub):
        # registry/core/node/strategy.go: create takes every field, status
        # included; an update of the node keeps the old status, one of
        # nodes/status keeps the old spec
        if sub == "status":
            new["spec"] = copy.deepcopy(old.get("spec", {}))
        else:
            new.pop("status", None)
            if "status" in old:
                new["status"] = copy.deepcopy(old["status"])

    def columns(self):
        return [col("Name", "string", META_DESC["name"], "name"),
                col("Status", "string", "The status of the node"),
                col("Roles", "string", "The roles of the node"),
                col("Age", "string", META_DESC["creationTimestamp"]),
                col("Version", "string", "Kubelet Version reported by the node."),
                col("Internal-IP", "string", "List of internal IPs for the node.", priority=1),
                col("External-IP", "string", "List of external IPs for the node.", priority=1),
                col("OS-Image", "string", "OS image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).", priority=1),
                col("Kernel-Version", "string", "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).", priority=1),
                col("Container-Runtime", "string", "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).", priority=1)]

    def cells(self, obj, wide):
        st = obj.get("status", {})
        status = []
        for c in st.get("conditions", []) or []:
            if c.get("type") == "Ready":
                status = ["Ready" if c.get("status") == "True" else "NotReady"]
        if not status:
            status = ["Unknown"]
        if obj.get("spec", {}).get("unschedulable"):
            status.append("SchedulingDisabled")
        roles = set()
        for k, v in (obj["metadata"].get("labels") or {}).items():
            if k.startswith("node-role.kubernetes.io/") and k[len("node-role.kubernetes.io/"):]:
                roles.add(k[len("node-role.kubernetes.io/"):])
            elif k == "kubernetes.io/role" and v:
                roles.add(v)
        info = st.get("nodeInfo", {}) or {}
        row = [obj["metadata"]["name"], ",".join(status), ",".join(sorted(roles)) or "<none>",
               age(obj), info.get("kubeletVersion", "")]
        addrs = st.get("addresses", []) or []
        ip = lambda t: next((a.get("address") for a in addrs if a.get("type") == t), "<none>")
        row += [ip("InternalIP"), ip("ExternalIP"), info.get("osImage") or "<unknown>",
                info.get("kernelVersion") or "<unknown>",
                info.get("containerRuntimeVersion") or "<unknown>"]
        return row


KNOWN_USAGES = [
    "signing", "digital signature", "content commitment", "key encipherment",
    "key agreement", "data encipherment", "cert sign", "crl sign",
    "encipher only", "decipher only", "any", "server auth", "client auth",
    "code signing", "email protection", "s/mime", "ipsec end system",
    "ipsec tunnel", "ipsec user", "timestamping", "ocsp signing",
    "microsoft sgc", "netscape sgc",
]


def validate_signer_name(path, name):
    """core validation ValidateSignerName."""
    if not name:
        return [required(path)]
    segs = name.split("/")
    if len(segs) != 2:
        return [invalid(path, name, "must be a fully qualified domain and path of the form 'example.com/signer-name'")]
    errs = []
    if len(segs[0]) > 253:
        errs.append(too_long(path, 253))
    for msg in is_dns1123_subdomain(segs[0]):
        errs.append(invalid(path, segs[0], "validating label: " + msg))
    if len(segs[0].split(".")) < 2:
        errs.append(invalid(path, segs[0], "should be a domain with at least two segments separated by dots"))
    p = segs[1]
    if len(p) == 0:
        errs.append(invalid(path, name, "must be a fully qualified domain and path of the form 'example.com/signer-name'"))
    else:
        if len(p) > 316:
            errs.append(too_long(path, 316))
        for seg in p.split("."):
            for msg in is_dns1123_subdomain(seg):
                errs.append(invalid(path, p, "validating path: " + msg))
    return errs


class CSRRes(Resource):
    group, version = "certificates.k8s.io", "v1"
    plural, singular, kind = "certificatesigningrequests", "certificatesigningrequest", "CertificateSigningRequest"
    namespaced = False
    short_names = ("csr",)
    known = CSR_FIELDS
    subresources = {"approval": ("get", "patch", "update"), "status": ("get", "patch", "update")}

    def name_fn(self, name, prefix):
        return []  # "We don't care what you call your certificate requests."

    def field_names(self):
        return {"metadata.name", "spec.signerName"}

    def fields(self, obj):
        return {"metadata.name": obj["metadata"]["name"],
                "spec.signerName": obj.get("spec", {}).get("signerName", "")}

    def decode(self, obj, unknown):
        super().decode(obj, unknown)
        for path, v in (("spec.request", obj.get("spec", {}).get("request")),
                        ("status.certificate", obj.get("status", {}).get("certificate"))):
            if v is not None:
                e = b64_error(v)
                if e:
                    raise err_bad_request('CertificateSigningRequest in version "v1" cannot be handled as a CertificateSigningRequest: ' + e)

    def prepare_create(self, obj, user):
        spec = obj.setdefault("spec", {})
        for k in ("username", "uid", "groups", "extra"):
            spec.pop(k, None)
        spec["username"] = user["name"]
        if user.get("uid"):
            spec["uid"] = user["uid"]
        spec["groups"] = list(user["groups"])
        obj["status"] = {}

    @staticmethod
    def populate_timestamps(new, old):
        t = rfc3339(now())
        for c in new.get("status", {}).get("conditions", []) or []:
            if not c.get("lastUpdateTime"):
                c["lastUpdateTime"] = t
            if not c.get("lastTransitionTime"):
                lt = t
                for oc in old.get("status", {}).get("conditions", []) or []:
                    if oc.get("type") == c.get("type") and oc.get("status") == c.get("status") \
                            and oc.get("lastTransitionTime"):
                        lt = oc["lastTransitionTime"]
                        break
                c["lastTransitionTime"] = lt

    def prepare_update(self, new, old, sub):
        if sub is None:
            new["spec"] = copy.deepcopy(old.get("spec", {}))
            new["status"] = copy.deepcopy(old.get("status", {}))
        elif sub == "approval":
            self.populate_timestamps(new, old)
            conds = new.get("status", {}).get("conditions")
            new["spec"] = copy.deepcopy(old.get("spec", {}))
            new["status"] = copy.deepcopy(old.get("status", {}))
            if conds is not None:
                new["status"]["conditions"] = conds
            else:
                new["status"].pop("conditions", None)
        elif sub == "status":
            new["spec"] = copy.deepcopy(old.get("spec", {}))
            nc = new.setdefault("status", {}).setdefault("conditions", [])
            oc = old.get("status", {}).get("conditions", []) or []
            for t in ("Approved", "Denied"):
                ni = [i for i, c in enumerate(nc) if c.get("type") == t]
                oi = [i for i, c in enumerate(oc) if c.get("type") == t]
                if len(ni) == len(oi):
                    for a, b in zip(ni, oi):
                        nc[a] = copy.deepcopy(oc[b])
            if not nc:
                new["status"].pop("conditions")
            self.populate_timestamps(new, old)

    def validate(self, obj, old, opts):
        errs = validate_object_meta(obj["metadata"], False, self.name_fn)
        spec = obj.get("spec", {})
        req = spec.get("request")
        reqb = base64.b64decode(req) if req else b""
        e = csr_error(reqb)
        if e:
            errs.append(invalid("spec.request", GoBytes(reqb), e))
        usages = spec.get("usages") or []
        if not usages:
            errs.append(required("spec.usages"))
        old_usages = (old or {}).get("spec", {}).get("usages") or []
        if not any(u not in KNOWN_USAGES for u in old_usages):
            for i, u in enumerate(usages):
                if u not in KNOWN_USAGES:
                    errs.append(not_supported("spec.usages[%d]" % i, u, sorted(KNOWN_USAGES)))
        if len(set(old_usages)) == len(old_usages):
            seen = set()
            for i, u in enumerate(usages):
                if u in seen:
                    errs.append(duplicate("spec.usages[%d]" % i, u))
                seen.add(u)
        sn = spec.get("signerName", "")
        if sn == "kubernetes.io/legacy-unknown" and (old or {}).get("spec", {}).get("signerName") != sn:
            errs.append(invalid("spec.signerName", sn, "the legacy signerName is not allowed via this API version"))
        else:
            errs += validate_signer_name("spec.signerName", sn)
        es = spec.get("expirationSeconds")
        if es is not None and es < 600:
            errs.append(invalid("spec.expirationSeconds", es, "may not specify a duration less than 600 seconds (10 minutes)"))
        conds = obj.get("status", {}).get("conditions", []) or []
        seen, approved, denied = set(), False, False
        for i, c in enumerate(conds):
            p = "status.conditions[%d]" % i
            if not c.get("type"):
                errs.append(required(p + ".type"))
            allowed = ["True"] if c.get("type") in ("Approved", "Denied", "Failed") else ["False", "True", "Unknown"]
            if not c.get("status"):
                errs.append(required(p + ".status"))
            elif c["status"] not in allowed:
                errs.append(not_supported(p + ".status", c["status"], allowed))
            if c.get("type") == "Approved":
                approved = True
                if denied:
                    errs.append(invalid(p + ".type", "Approved", "Approved and Denied conditions are mutually exclusive"))
            if c.get("type") == "Denied":
                denied = True
                if approved:
                    errs.append(invalid(p + ".type", "Denied", "Approved and Denied conditions are mutually exclusive"))
            if c.get("type") in seen:
                errs.append(duplicate(p + ".type", c.get("type")))
            seen.add(c.get("type"))
        cert = obj.get("status", {}).get("certificate")
        certb = base64.b64decode(cert) if cert else b""
        old_cert = (old or {}).get("status", {}).get("certificate")
        arbitrary = old is not None and (cert == old_cert)
        if not arbitrary:
            e = certificate_error(certb)
            if e:
                errs.append(invalid("status.certificate", "<certificate data>", e))
        if old is not None:
            ocs = old.get("status", {}).get("conditions", []) or []
            for t in ("Approved", "Denied", "Failed"):
                if len([c for c in conds if c.get("type") == t]) < len([c for c in ocs if c.get("type") == t]):
                    errs.append(forbidden("status.conditions", 'updates may not remove a condition of type "%s"' % t))
            if not opts.get("approval"):
                for t in ("Approved", "Denied"):
                    n = [c for c in conds if c.get("type") == t]
                    o = [c for c in ocs if c.get("type") == t]
                    if len(n) > len(o):
                        errs.append(forbidden("status.conditions", 'updates may not add a condition of type "%s"' % t))
                    elif len(n) == len(o) and n != o:
                        errs.append(forbidden("status.conditions", 'updates may not modify a condition of type "%s"' % t))
            if cert != old_cert:
                if not opts.get("certificate"):
                    errs.append(forbidden("status.certificate", "updates may not set certificate content"))
                elif old_cert:
                    errs.append(forbidden("status.certificate", "updates may not modify existing certificate content"))
        return errs

    def validate_create(self, obj):
        return self.validate(obj, None, {})

    def validate_update(self, new, old, sub):
        return self.validate(new, old, {"approval": sub == "approval", "certificate": sub == "status"})

    def columns(self):
        return [col("Name", "string", META_DESC["name"], "name"),
                col("Age", "string", META_DESC["creationTimestamp"]),
                col("SignerName", "string", "Requested signer for the request. It is a qualified name in the form: `scope-hostname.io/name`."),
                col("Requestor", "string", "Base64-encoded PKCS#10 CSR data"),
                col("RequestedDuration", "string", "expirationSeconds is the requested duration of validity of the issued certificate."),
                col("Condition", "string", "Conditions applied to the request. Known conditions are \"Approved\", \"Denied\", and \"Failed\".")]

    def cells(self, obj, wide):
        spec = obj.get("spec", {})
        types = {c.get("type") for c in obj.get("status", {}).get("conditions", []) or []}
        status = "Denied" if "Denied" in types else "Approved" if "Approved" in types else "Pending"
        if "Failed" in types:
            status += ",Failed"
        if obj.get("status", {}).get("certificate"):
            status += ",Issued"
        es = spec.get("expirationSeconds")
        return [obj["metadata"]["name"], age(obj), spec.get("signerName") or "<none>",
                spec.get("username", ""), human_duration(es) if es is not None else "<none>", status]


class CRDRes(Resource):
    group, version = "apiextensions.k8s.io", "v1"
    plural, singular, kind = "customresourcedefinitions", "customresourcedefinition", "CustomResourceDefinition"
    namespaced = False
    short_names = ("crd", "crds")
    categories = ("api-extensions",)
    served_verbs = ("get", "list", "watch")
    subresources = {"status": ("get", "patch", "update")}
    known = ANY


class CustomRes(Resource):
    """One served version of a CRD."""
    typed = False
    served_verbs = ("create", "get", "list", "watch", "update", "patch", "delete")

    def __init__(self, crd, ver):
        spec = crd["spec"]
        self.crd = crd
        self.group, self.version = spec["group"], ver["name"]
        n = spec["names"]
        self.plural, self.singular, self.kind = n["plural"], n.get("singular", n["kind"].lower()), n["kind"]
        self._list_kind = n.get("listKind", n["kind"] + "List")
        self.short_names = tuple(n.get("shortNames", ()))
        self.categories = tuple(n.get("categories", ()))
        self.namespaced = spec.get("scope", "Namespaced") == "Namespaced"
        self.status_sub = "status" in (ver.get("subresources") or {})
        self.subresources = {"status": ("get", "patch", "update")} if self.status_sub else {}
        self.schema = ver.get("schema", {}).get("openAPIV3Schema") or {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        js = to_jsonschema(self.schema)
        checker = jsonschema.FormatChecker(formats=())
        for f in SUPPORTED_FORMATS | {"date-time"}:
            checker.checks(f)(lambda v, f=f: format_ok(f, v))
        self.validator = crd_validator_class()(js, format_checker=checker)
        self.printer_columns = ver.get("additionalPrinterColumns")
        if self.printer_columns is None:
            self.printer_columns = [{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]
        self.known = None

    @property
    def list_kind(self):
        return self._list_kind

    def decode(self, obj, unknown):
        meta = obj.get("metadata")
        if isinstance(meta, dict):
            for k in list(meta.keys()):
                if k not in OBJECT_META_FIELDS:
                    unknown.append("metadata." + k)
                    del meta[k]
        prune(obj, self.schema, "", unknown, root=True)
        prune_nulls(obj, self.schema)
        apply_defaults(obj, self.schema)

    def prepare_create(self, obj, user):
        if self.status_sub:
            obj.pop("status", None)  # create cannot set status
        obj["metadata"]["generation"] = 1

    def prepare_update(self, new, old, sub):
        if sub == "status":
            status = new.get("status")
            keep_meta = new["metadata"]
            new.clear()
            new.update(copy.deepcopy({k: v for k, v in old.items() if k != "status"}))
            new["metadata"] = keep_meta
            new["metadata"]["labels"] = copy.deepcopy(old["metadata"].get("labels"))
            if new["metadata"]["labels"] is None:
                del new["metadata"]["labels"]
            if status is not None:
                new["status"] = status
            return
        if self.status_sub:
            new.pop("status", None)
            if "status" in old:
                new["status"] = copy.deepcopy(old["status"])
        gen = old["metadata"].get("generation", 1)
        strip = lambda o: {k: v for k, v in o.items() if k not in ("metadata", "status")}
        if strip(new) != strip(old):
            gen += 1
        new["metadata"]["generation"] = gen

    def validate_create(self, obj):
        errs = validate_object_meta(obj["metadata"], self.namespaced, self.name_fn)
        return errs + schema_errors(self.validator, obj)

    def validate_update(self, new, old, sub):
        return self.validate_create(new)

    def columns(self):
        out = [col("Name", "string", META_DESC["name"], "name")]
        for c in self.printer_columns:
            out.append(col(c["name"], c["type"], c.get("description") or
                           "Custom resource definition column (in JSONPath format): %s" % c["jsonPath"],
                           c.get("format", ""), c.get("priority", 0)))
        return out

    def cells(self, obj, wide):
        out = [obj["metadata"]["name"]]
        for c in self.printer_columns:
            v = obj
            for part in c["jsonPath"].strip(".").split("."):
                v = v.get(part) if isinstance(v, dict) else None
            if v is None:
                out.append(None)
            elif c["type"] == "string":
                out.append(v if isinstance(v, str) else json.dumps(v, separators=(",", ":")))
            elif c["type"] == "integer":
                out.append(int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None)
            elif c["type"] == "number":
                out.append(float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None)
            elif c["type"] == "boolean":
                out.append(v if isinstance(v, bool) else None)
            elif c["type"] == "date":
                t = parse_rfc3339(v) if isinstance(v, str) else None
                out.append(human_duration((now() - t).total_seconds()) if t else "<invalid>")
            else:
                out.append(None)
        return out


# -------------------------------------------------------------------- store

class WatchCache:
    """cacher/watch_cache.go: a ring of the resource's last events."""
    def __init__(self, capacity, list_rv):
        self.events = collections.deque()
        self.capacity = capacity
        self.list_rv = list_rv
        self.removed = False
        self.dropped_rv = 0  # the last event pushed out of the ring

    def add(self, ev):
        self.events.append(ev)
        while len(self.events) > self.capacity:
            gone = self.events.popleft()
            self.removed = True
            if gone["type"]:
                self.dropped_rv = gone["rv"]

    def oldest(self):
        if self.list_rv > 0 and not self.removed:
            return self.list_rv + 1
        if self.events:
            return self.events[0]["rv"]
        return None


class Store:
    def __init__(self, cache_size):
        self.cond = threading.Condition()
        self.rv = 1
        self.objects = {}
        self.caches = {}
        self.cache_size = cache_size
        self.log = []
        self.end_watches = 0      # /_fake/end_watches: bumped to end every open watch
        self.end_expire = False   # ... with an ERROR 410 event first

    def register(self, res):
        self.objects.setdefault(res.key, {})
        self.caches.setdefault(res.key, WatchCache(self.cache_size, self.rv))

    def start_caches(self):
        """The caches start with a list at the current revision."""
        for k in self.caches:
            self.caches[k] = WatchCache(self.cache_size, self.rv)

    def next_rv(self):
        self.rv += 1
        return self.rv

    def emit(self, res, typ, obj, prev):
        self.caches[res.key].add({"rv": int(obj["metadata"]["resourceVersion"]), "type": typ,
                                  "obj": copy.deepcopy(obj),
                                  "prev": copy.deepcopy(prev) if prev else None})
        self.cond.notify_all()


# ------------------------------------------------------------------ patches

def merge_patch(target, patch):
    """RFC 7386."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if not isinstance(target, dict):
        target = {}
    out = copy.deepcopy(target)
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


def has_smp_directive(p):
    if isinstance(p, dict):
        return any(k.startswith("$") for k in p) or any(has_smp_directive(v) for v in p.values())
    if isinstance(p, list):
        return any(has_smp_directive(v) for v in p)
    return False


def json_pointer(path):
    if path == "":
        return []
    if not path.startswith("/"):
        raise err_bad_request('the server rejected our request due to an error in our request')
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def json_patch(doc, ops):
    """RFC 6902."""
    doc = copy.deepcopy(doc)

    def walk(parts):
        cur = doc
        for p in parts[:-1]:
            cur = cur[int(p)] if isinstance(cur, list) else cur[p]
        return cur, parts[-1]

    def get(parts):
        cur = doc
        for p in parts:
            cur = cur[int(p)] if isinstance(cur, list) else cur[p]
        return cur

    for op in ops:
        try:
            kind = op["op"]
            parts = json_pointer(op["path"])
            if kind in ("add", "replace"):
                parent, last = walk(parts)
                if isinstance(parent, list):
                    if kind == "add":
                        parent.insert(len(parent) if last == "-" else int(last), op["value"])
                    else:
                        parent[int(last)] = op["value"]
                else:
                    if kind == "replace" and last not in parent:
                        raise KeyError(last)
                    parent[last] = op["value"]
            elif kind == "remove":
                parent, last = walk(parts)
                if isinstance(parent, list):
                    parent.pop(int(last))
                else:
                    del parent[last]
            elif kind == "test":
                if get(parts) != op["value"]:
                    raise err_bad_request("the server rejected our request due to an error in our request")
            elif kind in ("move", "copy"):
                src = json_pointer(op["from"])
                val = copy.deepcopy(get(src))
                if kind == "move":
                    p2, l2 = walk(src)
                    if isinstance(p2, list):
                        p2.pop(int(l2))
                    else:
                        del p2[l2]
                parent, last = walk(parts)
                if isinstance(parent, list):
                    parent.insert(len(parent) if last == "-" else int(last), val)
                else:
                    parent[last] = val
            else:
                raise KeyError(kind)
        except (KeyError, IndexError, ValueError, TypeError):
            raise APIError(422, "Invalid", "the server rejected our request due to an error in our request")
    return doc


# ------------------------------------------------- protobuf request bodies

# k8s.io/apimachinery runtime/serializer/protobuf: "k8s\x00" + runtime.Unknown
# {typeMeta 1 {apiVersion 1, kind 2}, raw 2, contentEncoding 3, contentType 4};
# raw is the kind's message of its generated.proto. kubectl 1.32's typed
# client (certificate approve) sends application/vnd.kubernetes.protobuf;
# the fake decodes the kinds below (k8s.io/api v0.32.9 core/v1 and
# certificates/v1 generated.proto, apimachinery meta/v1 generated.proto).
PB_PREFIX = b"k8s\x00"
PB_TIME = ("time",)
PB_OWNER = {5: ("apiVersion", "string"), 1: ("kind", "string"), 3: ("name", "string"),
            4: ("uid", "string"), 6: ("controller", "bool"), 7: ("blockOwnerDeletion", "bool")}
PB_META = {
    1: ("name", "string"), 2: ("generateName", "string"), 3: ("namespace", "string"),
    4: ("selfLink", "string"), 5: ("uid", "string"), 6: ("resourceVersion", "string"),
    7: ("generation", "int"), 8: ("creationTimestamp", "time"), 9: ("deletionTimestamp", "time"),
    10: ("deletionGracePeriodSeconds", "int"), 11: ("labels", "map", ("string", "string")),
    12: ("annotations", "map", ("string", "string")),
    13: ("ownerReferences", "msg*", PB_OWNER), 14: ("finalizers", "string*"),
}
PB_CSR_CONDITION = {1: ("type", "string"), 6: ("status", "string"), 2: ("reason", "string"),
                    3: ("message", "string"), 4: ("lastUpdateTime", "time"),
                    5: ("lastTransitionTime", "time")}
PB_KINDS = {
    ("v1", "Namespace"): {
        1: ("metadata", "msg", PB_META), 2: ("spec", "msg", {1: ("finalizers", "string*")}),
        3: ("status", "msg", {1: ("phase", "string"), 2: ("conditions", "msg*", {
            1: ("type", "string"), 2: ("status", "string"), 4: ("lastTransitionTime", "time"),
            5: ("reason", "string"), 6: ("message", "string")})})},
    ("v1", "Secret"): {1: ("metadata", "msg", PB_META), 5: ("immutable", "bool"),
                       2: ("data", "map", ("string", "bytes")),
                       4: ("stringData", "map", ("string", "string")), 3: ("type", "string")},
    ("certificates.k8s.io/v1", "CertificateSigningRequest"): {
        1: ("metadata", "msg", PB_META),
        2: ("spec", "msg", {1: ("request", "bytes"), 7: ("signerName", "string"),
                            8: ("expirationSeconds", "int"), 5: ("usages", "string*"),
                            2: ("username", "string"), 3: ("uid", "string"),
                            4: ("groups", "string*"),
                            6: ("extra", "map", ("string", ("msg", {1: ("items", "string*")})))}),
        3: ("status", "msg", {1: ("conditions", "msg*", PB_CSR_CONDITION), 2: ("certificate", "bytes")}),
    },
}


def pb_read_varint(data, i):
    n = shift = 0
    while True:
        b = data[i]
        i += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return n, i


def pb_fields(data):
    i = 0
    while i < len(data):
        key, i = pb_read_varint(data, i)
        f, wt = key >> 3, key & 7
        if wt == 0:
            v, i = pb_read_varint(data, i)
        elif wt == 2:
            n, i = pb_read_varint(data, i)
            v, i = data[i:i + n], i + n
        elif wt == 1:
            v, i = data[i:i + 8], i + 8
        elif wt == 5:
            v, i = data[i:i + 4], i + 4
        else:
            raise ValueError("wire type %d" % wt)
        yield f, v


def pb_value(kind, v):
    if isinstance(kind, tuple):  # ("msg", schema) as a map value
        return pb_decode(v, kind[1])
    if kind == "string":
        return v.decode()
    if kind == "bytes":
        return base64.b64encode(v).decode()
    if kind == "int":
        return v - (1 << 64) if v >= 1 << 63 else v
    if kind == "bool":
        return bool(v)
    if kind == "time":  # meta/v1 Time: empty is the zero time; seconds only
        if not v:
            return None
        secs = dict(pb_fields(v)).get(1, 0)
        secs = secs - (1 << 64) if secs >= 1 << 63 else secs
        return rfc3339(datetime.datetime.fromtimestamp(secs, datetime.timezone.utc))
    raise ValueError(kind)


def pb_decode(data, schema):
    """A message as the JSON the same object would have (zero values omitted,
    as the fields' omitempty does)."""
    out = {}
    for f, v in pb_fields(data):
        if f not in schema:
            continue
        name, kind = schema[f][0], schema[f][1]
        if kind == "map":
            kk, vk = schema[f][2]
            e = dict(pb_fields(v))
            out.setdefault(name, {})[pb_value(kk, e.get(1, b""))] = pb_value(vk, e.get(2, b""))
        elif kind == "msg":
            out[name] = pb_decode(v, schema[f][2])
        elif kind == "msg*":
            out.setdefault(name, []).append(pb_decode(v, schema[f][2]))
        elif kind.endswith("*"):
            out.setdefault(name, []).append(pb_value(kind[:-1], v))
        else:
            out[name] = pb_value(kind, v)
    return {k: v for k, v in out.items() if v not in ("", 0, None, False, [], {})}


def pb_object(body):
    """(apiVersion, kind, object) of a protobuf-encoded request body."""
    if not body.startswith(PB_PREFIX):
        raise ValueError("provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]")
    unk = dict(pb_fields(body[len(PB_PREFIX):]))
    tm = dict(pb_fields(unk.get(1, b"")))
    av, kind = tm.get(1, b"").decode(), tm.get(2, b"").decode()
    schema = PB_KINDS.get((av, kind))
    if schema is None:
        return av, kind, None
    obj = {"apiVersion": av, "kind": kind}
    obj.update(pb_decode(unk.get(2, b""), schema))
    return av, kind, obj


# ------------------------------------------------------------------ openapi

def pb_varint(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def pb_bytes(field, data):
    return pb_varint((field << 3) | 2) + pb_varint(len(data)) + data


def openapi_v2_protobuf():
    """gnostic openapi.v2.Document: swagger 1, info 2 {title 1, version 2},
    paths 8, definitions 9 (both empty)."""
    info = pb_bytes(1, b"Kubernetes") + pb_bytes(2, GIT_VERSION.encode())
    return pb_bytes(1, b"2.0") + pb_bytes(2, info) + pb_bytes(8, b"") + pb_bytes(9, b"")


def query_param(name, desc):
    return {"name": name, "in": "query", "description": desc,
            "schema": {"type": "string", "uniqueItems": True}}


FIELD_VALIDATION_DESC = ("fieldValidation instructs the server on how to handle objects in the request "
                         "(POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: "
                         "- Ignore - Warn - Strict")


def openapi_v3_doc(gv, resources):
    paths, schemas = {}, {}
    for res in resources:
        gvk = {"group": res.group, "kind": res.kind, "version": res.version}
        base = ("/api/v1" if not res.group else "/apis/%s/%s" % (res.group, res.version))
        coll = base + ("/namespaces/{namespace}/" if res.namespaced else "/") + res.plural
        params = [query_param("dryRun", "When present, indicates that modifications should not be persisted."),
                  query_param("fieldManager", "fieldManager is a name associated with the actor or entity that is making these changes."),
                  query_param("fieldValidation", FIELD_VALIDATION_DESC)]

        def op(action, body=False, p=params):
            o = {"description": "%s %s" % (action, res.kind), "operationId": action + res.kind,
                 "parameters": p if body else [],
                 "responses": {"200": {"description": "OK"}},
                 "x-kubernetes-action": action, "x-kubernetes-group-version-kind": gvk}
            return o
        paths[coll] = {"get": op("list"), "post": op("post", True)}
        paths[coll + "/{name}"] = {"get": op("get"), "put": op("put", True),
                                   "patch": op("patch", True), "delete": op("delete")}
        for sub in res.subresources:
            paths[coll + "/{name}/" + sub] = {"get": op("get"), "put": op("put", True),
                                              "patch": op("patch", True)}
        if isinstance(res, CustomRes):
            rev = ".".join(reversed(res.group.split(".")))
            s = copy.deepcopy(res.schema)
            s["x-kubernetes-group-version-kind"] = [gvk]
            schemas["%s.%s.%s" % (rev, res.version, res.kind)] = s
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": GIT_VERSION},
            "paths": paths, "components": {"schemas": schemas}}


# --------------------------------------------------------------------- auth

BOOTSTRAP_TOKEN_RE = re.compile(r"^([a-z0-9]{6})\.([a-z0-9]{16})$")
BOOTSTRAP_GROUP_RE = re.compile(r"^system:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]$")


def load_tokens(path):
    """The apiserver's --token-auth-file: token,user,uid[,"g1,g2"]."""
    tokens = {}
    with open(path, newline="") as f:
        for rec in csv.reader(f):
            if not rec or rec[0].startswith("#"):
                continue
            if len(rec) < 3:
                sys.exit("token file %s: a record needs token,user,uid" % path)
            groups = [g.strip() for g in rec[3].split(",") if g.strip()] if len(rec) > 3 else []
            tokens[rec[0]] = {"name": rec[1], "uid": rec[2], "groups": groups}
    return tokens


# ------------------------------------------------------------------- server

class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class App:
    def __init__(self, args):
        self.tokens = load_tokens(args.token_auth_file)
        self.bootstrap = args.enable_bootstrap_token_auth
        self.bookmark_seconds = args.bookmark_seconds
        self.store = Store(args.default_watch_cache_size)
        self.resources = []
        self.crds = []
        for r in (NamespaceRes(), SecretRes(), NodeRes(), CSRRes(), CRDRes()):
            self.add(r)
        for path in args.crd or []:
            with open(path) as f:
                for doc in yaml.safe_load_all(f):
                    if doc and doc.get("kind") == "CustomResourceDefinition":
                        self.crds.append(doc)
                        for ver in doc["spec"]["versions"]:
                            if ver.get("served", True):
                                self.add(CustomRes(doc, ver))
        admin = {"name": "system:apiserver", "uid": "", "groups": ["system:masters"]}
        for ns in ("default", "kube-system", "kube-public", "kube-node-lease"):
            self.create(self.res_by("", "v1", "namespaces"), None,
                        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}, admin, {})
        for crd in self.crds:
            c = copy.deepcopy(crd)
            t = rfc3339(now())
            c["status"] = {
                "acceptedNames": c["spec"]["names"],
                "conditions": [
                    {"type": "NamesAccepted", "status": "True", "lastTransitionTime": t,
                     "reason": "NoConflicts", "message": "no conflicts found"},
                    {"type": "Established", "status": "True", "lastTransitionTime": t,
                     "reason": "InitialNamesAccepted", "message": "the initial names have been accepted"}],
                "storedVersions": [v["name"] for v in c["spec"]["versions"] if v.get("storage")]}
            with self.store.cond:
                self.store_new(self.res_by("apiextensions.k8s.io", "v1", "customresourcedefinitions"), c)
        self.store.start_caches()

    def add(self, res):
        self.resources.append(res)
        self.store.register(res)

    def res_by(self, group, version, plural):
        for r in self.resources:
            if r.key == (group, version, plural):
                return r
        return None

    def groups(self):
        out = collections.OrderedDict()
        for r in self.resources:
            if r.group:
                out.setdefault(r.group, [])
                if r.version not in out[r.group]:
                    out[r.group].append(r.version)
        return out

    # -- authentication
    def authenticate(self, header):
        parts = (header or "").split(" ")
        if len(parts) < 2 or parts[0].lower() != "bearer" or not parts[1].strip():
            return None
        tok = parts[1].strip()
        u = self.tokens.get(tok)
        if u:
            return {"name": u["name"], "uid": u["uid"],
                    "groups": u["groups"] + ["system:authenticated"]}
        if self.bootstrap:
            return self.bootstrap_user(tok)
        return None

    def bootstrap_user(self, tok):
        m = BOOTSTRAP_TOKEN_RE.match(tok)
        if not m:
            return None
        tid, tsecret = m.group(1), m.group(2)
        with self.store.cond:
            s = self.store.objects[("", "v1", "secrets")].get(("kube-system", "bootstrap-token-" + tid))
            s = copy.deepcopy(s)
        if not s or s["metadata"].get("deletionTimestamp"):
            return None
        if s.get("type") != "bootstrap.kubernetes.io/token" or not s.get("data"):
            return None
        get = lambda k: base64.b64decode(s["data"][k]).decode(errors="replace") if k in s["data"] else ""
        if get("token-secret") != tsecret or get("token-id") != tid:
            return None
        exp = get("expiration")
        if exp:
            t = parse_rfc3339(exp)
            if t is None or datetime.datetime.now(datetime.timezone.utc) > t:
                return None
        if get("usage-bootstrap-authentication") != "true":
            return None
        groups = {"system:bootstrappers"}
        extra = get("auth-extra-groups")
        if extra:
            for g in extra.split(","):
                if not BOOTSTRAP_GROUP_RE.match(g):
                    return None
                groups.add(g)
        return {"name": "system:bootstrap:" + tid, "uid": "",
                "groups": sorted(groups) + ["system:authenticated"]}

    # -- storage operations (called with the body already decoded)
    def store_new(self, res, obj):
        st = self.store
        m = obj["metadata"]
        m["uid"] = str(uuid.uuid4())
        m["creationTimestamp"] = rfc3339(now())
        m["resourceVersion"] = str(st.next_rv())
        st.objects[res.key][(m.get("namespace", ""), m["name"])] = obj
        st.emit(res, "ADDED", obj, None)
        return obj

    def check_namespace(self, res, ns):
        if res.namespaced and (("", ns) not in self.store.objects[("", "v1", "namespaces")]):
            raise err_not_found(self.res_by("", "v1", "namespaces"), ns)

    def create(self, res, ns, obj, user, q, warnings=None):
        m = obj.setdefault("metadata", {})
        if not isinstance(m, dict):
            raise err_bad_request("%s in version \"%s\" cannot be handled as a %s: metadata must be an object" % (res.kind, res.version, res.kind))
        if res.namespaced:
            if m.get("namespace") and m["namespace"] != ns:
                raise err_bad_request("the namespace of the provided object does not match the namespace sent on the request")
            m["namespace"] = ns
        else:
            m.pop("namespace", None)
        for k in ("uid", "resourceVersion", "creationTimestamp", "deletionTimestamp",
                  "deletionGracePeriodSeconds", "selfLink", "generation", "managedFields"):
            m.pop(k, None)
        with self.store.cond:
            if res.namespaced:
                self.check_namespace(res, ns)
            if m.get("generateName") and not m.get("name"):
                base = m["generateName"][:58]
                m["name"] = base + "".join(random.choice(GENERATE_ALPHABET) for _ in range(5))
            if m.get("name"):
                pe = path_segment_errors(m["name"])
                if pe:
                    raise err_invalid(res, m["name"], [invalid("metadata.name", m["name"], ",".join(pe))])
            res.prepare_create(obj, user)
            errs = res.validate_create(obj)
            if errs:
                raise err_invalid(res, m.get("name", ""), errs)
            key = (m.get("namespace", ""), m["name"])
            if key in self.store.objects[res.key]:
                raise err_already_exists(res, m["name"])
            if q.get("dryRun") == "All":
                m["uid"] = str(uuid.uuid4())
                m["creationTimestamp"] = rfc3339(now())
                return obj
            return copy.deepcopy(self.store_new(res, obj))

    def get(self, res, ns, name):
        with self.store.cond:
            obj = self.store.objects[res.key].get((ns or "", name))
            if obj is None:
                raise err_not_found(res, name)
            return copy.deepcopy(obj)

    def update(self, res, ns, name, obj, sub, q, patch_fn=None):
        with self.store.cond:
            old = self.store.objects[res.key].get((ns or "", name))
            if old is None:
                raise err_not_found(res, name)
            if patch_fn:
                obj = patch_fn(copy.deepcopy(old))
            m = obj.setdefault("metadata", {})
            if m.get("name") and m["name"] != name:
                raise err_bad_request("the name of the object (%s) does not match the name on the URL (%s)" % (m["name"], name))
            m["name"] = name
            if res.namespaced:
                if m.get("namespace") and m["namespace"] != ns:
                    raise err_bad_request("the namespace of the provided object does not match the namespace sent on the request")
                m["namespace"] = ns
            else:
                m.pop("namespace", None)
            rv = m.get("resourceVersion")
            if rv and rv != old["metadata"]["resourceVersion"]:
                raise err_conflict(res, name)
            om = old["metadata"]
            m["generation"] = om.get("generation")
            if m["generation"] is None:
                del m["generation"]
            res.prepare_update(obj, old, sub)
            if not m.get("uid"):
                m["uid"] = om["uid"]
            m["creationTimestamp"] = om["creationTimestamp"]
            if om.get("deletionTimestamp"):
                m["deletionTimestamp"] = om["deletionTimestamp"]
                m["deletionGracePeriodSeconds"] = om.get("deletionGracePeriodSeconds", 0)
            m.pop("managedFields", None)
            errs = []
            if m["uid"] != om["uid"]:
                errs.append(invalid("metadata.uid", m["uid"], "field is immutable"))
            errs += res.validate_update(obj, old, sub)
            if errs:
                raise err_invalid(res, name, errs)
            m["resourceVersion"] = om["resourceVersion"]
            if q.get("dryRun") == "All":
                return obj
            if obj == old:  # a no-op update writes nothing (the store's GuaranteedUpdate)
                return copy.deepcopy(old)
            m["resourceVersion"] = str(self.store.next_rv())
            if m.get("deletionTimestamp") and not m.get("finalizers"):
                del self.store.objects[res.key][(ns or "", name)]
                self.store.emit(res, "DELETED", obj, old)
            else:
                self.store.objects[res.key][(ns or "", name)] = obj
                self.store.emit(res, "MODIFIED", obj, old)
            return copy.deepcopy(obj)

    def delete(self, res, ns, name, q, body):
        with self.store.cond:
            old = self.store.objects[res.key].get((ns or "", name))
            if old is None:
                raise err_not_found(res, name)
            pre = (body or {}).get("preconditions") or {}
            if pre.get("resourceVersion") and pre["resourceVersion"] != old["metadata"]["resourceVersion"]:
                raise err_conflict(res, name)
            if pre.get("uid") and pre["uid"] != old["metadata"]["uid"]:
                raise APIError(409, "Conflict", 'Operation cannot be fulfilled on %s "%s": Precondition failed: UID in precondition: %s, UID in object meta: %s' % (gr_string(res), name, pre["uid"], old["metadata"]["uid"]), _details(res, name))
            if q.get("dryRun") == "All":
                return 200, copy.deepcopy(old)
            if old["metadata"].get("finalizers"):
                if not old["metadata"].get("deletionTimestamp"):
                    obj = copy.deepcopy(old)
                    obj["metadata"]["deletionTimestamp"] = rfc3339(now())
                    obj["metadata"]["deletionGracePeriodSeconds"] = 0
                    obj["metadata"]["resourceVersion"] = str(self.store.next_rv())
                    self.store.objects[res.key][(ns or "", name)] = obj
                    self.store.emit(res, "MODIFIED", obj, old)
                    old = obj
                return 202, copy.deepcopy(old)
            obj = copy.deepcopy(old)
            obj["metadata"]["resourceVersion"] = str(self.store.next_rv())
            del self.store.objects[res.key][(ns or "", name)]
            self.store.emit(res, "DELETED", obj, old)
            d = {"name": name}
            if res.group:
                d["group"] = res.group
            d["kind"] = res.plural
            d["uid"] = old["metadata"]["uid"]
            return 200, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                         "status": "Success", "details": d}

    def list(self, res, ns, lsel, fsel):
        with self.store.cond:
            items = [copy.deepcopy(o) for (ons, _), o in sorted(self.store.objects[res.key].items())
                     if (not ns or ons == ns) and labels_match(lsel, o["metadata"].get("labels"))
                     and fields_match(fsel, res, o)]
            return items, self.store.rv


# ------------------------------------------------------------------ handler

TABLE_RE = re.compile(r"as=Table")


class Handler(BaseHTTPRequestHandler):
    server_version = ""
    sys_version = ""
    protocol_version = "HTTP/1.1"

    def setup(self):
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.request = self.server.ssl_ctx.wrap_socket(self.request, server_side=True)
        super().setup()

    def handle(self):
        try:
            super().handle()
        except (ssl.SSLError, ConnectionError, socket.timeout, OSError):
            pass

    def log_message(self, fmt, *args):
        pass

    @property
    def app(self):
        return self.server.app

    # -- output
    def send_raw(self, code, body, ctype="application/json", headers=None):
        try:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Cache-Control", "no-cache, private")
            for k, v in (headers or []):
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (ssl.SSLError, ConnectionError, OSError):
            pass
        self.status_sent = code

    def send_json(self, code, obj, headers=None):
        self.send_raw(code, (json.dumps(obj, separators=(",", ":"), ensure_ascii=False) + "\n").encode(),
                      headers=headers)

    def send_error_status(self, e, headers=None):
        self.send_json(e.code, e.status(), headers)

    def warnings_headers(self):
        return [("Warning", '299 - %s' % json.dumps(w)) for w in self.warnings]

    # -- entry points
    def do_GET(self):
        self.dispatch("GET")

    def do_POST(self):
        self.dispatch("POST")

    def do_PUT(self):
        self.dispatch("PUT")

    def do_PATCH(self):
        self.dispatch("PATCH")

    def do_DELETE(self):
        self.dispatch("DELETE")

    def read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        data = self.rfile.read(n) if n else b""
        if not n and self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().strip().split(b";")[0], 16)
                if size == 0:
                    self.rfile.readline()
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            data = b"".join(chunks)
        return data

    def dispatch(self, method):
        self.status_sent = None
        self.warnings = []
        u = urlsplit(self.path)
        path = unquote(u.path)
        q = {k: v[-1] for k, v in parse_qs(u.query, keep_blank_values=True).items()}
        body = self.read_body() if method in ("POST", "PUT", "PATCH", "DELETE") else b""
        if path.startswith("/_fake/"):
            return self.control(method, path, body)
        user = self.app.authenticate(self.headers.get("Authorization"))
        entry = {"method": method, "path": path, "query": q,
                 "user": user["name"] if user else None,
                 "groups": user["groups"] if user else None,
                 "accept": self.headers.get("Accept"),
                 "contentType": self.headers.get("Content-Type"),
                 "body": None}
        if body:
            try:
                if body.startswith(PB_PREFIX):
                    entry["body"] = pb_object(body)[2]
                else:
                    entry["body"] = json.loads(body)
            except (ValueError, IndexError, UnicodeDecodeError):
                entry["body"] = body[:4096].decode(errors="replace")
        try:
            if user is None:
                raise err_unauthorized()
            self.route(method, path, q, body, user)
        except APIError as e:
            self.send_error_status(e, self.warnings_headers())
        except Exception as e:  # a fake's bug: say so, as the apiserver's InternalError
            traceback.print_exc()
            if self.status_sent is None:
                self.send_error_status(APIError(500, "InternalError", "Internal error occurred: %r" % (e,), {}))
            else:  # a watch stream cut short: end the connection, not the chunks
                self.close_connection = True
        entry["status"] = self.status_sent
        with self.app.store.cond:
            self.app.store.log.append(entry)

    # -- control
    def control(self, method, path, body):
        app = self.app
        try:
            req = json.loads(body) if body else {}
        except ValueError:
            return self.send_json(400, {"error": "bad JSON"})
        try:
            if path == "/_fake/log" and method == "GET":
                with app.store.cond:
                    return self.send_json(200, {"log": copy.deepcopy(app.store.log)})
            if path == "/_fake/clear_log" and method == "POST":
                with app.store.cond:
                    app.store.log = []
                return self.send_json(200, {})
            if path == "/_fake/state" and method == "GET":
                with app.store.cond:
                    out = {"resourceVersion": str(app.store.rv), "objects": {}}
                    for r in app.resources:
                        out["objects"]["/".join(x for x in r.key if x)] = [
                            o for _, o in sorted(app.store.objects[r.key].items())]
                    return self.send_json(200, out)
            if path == "/_fake/seed" and method == "POST":
                admin = {"name": "system:admin", "uid": "", "groups": ["system:masters", "system:authenticated"]}
                made = []
                for obj in req.get("objects", []):
                    res = self.res_for_object(obj)
                    status = copy.deepcopy(obj.get("status"))
                    unknown = []
                    res.decode(obj, unknown)
                    o = app.create(res, obj.get("metadata", {}).get("namespace", "default") if res.namespaced else None,
                                   obj, admin, {})
                    if status is not None and isinstance(res, (NodeRes, CustomRes)) and res.status_sub:
                        o["status"] = status
                        o = app.update(res, o["metadata"].get("namespace"), o["metadata"]["name"], o, "status", {})
                    made.append(o)
                return self.send_json(200, {"objects": made})
            if path == "/_fake/certificate" and method == "POST":
                res = app.res_by("certificates.k8s.io", "v1", "certificatesigningrequests")
                obj = app.get(res, None, req["name"])
                obj.setdefault("status", {})["certificate"] = base64.b64encode(req["certificate"].encode()).decode()
                return self.send_json(200, app.update(res, None, req["name"], obj, "status", {}))
            if path == "/_fake/end_watches" and method == "POST":
                with app.store.cond:
                    app.store.end_watches += 1
                    app.store.end_expire = bool(req.get("expire"))
                    app.store.cond.notify_all()
                    return self.send_json(200, {"ended": app.store.end_watches})
            if path == "/_fake/compact" and method == "POST":
                with app.store.cond:
                    for c in app.store.caches.values():
                        c.events.clear()
                        c.removed = True
                        c.list_rv = 0
                        # nothing retained: the oldest deliverable event is the next one
                        c.events.append({"rv": app.store.rv + 1, "type": None, "obj": None, "prev": None})
                    return self.send_json(200, {"resourceVersion": str(app.store.rv)})
        except APIError as e:
            return self.send_error_status(e)
        except (KeyError, TypeError) as e:
            return self.send_json(400, {"error": "bad control request: %r" % (e,)})
        self.send_json(404, {"error": "no such control endpoint"})

    def res_for_object(self, obj):
        av = obj.get("apiVersion", "")
        g, _, v = av.rpartition("/")
        for r in self.app.resources:
            if r.group == g and r.version == v and r.kind == obj.get("kind"):
                return r
        raise err_bad_request("no resource for %s %s" % (av, obj.get("kind")))

    # -- routing
    def route(self, method, path, q, body, user):
        app = self.app
        p = [x for x in path.split("/") if x]
        if path == "/version":
            return self.send_json(200, SERVER_VERSION)
        if path in ("/healthz", "/livez", "/readyz"):
            return self.send_raw(200, b"ok", "text/plain; charset=utf-8")
        if path == "/openapi/v2":
            accept = self.headers.get("Accept", "")
            if "protobuf" in accept:
                return self.send_raw(200, openapi_v2_protobuf(),
                                     "application/com.github.proto-openapi.spec.v2.v1.0+protobuf")
            return self.send_json(200, {"swagger": "2.0", "info": {"title": "Kubernetes", "version": GIT_VERSION},
                                        "paths": {}, "definitions": {}})
        if p[:2] == ["openapi", "v3"]:
            return self.openapi_v3(p[2:])
        if p == ["api"]:
            return self.send_json(200, {"kind": "APIVersions", "versions": ["v1"],
                                        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0",
                                                                        "serverAddress": "127.0.0.1:%d" % self.server.server_address[1]}]})
        if p == ["apis"]:
            groups = []
            for g, vs in app.groups().items():
                versions = [{"groupVersion": g + "/" + v, "version": v} for v in vs]
                groups.append({"name": g, "versions": versions, "preferredVersion": versions[0]})
            return self.send_json(200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
        if len(p) == 2 and p[0] == "apis":
            vs = app.groups().get(p[1])
            if vs is None:
                raise NOT_FOUND_PATH
            versions = [{"groupVersion": p[1] + "/" + v, "version": v} for v in vs]
            return self.send_json(200, {"kind": "APIGroup", "apiVersion": "v1", "name": p[1],
                                        "versions": versions, "preferredVersion": versions[0]})
        if p == ["api", "v1"]:
            return self.resource_list("", "v1")
        if len(p) == 3 and p[0] == "apis":
            return self.resource_list(p[1], p[2])
        # resource paths
        if p[:2] == ["api", "v1"]:
            group, version, rest = "", "v1", p[2:]
        elif p[:1] == ["apis"] and len(p) >= 4:
            group, version, rest = p[1], p[2], p[3:]
        else:
            raise NOT_FOUND_PATH
        ns = None
        if group == "" and len(rest) == 3 and rest[0] == "namespaces" and rest[2] in ("status", "finalize"):
            pass  # a subresource of the namespace object itself
        elif len(rest) >= 3 and rest[0] == "namespaces":
            ns, rest = rest[1], rest[2:]
        if not rest:
            raise NOT_FOUND_PATH
        res = app.res_by(group, version, rest[0])
        if res is None or (ns is not None and not res.namespaced):
            raise NOT_FOUND_PATH
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        if len(rest) > 3:
            raise NOT_FOUND_PATH
        if sub is not None and sub not in res.subresources:
            raise NOT_FOUND_PATH
        if sub is not None and sub not in ("status", "approval"):
            raise err_method(res, method)
        if res.namespaced and ns is None:  # /api/v1/secrets: list and watch only
            if name is not None:
                raise NOT_FOUND_PATH
            if method != "GET":
                raise APIError(405, "MethodNotAllowed",
                               "the server does not allow this method on the requested resource", {})
        return self.resource(method, res, ns, name, sub, q, body, user)

    def resource_list(self, group, version):
        rs = [r for r in self.app.resources if r.group == group and r.version == version]
        if not rs:
            raise NOT_FOUND_PATH
        out = []
        for r in rs:
            e = {"name": r.plural, "singularName": r.singular, "namespaced": r.namespaced,
                 "kind": r.kind, "verbs": list(r.verbs)}
            if r.short_names:
                e["shortNames"] = list(r.short_names)
            if r.categories:
                e["categories"] = list(r.categories)
            out.append(e)
            for sub, verbs in r.subresources.items():
                out.append({"name": r.plural + "/" + sub, "singularName": "", "namespaced": r.namespaced,
                            "kind": r.kind, "verbs": list(verbs)})
        doc = {"kind": "APIResourceList", "groupVersion": (group + "/" + version) if group else version,
               "resources": out}
        if group:
            doc = {"kind": "APIResourceList", "apiVersion": "v1", **{k: v for k, v in doc.items() if k != "kind"}}
        return self.send_json(200, doc)

    def openapi_v3(self, rest):
        app = self.app
        gvs = collections.OrderedDict()
        for r in app.resources:
            key = ("api/v1" if not r.group else "apis/%s/%s" % (r.group, r.version))
            gvs.setdefault(key, []).append(r)
        docs = {k: json.dumps(openapi_v3_doc(k, v), separators=(",", ":")).encode() for k, v in gvs.items()}
        if not rest:
            paths = {k: {"serverRelativeURL": "/openapi/v3/%s?hash=%s" % (k, hashlib.sha512(d).hexdigest().upper())}
                     for k, d in docs.items()}
            return self.send_json(200, {"paths": paths})
        k = "/".join(rest)
        if k not in docs:
            raise NOT_FOUND_PATH
        return self.send_raw(200, docs[k] + b"\n")

    # -- bodies
    def decode_body(self, res, body, q, patch=False):
        ctype = (self.headers.get("Content-Type") or "application/json").split(";")[0].strip().lower()
        if ctype == "application/vnd.kubernetes.protobuf" and not patch:
            try:
                _, kind, obj = pb_object(body)
            except (ValueError, IndexError, UnicodeDecodeError) as e:
                raise err_bad_request('%s in version "%s" cannot be handled as a %s: %s' % (res.kind, res.version, res.kind, e))
            if obj is None:
                raise APIError(415, "UnsupportedMediaType",
                               "the body of the request was in an unknown format - accepted media types include: "
                               "application/json, application/yaml (this fake decodes protobuf only for "
                               + ", ".join(k for _, k in PB_KINDS) + ")", {})
            return obj, []
        if ctype == "application/json" or patch:
            text = body
        elif ctype in ("application/yaml", "application/x-yaml") and yaml is not None:
            try:
                return yaml.safe_load(body.decode()), []
            except (yaml.YAMLError, UnicodeDecodeError) as e:
                raise err_bad_request("%s in version \"%s\" cannot be handled as a %s: %s" % (res.kind, res.version, res.kind, e))
        else:
            raise APIError(415, "UnsupportedMediaType",
                           'the body of the request was in an unknown format - accepted media types include: application/json, application/yaml', {})
        dups = []

        def hook(pairs):
            d = {}
            for k, v in pairs:
                if k in d:
                    dups.append(k)
                d[k] = v
            return d
        try:
            obj = json.loads(text, object_pairs_hook=hook)
        except ValueError as e:
            if patch:
                raise err_bad_request("error decoding patch: %s" % e)
            raise err_bad_request('%s in version "%s" cannot be handled as a %s: %s' % (res.kind, res.version, res.kind, e))
        return obj, dups

    def validation_directive(self, q):
        d = q.get("fieldValidation", "") or "Warn"
        if d not in ("Ignore", "Warn", "Strict"):
            raise err_bad_request('fieldValidation parameter unsupported: %s' % d)
        return d

    def prepare_object(self, res, obj, dups, q):
        """Decode as the REST handler does: kind/apiVersion defaulted and checked,
        unknown fields pruned and reported by fieldValidation."""
        if not isinstance(obj, dict):
            raise err_bad_request('%s in version "%s" cannot be handled as a %s: json: cannot unmarshal %s into Go value of type struct' % (res.kind, res.version, res.kind, json_type(obj)))
        av = obj.get("apiVersion") or res.gv
        if av != res.gv:
            raise err_bad_request("the API version in the data (%s) does not match the expected API version (%s)" % (av, res.gv))
        kind = obj.get("kind") or res.kind
        if kind != res.kind:
            raise err_bad_request('%s in version "%s" cannot be handled as a %s: no kind "%s" is registered for version "%s"' % (kind, res.version, res.kind, kind, av))
        obj["apiVersion"], obj["kind"] = av, kind
        unknown = []
        res.decode(obj, unknown)
        directive = self.validation_directive(q)
        msgs = ['duplicate field "%s"' % d for d in dups] + ['unknown field "%s"' % u for u in sorted(unknown)]
        if msgs:
            if directive == "Strict":
                raise err_bad_request('%s in version "%s" cannot be handled as a %s: strict decoding error: %s'
                                      % (res.kind, res.version, res.kind, ", ".join(msgs)))
            if directive == "Warn":
                self.warnings += msgs
        return obj

    # -- negotiation
    def table_wanted(self):
        accept = self.headers.get("Accept", "")
        for part in accept.split(","):
            if TABLE_RE.search(part) and "g=meta.k8s.io" in part:
                return "meta.k8s.io/v1beta1" if "v=v1beta1" in part else "meta.k8s.io/v1"
            if part.strip().split(";")[0] in ("application/json", "*/*", ""):
                return None
        return None

    def check_accept(self):
        accept = self.headers.get("Accept", "")
        if not accept:
            return
        for part in accept.split(","):
            mt = part.strip().split(";")[0]
            if mt in ("application/json", "*/*", "application/*", "application/yaml"):
                return
        raise APIError(406, "NotAcceptable", "only the following media types are accepted: application/json, application/yaml", {})

    def to_table(self, res, objs, q, list_rv=None, no_headers=False):
        inc = q.get("includeObject", "Metadata") or "Metadata"
        if inc not in ("None", "Metadata", "Object"):
            raise err_bad_request('unrecognized includeObject value: "%s"' % inc)
        gv = self.table_wanted()
        rows = []
        for o in objs:
            row = {"cells": res.cells(o, False)}
            if inc == "Object":
                row["object"] = self.external(res, o, True)
            elif inc == "Metadata":
                row["object"] = {"kind": "PartialObjectMetadata", "apiVersion": gv, "metadata": o["metadata"]}
            rows.append(row)
        t = {"kind": "Table", "apiVersion": gv,
             "metadata": {"resourceVersion": list_rv if list_rv is not None else objs[0]["metadata"]["resourceVersion"]}}
        t["columnDefinitions"] = None if no_headers else res.columns()  # not omitempty
        t["rows"] = rows
        return t

    def external(self, res, obj, single=True):
        out = {"kind": res.kind, "apiVersion": res.gv}
        out.update({k: v for k, v in obj.items() if k not in ("kind", "apiVersion")})
        if res.typed and not single:
            out.pop("kind")
            out.pop("apiVersion")
        return out

    # -- the REST verbs
    def resource(self, method, res, ns, name, sub, q, body, user):
        app = self.app
        if method == "GET":
            self.check_accept()
            if name is None:
                try:
                    lsel = parse_label_selector(q.get("labelSelector"))
                    fsel = parse_field_selector(q.get("fieldSelector"), res)
                except SelectorError as e:
                    raise err_bad_request(str(e))
                if q.get("watch") in ("1", "true", "True"):
                    if "watch" not in res.served_verbs:
                        raise err_method(res, "watch")
                    return self.watch(res, ns, q, lsel, fsel)
                if "list" not in res.served_verbs:
                    raise err_method(res, "list")
                items, rv = app.list(res, ns, lsel, fsel)
                return self.send_list(res, items, rv, q)
            obj = app.get(res, ns, name)
            if self.table_wanted():
                return self.send_json(200, self.to_table(res, [obj], q))
            return self.send_json(200, self.external(res, obj))
        verb = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}[method]
        if verb not in res.served_verbs or (method == "POST" and name is not None) \
                or (method != "POST" and name is None):
            if method == "POST" and name is not None:
                raise err_method(res, "POST")
            raise err_method(res, verb)
        if method == "POST":
            obj, dups = self.decode_body(res, body, q)
            obj = self.prepare_object(res, obj, dups, q)
            created = app.create(res, ns, obj, user, q)
            return self.send_json(201, self.external(res, created), self.warnings_headers())
        if method == "PUT":
            obj, dups = self.decode_body(res, body, q)
            obj = self.prepare_object(res, obj, dups, q)
            out = app.update(res, ns, name, obj, sub, q)
            return self.send_json(200, self.external(res, out), self.warnings_headers())
        if method == "PATCH":
            ptype = (self.headers.get("Content-Type") or "").split(";")[0].strip()
            if ptype == "application/apply-patch+yaml":
                raise APIError(415, "UnsupportedMediaType",
                               "the body of the request was in an unknown format - accepted media types include: "
                               "application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json"
                               " (server-side apply is not part of this fake)", {})
            accepted = ["application/json-patch+json", "application/merge-patch+json"]
            if res.typed:
                accepted.append("application/strategic-merge-patch+json")
            if ptype not in accepted:
                raise APIError(415, "UnsupportedMediaType",
                               "the body of the request was in an unknown format - accepted media types include: "
                               + ", ".join(accepted), {})
            patch, _ = self.decode_body(res, body, q, patch=True)
            if ptype == "application/strategic-merge-patch+json" and has_smp_directive(patch):
                raise err_bad_request("strategic merge patch directives ($patch, $retainKeys, ...) are not served by this fake")
            if ptype == "application/json-patch+json" and not isinstance(patch, list):
                raise err_bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")

            def apply(old):
                cur = self.external(res, old)
                new = json_patch(cur, patch) if ptype == "application/json-patch+json" else merge_patch(cur, patch)
                return self.prepare_object(res, new, [], q)
            out = app.update(res, ns, name, None, sub, q, patch_fn=apply)
            return self.send_json(200, self.external(res, out), self.warnings_headers())
        if method == "DELETE":
            opts = None
            if body:
                try:
                    opts = json.loads(body)
                except ValueError:
                    raise err_bad_request("the body of the request was not valid DeleteOptions")
            code, out = app.delete(res, ns, name, q, opts)
            return self.send_json(code, out if out.get("kind") == "Status" else self.external(res, out))

    def send_list(self, res, items, rv, q):
        limit = q.get("limit")
        cont = q.get("continue")
        start = ""
        if cont:
            try:
                c = json.loads(base64.b64decode(cont))
                start = c["start"]
            except (ValueError, KeyError, TypeError):
                raise err_bad_request("continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
        keyf = lambda o: (o["metadata"].get("namespace", "") + "/" + o["metadata"]["name"])
        if start:
            items = [o for o in items if keyf(o) >= start]
        meta = {"resourceVersion": str(rv)}
        if limit and limit.isdigit() and int(limit) > 0 and len(items) > int(limit):
            n = int(limit)
            rest = items[n:]
            items = items[:n]
            meta["continue"] = base64.b64encode(json.dumps(
                {"v": "meta.k8s.io/v1", "rv": rv, "start": keyf(rest[0])}).encode()).decode()
            meta["remainingItemCount"] = len(rest)
        if self.table_wanted():
            t = self.to_table(res, items, q, str(rv)) if items else {
                "kind": "Table", "apiVersion": self.table_wanted(), "metadata": {}, "columnDefinitions": res.columns(), "rows": []}
            t["metadata"] = meta
            return self.send_json(200, t)
        return self.send_json(200, {"kind": res.list_kind, "apiVersion": res.gv, "metadata": meta,
                                    "items": [self.external(res, o, False) for o in items]})

    # -- watch
    def watch(self, res, ns, q, lsel, fsel):
        store = self.app.store
        rvs = q.get("resourceVersion", "")
        try:
            rv = int(rvs) if rvs else 0
            if rv < 0:
                raise ValueError
        except ValueError:
            raise err_bad_request("invalid resource version: %s" % rvs)
        timeout = q.get("timeoutSeconds")
        deadline = time.time() + (int(timeout) if timeout and timeout.isdigit() else 1800)
        bookmarks = q.get("allowWatchBookmarks") in ("1", "true", "True")
        table = self.table_wanted() is not None
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Cache-Control", "no-cache, private")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        self.status_sent = 200
        first = [True]

        def matches(o):
            return o is not None and (not ns or o["metadata"].get("namespace") == ns) and \
                labels_match(lsel, o["metadata"].get("labels")) and fields_match(fsel, res, o)

        def send(typ, obj):
            if typ not in ("ERROR", "BOOKMARK") and table:
                obj = self.to_table(res, [obj], q, no_headers=not first[0])
                first[0] = False
            elif typ not in ("ERROR",):
                obj = self.external(res, obj)
            line = (json.dumps({"type": typ, "object": obj}, separators=(",", ":")) + "\n").encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
            self.wfile.flush()

        try:
            with store.cond:
                gen = store.end_watches
                cache = store.caches[res.key]
                if rv > store.rv:
                    store.cond.wait_for(lambda: store.rv >= rv, timeout=3)
                    if rv > store.rv:
                        st = APIError(504, "Timeout", "Too large resource version: %d, current: %d" % (rv, store.rv),
                                      {"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
                                       "retryAfterSeconds": 1}).status()
                        send("ERROR", st)
                        return self.end_chunks()
                pending = []
                if rv == 0:
                    pending = [("ADDED", copy.deepcopy(o)) for _, o in sorted(store.objects[res.key].items()) if matches(o)]
                    last = store.rv
                else:
                    oldest = cache.oldest()
                    if oldest is None or rv < oldest - 1:
                        st = err_expired("too old resource version: %d (%d)" % (rv, (oldest or store.rv + 1) - 1)).status()
                        send("ERROR", st)
                        return self.end_chunks()
                    last = rv
            for typ, o in pending:
                send(typ, o)
            next_bookmark = time.time() + self.app.bookmark_seconds
            while time.time() < deadline:
                with store.cond:
                    c = store.caches[res.key]
                    evs = [e for e in c.events if e["type"] and e["rv"] > last]
                    if not evs:
                        store.cond.wait(timeout=min(1.0, max(0.05, deadline - time.time())))
                        evs = [e for e in c.events if e["type"] and e["rv"] > last]
                    cur_rv = store.rv
                    ended = store.end_watches != gen
                    expire = store.end_expire
                    if ended:
                        evs = []
                    if c.dropped_rv > last:
                        # events this watcher had not read left the ring: the
                        # cacher ends a watcher that falls behind; the client
                        # watches again from its last resourceVersion (and gets 410)
                        break
                if ended:
                    if expire:
                        send("ERROR", err_expired("too old resource version: %d (%d)" % (last, cur_rv)).status())
                    break
                for e in evs:
                    last = e["rv"]
                    now_m, prev_m = matches(e["obj"]), matches(e["prev"])
                    if e["type"] == "ADDED" and now_m:
                        send("ADDED", e["obj"])
                    elif e["type"] == "MODIFIED":
                        if now_m and prev_m:
                            send("MODIFIED", e["obj"])
                        elif now_m:
                            send("ADDED", e["obj"])
                        elif prev_m:
                            send("DELETED", e["obj"])
                    elif e["type"] == "DELETED" and (prev_m or now_m):
                        send("DELETED", e["obj"])
                if bookmarks and time.time() >= next_bookmark:
                    bm = {"kind": res.kind, "apiVersion": res.gv,
                          "metadata": {"resourceVersion": str(max(last, cur_rv))}}
                    send("BOOKMARK", bm)
                    next_bookmark = time.time() + self.app.bookmark_seconds
            self.end_chunks()
        except (ssl.SSLError, ConnectionError, OSError):
            self.close_connection = True

    def end_chunks(self):
        try:
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (ssl.SSLError, ConnectionError, OSError):
            self.close_connection = True


def main():
    ap = argparse.ArgumentParser(description="Contract fake of the Kubernetes v1.32 API server")
    ap.add_argument("--tls-cert-file", required=True)
    ap.add_argument("--tls-private-key-file", required=True)
    ap.add_argument("--token-auth-file", required=True)
    ap.add_argument("--crd", action="append", help="a CustomResourceDefinition YAML file (repeatable)")
    ap.add_argument("--enable-bootstrap-token-auth", action="store_true")
    ap.add_argument("--default-watch-cache-size", type=int, default=100)
    ap.add_argument("--bookmark-seconds", type=float, default=60.0)
    ap.add_argument("--secure-port", type=int, default=0)
    args = ap.parse_args()
    if jsonschema is None or yaml is None:
        sys.exit("kube_apiserver_fake.py needs python3-jsonschema and python3-yaml")
    app = App(args)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(args.tls_cert_file, args.tls_private_key_file)
    ctx.set_alpn_protocols(["http/1.1"])
    srv = Server(("127.0.0.1", args.secure_port), Handler)
    srv.ssl_ctx = ctx
    srv.app = app
    print(srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
