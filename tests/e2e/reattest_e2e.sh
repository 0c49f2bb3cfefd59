#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# reattest_e2e.sh: the hourly re-check of a running node, end to end, with the
# real programs: fleetd (nodes-file inventory, provisioning on so it has its
# Kubernetes client, spire.trust_domain so each pass writes spire-nodes.json),
# tink-attest to admit the machines, tpm-reattest for each hourly check,
# fleetctl as the operator, fleet-fwsim as each machine's firmware, each
# machine a real TPM 2.0 (swtpm, rebooted on its own state), and the contract
# fakes of the Kubernetes v1.32 API and talosctl (tests/fakes/).
#
# Two machines, one at a time (scripts/swtpm-env.sh holds one TPM):
#
#   W  worker-w, class worker (role worker in classes.json)
#      1  a clean hourly check                      -> exit 0, pass
#      2  a BIOS update (PCR 0 of another firmware,
#         bios_version fleetd-sim-1.1, pcr0_by_bios
#         has both), after a reboot                 -> exit 0, pass
#      4  a changed boot application, after a reboot -> exit 10: failed
#         verdict, quarantined, Node cordoned, not eligible at the next pass
#      5  the owner's lift                          -> still not eligible;
#         a good reboot and check                   -> eligible at the next pass
#      3  resetCount backwards (an old snapshot of
#         its TPM state booted)                     -> exit 10, clock-backwards
#      8  29 days before the end (fleetd and tpm-reattest 61 days ahead):
#         planned -> exit 10 (device-planned), nothing issued;
#         a changed boot application -> exit 10, quarantined; a good boot ->
#         the check passes, the renewal refused (15); the lift; a renewal ->
#         new LAK (same AK) and LDevID (key 1) certificates, both LDevIDs
#         listed at the next pass; the hour after, nothing due
#      7a a LAK certificate of another CA           -> exit 10, nothing written
#   P  controlplane-p, class controlplane (role controlplane)
#      6  admitted, a clean check passes; a changed boot application -> exit
#         10: failed verdict, crit reattest-failed, the controlplane counter,
#         no cordon, no quarantine, not eligible at the next pass
#      7b W's LAK certificate on P's TPM           -> exit 13, nothing sent
#
# Scenario 3 runs after 4 and 5 because it quarantines W again. fleetd has
# no trigger for a pass besides its start (fleetd/pass/pass_runner.h P1: the
# first pass starts at once; no signal starts one), so "the next pass" is a
# restart of fleetd on the same state and configuration: faster and more
# certain than waiting for pass.interval_seconds (60 at least).
#
# Needs swtpm and tpm2-tools (else exit 77) and ../shared/contracts (the
# Tinkerbell CRDs the Kubernetes fake serves, the Talos schema the talosctl
# fake reads; else exit 77). Set FLEET_KEEP_E2E=1 to keep the directory.
set -euo pipefail

src="${FLEET_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}"
bin="${FLEET_BINARY_DIR:-$src/build}"
contracts="$src/../shared/contracts"

skip() { echo "SKIP: $*"; exit 77; }
if [ ! -d "$contracts/tinkerbell" ] || [ ! -f "$contracts/talos/config.schema.json" ]; then
	skip "no ../shared/contracts (the Tinkerbell CRDs and the Talos schema the fakes need)"
fi
for tool in swtpm swtpm_setup swtpm_localca tpm2_nvread tpm2_readclock tpm2_pcrread \
	openssl curl python3; do
	command -v "$tool" >/dev/null 2>&1 || skip "$tool not found"
done
python3 -c 'import yaml' 2>/dev/null || skip "python3-yaml not found (the talosctl fake needs it)"

