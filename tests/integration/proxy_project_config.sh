#!/usr/bin/env bash
# A project file the sandboxed program can write (--project-config): egressd
# takes from it only what tightens the trusted files. The project file below
# tries every loosening key (allowlist, passthrough, inheritGlobal: false,
# onViolation: flag, blockDohProviders: false, a looser mode, more methods,
# audit.path) and adds a blocklist entry: a POST to the host it allowlists
# is still refused, the name it blocks is blocked, the DoH list holds, and
# each ignored key is a warning on stderr and a `policy` audit event naming
# the key and its line. policyctl explain and check with the same flags give
# the proxy's answers. A SIGHUP reload holds an edited project file to the
# same rule. The lines to paste are printed standalone, not with
# --no-banners.
. "$(dirname "$0")/lib.sh"

start_origin
O=$ORIGIN_PORT

cat >"$T/global.yaml" <<EOT
version: 1
network:
  mode: practical
  allowlist: ["127.0.0.1"]
  allowMethods: [GET, HEAD, OPTIONS]
EOT
cat >"$T/project.yaml" <<EOT
version: 1
network:
  mode: practical
  inheritGlobal: false
  allowlist: ["write.test"]
  passthrough: ["pinned.test"]
  allowMethods: [GET, POST]
  onViolation: flag
  blockDohProviders: false
  blocklist: ["tracker.test"]
audit:
  path: $T/elsewhere.jsonl
EOT
FLAGS=(--config "$T/global.yaml" --project-config "$T/project.yaml")

start_egressd "${FLAGS[@]}" --upstream-dns "$ORIGIN_DNS" || exit 1
EGERR=$(cat "$EG_ERR")

# --- the proxy: what loosens is not taken, what tightens is ---
run pcurl -o /dev/null -w '%{http_code}' -d x=1 "http://write.test:$O/echo"
expect_eq "$OUT" 403 "POST to a host only the project file allowlists is refused"
expect_eq "$(origin_count 'select(.method == "POST")')" 0 "the POST never reached the origin"
expect_eq "$(audit_last '.event == "http" and .method == "POST"' | jq -r '[.action, .rule] | @tsv')" \
    "block	method-not-allowed" "audited as a method violation, blocked (not flagged)"
run pcurl -o /dev/null -w '%{http_code}' "http://write.test:$O/hello"
expect_eq "$OUT" 200 "GET still allowed (the trusted methods)"
run pcurl -o /dev/null -w '%{http_code}' "http://tracker.test:$O/hello"
expect_eq "$OUT" 403 "the project file's blocklist entry is taken"
expect_eq "$(audit_last '.event == "http" and .host == "tracker.test"' | jq -r '[.action, .rule] | @tsv')" \
    "block	tracker.test" "blocked by the project's entry"
run pcurl -o /dev/null -w '%{http_code}' "http://dns.google/resolve?name=x"
expect_eq "$OUT" 403 "blockDohProviders: false from the project file is not taken"
expect_eq "$(audit_last '.event == "http" and .host == "dns.google"' | jq -r .rule)" doh-provider \
    "DoH provider blocked by the built-in list"
if [ -e "$T/elsewhere.jsonl" ]; then bad "audit.path of the project file was used"; else ok; fi

# --- every ignored key: a warning and a policy event with its line ---
for kl in network.inheritGlobal:4 network.allowlist:5 network.passthrough:6 \
    network.onViolation:8 network.blockDohProviders:9 audit.path:12; do
	k=${kl%:*} l=${kl#*:}
	expect_contains "$EGERR" "egressd: warning: $T/project.yaml:$l:3: $k is ignored" "warning for $k"
	expect_eq "$(jq -c --arg k "$k" --arg s "$T/project.yaml:$l" \
	    'select(.event == "policy" and .rule == "project-file" and .action == "block" and
	        .source == $s and (.reason | startswith($k + " is ignored")))' "$EG_AUDIT" | wc -l)" 1 \
	    "policy audit event for $k at line $l"
done
expect_contains "$EGERR" "project.yaml:7:23: network.allowMethods entry \"POST\" is ignored" \
    "the method entry is named with its column"
expect_eq "$(jq -c 'select(.event == "policy" and .rule == "project-file")' "$EG_AUDIT" | wc -l)" 7 \
    "one event per ignored setting, nothing for mode (unchanged) or the blocklist"

# --- explain and check agree with the proxy ---
run "$POLICYCTL" explain --json "${FLAGS[@]}" --method POST "http://write.test/echo"
expect_eq "$(jqf '[.action, .rule] | @tsv')" "block	method-not-allowed" "explain: the same POST is blocked"
expect_contains "$ERR" "network.allowlist is ignored" "explain warns like egressd"
run "$POLICYCTL" explain --json "${FLAGS[@]}" "http://tracker.test/"
expect_eq "$(jqf .action)" block "explain: the project's blocklist entry"
run "$POLICYCTL" check --json "${FLAGS[@]}"
expect_eq "$(jqf '[.ignored[].key] | join(",")')" \
    "network.inheritGlobal,network.allowlist,network.passthrough,network.allowMethods,network.onViolation,network.blockDohProviders,audit.path" \
    "check --json lists what was ignored, in the file's order"
expect_eq "$(jqf '.network.allowlist | map(.value) | join(",")')" "127.0.0.1" "check: the trusted allowlist only"
run "$POLICYCTL" check "${FLAGS[@]}"
expect_contains "$OUT" "project.yaml (project file: tightens only)" "check names the project file as such"

# --- a reload holds the edited file to the same rule ---
printf 'version: 1\nnetwork:\n  onViolation: block\n  mode: strict\n  allowlist: ["late.test"]\n' >"$T/project.yaml"
kill -HUP "$EG_PID"
for ((i = 0; i < 100; i++)); do
	jq -e 'select(.rule == "policy.reload")' "$EG_AUDIT" >/dev/null 2>&1 && break
	sleep 0.05
done
sleep 0.1
expect_eq "$(audit_last '.rule == "policy.reload"' | jq -r .action)" allow "the reload succeeds"
expect_ne "$(audit_last '.event == "policy" and .rule == "project-file" and .source == "'"$T/project.yaml"':5"')" "" \
    "the reloaded file's allowlist is ignored and audited"
run pcurl -o /dev/null -w '%{http_code}' "http://write.test:$O/hello"
expect_eq "$OUT" 403 "after the reload the project's stricter mode is in force"
expect_eq "$(audit_last '.event == "http" and .host == "write.test"' | jq -r '[.mode, .rule] | @tsv')" \
    "strict	strict-default-deny" "strict from the project file"
stop_egressd
expect_eq "$EXIT_RC" 0 "egressd exits 0"

# --- the lines to paste: standalone yes, under a launcher (--no-banners) no ---
expect_contains "$EGERR" "to send a shell's traffic through it, paste:" "standalone: proxy variables to paste"
expect_contains "$EGERR" "to trust it, paste:" "standalone: CA variables to paste"
start_egressd --config "$T/global.yaml" --no-banners || exit 1
stop_egressd
expect_absent "$(cat "$EG_ERR")" "paste" "--no-banners: no lines to paste"

finish
