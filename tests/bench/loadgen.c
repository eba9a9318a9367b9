/*
 * # build: gcc -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Wshadow -Wstrict-prototypes -Wformat=2 -Wno-unused-parameter tests/bench/loadgen.c tests/bench/loadgen_http.c tests/bench/loadgen_tls.c -o loadgen $(pkg-config --cflags --libs libevent libevent_openssl libssl libcrypto)
 *
 * loadgen: the HTTP/1.1 load generator of the benchmarks. One libevent loop
 * drives N connections to an origin, directly or through an explicit proxy
 * (absolute-form request line; for https, a CONNECT tunnel with TLS inside,
 * verified against a given CA and the URL's host name), parses every
 * response's framing, records each request's latency in a log-linear
 * histogram and prints one human line and one RESULT line. Targets must be
 * loopback addresses: a load generator aimed at the wrong host is a flood,
 * and the benchmarks only ever run locally. Standalone on purpose (libevent
 * and OpenSSL only), so it can be built and run against any proxy without
 * the rest of the tree.
 */
#include "loadgen.h"

static void lg_conn_start(struct lg_conn *);
static int lg_conn_open(struct lg_conn *);

static const char *const lg_err_names[LG_E_MAX] = {"connect", "status", "timeout",
                                                   "parse",   "closed", "tls"};

void
lg_die(const char *msg)
{
	fprintf(stderr, "loadgen: %s\n", msg);
	exit(2);
}

void *
lg_calloc(size_t n, size_t size)
{
	void *p;

	if ((p = calloc(n, size)) == NULL)
		lg_die("out of memory");
	return p;
}

static uint64_t
lg_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int
lg_hist_index(uint64_t v)
{
	int mag;

	if (v < LG_SUB)
		return (int)v;
	mag = 63 - __builtin_clzll(v);
	if (mag > LG_MAG_MAX)
		return LG_BUCKETS - 1;
	return LG_SUB + (mag - LG_SUB_BITS) * LG_SUB + (int)((v >> (mag - LG_SUB_BITS)) - LG_SUB);
}

static void
lg_hist_add(struct lg_hist *h, uint64_t v)
{
	h->counts[lg_hist_index(v)]++;
	h->total++;
	if (v > h->max)
		h->max = v;
}

/* The value at percentile p: the middle of the bucket holding that rank, never past the max. */
static uint64_t
lg_hist_pct(const struct lg_hist *h, double p)
{
	uint64_t rank, seen = 0, lower, width;
	int i, k;

	if (h->total == 0)
		return 0;
	rank = (uint64_t)(p / 100.0 * (double)h->total + 0.999999);
	if (rank < 1)
		rank = 1;
	for (i = 0; i < LG_BUCKETS; i++) {
		seen += h->counts[i];
		if (seen >= rank)
			break;
	}
	if (i >= LG_BUCKETS)
		return h->max;
	if (i < LG_SUB)
		return (uint64_t)i;
	k = (i - LG_SUB) / LG_SUB;
	lower = (uint64_t)(LG_SUB + (i - LG_SUB) % LG_SUB) << k;
	width = (uint64_t)1 << k;
	return lower + width / 2 < h->max ? lower + width / 2 : h->max;
}

static uint64_t
lg_errors(const struct loadgen *lg)
{
	uint64_t n = 0;
	int i;

	for (i = 0; i < LG_E_MAX; i++)
		n += lg->errors[i];
	return n;
}

static void
lg_stop(struct loadgen *lg)
{
	if (lg->stopping)
		return;
	lg->stopping = 1;
	lg->t_end = lg_now_ns();
	event_base_loopbreak(lg->base);
}

static void
lg_stop_cb(evutil_socket_t fd, short what, void *arg)
{
	lg_stop(arg);
}

