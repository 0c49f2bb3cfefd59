#!/usr/bin/env bash
# test_kubectl_fake.sh: the real kubectl against the Kubernetes API contract
# fake (tests/fakes/kube_apiserver_fake.py) over TLS with bearer tokens: what
# fleetd will do through the API (a bootstrap-token Secret, the kubelet's CSR
# made with that token, its approval, the issued certificate, deleting the
# token, a cordon, Tinkerbell Workflows validated against the real CRDs in
# ../shared/contracts/tinkerbell) and the raw API answers fleetd's client
# must handle (401, 404, 409, a watch resumed, 410 for a compacted
# resourceVersion). Each check names what it holds and fails if the fake
# stops doing it.
#
# KUBECTL names the client (default: kubectl). CI runs Debian 12's
# kubernetes-client (kubectl v1.20.2); kubectl v1.32 passes the same checks.
# Skips (exit 77) without kubectl, ../shared/contracts, openssl, curl, jq or
# python3 with the yaml and jsonschema modules.
set -u
umask 077

SRC=${FLEET_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
CONTRACTS=${FLEET_CONTRACTS:-$SRC/../shared/contracts}
KUBECTL=${KUBECTL:-kubectl}
FAKE=$SRC/tests/fakes/kube_apiserver_fake.py
CRDS=$CONTRACTS/tinkerbell

skip() { echo "SKIP: $*"; exit 77; }
command -v "$KUBECTL" >/dev/null 2>&1 || skip "no kubectl ($KUBECTL); Debian's package is kubernetes-client"
[ -d "$CRDS" ] || skip "no $CRDS (the real Tinkerbell CRDs of ../shared/contracts)"
for t in openssl curl jq; do
	command -v "$t" >/dev/null 2>&1 || skip "$t is needed"
done
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3) || skip "python3 is needed for the fake"
"$PY" -c 'import yaml, jsonschema' 2>/dev/null ||
	skip "$PY lacks the yaml or jsonschema module (Debian: python3-yaml python3-jsonschema)"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/fleet-kube-XXXXXX")
FAKE_PID=
WATCH_PID=
cleanup() {
	[ -n "$WATCH_PID" ] && kill "$WATCH_PID" 2>/dev/null
	[ -n "$FAKE_PID" ] && kill "$FAKE_PID" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
cd "$TMP" || exit 1
export HOME=$TMP/home # kubectl's discovery cache, never the user's
mkdir -p "$HOME"

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }
# check NAME DETAIL TEST...: ok when the test command succeeds
check() {
	local name=$1 detail=$2
	shift 2
	if "$@"; then ok "$name"; else fail "$name: $detail"; fi
}
# expect NAME PATTERN FILE: FILE holds the extended regex PATTERN
expect() {
	if grep -Eq -- "$2" "$3"; then ok "$1"; else
		fail "$1: no /$2/ in:"
		sed 's/^/    /' "$3"
	fi
}

# --- TLS: a CA and a server certificate for 127.0.0.1, as the NetBox harness
ec=(-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes)
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >srv.ext
if ! { openssl req -x509 "${ec[@]}" -keyout ca.key -out ca.pem -days 2 -subj /CN=kube-test-ca &&
	openssl req "${ec[@]}" -keyout srv.key -out srv.csr -subj /CN=kube-apiserver &&
	openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
		-out srv.pem -days 2 -extfile srv.ext; } 2>openssl.err; then
	echo "FAIL: openssl could not make the test CA:"
	cat openssl.err
	exit 1
fi

# --- the fake: the apiserver's token file, bootstrap tokens, the CRDs, and a
# watch cache of 5 events per resource so a test can outrun it
ADMIN=fleet-admin-token-0123456789
printf '%s,kubernetes-admin,uid-admin,"system:masters"\n' "$ADMIN" >tokens.csv
"$PY" "$FAKE" --tls-cert-file srv.pem --tls-private-key-file srv.key \
	--token-auth-file tokens.csv --enable-bootstrap-token-auth \
	--default-watch-cache-size 5 \
	--crd "$CRDS/tinkerbell.org_workflows.yaml" \
	--crd "$CRDS/tinkerbell.org_templates.yaml" \
	--crd "$CRDS/tinkerbell.org_hardware.yaml" >port 2>fake.err &
FAKE_PID=$!
for _ in $(seq 100); do
	[ -s port ] && break
	sleep 0.1
