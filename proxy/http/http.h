/*
 * HTTP/1.1 as bytes (RFC 9112): the request and response parser, request
 * targets, chunked bodies and the serialisers egressd forwards with. Pure
 * code over buffers: no sockets, no event loop, no connection types.
 */
#ifndef HTTP_H
#define HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"

/* http.c */
#define HTTP_LENGTH_MAX (UINT64_C(1) << 62) /* larger lengths are refused */

/* Size limits; http_limits_default holds the safe defaults. */
struct http_limits {
	size_t start_line;      /* request or status line, CRLF excluded */
	size_t header_line;     /* one field line, CRLF excluded */
	size_t head;            /* whole head with its final empty line */
	size_t headers;         /* field lines in a head, and trailer lines */
	size_t chunk_line;      /* chunk size line with its extensions */
	size_t chunk_ext_total; /* extension bytes over one whole body */
};
extern const struct http_limits http_limits_default;

enum http_parse {
	HTTP_PARSE_ERROR = -1, /* error_status and error set */
	HTTP_PARSE_INCOMPLETE, /* call again with the same bytes and more */
	HTTP_PARSE_DONE,       /* head_len bytes consumed */
};

/* How a body is delimited (RFC 9112 §6.3). */
enum http_body {
	HTTP_BODY_NONE,
	HTTP_BODY_LENGTH, /* length bytes; may be 0 */
	HTTP_BODY_CHUNKED,
	HTTP_BODY_CLOSE, /* until the server closes; responses only */
};

/* The request methods egressd tells apart, known by number once parsed (case-sensitive). */
enum http_method {
	HTTP_M_OTHER, /* any other token, forwarded as written */
	HTTP_M_GET,
	HTTP_M_HEAD,
	HTTP_M_POST,
	HTTP_M_PUT,
	HTTP_M_DELETE,
	HTTP_M_CONNECT,
	HTTP_M_OPTIONS,
	HTTP_M_TRACE,
	HTTP_M_PATCH,
};

enum http_target_form {
	HTTP_TARGET_ORIGIN,    /* /path?q */
	HTTP_TARGET_ABSOLUTE,  /* http://host[:port]/path?q */
	HTTP_TARGET_AUTHORITY, /* host:port, CONNECT only */
	HTTP_TARGET_ASTERISK,  /* *, OPTIONS only */
};

struct http_target {
	enum http_target_form form;
	char *scheme;    /* "http" or "https"; absolute-form only */
	char *authority; /* host[:port] as written; absolute and authority forms */
	char *host;      /* raw host, an IPv6 address with its brackets */
	uint16_t port;   /* explicit or the scheme's default; 0 if no authority */
	int port_explicit;
	char *path; /* path and query, at least "/"; origin and absolute forms */
	char *mem;  /* the one allocation the strings above live in */
};

/* The fields the proxy itself reads or drops, known by number once parsed. */
enum http_field {
	HF_OTHER,
	HF_CONNECTION,
	HF_KEEP_ALIVE,
	HF_PROXY_CONNECTION,
	HF_PROXY_AUTHORIZATION,
	HF_PROXY_AUTHENTICATE,
	HF_TE,
	HF_TRAILER,
	HF_TRANSFER_ENCODING,
	HF_UPGRADE,
	HF_CONTENT_LENGTH,
	HF_HOST,
	HF_VIA,
	HF_EXPECT,
	HF_CONTENT_ENCODING,
	HF_CONTENT_TYPE,
	HF_X_HTTP_METHOD_OVERRIDE, /* the three method overrides the policy reads */
	HF_X_HTTP_METHOD,
	HF_X_METHOD_OVERRIDE,
	HF_SEC_WEBSOCKET_PROTOCOL,
	HF_SEC_WEBSOCKET_EXTENSIONS, /* left out where egressd reads the frames */
	HF_COUNT
};
#define HF_BIT(id) (1u << (id))

struct http_header {
	const char *name;  /* as received */
	const char *value; /* OWS trimmed */
	size_t name_len;
	size_t value_len;
	enum http_field id;
};

