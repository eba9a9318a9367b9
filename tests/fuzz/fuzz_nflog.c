/*
 * nflog_next over an arbitrary datagram, message after message: never
 * reads past the bytes, always moves forward, and every packet it returns
 * has NUL-terminated text fields and a payload inside the datagram.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nflog_packet pkt;
	const unsigned char *p;
	const char *err, *hint;
	unsigned char *copy;
	size_t left, before;
	char num[8];
	enum nflog_next r;

	if (size > 64 * 1024)
		return 0;
	/* An exact-size copy, so a read past the end is caught. */
	copy = malloc(size ? size : 1);
	memcpy(copy, data, size);
	p = copy;
	left = size;
	for (;;) {
		before = left;
		r = nflog_next(&p, &left, &pkt, &err);
		if (r == NFLOG_NEXT_END || r == NFLOG_NEXT_ERROR) {
			if ((r == NFLOG_NEXT_ERROR) != (err != NULL))
				abort();
			break;
		}
		if (left >= before)
			abort();
		if (r != NFLOG_NEXT_PACKET)
			continue;
		if (strlen(pkt.prefix) >= sizeof pkt.prefix || strlen(pkt.src) >= sizeof pkt.src ||
		    strlen(pkt.dst) >= sizeof pkt.dst)
			abort();
		if (pkt.payload < copy || pkt.payload + pkt.payload_len > copy + size)
			abort();
		if (nflog_proto_name(&pkt, num, sizeof num) == NULL ||
		    nflog_reason(&pkt, &hint) == NULL)
			abort();
	}
	free(copy);
	return 0;
}