# shellcheck source=../../scripts/swtpm-env.sh
. "$src/scripts/swtpm-env.sh"
# shellcheck source=../../scripts/demo-site.sh
. "$src/scripts/demo-site.sh"
site_bins "$bin"
fleetctl="${FLEETCTL:-$site_fleetctl}"
for b in "$site_fleetd" "$fleetctl" "$site_fwsim" "$site_tink" "$site_reattest"; do
	[ -x "$b" ] || { echo "FAIL: $b is not built"; exit 1; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/fleet-reattest-e2e.XXXXXX")
started=$SECONDS
cleanup() {
	local rc=$?
	site_fleetd_stop || true
	site_kube_stop
	swtpm_env_stop
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then
		echo "---- fleetd's log ($work/fleetd.log) ----"
		cat "$work/fleetd.log" 2>/dev/null || true
		echo "---- the Kubernetes fake's log, last lines ----"
		tail -n 20 "$work/kube/fake.log" 2>/dev/null || true
		echo "FAIL: exit $rc after $((SECONDS - started)) s"
	fi
	if [ -n "${FLEET_KEEP_E2E:-}" ]; then
		echo "kept $work"
	else
		rm -rf -- "$work"
	fi
}
trap cleanup EXIT
# swtpm_env_start installs its own EXIT trap: ours goes back after it.
tpm_start() {
	local rc=0
	swtpm_env_start sha1,sha256 || rc=$?
	trap cleanup EXIT
	return "$rc"
}
export SWTPM_ENV_CA="$work/manufacturer" # one TPM manufacturer for W and P
cd "$work"

# ---- checks: each says what it checked -----------------------------------

fail() { echo "FAIL: $*"; exit 1; }
ok() { echo "ok: $*"; }
phase() { printf '\n== %s (%d s)\n' "$*" "$((SECONDS - started))"; }

# fleetd's log since a mark (mark_log): what this step made it say.
log_mark=0
mark_log() { log_mark=$(wc -l <fleetd.log); }
new_log() { tail -n "+$((log_mark + 1))" fleetd.log; }
expect_log() { # ERE what
	new_log | grep -qE -- "$1" || fail "fleetd's log lacks $2 ($1)"
	ok "fleetd journaled $2"
}
expect_no_log() { # ERE what
	! new_log | grep -qE -- "$1" || fail "fleetd's log has $2 ($1)"
	ok "fleetd did not journal $2"
}

metrics() { curl -sf --cacert tls/fleetd.crt "$site_fleetd_url/metrics"; }
metric() { # exact series -> its value ("absent" when fleetd has no such series)
	metrics | awk -v s="$1" '$1 == s { v = $2 } END { print (v == "" ? "absent" : v) }'
}
metric_sum() { # name -> the sum over its series
	metrics | awk -v n="$1" 'index($1, n "{") == 1 || $1 == n { v += $2 } END { print v + 0 }'
}
expect_metric() { # series value
	local v
	v=$(metric "$1")
	[ "$v" = "$2" ] || fail "/metrics: $1 is $v, want $2"
	ok "/metrics: $1 $2"
}

verdicts_json() { "$fleetctl" verdicts --device "$1" --limit 1000 --state-dir "$work/state" --json; }
verdict_count() { verdicts_json "$1" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["verdicts"]))'; }
# The newest verdict: "pass" or "fail REASON ...".
last_verdict() {
	verdicts_json "$1" | python3 -c 'import json,sys
v = json.load(sys.stdin)["verdicts"][0]
print(" ".join([v["result"]] + [r if isinstance(r, str) else r["reason"] for r in v["reasons"]]))'
}
expect_verdict() { # device ERE what
	local v
	v=$(last_verdict "$1")
	[[ $v =~ $2 ]] || fail "$1's newest verdict is \"$v\", want $3"
	ok "$1's newest verdict (fleetctl verdicts): $v"
}

expect_no_new_verdict() { # device count-before jsonl-lines-before what
	[ "$(verdict_count "$1")" -eq "$2" ] || fail "$4 wrote a verdict in the store"
	[ "$(wc -l <state/verdicts.jsonl)" -eq "$3" ] || fail "$4 wrote a line to verdicts.jsonl"
	ok "$4 wrote no verdict (store and verdicts.jsonl unchanged)"
}

quarantined() { "$fleetctl" quarantine list --state-dir "$work/state" | awk 'NR > 1 { print $1 }' | grep -qx "$1"; }

eligible() { # device -> whether spire-nodes.json lists it as eligible
	python3 - state/spire-nodes.json "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if any(e["name"] == sys.argv[2] for e in d["eligible"]) else 1)
PY
}

node_unschedulable() { # node -> true/false, as the Kubernetes API holds it
	site_kapi "$site_api/api/v1/nodes/$1" |
		python3 -c 'import json,sys; print(str(json.load(sys.stdin).get("spec", {}).get("unschedulable", False)).lower())'
}

reset_count() { tpm2_readclock | awk '/reset_count/ { print $2 }'; }
# The resetCount fleetd holds for a device: the store's reattest_clock
# (docs/store.md; fleetctl has no view of it), read-only.
expect_recorded_clock() { # device reset_count
	local v
	v=$(python3 - "$work/state/fleetd.db" "$1" <<'PY'
import sqlite3, sys
c = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
r = c.execute("SELECT reset_count FROM reattest_clock WHERE device = ?", (sys.argv[2],)).fetchone()
print(r[0] if r else "none")
PY
)
	[ "$v" = "$2" ] || fail "fleetd's store holds resetCount $v for $1, want $2"
	ok "fleetd's store holds resetCount $2 for $1 (reattest_clock)"
}

