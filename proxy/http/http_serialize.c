/*
 * Heads written back out (http.c reads them): a request or response head
 * serialised afresh from its parsed form, with the end-to-end fields in
 * their order, the hop-by-hop ones and the framing left out, and framing,
 * Host, Via and Upgrade stated by egressd itself, so that nothing two
 * implementations could read differently is passed on as it came.
 */
#include <string.h>

#include "http.h"

/*
 * Fields never copied from one side to the other: the hop-by-hop ones, the
 * framing the proxy states itself, and Host and Via, which it re-states.
 */
#define HF_RESTATED                                                                                \
	(HF_BIT(HF_CONNECTION) | HF_BIT(HF_KEEP_ALIVE) | HF_BIT(HF_PROXY_CONNECTION) |             \
	 HF_BIT(HF_PROXY_AUTHORIZATION) | HF_BIT(HF_PROXY_AUTHENTICATE) | HF_BIT(HF_TE) |          \
	 HF_BIT(HF_TRAILER) | HF_BIT(HF_TRANSFER_ENCODING) | HF_BIT(HF_UPGRADE) |                  \
	 HF_BIT(HF_CONTENT_LENGTH) | HF_BIT(HF_HOST) | HF_BIT(HF_VIA))

/* Whether a field is left out of a re-serialised head. */
static int
http_dropped(const struct http_msg *msg, const struct http_header *h)
{
	size_t i;

	if (HF_BIT(h->id) & HF_RESTATED)
		return 1;
	if (!(msg->fields & HF_BIT(HF_CONNECTION)))
		return 0;
	for (i = 0; i < msg->nheaders; i++) {
		if (msg->headers[i].id == HF_CONNECTION &&
		    http_list_has(msg->headers[i].value, h->name))
			return 1;
	}
	return 0;
}

/*
 * The end-to-end fields in their order but those in drop (HF_BIT mask),
 * then Via with this hop appended (one line: the earlier values joined),
 * then Upgrade when asked for.
 */
static void
http_add_fields(const struct http_msg *msg, int upgrade, unsigned drop, struct buf *out)
{
	const struct http_header *h;
	size_t i;

	for (i = 0; i < msg->nheaders; i++) {
		h = &msg->headers[i];
		if ((HF_BIT(h->id) & drop) || http_dropped(msg, h))
			continue;
		/* RFC 9110 §10.1.1: an HTTP/1.0 expectation is ignored. */
		if (msg->version == 10 && h->id == HF_EXPECT)
			continue;
		buf_add(out, h->name, h->name_len);
		buf_add(out, ": ", 2);
		buf_add(out, h->value, h->value_len);
		buf_add(out, "\r\n", 2);
	}
	buf_adds(out, "Via: ");
	for (i = 0; i < msg->nheaders && (msg->fields & HF_BIT(HF_VIA)); i++) {
		h = &msg->headers[i];
		if (h->id == HF_VIA && *h->value != '\0') {
			buf_add(out, h->value, h->value_len);
			buf_add(out, ", ", 2);
		}
	}
	buf_adds(out, msg->version == 10 ? "1.0 egressd\r\n" : "1.1 egressd\r\n");
	if (!upgrade)
		return;
	for (i = 0; i < msg->nheaders; i++) {
		h = &msg->headers[i];
		if (h->id == HF_UPGRADE)
			buf_printf(out, "Upgrade: %s\r\n", h->value);
	}
	buf_adds(out, "Connection: upgrade\r\n");
}

static void
http_add_length(struct buf *out, uint64_t length)
{
	char num[24];

	buf_adds(out, "Content-Length: ");
	buf_add(out, num, str_u64(num, length));
	buf_add(out, "\r\n", 2);
}

/*
 * Append the head to send upstream for a parsed request: target (NULL:
 * the request's path and query, or its target if it has no path) and host
 * (NULL: the target's authority, else the client's Host) are the caller's.
 * Always HTTP/1.1; Connection: close unless HTTP_SER_KEEP_ALIVE; framing
 * re-stated from msg->body. Returns -1, appending nothing, if there is no
 * host or target or either has a byte that does not belong in a head.
 */
