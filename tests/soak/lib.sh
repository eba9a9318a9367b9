# shellcheck shell=bash
# Shared helpers for the reliability scripts (tests/soak/*.sh), on top of
# the integration helpers (tests/integration/lib.sh: the temp dir, the
# assertions, the test origin, egressd on a free port): a test PKI, nginx
# as a fast HTTP and HTTPS origin on loopback, the load generator
# (tests/bench/loadgen.c, built with the tests), and samples of egressd's
# RSS, descriptors, open connections and audit lines. Scripts run from
# ctest with BUILD_DIR and SRC_DIR set; SOAK_SECONDS says how long the soak
# lasts (make soak: 1800).

# shellcheck source=../integration/lib.sh
. "$SRC_DIR/tests/integration/lib.sh"

# shellcheck disable=SC2034 # for the scripts
LOADGEN="$BUILD_DIR/loadgen"
# Peers that drop privileges (nginx workers) must reach the temp dir.
chmod 755 "$T"

# soak_need TOOL...: exit 1 with the reason when a tool is missing.
soak_need() {
	local t
	for t in "$@"; do
		command -v "$t" >/dev/null 2>&1 && continue
		[ -x "$t" ] && continue
		echo "$t is missing (scripts/install-deps installs it)" >&2
		exit 1
	done
}

# soak_pki: a test CA (RSA-2048) and a leaf for origin.test and pass.test
# in $T/pki (ca.pem, origin.pem, origin.key).
soak_pki() {
	local P="$T/pki"
	mkdir -p "$P"
	openssl req -x509 -newkey rsa:2048 -nodes -keyout "$P/ca.key" -out "$P/ca.pem" -days 2 \
	    -subj "/CN=egress soak CA" -addext "basicConstraints=critical,CA:TRUE" \
	    -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
	openssl req -newkey rsa:2048 -nodes -keyout "$P/origin.key" -out "$P/origin.csr" \
	    -subj "/CN=origin.test" 2>/dev/null
	printf 'subjectAltName=DNS:origin.test,DNS:pass.test\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' \
	    >"$P/origin.ext"
	openssl x509 -req -in "$P/origin.csr" -CA "$P/ca.pem" -CAkey "$P/ca.key" -CAcreateserial \
	    -days 2 -extfile "$P/origin.ext" -out "$P/origin.pem" 2>/dev/null
	chmod 644 "$P"/*
	if [ ! -s "$P/origin.pem" ]; then
		echo "cannot make the test PKI" >&2
		exit 1
	fi
}

# start_nginx: nginx on 127.0.0.1, plain HTTP on NGINX_PORT and HTTPS
# (origin.test, from soak_pki) on NGINX_TLS_PORT; any path answers 100
# bytes, /1m a MiB, /big/ANY the file $T/www/big.bin (8 MiB; a script
# may make it larger). One worker, no access log, keep-alive kept long.
start_nginx() {
	soak_need nginx
	NGINX_PORT=$(free_port)
	NGINX_TLS_PORT=$(free_port)
	mkdir -p "$T/nginx" "$T/www"
	head -c 1048576 /dev/zero >"$T/www/1m"
	truncate -s 8M "$T/www/big.bin"
	chmod -R a+rX "$T/www"
	local user=""
	[ "$(id -u)" -eq 0 ] && user="user nobody nogroup;"
	cat >"$T/nginx/nginx.conf" <<EOF
$user
worker_processes 1;
worker_rlimit_nofile 32768;
pid $T/nginx/nginx.pid;
error_log $T/nginx/error.log crit;
events { worker_connections 32768; }
http {
	access_log off;
	server_tokens off;
	keepalive_requests 10000000;
	keepalive_timeout 600s;
	client_body_temp_path $T/nginx/body;
	proxy_temp_path $T/nginx/proxy;
	fastcgi_temp_path $T/nginx/fastcgi;
	uwsgi_temp_path $T/nginx/uwsgi;
	scgi_temp_path $T/nginx/scgi;
	server {
		listen 127.0.0.1:$NGINX_PORT backlog=4096;
		listen 127.0.0.1:$NGINX_TLS_PORT ssl backlog=4096;
		server_name origin.test pass.test;
		ssl_certificate $T/pki/origin.pem;
		ssl_certificate_key $T/pki/origin.key;
		ssl_protocols TLSv1.2 TLSv1.3;
		root $T/www;
		default_type text/plain;
		location = /1m { }
		location ^~ /big/ { try_files /big.bin =404; }
		location / {
			return 200 "0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789";
		}
	}
}
EOF
	nginx -e "$T/nginx/error.log" -p "$T/nginx" -c "$T/nginx/nginx.conf" \
	    -g 'daemon off;' >"$T/nginx/out" 2>&1 &
	NGINX_PID=$!
	track_pid "$NGINX_PID"
	if ! wait_port "$NGINX_PORT" 10 || ! wait_port "$NGINX_TLS_PORT" 10; then
		echo "nginx did not start: $(cat "$T/nginx/out" "$T/nginx/error.log" 2>/dev/null)" >&2
		exit 1
	fi
}

# eg_fds: egressd's open descriptors.
eg_fds() { find "/proc/$EG_PID/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l; }

# metric NAME: a metric's value from egressd's --metrics listener at
# $METRICS_PORT, summed over its labels (0 when absent).
metric() {
	curl -s --max-time 5 "http://127.0.0.1:$METRICS_PORT/metrics" |
	    awk -v n="$1" '$1 == n || index($1, n "{") == 1 {s += $2} END {printf "%d\n", s}'
}

# audit_lines: the lines in the audit log (all files of a rotated set).
audit_lines() { cat "$EG_AUDIT".* "$EG_AUDIT" 2>/dev/null | wc -l; }

# ids_check TAG IDS_FILE LABEL: every id in IDS_FILE (the requests a
# client saw answered) is in the audit exactly once as an http event whose
# path ends in /TAG-ID or has TAG=ID in its query, and no id of TAG is
# audited twice. Reads $T/audit.paths, the paths of the http events.
ids_check() {
	local tag=$1 ids=$2 label=$3 r
	r=$(awk -v tag="$tag" '
		FILENAME == ARGV[1] { want[$1] = 1; nwant++; next }
		{
			id = ""
			if (match($0, "/" tag "-[0-9]+$")) id = substr($0, RSTART + length(tag) + 2)
			if (id == "") next
			seen[id]++
		}
		END {
			missing = 0; twice = 0
			for (i in want) if (!(i in seen)) missing++
			for (i in seen) if (seen[i] > 1) twice++
			printf "%d %d %d\n", nwant, missing, twice
		}' "$ids" "$T/audit.paths")
	local n missing twice
	read -r n missing twice <<<"$r"
	echo "# $label: $n answered, $missing not audited, $twice audited more than once"
	expect_eq "$missing $twice" "0 0" "$label: each of the $n answered requests audited exactly once"
}

# audit_tsv: the audit log (all files of a rotated set) in $T/audit.tsv,
# one line an event: event, path (or qname, or host), tls, the GraphQL
# operation, rule, action, reason.
audit_tsv() {
	cat "$EG_AUDIT".* "$EG_AUDIT" 2>/dev/null | jq -r '[.event, (.path // .qname // .host // ""),
	    (.tls // "" | tostring), (.graphql.operation // ""), (.rule // ""), (.action // ""),
	    (.reason // "")] | @tsv' >"$T/audit.tsv"
}