# ---- the site and its machines --------------------------------------------

# The nodes file, written whole each time a status changes (a new inode, so
# fleetd's next lookup reads it). W's and P's entries appear once their EK
# hashes are known.
declare -A class status ek ek_ecc serial port
nodes_file() {
	local n
	{
		echo "version: 1"
		echo "nodes:"
		for n in worker-w controlplane-p; do
			[ -n "${ek[$n]:-}" ] || continue
			cat <<YAML
  - name: $n
    serial: ${serial[$n]}
    status: ${status[$n]}
    primary_ip4: 10.0.0.${port[$n]#Ethernet}
    class: ${class[$n]}
    install_disk: /dev/nvme0n1
    install_disk_serial: "S4EWNX0R${port[$n]#Ethernet}"
    bmc_type: ipmi
    tpm_version: "2.0"
    amt: false
    secure_boot_expected: true
    expected_port: ${port[$n]}
    approved_ek_hash: ${ek[$n]}
    approved_ek_hash_ecc: ${ek_ecc[$n]}
YAML
		done
	} >nodes.yaml.new
	chmod 0644 nodes.yaml.new
	mv nodes.yaml.new nodes.yaml
}
set_status() { # device status
	status[$1]=$2
	nodes_file
	ok "nodes file: $1 is $2"
}

# The TPM now running is machine $1's: its EK hashes for the nodes file.
read_eks() {
	tpm2_nvread 0x01c00002 -o "$1.ek.der" 2>/dev/null
	tpm2_nvread 0x01c00016 -o "$1.ek-ecc.der" 2>/dev/null
	ek[$1]=$("$fleetctl" ek hash "$1.ek.der")
	ek_ecc[$1]=$("$fleetctl" ek hash "$1.ek-ecc.der")
}

# A machine boots: its TPM power-cycled (PCRs reset, resetCount one up; with
# a snapshot, that older state booted instead), the BIOS version it reports,
# its firmware's events measured.
reboot() { # dir events bios [snapshot]
	swtpm_env_reboot "${4:-}"
	echo "$3" >"$1/sys/class/dmi/id/bios_version"
	site_boot "$1" "$src/tests/fwsim/$2"
	echo "   ($1 rebooted: $2, bios_version $3, resetCount $(reset_count))"
}

attest() { # dir -> tink-attest's exit status
	"$site_tink" --url "$site_fleetd_url" --ca tls/fleetd.crt --tcti "$TPM2TOOLS_TCTI" \
		--sysfs-root "$1/sys" --lldp-file "$1/lldp.json" --eventlog "$1/boot.log" \
		--out-dir "$1/out" --attempts 3 >"$1/attest.log" 2>&1
}

# The hourly check: tpm-reattest as its service runs it. Sets rc; its last
# line (the journal's) is printed.
checks=0
reattest_env=() # NAME=VALUE words for tpm-reattest (the renewal's later clock)
reattest() { # dir [--lak-cert FILE]
	local d="$1" lak="$1/out/lak.pem"
	[ "${2:-}" = --lak-cert ] && lak=$3
	checks=$((checks + 1))
	set +e
	env "${reattest_env[@]}" "$site_reattest" --url "$site_fleetd_url" --ca tls/fleetd.crt \
		--lak-cert "$lak" --ldevid-cert "$d/out/ldevid.pem" \
		--tcti "$TPM2TOOLS_TCTI" --eventlog "$d/boot.log" --sysfs-root "$d/sys" \
		--lldp-file "$d/lldp.json" --attempts 2 >"$d/reattest.$checks.log" 2>&1
	rc=$?
	set -e
	echo "   $(tail -n1 "$d/reattest.$checks.log")"
}
expect_check() { # dir rc what [--lak-cert FILE]
	reattest "$1" "${@:4}"
	[ "$rc" -eq "$2" ] || { cat "$1/reattest.$checks.log"; fail "tpm-reattest ($3) exited $rc, want $2"; }
	ok "tpm-reattest ($3) exited $rc"
}

# The next pass: fleetd restarted on the same state (its first pass starts at
# once), and waited for until that pass is counted.
next_pass() {
	site_fleetd_stop || fail "fleetd did not stop cleanly"
	mark_log
	site_fleetd_start fleetd.yaml fleetd.log --log-target stderr || fail "fleetd did not start again"
	local _
	for _ in $(seq 1 100); do
		[ "$(metric 'fleetd_pass_total{result="ok"}')" = 1 ] && break
		sleep 0.1
	done
	[ "$(metric 'fleetd_pass_total{result="ok"}')" = 1 ] || fail "the pass after fleetd's restart did not finish ok"
	[ -f state/spire-nodes.json ] || fail "the pass wrote no spire-nodes.json"
	echo "   (the next pass: fleetd restarted on its state, its first pass done)"
}
expect_eligible() { # device
	eligible "$1" || fail "spire-nodes.json does not list $1 as eligible"
	ok "spire-nodes.json lists $1 as eligible"
}
expect_not_eligible() { # device reason
	! eligible "$1" || fail "spire-nodes.json lists $1 as eligible"
	expect_log "event=spire-excluded FLEET_DEVICE=$1 FLEET_REASON=$2" "$1 excluded from SPIRE ($2)"
	ok "spire-nodes.json does not list $1 as eligible"
}

# Each events variant is worker.events.yaml with exactly the events it
# names changed: a drifted copy would test something else.
check_variant() { # file changed-lines
	local n
	n=$(diff <(grep -v '^ *#' "$src/tests/fwsim/worker.events.yaml") \
		<(grep -v '^ *#' "$src/tests/fwsim/$1") | grep -c '^>' || true)
	[ "$n" -eq "$2" ] || fail "tests/fwsim/$1 differs from worker.events.yaml in $n events, want $2"
	ok "tests/fwsim/$1 is worker.events.yaml with $2 event(s) changed"
}

# ---- phases ---------------------------------------------------------------

phase_w_tpm() {
	phase "W's TPM; the second BIOS's PCR 0"
	check_variant worker-bios-1.1.events.yaml 2
	check_variant worker-unknown-shim.events.yaml 1
	tpm_start
	read_eks worker-w
	mkdir -p roots && cp "$SWTPM_ENV_ROOTS"/*.pem roots/
	# fleetd reads profiles at start, so the profile holds PCR 0 of both
	# BIOS versions from the start: the second from a boot of W with the
	# updated firmware, replayed from its log.
	mkdir -p bios11
	site_boot bios11 "$src/tests/fwsim/worker-bios-1.1.events.yaml"
	pcr0_11=$("$fleetctl" eventlog replay --json bios11/boot.log |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["pcrs"]["sha256"]["0"])')
	pcr0_10=$(sed -n 's/^  "fleetd-sim-1.0": "\([0-9a-f]*\)"$/\1/p' "$src/tests/fwsim/worker.profile.yaml")
	[ -n "$pcr0_10" ] || fail "no PCR 0 for fleetd-sim-1.0 in worker.profile.yaml"
	[ "$pcr0_11" != "$pcr0_10" ] || fail "the updated BIOS's PCR 0 is not another value"
	ok "PCR 0 of fleetd-sim-1.1 is $pcr0_11 (1.0: $pcr0_10)"
}

phase_site() {
	phase "the site: fleetd, the Kubernetes API, talosctl, classes, profiles"
	mkdir -p profiles state && chmod 0700 state
	sed "/^  \"fleetd-sim-1.0\": /a\\  \"fleetd-sim-1.1\": \"$pcr0_11\"" \
		"$src/tests/fwsim/worker.profile.yaml" >profiles/worker.yaml
	grep -q '"fleetd-sim-1.1"' profiles/worker.yaml || fail "the profile has no second BIOS"
	# The control plane boots the same firmware under its own class.
	sed 's/^class: worker$/class: controlplane/' profiles/worker.yaml >profiles/controlplane.yaml
	site_tls tls
	"$fleetctl" ca init state/ca --cn "fleetd reattest e2e CA" >/dev/null
	site_kube_start "$work/kube" "$contracts"
	# Both machines' Nodes exist before anything is checked: a cordon is a
	# PATCH of one, and the other must stay as it is.
	site_kctl seed -X POST -H 'Content-Type: application/json' -o /dev/null -d @- <<'JSON'
{"objects": [
  {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "tinkerbell"}},
  {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "worker-w"}, "spec": {}},
  {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "controlplane-p"}, "spec": {}}
]}
JSON
	site_talos "$work"
	site_classes_json classes.json "sha256:$(printf 'demo installer' | sha256sum | cut -c1-64)" \
		worker:worker controlplane:controlplane
	site_class_inputs class-inputs.json worker controlplane
	# Planned until admitted (admission needs planned), then active (a
	# re-check of a planned device is refused, and only an active one is
	# eligible).
	class[worker-w]=worker serial[worker-w]=E2E-W-0001 port[worker-w]=Ethernet21
	class[controlplane-p]=controlplane serial[controlplane-p]=E2E-P-0002 port[controlplane-p]=Ethernet22
	status[worker-w]=planned status[controlplane-p]=planned
	nodes_file
	site_fleetd_yaml "$work" "$(site_free_port)" --provision --spire fleet.e2e.test \
		--class worker=worker.yaml --class controlplane=controlplane.yaml >fleetd.yaml
	: >fleetd.log
	site_fleetd_start fleetd.yaml fleetd.log --log-target stderr || fail "fleetd did not start"
	ok "fleetd serves on $site_fleetd_url (Kubernetes fake on $site_api)"
}

phase_w_admit() {
	phase "W is admitted (tink-attest) and set active"
	site_machine w "${serial[worker-w]}" "${port[worker-w]}" 52:54:00:00:00:21
	reboot w worker.events.yaml fleetd-sim-1.0
	attest w || { rc=$?; cat w/attest.log; fail "tink-attest for W exited $rc"; }
	[ -s w/out/lak.pem ] || fail "W got no LAK certificate"
	ok "tink-attest admitted worker-w (its LAK certificate in w/out/lak.pem)"
	set_status worker-w active
}

phase_w_clean_check() {
	phase "1. W's clean hourly check"
	mark_log
	local n
	n=$(verdict_count worker-w)
	expect_check w 0 "clean boot"
	grep -q "fleetd's check passed (exit 0, pass)" "w/reattest.$checks.log" || fail "tpm-reattest did not say pass"
	expect_verdict worker-w '^pass$' "a pass"
	# R-3: a pass after a pass writes no second verdict.
	[ "$(verdict_count worker-w)" -eq "$n" ] || fail "a pass after a pass wrote a verdict"
	ok "no verdict written for a pass after a pass"
	expect_metric 'fleetd_reattest_total{result="pass"}' 1
	next_pass
	expect_eligible worker-w
}

phase_w_bios_update() {
	phase "2. W's BIOS update (PCR 0 of fleetd-sim-1.1)"
	local before
	before=$(reset_count)
	reboot w worker-bios-1.1.events.yaml fleetd-sim-1.1
	[ "$(reset_count)" -gt "$before" ] || fail "the reboot did not raise resetCount"
	[ "$(tpm2_pcrread sha256:0 | awk '/0 :/ { print tolower($3) }')" = "0x$pcr0_11" ] ||
		fail "W's PCR 0 is not the updated BIOS's"
	ok "W's PCR 0 is the updated BIOS's, resetCount $before -> $(reset_count)"
	mark_log
	expect_check w 0 "after the BIOS update"
	expect_verdict worker-w '^pass$' "a pass"
	expect_no_log "event=(device-quarantined|reattest-failed)" "a failure"
}

phase_w_tampered_boot() {
	phase "4. W boots a changed boot application"
	reboot w worker-unknown-shim.events.yaml fleetd-sim-1.0
	mark_log
	expect_check w 10 "changed shim"
	expect_verdict worker-w '^fail .*boot-application-not-allowed' "a failure for the boot application"
	expect_log "event=device-quarantined FLEET_DEVICE=worker-w" "device-quarantined for worker-w"
	expect_log "event=cordon-requested FLEET_DEVICE=worker-w" "the cordon of worker-w"
	quarantined worker-w || fail "fleetctl quarantine list does not show worker-w"
	ok "fleetctl quarantine list shows worker-w"
	[ "$(node_unschedulable worker-w)" = true ] || fail "Node worker-w is not unschedulable"
	ok "Node worker-w has spec.unschedulable true"
	[ "$(node_unschedulable controlplane-p)" = false ] || fail "Node controlplane-p was cordoned too"
	ok "Node controlplane-p is untouched"
	expect_metric 'fleetd_reattest_failed_total{role="worker"}' 1
	expect_metric 'fleetd_reattest_failed_total{role="controlplane"}' 0
	next_pass
	expect_not_eligible worker-w quarantined
}

phase_w_lift() {
	phase "5. The owner lifts W's quarantine"
	set +e
	"$fleetctl" quarantine lift worker-w --reason "shim rebuilt by us; reinstalled" \
		--state-dir "$work/state" >lift.out 2>lift.err
	rc=$?
	set -e
	cat lift.out
	[ "$rc" -eq 0 ] || { cat lift.err; fail "fleetctl quarantine lift exited $rc"; }
	ok "fleetctl quarantine lift worker-w exited 0"
	# The lift is journaled by fleetctl: on stderr here (no journald), else
	# in the journal.
	if ! grep -qE 'event=quarantine-lifted FLEET_DEVICE=worker-w' lift.err &&
		! { command -v journalctl >/dev/null &&
			journalctl -q --no-pager FLEET_EVENT=quarantine-lifted FLEET_DEVICE=worker-w | grep -q .; }; then
		cat lift.err
		fail "no quarantine-lifted journal entry for worker-w"
	fi
	ok "fleetctl journaled quarantine-lifted for worker-w"
	! quarantined worker-w || fail "worker-w is still quarantined"
	ok "fleetctl quarantine list no longer shows worker-w"
	next_pass
	expect_not_eligible worker-w verdict-failed
	reboot w worker.events.yaml fleetd-sim-1.0
	mark_log
	expect_check w 0 "good boot after the lift"
	expect_verdict worker-w '^pass$' "a pass again"
	next_pass
	expect_eligible worker-w
}

# Renewal starts 30 days before the end, and fleetd's shortest validity is 31
# days: fleetd and tpm-reattest run 61 days from now (libfaketime, preloaded
# into those two programs only; production code never knows), when W's
# 90-day certificates have 29 days left. Everything else (swtpm, curl,
# fleetctl, the fakes) keeps the real clock. docs/testing.md, "Time".
faketime_lib=/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1
later=(LD_PRELOAD="$faketime_lib" FAKETIME=+61d FAKETIME_DONT_FAKE_MONOTONIC=1
	"ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0")
der_sha1() { openssl x509 -in "$1" -outform DER | sha1sum | cut -c1-40; }
pubkey_of() { openssl x509 -in "$1" -noout -pubkey; }
ldevid_listed() { # device sha1 -> whether its eligible entry lists that LDevID
	python3 - state/spire-nodes.json "$1" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if any(e["name"] == sys.argv[2] and sys.argv[3] in e["ldevid_sha1"]
                  for e in d["eligible"]) else 1)
PY
}
fleetd_clock() { # later|now: fleetd restarted on its state with that clock
	site_fleetd_stop || fail "fleetd did not stop cleanly"
	if [ "$1" = later ]; then site_fleetd_env=("${later[@]}"); else site_fleetd_env=(); fi
	mark_log
	site_fleetd_start fleetd.yaml fleetd.log --log-target stderr || fail "fleetd did not start ($1)"
}

phase_w_renewal() {
	phase "8. W renews, 29 days before its certificates end"
	[ -f "$faketime_lib" ] || fail "libfaketime is not installed ($faketime_lib; scripts/deps.sh installs faketime)"
	cp w/out/lak.pem w/lak.before.pem
	cp w/out/ldevid.pem w/ldevid.before.pem
	local old_ldevid new_ldevid
	old_ldevid=$(der_sha1 w/ldevid.before.pem)
	fleetd_clock later
	reattest_env=("${later[@]}")
	ok "fleetd and tpm-reattest run 61 days from now: W's certificates end $(openssl x509 -in w/out/lak.pem -noout -enddate | cut -d= -f2)"

	# A planned device cannot renew (nor be checked): nothing issued.
	set_status worker-w planned
	mark_log
	expect_check w 10 "planned, renewal due"
	expect_log "event=reattest-unproven .*FLEET_REASON=device-planned" "device-planned"
	cmp -s w/out/ldevid.pem w/ldevid.before.pem || fail "a planned device's run changed its certificates"
	set_status worker-w active
	sleep 2.5 # intake's lookup keeps an answer 2 s (fleetd/admission/lookup.h)

	# A changed boot application while the renewal is due: the check is
	# refused (the renewal is the check plus a key, never instead of it).
	reboot w worker-unknown-shim.events.yaml fleetd-sim-1.0
	expect_check w 10 "changed shim, renewal due"
	expect_log "event=device-quarantined FLEET_DEVICE=worker-w" "device-quarantined for worker-w"
	cmp -s w/out/ldevid.pem w/ldevid.before.pem || fail "a refused check changed W's LDevID certificate"
	# A quarantined worker cannot renew: a good boot passes its check, the
	# renewal is refused, the node's files stay.
	reboot w worker.events.yaml fleetd-sim-1.0
	mark_log
	expect_check w 15 "quarantined, renewal due"
	grep -q "refused the renewal" "w/reattest.$checks.log" || fail "tpm-reattest did not say the renewal was refused"
	expect_log "event=renewal-refused FLEET_DEVICE=worker-w .*FLEET_REASON=renew-quarantined" \
		"renewal-refused (renew-quarantined)"
	if ! cmp -s w/out/lak.pem w/lak.before.pem || ! cmp -s w/out/ldevid.pem w/ldevid.before.pem; then
		fail "a refused renewal changed W's certificates"
	fi
	ok "W's certificates are untouched"
	"$fleetctl" quarantine lift worker-w --reason "e2e: renewal" --state-dir "$work/state" \
		>/dev/null 2>&1 || fail "fleetctl quarantine lift exited $?"
	ok "the owner lifted W's quarantine"

	# The renewal: LDevID key 1, certified by the LAK, both certificates new.
	mark_log
	expect_check w 0 "renewal at 29 days"
	grep -q "renewed with LDevID key 1" "w/reattest.$checks.log" || fail "tpm-reattest did not renew"
	expect_log "event=certificates-renewed FLEET_DEVICE=worker-w" "certificates-renewed for worker-w"
	expect_metric 'fleetd_renewals_total{result="renewed"}' 1
	new_ldevid=$(der_sha1 w/out/ldevid.pem)
	[ "$new_ldevid" != "$old_ldevid" ] || fail "W's LDevID certificate is the old one"
	[ "$(pubkey_of w/out/lak.pem)" = "$(pubkey_of w/lak.before.pem)" ] || fail "the new LAK certificate is for another key"
	! cmp -s w/out/lak.pem w/lak.before.pem || fail "W's LAK certificate was not renewed"
	[ "$(pubkey_of w/out/ldevid.pem)" != "$(pubkey_of w/ldevid.before.pem)" ] ||
		fail "the new LDevID certificate is for the old key"
	ok "W holds a new LAK certificate (same AK) and a LDevID certificate for a new key"
	local f
	for f in w/out/*; do
		case "${f##*/}" in
		lak.pem | ldevid.pem | ca.pem | code | proof | lak.pem.prev | ldevid.pem.prev) ;;
		*) ls -l w/out; fail "a renewal left another file: $f" ;;
		esac
	done
	cmp -s w/out/ldevid.pem.prev w/ldevid.before.pem || fail "ldevid.pem.prev is not the replaced certificate"
	ok "no key file and no leftover: the new key is in the TPM (the replaced certificates kept as .prev)"
	next_pass
	expect_eligible worker-w
	ldevid_listed worker-w "$new_ldevid" || fail "spire-nodes.json does not list W's new LDevID"
	ldevid_listed worker-w "$old_ldevid" || fail "spire-nodes.json no longer lists W's old LDevID"
	ok "spire-nodes.json lists W's new LDevID and, until its notAfter, the old one"
	# The hour after: nothing due, a plain check.
	expect_check w 0 "the hour after the renewal"
	! grep -q "renewed" "w/reattest.$checks.log" || fail "tpm-reattest renewed again"
	ok "no renewal the hour after (nothing due)"

	# Back to now. The new certificates begin 61 days from now, so W keeps
	# its old ones, which fleetd still accepts (RA5: a LAK of the same AK).
	reattest_env=()
	cp w/lak.before.pem w/out/lak.pem
	cp w/ldevid.before.pem w/out/ldevid.pem
	fleetd_clock now
	expect_check w 0 "the old certificates after the renewal, now"
}