int
http_request_serialize(const struct http_msg *msg, const char *target, const char *host, int flags,
                       struct buf *out)
{
	int upgrade = (flags & HTTP_SER_UPGRADE) && (msg->flags & HTTP_F_UPGRADE);

	if (target == NULL)
		target = msg->uri.path != NULL ? msg->uri.path : msg->target;
	if (host == NULL)
		host = msg->uri.authority != NULL ? msg->uri.authority
		                                  : http_field_value(msg, HF_HOST);
	if (msg->method == NULL || target == NULL || host == NULL || !http_visible(target) ||
	    !http_visible(host))
		return -1;
	/* Sized once from the head received: the one copied is about as long. */
	buf_reserve(out, msg->head_len + strlen(target) + strlen(host) + 64);
	buf_adds(out, msg->method);
	buf_addc(out, ' ');
	buf_adds(out, target);
	buf_adds(out, " HTTP/1.1\r\nHost: ");
	buf_adds(out, host);
	buf_add(out, "\r\n", 2);
	http_add_fields(msg, upgrade,
	                (flags & HTTP_SER_NO_WS_EXT) ? HF_BIT(HF_SEC_WEBSOCKET_EXTENSIONS) : 0,
	                out);
	if (!upgrade && !(flags & HTTP_SER_KEEP_ALIVE))
		buf_adds(out, "Connection: close\r\n");
	if (msg->body == HTTP_BODY_LENGTH)
		http_add_length(out, msg->length);
	else if (msg->body == HTTP_BODY_CHUNKED)
		buf_adds(out, "Transfer-Encoding: chunked\r\n");
	buf_adds(out, "\r\n");
	return 0;
}

/*
 * Append the head to send a client of HTTP version client_version (10 or
 * 11) for a parsed response, and set *body to how the proxy must frame the
 * body it forwards. A chunked or close-delimited body goes to an HTTP/1.1
 * client chunked (so its connection can stay open) and to an HTTP/1.0
 * client close-delimited; a close-delimited body forces Connection: close.
 * Returns -1, appending nothing, for what an HTTP/1.0 client cannot be
 * sent: an interim (1xx) response, or a body with transfer codings.
 */
int
http_response_serialize(const struct http_msg *msg, int client_version, int flags, struct buf *out,
                        enum http_body *bodyp)
{
	enum http_body body = msg->body;
	int upgrade, close = !(flags & HTTP_SER_KEEP_ALIVE);

	upgrade = (flags & HTTP_SER_UPGRADE) && (msg->flags & HTTP_F_UPGRADE);
	if (body == HTTP_BODY_CHUNKED || body == HTTP_BODY_CLOSE)
		body = client_version == 11 ? HTTP_BODY_CHUNKED : HTTP_BODY_CLOSE;
	if (client_version != 11 && (msg->status < 200 || msg->codings != NULL))
		return -1;
	if (body == HTTP_BODY_CLOSE)
		close = 1;
	buf_reserve(out, msg->head_len + 64);
	/* The status is three digits: the parser accepts nothing else. */
	buf_adds(out, "HTTP/1.1 ");
	buf_addc(out, (char)('0' + msg->status / 100 % 10));
	buf_addc(out, (char)('0' + msg->status / 10 % 10));
	buf_addc(out, (char)('0' + msg->status % 10));
	buf_addc(out, ' ');
	buf_adds(out, msg->reason);
	buf_add(out, "\r\n", 2);
	http_add_fields(msg, upgrade, 0, out);
	if (!upgrade && msg->status >= 200) {
		if (close)
			buf_adds(out, "Connection: close\r\n");
		else if (client_version != 11)
			buf_adds(out, "Connection: keep-alive\r\n");
	}
	if (body == HTTP_BODY_LENGTH || (msg->flags & HTTP_F_HAS_LENGTH))
		http_add_length(out, msg->length);
	else if (body == HTTP_BODY_CHUNKED)
		buf_printf(out, "Transfer-Encoding: %s%schunked\r\n",
		           msg->codings != NULL ? msg->codings : "",
		           msg->codings != NULL ? ", " : "");
	buf_adds(out, "\r\n");
	*bodyp = body;
	return 0;
}
