#!/usr/bin/env bash
# policyctl explain end to end: the text and JSON answers (action, rule,
# list, file:line source, mode, GraphQL), URL tricks, IP forms, the
# private-address guard, modes, flag mode, merges, list files and the exit
# codes, all through the real binary on real config files.
. "$(dirname "$0")/lib.sh"

# --- embedded default policy ---
run "$POLICYCTL" explain api.segment.io
expect_rc 0 "default blocked host exits 0"
expect_line "$OUT" "blocked: api.segment.io" "default blocks segment"
expect_line "$OUT" "matched rule: *.segment.io (blocklist, builtin)" "default rule + builtin source"
expect_line "$OUT" "mode: practical" "default mode"
expect_line "$OUT" "note: practical mode blocks normal DNS/proxy traffic but cannot guarantee direct-IP blocking" "practical note"

run "$POLICYCTL" explain https://example.com/x
expect_line "$OUT" "allowed: example.com" "GET to an unlisted host is allowed"
expect_contains "$OUT" "matched rule: allow-methods (methods, builtin)" "allowed by method"

run "$POLICYCTL" explain --method POST https://example.com/x
expect_line "$OUT" "blocked: example.com" "POST blocked by default"
expect_contains "$OUT" "matched rule: method-not-allowed (methods, builtin)" "method rule"
expect_contains "$OUT" "reason: POST is not an allowed method (allowMethods: GET, HEAD, OPTIONS)" "method reason"

# --- a config file: rules come with file:line ---
cat >"$T/policy.yaml" <<'YAML'
version: 1
network:
  mode: practical
  blocklist:
    - "*.segment.io"
    - "tracker.example.net"
    - "198.18.5.0/24"
  allowlist:
    - api.anthropic.com
    - "*.githubusercontent.com"
    - "198.18.7.7"
  allowMethods: [GET, HEAD, OPTIONS]
  allowGraphqlQueries: true
  onViolation: block
YAML
P="$T/policy.yaml"

run "$POLICYCTL" explain --config "$P" api.segment.io
expect_line "$OUT" "matched rule: *.segment.io (blocklist, $P:5)" "blocklist source file:line"
run "$POLICYCTL" explain --config "$P" segment.io
expect_line "$OUT" "allowed: segment.io" "*.suffix does not match the apex"
run "$POLICYCTL" explain --config "$P" --json TRACKER.Example.NET.
expect_eq "$(jqf .host)" "tracker.example.net" "host normalised (case, trailing dot)"
expect_eq "$(jqf .action)" "block" "json action"
expect_eq "$(jqf .rule)" "tracker.example.net" "json rule"
expect_eq "$(jqf .list)" "blocklist" "json list"
expect_eq "$(jqf .source)" "$P:6" "json source"
expect_eq "$(jqf .mode)" "practical" "json mode"
expect_eq "$(jqf .method)" "GET" "json method"
expect_eq "$(jqf .graphql)" "null" "json graphql null"
expect_eq "$(jqf '.notes | length > 0')" "true" "json notes"

run "$POLICYCTL" explain --config "$P" --method DELETE https://api.anthropic.com/v1/x
expect_line "$OUT" "allowed: api.anthropic.com" "allowlisted host: all methods"
expect_line "$OUT" "matched rule: api.anthropic.com (allowlist, $P:9)" "allowlist source"
run "$POLICYCTL" explain --config "$P" --method POST https://raw.githubusercontent.com/x
expect_line "$OUT" "allowed: raw.githubusercontent.com" "wildcard allowlist"
run "$POLICYCTL" explain --config "$P" --method POST https://githubusercontent.com/x
expect_line "$OUT" "blocked: githubusercontent.com" "wildcard allowlist skips the apex"

# userinfo and other URL tricks decide by the real host
run "$POLICYCTL" explain --config "$P" --json 'http://api.anthropic.com@tracker.example.net/'
expect_eq "$(jqf .host)" "tracker.example.net" "userinfo trick"
expect_eq "$(jqf .action)" "block" "userinfo trick blocked"
run "$POLICYCTL" explain --config "$P" --json 'http://tracker.example.net#@api.anthropic.com/'
expect_eq "$(jqf .host)" "tracker.example.net" "fragment trick"
run "$POLICYCTL" explain --config "$P" --json 'HTTPS://TRACKER.example.net:8443/path?x=1'
expect_eq "$(jqf .host):$(jqf .port):$(jqf .path)" "tracker.example.net:8443:/path" "URL parts"