phase_w_clock_backwards() {
	phase "3. W's TPM clock goes backwards"
	# W's TPM state while it is off. Booted later it starts at the
	# resetCount the next boot gets now, so that one is not below what
	# fleetd records (equal passes): one more boot and check put fleetd's
	# record past it.
	swtpm_env_off
	swtpm_env_snapshot "$work/w-snapshot"
	swtpm_env_on
	local old high
	old=$(reset_count)
	site_boot w "$src/tests/fwsim/worker.events.yaml"
	echo "   (snapshot of W's TPM state taken; it boots at resetCount $old)"
	reboot w worker.events.yaml fleetd-sim-1.0
	high=$(reset_count)
	mark_log
	expect_check w 0 "resetCount $high"
	expect_recorded_clock worker-w "$high"
	reboot w worker.events.yaml fleetd-sim-1.0 "$work/w-snapshot"
	[ "$(reset_count)" -eq "$old" ] || fail "the snapshot did not boot at resetCount $old"
	ok "W's TPM booted from the snapshot: resetCount $old, below fleetd's $high"
	mark_log
	expect_check w 10 "resetCount backwards"
	expect_log "event=device-quarantined FLEET_DEVICE=worker-w .*FLEET_REASON=clock-backwards" \
		"clock-backwards (authenticated: the worker quarantined)"
	expect_verdict worker-w '^fail clock-backwards' "a failure for clock-backwards"
	expect_recorded_clock worker-w "$high"
}