struct http_msg {
	char *head;         /* copy of the head, split in place, in headers' allocation */
	size_t head_len;    /* bytes of input the head took */
	int version;        /* 10 or 11 */
	const char *method; /* requests */
	enum http_method method_id;
	const char *target;
	struct http_target uri;
	int status; /* responses */
	const char *reason;
	struct http_header *headers;
	size_t nheaders;
	unsigned fields; /* HF_BIT of every known field present */
	enum http_body body;
	uint64_t length;     /* HTTP_BODY_LENGTH, or HTTP_F_HAS_LENGTH */
	char *codings;       /* response transfer codings besides chunked */
	const char *upgrade; /* first Upgrade value, or NULL */
	int flags;
#define HTTP_F_KEEP_ALIVE      0x1
#define HTTP_F_EXPECT_CONTINUE 0x2 /* HTTP/1.1 request with Expect: 100-continue */
#define HTTP_F_UPGRADE         0x4 /* Upgrade present and named in Connection */
#define HTTP_F_HAS_LENGTH      0x8 /* bodiless HEAD or 304 response stating a length */
	int error_status;          /* on HTTP_PARSE_ERROR: status to answer */
	const char *error;         /* on HTTP_PARSE_ERROR: static reason */
	size_t scan_pos;           /* where the search for the head's end resumes */
	size_t scan_line;
	size_t scan_lines;
	size_t scan_skip;
};

#define HTTP_SER_KEEP_ALIVE 0x1 /* keep the connection; else Connection: close */
#define HTTP_SER_UPGRADE    0x2 /* forward Upgrade and Connection: upgrade */
#define HTTP_SER_NO_WS_EXT  0x4 /* leave Sec-WebSocket-Extensions out: frames stay readable */

void http_msg_init(struct http_msg *);
void http_msg_free(struct http_msg *);
enum http_parse http_parse_request(const char *, size_t, const struct http_limits *,
                                   struct http_msg *);
enum http_parse http_parse_response(const char *, size_t, const struct http_limits *,
                                    enum http_method, struct http_msg *);
enum http_method http_method_id(const char *, size_t);
const char *http_msg_header(const struct http_msg *, const char *);
const char *http_field_value(const struct http_msg *, enum http_field);
enum http_field http_field_id(const char *, size_t);
int http_list_has(const char *, const char *);
int http_visible(const char *);

/* http_serialize.c */
int http_request_serialize(const struct http_msg *, const char *, const char *, int, struct buf *);
int http_response_serialize(const struct http_msg *, int, int, struct buf *, enum http_body *);

/* http_target.c */
const char *http_target_parse(enum http_method, const char *, struct http_target *);
void http_target_free(struct http_target *);
const char *http_target_authority(const char *, size_t, int, size_t *, uint16_t *);

/* chunked.c */
enum chunked_result {
	CHUNKED_ERROR = -1, /* error set; the body is unusable */
	CHUNKED_MORE,       /* feed the rest of the bytes, or more */
	CHUNKED_DONE,       /* last chunk and trailers read */
};

struct chunked {
	int state;
	uint64_t size;     /* the chunk size being read */
	uint64_t left;     /* data bytes left in this chunk */
	uint64_t body_len; /* data bytes so far */
	size_t digits;
	size_t line_len; /* bytes of the current size or trailer line */
	size_t ext_total;
	size_t trailer_len;
	size_t trailers;
	size_t max_line; /* from the limits */
	size_t max_ext_total;
	size_t max_field_line;
	size_t max_trailer_len;
	size_t max_trailers;
	const char *error;
};

#define CHUNKED_HEAD_MAX 19 /* 16 hex digits and CRLF, NUL */

void chunked_init(struct chunked *, const struct http_limits *);
enum chunked_result chunked_feed(struct chunked *, const char *, size_t, size_t *, const char **,
                                 size_t *);
size_t chunked_head(char[CHUNKED_HEAD_MAX], uint64_t);
void chunked_write(struct buf *, const void *, size_t);
void chunked_write_last(struct buf *);

#endif
