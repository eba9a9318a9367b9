/*
 * Diagnostic log on stderr. This is for operators reading a terminal or a
 * journal; the audit log (audit/audit.c) is a separate, structured stream.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

int log_verbosity = LOG_LVL_INFO;
static const char *log_prog = "egress";

void
log_init(const char *prog, int level)
{
	log_prog = prog;
	log_verbosity = level;
}

static void log_vemit(const char *, const char *, va_list, int) EG_PRINTF(2, 0);

static void
log_vemit(const char *prefix, const char *fmt, va_list ap, int with_errno)
{
	char msg[2048];
	int saved = errno;

	vsnprintf(msg, sizeof msg, fmt, ap);
	if (with_errno)
		fprintf(stderr, "%s: %s%s: %s\n", log_prog, prefix, msg, strerror(saved));
	else
		fprintf(stderr, "%s: %s%s\n", log_prog, prefix, msg);
	errno = saved;
}

#define LOG_BODY(level, prefix, with_errno)                                                        \
	va_list ap;                                                                                \
	if (log_verbosity < (level))                                                               \
		return;                                                                            \
	va_start(ap, fmt);                                                                         \
	log_vemit(prefix, fmt, ap, with_errno);                                                    \
	va_end(ap)

void
log_warn(const char *fmt, ...)
{
	LOG_BODY(LOG_LVL_WARN, "", 1);
}

void
log_warnx(const char *fmt, ...)
{
	LOG_BODY(LOG_LVL_WARN, "", 0);
}

void
log_info(const char *fmt, ...)
{
	LOG_BODY(LOG_LVL_INFO, "", 0);
}

void
log_debug_(const char *fmt, ...)
{
	LOG_BODY(LOG_LVL_DEBUG, "debug: ", 0);
}

void
fatal(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vemit("fatal: ", fmt, ap, 1);
	va_end(ap);
	exit(1);
}

void
fatalx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vemit("fatal: ", fmt, ap, 0);
	va_end(ap);
	exit(1);
}
