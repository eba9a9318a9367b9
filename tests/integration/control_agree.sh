#!/usr/bin/env bash
# policyctl explain agrees with the running egressd. A corpus of requests
# (every method, GraphQL bodies and URLs, method overrides, a body on a
# read method, blocklisted, allowlisted and wildcard names, names that
# resolve to a private address, address literals in several forms, a
# DNS-over-HTTPS provider, a name that does not resolve, HTTPS intercepted
# and refused at CONNECT) is sent with curl through a real egressd started
# with a global file, a provider profile (image/profiles/anthropic.yaml) and
# a project file, in practical mode (block and flag) and in strict mode: at
# least 60 requests. Each is asked again of the same egressd with `policyctl
# explain` over its control socket (live) and of the same files with
# `policyctl explain --config` (files). Live explain gives the action and
# rule egressd audited for every request; file explain does too, except
# where only resolution decides (a name allowed as written that resolves to
# a private address): there it gives the decision by name, which live
# explain reports as by_name, and says the address guard is applied at
# connect time. The 403's "To see why" command, run as printed, answers
# with the proxy's rule.
. "$(dirname "$0")/lib.sh"
# shellcheck source=../lib/sh/pki.sh
. "$SRC_DIR/tests/lib/sh/pki.sh"

pki_make agree-ca plain.test allowed.test private.test a.wild.test blocked.test || {
	bad "test PKI"
	finish
}
start_origin --tls-cert "$T/origin.pem" --tls-key "$T/origin.key" --tls-port-file "$T/origin.tls" \
    --dns-map private.test=127.0.0.2 --dns-map priv.wild.test=127.0.0.2 \
    --dns-map inside.test=127.0.0.2
wait_file "$T/origin.tls" 10 || {
	bad "the origin's HTTPS port"
	finish
}
O=$ORIGIN_PORT
S=$(cat "$T/origin.tls")
PROFILE="$SRC_DIR/image/profiles/anthropic.yaml"

write_global() { # write_global FILE MODE ONVIOLATION
	cat >"$1" <<EOF
version: 1
network:
  mode: $2
  blocklist: ["blocked.test", "*.ads.test", "198.18.5.5"]
  allowlist: ["allowed.test", "*.wild.test", "127.0.0.1", "inside.test"]
  allowMethods: [GET, HEAD, OPTIONS]
  allowGraphqlQueries: true
  onViolation: $3
EOF
}
# The project file tightens (a blocklist entry, fewer methods) and tries to
# loosen (an allowlist entry), which egressd and policyctl both ignore.
cat >"$T/project.yaml" <<'EOF'
version: 1
network:
  blocklist: ["tracker.test"]
  allowlist: ["evil.test"]
  allowMethods: [GET, HEAD]
EOF
printf 'hello' >"$T/hello.txt"

