#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# datinfo's command line as a user meets it: --help, -V (version and commit), -e (every SOFTDAT_*
# variable, and -v shows each IA option among them), usage errors (exit 2, one line), -l, -v,
# --json (valid JSON holding every field of DAT_IA_ATTR and DAT_PROVIDER_ATTR as <dat2/udat.h>
# declares them), IAs that cannot be opened (exit 1 when named, one line each saying which and
# why, softdat's own reason once), and Debian's stock /etc/dat.conf with softdat's lines and a
# provider that writes to stdout while it loads: the default view shows what opens and one line
# counting the rest, exit 0, and standard output stays datinfo's own (JSON stays JSON).
#   datinfo_test.sh LIBSOFTDAT DATINFO NOISY_PROVIDER
set -euo pipefail
lib=$(realpath "$1")
datinfo=$2
noisy=$(realpath "$3")
fail() { echo "FAIL: $*"; exit 1; }
conf=$TEST_TMPDIR/dat.conf
line() { printf '%s u2.0 nonthreadsafe default %s softdat.2.0 "%s" ""\n' "$1" "$lib" "$2"; }
{
  echo "# a comment line, and a line libdat2 skips (an API version it does not load)"
  line softdat-tcp "tcp 127.0.0.1"
  line softdat-options "tcp lo progress=poll crc=off rnr_timeout_ms=250 timeout_ms=900 congestion=reno"
  line softdat-bad "tcp nosuchif0"
  line softdat-badopt "tcp lo progress=bogus"
  line softdat-elsewhere "tcp 203.0.113.254"
  echo 'softdat-kernel k2.0 nonthreadsafe default libnothing.so softdat.2.0 "x" ""'
} >"$conf"
export DAT_OVERRIDE=$conf

# --help and -V: stdout, exit 0.
help=$("$datinfo" --help) || fail "--help exited $?"
for option in -a --all -l --list -v --verbose --json -e --env -V --version -h --help "Exit status"; do
  grep -q -- "$option" <<<"$help" || fail "--help does not mention $option"
