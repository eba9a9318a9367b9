/*
 * Unit tests for common/slab.c: objects come zeroed, aligned and apart
 * (writing one whole never changes another), freed slots are reused,
 * a burst's chunks stay mapped as spares, reused without mapping more,
 * until slab_trim gives them back (all but the ones asked to be kept),
 * objects that outlive a burst keep only their own chunks, and freeing
 * a pointer the slab did not hand out aborts.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common.h"
#include "test_rng.h"

#define OBJ 2320 /* about a proxy exchange */

/* A new slab of OBJ-sized objects with n of them allocated, in the returned array. */
static void **
burst(struct slab *s, size_t n)
{
	void **o = calloc(n, sizeof *o);
	size_t i;

	assert_non_null(o);
	slab_init(s, OBJ);
	for (i = 0; i < n; i++)
		o[i] = slab_alloc(s);
	return o;
}

static int
all_bytes(const unsigned char *p, size_t n, unsigned char v)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != v)
			return 0;
	return 1;
}

/* Is the page holding p mapped? */
static int
mapped(const void *p)
{
	unsigned char vec;
	long pg = sysconf(_SC_PAGESIZE);
	uintptr_t a = (uintptr_t)p & ~(uintptr_t)(pg - 1);

	return mincore((void *)a, (size_t)pg, &vec) == 0;
}

static void
test_zeroed_aligned_apart(void **state)
{
	struct slab s;
	unsigned char *o[200];
	size_t i, n = EG_NELEM(o);

	(void)state;
	slab_init(&s, OBJ);
	for (i = 0; i < n; i++) {
		o[i] = slab_alloc(&s);
		assert_non_null(o[i]);
		assert_int_equal((uintptr_t)o[i] % 16, 0);
		assert_true(all_bytes(o[i], OBJ, 0));
		memset(o[i], (int)(i % 251) + 1, OBJ);
	}
	assert_int_equal(s.live, n);
	/* 200 objects of 2320 bytes need several 64 KiB chunks. */
	assert_true(s.nchunks >= (n * OBJ) / SLAB_CHUNK + 1);
	for (i = 0; i < n; i++)
		assert_true(all_bytes(o[i], OBJ, (unsigned char)((i % 251) + 1)));
	/* Freed and taken again: zeroed once more, whatever it held. */
	slab_free(&s, o[7]);
	o[7] = slab_alloc(&s);
	assert_true(all_bytes(o[7], OBJ, 0));
	for (i = 0; i < n; i++)
		slab_free(&s, o[i]);
	assert_int_equal(s.live, 0);
	slab_release(&s);
	assert_int_equal(s.nchunks, 0);
}

static void
test_reuses_freed_slots(void **state)
{
	struct slab s;
	void *a, *b, *c;

	(void)state;
	slab_init(&s, 100);
	a = slab_alloc(&s);
	b = slab_alloc(&s);
	slab_free(&s, a);
	c = slab_alloc(&s);
	assert_ptr_equal(a, c);
	assert_int_equal(s.nchunks, 1);
	slab_free(&s, b);
	slab_free(&s, c);
	slab_free(&s, NULL);
	assert_int_equal(s.live, 0);
	slab_release(&s);
}

/*
 * A burst of 5000 objects freed in a random order leaves its chunks as
 * spares; a second burst reuses them without mapping more; slab_trim
 * then leaves one chunk mapped, and the unmapped ones are really gone.
 */
static void
test_burst_given_back(void **state)
{
	struct slab s;
	void **o;
	size_t i, j, n = 5000, peak;
	void *t;

	(void)state;
	o = burst(&s, n);
	peak = s.nchunks;
	assert_true(peak >= n / s.per_chunk);
	for (i = n - 1; i > 0; i--) {
		j = (size_t)(test_rng() % (i + 1));
		t = o[i];
		o[i] = o[j];
		o[j] = t;
	}
	for (i = 0; i < n; i++)
		slab_free(&s, o[i]);
	assert_int_equal(s.live, 0);
	assert_int_equal(s.nchunks, peak);
	assert_int_equal(s.nspare, peak);
	for (i = 0; i < n; i++)
		o[i] = slab_alloc(&s);
	assert_int_equal(s.nchunks, peak);
	assert_int_equal(s.nspare, 0);
	for (i = 0; i < n; i++)
		slab_free(&s, o[i]);
	slab_trim(&s, 1);
	assert_int_equal(s.nchunks, 1);
	for (i = 0, j = 0; i < n; i++)
		j += mapped(o[i]);
	/* Only the spare chunk's objects are still mapped. */
	assert_true(j <= s.per_chunk);
	assert_true(j < n / 10);
	/* The next burst starts in the spare without mapping another chunk. */
	t = slab_alloc(&s);
	assert_int_equal(s.nchunks, 1);
	slab_free(&s, t);
	slab_release(&s);
	assert_int_equal(s.nchunks, 0);
	free(o);
}

/*
 * Objects that outlive a burst keep their own chunks only: keep every
 * 500th of 5000, free the rest, trim, and at most one chunk per survivor
 * stays mapped.
 */
static void
test_survivors_pin_only_their_chunks(void **state)
{
	struct slab s;
	void **o;
	size_t i, n = 5000, kept = 0;

	(void)state;
	o = burst(&s, n);
	for (i = 0; i < n; i++) {
		if (i % 500 == 0) {
			kept++;
			continue;
		}
		slab_free(&s, o[i]);
		o[i] = NULL;
	}
	assert_int_equal(s.live, kept);
	slab_trim(&s, 0);
	assert_true(s.nchunks <= kept);
	/* New objects fill the survivors' chunks before mapping more. */
	for (i = 0; i < 5; i++) {
		void *p = slab_alloc(&s);

		assert_true(s.nchunks <= kept);
		slab_free(&s, p);
	}
	for (i = 0; i < n; i++)
		slab_free(&s, o[i]);
	slab_trim(&s, 0);
	assert_int_equal(s.nchunks, 0);
	slab_release(&s);
	free(o);
}

/* Freeing what another slab handed out is a broken invariant: abort. */
static void
test_foreign_free_aborts(void **state)
{
	struct slab a, b;
	void *p;
	pid_t pid;
	int st;

	(void)state;
	slab_init(&a, 64);
	slab_init(&b, 64);
	p = slab_alloc(&a);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(STDERR_FILENO);
		slab_free(&b, p);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_false(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	slab_free(&a, p);
	slab_release(&a);
	slab_release(&b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_zeroed_aligned_apart),
	    cmocka_unit_test(test_reuses_freed_slots),
	    cmocka_unit_test(test_burst_given_back),
	    cmocka_unit_test(test_survivors_pin_only_their_chunks),
	    cmocka_unit_test(test_foreign_free_aborts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