phase_w_foreign_lak() {
	phase "7a. A LAK certificate of another CA: unproven, nothing written"
	# W's own AK key (tpm-reattest checks it against the TPM first), in a
	# certificate another CA signed.
	openssl x509 -in w/out/lak.pem -noout -pubkey >w/ak.pub
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
		-subj /CN=other-ca -keyout other-ca.key -out other-ca.pem 2>/dev/null
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout w/throwaway.key \
		-subj /CN=worker-w -out w/foreign.csr 2>/dev/null
	printf 'extendedKeyUsage=2.23.133.8.3\nkeyUsage=critical,digitalSignature\n' >w/foreign.ext
	openssl x509 -req -in w/foreign.csr -force_pubkey w/ak.pub -CA other-ca.pem -CAkey other-ca.key \
		-CAcreateserial -days 2 -extfile w/foreign.ext -out w/foreign-lak.pem 2>/dev/null
	local n lines
	n=$(verdict_count worker-w)
	lines=$(wc -l <state/verdicts.jsonl)
	mark_log
	expect_check w 10 "another CA's LAK certificate" --lak-cert w/foreign-lak.pem
	expect_log "event=reattest-unproven .*FLEET_REASON=lak-unknown" "reattest-unproven (lak-unknown)"
	expect_metric 'fleetd_unproven_total{reason="reattest-proof"}' 1
	expect_no_new_verdict worker-w "$n" "$lines" "an unproven check"
	expect_no_log "event=(device-quarantined|reattest-failed|cordon)" "a quarantine, alert or cordon"
}

