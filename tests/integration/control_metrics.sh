#!/usr/bin/env bash
# egressd --metrics end to end: GET /metrics in the Prometheus text format
# (HEAD, other paths 404, other methods 405, a client that sends nothing
# 408, a non-loopback address refused without --allow-non-loopback),
# promtool's check of the exposition, and a real Prometheus server
# (Debian's prometheus package) on loopback scraping egressd every second:
# its HTTP API returns egressd's request counters with exactly the values
# the requests this test sent caused.
. "$(dirname "$0")/lib.sh"

for tool in prometheus promtool; do
	command -v "$tool" >/dev/null || {
		bad "$tool is missing (scripts/install-deps installs prometheus)"
		finish
	}
done

start_origin
O=$ORIGIN_PORT
cat >"$T/policy.yaml" <<'EOF'
version: 1
network:
  mode: practical
  allowlist: ["127.0.0.1"]
EOF

# A metrics listener off loopback is refused before anything is bound.
run "$EGRESSD" --config "$T/policy.yaml" --proxy "127.0.0.1:$(free_port)" \
    --dns "127.0.0.1:$(free_port)" --metrics "0.0.0.0:$(free_port)" --audit "$T/a0.jsonl"
expect_ne "$RC" 0 "--metrics on 0.0.0.0 is refused"
expect_contains "$ERR" "the metrics listener is not on a loopback address" "and says why"
expect_contains "$ERR" "--allow-non-loopback" "and how to mean it"

MP=$(free_port)
start_egressd --config "$T/policy.yaml" --upstream-dns "$ORIGIN_DNS" --metrics "127.0.0.1:$MP" ||
    exit 1
expect_contains "$(cat "$EG_ERR")" "metrics on http://127.0.0.1:$MP/metrics" "egressd says where"
M="http://127.0.0.1:$MP"

run curl -sS -D "$T/h" "$M/metrics"
expect_rc 0 "GET /metrics"
expect_contains "$(tr -d '\r' <"$T/h")" "Content-Type: text/plain; version=0.0.4" \
    "the Prometheus text format"
printf '%s\n' "$OUT" >"$T/metrics.txt"
run promtool check metrics <"$T/metrics.txt"
expect_rc 0 "promtool accepts the exposition ($OUT)"
expect_line "$(cat "$T/metrics.txt")" 'egressd_requests_total{event="http",action="allow"} 0' \
    "no request yet"
expect_eq "$(curl -s -o /dev/null -w '%{http_code} %{size_download}' -I "$M/metrics")" "200 0" \
    "HEAD: the head alone"
expect_eq "$(curl -s -o /dev/null -w '%{http_code}' "$M/")" 404 "another path: 404"
expect_eq "$(curl -s -o /dev/null -w '%{http_code}' -X POST -d x "$M/metrics")" 405 \
    "another method: 405"
expect_eq "$(curl -s -o /dev/null -w '%{http_code}' "$M/metrics?x=1")" 200 \
    "a query string is ignored"
exec 5<>"/dev/tcp/127.0.0.1/$MP"
SLOW=$(timeout 10 head -n 1 <&5 | tr -d '\r')
exec 5<&-
expect_eq "$SLOW" "HTTP/1.1 408 Request Timeout" "a client that sends nothing: 408"

# A real Prometheus scraping egressd every second.
PP=$(free_port)
cat >"$T/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: egressd
    static_configs:
      - targets: ["127.0.0.1:$MP"]
EOF
prometheus --config.file="$T/prometheus.yml" --storage.tsdb.path="$T/prom" \
    --web.listen-address="127.0.0.1:$PP" --log.level=warn >"$T/prom.log" 2>&1 &
track_pid $!
ready=no
for _ in $(seq 300); do
	if curl -sf "http://127.0.0.1:$PP/-/ready" >/dev/null 2>&1; then
		ready=yes
		break
	fi
	sleep 0.1
done
expect_eq "$ready" yes "Prometheus is ready ($(tail -n 3 "$T/prom.log"))"

# What this test sends: 5 allowed GETs and 3 POSTs blocked.
for i in 1 2 3 4 5; do pcurl -o /dev/null "http://plain.test:$O/hello?i=$i"; done
for i in 1 2 3; do pcurl -o /dev/null -X POST -d x "http://plain.test:$O/echo"; done

# query EXPR: the value Prometheus has for an instant vector of one series.
query() {
	curl -s "http://127.0.0.1:$PP/api/v1/query" --data-urlencode "query=$1" |
	    jq -r '.data.result[0].value[1] // "none"'
}
got_allow=none got_block=none
for _ in $(seq 150); do
	got_allow=$(query 'egressd_requests_total{job="egressd",event="http",action="allow"}')
	got_block=$(query 'egressd_requests_total{job="egressd",event="http",action="block"}')
	[ "$got_allow" = 5 ] && [ "$got_block" = 3 ] && break
	sleep 0.2
done
expect_eq "$got_allow" 5 "Prometheus has egressd's allowed requests: the 5 sent"
expect_eq "$got_block" 3 "Prometheus has egressd's blocked requests: the 3 sent"
expect_eq "$(query 'up{job="egressd"}')" 1 "the scrape target is up"
expect_eq "$(query 'egressd_policy_generation{job="egressd"}')" 1 "the policy generation"
expect_eq "$(query 'sum(egressd_connections_accepted_total{job="egressd"})')" 8 \
    "the connections accepted"
stop_egressd
finish