done
PORT=$(head -n1 port)
[ -n "$PORT" ] || {
	echo "FAIL: the fake did not start:"
	cat fake.err
	exit 1
}
API=https://127.0.0.1:$PORT

cat >kubeconfig <<EOF
apiVersion: v1
kind: Config
clusters:
- name: fake
  cluster:
    server: $API
    certificate-authority: $TMP/ca.pem
users:
- name: admin
  user:
    token: $ADMIN
contexts:
- name: fake
  context: {cluster: fake, user: admin, namespace: default}
current-context: fake
EOF
export KUBECONFIG=$TMP/kubeconfig
k() { "$KUBECTL" "$@"; }
# api METHOD PATH [curl args]: the raw API as fleetd's client will see it
api() {
	local m=$1 p=$2
	shift 2
	curl -sS --max-time 20 --cacert ca.pem -H "Authorization: Bearer $ADMIN" -X "$m" "$@" "$API$p"
}
ctl() { curl -sS --max-time 20 --cacert ca.pem "$API/_fake/$1" "${@:2}"; }
reqlog() { ctl log | jq -c '.log[]'; }

echo "kubectl: $(k version --client 2>/dev/null | head -n1)"

# --- discovery: kubectl maps the short names it learns from the fake
k api-resources >ar.out 2>&1
expect "discovery: csr is certificatesigningrequests in certificates.k8s.io/v1" \
	'^certificatesigningrequests +csr +certificates.k8s.io/v1 +false +CertificateSigningRequest' ar.out
expect "discovery: wf is workflows in tinkerbell.org/v1alpha1, from the real CRD" \
	'^workflows +wf +tinkerbell.org/v1alpha1 +true +Workflow' ar.out

# --- the bootstrap-token Secret, from YAML, with stringData
cat >bootstrap.yaml <<'EOF'
apiVersion: v1
kind: Secret
metadata:
  name: bootstrap-token-abcdef
  namespace: kube-system
type: bootstrap.kubernetes.io/token
stringData:
  token-id: abcdef
  token-secret: 0123456789abcdef
  usage-bootstrap-authentication: "true"
  usage-bootstrap-signing: "true"
  auth-extra-groups: system:bootstrappers:worker
  expiration: "2099-01-01T00:00:00Z"
EOF
k create -f bootstrap.yaml >out 2>&1
expect "create secret: the bootstrap-token Secret is created" \
	'^secret/bootstrap-token-abcdef created' out
k -n kube-system get secrets >out 2>&1
expect "get secrets: its type is kept and stringData became 6 data entries" \
	'^bootstrap-token-abcdef +bootstrap.kubernetes.io/token +6 ' out
k -n kube-system get secret bootstrap-token-abcdef -o json >secret.json 2>&1
if [ "$(jq -r '.data["token-id"]' secret.json | base64 -d)" = abcdef ] &&
	[ "$(jq -r '.stringData' secret.json)" = null ]; then
	ok "get secret: stringData is merged into data, base64, and never returned"
else fail "get secret: data/stringData: $(cat secret.json)"; fi
k -n kube-system create -f bootstrap.yaml >out 2>&1
expect "create secret again: AlreadyExists" \
	'AlreadyExists.*secrets "bootstrap-token-abcdef" already exists' out

# --- the kubelet's CSR, made with the bootstrap token
openssl req -new "${ec[@]}" -keyout w1.key -out w1.csr \
	-subj "/O=system:nodes/CN=system:node:w1" 2>/dev/null
csr_yaml() { # NAME
	cat <<EOF
apiVersion: certificates.k8s.io/v1
kind: CertificateSigningRequest
metadata:
  name: $1
spec:
  signerName: kubernetes.io/kube-apiserver-client-kubelet
  usages: [digital signature, client auth]
  username: forged-user
  request: $(base64 -w0 w1.csr)
EOF
}
csr_yaml node-csr-w1 >csr.yaml
BOOT=abcdef.0123456789abcdef
k --token "$BOOT" create -f csr.yaml >out 2>&1
expect "create csr with the bootstrap token: created" \
	'^certificatesigningrequest.certificates.k8s.io/node-csr-w1 created' out
k get csr node-csr-w1 -o json >csr.json 2>&1
if [ "$(jq -r .spec.username csr.json)" = system:bootstrap:abcdef ] &&
	[ "$(jq -c .spec.groups csr.json)" = '["system:bootstrappers","system:bootstrappers:worker","system:authenticated"]' ]; then
	ok "csr: spec.username and groups are the bootstrap token's user, not the body's"
