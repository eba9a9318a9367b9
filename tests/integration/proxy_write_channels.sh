#!/usr/bin/env bash
# The write channels practical mode must keep shut, sent through a real
# egressd to our own origin (origin.py, which logs every request it gets):
# a DELETE whose URL holds ?query={a}, PUT and POST JSON bodies with an
# extra "query" member, a POST with the document only in the URL,
# GET/HEAD/OPTIONS carrying bodies of a few MB (past maxGraphqlBody) and
# small non-GraphQL bodies (Content-Length and chunked), and
# X-HTTP-Method-Override: DELETE on a GET and on a GraphQL POST. Each must
# be refused before the origin sees it, audited with its action and rule,
# and policyctl explain given the same method, header fields, body and
# content type must give the same action and rule. Requests that are
# GraphQL over HTTP and nothing else (JSON single and batch,
# application/graphql, a form; a GET with a GraphQL query body) stay
# allowed and arrive whole. With onViolation: flag a body on a GET goes
# through, all of it, and is audited as flagged.
. "$(dirname "$0")/lib.sh"
SEND="$SRC_DIR/tests/integration/sendreq.py"

start_origin
O=$ORIGIN_PORT

write_policy() { # write_policy FILE ONVIOLATION
	cat >"$1" <<YAML
version: 1
network:
  mode: practical
  inheritGlobal: false
  allowlist: ["allowed.test", "127.0.0.1"] # the origin: lifts the address guard only
  allowMethods: [GET, HEAD, OPTIONS]
  allowGraphqlQueries: true
  onViolation: $2
YAML
}
P="$T/policy.yaml"
write_policy "$P" block
start_egressd --config "$P" --upstream-dns "$ORIGIN_DNS" || exit 1

# Bodies: a few MB (past the default maxGraphqlBody of 1 MiB), small ones.
head -c $((3 * 1024 * 1024)) /dev/zero | tr '\0' 'x' >"$T/big.bin"
BIG_LEN=$(stat -c %s "$T/big.bin")
printf 'hello' >"$T/hello.txt"
printf '{"message":"m","content":"eA==","query":"{a}"}' >"$T/put.json"
printf '{"title":"pwned","body":"secret","query":"{ viewer { login } }"}' >"$T/post.json"
printf '{"query":"query Q { viewer { login } }","operationName":"Q","variables":{}}' >"$T/q.json"
printf '[{"query":"{ a }"},{"query":"query B { b }","variables":{"x":1}}]' >"$T/batch.json"
printf '{ viewer { login } }' >"$T/q.graphql"
printf 'query=%%7B%%20a%%20%%7D&operationName=' >"$T/q.form"

# check NAME STATUS ACTION RULE METHOD PATH [--header H]... [--ct TYPE]
#       [--body FILE] [--chunked]
# Sends the request through egressd, then checks the answer's status, that
# the origin saw it (or not) as the status says, the audit event's action
# and rule, and policyctl explain's answer for the same request.
check() {
	local name=$1 status=$2 action=$3 rule=$4 method=$5 path=$6
	shift 6
	local send=() explain=() before after got seen want_seen
	while [ $# -gt 0 ]; do
		case $1 in
		--header) send+=(--header "$2"); explain+=(--header "$2"); shift 2 ;;
		--ct) send+=(--header "Content-Type: $2"); explain+=(--content-type "$2"); shift 2 ;;
		--body) send+=(--body "$2"); explain+=(--body "$2"); shift 2 ;;
		--chunked) send+=(--chunked); shift ;;
		*) echo "check: bad argument $1" >&2; exit 2 ;;
		esac
	done
	local url="http://plain.test:$O$path" n0
	before=$(origin_count "select(.target == \"$path\")")
	n0=$(wc -l <"$EG_AUDIT")
	run python3 "$SEND" "$EG_PORT" "$method" "$url" "${send[@]}"
	expect_eq "$(jqf .status)" "$status" "$name: status"
	after=$(origin_count "select(.target == \"$path\")")
	seen=$((after - before))
	want_seen=0
	[ "$status" = 200 ] && want_seen=1
	expect_eq "$seen" "$want_seen" "$name: requests the origin saw"
	# The event this request wrote: the last http event after the ones before it.
	OUT=$(tail -n "+$((n0 + 1))" "$EG_AUDIT" | jq -c 'select(.event == "http")' | tail -n 1)
	expect_eq "$(jqf .method)" "$method" "$name: audit event written"
	EV=$OUT
	got="$(jqf .action):$(jqf .rule)"
	expect_eq "$got" "$action:$rule" "$name: audited"
	run "$POLICYCTL" explain --config "$EG_CONFIG" --json --method "$method" "${explain[@]}" "$url"
	expect_eq "$(jqf .action):$(jqf .rule)" "$got" "$name: policyctl explain agrees"
}
EG_CONFIG=$P

