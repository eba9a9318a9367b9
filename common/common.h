/*
 * Helpers every module needs: allocation that aborts on exhaustion, the
 * diagnostic log, a growable byte buffer, numbers and bytes written as
 * text, the UTF-8, hex digit and HTTP token checks parsers share, JSON
 * string escaping, time, listening-socket addresses, and slabs of
 * fixed-size objects.
 */
#ifndef COMMON_H
#define COMMON_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <sys/socket.h>

#define EG_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define EG_NORETURN     __attribute__((noreturn))
#define EG_NELEM(a)     (sizeof(a) / sizeof((a)[0]))

/* xmalloc.c */
void *xmalloc(size_t);
void *xcalloc(size_t, size_t);
void *xreallocarray(void *, size_t, size_t);
char *xstrdup(const char *);
char *xstrndup(const char *, size_t);
char *xasprintf(const char *, ...) EG_PRINTF(1, 2);

/* str.c */
size_t str_copy(char *, size_t, const char *);
size_t str_u64(char *, uint64_t);
size_t str_ipv4(char *, const uint8_t[4]);
size_t str_hex(char *, const void *, size_t);

/* text.c */
size_t text_utf8_len(const unsigned char *, size_t);
int text_hex_value(int);
int text_http_tchar(int);
int text_http_token(const char *, size_t);

/* slab.c */
#define SLAB_CHUNK 65536u
struct slab_chunk;
struct slab {
	size_t size;   /* of an object */
	size_t stride; /* between slots */
	size_t per_chunk;
	struct slab_chunk *avail; /* chunks with a free slot */
	struct slab_chunk *spare; /* empty chunks, until slab_trim */
	size_t nspare;
	size_t nchunks; /* mapped, the spares included */
	size_t live;    /* objects allocated and not freed */
};
void slab_init(struct slab *, size_t);
void *slab_alloc(struct slab *);
void slab_free(struct slab *, void *);
void slab_trim(struct slab *, size_t);
void slab_release(struct slab *);

/* log.c */
enum log_level {
	LOG_LVL_ERR,
	LOG_LVL_WARN,
	LOG_LVL_INFO,
	LOG_LVL_DEBUG,
};
extern int log_verbosity; /* the one global: read by log_debug before formatting */
void log_init(const char *, int);
void log_warn(const char *, ...) EG_PRINTF(1, 2);
void log_warnx(const char *, ...) EG_PRINTF(1, 2);
void log_info(const char *, ...) EG_PRINTF(1, 2);
void log_debug_(const char *, ...) EG_PRINTF(1, 2);
#define log_debug(...)                                                                             \
	do {                                                                                       \
		if (log_verbosity >= LOG_LVL_DEBUG)                                                \
			log_debug_(__VA_ARGS__);                                                   \
	} while (0)
void fatal(const char *, ...) EG_PRINTF(1, 2) EG_NORETURN;
void fatalx(const char *, ...) EG_PRINTF(1, 2) EG_NORETURN;

/* buf.c */
struct buf {
	char *data; /* always NUL-terminated when cap > 0 */
	size_t len;
	size_t cap;
};
void buf_init(struct buf *);
void buf_free(struct buf *);
void buf_reset(struct buf *);
void buf_grow(struct buf *, size_t);
/*
 * Room for n more bytes and the NUL. Inline: the audit line and the HTTP
 * head are made of many short appends, nearly all of which fit.
 */
static inline void
buf_reserve(struct buf *b, size_t n)
{
	if (n >= b->cap - b->len) /* cap > len whenever cap > 0 */
		buf_grow(b, n);
}
static inline void
buf_add(struct buf *b, const void *p, size_t n)
{
	buf_reserve(b, n);
	if (n > 0)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
}
static inline void
buf_addc(struct buf *b, char c)
{
	buf_reserve(b, 1);
	b->data[b->len++] = c;
	b->data[b->len] = '\0';
}
/* Inline so that the length of a literal is known when compiling. */
static inline void
buf_adds(struct buf *b, const char *s)
{
	buf_add(b, s, strlen(s));
}
void buf_printf(struct buf *, const char *, ...) EG_PRINTF(2, 3);
void buf_vprintf(struct buf *, const char *, va_list) EG_PRINTF(2, 0);
const char *buf_cstr(struct buf *);
char *buf_release(struct buf *);

/* json.c */
void json_escape(struct buf *, const char *, size_t);
void json_escape_str(struct buf *, const char *);

/* timeutil.c */
void time_rfc3339_ms(const struct timespec *, char[32]);
uint64_t time_mono_ms(void);
uint64_t time_mono_us(void);

/* sock.c */
const char *sock_parse(const char *, int, struct sockaddr_storage *, socklen_t *);
int sock_addr_is_loopback(const struct sockaddr_storage *);
int sock_is_loopback(int);
int sock_listen(const struct sockaddr_storage *, socklen_t, int, int);
void sock_text(const struct sockaddr_storage *, char *, size_t);
void sock_local_text(int, char *, size_t);
int sock_inherited(const char *, int, int);

#endif
