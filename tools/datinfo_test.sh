#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# datinfo's command line as a user meets it: --help, -V, usage errors (exit 2, one line), -l, -v,
# --json (valid JSON holding every field of DAT_IA_ATTR and DAT_PROVIDER_ATTR as <dat2/udat.h>
# declares them), and an IA that cannot be opened (exit 1, one line saying which and why).
set -euo pipefail
lib=$(realpath "$1")
datinfo=$2
fail() { echo "FAIL: $*"; exit 1; }
conf=$TEST_TMPDIR/dat.conf
line() { printf '%s u2.0 nonthreadsafe default %s softdat.2.0 "%s" ""\n' "$1" "$lib" "$2"; }
{
  echo "# a comment line, and a line libdat2 skips (an API version it does not load)"
  line softdat-tcp "tcp 127.0.0.1"
  line softdat-options "tcp lo progress=poll crc=off rnr_timeout_ms=250"
  line softdat-bad "tcp nosuchif0"
  echo 'softdat-kernel k2.0 nonthreadsafe default libnothing.so softdat.2.0 "x" ""'
} >"$conf"
export DAT_OVERRIDE=$conf

# --help and -V: stdout, exit 0.
help=$("$datinfo" --help) || fail "--help exited $?"
for option in -l --list -v --verbose --json -V --version -h --help "Exit status"; do
  grep -q -- "$option" <<<"$help" || fail "--help does not mention $option"
done
[[ $("$datinfo" -h) == "$help" ]] || fail "-h differs from --help"
"$datinfo" -V | grep -qE '^datinfo \(softdat\) [0-9]+\.[0-9]+$' || fail "-V: $("$datinfo" -V)"

# Usage errors: exit 2, one line on stderr naming the problem, nothing on stdout.
for bad in "--bogus" "-x" "-l -v" "-v --json"; do
  status=0
  out=$("$datinfo" $bad 2>"$TEST_TMPDIR/err") || status=$?
  [[ $status -eq 2 ]] || fail "'datinfo $bad' exited $status, expected 2"
  [[ -z $out ]] || fail "'datinfo $bad' printed on stdout: $out"
  [[ $(wc -l <"$TEST_TMPDIR/err") -eq 1 ]] || fail "'datinfo $bad' stderr is not one line: $(cat "$TEST_TMPDIR/err")"
done

# -l: every IA line of the dat.conf with its params, the one libdat2 skips marked; opens nothing.
list=$("$datinfo" -l) || fail "-l exited $?"
echo "$list"
grep -q "dat.conf: $conf" <<<"$list" || fail "-l does not name the dat.conf in use"
grep -qE '^softdat-options .*"tcp lo progress=poll crc=off rnr_timeout_ms=250"' <<<"$list" || fail "-l lacks softdat-options"
grep -qE '^softdat-kernel .*not loaded' <<<"$list" || fail "-l does not mark the line libdat2 skips"

# Named IAs that open: exit 0, one row each.
table=$("$datinfo" softdat-tcp softdat-options) || fail "opening good IAs exited $?"
[[ $(grep -c '^softdat-' <<<"$table") -eq 2 ]] || fail "table: $table"

# An IA that cannot be opened: exit 1, and datinfo's own stderr line says which and why.
status=0
"$datinfo" softdat-tcp softdat-bad >"$TEST_TMPDIR/out" 2>"$TEST_TMPDIR/err" || status=$?
[[ $status -eq 1 ]] || fail "a failing IA gave exit $status, expected 1"
grep -qx 'datinfo: softdat-bad: cannot open: DAT_INVALID_PARAMETER.*' "$TEST_TMPDIR/err" ||
  fail "no one-line reason: $(cat "$TEST_TMPDIR/err")"
status=0
"$datinfo" no-such-ia >/dev/null 2>"$TEST_TMPDIR/err" || status=$?
[[ $status -eq 1 ]] && grep -q 'datinfo: no-such-ia: cannot open: DAT_PROVIDER_NOT_FOUND.*no line of that name' "$TEST_TMPDIR/err" ||
  fail "unknown IA: exit $status, $(cat "$TEST_TMPDIR/err")"
status=0
DAT_OVERRIDE=$TEST_TMPDIR/missing.conf "$datinfo" >/dev/null 2>"$TEST_TMPDIR/err" || status=$?
[[ $status -eq 1 ]] && grep -q "datinfo: cannot read $TEST_TMPDIR/missing.conf" "$TEST_TMPDIR/err" ||
  fail "missing dat.conf: exit $status, $(cat "$TEST_TMPDIR/err")"

# -v: the SRQ limits, SRQ growth, RNR waiting, the transport and its options in force.
verbose=$("$datinfo" -v softdat-options) || fail "-v exited $?"
for expected in "max_srqs:" "max_recv_per_srq:" "srq_watermarks_supported:" "SOFTDAT_SRQ_RESIZE: *TRUE" \
  "SOFTDAT_RNR_WAITS: *TRUE" "SOFTDAT_TRANSPORT: *tcp" "SOFTDAT_DEVICE: *lo" "SOFTDAT_PROGRESS: *poll" \
  "SOFTDAT_MPA_CRC: *off" "SOFTDAT_RNR_TIMEOUT_MS: *250" 'ia_params: "tcp lo progress=poll'; do
  grep -qE -- "$expected" <<<"$verbose" || fail "-v lacks '$expected'"
done

# --json: valid, every declared field of both structures, and the failing IA with its reason.
status=0
"$datinfo" --json softdat-tcp softdat-options softdat-bad >"$TEST_TMPDIR/info.json" 2>/dev/null || status=$?
[[ $status -eq 1 ]] || fail "--json with a failing IA exited $status, expected 1"
python3 - "$TEST_TMPDIR/info.json" /usr/include/dat2/udat.h <<'PY' || fail "--json check failed"
import json, re, sys
document = json.load(open(sys.argv[1]))
header = open(sys.argv[2]).read()
def fields(struct):
    body = re.search(r"struct %s\s*\{(.*?)\};" % struct, header, re.S).group(1)
    return re.findall(r"(\w+)\s*(?:\[[^\]]*\])*\s*;", body)
ias = {ia["ia_name"]: ia for ia in document["ias"]}
assert set(ias) == {"softdat-tcp", "softdat-options", "softdat-bad"}, ias.keys()
for name in ("softdat-tcp", "softdat-options"):
    ia = ias[name]
    assert ia["opened"] is True
    for struct, key in (("dat_ia_attr", "ia_attr"), ("dat_provider_attr", "provider_attr")):
        missing = [f for f in fields(struct) if f not in ia[key]]
        assert not missing, (name, key, missing)
    specific = ia["provider_attr"]["provider_specific_attr"]
    assert len(specific) == ia["provider_attr"]["num_provider_specific_attr"], specific
    assert specific["SOFTDAT_TRANSPORT"] == "tcp", specific
assert ias["softdat-options"]["provider_attr"]["provider_specific_attr"]["SOFTDAT_PROGRESS"] == "poll"
assert ias["softdat-tcp"]["ia_attr"]["ia_address_ptr"] == "127.0.0.1"
assert ias["softdat-bad"]["opened"] is False and ias["softdat-bad"]["error"].startswith("DAT_INVALID_PARAMETER")
print("json: %d fields of DAT_IA_ATTR, %d of DAT_PROVIDER_ATTR" % (len(fields("dat_ia_attr")), len(fields("dat_provider_attr"))))
PY
echo "PASS: datinfo --help, -V, usage errors, -l, -v, --json and a failing IA"
