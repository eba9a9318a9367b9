#!/usr/bin/env bash
# Practical mode of the image against the test origin on an internal podman
# network: through the proxy variables sandbox-init sets, a GET to a host on
# no list works over HTTPS (intercepted with the run CA, upstream verified
# against the test CA) and HTTP from curl, Python and Node; a POST there is
# refused with egressd's 403 and never reaches the origin; a blocklisted
# host is refused; an allowlisted host takes the POST; the system store
# alone (CA variables unset) trusts the run CA; the container exits with
# the payload's status; and after it exits the audit log is on the host,
# readable by `policyctl audit`.
. "$(dirname "$0")/lib.sh"

image_build || { bad "the image builds"; finish; }
lib_net_up || { bad "test network"; finish; }
lib_policy practical

mkdir -p "$T/ws"
cat >"$T/ws/payload.sh" <<'EOT'
# Runs as the payload; prints "LABEL VALUE" lines.
code() { curl -s -o /dev/null -w '%{http_code}' --max-time 20 "$@"; }
echo "user $(id -un)"
echo "proxy-set $([ -n "$HTTPS_PROXY" ] && [ -n "$http_proxy" ] && echo yes)"
echo "curl-https-get $(code https://readonly.test/hello)"
echo "curl-https-body $(curl -s --max-time 20 https://readonly.test/hello)"
echo "curl-http-get $(code http://readonly.test/)"
echo "curl-https-post $(code -X POST -d x https://readonly.test/hello)"
echo "curl-http-post $(code -X POST -d x http://readonly.test/)"
echo "curl-post-body $(curl -s --max-time 20 -X POST -d x https://readonly.test/hello | tr '\n' ' ')"
echo "curl-blocked $(curl -s -o /dev/null -w '%{http_connect}' --max-time 20 https://blocked.test/)"
echo "curl-blocked-http $(code http://blocked.test/)"
# The model call: a streamed-size POST to an allowlisted API.
head -c 100000 /dev/urandom >/tmp/body
echo "curl-allowed-post $(curl -s --max-time 20 -X POST --data-binary @/tmp/body https://allowed.test/echo | tr -d ' \n')"
echo "body-sha $(sha256sum </tmp/body | cut -d' ' -f1)"
echo "store-only $(env -u SSL_CERT_FILE -u CURL_CA_BUNDLE -u SSL_CERT_DIR curl -s -o /dev/null -w '%{http_code}' --max-time 20 https://readonly.test/hello)"
python3 - <<'PY'
import urllib.request, urllib.error
def go(req):
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return "%d:%s" % (r.status, r.read().decode().strip())
    except urllib.error.HTTPError as e:
        return "%d" % e.code
    except Exception as e:
        return "error:%s" % e
print("python-get", go("https://readonly.test/hello"))
print("python-post", go(urllib.request.Request("https://readonly.test/hello", data=b"x", method="POST")))
PY
cat >/tmp/get.js <<'JS'
// GET (or POST) through HTTPS_PROXY with Node's own TLS stack: CONNECT, then
// TLS verified against Node's store plus NODE_EXTRA_CA_CERTS.
const http = require('http'), tls = require('tls');
const [method, host, path] = process.argv.slice(2);
const proxy = new URL(process.env.HTTPS_PROXY);
const done = s => { console.log(s); process.exit(0); };
setTimeout(() => done('timeout'), 20000);
http.request({ host: proxy.hostname, port: proxy.port, method: 'CONNECT', path: host + ':443' })
  .on('connect', (res, sock) => {
    if (res.statusCode !== 200) return done('connect-' + res.statusCode);
    const t = tls.connect({ socket: sock, servername: host }, () => {
      // A body only where asked for ("GET+body"): on GET it is a violation of its own.
      const m = method.split('+');
      const body = m[0] === 'POST' || m[1] === 'body' ? 'Content-Length: 1\r\n' : '';
      t.write(m[0] + ' ' + path + ' HTTP/1.1\r\nHost: ' + host + '\r\n' + body + 'Connection: close\r\n\r\n' + (body ? 'x' : ''));
    });
    let buf = '';
    t.on('data', d => { buf += d; });
    t.on('end', () => done(buf.split(' ')[1] + ':' + (buf.split('\r\n\r\n')[1] || '').trim()));
    t.on('error', e => done('error:' + e.message));
  }).on('error', e => done('error:' + e.message)).end();
JS
echo "node-get $(node /tmp/get.js GET readonly.test /hello)"
echo "node-get-body $(node /tmp/get.js GET+body readonly.test /hello)"
echo "node-post $(node /tmp/get.js POST readonly.test /echo)"
exit 7
EOT
chmod 644 "$T/ws/payload.sh"