static void
lg_conn_drop(struct lg_conn *c)
{
	evutil_socket_t fd;

	if (c->bev != NULL) {
		/* The set-up bufferevent does not own its descriptor: it moves on to TLS. */
		fd = c->setup != LG_S_NONE ? bufferevent_getfd(c->bev) : -1;
		bufferevent_disable(c->bev, EV_READ | EV_WRITE);
		bufferevent_free(c->bev);
		if (fd >= 0)
			close(fd);
		c->bev = NULL;
	}
	c->setup = LG_S_NONE;
	c->connected = 0;
	c->tls_up = 0;
	c->served = 0;
}

/*
 * Queues the request unless the connection is still being set up (it is
 * sent at the hand-off). With --tag, a new request takes the next ID; a
 * request sent again (resend) keeps its own.
 */
void
lg_conn_send(struct lg_conn *c)
{
	struct loadgen *lg = c->lg;
	char id[24];
	int n;

	if (c->bev == NULL || c->setup != LG_S_NONE)
		return;
	if (lg->tag == NULL) {
		bufferevent_write(c->bev, lg->request, lg->request_len);
		return;
	}
	if (c->id == 0)
		c->id = ++lg->ids;
	n = snprintf(id, sizeof id, "%" PRIu64, c->id);
	bufferevent_write(c->bev, lg->request, lg->tag_at);
	bufferevent_write(c->bev, id, (size_t)n);
	bufferevent_write(c->bev, lg->request + lg->tag_at, lg->request_len - lg->tag_at);
}

/* Idle mode: once every connection is parked or has failed, tell the driver. */
static void
lg_idle_check(struct loadgen *lg)
{
	if (lg->ready ||
	    lg->held + lg->held_closed + lg->not_kept + (int)lg_errors(lg) < lg->nconns)
		return;
	lg->ready = 1;
	printf("READY held=%d held_closed=%d not_kept=%d errors=%" PRIu64 "\n", lg->held,
	       lg->held_closed, lg->not_kept, lg_errors(lg));
	fflush(stdout);
}

/* One request is over, well or badly: decide what the connection does next. */
void
lg_conn_done(struct lg_conn *c, int err)
{
	struct loadgen *lg = c->lg;
	struct timeval tv = {0, LG_RETRY_MS * 1000};
	int keep;

	c->in_flight = 0;
	c->id = 0;
	lg->finished++;
	if (err >= 0) {
		lg->errors[err]++;
		lg_conn_drop(c);
	} else {
		lg_hist_add(&lg->hist, lg_now_ns() - c->start_ns);
		c->served++;
	}
	if (lg->max_requests != 0 && lg->finished >= lg->max_requests) {
		lg_stop(lg);
		return;
	}
	if (lg->stopping)
		return;
	keep = c->bev != NULL && c->reusable && lg->mode != LG_CLOSE;
	if (lg->mode == LG_IDLE) {
		if (keep) {
			c->state = LG_HOLD;
			bufferevent_set_timeouts(c->bev, NULL, NULL);
			lg->held++;
		} else {
			if (err < 0)
				lg->not_kept++;
			lg_conn_drop(c);
		}
		lg_idle_check(lg);
		return;
	}
	if (!keep)
		lg_conn_drop(c);
	if (err < 0 && lg->pace > 0) {
		tv.tv_sec = (time_t)lg->pace;
		tv.tv_usec = (suseconds_t)((lg->pace - (double)tv.tv_sec) * 1e6);
	}
	if (err >= 0 || lg->pace > 0)
		evtimer_add(c->retry, &tv);
	else
		lg_conn_start(c);
}

static void
lg_retry_cb(evutil_socket_t fd, short what, void *arg)
{
	lg_conn_start(arg);
}

void
lg_conn_response(struct lg_conn *c)
{
	struct loadgen *lg = c->lg;

	/* Answered, whatever the status: the proxy has seen the request whole. */
	if (lg->ids_out != NULL && c->id != 0)
		fprintf(lg->ids_out, "%" PRIu64 "\n", c->id);
	if (c->status < 200 || c->status > 299) {
		lg_conn_done(c, LG_E_STATUS);
		return;
	}
	lg->completed++;
	lg_conn_done(c, -1);
}