else fail "csr: spec.username/groups: $(jq -c .spec csr.json)"; fi
k get csr >out 2>&1
expect "get csr: Pending, requested by system:bootstrap:abcdef" \
	'^node-csr-w1 .*kubernetes.io/kube-apiserver-client-kubelet +system:bootstrap:abcdef .*Pending' out

cat >bad-csr.yaml <<EOF
apiVersion: certificates.k8s.io/v1
kind: CertificateSigningRequest
metadata:
  name: not-a-csr
spec:
  request: $(printf 'not a PEM' | base64 -w0)
EOF
k create -f bad-csr.yaml >out 2>&1
expect "create csr: no signerName is refused (v1 validation)" 'spec.signerName: Required value' out
expect "create csr: no usages is refused" 'spec.usages: Required value' out
expect "create csr: a request that is not a PEM CERTIFICATE REQUEST is refused" \
	'spec.request: Invalid value: .*PEM block type must be CERTIFICATE REQUEST' out

# --- watch: kubectl get --watch sees the ADDED and MODIFIED events
k get csr --watch --output-watch-events >watch.out 2>&1 &
WATCH_PID=$!
for _ in $(seq 100); do
	grep -q node-csr-w1 watch.out && break
	sleep 0.1
done
csr_yaml node-csr-w2 >csr2.yaml
k --token "$BOOT" create -f csr2.yaml >/dev/null 2>&1

# --- approval through PUT .../approval
k certificate approve node-csr-w1 >out 2>&1
expect "certificate approve: approved" \
	'^certificatesigningrequest.certificates.k8s.io/node-csr-w1 approved' out
k get csr node-csr-w1 >out 2>&1
expect "get csr: Approved" '^node-csr-w1 .* Approved$' out
k get csr node-csr-w1 -o json >csr.json 2>&1
if [ "$(jq -r '.status.conditions[0] | .type + "/" + .status + "/" + .reason' csr.json)" = Approved/True/KubectlApprove ] &&
	[ "$(jq -r '.status.conditions[0].lastTransitionTime' csr.json)" != null ]; then
	ok "csr: the Approved condition is True, kubectl's reason, with timestamps"
else fail "csr: conditions $(jq -c .status csr.json)"; fi
reqlog | jq -r 'select(.method=="PUT") | .path + " " + (.status|tostring)' >out
expect "approve: the client PUT the approval subresource" \
	'^/apis/certificates.k8s.io/v1/certificatesigningrequests/node-csr-w1/approval 200$' out

for _ in $(seq 100); do
	grep -q 'MODIFIED .*node-csr-w1 .*Approved' watch.out && break
	sleep 0.1
done
kill "$WATCH_PID" 2>/dev/null
wait "$WATCH_PID" 2>/dev/null
WATCH_PID=
expect "watch: the new CSR arrives as an ADDED event" '^ADDED +node-csr-w2 ' watch.out
expect "watch: the approval arrives as a MODIFIED event" '^MODIFIED +node-csr-w1 .*Approved' watch.out

# --- the signer's certificate (PUT .../status), then the token is deleted
openssl x509 -req -in w1.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out w1.pem \
	-days 1 2>/dev/null
ctl certificate -d "$(jq -n --arg c "$(cat w1.pem)" '{name:"node-csr-w1",certificate:$c}')" >/dev/null
k get csr node-csr-w1 >out 2>&1
expect "get csr: Approved,Issued once status.certificate is set" '^node-csr-w1 .* Approved,Issued$' out
k get csr node-csr-w1 -o jsonpath='{.status.certificate}' | base64 -d |
	openssl x509 -noout -subject >out 2>&1
expect "csr: status.certificate is the issued PEM" 'CN ?= ?system:node:w1' out
k get csr node-csr-w2 -o json >c2.json
jq --arg c "$(printf -- '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n' | base64 -w0)" \
	'.status.certificate=$c' c2.json >c2-bad.json
api PUT /apis/certificates.k8s.io/v1/certificatesigningrequests/node-csr-w2/status \
	-H 'Content-Type: application/json' --data-binary @c2-bad.json >out
expect "PUT status: only CERTIFICATE PEM blocks (422 Invalid)" \
	'"reason":"Invalid".*only CERTIFICATE PEM blocks are allowed, found \\"PRIVATE KEY\\".*"code":422' out