box -- -- bash /workspace/payload.sh
expect_eq "$RC" 7 "the container exits with the payload's status"
expect_eq "$(row user)" opencode "the payload runs as opencode"
expect_eq "$(row proxy-set)" yes "the proxy variables are set, both cases"
expect_eq "$(row curl-https-get)" 200 "curl: HTTPS GET to a host on no list"
HELLO="hello from origin $(printf '.%.0s' $(seq 81))"
expect_eq "$(rest curl-https-body)" "$HELLO" "curl: the origin's body arrives"
expect_eq "$(row curl-http-get)" 200 "curl: HTTP GET"
expect_eq "$(row curl-https-post)" 403 "curl: HTTPS POST refused"
expect_eq "$(row curl-http-post)" 403 "curl: HTTP POST refused"
expect_contains "$(printf '%s\n' "$OUT" | grep '^curl-post-body')" "policyctl explain" \
	"the 403 names the rule and says how to ask why"
expect_eq "$(row curl-blocked)" 403 "curl: CONNECT to a blocklisted host is refused"
expect_eq "$(row curl-blocked-http)" 403 "curl: HTTP to a blocklisted host is refused"
expect_eq "$(row curl-allowed-post)" "{\"len\":100000,\"sha256\":\"$(row body-sha)\"}" \
	"curl: a POST to an allowlisted host arrives whole"
expect_eq "$(row store-only)" 200 "curl with the CA variables unset: the system store trusts the run CA"
expect_eq "$(rest python-get)" "200:$HELLO" "Python: HTTPS GET"
expect_eq "$(row python-post)" 403 "Python: HTTPS POST refused"
expect_eq "$(rest node-get)" "200:$HELLO" "Node: HTTPS GET"
case "$(row node-post)" in 403:*) ok ;; *) bad "Node: HTTPS POST refused: $(row node-post)" ;; esac
case "$(row node-get-body)" in 403:*) ok ;; *) bad "Node: HTTPS GET with a body refused: $(row node-get-body)" ;; esac
[ "$RC" = 7 ] || printf '%s\n' "$ERR" | tail -n 20 >&2

# What reached the origin: the GETs, never a POST to readonly.test.
ORIG=$(origin_log)
expect_contains "$ORIG" "via-egressd GET / HTTP/1.1" "the origin saw plain GETs relayed by egressd"
expect_contains "$ORIG" '"method":"GET","target":"/hello"' "the origin saw HTTPS GETs from egressd"
expect_absent "$ORIG" "via-egressd POST" "no plain POST reached the origin"
expect_absent "$(printf '%s\n' "$ORIG" | grep '^{' | grep readonly.test | grep -v '"method":"GET"')" readonly.test \
	"no HTTPS POST to readonly.test reached the origin"
expect_contains "$ORIG" '"method":"POST"' "the allowlisted POST reached the origin"

# The audit log, on the host, after the container is gone.
AUDIT="$T/state/audit-events.jsonl"
if [ -s "$AUDIT" ]; then ok; else bad "the audit log is on the host: $AUDIT"; fi
if [ -x "$BUILD_DIR/policyctl" ]; then
	SUMMARY=$("$BUILD_DIR/policyctl" audit "$AUDIT" 2>&1)
	expect_eq "$?" 0 "policyctl audit reads the container's log"
	expect_contains "$SUMMARY" "readonly.test" "the summary lists readonly.test"
	expect_contains "$SUMMARY" "method-not-allowed" "the summary shows the refused POST and its rule"
	expect_contains "$SUMMARY" "blocked.test" "the summary lists the blocklisted host"
	BLOCKS=$("$BUILD_DIR/policyctl" audit --json --blocked "$AUDIT" 2>&1)
	expect_contains "$BLOCKS" "blocked.test" "policyctl audit --blocked --json names the blocked host"
else
	bad "policyctl is not built in $BUILD_DIR"
fi
AUDIT_OWNER=$(stat -c '%a' "$AUDIT" 2>/dev/null)
expect_eq "$AUDIT_OWNER" 600 "the audit file is private to egressd's user"

# A read-only root: the trust store is a link into /run, so clients still
# trust the run CA through the system store alone, and nothing else is written.
cat >"$T/ws/ro.sh" <<'EOT'
echo "ro-store $(env -u SSL_CERT_FILE -u CURL_CA_BUNDLE -u SSL_CERT_DIR curl -s -o /dev/null -w '%{http_code}' --max-time 20 https://readonly.test/hello)"
echo "ro-link $(readlink /etc/ssl/certs/ca-certificates.crt)"
touch /etc/probe 2>/dev/null && echo "ro-root writable" || echo "ro-root read-only"
EOT
chmod 755 "$T/ws/ro.sh"
box --read-only -- -- bash /workspace/ro.sh
expect_eq "$RC" 0 "the sandbox starts on a read-only root ($(printf '%s' "$ERR" | tail -n 3))"
expect_eq "$(row ro-store)" 200 "read-only root: the system store alone trusts the run CA"
expect_eq "$(row ro-link)" /run/opencode-sandbox/ca/ca-bundle.pem "the store is a link to the run bundle"
expect_eq "$(rest ro-root)" read-only "and the root really is read-only"
expect_contains "$ERR" "is read-only: the payload's DNS goes to" "practical mode says what a read-only resolv.conf means"

echo "practical done after $(elapsed)s"
finish