void
lg_read_cb(struct bufferevent *bev, void *arg)
{
	struct lg_conn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	int r;

	if (c->setup != LG_S_NONE) {
		lg_tunnel_read(c, in);
		return;
	}
	if (!c->in_flight && c->state != LG_HOLD) {
		evbuffer_drain(in, evbuffer_get_length(in));
		return;
	}
	if (c->state == LG_HOLD) {
		c->lg->held--;
		c->lg->held_closed++;
		lg_conn_drop(c);
		return;
	}
	c->got_bytes = 1;
	r = lg_parse(c, in);
	if (r == 0)
		return;
	/* No pipelining is asked for, so bytes past the response are a framing error. */
	if (r == -1 || evbuffer_get_length(in) > 0) {
		lg_conn_done(c, LG_E_PARSE);
		return;
	}
	lg_conn_response(c);
}

void
lg_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct lg_conn *c = arg;
	int one = 1;

	if ((what & BEV_EVENT_CONNECTED) && c->connected) {
		c->tls_up = 1;
		c->lg->handshakes++;
		return;
	}
	if (what & BEV_EVENT_CONNECTED) {
		c->connected = 1;
		c->lg->connects++;
		setsockopt(bufferevent_getfd(bev), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		if (c->setup == LG_S_TCP)
			lg_conn_tls(c);
		return;
	}
	if (c->lg->ssl_ctx != NULL && c->setup == LG_S_NONE && !c->tls_up &&
	    !(what & BEV_EVENT_TIMEOUT)) {
		lg_tls_note(c->lg, bev);
		if (c->in_flight)
			lg_conn_done(c, LG_E_TLS);
		else
			lg_conn_drop(c);
		return;
	}
	if (c->state == LG_HOLD) {
		c->lg->held--;
		c->lg->held_closed++;
		lg_conn_drop(c);
		return;
	}
	if (!c->in_flight) {
		lg_conn_drop(c);
		return;
	}
	if ((what & BEV_EVENT_EOF) && c->state == LG_UNTIL_EOF) {
		lg_conn_drop(c);
		lg_conn_response(c);
	} else if (!(what & BEV_EVENT_TIMEOUT) && c->served > 0 && !c->got_bytes && !c->resent) {
		/*
		 * A reused connection the server closed before answering: what
		 * any HTTP client does is send the request again on a new
		 * connection, once. Some proxies close after every response
		 * without saying "Connection: close"; the latency then includes
		 * the wasted attempt, as a real client would see it.
		 */
		lg_conn_drop(c);
		c->resent = 1;
		c->lg->resends++;
		if (lg_conn_open(c) == 0)
			lg_conn_send(c);
	} else if (what & BEV_EVENT_TIMEOUT)
		lg_conn_done(c, LG_E_TIMEOUT);
	else if (!c->connected)
		lg_conn_done(c, LG_E_CONNECT);
	else
		lg_conn_done(c, LG_E_CLOSED);
}

/* Opens a new TCP connection for c; on failure the request is over with a connect error. */
static int
lg_conn_open(struct lg_conn *c)
{
	struct loadgen *lg = c->lg;
	struct timeval tv;

	c->bev =
	    bufferevent_socket_new(lg->base, -1, lg->ssl_ctx != NULL ? 0 : BEV_OPT_CLOSE_ON_FREE);
	if (c->bev == NULL) {
		lg_conn_done(c, LG_E_CONNECT);
		return -1;
	}
	if (lg->ssl_ctx != NULL)
		c->setup = lg->tunnel != NULL ? LG_S_TUNNEL : LG_S_TCP;
	bufferevent_setcb(c->bev, lg_read_cb, NULL, lg_event_cb, c);
	tv.tv_sec = (time_t)lg->timeout;
	tv.tv_usec = (suseconds_t)((lg->timeout - (double)tv.tv_sec) * 1e6);
	bufferevent_set_timeouts(c->bev, &tv, &tv);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
	if (bufferevent_socket_connect(c->bev, (struct sockaddr *)&lg->dst, sizeof lg->dst) == -1) {
		lg_conn_done(c, LG_E_CONNECT);
		return -1;
	}
	if (c->setup == LG_S_TUNNEL)
		bufferevent_write(c->bev, lg->tunnel, lg->tunnel_len);
	return 0;
}

