/*
 * Unit tests for audit/chain.c, the hash chain the writer and
 * `policyctl audit --verify` share: a link is the lowercase hex SHA-256
 * of a line (known vectors, and OpenSSL's EVP digest of random lines),
 * a line fed in pieces links as it does whole, a chain starts from 64
 * zeros, and the writer's "prev" of each line is the link of the line
 * before it.
 */
#include "audit_test.h"
#include "test_rng.h"

static void
test_zeros(void **state)
{
	size_t i;

	assert_int_equal(strlen(chain_zeros), CHAIN_HEX);
	for (i = 0; i < CHAIN_HEX; i++)
		assert_int_equal(chain_zeros[i], '0');
	assert_string_equal(chain_zeros, ZEROS);
}

/* FIPS 180-2 examples and the empty line. */
static void
test_vectors(void **state)
{
	static const struct {
		const char *in;
		const char *link;
	} v[] = {
	    {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
	    {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
	    {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
	     "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
	};
	struct chain *c = chain_new();
	char link[CHAIN_HEX + 1];
	size_t i;

	for (i = 0; i < EG_NELEM(v); i++) {
		memset(link, 'x', sizeof link);
		chain_line(c, v[i].in, strlen(v[i].in), link);
		assert_string_equal(link, v[i].link);
	}
	chain_free(c);
	chain_free(NULL);
}

/* Any split of a line into pieces gives the link of the whole line. */
static void
test_pieces(void **state)
{
	struct chain *c = chain_new();
	char whole[CHAIN_HEX + 1], split[CHAIN_HEX + 1];
	unsigned char line[300];
	size_t i, j;

	for (i = 0; i < sizeof line; i++)
		line[i] = (unsigned char)(i * 7 + 3);
	chain_line(c, line, sizeof line, whole);
	for (i = 0; i <= sizeof line; i++) {
		for (j = i; j <= sizeof line; j += 37) {
			chain_begin(c);
			chain_update(c, line, i);
			chain_update(c, line + i, j - i);
			chain_update(c, line + j, 0);
			chain_update(c, line + j, sizeof line - j);
			chain_end(c, split);
			assert_string_equal(split, whole);
		}
	}
	chain_free(c);
}

/* The same digest OpenSSL's EVP interface gives, for random lines. */
static void
test_random_lines(void **state)
{
	struct chain *c = chain_new();
	char got[CHAIN_HEX + 1], want[CHAIN_HEX + 1];
	unsigned char line[2048];
	size_t n, i, round;

	for (round = 0; round < 500; round++) {
		n = (size_t)(test_rng() % sizeof line);
		for (i = 0; i < n; i++)
			line[i] = (unsigned char)test_rng();
		chain_line(c, line, n, got);
		sha256_hex(line, n, want);
		assert_string_equal(got, want);
	}
	chain_free(c);
}

/* Each line the writer makes links to the one before it, the first to zeros. */
static void
test_writer_links(void **state)
{
	struct chain *c = chain_new();
	char want[CHAIN_HEX + 1];
	struct audit *a;
	struct lines l;
	json_t *j;
	size_t i;

	a = open_ok(tpath("links.jsonl"));
	for (i = 0; i < 5; i++)
		write_simple(a, i % 2 ? "a.example" : "b.example");
	audit_close(a);
	read_lines(tpath("links.jsonl"), &l);
	assert_int_equal(l.n, 5);
	memcpy(want, chain_zeros, sizeof want);
	for (i = 0; i < l.n; i++) {
		j = parse(l.p[i], l.len[i]);
		assert_non_null(j);
		assert_string_equal(sval(j, "prev"), want);
		json_decref(j);
		chain_line(c, l.p[i], l.len[i], want);
	}
	lines_free(&l);
	chain_free(c);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_zeros),        cmocka_unit_test(test_vectors),
	    cmocka_unit_test(test_pieces),       cmocka_unit_test(test_random_lines),
	    cmocka_unit_test(test_writer_links),
	};

	return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
