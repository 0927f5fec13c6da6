// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * pyline.c — decoding CPython 3.11's location table.  Each entry starts with
 * a byte whose top bit is set: bits 3-6 are its code, bits 0-2 the number of
 * code units it covers, less one.  Codes 0-9 (short form) and 10-12 (one
 * line form: line delta code - 10) keep or step the line; 13 (no columns)
 * and 14 (long form) carry a signed varint line delta; 15 means no line.
 * Varints are 6-bit groups, least significant first, 0x40 meaning more
 * follow; a signed one has its sign in bit 0.
 */
#include <stdbool.h>

#include "unwind/pyline.h"

struct cursor {
	const uint8_t *p, *end;
	bool bad;
};

static unsigned int varint(struct cursor *c)
{
	unsigned int val = 0, shift = 0, b;

	do {
		if (c->p >= c->end || shift > 28) {
			c->bad = true;
			return 0;
		}
		b = *c->p++;
		val |= (b & 63) << shift;
		shift += 6;
	} while (b & 64);
	return val;
}

static int svarint(struct cursor *c)
{
	unsigned int u = varint(c);

	return u & 1 ? -(int)(u >> 1) : (int)(u >> 1);
}

int pyline_at(const uint8_t *table, size_t len, int firstlineno, long addr)
{
	struct cursor c = { table, table + len, false };
	long start = 0;
	int line = firstlineno;

	if (addr < 0)
		return firstlineno;
	while (c.p < c.end) {
		uint8_t first = *c.p++;
		int code = (first >> 3) & 15;
		long end = start + 2 * ((first & 7) + 1);
		bool none = false;

		if (!(first & 0x80))
			return -2;	/* not at an entry: damaged */
		switch (code) {
		case 15:
			none = true;
			break;
		case 14:
			line += svarint(&c);
			break;
		case 13:
			line += svarint(&c);
			break;
		case 10: case 11: case 12:
			line += code - 10;
			break;
		default:
			break;
		}
		if (c.bad)
			return -2;
		if (addr >= start && addr < end)
			return none ? -1 : line;
		/* The rest of the entry (columns): up to the next entry byte. */
		while (c.p < c.end && !(*c.p & 0x80))
			c.p++;
		start = end;
	}
	return -2;
}