# The corpus: METHOD|URL|CONTENT-TYPE|BODY|HEADER, {O} the origin's HTTP
# port, {S} its HTTPS port. Each URL's path is unique: its audit line is found by it.
CASES=(
	"GET|http://plain.test:{O}/c/get||"
	"HEAD|http://plain.test:{O}/c/head||"
	"OPTIONS|http://plain.test:{O}/c/options||"
	"POST|http://plain.test:{O}/c/post|application/x-www-form-urlencoded|a=1"
	"PUT|http://plain.test:{O}/c/put|text/plain|x"
	"DELETE|http://plain.test:{O}/c/delete||"
	"PATCH|http://plain.test:{O}/c/patch|application/json|{\"a\":1}"
	"POST|http://plain.test:{O}/c/gql-query|application/json|{\"query\":\"query Q { viewer { login } }\"}"
	"POST|http://plain.test:{O}/c/gql-mutation|application/json|{\"query\":\"mutation M { del(id: 1) }\"}"
	"POST|http://plain.test:{O}/c/gql-doc|application/graphql|query { a }"
	"POST|http://plain.test:{O}/c/gql-batch|application/json|[{\"query\":\"{a}\"},{\"query\":\"mutation{b}\"}]"
	"GET|http://plain.test:{O}/c/gql-get-mutation?query=mutation%7Ba%7D||"
	"GET|http://plain.test:{O}/c/gql-get-query?query=%7Ba%7D||"
	"GET|http://plain.test:{O}/c/get-body|text/plain|@hello"
	"GET|http://plain.test:{O}/c/override|||X-HTTP-Method-Override: DELETE"
	"GET|http://blocked.test:{O}/c/blocked||"
	"POST|http://blocked.test:{O}/c/blocked-post|text/plain|x"
	"GET|http://x.ads.test:{O}/c/ads||"
	"POST|http://allowed.test:{O}/c/allowed-post|text/plain|x"
	"DELETE|http://a.wild.test:{O}/c/wild-delete||"
	"POST|http://wild.test:{O}/c/wild-apex|text/plain|x"
	"GET|http://priv.wild.test:{O}/c/wild-private||"
	"GET|http://private.test:{O}/c/private||"
	"POST|http://private.test:{O}/c/private-post|text/plain|x"
	"GET|http://inside.test:{O}/c/inside||"
	"GET|http://127.0.0.1:{O}/c/literal||"
	"GET|http://127.0.0.2:{O}/c/literal-private||"
	"GET|http://2130706434:{O}/c/literal-decimal||"
	"GET|http://[::1]:{O}/c/literal-v6||"
	"GET|http://198.18.5.5/c/literal-blocked||"
	"GET|http://tracker.test:{O}/c/project-block||"
	"POST|http://evil.test:{O}/c/project-loosen|text/plain|x"
	"POST|http://api.anthropic.com/c/profile|application/json|{}"
	"GET|http://nothing.example/c/nxdomain||"
	"GET|http://dns.google/c/doh||"
	"GET|https://plain.test:{S}/c/tls-get||"
	"POST|https://plain.test:{S}/c/tls-post|text/plain|x"
	"GET|https://blocked.test:{S}/c/tls-blocked||"
	"GET|https://private.test:{S}/c/tls-private||"
	"POST|https://allowed.test:{S}/c/tls-allowed|text/plain|x"
)

SENT=0 GUARDED=0

# The audit line of a request: its http event by path, else (refused at
# CONNECT) the last connect event after line $1; waits a little for it.
audit_of() { # audit_of AFTER PATH
	local i line
	for ((i = 0; i < 40; i++)); do
		line=$(tail -n +"$(($1 + 1))" "$EG_AUDIT" | jq -c --arg p "$2" \
		    'select(.event == "http" and .path == $p)' | tail -n 1)
		[ -n "$line" ] && break
		line=$(tail -n +"$(($1 + 1))" "$EG_AUDIT" | jq -c 'select(.event == "connect")' |
		    tail -n 1)
		[ -n "$line" ] && [ "$(jq -r .action <<<"$line")" = block ] && break
		sleep 0.05
	done
	printf '%s\n' "$line"
}

