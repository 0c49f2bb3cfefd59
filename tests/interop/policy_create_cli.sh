#!/usr/bin/env bash
# policy_create_cli.sh: `fleetctl policy create` and `policy explain` on every
# real firmware log in ../shared/data/eventlogs (issue 15):
#   - the profile made from a log parses and admits that log (policy check);
#   - its "#   PCR n event" comments are that log's events (index, offset,
#     PCR, type, digest and description as `fleetctl eventlog show` gives
#     them) and name real event descriptions;
#   - it refuses every other log;
#   - explain names the first event of another log (same bank) that differs
#     from the recorded boot, as computed here from `eventlog show`;
#   - a copy of the GCE log with one byte of a PCR 4 digest flipped is
#     refused, and explain names that event and the rule;
#   - unreadable and malformed logs are refused with a sentence.
set -u

: "${FLEETCTL:?FLEETCTL must name the fleetctl binary}"
: "${FLEET_SHARED_DATA:?}"
LOGS="$FLEET_SHARED_DATA/eventlogs"
if [ ! -d "$LOGS" ]; then
	echo "SKIP: $LOGS not found (the shared real-world data is not beside this checkout)"
	exit 77
fi
command -v jq >/dev/null || { echo "FAIL: jq is needed to read --json output"; exit 1; }

TMP=$(mktemp -d "${TMPDIR:-/tmp}/fleet-policy-create-XXXXXX")
trap 'rm -rf "$TMP"' EXIT
failures=0
fail() {
	echo "FAIL: $*"
	failures=$((failures + 1))
}

# events LOG BANK: one line per event of `eventlog show`: index offset pcr
# type digest-in-BANK ("-" when none) description.
events() {
	"$FLEETCTL" eventlog show "$1" | awk -v bank="$2" '
		function flush() { if (idx != "") print idx, off, pcr, type, (dig == "" ? "-" : dig), desc }
		/^#[0-9]+ @[0-9]+ PCR / {
			flush()
			idx = substr($1, 2); off = substr($2, 2); pcr = $4; type = $5; dig = ""
			desc = ""
			p = index($0, " bytes: ")
			if (p) desc = substr($0, p + 8)
			next
		}
		$1 == bank ":" { dig = $2 }
		END { flush() }'
}

