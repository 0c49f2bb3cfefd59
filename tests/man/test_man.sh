#!/bin/bash
# test_man.sh: each man page (docs/man/PROGRAM.md through scripts/mkman.py)
# renders without a groff warning, and names every option its program's
# usage prints, so a page cannot silently drift from its program. fleetctl's
# usage is its --help and each command group's own usage (`fleetctl GROUP`).
# Last, a mutant: a page with one option removed must be refused.
set -u
src=${FLEET_SOURCE_DIR:?}
bin=${FLEET_BINARY_DIR:?}
command -v groff >/dev/null || { echo "SKIP: groff not installed"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

declare -A prog=(
	[fleetd]=fleetd/fleetd [fleetctl]=fleetctl/fleetctl
	[tink-attest]=tink-attest/tink-attest [fleet-join]=tink-attest/fleet-join
	[tpm-reattest]=tpm-reattest/tpm-reattest
	[spire-server-fleet-entries]=spire-server-fleet-entries/spire-server-fleet-entries)

usage_of() { # page: every usage text the program prints
	local exe="$bin/${prog[$1]}"
	"$exe" --help
	if [ "$1" = fleetctl ]; then
		local g
		for g in $("$exe" --help | sed -n 's/^  fleetctl \([a-z-]*\).*/\1/p' | sort -u); do
			"$exe" "$g" 2>&1 </dev/null | sed -n '/^usage:/,$p'
		done
	fi
}

options_of() { grep -o -- '--[a-z0-9][a-z0-9-]*' | sort -u; }

check_page() { # name roff: 0 when it renders clean and names every option
	local name=$1 roff=$2 rc=0 o
	groff -man -Tutf8 -ww -z "$roff" 2>"$work/$name.warn"
	if [ -s "$work/$name.warn" ]; then
		echo "  $name: groff warnings:"; sed 's/^/    /' "$work/$name.warn"; rc=1
	fi
	if command -v man >/dev/null && ! man -l "$roff" >/dev/null 2>&1; then
		echo "  $name: man -l failed"; rc=1
	fi
	groff -man -Tascii -P-cbou -rLL=200n "$roff" 2>/dev/null >"$work/$name.txt"
	for s in NAME SYNOPSIS DESCRIPTION OPTIONS "EXIT STATUS" FILES "SEE ALSO"; do
		grep -q "^$s\$" "$work/$name.txt" || { echo "  $name: no $s section"; rc=1; }
	done
	usage_of "$name" >"$work/$name.usage" 2>&1
	[ -s "$work/$name.usage" ] || { echo "  $name: no usage text"; rc=1; }
	options_of <"$work/$name.txt" >"$work/$name.page-opts"
	while read -r o; do
		grep -qxF -- "$o" "$work/$name.page-opts" || {
			echo "  $name: $o is in the usage but not in the page"; rc=1; }
	done < <(options_of <"$work/$name.usage")
	return $rc
}

for name in "${!prog[@]}"; do
	roff="$bin/man/$name.8"
	if [ ! -f "$roff" ]; then fail "$name: $roff not built"; continue; fi
	if check_page "$name" "$roff"; then
		echo "ok: $name.8 ($(options_of <"$work/$name.usage" | wc -l) options)"
	else
		fail "$name.8"
	fi
done

# The mutants: a page without one option, and a page with a roff warning.
grep -v -- '--log-target' "$src/docs/man/fleetd.md" >"$work/fleetd.md"
python3 "$src/scripts/mkman.py" "$work/fleetd.md" "$work/fleetd.8" &&
	if check_page fleetd "$work/fleetd.8" >/dev/null; then
		fail "a fleetd page without --log-target was accepted"
	else echo "ok: a page without --log-target is refused"; fi
python3 "$src/scripts/mkman.py" "$src/docs/man/fleetd.md" "$work/fleetd.8" &&
	printf '.PP\nbroken \\*[nosuch] string\n' >>"$work/fleetd.8" &&
	if check_page fleetd "$work/fleetd.8" >/dev/null; then
		fail "a page with a groff warning was accepted"
	else echo "ok: a page with a groff warning is refused"; fi
grep -v '^## FILES' "$src/docs/man/fleetd.md" >"$work/fleetd.md"
if python3 "$src/scripts/mkman.py" "$work/fleetd.md" "$work/fleetd.8" 2>/dev/null; then
	fail "mkman.py accepted a page without FILES"
else echo "ok: mkman.py refuses a page without FILES"; fi

[ $failures -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all man pages pass"