/* Starts the next request, on the open connection or on a new one. */
static void
lg_conn_start(struct lg_conn *c)
{
	struct loadgen *lg = c->lg;

	if (lg->stopping || (lg->max_requests != 0 && lg->issued >= lg->max_requests))
		return;
	lg->issued++;
	c->in_flight = 1;
	c->state = LG_HEAD;
	c->status = 0;
	c->got_bytes = 0;
	c->resent = 0;
	c->start_ns = lg_now_ns();
	if (c->bev == NULL && lg_conn_open(c) == -1)
		return;
	lg_conn_send(c);
}

/*
 * Splits http[s]://AUTHORITY[/PATH] into authority and path; the authority
 * is checked later. *tls says which scheme it was.
 */
static const char *
lg_parse_url(const char *url, char *auth, size_t authsz, const char **path, int *tls)
{
	const char *host, *p;
	size_t n;

	if (strlen(url) > LG_URL_MAX)
		return "URL too long";
	if (strncmp(url, "http://", 7) == 0)
		host = url + 7;
	else if (strncmp(url, "https://", 8) == 0)
		host = url + 8;
	else
		return "URL must start with http:// or https://";
	*tls = host[-2] == '/' && host[-3] == ':' && host[-4] == 's';
	for (p = url; *p != '\0'; p++) {
		if ((unsigned char)*p <= ' ' || *p == 0x7f)
			return "URL has a space or control character";
	}
	n = strcspn(host, "/");
	*path = host[n] == '/' ? host + n : "/";
	if (n == 0 || n >= authsz)
		return "bad authority";
	memcpy(auth, host, n);
	auth[n] = '\0';
	return NULL;
}

/* Turns IPV4[:PORT] into a loopback socket address. */
const char *
lg_parse_addr(const char *s, int default_port, struct sockaddr_in *sin)
{
	char host[64];
	const char *colon;
	char *end;
	long port = default_port;
	size_t n;

	colon = strchr(s, ':');
	n = colon != NULL ? (size_t)(colon - s) : strlen(s);
	if (n == 0 || n >= sizeof host)
		return "bad address";
	memcpy(host, s, n);
	host[n] = '\0';
	if (colon != NULL) {
		errno = 0;
		port = strtol(colon + 1, &end, 10);
		if (errno != 0 || *end != '\0' || end == colon + 1 || port < 1 || port > 65535)
			return "bad port";
	}
	memset(sin, 0, sizeof *sin);
	sin->sin_family = AF_INET;
	sin->sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, host, &sin->sin_addr) != 1)
		return "host must be an IPv4 literal";
	if ((ntohl(sin->sin_addr.s_addr) >> 24) != 127)
		return "only loopback (127.0.0.0/8) targets are allowed";
	return NULL;
}

static double
lg_num(const char *opt, const char *s, double min, double max)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || end == s || *end != '\0' || !(v >= min && v <= max)) {
		fprintf(stderr, "loadgen: --%s %s: want a number in [%g, %g]\n", opt, s, min, max);
		exit(2);
	}
	return v;
}

static void
lg_usage(void)
{
	fprintf(
	    stderr,
	    "usage: loadgen --url http://127.0.0.1:PORT/PATH [--proxy 127.0.0.1:PORT]\n"
	    "               [--connections N] [--duration SECS] [--requests MAX]\n"
	    "               [--mode keepalive|close|idle] [--timeout SECS] [--name NAME] [--tag "
	    "TAG]\n"
	    "               [--ids FILE] [--pace SECS]\n"
	    "       loadgen --url https://HOST[:PORT]/PATH --cacert FILE\n"
	    "               [--proxy 127.0.0.1:PORT | --resolve 127.0.0.1] [options as above]\n");
	exit(2);
}