mapfile -t ALL < <(ls "$LOGS"/*.bin | sort)
[ "${#ALL[@]}" -ge 2 ] || { echo "FAIL: fewer than two real logs in $LOGS"; exit 1; }

declare -A BANK
for log in "${ALL[@]}"; do
	n=$(basename "$log" .bin)
	prof="$TMP/$n.yaml"
	if ! "$FLEETCTL" policy create --from-log "$log" --class worker --out "$prof" \
		2>"$TMP/err"; then
		fail "$n: policy create"; sed 's/^/  /' "$TMP/err"; continue
	fi
	grep -q "^fleetctl: policy: wrote $prof: class worker" "$TMP/err" ||
		fail "$n: create says what it wrote"
	if ! "$FLEETCTL" policy check --profile "$prof" --log "$log" >"$TMP/out" 2>"$TMP/err"; then
		fail "$n: the created profile refuses its own log"; sed 's/^/  /' "$TMP/err"
	fi
	grep -qx pass "$TMP/out" || fail "$n: check prints pass"
	"$FLEETCTL" policy explain --profile "$prof" --log "$log" >"$TMP/out" 2>&1 ||
		fail "$n: explain of a passing log exits 0"
	grep -q '^verdict: pass (class worker, ' "$TMP/out" || fail "$n: explain says pass"
	BANK[$n]=$(awk '$1 == "bank:" { print $2; exit }' "$prof")
	[ -n "${BANK[$n]}" ] || { fail "$n: no quote.bank in the profile"; continue; }

	# The recorded events are the log's, field by field.
	events "$log" "${BANK[$n]}" >"$TMP/$n.events"
	nrec=0
	while read -r _ _ pcr _ idx at type hex rest; do
		nrec=$((nrec + 1))
		want=$(awk -v k="$idx" '$1 == k' "$TMP/$n.events")
		read -r w_idx w_off w_pcr w_type w_hex w_desc <<<"$want"
		if [ "$w_off" != "${at#@}" ] || [ "$w_pcr" != "$pcr" ] || [ "$w_type" != "$type" ] ||
			[ "$w_hex" != "${hex%:}" ]; then
			fail "$n: comment 'PCR $pcr event $idx $at $type $hex' is not event $idx ($want)"
			continue
		fi
		# The description, up to where the profile caps or marks it.
		d=${rest%%\[binds: *}
		d=${d%"${d##*[! ]}"}
		d=${d:0:40}
		if [ -n "$d" ] && [ "${w_desc:0:${#d}}" != "$d" ]; then
			fail "$n: event $idx described '$d', eventlog show says '${w_desc:0:60}'"
		fi
	done < <(grep '^  #   PCR [0-9]* event ' "$prof")
	[ "$nrec" -gt 0 ] || [ "$(wc -l <"$TMP/$n.events")" -le 1 ] ||
		fail "$n: the profile records none of the log's events"
done

# Real descriptions in the comments of the GCE profile.
GCEP="$TMP/tpm2tools-event-gce-ubuntu-2104-log.yaml"
for text in 'EV_S_CRTM_VERSION .*: GCE Virtual Firmware v1' \
	'EV_EFI_ACTION .*: Calling EFI Application from Boot Option' \
	'EV_EFI_BOOT_SERVICES_APPLICATION: .*grubx64.efi \[binds: none\]' \
	'^# SecureBoot off: PCR 7 event 3 @397 EV_EFI_VARIABLE_DRIVER_CONFIG SecureBoot' \
	'EV_EFI_VARIABLE_AUTHORITY: .* SbatLevel'; do
	grep -q -- "$text" "$GCEP" || fail "GCE profile comments lack '$text'"
done
grep -qx 'secure_boot: false' "$GCEP" || fail "GCE profile: secure_boot false"
grep -qx '  - "d99c93fcb042dbe52707bbde371c75fcf081dd5b0c88a195d44cc57536f6f521"' "$GCEP" ||
	fail "GCE profile lists shim among boot_applications"

# Each profile refuses every other log.
for a in "${ALL[@]}"; do
	na=$(basename "$a" .bin)
	[ -f "$TMP/$na.yaml" ] || continue
	for b in "${ALL[@]}"; do
		[ "$a" = "$b" ] && continue
		nb=$(basename "$b" .bin)
		"$FLEETCTL" policy check --profile "$TMP/$na.yaml" --log "$b" >/dev/null 2>&1
		rc=$?
		[ "$rc" -eq 1 ] || fail "profile of $na on $nb: exit $rc, want 1 (refused)"
	done
done

# first_diff A.events B.events: "PCR p event k @off" of B's first event on
# PCRs 0-7 unlike A's at the same place of that PCR; else "lacks PCR p event
# k @off" for the first event of A that B does not have.
first_diff() {
	awk '
		NR == FNR { if ($4 != "EV_NO_ACTION" && $3 <= 7) { a[$3, na[$3]++] = $5; ai[$3, na[$3] - 1] = $1 " " $2 } ; next }
		$4 != "EV_NO_ACTION" && $3 <= 7 {
			j = nb[$3]++
			if (!found && (j >= na[$3] || a[$3, j] != $5)) { found = 1; print "PCR " $3 " event " $1 " @" $2 }
		}
		END {
			if (found) exit
			best = -1
			for (p = 0; p <= 7; p++) if (na[p] > nb[p]) {
				split(ai[p, nb[p] + 0], f, " ")
				if (best < 0 || f[1] + 0 < best) { best = f[1] + 0; bp = p; bo = f[2] }
			}
			if (best >= 0) print "lacks PCR " bp " event " best " @" bo
		}' "$1" "$2"
}

# explain names the first differing event for each log and the next one
# (in name order) whose profile bank it has.
pairs=0
for ((i = 0; i < ${#ALL[@]}; i++)); do
	na=$(basename "${ALL[$i]}" .bin)
	[ -n "${BANK[$na]:-}" ] || continue
	for ((j = 1; j < ${#ALL[@]}; j++)); do
		b=${ALL[$(((i + j) % ${#ALL[@]}))]}
		nb=$(basename "$b" .bin)
		events "$b" "${BANK[$na]}" >"$TMP/b.events"
		# Every event on PCRs 0-7 needs a digest in the bank.
		awk '$4 != "EV_NO_ACTION" && $3 <= 7 && $5 == "-" { bad = 1 } END { exit bad }' \
			"$TMP/b.events" || continue
		want=$(first_diff "$TMP/$na.events" "$TMP/b.events")
		[ -n "$want" ] || { fail "$na vs $nb: no differing event computed"; break; }
		"$FLEETCTL" policy explain --profile "$TMP/$na.yaml" --log "$b" >"$TMP/out" 2>&1
		rc=$?
		[ "$rc" -eq 1 ] || fail "explain $na on $nb: exit $rc, want 1"
		case $want in
		lacks*) grep -q "^first difference: the log ${want} " "$TMP/out" ;;
		*) grep -q "^first difference: ${want} " "$TMP/out" ;;
		esac || { fail "explain $na on $nb: want first difference '$want'"; sed 's/^/  /' "$TMP/out" | head -40; }
		"$FLEETCTL" policy explain --profile "$TMP/$na.yaml" --log "$b" --json >"$TMP/json"
		got=$(jq -r '.first_difference | if .event then "PCR \(.event.pcr) event \(.event.index) @\(.event.offset)" else "lacks PCR \(.recorded.pcr) event \(.recorded.index) @\(.recorded.offset)" end' "$TMP/json")
		[ "$got" = "$want" ] || fail "explain --json $na on $nb: first difference '$got', want '$want'"
		[ "$(jq -r .verdict "$TMP/json")" = fail ] || fail "explain --json $na on $nb: verdict"
		pairs=$((pairs + 1))
		break
	done
done
[ "$pairs" -ge 10 ] || fail "only $pairs log pairs explained"
echo "ok: $pairs pairs explained"

# A copy of the GCE log with one byte of a PCR 4 digest flipped: shim's
# EV_EFI_BOOT_SERVICES_APPLICATION (event 23 @9724). Its sha256 digest sits
# after pcr, type, count (12 bytes), sha1's id and 20 bytes, sha256's id.
GCE="$LOGS/tpm2tools-event-gce-ubuntu-2104-log.bin"
cp "$GCE" "$TMP/tampered.bin"
pos=$((9724 + 12 + 2 + 20 + 2))
byte=$(od -An -tu1 -j "$pos" -N1 "$GCE" | tr -d ' ')
printf "$(printf '\\%03o' $((byte ^ 1)))" |
	dd of="$TMP/tampered.bin" bs=1 seek="$pos" conv=notrunc status=none
new=$(events "$TMP/tampered.bin" sha256 | awk '$1 == 23 { print $5 }')
old=$(events "$GCE" sha256 | awk '$1 == 23 { print $5 }')
if [ "$new" = "$old" ] || [ "$(events "$TMP/tampered.bin" sha256 | awk '$1 == 23 { print $3, $4 }')" != "4 EV_EFI_BOOT_SERVICES_APPLICATION" ]; then
	fail "the tampered copy does not change event 23's PCR 4 digest ($old -> $new)"
fi
"$FLEETCTL" policy check --profile "$GCEP" --log "$TMP/tampered.bin" >"$TMP/out" 2>"$TMP/err"
[ $? -eq 1 ] || fail "the created profile admits the tampered log"
grep -q "boot-application-not-allowed: PCR 4: $new at byte 9724" "$TMP/err" ||
	fail "check names the tampered boot application"
"$FLEETCTL" policy explain --profile "$GCEP" --log "$TMP/tampered.bin" >"$TMP/out" 2>&1
[ $? -eq 1 ] || fail "explain of the tampered log exits 1"
grep -q "^first difference: PCR 4 event 23 @9724 EV_EFI_BOOT_SERVICES_APPLICATION $new" "$TMP/out" ||
	fail "explain names the tampered event first"
grep -q "^  recorded: PCR 4 event 23 @9724 EV_EFI_BOOT_SERVICES_APPLICATION $old\$" "$TMP/out" ||
	fail "explain gives the recorded digest"
grep -q "^  admit: add \"$new\" to boot_applications\$" "$TMP/out" ||
	fail "explain says what boot_applications would need"
grep -q "^  admit: pcrs: PCR 4 pinned value would be \"" "$TMP/out" ||
	fail "explain says what the PCR 4 pin would be"
"$FLEETCTL" policy explain --profile "$GCEP" --log "$TMP/tampered.bin" --json >"$TMP/json"
[ "$(jq -r '[.reasons[] | select(.reason == "boot-application-not-allowed") | .event.index] | join(",")' "$TMP/json")" = 23 ] ||
	fail "explain --json: the boot-application reason names event 23"
[ "$(jq -r '.reasons[] | select(.reason == "pcr-pinned-mismatch") | .recorded.digest' "$TMP/json")" = "$old" ] ||
	fail "explain --json: the PCR 4 pin reason gives the recorded digest"

# --bios: PCR 0 keyed by the BIOS version.
"$FLEETCTL" policy create --from-log "$GCE" --class worker --bios "Google" --out "$TMP/bios.yaml" 2>/dev/null ||
	fail "create --bios"
grep -q '^pcr0_by_bios:$' "$TMP/bios.yaml" && grep -q '^  "Google": "24af52a4f429b71a3184a6d64cddad17e54ea030e2aa6576bf3a5a3d8bd3328f"$' "$TMP/bios.yaml" ||
	fail "create --bios writes pcr0_by_bios"
grep -q '^  "0":' "$TMP/bios.yaml" && fail "create --bios pins PCR 0 in pcrs as well"
"$FLEETCTL" policy check --profile "$TMP/bios.yaml" --log "$GCE" --bios Google >/dev/null 2>&1 ||
	fail "the --bios profile admits its log with that BIOS"
"$FLEETCTL" policy explain --profile "$TMP/bios.yaml" --log "$GCE" --bios Other >"$TMP/out" 2>&1
grep -q '^  admit: add "Other": "24af52a4' "$TMP/out" || fail "explain: an unknown BIOS version"

# A profile fleetctl did not write: no recorded boot to compare with.
"$FLEETCTL" policy explain --profile "${FLEET_SOURCE_DIR:-.}/policy/profiles/worker-gce-shielded.yaml" \
	--log "$LOGS/goattest-ubuntu_2104_shielded_vm_no_secure_boot_eventlog.bin" --bios Google >"$TMP/out" 2>&1
grep -q '^first difference: unknown' "$TMP/out" || fail "explain without a recorded boot"

# Unreadable and malformed logs: refused with a sentence.
"$FLEETCTL" policy create --from-log "$TMP/missing.bin" --class worker >"$TMP/out" 2>"$TMP/err"
[ $? -eq 2 ] && grep -q "^fleetctl: policy: cannot read $TMP/missing.bin: " "$TMP/err" ||
	fail "create refuses a missing log with a sentence"
head -c 100 /dev/urandom >"$TMP/junk.bin"
"$FLEETCTL" policy create --from-log "$TMP/junk.bin" --class worker >"$TMP/out" 2>"$TMP/err"
[ $? -eq 1 ] && grep -q "is not an event log fleetd can read: " "$TMP/err" && [ ! -s "$TMP/out" ] ||
	fail "create refuses a malformed log with a sentence"
"$FLEETCTL" policy explain --profile "$GCEP" --log "$TMP/junk.bin" >"$TMP/out" 2>"$TMP/err"
[ $? -eq 1 ] && grep -q "is not an event log fleetd can read: " "$TMP/err" ||
	fail "explain refuses a malformed log with a sentence"
"$FLEETCTL" policy create --from-log "$GCE" --class "two words" >/dev/null 2>"$TMP/err"
[ $? -eq 2 ] || fail "create refuses a class with a space"
"$FLEETCTL" policy create --from-log "$GCE" >/dev/null 2>&1
[ $? -eq 2 ] || fail "create without --class is a usage error"

if [ "$failures" -ne 0 ]; then
	echo "$failures failure(s)"
	exit 1
fi
echo "all passed"