k -n kube-system delete secret bootstrap-token-abcdef >out 2>&1
expect "delete secret: deleted" 'secret "bootstrap-token-abcdef" deleted' out
k --token "$BOOT" get csr >out 2>&1
expect "a deleted bootstrap token no longer authenticates (401)" 'Unauthorized' out
k -n kube-system get secret bootstrap-token-abcdef >out 2>&1
expect "get a deleted secret: NotFound" 'NotFound.*secrets "bootstrap-token-abcdef" not found' out

# --- cordon a seeded node
ctl seed -d '{"objects":[{"apiVersion":"v1","kind":"Node","metadata":{"name":"w1","labels":{"kubernetes.io/hostname":"w1"}},"status":{"conditions":[{"type":"Ready","status":"True"}],"nodeInfo":{"kubeletVersion":"v1.32.9"}}}]}' >/dev/null
k cordon w1 >out 2>&1
expect "cordon: node/w1 cordoned" '^node/w1 cordoned' out
k get nodes >out 2>&1
expect "get nodes: Ready,SchedulingDisabled" '^w1 +Ready,SchedulingDisabled ' out
reqlog | jq -r 'select(.method=="PATCH") | .path + " " + .contentType + " " + (.body|tojson)' >out
expect "cordon: kubectl sent a strategic merge patch of spec.unschedulable" \
	'^/api/v1/nodes/w1 application/strategic-merge-patch\+json \{"spec":\{"unschedulable":true\}\}' out
check "node: spec.unschedulable is true" "it is not" \
	[ "$(k get node w1 -o jsonpath='{.spec.unschedulable}')" = true ]

# --- Tinkerbell Workflows against the real CRD schema
k create namespace tink-system >/dev/null 2>&1
cat >wf.yaml <<'EOF'
apiVersion: tinkerbell.org/v1alpha1
kind: Workflow
metadata:
  name: w1-install
  namespace: tink-system
spec:
  templateRef: talos-install
  hardwareRef: w1
  hardwareMap:
    device_1: "52:54:00:12:34:56"
  bootOptions:
    toggleAllowNetboot: true
EOF
sed -e 's/w1-install/w1-floppy/' -e 's/toggleAllowNetboot: true/bootMode: floppy/' wf.yaml >wf-bad.yaml
sed -e 's/w1-install/w1-typed/' -e 's/toggleAllowNetboot: true/toggleAllowNetboot: "yes"/' wf.yaml >wf-type.yaml
k create -f wf.yaml >out 2>&1
expect "create workflow: a valid Workflow is accepted" '^workflow.tinkerbell.org/w1-install created' out
k create -f wf-bad.yaml >out 2>&1 && fail "create workflow: bootMode floppy was accepted"
expect "create workflow: a bootMode outside the CRD's enum is refused as invalid" \
	'The Workflow "w1-floppy" is invalid: spec.bootOptions.bootMode: Unsupported value: "floppy": supported values: "netboot", "isoboot", "iso", "customboot"' out
reqlog | jq -r 'select(.method=="POST" and .body.metadata.name=="w1-floppy") | (.status|tostring)' >out
expect "create workflow: the refusal is HTTP 422" '^422$' out
k create -f wf-type.yaml >out 2>&1 && fail "create workflow: a string for a boolean was accepted"
expect "create workflow: a string for a boolean is refused by the schema's type" \
	'spec.bootOptions.toggleAllowNetboot: Invalid value: "string": spec.bootOptions.toggleAllowNetboot in body must be of type boolean: "string"' out
k -n tink-system get workflow w1-floppy >out 2>&1
expect "get workflow: the refused Workflow was not stored" 'NotFound' out
k -n tink-system get workflows >out 2>&1
expect "get workflows: the CRD's printer columns" '^NAME +TEMPLATE +STATE +ACTION +AGENT +HARDWARE' out
expect "get workflows: w1-install, template and hardware" '^w1-install +talos-install +w1 *$' out
# an unknown field: pruned (Warning) or refused (kubectl >= 1.27 asks for Strict)
sed -e 's/w1-install/w1-unknown/' -e 's/  hardwareRef: w1/  hardwareRef: w1\n  floppyDrive: a/' wf.yaml >wf-unk.yaml
k create -f wf-unk.yaml >out 2>&1
if reqlog | jq -e 'select(.method=="POST" and .body.metadata.name=="w1-unknown") | select(.query.fieldValidation=="Strict")' >/dev/null; then
	expect "create workflow (fieldValidation=Strict): an unknown field is refused" \
		'strict decoding error: unknown field "spec.floppyDrive"' out