/*
 * Builds the one request every connection sends: origin-form, or
 * absolute-form via a proxy; inside TLS always origin-form, and through a
 * proxy the CONNECT that opens each tunnel.
 */
static void
lg_build_request(struct loadgen *lg, const char *url, const char *auth, const char *path,
                 int via_proxy, int port)
{
	const char *target = via_proxy && lg->ssl_ctx == NULL ? url : path;
	int n, at = 0;

	n = asprintf(&lg->request,
	             "GET %s%s%s%s%n HTTP/1.1\r\nHost: %s\r\nUser-Agent: loadgen\r\n%s\r\n", target,
	             lg->tag == NULL || target[strlen(target) - 1] == '/' ? "" : "/",
	             lg->tag != NULL ? lg->tag : "", lg->tag != NULL ? "-" : "", &at, auth,
	             lg->mode == LG_CLOSE ? "Connection: close\r\n" : "");
	if (n < 0)
		lg_die("out of memory");
	lg->request_len = (size_t)n;
	lg->tag_at = (size_t)at;
	if (lg->ssl_ctx == NULL || !via_proxy)
		return;
	n = asprintf(&lg->tunnel,
	             "CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\nUser-Agent: loadgen\r\n\r\n",
	             lg->host, port, lg->host, port);
	if (n < 0)
		lg_die("out of memory");
	lg->tunnel_len = (size_t)n;
}

static void
lg_parse_args(struct loadgen *lg, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"url", required_argument, NULL, 'u'},
	    {"proxy", required_argument, NULL, 'p'},
	    {"connections", required_argument, NULL, 'c'},
	    {"duration", required_argument, NULL, 'd'},
	    {"requests", required_argument, NULL, 'n'},
	    {"mode", required_argument, NULL, 'm'},
	    {"timeout", required_argument, NULL, 't'},
	    {"name", required_argument, NULL, 'N'},
	    {"cacert", required_argument, NULL, 'C'},
	    {"resolve", required_argument, NULL, 'R'},
	    {"tag", required_argument, NULL, 'T'},
	    {"ids", required_argument, NULL, 'I'},
	    {"pace", required_argument, NULL, 'P'},
	    {NULL, 0, NULL, 0},
	};
	const char *url = NULL, *proxy = NULL, *path, *err, *cafile = NULL, *resolve = NULL,
	           *ids = NULL;
	struct sockaddr_in origin;
	char auth[300];
	int ch, tls = 0, port = 0;

	lg->nconns = 1;
	lg->duration = 10;
	lg->timeout = 5;
	lg->mode = LG_KEEPALIVE;
	lg->name = "loadgen";
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (ch) {
		case 'u':
			url = optarg;
			break;
		case 'p':
			proxy = optarg;
			break;
		case 'c':
			lg->nconns = (int)lg_num("connections", optarg, 1, 50000);
			break;
		case 'd':
			lg->duration = lg_num("duration", optarg, 0.01, 3600);
			break;
		case 'n':
			lg->max_requests = (uint64_t)lg_num("requests", optarg, 0, 1e12);
			break;
		case 'm':
			if (strcmp(optarg, "keepalive") == 0)
				lg->mode = LG_KEEPALIVE;
			else if (strcmp(optarg, "close") == 0)
				lg->mode = LG_CLOSE;
			else if (strcmp(optarg, "idle") == 0)
				lg->mode = LG_IDLE;
			else
				lg_usage();
			break;
		case 't':
			lg->timeout = lg_num("timeout", optarg, 0.01, 600);
			break;
		case 'N':
			lg->name = optarg;
			break;
		case 'C':
			cafile = optarg;
			break;
		case 'R':
			resolve = optarg;
			break;
		case 'T':
			if (optarg[strspn(optarg, "abcdefghijklmnopqrstuvwxyz0123456789_")] != '\0')
				lg_die("--tag takes letters, digits and _");
			lg->tag = optarg;
			break;
		case 'I':
			ids = optarg;
			break;
		case 'P':
			lg->pace = lg_num("pace", optarg, 0, 60);
			break;
		default:
			lg_usage();
		}
	}
	if (optind != argc || url == NULL)
		lg_usage();
	if (ids != NULL && lg->tag == NULL)
		lg_die("--ids needs --tag");
	if (ids != NULL && (lg->ids_out = fopen(ids, "w")) == NULL)
		lg_die("--ids: cannot open the file");
	if ((err = lg_parse_url(url, auth, sizeof auth, &path, &tls)) != NULL ||
	    (!tls && (err = lg_parse_addr(auth, 80, &origin)) != NULL)) {
		fprintf(stderr, "loadgen: --url %s: %s\n", url, err);
		exit(2);
	}
	if (tls != (cafile != NULL))
		lg_die("https needs --cacert (certificates are always verified); http takes none");
	if (!tls && resolve != NULL)
		lg_die("--resolve is for https by name");
	if (!tls)
		lg->dst = origin;
	if (proxy != NULL && (err = lg_parse_addr(proxy, 0, &lg->dst)) != NULL) {
		fprintf(stderr, "loadgen: --proxy %s: %s\n", proxy, err);
		exit(2);
	}
	if (proxy != NULL && lg->dst.sin_port == 0)
		lg_die("--proxy needs a port");
	if (tls) {
		port = lg_setup_https(lg, auth, resolve, url);
		lg_setup_ssl(lg, cafile);
	}
	if (lg->mode == LG_IDLE)
		lg->max_requests = 0; /* one request per connection, then it is parked */
	lg_build_request(lg, url, auth, path, proxy != NULL, port);
}

