# shellcheck shell=bash
# A throwaway PKI for the test origins: pki_make CA_CN SAN... writes, in $T,
# a P-256 test CA (testca.pem, testca.key) and a certificate for the first
# SAN's name covering every SAN given (origin.pem, origin.key), valid two
# days. Returns 1 if openssl fails. Source it from a suite's lib.sh.

pki_make() {
	local cn=$1 sans="" n
	shift
	for n in "$@"; do
		sans="${sans:+$sans,}DNS:$n"
	done
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
		-subj "/CN=$cn" -keyout "$T/testca.key" -out "$T/testca.pem" \
		-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign \
		>/dev/null 2>&1 || return 1
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$1" \
		-keyout "$T/origin.key" -out "$T/origin.csr" >/dev/null 2>&1 || return 1
	printf 'subjectAltName=%s\n' "$sans" >"$T/origin.ext"
	openssl x509 -req -in "$T/origin.csr" -CA "$T/testca.pem" -CAkey "$T/testca.key" \
		-CAcreateserial -days 2 -extfile "$T/origin.ext" -out "$T/origin.pem" \
		>/dev/null 2>&1 || return 1
}
