#!/usr/bin/env bash
# applier_cli.sh: spire-server-fleet-entries, the real binary, against the
# spire-server contract fake (tests/fakes/spire_server_fake.py) installed on
# PATH as `spire-server`. Each case names the rule it holds; each fails if
# that rule is removed.
# Usage: applier_cli.sh APPLIER_BINARY FAKE_SCRIPT
set -u
umask 022

APPLIER=${1:?usage: applier_cli.sh APPLIER FAKE}
FAKE=${2:?usage: applier_cli.sh APPLIER FAKE}
command -v jq >/dev/null || { echo "FAIL: jq is needed"; exit 1; }
command -v python3 >/dev/null || { echo "SKIP: python3 is needed for the fake"; exit 77; }

TMP=$(mktemp -d "${TMPDIR:-/tmp}/fleet-applier-XXXXXX")
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$TMP/bin"
ln -s "$(cd "$(dirname "$FAKE")" && pwd)/$(basename "$FAKE")" "$TMP/bin/spire-server"
export PATH="$TMP/bin:$PATH"
export SPIRE_FAKE_STATE=$TMP/state.json SPIRE_FAKE_LOG=$TMP/calls.log
FILE=$TMP/spire-nodes.json
TD=fleet.example
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

h() { printf '%s' "$1" | sha256sum | cut -c1-64; }
s1() { printf '%s' "$1" | sha1sum | cut -c1-40; }

# dev NAME [not_after]: a device record; w1 and w5 also have an ECC EK.
dev() {
	local ecc=null
	case $1 in w1 | w5) ecc="\"$(h ecc-$1)\"" ;; esac
	printf '{"name":"%s","ek_hash":"%s","ek_hash_ecc":%s,"ldevid_sha1":["%s"]%s}' \
		"$1" "$(h ek-$1)" "$ecc" "$(s1 ld-$1)" "${2:+,\"not_after\":\"$2\"}"
}
# nodes "ELIGIBLE NAMES" "REVOKED NAMES": write the file.
nodes() {
	local e="" r="" n
	for n in $1; do e="$e${e:+,}$(dev "$n")"; done
	for n in $2; do r="$r${r:+,}$(dev "$n" 2027-01-01T00:00:00Z)"; done
	printf '{"version":1,"serial":7,"generated_at":"2026-11-30T05:00:00Z","trust_domain":"%s","eligible":[%s],"revoked":[%s]}\n' \
		"$TD" "$e" "$r" >"$FILE"
}
# A server with one foreign entry and the agents of w1..w5 and w9 attested.
fresh_state() {
	local agents="" n
	# Each device attested twice: the tpm attestor's agent (ID and selector
	# from the EK hash) and the tpm_devid attestor's (ID from the LDevID's
	# SHA-1, selectors from its subject and chain: fleetd's LDevIDs are
	# CN=<name>). One foreign agent of another attestor.
	for n in w1 w2 w3 w4 w5 w9; do
		agents="$agents${agents:+,}\"spiffe://$TD/spire/agent/tpm/$(h ek-$n)\":{\"banned\":false,\"attestation_type\":\"tpm\",\"selectors\":[{\"type\":\"tpm\",\"value\":\"pub_hash:$(h ek-$n)\"}]}"
		agents="$agents,\"spiffe://$TD/spire/agent/tpm_devid/$(s1 ld-$n)\":{\"banned\":false,\"attestation_type\":\"tpm_devid\",\"selectors\":[{\"type\":\"tpm_devid\",\"value\":\"subject:cn:$n\"},{\"type\":\"tpm_devid\",\"value\":\"issuer:cn:fleetd identity CA\"},{\"type\":\"tpm_devid\",\"value\":\"ca:fingerprint:$(s1 ca)\"}]}"
	done
	agents="$agents,\"spiffe://$TD/spire/agent/join_token/7f3c\":{\"banned\":false,\"attestation_type\":\"join_token\",\"selectors\":[]}"
	cat >"$TMP/state.json" <<JSON
{"trust_domain":"$TD","page_size":2,"agents":{$agents},
 "entries":[{"id":"foreign-1","spiffe_id":{"trust_domain":"$TD","path":"/workload/db"},
  "parent_id":{"trust_domain":"$TD","path":"/node/w1"},
  "selectors":[{"type":"unix","value":"uid:1000"}],"revision_number":3}]}
JSON
}
run() { # run NAME WANT_EXIT ARGS...
	local name=$1 want=$2
	shift 2
	: >"$TMP/calls.log"
	"$APPLIER" --file "$FILE" "$@" >"$TMP/out" 2>"$TMP/err"
	local got=$?
	if [ "$got" -ne "$want" ]; then
		fail "$name: exit $got, want $want"
		sed 's/^/  stdout: /' "$TMP/out"
		sed 's/^/  stderr: /' "$TMP/err"
	fi
}
fleet_ids() { jq -r '[.entries[].id | select(startswith("fleet-"))] | sort | join(" ")' "$TMP/state.json"; }
foreign() { jq -cS '.entries[] | select(.id == "foreign-1")' "$TMP/state.json"; }
banned() { jq -r --arg a "$1" '.agents[$a].banned' "$TMP/state.json"; }
state_sum() { sha256sum "$TMP/state.json" | cut -d' ' -f1; }
mutations() { grep -cE '^\["(entry", "(create|update|delete)|agent", "ban)"' "$TMP/calls.log"; }

