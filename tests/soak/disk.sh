#!/usr/bin/env bash
# The audit log on a full disk, and rotated, under load. The script runs in
# a private mount namespace (unshare -m) with the log on a small tmpfs of
# its own; a client (faulty.py client --tag) asks all the time, each
# request with an id in its path that the origin (faulty.py http) logs, and
# the disk is filled (a filler file) and freed while it does.
# audit.onError: block: once lines cannot be written no request reaches the
# origin, clients get 503 with the reason, DNS gets REFUSED with an EDE,
# status and metrics say so, stderr says so once; after the filler goes
# egressd resumes by itself and a daemon line names the seqs not written;
# every request the origin saw has its line (requests allowed without one:
# 0), and policyctl audit --verify passes and tells that gap from lines
# removed. audit.onError: continue: requests are served throughout, the
# lines not written are counted in status and metrics and named after.
# Rotation under load (audit.maxBytes 64 KiB): --verify over the rotated set
# passes and every request's line is in it exactly once; SIGUSR1 after an
# external mv (logrotate's create mode) goes on in a new file, the chain
# intact across both.
if [ -z "${DISK_NS:-}" ]; then
	if [ "$(id -u)" -ne 0 ] || ! unshare -m true 2>/dev/null; then
		echo "SKIP: disk needs root and unshare -m (a private tmpfs for the audit log)"
		exit 0
	fi
	DISK_NS=1 exec unshare -m --propagation private bash "$0" "$@"
fi
# shellcheck source=../integration/lib.sh
. "$SRC_DIR/tests/integration/lib.sh"
FAULTY="$SRC_DIR/tests/soak/faulty.py"
OUTAGE_SECS=${OUTAGE_SECS:-3}

expect_ge() { # expect_ge GOT MIN LABEL
	if [ "${1:-0}" -ge "$2" ] 2>/dev/null; then ok; else bad "$3: $1, want >= $2"; fi
}
figure() { printf '%s\t%s\n' "$1" "$2" >>"$T/figures"; }

D="$T/disk"
mkdir -p "$D"
mount -t tmpfs -o size=1m,mode=0700 egress-audit "$D" || {
	echo "cannot mount a tmpfs on $D" >&2
	exit 1
}

rm -f "$T/FH.port" "$T/FD.port"
python3 "$FAULTY" http --port-file "$T/FH.port" --log "$T/FH.jsonl" --parent $$ \
    >"$T/FH.out" 2>&1 &
track_pid $!
python3 "$FAULTY" dns --port-file "$T/FD.port" --log "$T/FD.jsonl" --parent $$ \
    >"$T/FD.out" 2>&1 &
track_pid $!
if ! wait_file "$T/FH.port" 10 || ! wait_file "$T/FD.port" 10; then
	echo "faulty.py did not start" >&2
	exit 1
fi
FH_PORT=$(cat "$T/FH.port")
FD_PORT=$(cat "$T/FD.port")
MPORT=$(free_port)

# policy FILE ONERROR [MAXBYTES]
policy() {
	{
		printf 'version: 1\nnetwork:\n  mode: practical\n  inheritGlobal: false\n'
		printf '  allowlist: ["127.0.0.1"]\naudit:\n  onError: %s\n' "$2"
		[ -n "${3:-}" ] && printf '  maxBytes: %s\n  keep: 1000\n' "$3"
	} >"$1"
}
# eg ONERROR [MAXBYTES]: egressd with the log at $EG_AUDIT.
eg() {
	policy "$T/policy.yaml" "$@"
	MPORT=$(free_port)
	CTL="$T/ctl.$EG_N.sock"
	start_egressd --config "$T/policy.yaml" --upstream-dns "127.0.0.1:$FD_PORT" \
	    --metrics "127.0.0.1:$MPORT" --control "$CTL"
}
metric() {
	curl -s --noproxy '*' --max-time 5 "http://127.0.0.1:$MPORT/metrics" |
	    awk -v n="$1" '$1 == n {print $2; exit}'
}
# audit_state: status's audit object, compact.
audit_state() { "$POLICYCTL" status --json --control "$CTL" 2>/dev/null | jq -c .audit; }
# load NAME: the tagged client against the origin, until $T/NAME.stop.
load() {
	python3 "$FAULTY" client --proxy "$EG_PORT" --tag --interval 0.005 \
	    --url "http://origin.test:$FH_PORT/id/$1-" --stop-file "$T/$1.stop" \
	    --log "$T/$1.jsonl" --parent $$ >"$T/$1.out" 2>&1 &
	LOAD_PID=$!
	track_pid "$LOAD_PID"
}
load_stop() { # load_stop NAME
	touch "$T/$1.stop"
	wait_exit "$LOAD_PID" 10
}
# fill: fill the tmpfs with a filler file.
fill() { dd if=/dev/zero of="$D/filler" bs=4k status=none 2>/dev/null; }
# origin_ids PREFIX: the ids the origin saw, one a line, sorted.
origin_ids() {
	jq -r --arg p "/id/$1-" 'select(.kind == "http" and (.path | startswith($p)))
	    | .path | ltrimstr("/id/")' "$T/FH.jsonl" | sort
}
# audit_ids PREFIX FILE...: the ids in http lines of the audit files, sorted.
audit_ids() {
	local p=$1
	shift
	jq -r --arg p "/id/$p-" 'select(.event == "http" and (.path | startswith($p)))
	    | .path | ltrimstr("/id/")' "$@" | sort
}
# wait_state WANT: until status's audit state is WANT (bounded, 10 s).
wait_state() {
	local i
	for ((i = 0; i < 100; i++)); do
		[ "$(audit_state | jq -r .state)" = "$1" ] && return 0
		sleep 0.1
	done
	return 1
}