# IP literals are addresses, in every form; the private-address guard
run "$POLICYCTL" explain --config "$P" --json http://2130706433/
expect_eq "$(jqf .host)" "127.0.0.1" "decimal IPv4 form"
expect_eq "$(jqf .host_kind)" "address" "address kind"
expect_eq "$(jqf .rule)" "private-address" "loopback blocked by the guard"
run "$POLICYCTL" explain --config "$P" --json http://0x7f.1/
expect_eq "$(jqf .host):$(jqf .rule)" "127.0.0.1:private-address" "hex IPv4 form"
run "$POLICYCTL" explain --config "$P" --json 'http://[::ffff:169.254.169.254]/'
expect_eq "$(jqf .rule)" "private-address" "mapped metadata address"
expect_contains "$(jqf .reason)" "metadata" "metadata reason"
run "$POLICYCTL" explain --config "$P" --json 198.18.5.9
expect_eq "$(jqf .rule):$(jqf .source)" "198.18.5.0/24:$P:7" "CIDR blocklist"
run "$POLICYCTL" explain --config "$P" --json --method POST 198.18.7.7
expect_eq "$(jqf .action):$(jqf .rule)" "allow:198.18.7.7" "address allowlist lifts guard, all methods"
run "$POLICYCTL" explain --config "$P" --json 198.18.7.8
expect_eq "$(jqf .action):$(jqf .rule)" "block:private-address" "benchmarking range is not global"
run "$POLICYCTL" explain --config "$P" --json 93.184.215.14
expect_eq "$(jqf .action)" "allow" "public address GET allowed"
run "$POLICYCTL" explain --config "$P" --json 8.8.8.8
expect_eq "$(jqf .action):$(jqf .rule)" "block:doh-provider" "a DNS-over-HTTPS provider's address is blocked"

# --- GraphQL, over a body and over GET ---
printf '{"query":"query Viewer { viewer { login } }"}' >"$T/q.json"
printf '{"query":"mutation CreateIssue { createIssue(input:{}) { id } }"}' >"$T/m.json"
printf '{"query":"query A { a } mutation B { b }","operationName":"B"}' >"$T/opsel.json"
printf '{"query":"# mutation X\\n{ user(name: \\"mutation\\") { id } }"}' >"$T/decoy.json"
run "$POLICYCTL" explain --config "$P" --method POST --body "$T/q.json" https://api.github.com/graphql
expect_line "$OUT" "allowed: api.github.com" "GraphQL query over POST allowed"
expect_line "$OUT" "graphql: query Viewer" "graphql line"
expect_contains "$OUT" "matched rule: graphql-query (graphql, $P:13)" "graphql rule source"
run "$POLICYCTL" explain --config "$P" --json --method POST --body "$T/m.json" https://api.github.com/graphql
expect_eq "$(jqf .action):$(jqf .rule)" "block:graphql-mutation" "mutation blocked"
expect_eq "$(jqf .graphql.operation):$(jqf .graphql.name)" "mutation:CreateIssue" "mutation named"
run "$POLICYCTL" explain --config "$P" --json --method POST --body "$T/opsel.json" https://api.github.com/graphql
expect_eq "$(jqf .action):$(jqf .graphql.operation)" "block:mutation" "operationName selects the mutation"
run "$POLICYCTL" explain --config "$P" --json --method POST --body "$T/decoy.json" https://api.github.com/graphql
expect_eq "$(jqf .action):$(jqf .graphql.operation)" "allow:query" "mutation in comment and string is still a query"
run "$POLICYCTL" explain --config "$P" --json 'https://api.github.com/graphql?query=mutation%20%7B%20x%20%7D'
expect_eq "$(jqf .action):$(jqf .rule)" "block:graphql-mutation" "GET carrying a mutation is a violation"
run "$POLICYCTL" explain --config "$P" --json 'https://shop.example/search?query=shoes'
expect_eq "$(jqf .action):$(jqf .graphql)" "allow:null" "?query=shoes is not GraphQL"
printf 'mutation { x }' >"$T/m.graphql"
run "$POLICYCTL" explain --config "$P" --json --method POST --content-type application/graphql --body "$T/m.graphql" https://api.github.com/graphql
expect_eq "$(jqf .graphql.operation)" "mutation" "application/graphql body"