# --- 1. the GraphQL allowance is for GraphQL requests only ---
check "DELETE with ?query={a}" 403 block method-not-allowed DELETE '/echo?c=delete&query=%7Ba%7D'
check "PUT JSON with an extra query member" 403 block method-not-allowed PUT '/echo?c=put' \
    --ct application/json --body "$T/put.json"
check "POST JSON with an extra query member" 403 block method-not-allowed POST '/echo?c=post' \
    --ct application/json --body "$T/post.json"
check "empty POST, the document only in the URL" 403 block method-not-allowed POST \
    '/echo?c=urlonly&query=%7Ba%7D'
check "POST with ?query={a} and another body" 403 block method-not-allowed POST \
    '/echo?c=urlbody&query=%7Ba%7D' --ct text/plain --body "$T/hello.txt"

# --- 4. bodies on read methods ---
for m in GET HEAD OPTIONS; do
	check "$m with a ${BIG_LEN}-byte body" 403 block body-on-read-method "$m" "/echo?c=big-$m" \
	    --ct application/octet-stream --body "$T/big.bin"
	check "$m with a small non-GraphQL body" 403 block body-on-read-method "$m" \
	    "/echo?c=small-$m" --ct text/plain --body "$T/hello.txt"
done
check "chunked GET with a small body" 403 block body-on-read-method GET '/echo?c=chunked-small' \
    --ct text/plain --body "$T/hello.txt" --chunked
check "chunked GET with a ${BIG_LEN}-byte body" 403 block body-on-read-method GET \
    '/echo?c=chunked-big' --ct application/octet-stream --body "$T/big.bin" --chunked
check "GET with a JSON body that is not only GraphQL" 403 block body-on-read-method GET \
    '/echo?c=get-post-json' --ct application/json --body "$T/post.json"
check "GET with a GraphQL query body" 200 allow graphql-query GET '/echo?c=get-graphql' \
    --ct application/json --body "$T/q.json"
expect_eq "$(jq -r 'select(.target == "/echo?c=get-graphql") | .body_len' "$ORIGIN_LOG")" \
    "$(stat -c %s "$T/q.json")" "GET with a GraphQL query body: the body arrived whole"

# --- 3. method overrides ---
check "GET with X-HTTP-Method-Override: DELETE" 403 block method-override GET '/echo?c=override-get' \
    --header 'X-HTTP-Method-Override: DELETE'
OUT=$EV
expect_contains "$(jqf .reason)" "X-HTTP-Method-Override: DELETE is not an allowed method" \
    "the override is named in the audit's reason"
check "GraphQL POST with X-HTTP-Method-Override: DELETE" 403 block method-override POST \
    '/echo?c=override-graphql' --header 'X-HTTP-Method-Override: DELETE' --ct application/json \
    --body "$T/q.json"
check "GET with X-HTTP-Method: delete" 403 block method-override GET '/echo?c=override-lower' \
    --header 'X-HTTP-Method: delete'
check "GET with X-Method-Override: GET" 200 allow allow-methods GET '/echo?c=override-same' \
    --header 'X-Method-Override: GET'

# --- what stays allowed: GraphQL over HTTP and nothing else ---
check "GraphQL POST, JSON" 200 allow graphql-query POST '/echo?c=gql-json' \
    --ct application/json --body "$T/q.json"
