/*
 * Loads third-party blocklists (network.blocklistFiles) into a domain set.
 * People publish them in three shapes, and one file may mix them, so the
 * format is decided line by line: hosts files ("0.0.0.0 ads.example.com"),
 * one name per line ("ads.example.com", "*.example.com") and adblock domain
 * rules ("||ads.example.com^", the name and all its subdomains). Other
 * adblock rules (exceptions "@@", "$" options, "##" cosmetic rules, paths,
 * regexes) do not name a domain and are counted as invalid, never guessed
 * at. Invalid lines are counted and skipped; only an unreadable file fails.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "policy_int.h"

#define LISTFILE_MAX_SIZE ((off_t)512 << 20)
#define LISTFILE_MAX_LINE 4096
#define LISTFILE_CHUNK    (1 << 20)

struct listfile {
	struct domain_set *set;
	const char *path;
	struct listfile_stats *stats;
	unsigned long line;
};

/* Names every stock hosts file carries; they are not blocklist entries. */
static const char *listfile_boilerplate[] = {
    "0.0.0.0",         "broadcasthost",
    "ip6-allhosts",    "ip6-allnodes",
    "ip6-allrouters",  "ip6-localhost",
    "ip6-localnet",    "ip6-loopback",
    "ip6-mcastprefix", "local",
    "localhost",       "localhost.localdomain",
    "localhost4",      "localhost4.localdomain4",
    "localhost6",      "localhost6.localdomain6",
};

static void
listfile_invalid(struct listfile *lf)
{
	struct listfile_stats *st = lf->stats;

	if (st->invalid < LISTFILE_SHOW_INVALID)
		st->first_invalid[st->invalid] = lf->line;
	st->invalid++;
}

static int
listfile_is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

static int
listfile_is_boilerplate(const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < EG_NELEM(listfile_boilerplate); i++) {
		if (strlen(listfile_boilerplate[i]) == len &&
		    strncasecmp(listfile_boilerplate[i], name, len) == 0)
			return 1;
	}
	return 0;
}

/* Whether a token is an IP address, the first field of a hosts line. */
static int
listfile_is_addr(const char *s, size_t len)
{
	char text[64];
	struct addr a;

	if ((len == 7 && memcmp(s, "0.0.0.0", 7) == 0) ||
	    (len == 9 && memcmp(s, "127.0.0.1", 9) == 0))
		return 1;
	if (len >= sizeof text || (memchr(s, ':', len) == NULL && (s[0] < '0' || s[0] > '9')))
		return 0;
	memcpy(text, s, len);
	text[len] = '\0';
	/* Stock hosts files carry "fe80::1%lo0 localhost". */
	text[strcspn(text, "%")] = '\0';
	return addr_parse(text, &a) == NULL;
}

/* "||name^": the name and everything under it. */
static int
listfile_adblock(struct listfile *lf, const char *p, size_t len)
{
	if (len < 4 || p[len - 1] != '^')
		return -1;
	if (domain_set_add_kind(lf->set, DOMAIN_TREE, p + 2, len - 3, lf->path,
	                        (unsigned)lf->line) != NULL)
		return -1;
	return 0;
}

/* "address name...": every name but the boilerplate is an exact entry. */
static int
listfile_hosts(struct listfile *lf, const char *p, size_t len)
{
	size_t i = 0, start;
	int bad = 0;

	while (i < len) {
		while (i < len && listfile_is_space(p[i]))
			i++;
		start = i;
		while (i < len && !listfile_is_space(p[i]))
			i++;
		if (i == start || listfile_is_boilerplate(p + start, i - start))
			continue;
		if (domain_set_add_kind(lf->set, DOMAIN_EXACT, p + start, i - start, lf->path,
		                        (unsigned)lf->line) != NULL)
			bad = 1;
	}
	return bad ? -1 : 0;
}

/* Returns -1 for a line that holds something other than entries and comments. */
static int
listfile_parse(struct listfile *lf, const char *p, size_t len)
{
	enum domain_kind kind = DOMAIN_EXACT;
	const char *hash;
	size_t i;

	if (memchr(p, '\0', len) != NULL)
		return -1;
	while (len > 0 && listfile_is_space(p[0])) {
		p++;
		len--;
	}
	while (len > 0 && listfile_is_space(p[len - 1]))
		len--;
	if (len == 0 || p[0] == '#' || p[0] == '!')
		return 0;
	if (p[0] == '[')
		return len >= 8 && strncasecmp(p, "[adblock", 8) == 0 ? 0 : -1;
	if (len >= 2 && p[0] == '|' && p[1] == '|')
		return listfile_adblock(lf, p, len);

	/* An inline comment starts at a '#' after a blank ("a.com ##x" is not one). */
	for (hash = p; (hash = memchr(hash, '#', len - (size_t)(hash - p))) != NULL; hash++) {
		if (listfile_is_space(hash[-1])) {
			len = (size_t)(hash - p);
			while (len > 0 && listfile_is_space(p[len - 1]))
				len--;
			break;
		}
	}
	for (i = 0; i < len && !listfile_is_space(p[i]); i++)
		;
	if (listfile_is_addr(p, i))
		return i == len ? -1 : listfile_hosts(lf, p + i, len - i);
	if (i < len)
		return -1;
	if (len >= 2 && p[0] == '*' && p[1] == '.') {
		kind = DOMAIN_WILDCARD;
		p += 2;
		len -= 2;
	}
	if (domain_set_add_kind(lf->set, kind, p, len, lf->path, (unsigned)lf->line) != NULL)
		return -1;
	return 0;
}