# outage MODE: load, a full disk for OUTAGE_SECS, room again, load.
outage() {
	local mode=$1 t_fill t_free t_ok
	EG_AUDIT="$D/audit-$mode.jsonl"
	eg "$mode" || exit 1
	load "$mode"
	sleep 1
	t_fill=$(now_ms)
	fill
	wait_state "$([ "$mode" = block ] && echo refusing || echo losing)"
	expect_eq "$?" 0 "$mode: status says the log cannot be written"
	STATE_OUT=$(audit_state)
	OUT=$STATE_OUT
	expect_eq "$(jqf .error)" "No space left on device" "$mode: status names the error"
	expect_eq "$(metric egressd_audit_writable)" 0 "$mode: metrics say not writable"
	DNS_PORT=$EG_DNS_PORT
	dq "dns-$mode.test" A
	DIG_OUT=$OUT
	sleep "$OUTAGE_SECS"
	OUT=$(audit_state)
	REFUSED_MID=$(jqf .refused) UNWRITTEN_MID=$(jqf .unwritten)
	METRIC_REFUSED=$(metric egressd_audit_refused_total)
	METRIC_UNWRITTEN=$(metric egressd_audit_lines_unwritten_total)
	t_free=$(now_ms)
	rm -f "$D/filler"
	wait_state ok
	expect_eq "$?" 0 "$mode: resumes by itself once there is room"
	t_ok=$(now_ms)
	sleep 1
	load_stop "$mode"
	stop_egressd
	expect_eq "$EXIT_RC" 0 "$mode: egressd exits 0"
	RESUME_MS=$((t_ok - t_free))
	FULL_MS=$((t_free - t_fill))
	expect_eq "$(grep -c 'cannot write' "$EG_ERR")" 1 "$mode: stderr says so once"
}

# ---------------------------------------------------------------- block
outage block
L="$T/block.jsonl"
N=$(jq -s length "$L")
N503=$(jq -c 'select(.status == 503)' "$L" | wc -l)
N200=$(jq -c 'select(.status == 200)' "$L" | wc -l)
expect_ge "$N503" 10 "block: clients got 503s during the outage"
expect_eq "$((N503 + N200))" "$N" "block: every request got 200 or 503"
expect_contains "$(jq -r 'select(.status == 503) | .body' "$L" | head -n 1)" \
    "No space left on device" "block: the 503 gives the reason"
# No request answered 200 between the first 503 and the last.
first=$(jq -s 'map(select(.status == 503)) | first | .t' "$L")
last=$(jq -s 'map(select(.status == 503)) | last | .t' "$L")
expect_eq "$(jq -c "select(.status == 200 and .t > $first and .t < $last)" "$L" | wc -l)" 0 \
    "block: no request served while lines could not be written"
expect_eq "$(origin_ids block | comm -23 - <(audit_ids block "$EG_AUDIT") | wc -l)" 0 \
    "block: requests that reached the origin without an audit line: 0"
expect_eq "$(origin_ids block | uniq -d | wc -l)" 0 "block: no request reached the origin twice"
expect_eq "$(audit_ids block "$EG_AUDIT" | uniq -d | wc -l)" 0 "block: no line twice"
expect_eq "$(comm -3 <(origin_ids block) <(jq -r 'select(.status == 200) | "block-" + .id' "$L" |
    sort) | wc -l)" 0 "block: the origin saw exactly the requests answered 200"
OUT=$DIG_OUT
expect_eq "$(dq_status)" REFUSED "block: DNS answers REFUSED"
expect_contains "$(dq_ede)" "EDE" "block: with an EDE"
expect_contains "$(dq_ede)" "audit" "block: the EDE gives the reason"
expect_ge "$REFUSED_MID" 10 "block: status counts the refused requests"
expect_ge "$METRIC_REFUSED" 10 "block: metrics count the refused requests"
GAP=$(jq -c 'select(.event == "daemon" and .reason == "resumed")' "$EG_AUDIT")
OUT=$GAP
expect_eq "$(printf '%s\n' "$GAP" | grep -c .)" 1 "block: one daemon line on resumption"
expect_ge "$(jqf .refused)" "$N503" "block: it counts every 503 the client got"
expect_eq "$(jqf .unwritten)" 0 "block: lines lost: 0 (refused requests have none)"
figure block "$N requests in $(((FULL_MS + RESUME_MS) / 1000)) s; $N503 refused (503), refused by DNS too; allowed without a line: 0; unwritten lines named: $(jqf .unwritten) ($(jqf .seqs)); resumed $RESUME_MS ms after room came back"
run "$POLICYCTL" audit --verify "$EG_AUDIT"
expect_rc 0 "block: --verify passes over the gap"
expect_contains "$OUT$ERR" "gap" "block: --verify names the gap"
VERIFY_GAP="$OUT$ERR"
# The same file with one line taken out is tampering, not a gap.
awk 'NR != 5' "$EG_AUDIT" >"$T/tampered.jsonl"
run "$POLICYCTL" audit --verify "$T/tampered.jsonl"
expect_ne "$RC" 0 "block: a line removed fails --verify"
figure verify "gap: $(printf '%s' "$VERIFY_GAP" | tr '\n' ' ' | cut -c 1-200); removed line: exit $RC"

