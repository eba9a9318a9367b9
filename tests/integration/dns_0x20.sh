#!/usr/bin/env bash
# DNS 0x20 on the resolver's upstream queries, against the stub authority:
# questions go upstream with their letters in a random mix of cases; the
# client gets its own spelling back whatever the upstream echoed; a forged
# answer whose question differs in case only is refused (the real answer,
# sent after it, is the one served); an upstream that lowercases questions
# is asked again once without 0x20 and still answers, with one warning.

# shellcheck source=lib.sh
. "$SRC_DIR/tests/integration/lib.sh"

P="$T/policy.yaml"
write_dns_policy "$P" practical

# has_upper NAME: true when NAME holds an uppercase letter.
has_upper() { case "$1" in *[A-Z]*) return 0 ;; esac; return 1; }

# --- an upstream that keeps the case: mixed case out, the client's case back ---
start_stub
start_resolver --config "$P" --upstream-dns "127.0.0.1:$STUB_PORT" || exit 1
mixed=0
for n in www alias; do
	dq "$n.example.test" A
	expect_eq "$(dq_status)" NOERROR "$n.example.test resolves"
done
# Two questions of 14 and 16 letters all in lowercase by chance: 1 in 2^30.
while read -r w; do has_upper "$w" && mixed=$((mixed + 1)); done < <(jq -r .wire "$STUB_LOG")
if [ "$mixed" -ge 1 ]; then ok; else bad "no upstream query had mixed case: $(jq -r .wire "$STUB_LOG")"; fi
# Lowercase in, lowercase out: nothing of the upstream spelling leaks.
dq www.example.test A
expect_eq "$(printf '%s\n' "$OUT" | grep -v '^;' | grep -c '[A-Z].*IN')" 0 \
    "a lowercase question gets a lowercase answer (from the cache)"
dq WwW.ExAmPle.TEST A
expect_contains "$OUT" ";WwW.ExAmPle.TEST.		IN	A" "question section in the client's spelling"
expect_eq "$(printf '%s\n' "$OUT" | awk '!/^;/ && $4 == "A" {print $1}')" WwW.ExAmPle.TEST. \
    "answer owner in the client's spelling"
dq NeW.ExAmple.test A
expect_eq "$(dq_status)" NXDOMAIN "a miss in mixed case"
expect_contains "$OUT" ";NeW.ExAmple.test.		IN	A" "miss: the client's spelling back"
stop_egressd

# --- a forged answer in the wrong case comes first: refused, the real one served ---
start_stub --case forge
start_resolver --config "$P" --upstream-dns "127.0.0.1:$STUB_PORT" || exit 1
dq www.example.test A
expect_eq "$(dq_answers A)" 198.18.0.10 "the forged answer (198.18.0.66) was not taken"
dq alias.example.test A
expect_eq "$(dq_answers A)" 198.18.0.10 "through a CNAME, the forged answer was not taken"
OUT=$(audit_last '.event == "dns" and .qname == "www.example.test"')
expect_eq "$(jqf .rcode)" NOERROR "audit: NOERROR"
stop_egressd

# --- an upstream that lowercases questions: asked again without 0x20, once ---
start_stub --case lower
start_resolver --config "$P" --upstream-dns "127.0.0.1:$STUB_PORT" || exit 1
T0=$(now_ms)
dq www.example.test A
T1=$(now_ms)
expect_eq "$(dq_answers A)" 198.18.0.10 "fallback without 0x20 answers"
if [ $((T1 - T0)) -le 1000 ]; then ok; else bad "fallback took $((T1 - T0)) ms"; fi
expect_eq "$(stub_count www.example.test 1)" 2 "the stub was asked twice (mixed, then plain)"
expect_eq "$(jq -r 'select(.name == "www.example.test") | .wire' "$STUB_LOG" | tail -n 1)" \
    www.example.test "the second query was all lowercase"
dq origin.example.test A
expect_eq "$(dq_answers A)" 127.0.0.1 "the next question falls back too"
expect_eq "$(grep -c 'changed the case of the question' "$EG_ERR")" 1 "one warning per upstream"
stop_egressd
expect_eq "$EXIT_RC" 0 "egressd exits 0 on SIGTERM"

finish
