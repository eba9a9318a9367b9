/*
 * loadgen over TLS: the CONNECT exchange through a proxy, the move of the
 * connection's descriptor to a TLS bufferevent that verifies the chain
 * against the given CA and the URL's host name, and the set-up of the TLS
 * context and target address for https URLs.
 */
#include "loadgen.h"

/* Explains a failed handshake on stderr, a few times per run, then only counts. */
void
lg_tls_note(struct loadgen *lg, struct bufferevent *bev)
{
	char buf[256] = "the peer closed the connection";
	unsigned long e;
	SSL *ssl;
	long vr;

	if (lg->tls_notes >= LG_TLS_NOTES)
		return;
	lg->tls_notes++;
	if ((e = bufferevent_get_openssl_error(bev)) != 0)
		ERR_error_string_n(e, buf, sizeof buf);
	ssl = bufferevent_openssl_get_ssl(bev);
	vr = ssl != NULL ? SSL_get_verify_result(ssl) : X509_V_OK;
	fprintf(stderr, "loadgen: TLS handshake failed: %s%s%s\n", buf, vr != X509_V_OK ? ": " : "",
	        vr != X509_V_OK ? X509_verify_cert_error_string(vr) : "");
}

/*
 * The TCP connection (and tunnel) is ready: its descriptor leaves the
 * plain bufferevent for a TLS one that verifies the server's chain
 * against the given CA and its name against the URL's host.
 */
void
lg_conn_tls(struct lg_conn *c)
{
	struct loadgen *lg = c->lg;
	struct bufferevent *bev;
	struct timeval tv;
	evutil_socket_t fd = bufferevent_getfd(c->bev);
	SSL *ssl;
	int ok;

	bufferevent_disable(c->bev, EV_READ | EV_WRITE);
	bufferevent_free(c->bev);
	c->bev = NULL;
	c->setup = LG_S_NONE;
	if ((ssl = SSL_new(lg->ssl_ctx)) == NULL) {
		close(fd);
		lg_conn_done(c, LG_E_TLS);
		return;
	}
	if (lg->host_is_ip)
		ok = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), lg->host) == 1;
	else
		ok = SSL_set_tlsext_host_name(ssl, lg->host) == 1 &&
		     SSL_set1_host(ssl, lg->host) == 1;
	bev = ok ? bufferevent_openssl_socket_new(lg->base, fd, ssl, BUFFEREVENT_SSL_CONNECTING,
	                                          BEV_OPT_CLOSE_ON_FREE)
	         : NULL;
	if (bev == NULL) {
		SSL_free(ssl);
		close(fd);
		lg_conn_done(c, LG_E_TLS);
		return;
	}
	/* Peers that end a connection-per-request exchange without close_notify are not wrong. */
	bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
	c->bev = bev;
	bufferevent_setcb(bev, lg_read_cb, NULL, lg_event_cb, c);
	tv.tv_sec = (time_t)lg->timeout;
	tv.tv_usec = (suseconds_t)((lg->timeout - (double)tv.tv_sec) * 1e6);
	bufferevent_set_timeouts(bev, &tv, &tv);
	bufferevent_enable(bev, EV_READ | EV_WRITE);
	if (c->in_flight)
		lg_conn_send(c);
}

/* The proxy's answer to CONNECT: a 2xx head and nothing after it, then TLS starts. */
void
lg_tunnel_read(struct lg_conn *c, struct evbuffer *in)
{
	struct evbuffer_ptr pos;
	const char *p;
	size_t hlen;

	c->got_bytes = 1;
	pos = evbuffer_search(in, "\r\n\r\n", 4, NULL);
	if (pos.pos < 0) {
		if (evbuffer_get_length(in) > LG_HEAD_MAX)
			lg_conn_done(c, LG_E_PARSE);
		return;
	}
	hlen = (size_t)pos.pos + 4;
	if (hlen > LG_HEAD_MAX || hlen < 14 || evbuffer_get_length(in) != hlen) {
		lg_conn_done(c, LG_E_PARSE);
		return;
	}
	p = (const char *)evbuffer_pullup(in, (ssize_t)hlen);
	if (strncmp(p, "HTTP/1.", 7) != 0 || p[8] != ' ') {
		lg_conn_done(c, LG_E_PARSE);
		return;
	}
	if (p[9] != '2') {
		if (c->lg->tls_notes++ < LG_TLS_NOTES)
			fprintf(stderr, "loadgen: CONNECT answered %.3s\n", p + 9);
		lg_conn_done(c, LG_E_STATUS);
		return;
	}
	evbuffer_drain(in, hlen);
	c->got_bytes = 0;
	lg_conn_tls(c);
}