check "GraphQL POST, JSON batch" 200 allow graphql-query POST '/echo?c=gql-batch' \
    --ct application/json --body "$T/batch.json"
check "GraphQL POST, application/graphql" 200 allow graphql-query POST '/echo?c=gql-graphql' \
    --ct application/graphql --body "$T/q.graphql"
check "GraphQL POST, form" 200 allow graphql-query POST '/echo?c=gql-form' \
    --ct application/x-www-form-urlencoded --body "$T/q.form"
check "GraphQL GET in the URL" 200 allow allow-methods GET '/echo?c=gql-get&query=%7Ba%7D'
# Without a content type a JSON body is still GraphQL, a bare document is not (explain too).
check "GraphQL POST, JSON without a content type" 200 allow graphql-query POST '/echo?c=gql-noct' \
    --body "$T/q.json"
check "a GraphQL document without a content type" 403 block method-not-allowed POST \
    '/echo?c=doc-noct' --body "$T/q.graphql"
for f in gql-json:q.json gql-batch:batch.json gql-graphql:q.graphql gql-form:q.form; do
	expect_eq "$(jq -r "select(.target == \"/echo?c=${f%%:*}\") | .body_len" "$ORIGIN_LOG")" \
	    "$(stat -c %s "$T/${f#*:}")" "${f%%:*}: the body arrived whole"
done

# The 403's "To see why" command, run as a user pastes it (FILE being the
# body they sent), names the rule the proxy applied: it carries the
# method, the overrides and the body that decided.
hint() { # hint NAME BODYFILE CURL-ARGS...
	local name=$1 body=$2 line rule
	shift 2
	run curl -s -D "$T/hint.h" --max-time 20 -x "http://127.0.0.1:$EG_PORT" "$@"
	rule=$(tr -d '\r' <"$T/hint.h" | sed -n 's/^X-Egress-Rule: //p')
	line=$(printf '%s\n' "$OUT" | sed -n 's/^To see why: policyctl explain //p')
	[ -n "$line" ] || { bad "$name: the 403 names an explain command ($OUT)"; return; }
	line=${line//FILE/$body}
	eval "run \"\$POLICYCTL\" explain --config \"\$EG_CONFIG\" --json $line"
	expect_eq "$(jqf .rule)" "$rule" "$name: the 403's explain command gives its rule"
}
hint "a body on a GET" "$T/hello.txt" -X GET -H 'Content-Type: text/plain' \
    --data-binary @"$T/hello.txt" "http://plain.test:$O/echo?c=hint-body"
hint "a method override" - -H 'X-HTTP-Method-Override: DELETE' "http://plain.test:$O/echo?c=hint-o"
hint "a mutation in the URL" - "http://plain.test:$O/echo?c=hint-q&query=mutation%7Ba%7D"
hint "a POST" - -d x "http://plain.test:$O/echo?c=hint-post"
stop_egressd

# --- onViolation: flag lets a body on a read method through, flagged ---
write_policy "$T/flag.yaml" flag
EG_AUDIT="$T/flag-audit.jsonl"
start_egressd --config "$T/flag.yaml" --upstream-dns "$ORIGIN_DNS" || exit 1
EG_CONFIG="$T/flag.yaml"
check "flag: GET with a small body" 200 flag body-on-read-method GET '/echo?f=small' \
    --ct text/plain --body "$T/hello.txt"
check "flag: GET with a ${BIG_LEN}-byte body" 200 flag body-on-read-method GET '/echo?f=big' \
    --ct application/octet-stream --body "$T/big.bin"
expect_eq "$(jq -r 'select(.target == "/echo?f=big") | .body_len' "$ORIGIN_LOG")" "$BIG_LEN" \
    "flag: the whole ${BIG_LEN}-byte body reached the origin"
check "flag: GET with X-HTTP-Method-Override: DELETE" 200 flag method-override GET \
    '/echo?f=override' --header 'X-HTTP-Method-Override: DELETE'
stop_egressd

finish