done
[[ $("$datinfo" -h) == "$help" ]] || fail "-h differs from --help"
version=$("$datinfo" -V)
[[ $version =~ ^datinfo\ \(softdat\)\ [0-9]+\.[0-9]+,\ commit\ ([0-9a-f]{12}|unknown)$ ]] || fail "-V: $version"
# Built from this checkout (the test's sources link into it): the commit is one of its own, HEAD
# or, when a commit was made while this build ran, HEAD's ancestor.
checkout=$(dirname "$(realpath "$0")")
commit=""
if git -C "$checkout" rev-parse HEAD >/dev/null 2>&1; then
  commit=${version##* }
  git -C "$checkout" merge-base --is-ancestor "$commit" HEAD 2>/dev/null ||
    fail "-V says '$version', which is no commit of the checkout's history (HEAD $(git -C "$checkout" rev-parse --short=12 HEAD))"
fi

# -e: every variable softdat reads, with its default; and -v of a tcp IA shows each IA option's.
env_list=$("$datinfo" -e) || fail "-e exited $?"
variables=$(grep -oE '^SOFTDAT_[A-Z_]+' <<<"$env_list")
for expected in SOFTDAT_LOG SOFTDAT_LOG_FILE SOFTDAT_PROGRESS SOFTDAT_RNR_TIMEOUT_MS SOFTDAT_MPA_CRC SOFTDAT_TIMEOUT_MS \
  SOFTDAT_SPIN_US SOFTDAT_COALESCE_US SOFTDAT_TCP_CONGESTION SOFTDAT_SHM; do
  grep -qx "$expected" <<<"$variables" || fail "-e lacks $expected"
done
[[ $(grep -c '^    default ' <<<"$env_list") -eq $(wc -l <<<"$variables") ]] || fail "-e: a variable without its default"
SOFTDAT_SPIN_US=5 "$datinfo" -e | grep -A1 '^SOFTDAT_SPIN_US=' | grep -q 'set here to "5"' || fail "-e does not show a value set"
verbose=$("$datinfo" -v softdat-options) || fail "-v exited $?"
for variable in $(grep -B1 'IA option' <<<"$env_list" | grep -oE '^SOFTDAT_[A-Z_]+'); do
  grep -qE "^    $variable: +[^ ]" <<<"$verbose" || fail "-v of a tcp IA lacks the option $variable"
done

# Usage errors: exit 2, one line on stderr naming the problem, nothing on stdout.
for bad in "--bogus" "-x" "-l -v" "-v --json" "-e softdat-tcp"; do
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
grep -qE '^softdat-options .*"tcp lo progress=poll crc=off rnr_timeout_ms=250' <<<"$list" || fail "-l lacks softdat-options"
grep -qE '^softdat-kernel .*not loaded' <<<"$list" || fail "-l does not mark the line libdat2 skips"

# The library says which softdat it is, at info, when the registry loads it.
SOFTDAT_LOG=info "$datinfo" softdat-tcp 2>&1 >/dev/null |
  grep -qE "^softdat: info: softdat [0-9]+\.[0-9]+ \(commit (${commit:-[0-9a-f]+|unknown})\) loaded from .*libsoftdat\.so\.2$" ||
  fail "no version line at load: $(SOFTDAT_LOG=info "$datinfo" softdat-tcp 2>&1 >/dev/null)"

# Named IAs that open: exit 0, one row each.
table=$("$datinfo" softdat-tcp softdat-options) || fail "opening good IAs exited $?"
[[ $(grep -c '^softdat-' <<<"$table") -eq 2 ]] || fail "table: $table"

# Named IAs that cannot be opened: exit 1; no row; on stderr softdat's reason once, then
# datinfo's line saying which IA and why.
status=0
"$datinfo" softdat-tcp softdat-bad softdat-badopt softdat-elsewhere >"$TEST_TMPDIR/out" 2>"$TEST_TMPDIR/err" || status=$?
cat "$TEST_TMPDIR/err"
[[ $status -eq 1 ]] || fail "a failing IA gave exit $status, expected 1"
[[ $(grep -c '^softdat-' "$TEST_TMPDIR/out") -eq 1 ]] || fail "rows for IAs that did not open: $(cat "$TEST_TMPDIR/out")"
for name in softdat-bad softdat-badopt softdat-elsewhere; do
  [[ $(grep -c "^datinfo: $name: cannot open: DAT_INVALID_PARAMETER.* (bad IA params)$" "$TEST_TMPDIR/err") -eq 1 ]] ||
    fail "no one-line reason for $name"
done
grep -qxF 'softdat: error: dat_ia_open(softdat-badopt): bad IA params "tcp lo progress=bogus": progress must be thread or poll, got "bogus"' \
  "$TEST_TMPDIR/err" || fail "softdat's reason for progress=bogus is not said once, plainly"
grep -q 'dat_ia_open(softdat-elsewhere): .*"203.0.113.254" is not an address of this host.*127.0.0.1 (lo)' "$TEST_TMPDIR/err" ||
  fail "an address this host lacks is not refused with its reason"
[[ $(grep -c 'softdat: ' "$TEST_TMPDIR/err") -eq 3 ]] || fail "softdat's lines are not there once each"
status=0
"$datinfo" no-such-ia >/dev/null 2>"$TEST_TMPDIR/err" || status=$?
[[ $status -eq 1 ]] && grep -q 'datinfo: no-such-ia: cannot open: DAT_PROVIDER_NOT_FOUND.*(no such IA name).*no line of that name' "$TEST_TMPDIR/err" ||
  fail "unknown IA: exit $status, $(cat "$TEST_TMPDIR/err")"
status=0
DAT_OVERRIDE=$TEST_TMPDIR/missing.conf "$datinfo" >/dev/null 2>"$TEST_TMPDIR/err" || status=$?
[[ $status -eq 1 ]] && grep -q "datinfo: cannot read $TEST_TMPDIR/missing.conf" "$TEST_TMPDIR/err" ||
  fail "missing dat.conf: exit $status, $(cat "$TEST_TMPDIR/err")"

# -v: the SRQ limits, SRQ growth, RNR waiting, the transport, every option in force, the MTU, and
# the IB extensions with each operation the IA offers.
for expected in "max_srqs:" "max_recv_per_srq:" "srq_watermarks_supported:" "SOFTDAT_SRQ_RESIZE: *TRUE" \
  "SOFTDAT_RNR_WAITS: *TRUE" "SOFTDAT_TRANSPORT: *tcp" "SOFTDAT_DEVICE: *lo" "SOFTDAT_PROGRESS: *poll" \
  "SOFTDAT_MPA_CRC: *off" "SOFTDAT_RNR_TIMEOUT_MS: *250" "SOFTDAT_TIMEOUT_MS: *900" "SOFTDAT_TCP_CONGESTION: *reno" \
  "SOFTDAT_SPIN_US: *200" "SOFTDAT_COALESCE_US: *16" "SOFTDAT_SHM: *auto" "DAT_IB_TRANSPORT_MTU: *65440" 'ia_params: "tcp lo progress=poll' \
  "extension_supported: *1 +\(DAT_EXTENSION_IB\)" "extension_version: *209" "DAT_IB_IMMED_DATA: *TRUE" \
  "DAT_IB_FETCH_AND_ADD: *TRUE" "DAT_IB_CMP_AND_SWAP: *TRUE" "DAT_IB_UD: *TRUE" "DAT_COUNTERS: *TRUE" \
  "SOFTDAT_UD_MTU: *4096"; do
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
bad = ias["softdat-bad"]
assert bad["opened"] is False and bad["error"].startswith("DAT_INVALID_PARAMETER") and bad["reason"] == "bad IA params", bad
assert "nosuchif0" in bad["provider_output"], bad
print("json: %d fields of DAT_IA_ATTR, %d of DAT_PROVIDER_ATTR" % (len(fields("dat_ia_attr")), len(fields("dat_provider_attr"))))
PY

# Nothing opens: exit 1 and one line saying so.
line softdat-bad "tcp nosuchif0" >"$TEST_TMPDIR/none.conf"
status=0
DAT_OVERRIDE=$TEST_TMPDIR/none.conf "$datinfo" >"$TEST_TMPDIR/out" 2>"$TEST_TMPDIR/err" || status=$?
[[ $status -eq 1 ]] && grep -q "^1 of 1 IAs did not open: 1 bad IA params" "$TEST_TMPDIR/out" &&
  grep -qx "datinfo: no IA of $TEST_TMPDIR/none.conf opened; datinfo --all says why" "$TEST_TMPDIR/err" ||
  fail "no IA opens: exit $status, $(cat "$TEST_TMPDIR/out" "$TEST_TMPDIR/err")"

# Debian's stock /etc/dat.conf (libdapl2's conffile: some 80 OFED lines, none of which opens on a
# machine without InfiniBand; softdat's own block taken out if an install added one), then
# softdat's lines and a provider that writes to stdout and stderr while the registry loads it.
[[ -r /etc/dat.conf ]] || fail "no /etc/dat.conf: install libdapl2 (tools/dev deps does)"
stock=$TEST_TMPDIR/stock.conf
{
  sed '/^# softdat: begin/,/^# softdat: end/d' /etc/dat.conf
  echo
  line softdat-tcp "tcp 127.0.0.1"
  line softdat-tcp-lo "tcp lo"
  printf 'noisy u2.0 nonthreadsafe default %s noisy.2.0 "says things" ""\n' "$noisy"
} >"$stock"
ofed=$(grep -cE '^[^#[:space:]]+[[:space:]]+u2\.0' /etc/dat.conf || true)
[[ $ofed -ge 10 ]] || fail "/etc/dat.conf has $ofed u2.0 lines: not Debian's stock file"
export DAT_OVERRIDE=$stock
# libdat2 keeps (and never frees) what it allocated for a provider library that loaded but
# registered no IA, as the noisy provider does: under --config=asan LeakSanitizer reports it at
# exit. It is the registry's, not datinfo's or softdat's.
echo 'leak:libdat2.so' >"$TEST_TMPDIR/lsan.supp"
export LSAN_OPTIONS=suppressions=$TEST_TMPDIR/lsan.supp
status=0
"$datinfo" >"$TEST_TMPDIR/out" 2>"$TEST_TMPDIR/err" || status=$?
echo "--- default view over the stock dat.conf:"; cat "$TEST_TMPDIR/out"
[[ $status -eq 0 ]] || fail "the default view exited $status though softdat's IAs opened"
[[ $(grep -c '^softdat-tcp' "$TEST_TMPDIR/out") -eq 2 ]] || fail "softdat's IAs are not shown"
opened=$(awk 'NR > 1 && !/did not open/' "$TEST_TMPDIR/out" | wc -l)
summary=$(grep 'did not open' "$TEST_TMPDIR/out") || fail "no line counting the IAs that did not open"
[[ $(wc -l <"$TEST_TMPDIR/out") -eq $((opened + 2)) ]] || fail "more than the header, the rows and one summary line"
[[ $summary =~ ^([0-9]+)\ of\ ([0-9]+)\ IAs\ did\ not\ open:\ .*\;\ datinfo\ --all\ shows\ each$ ]] || fail "summary: $summary"
[[ $((BASH_REMATCH[2] - BASH_REMATCH[1])) -eq $opened ]] || fail "the summary does not count the IAs not shown"
grep -q 'provider not registered (libnoisy_provider.so)' <<<"$summary" || fail "the summary lacks the noisy provider's reason"
! grep -q 'noisy provider\|open_hca' "$TEST_TMPDIR/out" "$TEST_TMPDIR/err" ||
  fail "another provider's words reached the default view: $(cat "$TEST_TMPDIR/out" "$TEST_TMPDIR/err")"
"$datinfo" --json >"$TEST_TMPDIR/stock.json" 2>"$TEST_TMPDIR/err" || fail "--json over the stock dat.conf exited $?"
python3 - "$TEST_TMPDIR/stock.json" "$ofed" <<'PY' || fail "--json over the stock dat.conf is not the document it should be"
import json, sys
document = json.load(open(sys.argv[1]))  # raises on anything a provider wrote into it
ias = {ia["ia_name"]: ia for ia in document["ias"]}
assert ias["softdat-tcp"]["opened"] and ias["softdat-tcp-lo"]["opened"]
noisy = ias["noisy"]
assert not noisy["opened"] and noisy["reason"] == "provider not registered", noisy
assert "noisy provider on stdout: noisy" in noisy["provider_output"], noisy
assert "noisy provider on stderr: noisy" in noisy["provider_output"], noisy
assert len(ias) >= 3 + int(sys.argv[2]) - 1, len(ias)  # OFED's lines (a name may repeat) and ours
print("stock json: %d IAs, %d opened" % (len(ias), sum(ia["opened"] for ia in ias.values())))
PY
"$datinfo" --all >"$TEST_TMPDIR/all" 2>/dev/null || fail "--all exited $?"
grep -qE '^noisy +cannot open: DAT_PROVIDER_NOT_FOUND.* \(provider not registered\), .*libnoisy_provider.so$' "$TEST_TMPDIR/all" ||
  fail "--all lacks the noisy provider's row"
grep -qF '    | noisy provider on stdout: noisy "says things" {"not": json' "$TEST_TMPDIR/all" ||
  fail "--all does not show what the provider said under its row"
[[ $(grep -cE '^[^ ]' "$TEST_TMPDIR/all") -eq $((BASH_REMATCH[2] + 1)) ]] || fail "--all does not show a row for every IA"
echo "PASS: datinfo --help, -V, -e, usage errors, -l, -v, --json, failing IAs, and the stock dat.conf"