/* A host name as the certificate check and SNI want it: LDH labels, no trailing dot. */
static const char *
lg_check_name(const char *h)
{
	size_t n = strlen(h), label = 0, i;

	if (n == 0 || n > LG_HOST_MAX)
		return "bad host name length";
	for (i = 0; i < n; i++) {
		if (h[i] == '.') {
			if (label == 0)
				return "empty label in host name";
			label = 0;
		} else if (isalnum((unsigned char)h[i]) || h[i] == '-') {
			if (++label > 63)
				return "label over 63 characters";
		} else
			return "host name has a character other than letters, digits, '-' and '.'";
	}
	return label == 0 ? "host name ends with a dot" : NULL;
}

/*
 * https: the server name from the authority, and where TCP goes: the
 * proxy, else --resolve, else the host itself when it is a loopback
 * address. Returns the port.
 */
int
lg_setup_https(struct loadgen *lg, const char *auth, const char *resolve, const char *url)
{
	struct sockaddr_in sin;
	const char *colon, *err;
	char *end;
	long port = 443;
	size_t n;

	colon = strchr(auth, ':');
	n = colon != NULL ? (size_t)(colon - auth) : strlen(auth);
	if (n > LG_HOST_MAX)
		lg_die("--url: host name too long");
	memcpy(lg->host, auth, n);
	lg->host[n] = '\0';
	if (colon != NULL) {
		errno = 0;
		port = strtol(colon + 1, &end, 10);
		if (errno != 0 || *end != '\0' || end == colon + 1 || port < 1 || port > 65535)
			lg_die("--url: bad port");
	}
	lg->host_is_ip = inet_pton(AF_INET, lg->host, &sin.sin_addr) == 1;
	if (!lg->host_is_ip && (err = lg_check_name(lg->host)) != NULL) {
		fprintf(stderr, "loadgen: --url %s: %s\n", url, err);
		exit(2);
	}
	if (lg->host_is_ip && (ntohl(sin.sin_addr.s_addr) >> 24) != 127)
		lg_die("--url: only loopback (127.0.0.0/8) targets are allowed");
	if (lg->dst.sin_port != 0)
		return (int)port; /* through the proxy */
	if (resolve == NULL && !lg->host_is_ip)
		lg_die("https to a host name needs --proxy or --resolve ADDR");
	if ((err = lg_parse_addr(resolve != NULL ? resolve : lg->host, (int)port, &lg->dst)) !=
	    NULL) {
		fprintf(stderr, "loadgen: %s: %s\n", resolve != NULL ? "--resolve" : "--url", err);
		exit(2);
	}
	lg->dst.sin_port = htons((uint16_t)port);
	return (int)port;
}

/*
 * One client context for the run: only the given CA is trusted (not the
 * system store), the peer must verify, ALPN offers http/1.1 only, and no
 * session is ever resumed, so every new connection is a full handshake.
 */
void
lg_setup_ssl(struct loadgen *lg, const char *cafile)
{
	static const unsigned char alpn[] = "\x08http/1.1";
	SSL_CTX *ctx;

	if ((ctx = SSL_CTX_new(TLS_client_method())) == NULL)
		lg_die("SSL_CTX_new failed");
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	if (SSL_CTX_load_verify_locations(ctx, cafile, NULL) != 1) {
		fprintf(stderr, "loadgen: --cacert %s: cannot load\n", cafile);
		exit(2);
	}
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
	if (SSL_CTX_set_alpn_protos(ctx, alpn, sizeof alpn - 1) != 0)
		lg_die("cannot set ALPN");
	lg->ssl_ctx = ctx;
}
