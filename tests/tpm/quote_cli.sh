# quote_cli.sh: the operator's flow with tpm2-tools 5.4 against a private
# swtpm: createek, createak, quote, certify, then `fleetctl quote verify` and
# `fleetctl certify verify` on the files tpm2-tools wrote. Each must pass as
# made and exit 1 with the right reason once one input is altered.
set -u

: "${FLEETCTL:?FLEETCTL must name the fleetctl binary}"
: "${FLEET_SOURCE_DIR:?}"
for tool in tpm2_createek tpm2_createak tpm2_quote tpm2_certify tpm2_pcrread tpm2_print; do
	command -v "$tool" >/dev/null 2>&1 || { echo "SKIP: $tool not found"; exit 77; }
done

. "$FLEET_SOURCE_DIR/scripts/swtpm-env.sh"
swtpm_env_start sha256
rc=$?
[ "$rc" -eq 77 ] && exit 77
[ "$rc" -ne 0 ] && { echo "FAIL: swtpm did not start"; exit 1; }

W="$SWTPM_ENV_DIR/work"
mkdir "$W" && cd "$W" || exit 1
fails=0

# Without a resource manager every transient object must be flushed, or the
# TPM's three object slots fill up.
tpm() { "$@" >>tools.log 2>&1 && tpm2_flushcontext -t >>tools.log 2>&1; }

tpm tpm2_createek -c ek.ctx -G rsa -u ek.pub || { cat tools.log; exit 1; }
tpm tpm2_createak -C ek.ctx -c ak.ctx -G ecc -g sha256 -s ecdsa -u ak.pub -f tss ||
	{ cat tools.log; exit 1; }
tpm tpm2_createak -C ek.ctx -c akr.ctx -G rsa -g sha256 -s rsassa -u akr.pub -f tss ||
	{ cat tools.log; exit 1; }
tpm2_pcrextend 7:sha256=0707070707070707070707070707070707070707070707070707070707070707 \
	>>tools.log 2>&1 || exit 1

SEL=sha256:0,1,2,3,4,7
NONCE=5eed0123456789abcdef
tpm tpm2_quote -c ak.ctx -l "$SEL" -q "$NONCE" -m quote.msg -s quote.sig -g sha256 ||
	{ cat tools.log; exit 1; }
tpm tpm2_quote -c akr.ctx -l "$SEL" -q "$NONCE" -m rquote.msg -s rquote.sig -g sha256 ||
	{ cat tools.log; exit 1; }
tpm2_pcrread -o pcrs.bin "$SEL" >pcrread.txt 2>>tools.log || exit 1

# The same values as the replay JSON shape, from tpm2_pcrread's YAML-ish text.
awk 'BEGIN { printf "{\"pcrs\":{\"sha256\":{"; sep = "" }
     /^ *[0-9]+ *: *0x/ { gsub(/ /, ""); split($0, a, ":0x");
                          printf "%s\"%s\":\"%s\"", sep, a[1], tolower(a[2]); sep = "," }
     END { print "}}}" }' pcrread.txt >pcrs.json

# expect CODE PATTERN fleetctl-args...: exit status CODE and stdout matching PATTERN.
expect() {
	local want="$1" pat="$2" out code
	shift 2
	out=$("$FLEETCTL" "$@" 2>stderr.txt)
	code=$?
	if [ "$code" -ne "$want" ] || ! printf '%s\n' "$out" | grep -q -- "$pat"; then
		echo "FAIL: fleetctl $* => exit $code (want $want), output:"
		printf '%s\n' "$out"
		cat stderr.txt
		fails=$((fails + 1))
	else
		echo "ok: $pat"
	fi
}

# flip_last_byte IN OUT: OUT is IN with the low bit of its last byte flipped.
flip_last_byte() {
	local n b
	n=$(stat -c %s "$1")
	b=$(tail -c 1 "$1" | od -An -tu1 | tr -d ' ')
	cp "$1" "$2"
	printf "\\$(printf %o $((b ^ 1)))" |
		dd of="$2" bs=1 seek=$((n - 1)) conv=notrunc status=none
	if cmp -s "$1" "$2"; then
		echo "FAIL: could not alter $1"
		fails=$((fails + 1))
	fi
}

Q="quote verify --selection $SEL"
expect 0 '^quote: ok' $Q --ak ak.pub --attest quote.msg --sig quote.sig --nonce "$NONCE" \
	--pcr-values pcrs.bin
expect 0 '^safe: yes' $Q --ak ak.pub --attest quote.msg --sig quote.sig --nonce "$NONCE" \
	--pcrs pcrs.json
expect 0 '"result":"ok"' $Q --ak akr.pub --attest rquote.msg --sig rquote.sig \
	--nonce "$NONCE" --pcr-values pcrs.bin --json