/* Each connection needs a descriptor: raise the soft limit as far as the hard one allows. */
static void
lg_raise_nofile(int nconns)
{
	struct rlimit rl;
	rlim_t want = (rlim_t)nconns + 64;

	if (getrlimit(RLIMIT_NOFILE, &rl) == -1 || rl.rlim_cur >= want)
		return;
	rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= want ? want : rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
	if (rl.rlim_cur < want)
		fprintf(stderr, "loadgen: descriptor limit %llu is below %llu: expect errors\n",
		        (unsigned long long)rl.rlim_cur, (unsigned long long)want);
}

static void
lg_report(struct loadgen *lg)
{
	static const char *const modes[] = {"keepalive", "close", "idle"};
	double secs = (double)(lg->t_end - lg->t_start) / 1e9;
	double rps = secs > 0 ? (double)lg->completed / secs : 0;
	double p50 = lg_hist_pct(&lg->hist, 50) / 1e6, p90 = lg_hist_pct(&lg->hist, 90) / 1e6;
	double p99 = lg_hist_pct(&lg->hist, 99) / 1e6, max = lg->hist.max / 1e6;
	double mibs = secs > 0 ? (double)lg->body_bytes / 1048576.0 / secs : 0;
	int i, tls = lg->ssl_ctx != NULL;

	/* The tls error kind and the TLS figures appear for https only: http output is unchanged. */
	printf("%s: %" PRIu64 " ok in %.2f s = %.1f req/s; latency ms p50 %.3f p90 %.3f "
	       "p99 %.3f max %.3f; errors %" PRIu64 " (",
	       lg->name, lg->completed, secs, rps, p50, p90, p99, max, lg_errors(lg));
	for (i = 0; i < (tls ? LG_E_MAX : LG_E_TLS); i++)
		printf("%s%s %" PRIu64, i ? " " : "", lg_err_names[i], lg->errors[i]);
	printf("); %" PRIu64 " connects, %" PRIu64 " resends", lg->connects, lg->resends);
	if (tls)
		printf("; %" PRIu64 " TLS handshakes, body %.1f MiB/s", lg->handshakes, mibs);
	printf("\n");
	printf("RESULT name=%s mode=%s conns=%d secs=%.2f requests=%" PRIu64 " rps=%.1f "
	       "p50_ms=%.3f p90_ms=%.3f p99_ms=%.3f max_ms=%.3f errors=%" PRIu64
	       " connects=%" PRIu64 " resends=%" PRIu64,
	       lg->name, modes[lg->mode], lg->nconns, secs, lg->completed, rps, p50, p90, p99, max,
	       lg_errors(lg), lg->connects, lg->resends);
	if (lg->mode == LG_IDLE)
		printf(" held=%d not_kept=%d held_closed=%d", lg->held, lg->not_kept,
		       lg->held_closed);
	if (lg->tag != NULL)
		printf(" tag=%s ids=%" PRIu64, lg->tag, lg->ids);
	if (tls)
		printf(" tls=1 handshakes=%" PRIu64 " body_bytes=%" PRIu64 " mib_s=%.1f",
		       lg->handshakes, lg->body_bytes, mibs);
	printf("\n");
	fflush(stdout);
}

