#!/usr/bin/env bash
# policyctl check end to end: the embedded default validates, the effective
# merged configuration is printed with each value's source (and loads back),
# every error of a bad file is reported as FILE:LINE:COL with exit 2, list
# file warnings name their lines, seed 000's keys without a meaning here are
# noted with their place, and --json says the same for machines.
. "$(dirname "$0")/lib.sh"

run "$POLICYCTL" check
expect_rc 0 "default config is valid"
expect_line "$(printf '%s' "$OUT" | head -n1)" "configuration OK" "check says OK"
expect_contains "$OUT" "*.segment.io" "default blocklist printed"
expect_contains "$OUT" "builtin" "default sources are builtin"

cat >"$T/global.yaml" <<'YAML'
version: 1
network:
  mode: practical
  blocklist: ["*.segment.io"]
  allowMethods: [GET, HEAD]
audit:
  path: /tmp/audit.jsonl
YAML
cat >"$T/project.yaml" <<'YAML'
network:
  onViolation: flag
  blocklist: ["tracker.example.net"]
YAML
run "$POLICYCTL" check --config "$T/global.yaml" --config "$T/project.yaml"
expect_rc 0 "merged config valid"
expect_contains "$OUT" "$T/project.yaml:2" "onViolation source is the project file"
expect_contains "$OUT" "$T/global.yaml:4" "global blocklist entry source"
# The printed configuration is itself a valid configuration with the same values.
printf '%s\n' "$OUT" | tail -n +2 >"$T/dump.yaml"
run "$POLICYCTL" check --config "$T/dump.yaml" --json
expect_rc 0 "dump loads back"
expect_eq "$(jqf '.network.onViolation.value')" "flag" "dump keeps the merged scalar"
expect_eq "$(jqf '[.network.blocklist[].value] | join(",")')" "*.segment.io,tracker.example.net" "dump keeps the merged list"
expect_eq "$(jqf '[.network.allowMethods[].value] | join(",")')" "GET,HEAD" "dump keeps methods"

run "$POLICYCTL" check --config "$T/global.yaml" --config "$T/project.yaml" --json
expect_eq "$(jqf .ok)" "true" "json ok"
expect_eq "$(jqf '.network.onViolation.source')" "$T/project.yaml:2" "json source"
expect_eq "$(jqf '.network.mode.source')" "$T/global.yaml:3" "json mode source"
expect_eq "$(jqf '.network.proxyPort.source')" "builtin" "unset key is builtin"
expect_eq "$(jqf '.audit.path.value')" "/tmp/audit.jsonl" "audit path"

# Every error of a file, each with its own position, one failure.
cat >"$T/bad.yaml" <<'YAML'
version: 1
network:
  mode: sideways
  blocklist: ["a*b.example.com"]
  allowlist: ["*.com"]
  frobnicate: true
  failClosed: yes
  proxyPort: 70000
YAML
run "$POLICYCTL" check --config "$T/bad.yaml"
expect_rc 2 "bad config exits 2"
expect_contains "$ERR" "$T/bad.yaml:3:9:" "bad enum position"
expect_contains "$ERR" "$T/bad.yaml:4:15:" "bad pattern position"
expect_contains "$ERR" "$T/bad.yaml:5:15:" "public suffix wildcard position"
expect_contains "$ERR" "$T/bad.yaml:6:3:" "unknown key position"
expect_contains "$ERR" "$T/bad.yaml:7:15:" "bad bool position"
expect_contains "$ERR" "$T/bad.yaml:8:14:" "bad port position"
expect_contains "$ERR" "6 errors in configuration" "all errors counted"
run "$POLICYCTL" check --config "$T/bad.yaml" --json
expect_rc 2 "json bad config exits 2"
expect_eq "$(jqf .ok)" "false" "json not ok"
expect_eq "$(jqf '.errors | length')" "6" "json lists every error"