# 1. A fresh server gets exactly the planned entries; the foreign one stays.
fresh_state
F0=$(foreign)
nodes "w1 w2 w3" ""
run "fresh" 0
[ "$(fleet_ids)" = "fleet-w1 fleet-w1-ecc fleet-w2 fleet-w3" ] || fail "fresh: entries are '$(fleet_ids)'"
jq -e --arg td "$TD" --arg h "$(h ecc-w1)" '.entries[] | select(.id == "fleet-w1-ecc") |
	.spiffe_id == {trust_domain: $td, path: "/node/w1"} and
	.parent_id == {trust_domain: $td, path: "/spire/server"} and
	.selectors == [{type: "tpm", value: ("pub_hash:" + $h)}]' "$TMP/state.json" >/dev/null ||
	fail "fresh: fleet-w1-ecc is not the node entry of w1's ECC EK"
[ "$(foreign)" = "$F0" ] || fail "fresh: the foreign entry changed"
grep -q -- '-node' "$TMP/calls.log" || fail "fresh: entries were not created with -node"

# 2. Idempotent: a second run changes nothing and calls nothing that changes.
S1=$(state_sum)
run "second run" 0
[ "$(state_sum)" = "$S1" ] || fail "second run: the server state changed"
[ "$(mutations)" -eq 0 ] || fail "second run: $(mutations) changing calls"

# 3. An entry changed behind our back is updated; the foreign one is not.
jq '(.entries[] | select(.id == "fleet-w2") | .selectors) = [{"type":"tpm","value":"pub_hash:00"}]' \
	"$TMP/state.json" >"$TMP/s" && mv "$TMP/s" "$TMP/state.json"
run "update" 0
jq -e --arg h "$(h ek-w2)" '.entries[] | select(.id == "fleet-w2") |
	.selectors == [{type: "tpm", value: ("pub_hash:" + $h)}] and .parent_id.path == "/spire/server"' \
	"$TMP/state.json" >/dev/null || fail "update: fleet-w2 was not put back"
grep -q '"entry", "update"' "$TMP/calls.log" || fail "update: no entry update call"
[ "$(foreign)" = "$F0" ] || fail "update: the foreign entry changed"

# 4. --dry-run prints the plan and changes nothing.
S1=$(state_sum)
nodes "w1 w2" "w3"
run "dry run" 0 --dry-run
[ "$(state_sum)" = "$S1" ] || fail "dry run: the state changed"
[ "$(mutations)" -eq 0 ] || fail "dry run: changing calls were made"
grep -q '^delete .*fleet-w3' "$TMP/out" || fail "dry run: the plan does not show fleet-w3's delete"
grep -q "^ban .*tpm/$(h ek-w3)" "$TMP/out" || fail "dry run: the plan does not show w3's ban"