int
main(int argc, char **argv)
{
	struct loadgen lg;
	struct timeval tv;
	uint64_t errors;
	int i;

	memset(&lg, 0, sizeof lg);
	lg_parse_args(&lg, argc, argv);
	signal(SIGPIPE, SIG_IGN);
	lg_raise_nofile(lg.nconns);
	if ((lg.base = event_base_new()) == NULL)
		lg_die("event_base_new failed");
	lg.conns = lg_calloc((size_t)lg.nconns, sizeof *lg.conns);

	/* Stop timer first: the run is bounded by --duration whatever else happens. */
	tv.tv_sec = (time_t)lg.duration;
	tv.tv_usec = (suseconds_t)((lg.duration - (double)tv.tv_sec) * 1e6);
	lg.stop_ev = evtimer_new(lg.base, lg_stop_cb, &lg);
	lg.sigint_ev = evsignal_new(lg.base, SIGINT, lg_stop_cb, &lg);
	lg.sigterm_ev = evsignal_new(lg.base, SIGTERM, lg_stop_cb, &lg);
	if (lg.stop_ev == NULL || lg.sigint_ev == NULL || lg.sigterm_ev == NULL ||
	    evtimer_add(lg.stop_ev, &tv) == -1 || evsignal_add(lg.sigint_ev, NULL) == -1 ||
	    evsignal_add(lg.sigterm_ev, NULL) == -1)
		lg_die("cannot set up events");

	lg.t_start = lg_now_ns();
	for (i = 0; i < lg.nconns; i++) {
		lg.conns[i].lg = &lg;
		if ((lg.conns[i].retry = evtimer_new(lg.base, lg_retry_cb, &lg.conns[i])) == NULL)
			lg_die("cannot set up events");
	}
	for (i = 0; i < lg.nconns && !lg.stopping; i++)
		lg_conn_start(&lg.conns[i]);
	if (!lg.stopping)
		event_base_dispatch(lg.base);
	if (lg.t_end == 0)
		lg.t_end = lg_now_ns();

	lg_report(&lg);
	errors = lg_errors(&lg);
	for (i = 0; i < lg.nconns; i++) {
		lg_conn_drop(&lg.conns[i]);
		event_free(lg.conns[i].retry);
	}
	free(lg.conns);
	if (lg.ids_out != NULL && fclose(lg.ids_out) != 0)
		lg_die("--ids: cannot write the file");
	free(lg.request);
	free(lg.tunnel);
	SSL_CTX_free(lg.ssl_ctx);
	event_free(lg.stop_ev);
	event_free(lg.sigint_ev);
	event_free(lg.sigterm_ev);
	event_base_free(lg.base);
	if (lg.completed == 0 || errors * 100 > lg.completed + errors)
		return 1;
	return 0;
}