# One request: through egressd, then live and file explain; compared.
agree() { # agree CONFIG-LABEL CASE
	local label=$1 method url ctype body header path after audit live file
	local curl_args=() explain_args=()
	IFS='|' read -r method url ctype body header <<<"$2"
	url=${url//\{O\}/$O}
	url=${url//\{S\}/$S}
	path=${url#*://*/}
	path="/${path%%\?*}"
	case "$method" in
	HEAD) curl_args+=(--head) ;;
	*) curl_args+=(-X "$method") ;;
	esac
	explain_args+=(--method "$method")
	if [ -n "$ctype" ]; then
		curl_args+=(-H "Content-Type: $ctype")
		explain_args+=(--content-type "$ctype")
	fi
	if [ -n "$body" ]; then
		if [ "$body" = @hello ]; then
			cp "$T/hello.txt" "$T/body"
		else
			printf '%s' "$body" >"$T/body"
		fi
		curl_args+=(--data-binary "@$T/body")
		explain_args+=(--body "$T/body")
	fi
	if [ -n "$header" ]; then
		curl_args+=(-H "$header")
		explain_args+=(--header "$header")
	fi
	after=$(wc -l <"$EG_AUDIT")
	pcurl -o /dev/null --max-time 15 --cacert "$T/run-ca.pem" "${curl_args[@]}" "$url" \
	    2>/dev/null
	SENT=$((SENT + 1))
	audit=$(audit_of "$after" "$path")
	if [ -z "$audit" ]; then
		bad "$label $method $url: no audit line"
		return
	fi
	audit=$(jq -r '.action + " " + .rule' <<<"$audit")
	run "$POLICYCTL" explain --control "$T/control.sock" --json "${explain_args[@]}" "$url"
	live=$OUT
	expect_eq "$(jq -r '.action + " " + .rule' <<<"$live")" "$audit" \
	    "$label $method $url: live explain agrees with egressd"
	expect_eq "$(jq -r .policy_source <<<"$live")" egressd "$label $url: live policy_source"
	run "$POLICYCTL" explain "${FILES[@]}" --json "${explain_args[@]}" "$url"
	file=$OUT
	expect_eq "$(jq -r .policy_source <<<"$file")" config "$label $url: file policy_source"
	if [ "$(jq -r '.by_name != null and .resolved.status == "ok"' <<<"$live")" = true ]; then
		# Only resolution decided: the files give the decision by name.
		GUARDED=$((GUARDED + 1))
		expect_eq "$(jq -r '.action + " " + .rule' <<<"$file")" \
		    "$(jq -r '.by_name.action + " " + .by_name.rule' <<<"$live")" \
		    "$label $method $url: file explain gives the decision by name"
		expect_contains "$(jq -r '.notes[]' <<<"$file")" "address guard at connect time" \
		    "$label $url: file explain says the guard is applied at connect time"
		expect_contains "$(jq -r '.resolved.addresses[] | select(.allowed == false) | .rule' \
		    <<<"$live")" private-address "$label $url: live explain names the refused address"
	else
		expect_eq "$(jq -r '.action + " " + .rule' <<<"$file")" "$audit" \
		    "$label $method $url: file explain agrees with egressd"
	fi
}

run_corpus() { # run_corpus LABEL GLOBAL-FILE
	local c
	FILES=(--config "$2" --config "$PROFILE" --project-config "$T/project.yaml")
	EG_AUDIT="$T/audit.$1.jsonl"
	rm -f "$T/control.sock"
	start_egressd "${FILES[@]}" --upstream-dns "$ORIGIN_DNS" --upstream-ca "$T/testca.pem" \
	    --ca-out "$T/run-ca.pem" --control "$T/control.sock" --connect-timeout 5 || {
		bad "$1: egressd starts"
		return
	}
	for c in "${CASES[@]}"; do
		agree "$1" "$c"
	done
}

write_global "$T/practical.yaml" practical block
run_corpus practical "$T/practical.yaml"

# The 403's command, run as a user pastes it, answers with the proxy's rule.
run pcurl -D "$T/h" -X POST --data-binary x "http://plain.test:$O/hint"
cmd=$(printf '%s\n' "$OUT" | sed -n 's/^To see why: //p')
rule=$(tr -d '\r' <"$T/h" | sed -n 's/^X-Egress-Rule: //p')
expect_contains "$cmd" "--control $T/control.sock" "the 403 names egressd's control socket"
cmd=${cmd//FILE/$T/body}
printf x >"$T/body"
eval "run \"\$POLICYCTL\" ${cmd#policyctl }"
expect_line "$OUT" "blocked: plain.test" "the 403's command answers blocked"
expect_contains "$OUT" "matched rule: $rule " "the 403's command gives the proxy's rule"
expect_contains "$OUT" "policy: the running egressd (pid $EG_PID" "it says the running egressd answered"
stop_egressd

write_global "$T/flag.yaml" practical flag
run_corpus flag "$T/flag.yaml"
stop_egressd

write_global "$T/strict.yaml" strict block
run_corpus strict "$T/strict.yaml"
stop_egressd

expect_eq "$([ "$SENT" -ge 60 ] && echo yes)" yes "at least 60 requests were compared (sent $SENT)"
expect_eq "$([ "$GUARDED" -ge 4 ] && echo yes)" yes \
    "requests where only resolution decided were among them ($GUARDED)"
finish