# 5. One removal: entries deleted and every agent form banned, bans first.
run "one removal" 0
[ "$(fleet_ids)" = "fleet-w1 fleet-w1-ecc fleet-w2" ] || fail "one removal: entries are '$(fleet_ids)'"
[ "$(banned "spiffe://$TD/spire/agent/tpm/$(h ek-w3)")" = true ] || fail "one removal: tpm agent not banned"
[ "$(banned "spiffe://$TD/spire/agent/tpm_devid/$(s1 ld-w3)")" = true ] || fail "one removal: tpm_devid agent not banned"
[ "$(banned "spiffe://$TD/spire/agent/tpm/$(h ek-w1)")" = false ] || fail "one removal: w1 was banned"
first=$(grep -nE '"agent", "ban"' "$TMP/calls.log" | head -1 | cut -d: -f1)
del=$(grep -nE '"entry", "delete"' "$TMP/calls.log" | head -1 | cut -d: -f1)
[ -n "$first" ] && [ -n "$del" ] && [ "$first" -lt "$del" ] || fail "one removal: the ban did not come before the delete"
[ "$(foreign)" = "$F0" ] || fail "one removal: the foreign entry changed"

# 6. A device that leaves without a revoked record (a failed verdict, a
#    quarantine): the file no longer names it, yet both its agents are
#    banned: the tpm one from the EK its entry's selector carried, the
#    tpm_devid one found in `agent list` (subject CN=<name>). Other nodes'
#    agents and the foreign agent are untouched.
nodes "w1 w2 w4" "w3"
run "add w4" 0
nodes "w1 w2" "w3"
run "w4 leaves" 0
[ "$(banned "spiffe://$TD/spire/agent/tpm/$(h ek-w4)")" = true ] || fail "w4 leaves: tpm agent not banned"
[ "$(banned "spiffe://$TD/spire/agent/tpm_devid/$(s1 ld-w4)")" = true ] || fail "w4 leaves: tpm_devid agent not banned"
for a in "tpm/$(h ek-w1)" "tpm_devid/$(s1 ld-w1)" "tpm/$(h ek-w2)" "tpm_devid/$(s1 ld-w2)" join_token/7f3c; do
	[ "$(banned "spiffe://$TD/spire/agent/$a")" = false ] || fail "w4 leaves: another node's agent $a was banned"
done
grep -q '"agent", "list"' "$TMP/calls.log" || fail "w4 leaves: agent list was not called"
grep -q "note .*w4" "$TMP/out" && fail "w4 leaves: a note says an agent form of w4 went unbanned"
ban1=$(grep -nE '"agent", "ban"' "$TMP/calls.log" | tail -1 | cut -d: -f1)
del=$(grep -nE '"entry", "delete"' "$TMP/calls.log" | head -1 | cut -d: -f1)
[ -n "$ban1" ] && [ -n "$del" ] && [ "$ban1" -lt "$del" ] || fail "w4 leaves: a ban came after a delete"

# 7. Two removals at once: refused, nothing changed.
S1=$(state_sum)
nodes "" "w3"
run "two removals" 1
[ "$(state_sum)" = "$S1" ] || fail "two removals: the state changed"
[ "$(mutations)" -eq 0 ] || fail "two removals: changing calls were made"
grep -q "removes 2 nodes" "$TMP/err" || fail "two removals: the refusal does not say why"

# 8. --allow-removals 2 approves it, for that run only.
cp "$TMP/state.json" "$TMP/before-two.json"
run "allow 2" 0 --allow-removals 2
[ "$(fleet_ids)" = "" ] || fail "allow 2: entries left: '$(fleet_ids)'"
[ "$(foreign)" = "$F0" ] || fail "allow 2: the foreign entry changed"
cp "$TMP/before-two.json" "$TMP/state.json"
run "approval does not persist" 1

# 9. Revoked devices' agents are banned even with no entry to delete.
fresh_state
nodes "w1" "w9"
run "revoked" 0
[ "$(banned "spiffe://$TD/spire/agent/tpm/$(h ek-w9)")" = true ] || fail "revoked: tpm agent not banned"
[ "$(banned "spiffe://$TD/spire/agent/tpm_devid/$(s1 ld-w9)")" = true ] || fail "revoked: tpm_devid agent not banned"

S1=$(state_sum)
run "revoked, second run" 0
[ "$(state_sum)" = "$S1" ] || fail "revoked, second run: the server state changed"
grep -qE '"entry", "(create|update|delete)"' "$TMP/calls.log" && fail "revoked, second run: entry changes were made"

# 10. Malformed files of each kind: refused, nothing changed, nothing called.
fresh_state
S1=$(state_sum)
malformed() { # NAME JQ-FILTER (applied to a good file) | RAW TEXT
	local name=$1
	nodes "w1 w2" "w9"
	if [ "${3:-}" = raw ]; then printf '%s' "$2" >"$FILE"; else jq -c "$2" "$FILE" >"$TMP/f" && mv "$TMP/f" "$FILE"; fi
	run "malformed: $name" 1
	[ "$(state_sum)" = "$S1" ] || fail "malformed: $name: the state changed"
	[ "$(mutations)" -eq 0 ] || fail "malformed: $name: changing calls were made"
	grep -q "malformed" "$TMP/err" || fail "malformed: $name: the refusal does not say malformed"
}
malformed "bad JSON" '{"version":1,' raw
malformed "wrong version" '.version = 2'
malformed "duplicate names" '.eligible[1].name = "w1"'
malformed "name in both lists" '.revoked[0].name = "w1"'
malformed "short hash" '.eligible[0].ek_hash |= .[1:]'
malformed "uppercase hash" '.eligible[0].ek_hash |= ascii_upcase'
malformed "non-hex ECC hash" '.eligible[0].ek_hash_ecc = ("g" * 64)'
malformed "bad LDevID" '.eligible[1].ldevid_sha1 = ["abc"]'
malformed "unknown top field" '.extra = 1'
malformed "unknown device field" '.eligible[0].class = "worker"'
malformed "missing field" 'del(.revoked[0].not_after)'
malformed "bad trust domain" '.trust_domain = "Fleet Example"'
malformed "duplicate key" '{"version":1,"version":1}' raw

nodes "w1 w2" "w9"
chmod 0666 "$FILE"
run "group-writable file" 1
grep -q "writable by group or others" "$TMP/err" || fail "group-writable file: the refusal does not say why"
[ "$(state_sum)" = "$S1" ] || fail "group-writable file: the state changed"
chmod 0644 "$FILE"

# 11. A failed create stops the run, non-zero; the rest is untouched.
fresh_state
jq '.inject.entry_status["fleet-w2"] = {"code": 13, "message": "datastore-sql: database is locked"}' \
	"$TMP/state.json" >"$TMP/s" && mv "$TMP/s" "$TMP/state.json"
nodes "w1 w2 w3" ""
run "failed create" 1
[ "$(fleet_ids)" = "fleet-w1 fleet-w1-ecc" ] || fail "failed create: entries are '$(fleet_ids)'"
grep -q '"fleet-w3"' "$TMP/calls.log" && fail "failed create: fleet-w3 was attempted after the failure"
grep -q "Internal (13): datastore-sql: database is locked" "$TMP/err" || fail "failed create: the status is not said"

# 12. A failing entry show changes nothing.
fresh_state
jq '.inject.show_error = "connection refused"' "$TMP/state.json" >"$TMP/s" && mv "$TMP/s" "$TMP/state.json"
S1=$(state_sum)
run "show fails" 1
[ "$(state_sum)" = "$S1" ] || fail "show fails: the state changed"
[ "$(mutations)" -eq 0 ] || fail "show fails: changing calls were made"

# 12b. A failing or malformed agent list changes nothing, even with a
#     device leaving.
agent_list_bad() { # NAME JQ-SETTING
	fresh_state
	nodes "w1 w2" ""
	run "agent list: $1 (set-up)" 0
	nodes "w1" ""
	jq "$2" "$TMP/state.json" >"$TMP/s" && mv "$TMP/s" "$TMP/state.json"
	local s0
	s0=$(state_sum)
	run "agent list: $1" 1
	[ "$(state_sum)" = "$s0" ] || fail "agent list: $1: the state changed"
	[ "$(mutations)" -eq 0 ] || fail "agent list: $1: changing calls were made"
	grep -q "agent list" "$TMP/err" || fail "agent list: $1: the refusal does not name agent list"
}
agent_list_bad "fails" '.inject.agent_list_error = "connection refused"'
agent_list_bad "not JSON" '.inject.agent_list_stdout = "{\"agents\":["'
agent_list_bad "no agents array" '.inject.agent_list_stdout = "{\"next_page_token\":\"\"}\n"'
agent_list_bad "a page" '.inject.agent_list_stdout = "{\"agents\":[],\"next_page_token\":\"1000\"}\n"'
agent_list_bad "agent without id" '.inject.agent_list_stdout = "{\"agents\":[{\"attestation_type\":\"tpm\",\"banned\":false,\"selectors\":[]}],\"next_page_token\":\"\"}\n"'
agent_list_bad "selector without value" '.inject.agent_list_stdout = "{\"agents\":[{\"id\":{\"trust_domain\":\"fleet.example\",\"path\":\"/spire/agent/tpm/x\"},\"attestation_type\":\"tpm\",\"banned\":false,\"selectors\":[{\"type\":\"tpm\"}]}],\"next_page_token\":\"\"}\n"'

# 13. --socket reaches the CLI as -socketPath; --spire-server names the CLI.
fresh_state
jq '.socket_path = "/run/spire/server/private/api.sock"' "$TMP/state.json" >"$TMP/s" && mv "$TMP/s" "$TMP/state.json"
nodes "w1" ""
run "wrong socket" 1
run "socket" 0 --socket /run/spire/server/private/api.sock --spire-server "$TMP/bin/spire-server"
[ "$(fleet_ids)" = "fleet-w1 fleet-w1-ecc" ] || fail "socket: entries are '$(fleet_ids)'"

# 14. --config: selector and agent ID templates.
fresh_state
printf 'selector = tpm_devid:subject:cn:{name}\nagent_id = spiffe://{trust_domain}/spire/agent/tpm_devid/{ldevid_sha1}\n' >"$TMP/conf"
nodes "w1" ""
run "config" 0 --config "$TMP/conf"
[ "$(fleet_ids)" = "fleet-w1" ] || fail "config: one entry per device wanted, got '$(fleet_ids)'"
jq -e '.entries[] | select(.id == "fleet-w1") | .selectors == [{type: "tpm_devid", value: "subject:cn:w1"}]' \
	"$TMP/state.json" >/dev/null || fail "config: the selector template was not used"
printf 'selector = tpm:pub_hash:{ek}\n' >"$TMP/conf"
run "bad config" 1 --config "$TMP/conf"

if [ "$failures" -ne 0 ]; then
	echo "$failures failure(s)"
	exit 1
fi
echo "applier_cli: all cases passed"