# A list file with invalid lines: a warning with line numbers, not an error.
# shellcheck disable=SC2016 # $third-party is an adblock option, not a variable
printf 'good.example.com\nnot a domain!\n||ads.example.com^$third-party\nfine.example.net\n' >"$T/list.txt"
printf 'network:\n  blocklistFiles: [list.txt]\n' >"$T/lists.yaml"
run "$POLICYCTL" check --config "$T/lists.yaml"
expect_rc 0 "invalid list lines are not fatal"
expect_contains "$ERR" "2 invalid lines ignored (line 2, 3)" "invalid lines reported by number"
printf 'network:\n  blocklistFiles: [nope.txt]\n' >"$T/nolist.yaml"
run "$POLICYCTL" check --config "$T/nolist.yaml"
expect_rc 2 "missing list file is an error"
expect_contains "$ERR" "$T/nolist.yaml:2:20:" "missing list file position"

# Allowlist wildcards: over a public suffix an error, over a shared platform a warning.
printf 'network:\n  allowlist: ["*.herokuapp.com", "api.example.com"]\n' >"$T/shared.yaml"
run "$POLICYCTL" check --config "$T/shared.yaml"
expect_rc 0 "shared-platform wildcard is accepted"
expect_contains "$ERR" "$T/shared.yaml:2:15: allowlist entry \"*.herokuapp.com\" covers a platform where anyone can publish" "shared-platform wildcard warned"
printf 'network:\n  allowlist: ["*.co.uk"]\n  blocklist: ["*.co.uk"]\n' >"$T/psl.yaml"
run "$POLICYCTL" check --config "$T/psl.yaml"
expect_rc 2 "public-suffix wildcard in the allowlist is an error"
expect_contains "$ERR" "$T/psl.yaml:2:15: allowlist entry \"*.co.uk\": wildcard over a public suffix" "public suffix error text"
expect_contains "$ERR" "1 error in configuration" "the blocklist may block a suffix"

# The seed's JSON file shape with its aliases.
mkdir -p "$T/.opencode"
printf '{"network": {"allow_methods": ["GET", "POST"], "allow_graphql_queries": false}}\n' >"$T/.opencode/sandbox.json"
run "$POLICYCTL" check --json --config "$T/.opencode/sandbox.json"
expect_rc 0 "seed JSON loads"
expect_eq "$(jqf '[.network.allowMethods[].value] | join(",")')" "GET,POST" "allow_methods alias"
expect_eq "$(jqf '.network.allowGraphqlQueries.value')" "false" "allow_graphql_queries alias"
# Methods are tokens as sent: a lower-case entry is an error that says what to write.
printf '{"network": {"allow_methods": ["get", "HEAD"]}}\n' >"$T/.opencode/sandbox.json"
run "$POLICYCTL" check --config "$T/.opencode/sandbox.json"
expect_rc 2 "seed JSON with a lower-case method is an error"
expect_contains "$ERR" "$T/.opencode/sandbox.json:1:32: allow_methods entry \"get\": methods are case-sensitive and sent in upper case; write \"GET\"" \
    "lower-case method: error with the suggestion"

# Seed 000's keys without a meaning here are understood and noted, not errors.
printf '{"network": {"observe": true}, "filesystem": {"deny_read": []}, "auto_allow_clean": true}\n' \
	>"$T/.opencode/sandbox.json"
run "$POLICYCTL" check --config "$T/.opencode/sandbox.json"
expect_rc 0 "seed 000's other keys load"
expect_contains "$ERR" "policyctl: note: $T/.opencode/sandbox.json:1:14: network.observe has no effect here" \
	"observe is noted as not applicable, with its place"
expect_contains "$ERR" "filesystem.deny_read has no effect here" "filesystem.deny_read is noted"
run "$POLICYCTL" check --json --config "$T/.opencode/sandbox.json"
expect_eq "$(jqf '[.notes[].key] | join(",")')" "network.observe,filesystem.deny_read,auto_allow_clean" \
	"--json lists the notes"

run "$POLICYCTL" check extra
expect_rc 2 "check takes no operands"

finish