phase_p_admit() {
	phase "P (control plane) is admitted and set active"
	swtpm_env_stop
	tpm_start
	read_eks controlplane-p
	nodes_file
	site_machine p "${serial[controlplane-p]}" "${port[controlplane-p]}" 52:54:00:00:00:22
	reboot p worker.events.yaml fleetd-sim-1.0
	attest p || { rc=$?; cat p/attest.log; fail "tink-attest for P exited $rc"; }
	ok "tink-attest admitted controlplane-p"
	set_status controlplane-p active
}

phase_p_checks() {
	phase "6. P's clean check, then a changed boot application"
	mark_log
	expect_check p 0 "clean boot"
	expect_verdict controlplane-p '^pass$' "a pass"
	next_pass
	expect_eligible controlplane-p
	reboot p worker-unknown-shim.events.yaml fleetd-sim-1.0
	mark_log
	expect_check p 10 "changed shim"
	expect_verdict controlplane-p '^fail .*boot-application-not-allowed' "a failure for the boot application"
	expect_log "crit event=reattest-failed FLEET_DEVICE=controlplane-p" "crit reattest-failed for controlplane-p"
	expect_no_log "event=(device-quarantined|cordon-requested) FLEET_DEVICE=controlplane-p" \
		"a quarantine or cordon of controlplane-p"
	expect_metric 'fleetd_reattest_failed_total{role="controlplane"}' 1
	expect_metric 'fleetd_reattest_failed_total{role="worker"}' 0
	[ "$(node_unschedulable controlplane-p)" = false ] || fail "Node controlplane-p was cordoned"
	ok "Node controlplane-p is not unschedulable"
	! quarantined controlplane-p || fail "controlplane-p is quarantined"
	ok "fleetctl quarantine list does not show controlplane-p"
	next_pass
	expect_not_eligible controlplane-p verdict-failed
}

