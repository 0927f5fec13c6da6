// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_control.c — unit tests for control_parse() and control_env_session(),
 * the pure parts of the 'memwatch mark' protocol.  The socket functions need
 * /run and are left to the end-to-end tests.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdlib.h>
#include <string.h>

#include "capture/control.h"
#include "unit.h"

/* Parse from a heap copy of exactly strlen + 1 bytes, so that under ASan a
 * read past the terminating NUL aborts. */
static bool parse(const char *line, struct mw_control_req *req)
{
	char *copy = strdup(line);
	bool ok;

	if (!copy)
		abort();
	/* Garbage first: a result must not depend on what req held. */
	memset(req, 0xa5, sizeof(*req));
	ok = control_parse(copy, req);
	free(copy);
	return ok;
}

static bool req_zero_name(const struct mw_control_req *req)
{
	for (size_t i = 0; i < sizeof(req->name); i++)
		if (req->name[i])
			return false;
	return true;
}

TEST(accepts_phase)
{
	struct mw_control_req req;

	CHECK(parse("phase load\n", &req));
	CHECK(!req.iter);
	CHECK_STR(req.name, "load");

	CHECK(parse("phase load", &req));
	CHECK(!req.iter);
	CHECK_STR(req.name, "load");

	/* Spaces and punctuation inside a name are printable. */
	CHECK(parse("phase warm up: step 2/3\n", &req));
	CHECK_STR(req.name, "warm up: step 2/3");

	/* A single character is enough. */
	CHECK(parse("phase x\n", &req));
	CHECK_STR(req.name, "x");

	/* Bytes above 0x7f (UTF-8) are not control characters. */
	CHECK(parse("phase caf\xc3\xa9\n", &req));
	CHECK_STR(req.name, "caf\xc3\xa9");

	/* The line ends at the first newline: the rest is ignored. */
	CHECK(parse("phase one\nphase two\n", &req));
	CHECK_STR(req.name, "one");
}

TEST(phase_name_zero_padded)
{
	struct mw_control_req req;

	CHECK(parse("phase ab\n", &req));
	CHECK_STR(req.name, "ab");
	/* Everything after the name is zero, not left over from before. */
	for (size_t i = 2; i < sizeof(req.name); i++)
		if (!CHECK_EQ_INT(req.name[i], 0))
			break;
}

TEST(accepts_iter)
{
	struct mw_control_req req;

	CHECK(parse("iter\n", &req));
	CHECK(req.iter);
	CHECK(req_zero_name(&req));

	CHECK(parse("iter", &req));
	CHECK(req.iter);
	CHECK(req_zero_name(&req));

	CHECK(parse("iter\nanything", &req));
	CHECK(req.iter);
}

TEST(name_length_limit)
{
	struct mw_control_req req;
	char line[128], name[80];

	CHECK_EQ_U64(sizeof(req.name), 64);
	/* 63 characters fit with the NUL. */
	memset(name, 'n', 63);
	name[63] = 0;
	snprintf(line, sizeof(line), "phase %s\n", name);
	CHECK(parse(line, &req));
	CHECK_STR(req.name, name);
	CHECK_EQ_U64(strlen(req.name), 63);
	snprintf(line, sizeof(line), "phase %s", name);
	CHECK(parse(line, &req));
	CHECK_EQ_U64(strlen(req.name), 63);

	/* 64 and more do not. */
	memset(name, 'n', 64);
	name[64] = 0;
	snprintf(line, sizeof(line), "phase %s\n", name);
	CHECK(!parse(line, &req));
	snprintf(line, sizeof(line), "phase %s", name);
	CHECK(!parse(line, &req));
	memset(name, 'n', 79);
	name[79] = 0;
	snprintf(line, sizeof(line), "phase %s\n", name);
	CHECK(!parse(line, &req));
}

TEST(rejects_malformed)
{
	struct mw_control_req req;

	CHECK(!parse("", &req));
	CHECK(!parse("\n", &req));
	CHECK(!parse("phase \n", &req));
	CHECK(!parse("phase ", &req));
	CHECK(!parse("phase\n", &req));
	CHECK(!parse("phase", &req));
	CHECK(!parse("phasex y\n", &req));
	CHECK(!parse("iterx", &req));
	CHECK(!parse("iterx\n", &req));
	CHECK(!parse("iter \n", &req));
	CHECK(!parse("iter x\n", &req));
	CHECK(!parse("ite\n", &req));
	CHECK(!parse(" iter\n", &req));
	CHECK(!parse(" phase x\n", &req));
	CHECK(!parse("PHASE x", &req));
	CHECK(!parse("PHASE x\n", &req));
	CHECK(!parse("ITER\n", &req));
	CHECK(!parse("Phase x\n", &req));
	CHECK(!parse("mark x\n", &req));
}

TEST(rejects_control_characters)
{
	struct mw_control_req req;
	char line[32];

	CHECK(!parse("phase a\tb\n", &req));
	CHECK(!parse("phase a\rb\n", &req));
	CHECK(!parse("phase x\r\n", &req));	/* a CRLF client */
	CHECK(!parse("phase \x1b[31mred\n", &req));
	CHECK(!parse("phase a\x7f\n", &req));
	CHECK(!parse("phase \x01\n", &req));
	CHECK(!parse("phase \x1f", &req));
	/* Every control character, in every position of a short name. */
	for (int c = 1; c < 0x20; c++) {
		if (c == '\n')
			continue;
		for (int pos = 0; pos < 3; pos++) {
			char name[4] = "abc";

			name[pos] = (char)c;
			snprintf(line, sizeof(line), "phase %s\n", name);
			if (!CHECK(!parse(line, &req)))
				fprintf(stderr, "  char 0x%02x at %d accepted\n", c, pos);
		}
	}
	/* The printable edges are fine. */
	CHECK(parse("phase  ~\n", &req));
	CHECK_STR(req.name, " ~");
}

/* MEMWATCH_CONTROL, as `memwatch -- CMD` sets it: the session's PID. */
TEST(env_session)
{
	static const struct { const char *v; pid_t want; } cases[] = {
		{ "/run/memwatch/4242.sock", 4242 },
		{ "/run/memwatch/1.sock", 1 },
		{ "/run/memwatch/0.sock", 0 },
		{ "/run/memwatch/-3.sock", 0 },
		{ "/run/memwatch/4242.socks", 0 },
		{ "/run/memwatch/4242.soc", 0 },
		{ "/run/memwatch/4242", 0 },
		{ "/run/memwatch/.sock", 0 },
		{ "/run/memwatch/99999999999.sock", 0 },
		{ "/tmp/memwatch/4242.sock", 0 },
		{ "", 0 },
	};

	unsetenv(MW_CONTROL_ENV);
	CHECK_EQ_INT(control_env_session(), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		setenv(MW_CONTROL_ENV, cases[i].v, 1);
		if (!CHECK_EQ_INT(control_env_session(), cases[i].want))
			fprintf(stderr, "  %s\n", cases[i].v);
	}
	unsetenv(MW_CONTROL_ENV);
}

int main(void)
{
	RUN(accepts_phase);
	RUN(phase_name_zero_padded);
	RUN(accepts_iter);
	RUN(name_length_limit);
	RUN(rejects_malformed);
	RUN(rejects_control_characters);
	RUN(env_session);
	return unit_done();
}
