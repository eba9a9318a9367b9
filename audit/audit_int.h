/*
 * The audit writer's own header, shared by audit.c (lines, batches, the
 * chain, what happens when lines cannot be written) and logfile.c (the
 * file: opening it, continuing its chain, keeping room on disk for the
 * lines to come, rotating and reopening it). Nothing outside audit/ uses
 * it but the writer's unit tests.
 */
#ifndef AUDIT_INT_H
#define AUDIT_INT_H

#include <sys/stat.h>
#include <sys/types.h>

#include <stdint.h>
#include <time.h>

#include "audit.h"

/*
 * Room on disk: a regular file gets its blocks allocated ahead of the
 * lines (fallocate, FALLOC_FL_KEEP_SIZE: the file's size does not change),
 * AUDIT_ROOM_LINE for each exchange admitted and not yet written, and
 * AUDIT_ROOM_STEP more at a time so that most lines need no system call.
 * A line longer than AUDIT_ROOM_LINE takes the rest from the step.
 */
#define AUDIT_ROOM_LINE 2048
#define AUDIT_ROOM_STEP (64 * 1024)

#define AUDIT_GAP_RANGES 32 /* seq ranges a gap event names one by one */

/* A line made and not yet written: where it lies in pending, and its seq. */
struct audit_pend {
	size_t start;
	size_t end; /* its newline excluded */
	uint64_t seq;
};

/* The seqs of lines that were made and could not be written. */
struct audit_gap {
	uint64_t lo[AUDIT_GAP_RANGES];
	uint64_t hi[AUDIT_GAP_RANGES];
	unsigned n;
	uint64_t count;
};

struct audit {
	int fd;
	int flags;
#define AUDIT_F_CLOSE   0x1  /* the descriptor is ours to close */
#define AUDIT_F_REGULAR 0x2  /* a regular file: its cache released, fsync at close */
#define AUDIT_F_TORN    0x4  /* the file ends inside a line: start the next with '\n' */
#define AUDIT_F_ROOM    0x8  /* room can be reserved on this file (fallocate) */
#define AUDIT_F_FAILING 0x10 /* lines cannot be written: see fail_errno */
#define AUDIT_F_PROBING 0x20 /* audit_tick is trying the log again */
#define AUDIT_F_NOROOM  0x40 /* said once that this file system cannot reserve */
	char *path; /* NULL: a descriptor was given, which is neither rotated nor reopened */
	struct audit_settings set;
	uint64_t seq;
	uint64_t lines;                /* made since open */
	uint64_t bytes;                /* written since open */
	uint64_t write_errors;         /* failed or short writes */
	char prev[CHAIN_HEX + 1];      /* the link of the last line made */
	char prev_file[CHAIN_HEX + 1]; /* the link of the last bytes in the file */
	struct chain *chain;
	struct buf pending; /* lines made and not written yet */
	struct audit_pend *pend;
	size_t npend;
	size_t pend_cap;
	time_t ts_sec;          /* the second ts_text was made for */
	char ts_text[32];       /* its RFC 3339 text, milliseconds left as .000 */
	void (*wakeup)(void *); /* batching on: lines are pending */
	void *wakeup_arg;
	/* Keeping the page cache small (logfile_cache_release). */
	size_t cache_written; /* bytes written since the last release */
	off_t cache_synced;   /* writeback was started up to here */
	/* Room on disk (logfile_reserve). */
	off_t size;     /* the file's length, as this writer made it */
	off_t reserved; /* blocks are allocated up to here */
	uint64_t owed;  /* exchanges admitted whose lines are still to come */
	/* Lines that cannot be written: the episode in progress, and totals. */
	int fail_errno;
	uint64_t fail_since_ms; /* monotonic */
	struct timespec fail_since;
	uint64_t ep_refused;
	struct audit_gap gap;
	uint64_t refused;   /* requests refused, every episode */
	uint64_t unwritten; /* lines not written, every episode */
	uint64_t failures;  /* episodes */
	/* Rotation. */
	uint64_t rotations;
	int rotate_failed; /* the last rotation failed: tried again from audit_tick */
};

/* audit.c */
void audit_fail(struct audit *, int);
void audit_err(char *, size_t, const char *, ...) EG_PRINTF(3, 4);

/* logfile.c */
int logfile_open(const char *, int, struct stat *, char *, size_t);
int logfile_resume(struct audit *, int, const char *, char *, size_t);
void logfile_room_init(struct audit *, const struct stat *);
int logfile_reserve(struct audit *, off_t);
void logfile_room_release(struct audit *);
void logfile_cache_note(struct audit *, size_t);
int logfile_rotate(struct audit *);
int logfile_reopen(struct audit *);

#endif