# --- the GraphQL allowance is for GraphQL requests alone; overrides and read-method bodies ---
run "$POLICYCTL" explain --config "$P" --method DELETE 'https://api.github.com/repos/o/r?query=%7Ba%7D'
expect_line "$OUT" "blocked: api.github.com" "DELETE with ?query={a} is blocked"
expect_contains "$OUT" "matched rule: method-not-allowed (methods, $P:12)" "by the method rules"
expect_line "$OUT" "graphql: query (in a request that is not GraphQL alone)" "graphql line says why it did not count"
printf '{"title":"pwned","query":"{a}"}' >"$T/rest.json"
run "$POLICYCTL" explain --config "$P" --json --method POST --body "$T/rest.json" https://api.github.com/repos/o/r/issues
expect_eq "$(jqf .action):$(jqf .rule)" "block:method-not-allowed" "REST body with a query member"
expect_eq "$(jqf .graphql.only):$(jqf .graphql.not_only)" \
    "false:the JSON holds more than query, operationName, variables and extensions, each once" \
    "JSON: graphql.only and why not"
run "$POLICYCTL" explain --config "$P" --json --method POST --body "$T/q.json" https://api.github.com/graphql
expect_eq "$(jqf .graphql.only):$(jqf .graphql.not_only):$(jqf .overrides)" "true:null:[]" \
    "a GraphQL request alone"
run "$POLICYCTL" explain --config "$P" --header 'X-HTTP-Method-Override: DELETE ' https://example.com/x
expect_contains "$OUT" "matched rule: method-override (methods, $P:12)" "an override is judged like a method"
expect_line "$OUT" "reason: X-HTTP-Method-Override: DELETE is not an allowed method (allowMethods: GET, HEAD, OPTIONS)" \
    "the reason names the override"
expect_line "$OUT" "method: GET (X-HTTP-Method-Override: DELETE)" "method line shows the override"
run "$POLICYCTL" explain --config "$P" --json --header 'x-http-method: GET' --header 'X-Method-Override: HEAD' https://example.com/x
expect_eq "$(jqf .action):$(jqf '[.overrides[] | .field + "=" + .method] | join(",")')" \
    "allow:X-HTTP-Method=GET,X-Method-Override=HEAD" "allowed overrides change nothing; JSON lists them"
printf 'hello' >"$T/hello.txt"
run "$POLICYCTL" explain --config "$P" --json --content-type text/plain --body "$T/hello.txt" https://example.com/x
expect_eq "$(jqf .action):$(jqf .rule)" "block:body-on-read-method" "a GET with a body"
expect_eq "$(jqf .reason)" "GET carries a body that is not a GraphQL query" "body-on-read-method reason"
run "$POLICYCTL" explain --config "$P" --json --body "$T/q.json" https://example.com/x
expect_eq "$(jqf .action):$(jqf .rule)" "allow:graphql-query" "a GET with a GraphQL query body"

# --- flag mode: violations go through, exit 0 ---
sed 's/onViolation: block/onViolation: flag/' "$P" >"$T/flag.yaml"
run "$POLICYCTL" explain --config "$T/flag.yaml" --method POST https://example.com/
expect_rc 0 "flag exits 0"
expect_line "$OUT" "flagged: example.com" "flag mode flags"
run "$POLICYCTL" explain --config "$T/flag.yaml" --json api.segment.io
expect_eq "$(jqf .action)" "block" "flag mode still blocks the blocklist"

# --- strict and off ---
sed 's/mode: practical/mode: strict/' "$P" >"$T/strict.yaml"
run "$POLICYCTL" explain --config "$T/strict.yaml" --json https://example.com/
expect_eq "$(jqf .action):$(jqf .rule):$(jqf .source)" "block:strict-default-deny:$T/strict.yaml:3" "strict default deny"
run "$POLICYCTL" explain --config "$T/strict.yaml" --json https://api.anthropic.com/
expect_eq "$(jqf .action)" "allow" "strict allows the allowlist"
expect_contains "$(jqf '.notes[0]')" "strict mode" "strict note"
sed 's/mode: practical/mode: off/' "$P" >"$T/off.yaml"
run "$POLICYCTL" explain --config "$T/off.yaml" --json https://example.com/
expect_eq "$(jqf .action):$(jqf .rule)" "block:mode-off" "off mode"

# --- global + project merge ---
cat >"$T/project.yaml" <<'YAML'
network:
  blocklist: ["*.example.org"]
  allowlist: ["uploads.example.com"]
YAML
run "$POLICYCTL" explain --config "$P" --config "$T/project.yaml" --json www.example.org
expect_eq "$(jqf .rule):$(jqf .source)" "*.example.org:$T/project.yaml:2" "project list appended"
run "$POLICYCTL" explain --config "$P" --config "$T/project.yaml" --json api.segment.io
expect_eq "$(jqf .action)" "block" "global list kept (inheritGlobal default true)"
cat >"$T/project2.yaml" <<'YAML'
network:
  inheritGlobal: false
  blocklist: ["*.example.org"]
