/*
 * Unit tests for common/buf.c: the growable buffer stays NUL-terminated
 * through growth, formatting, reset and release, and refuses sizes that
 * would overflow.
 */
#include <sys/wait.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common.h"

static void
test_init_empty(void **state)
{
	struct buf b;

	buf_init(&b);
	assert_null(b.data);
	assert_int_equal(b.len, 0);
	assert_int_equal(b.cap, 0);
	/* buf_cstr on a fresh buffer gives an empty string, not NULL. */
	assert_string_equal(buf_cstr(&b), "");
	assert_true(b.cap > 0);
	buf_free(&b);
	assert_null(b.data);
	assert_int_equal(b.cap, 0);
	buf_free(&b); /* twice is harmless */
}

/* Grow one byte at a time and in odd-sized chunks; content stays exact. */
static void
test_growth(void **state)
{
	struct buf b;
	char chunk[777];
	size_t i, cap_before;

	buf_init(&b);
	for (i = 0; i < 10000; i++) {
		cap_before = b.cap;
		buf_addc(&b, (char)('a' + i % 26));
		assert_int_equal(b.len, i + 1);
		assert_true(b.cap > b.len);
		assert_int_equal(b.data[b.len], '\0');
		if (b.cap != cap_before && cap_before != 0)
			assert_true(b.cap >= 2 * cap_before);
	}
	for (i = 0; i < 10000; i++)
		assert_int_equal(b.data[i], 'a' + i % 26);

	buf_reset(&b);
	for (i = 0; i < sizeof chunk; i++)
		chunk[i] = (char)i;
	for (i = 0; i < 50; i++)
		buf_add(&b, chunk, sizeof chunk);
	assert_int_equal(b.len, 50 * sizeof chunk);
	for (i = 0; i < 50; i++)
		assert_memory_equal(b.data + i * sizeof chunk, chunk, sizeof chunk);
	assert_int_equal(b.data[b.len], '\0');
	buf_free(&b);
}

static void
test_add_binary_and_empty(void **state)
{
	struct buf b;

	buf_init(&b);
	buf_add(&b, NULL, 0);
	assert_int_equal(b.len, 0);
	assert_non_null(b.data);
	assert_string_equal(b.data, "");
	buf_add(&b, "a\0b", 3);
	assert_int_equal(b.len, 3);
	assert_memory_equal(b.data, "a\0b\0", 4);
	buf_adds(&b, "cd");
	assert_int_equal(b.len, 5);
	assert_memory_equal(b.data, "a\0bcd\0", 6);
	buf_adds(&b, "");
	assert_int_equal(b.len, 5);
	buf_free(&b);
}

static void
test_reserve(void **state)
{
	struct buf b;
	char *data;

	buf_init(&b);
	buf_reserve(&b, 1000);
	assert_int_equal(b.len, 0);
	assert_true(b.cap >= 1001);
	/* "always NUL-terminated when cap > 0" holds after a bare reserve too. */
	assert_int_equal(b.data[0], '\0');
	data = b.data;
	buf_add(&b, "x", 1);
	buf_reserve(&b, 999);
	/* Room was already there: no reallocation. */
	assert_ptr_equal(b.data, data);
	assert_string_equal(b.data, "x");
	buf_free(&b);
}

static void
test_printf(void **state)
{
	struct buf b;
	char big[5000];

	buf_init(&b);
	buf_printf(&b, "%d-%s-%c", 42, "x", 'y');
	assert_string_equal(b.data, "42-x-y");
	assert_int_equal(b.len, 6);
	buf_printf(&b, "%s", "");
	assert_int_equal(b.len, 6);
	buf_printf(&b, "|%05u|%-3s|", 7u, "a");
	assert_string_equal(b.data, "42-x-y|00007|a  |");

	/* Output longer than any initial capacity. */
	memset(big, 'z', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	buf_reset(&b);
	buf_printf(&b, "<%s>", big);
	assert_int_equal(b.len, sizeof big + 1);
	assert_int_equal(b.data[0], '<');
	assert_int_equal(b.data[b.len - 1], '>');
	assert_int_equal(b.data[b.len], '\0');
	assert_int_equal(strspn(b.data + 1, "z"), sizeof big - 1);
	buf_free(&b);
}

static void vprintf_helper(struct buf *b, const char *fmt, ...) EG_PRINTF(2, 3);

static void
vprintf_helper(struct buf *b, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	buf_vprintf(b, fmt, ap);
	va_end(ap);
}

static void
test_vprintf(void **state)
{
	struct buf b;
	int i;

	buf_init(&b);
	for (i = 0; i < 100; i++)
		vprintf_helper(&b, "%d,", i);
	assert_int_equal(strncmp(b.data, "0,1,2,", 6), 0);
	assert_non_null(strstr(b.data, ",98,99,"));
	assert_int_equal(b.data[b.len - 1], ',');
	assert_int_equal(strlen(b.data), b.len);
	buf_free(&b);
}

static void
test_reset_keeps_storage(void **state)
{
	struct buf b;
	size_t cap;
	char *data;

	buf_init(&b);
	buf_reset(&b); /* on an empty buffer */
	assert_int_equal(b.len, 0);
	buf_adds(&b, "hello world");
	cap = b.cap;
	data = b.data;
	buf_reset(&b);
	assert_int_equal(b.len, 0);
	assert_int_equal(b.cap, cap);
	assert_ptr_equal(b.data, data);
	assert_string_equal(b.data, "");
	buf_adds(&b, "again");
	assert_string_equal(buf_cstr(&b), "again");
	buf_free(&b);
}

static void
test_release(void **state)
{
	struct buf b;
	char *s;

	buf_init(&b);
	buf_printf(&b, "owned %d", 1);
	s = buf_release(&b);
	assert_string_equal(s, "owned 1");
	assert_null(b.data);
	assert_int_equal(b.len, 0);
	assert_int_equal(b.cap, 0);
	free(s);

	/* Releasing an empty buffer still gives a string the caller frees. */
	s = buf_release(&b);
	assert_non_null(s);
	assert_string_equal(s, "");
	free(s);

	/* The buffer is usable again after a release. */
	buf_adds(&b, "next");
	assert_string_equal(b.data, "next");
	buf_free(&b);
}

/* A reservation that would overflow size_t ends the process, never wraps. */
static void
test_reserve_overflow(void **state)
{
	struct buf b;
	pid_t pid;
	int status;

	pid = fork();
	assert_true(pid != -1);
	if (pid == 0) {
		log_init("test", LOG_LVL_ERR);
		/* Nothing allocated yet, so the leak check has nothing to say. */
		buf_init(&b);
		buf_reserve(&b, SIZE_MAX);
		_exit(0); /* not reached */
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_init_empty),
	    cmocka_unit_test(test_growth),
	    cmocka_unit_test(test_add_binary_and_empty),
	    cmocka_unit_test(test_reserve),
	    cmocka_unit_test(test_printf),
	    cmocka_unit_test(test_vprintf),
	    cmocka_unit_test(test_reset_keeps_storage),
	    cmocka_unit_test(test_release),
	    cmocka_unit_test(test_reserve_overflow),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