static void
listfile_line(struct listfile *lf, const char *p, size_t len)
{
	lf->line++;
	lf->stats->lines++;
	if (lf->line == 1 && len >= 3 && memcmp(p, "\xef\xbb\xbf", 3) == 0) {
		p += 3;
		len -= 3;
	}
	if (len > LISTFILE_MAX_LINE || listfile_parse(lf, p, len) == -1)
		listfile_invalid(lf);
}

static int
listfile_open(const char *path, struct listfile_stats *st, off_t *size)
{
	struct stat sb;
	int fd;

	/* O_NONBLOCK: a FIFO named in a config must not hang the loader. */
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) == -1) {
		snprintf(st->error, sizeof st->error, "cannot open: %s", strerror(errno));
		return -1;
	}
	if (fstat(fd, &sb) == -1) {
		snprintf(st->error, sizeof st->error, "cannot open: %s", strerror(errno));
		goto err;
	}
	if (S_ISDIR(sb.st_mode)) {
		snprintf(st->error, sizeof st->error, "is a directory");
		goto err;
	}
	if (!S_ISREG(sb.st_mode)) {
		snprintf(st->error, sizeof st->error, "not a regular file");
		goto err;
	}
	if (sb.st_size > LISTFILE_MAX_SIZE) {
		snprintf(st->error, sizeof st->error, "too large (over %lld MiB)",
		         (long long)(LISTFILE_MAX_SIZE >> 20));
		goto err;
	}
	*size = sb.st_size;
	return fd;
err:
	close(fd);
	return -1;
}

/*
 * How many entries a file of size bytes will hold, from its first bytes:
 * the lines there that are not blank or comments, scaled to the whole.
 * The set makes room for them at once instead of growing by steps.
 */
static size_t
listfile_estimate(const char *buf, size_t len, off_t size)
{
	const char *p = buf, *end = buf + len, *nl;
	size_t lines = 0;

	while (p < end) {
		if (*p != '\n' && *p != '\r' && *p != '#' && *p != '!')
			lines++;
		if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL)
			break;
		p = nl + 1;
	}
	if (len == 0 || (off_t)len >= size)
		return lines;
	return (size_t)((double)lines * (double)size / (double)len);
}

/*
 * Feeds every complete line of buf[0..len) to the parser and returns how
 * many bytes were consumed. *skipping marks a line already found too long,
 * whose rest is dropped up to its newline.
 */
static size_t
listfile_lines(struct listfile *lf, const char *buf, size_t len, int *skipping)
{
	const char *p = buf, *end = buf + len, *nl;

	while ((nl = memchr(p, '\n', (size_t)(end - p))) != NULL) {
		if (*skipping) {
			*skipping = 0;
			lf->line++;
			lf->stats->lines++;
			listfile_invalid(lf);
		} else
			listfile_line(lf, p, (size_t)(nl - p));
		p = nl + 1;
	}
	return (size_t)(p - buf);
}

/*
 * Adds the entries of the file at path to set. stats->entries counts the
 * entries the set did not hold yet (a name listed twice counts once). On
 * -1 (the file cannot be read, or grew past the cap while being read) the
 * set may hold part of the file: callers drop the set.
 */
int
listfile_load(struct domain_set *set, const char *path, struct listfile_stats *stats)
{
	struct listfile lf;
	char *buf = NULL;
	size_t have = 0, used, before;
	off_t total = 0, size = 0;
	ssize_t n;
	int fd, skipping = 0, rv = -1;

	memset(stats, 0, sizeof *stats);
	memset(&lf, 0, sizeof lf);
	lf.set = set;
	lf.path = path;
	lf.stats = stats;
	before = domain_set_count(set);
	if ((fd = listfile_open(path, stats, &size)) == -1)
		return -1;

	/* Lines never span more than one chunk: longer ones are skipped. */
	buf = xmalloc(LISTFILE_CHUNK + LISTFILE_MAX_LINE + 1);
	for (;;) {
		n = read(fd, buf + have, LISTFILE_CHUNK);
		if (n == -1 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n == -1) {
			snprintf(stats->error, sizeof stats->error, "read error: %s",
			         strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		if ((total += n) > LISTFILE_MAX_SIZE) {
			snprintf(stats->error, sizeof stats->error, "too large (over %lld MiB)",
			         (long long)(LISTFILE_MAX_SIZE >> 20));
			goto out;
		}
		if (total == n)
			domain_set_reserve(set, listfile_estimate(buf, (size_t)n, size));
		have += (size_t)n;
		used = listfile_lines(&lf, buf, have, &skipping);
		have -= used;
		if (have > LISTFILE_MAX_LINE) {
			skipping = 1;
			have = 0;
		} else if (skipping)
			have = 0;
		else
			memmove(buf, buf + used, have);
	}
	if (skipping) {
		lf.line++;
		stats->lines++;
		listfile_invalid(&lf);
	} else if (have > 0)
		listfile_line(&lf, buf, have);
	rv = 0;
out:
	stats->entries = domain_set_count(set) - before;
	free(buf);
	close(fd);
	return rv;
}