else
	expect "create workflow (default Warn): an unknown field is a warning" \
		'Warning: unknown field "spec.floppyDrive"' out
	check "create workflow: the unknown field was pruned" "it was kept" \
		[ "$(k -n tink-system get wf w1-unknown -o jsonpath='{.spec}' | jq -r 'has("floppyDrive")')" = false ]
fi
k -n tink-system delete workflow w1-install >out 2>&1
expect "delete workflow: deleted" 'workflow.tinkerbell.org "w1-install" deleted' out

# --- the raw API: auth, Status shapes, list and watch resourceVersions
code() { curl -s --max-time 20 -o /dev/null -w '%{http_code}' --cacert ca.pem "$@"; }
check "a bad token is 401" "it is not" \
	[ "$(code -H 'Authorization: Bearer not-a-token' "$API/api/v1/namespaces/default/secrets")" = 401 ]
check "no token is 401" "it is not" [ "$(code "$API/api/v1/namespaces/default/secrets")" = 401 ]
curl -sS --max-time 20 --cacert ca.pem -H 'Authorization: Bearer not-a-token' "$API/api/v1/nodes" >out
expect "401 is a Status, reason Unauthorized" \
	'^\{"kind":"Status","apiVersion":"v1","metadata":\{\},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401\}' out
api GET /api/v1/namespaces/default/secrets/nope >out
expect "404 is a Status naming the resource" \
	'"status":"Failure","message":"secrets \\"nope\\" not found","reason":"NotFound","details":\{"name":"nope","kind":"secrets"\},"code":404' out

sec() { printf '{"apiVersion":"v1","kind":"Secret","metadata":{"name":"%s"},"data":{"k":"dg=="}}' "$1"; }
api POST /api/v1/namespaces/default/secrets -H 'Content-Type: application/json' -d "$(sec s0)" >s0.json
RV0=$(jq -r .metadata.resourceVersion s0.json)
api GET /api/v1/namespaces/default/secrets >out
LRV=$(jq -r .metadata.resourceVersion out)
if [ "$(jq -r .kind out)" = SecretList ] && [ "$LRV" -ge "$RV0" ] 2>/dev/null; then
	ok "list: SecretList with metadata.resourceVersion $LRV"
else fail "list: $(cat out)"; fi
api PUT /api/v1/namespaces/default/secrets/s0 -H 'Content-Type: application/json' \
	-d "$(jq -c '.metadata.resourceVersion="1"' s0.json)" >out
expect "PUT with a stale resourceVersion is 409 Conflict" '"reason":"Conflict".*"code":409' out
for i in 1 2 3; do
	api POST /api/v1/namespaces/default/secrets -H 'Content-Type: application/json' -d "$(sec s$i)" >/dev/null
done
api GET "/api/v1/namespaces/default/secrets?watch=1&resourceVersion=$RV0&timeoutSeconds=1" >out
check "watch from a retained resourceVersion resumes after it" "$(cat out)" \
	[ "$(jq -r '[.type, .object.metadata.name] | join(" ")' out | tr '\n' ,)" = "ADDED s1,ADDED s2,ADDED s3," ]
for i in 4 5 6 7 8 9; do
	api POST /api/v1/namespaces/default/secrets -H 'Content-Type: application/json' -d "$(sec s$i)" >/dev/null
done
api GET "/api/v1/namespaces/default/secrets?watch=1&resourceVersion=$RV0&timeoutSeconds=1" >out
expect "watch from a resourceVersion older than the watch cache: ERROR with a 410 Expired Status" \
	'^\{"type":"ERROR","object":\{"kind":"Status","apiVersion":"v1","metadata":\{\},"status":"Failure","message":"too old resource version: [0-9]+ \([0-9]+\)","reason":"Expired","code":410\}\}$' out
api GET "/api/v1/namespaces/default/secrets?watch=1&timeoutSeconds=1&labelSelector=nope%3Dx" >out
check "watch with a selector nothing matches sends nothing" "$(cat out)" [ ! -s out ]

if [ "$failures" -ne 0 ]; then
	echo "$failures check(s) failed; the fake said:"
	sed 's/^/    /' fake.err
	exit 1
fi
echo "all checks passed"