# ---------------------------------------------------------------- continue
outage continue
L="$T/continue.jsonl"
N=$(jq -s length "$L")
expect_eq "$(jq -c 'select(.status != 200)' "$L" | wc -l)" 0 "continue: every request served"
OUT=$DIG_OUT
expect_eq "$(dq_status)" NOERROR "continue: DNS answered"
expect_ge "$UNWRITTEN_MID" 10 "continue: status counts the lines not written"
expect_ge "$METRIC_UNWRITTEN" 10 "continue: metrics count them"
GAP=$(jq -c 'select(.event == "daemon" and .reason == "resumed")' "$EG_AUDIT")
OUT=$GAP
expect_ge "$(jqf .unwritten)" "$UNWRITTEN_MID" "continue: the daemon line counts them"
expect_ne "$(jqf '.seqs // ""')" "" "continue: it names their seqs"
LOST=$(origin_ids continue | comm -23 - <(audit_ids continue "$EG_AUDIT") | wc -l)
expect_le() { if [ "$1" -le "$2" ]; then ok; else bad "$3: $1, want <= $2"; fi; }
expect_le "$LOST" "$(jqf .unwritten)" "continue: every line missing is counted"
figure continue "$N requests, all 200; $(jqf .unwritten) lines not written, named ($(jqf .seqs)); resumed $RESUME_MS ms after room came back"
run "$POLICYCTL" audit --verify "$EG_AUDIT"
expect_rc 0 "continue: --verify passes over the gap"
umount "$D"

# ---------------------------------------------------------------- rotation
EG_AUDIT="$T/rot/audit.jsonl"
mkdir -p "$T/rot"
eg block 65536 || exit 1
load rot
sleep 4
load_stop rot
stop_egressd
FILES=$(find "$T/rot" -name 'audit.jsonl*' | wc -l)
expect_ge "$FILES" 4 "rotation: the log was rotated under load"
SET=$(find "$T/rot" -name 'audit.jsonl.*') # the rotated files, in any order
# shellcheck disable=SC2086
expect_eq "$(comm -3 <(origin_ids rot) <(audit_ids rot $SET "$EG_AUDIT") | wc -l)" 0 \
    "rotation: every request the origin saw has a line in the set"
# shellcheck disable=SC2086
expect_eq "$(audit_ids rot $SET "$EG_AUDIT" | uniq -d | wc -l)" 0 "rotation: none twice"
run "$POLICYCTL" audit --verify "$EG_AUDIT"
expect_rc 0 "rotation: --verify over the rotated set"
figure rotation "$(jq -s length "$T/rot.jsonl") requests, $FILES files of 64 KiB, every line once, --verify passes"

# ---------------------------------------------------------------- SIGUSR1
EG_AUDIT="$T/usr1/audit.jsonl"
mkdir -p "$T/usr1"
eg block || exit 1
load usr1
sleep 1
mv "$EG_AUDIT" "$EG_AUDIT.1"
sleep 0.5
kill -USR1 "$EG_PID"
sleep 1
load_stop usr1
stop_egressd
expect_eq "$(test -s "$EG_AUDIT" && echo yes)" yes "SIGUSR1: a new file at the path"
expect_eq "$(comm -3 <(origin_ids usr1) <(audit_ids usr1 "$EG_AUDIT.1" "$EG_AUDIT") |
    wc -l)" 0 "SIGUSR1: every request's line is in one of the two files"
expect_eq "$(audit_ids usr1 "$EG_AUDIT.1" "$EG_AUDIT" | uniq -d | wc -l)" 0 "SIGUSR1: none twice"
run "$POLICYCTL" audit --verify "$EG_AUDIT"
expect_rc 0 "SIGUSR1: the chain goes on across the two files"
figure sigusr1 "$(jq -s length "$T/usr1.jsonl") requests; $(wc -l <"$EG_AUDIT.1") lines before, $(wc -l <"$EG_AUDIT") after; --verify passes"

if [ -n "${DISK_FIGURES:-}" ]; then cp "$T/figures" "$DISK_FIGURES"; fi
if [ -n "${DISK_KEEP:-}" ]; then rm -rf "$DISK_KEEP"; cp -r "$T" "$DISK_KEEP"; fi
finish