YAML
run "$POLICYCTL" explain --config "$P" --config "$T/project2.yaml" --json api.segment.io
expect_eq "$(jqf .action):$(jqf .rule)" "allow:allow-methods" "inheritGlobal false replaces the global list"

# --- blocklistFiles: the rule names the list file and line ---
mkdir -p "$T/lists"
printf '# a hosts file\n127.0.0.1 localhost\n0.0.0.0 ads.example.com\n' >"$T/lists/hosts"
printf '! adblock\n||metrics.example.com^\n' >"$T/lists/adblock.txt"
cat >"$T/lists.yaml" <<'YAML'
network:
  blocklistFiles: [lists/hosts, lists/adblock.txt]
YAML
run "$POLICYCTL" explain --config "$T/lists.yaml" --json ads.example.com
expect_eq "$(jqf .rule):$(jqf .source)" "ads.example.com:$T/lists/hosts:3" "hosts-file entry"
run "$POLICYCTL" explain --config "$T/lists.yaml" --json a.b.metrics.example.com
expect_eq "$(jqf .rule):$(jqf .source)" "||metrics.example.com^:$T/lists/adblock.txt:2" "adblock entry covers subdomains"
run "$POLICYCTL" explain --config "$T/lists.yaml" --json localhost
expect_eq "$(jqf .rule)" "allow-methods" "hosts boilerplate not blocked by name"

# --- CONNECT: decided on the host and the port ---
run "$POLICYCTL" explain --config "$P" --json --method CONNECT example.com
expect_eq "$(jqf .action):$(jqf .rule)" "allow:unlisted-host" "CONNECT without a port asks about 443"
run "$POLICYCTL" explain --config "$P" --json --method CONNECT example.com:443
expect_eq "$(jqf .action):$(jqf .rule)" "allow:unlisted-host" "CONNECT to 443 of an unlisted host"
# Another port of an unlisted host: allowed, because the proxy intercepts
# the tunnel (the method rules decide inside, and what is not TLS is cut).
run "$POLICYCTL" explain --config "$P" --json --method CONNECT github.com:8443
expect_eq "$(jqf .action):$(jqf .rule):$(jqf .list)" "allow:unlisted-host:mode" "CONNECT to another port is intercepted"
expect_contains "$(jqf .reason)" "the tunnel is intercepted" "and the reason says so"
run "$POLICYCTL" explain --config "$P" --json --method CONNECT github.com:22
expect_eq "$(jqf .action):$(jqf .rule)" "allow:unlisted-host" "any port: what is not TLS is cut by the proxy"
run "$POLICYCTL" explain --config "$P" --json --method CONNECT api.anthropic.com:22
expect_eq "$(jqf .action)" "allow" "allowlisted hosts take tunnels to any port"
run "$POLICYCTL" explain --config "$T/flag.yaml" --json --method CONNECT github.com:22
expect_eq "$(jqf .action):$(jqf .rule)" "allow:unlisted-host" "flag mode: no violation to flag"
sed 's/mode: practical/mode: strict/' "$P" >"$T/strict-connect.yaml"
run "$POLICYCTL" explain --config "$T/strict-connect.yaml" --json --method CONNECT github.com:8443
expect_eq "$(jqf .action):$(jqf .rule)" "block:strict-default-deny" "strict mode: no tunnel to an unlisted host"
run "$POLICYCTL" explain --config "$P" --json --method CONNECT x.segment.io:443
expect_eq "$(jqf .action)" "block" "CONNECT to a blocklisted host"

# --- errors and exit codes ---
run "$POLICYCTL" explain
expect_rc 2 "missing operand"
run "$POLICYCTL" explain --method 'B@D' example.com
expect_rc 2 "bad method"
run "$POLICYCTL" explain 'http://exa mple.com/'
expect_rc 2 "bad host"
expect_contains "$ERR" "exa mple.com" "bad host named"
run "$POLICYCTL" explain ftp://example.com/
expect_rc 2 "unsupported scheme"
printf 'network:\n  mode: sideways\n' >"$T/bad.yaml"
run "$POLICYCTL" explain --config "$T/bad.yaml" example.com
expect_rc 2 "config error exits 2"
expect_contains "$ERR" "$T/bad.yaml:2:9:" "config error has file:line:col"
run "$POLICYCTL" explain --config "$T/missing.yaml" example.com
expect_rc 2 "missing config file"
run "$POLICYCTL" frobnicate
expect_rc 2 "unknown command"

finish