expect 0 '"resetCount"' $Q --ak akr.pub --attest rquote.msg --sig rquote.sig \
	--nonce "$NONCE" --pcrs pcrs.json --json

# Altered inputs.
expect 1 'refused: attest-extradata' $Q --ak ak.pub --attest quote.msg --sig quote.sig \
	--nonce 5eed0123456789abcdee --pcr-values pcrs.bin
flip_last_byte quote.sig bad.sig
expect 1 'refused: signature-invalid' $Q --ak ak.pub --attest quote.msg --sig bad.sig \
	--nonce "$NONCE" --pcr-values pcrs.bin
# The RSA AK did not make an ECDSA signature.
expect 1 '"reason":"signature-scheme"' $Q --ak akr.pub --attest quote.msg --sig quote.sig \
	--nonce "$NONCE" --pcr-values pcrs.bin --json
orig=$(grep -o '"7":"..' pcrs.json | tail -c 3)
new=00
[ "$orig" = 00 ] && new=11
sed "s/\"7\":\"$orig/\"7\":\"$new/" pcrs.json >bad.json
cmp -s pcrs.json bad.json && { echo "FAIL: could not alter PCR 7"; fails=$((fails + 1)); }
expect 1 'refused: quote-pcr-digest' $Q --ak ak.pub --attest quote.msg --sig quote.sig \
	--nonce "$NONCE" --pcrs bad.json
expect 1 'refused: quote-selection' quote verify --selection sha256:0,1,2,3,4 --ak ak.pub \
	--attest quote.msg --sig quote.sig --nonce "$NONCE" --pcrs pcrs.json
head -c 64 pcrs.bin >short.bin
expect 1 'refused: quote-pcr-values' $Q --ak ak.pub --attest quote.msg --sig quote.sig \
	--nonce "$NONCE" --pcr-values short.bin
expect 2 '' $Q --ak ak.pub --attest quote.msg --sig quote.sig --nonce "$NONCE"

# Certify: an LDevID-shaped key (sign only) and one that may also decrypt.
tpm tpm2_createprimary -C o -G ecc256 -c prim.ctx || { cat tools.log; exit 1; }
tpm tpm2_create -C prim.ctx -G ecc256:ecdsa-sha256 -u key.pub -r key.priv \
	-a 'fixedtpm|fixedparent|sensitivedataorigin|userwithauth|sign' || { cat tools.log; exit 1; }
tpm tpm2_create -C prim.ctx -G ecc256:null -u dkey.pub -r dkey.priv \
	-a 'fixedtpm|fixedparent|sensitivedataorigin|userwithauth|sign|decrypt' ||
	{ cat tools.log; exit 1; }
tpm tpm2_load -C prim.ctx -u key.pub -r key.priv -c key.ctx || { cat tools.log; exit 1; }
tpm tpm2_certify -C ak.ctx -c key.ctx -g sha256 -o cert.msg -s cert.sig || { cat tools.log; exit 1; }
tpm tpm2_load -C prim.ctx -u dkey.pub -r dkey.priv -c dkey.ctx || { cat tools.log; exit 1; }
tpm tpm2_certify -C ak.ctx -c dkey.ctx -g sha256 -o dcert.msg -s dcert.sig ||
	{ cat tools.log; exit 1; }

# tpm2_certify always qualifies with 00ff55aa.
C="certify verify --ak ak.pub"
SPKI=$(tpm2_print -t TPM2B_PUBLIC -f pem key.pub | openssl pkey -pubin -outform DER |
	sha256sum | cut -c1-64)
expect 0 "^spki_sha256: $SPKI\$" $C --key key.pub --attest cert.msg --sig cert.sig --nonce 00ff55aa
expect 0 "\"spki_sha256\":\"$SPKI\"" $C --key key.pub --attest cert.msg --sig cert.sig \
	--nonce 00ff55aa --json
expect 1 'refused: attest-extradata' $C --key key.pub --attest cert.msg --sig cert.sig \
	--nonce 00ff55ab
flip_last_byte cert.sig bad.sig
expect 1 'refused: signature-invalid' $C --key key.pub --attest cert.msg --sig bad.sig \
	--nonce 00ff55aa
expect 1 'refused: certify-name' $C --key dkey.pub --attest cert.msg --sig cert.sig \
	--nonce 00ff55aa
expect 1 'refused: key-decrypt-set' $C --key dkey.pub --attest dcert.msg --sig dcert.sig \
	--nonce 00ff55aa
expect 1 'refused: attest-type' $C --key key.pub --attest quote.msg --sig quote.sig \
	--nonce "$NONCE"
printf '\000' | cat key.pub - >trailing.pub
expect 1 'refused: key-malformed' $C --key trailing.pub --attest cert.msg --sig cert.sig \
	--nonce 00ff55aa

if [ "$fails" -ne 0 ]; then
	echo "$fails check(s) failed"
	exit 1
fi
echo "all quote/certify CLI checks passed"