phase_wrong_tpm() {
	phase "7b. W's LAK certificate on P's TPM: nothing sent"
	# W's files, P's TPM: the AK tpm-reattest re-makes is P's.
	local n lines before after baseline
	n=$(verdict_count worker-w)
	lines=$(wc -l <state/verdicts.jsonl)
	# What two /metrics reads alone add to fleetd's responses, to tell a
	# request apart from our own reads.
	before=$(metric_sum fleetd_http_responses_total)
	baseline=$(($(metric_sum fleetd_http_responses_total) - before))
	before=$(metric_sum fleetd_http_responses_total)
	mark_log
	expect_check w 13 "W's certificate, P's TPM"
	grep -q "ak-not-certificate" "w/reattest.$checks.log" || fail "tpm-reattest did not say ak-not-certificate"
	after=$(metric_sum fleetd_http_responses_total)
	[ $((after - before)) -eq "$baseline" ] || fail "fleetd answered $((after - before - baseline)) request(s)"
	ok "fleetd got no request (fleetd_http_responses_total moved only by our /metrics reads)"
	expect_no_log "reattest" "anything about a re-check"
	expect_no_new_verdict worker-w "$n" "$lines" "a check never sent"
}

phase_w_tpm
phase_site
phase_w_admit
phase_w_clean_check
phase_w_bios_update
phase_w_tampered_boot
phase_w_lift
phase_w_renewal
phase_w_clock_backwards
phase_w_foreign_lak
phase_p_admit
phase_p_checks
phase_wrong_tpm
phase "done: $checks checks by tpm-reattest, every outcome as expected"
