// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * memwatch — trace a process's address space, page faults and RSS with BPF,
 * and report VM and RSS growth per mapping, exactly as the kernel counts it.
 *
 *   memwatch [OPTIONS] -p PID
 *   memwatch [OPTIONS] -- CMD [ARGS...]
 *   memwatch record -o FILE [OPTIONS] (-p PID | -- CMD [ARGS...])
 *   memwatch report [OPTIONS] FILE
 */
#include <argp.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "account.h"
#include "launch.h"
#include "recording.h"
#include "report.h"
#include "trace.h"
#include "util.h"

#define MW_VERSION "0.1.0"

enum cli_mode { MODE_TRACE, MODE_RECORD, MODE_REPORT };

struct cli {
	enum cli_mode mode;
	struct trace_opts trace;
	const char *json_path;
	const char *text_path;
	const char *record_path;	/* record: -o; report: the operand */
	bool quiet;
	long max_mappings;	/* -1: per-format default */
};

enum {
	OPT_RINGBUF = 0x100,
	OPT_MAX_DEAD,
};

static const struct argp_option options[] = {
	{ "pid", 'p', "PID", 0, "Trace the running process PID (all its threads)", 0 },
	{ "duration", 'd', "SECONDS", 0, "Stop after SECONDS (default: when the process exits or on Ctrl-C)", 0 },
	{ "json", 'j', "FILE", 0, "Write newline-delimited JSON to FILE ('-' for stdout); the last line is the summary", 0 },
	{ "output", 'o', "FILE", 0, "Write the text report to FILE instead of stdout (record: the recording)", 0 },
	{ "quiet", 'q', NULL, 0, "No text report", 0 },
	{ "max-mappings", 'm', "N", 0, "Show at most N mappings, folding the rest into one row (default: 25 in text, 1000 in JSON)", 0 },
	{ "ringbuf-size", OPT_RINGBUF, "BYTES", 0, "Ring buffer size, a power of two (default 8 MiB)", 0 },
	{ "max-unmapped", OPT_MAX_DEAD, "N", 0, "Keep at most N unmapped mappings, summing the rest (default 100000)", 0 },
	{ "verbose", 'v', NULL, 0, "Say more (twice: libbpf debug output)", 0 },
	{ 0 },
};

static const char doc[] =
	"memwatch -- trace a process's memory (mappings, page faults, RSS) with eBPF\n\n"
	"  memwatch [OPTIONS] -p PID\n"
	"  memwatch [OPTIONS] -- CMD [ARGS...]\n"
	"  memwatch record -o FILE [OPTIONS] (-p PID | -- CMD [ARGS...])\n"
	"  memwatch report [OPTIONS] FILE\n\n"
	"With -- CMD, memwatch starts CMD and traces it from its first instruction, "
	"then exits with CMD's exit status.  Needs root, or CAP_BPF and CAP_PERFMON."
	"\vExit codes: 0 ok (or CMD's status), 1 runtime error, 2 usage, 3 not "
	"permitted, 4 no kernel BTF, 5 no tracefs, 6 bad PID, 7 output not writable, "
	"8 BPF load/attach failed, 9 kernel too old, 10 recording unreadable, "
	"126/127 CMD not executable/found.";

static void usage_error(const char *fmt, const char *arg)
{
	fputs("memwatch: ", stderr);
	fprintf(stderr, fmt, arg);
	fputs(" (see memwatch --help)\n", stderr);
	exit(MW_EXIT_USAGE);
}

static long parse_long(const char *s, long lo, long hi, const char *what)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi) {
		char msg[128];

		snprintf(msg, sizeof(msg), "invalid %s '%%s': expected a number from %ld to %ld",
			 what, lo, hi);
		usage_error(msg, s);
	}
	return v;
}

static double parse_seconds(const char *s)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v > 0) || v > 1e7)
		usage_error("invalid duration '%s': expected seconds > 0", s);
	return v;
}

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct cli *c = state->input;
	long v;

	switch (key) {
	case 'p':
		if (c->trace.pid)
			usage_error("-p given twice%s", "");
		c->trace.pid = parse_long(arg, 1, INT_MAX, "PID");
		break;
	case 'd':
		c->trace.duration = parse_seconds(arg);
		break;
	case 'j':
		c->json_path = arg;
		break;
	case 'o':
		if (c->mode == MODE_RECORD)
			c->record_path = arg;
		else
			c->text_path = arg;
		break;
	case 'q':
		c->quiet = true;
		break;
	case 'm':
		c->max_mappings = parse_long(arg, 0, LONG_MAX, "mapping count");
		break;
	case OPT_RINGBUF:
		v = parse_long(arg, 4096, 1L << 30, "ring buffer size");
		if (v & (v - 1))
			usage_error("invalid ring buffer size '%s': must be a power of two", arg);
		c->trace.ringbuf_bytes = v;
		break;
	case OPT_MAX_DEAD:
		c->trace.dead_limit = parse_long(arg, 0, LONG_MAX, "unmapped mapping count");
		break;
	case 'v':
		mw_verbose++;
		break;
	case ARGP_KEY_ARG:
		if (c->mode == MODE_REPORT) {
			if (c->record_path)
				usage_error("one recording at a time (got '%s' too)", arg);
			c->record_path = arg;
			break;
		}
		/* Everything from the first operand on is the command. */
		c->trace.cmd = &state->argv[state->next - 1];
		state->next = state->argc;
		break;
	case ARGP_KEY_END:
		if (c->mode == MODE_REPORT) {
			if (!c->record_path)
				usage_error("report: name the recording to read%s", "");
			if (c->trace.pid || c->trace.duration)
				usage_error("report: -p and -d belong to 'memwatch record'%s", "");
			break;
		}
		if (c->mode == MODE_RECORD && !c->record_path)
			usage_error("record: -o FILE names the recording to write%s", "");
		if (c->trace.pid && c->trace.cmd)
			usage_error("give either -p PID or -- CMD, not both%s", "");
		if (!c->trace.pid && !c->trace.cmd)
			usage_error("nothing to trace: give -p PID or -- CMD [ARGS...]%s", "");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* Open an output before tracing starts, so a bad path fails fast. */
static FILE *open_output(const char *path)
{
	FILE *f;
	int fd;

	if (!path || strcmp(path, "-") == 0)
		return stdout;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0 || !(f = fdopen(fd, "w"))) {
		mw_err("cannot write %s: %s", path, strerror(errno));
		exit(MW_EXIT_OUTPUT);
	}
	return f;
}

static int close_output(FILE *f, const char *path)
{
	if (fflush(f) || ferror(f) || (f != stdout && fclose(f))) {
		mw_err("writing %s failed: %s", path && strcmp(path, "-") ? path : "stdout",
		       strerror(errno ? errno : EIO));
		return MW_EXIT_OUTPUT;
	}
	return 0;
}

static int write_reports(struct cli *c, FILE *json, FILE *text,
			 const struct mw_account *acct, int status)
{
	struct report_opts ro = { .cmd_status = status };
	int out_err = 0;

	if (json) {
		ro.max_mappings = c->max_mappings >= 0 ? (size_t)c->max_mappings : 1000;
		if (report_json_start(json, acct) || report_json_summary(json, acct, &ro))
			out_err = MW_EXIT_OUTPUT;
		out_err = close_output(json, c->json_path) ?: out_err;
	}
	if (text) {
		ro.max_mappings = c->max_mappings >= 0 ? (size_t)c->max_mappings : 25;
		report_text(text, acct, &ro);
		out_err = close_output(text, c->text_path) ?: out_err;
	}
	return out_err;
}

/* memwatch report FILE: replay a recording through the analysis. */
static int run_report(struct cli *c, FILE *json, FILE *text)
{
	struct mw_account acct;
	uint64_t n;
	int status, err;
	FILE *f = fopen(c->record_path, "rb");

	if (!f) {
		mw_err("cannot read %s: %s", c->record_path, strerror(errno));
		return MW_EXIT_RECORDING;
	}
	account_init(&acct, 0, c->trace.dead_limit);
	status = replay_into(f, &acct, &n);
	fclose(f);
	if (status == MW_REPLAY_VERSION || status == MW_REPLAY_NOTREC) {
		mw_err("%s: %s", c->record_path, replay_status_str(status));
		account_free(&acct);
		return MW_EXIT_RECORDING;
	}
	err = write_reports(c, json, text, &acct, acct.wait_status);
	account_free(&acct);
	if (status != MW_REPLAY_OK) {
		mw_err("%s: %s after %llu records: the report covers those",
		       c->record_path, replay_status_str(status), (unsigned long long)n);
		return MW_EXIT_RECORDING;
	}
	return err;
}

/* Trace (and with 'record', save the stream); report at the end. */
static int run_trace(struct cli *c, FILE *json, FILE *text)
{
	struct mw_recorder rec;
	struct mw_account acct;
	int err, status, out_err;

	if (c->mode == MODE_RECORD) {
		if (recorder_open(&rec, c->record_path))
			return MW_EXIT_OUTPUT;
		c->trace.recorder = &rec;
	}
	account_init(&acct, c->trace.pid, c->trace.dead_limit);
	err = trace_run(&c->trace, &acct, &status);
	if (c->mode == MODE_RECORD) {
		int werr = recorder_close(&rec);

		if (werr) {
			mw_err("writing %s failed: %s", c->record_path, strerror(werr));
			err = err ?: MW_EXIT_OUTPUT;
		} else if (!err) {
			fprintf(stderr, "memwatch: wrote %llu records (%llu bytes) to %s\n",
				(unsigned long long)rec.records, (unsigned long long)rec.bytes,
				c->record_path);
		}
	}
	if (err) {
		account_free(&acct);
		return err;
	}
	out_err = write_reports(c, json, text, &acct, status);
	account_free(&acct);
	if (out_err)
		return out_err;
	if (c->trace.cmd && status >= 0)
		return launch_exit_code(status);
	return MW_EXIT_OK;
}

int main(int argc, char **argv)
{
	struct cli c = {
		.trace = { .ringbuf_bytes = 8 << 20, .max_procs = 64, .dead_limit = 100000 },
		.max_mappings = -1,
	};
	struct argp argp = { options, parse_opt, NULL, doc, NULL, NULL, NULL };
	FILE *json = NULL, *text = NULL;

	argv[0] = "memwatch";	/* getopt's messages name argv[0] */
	argp_program_version = "memwatch " MW_VERSION;
	argp_err_exit_status = MW_EXIT_USAGE;
	if (argc > 1 && strcmp(argv[1], "record") == 0)
		c.mode = MODE_RECORD;
	else if (argc > 1 && strcmp(argv[1], "report") == 0)
		c.mode = MODE_REPORT;
	if (c.mode != MODE_TRACE) {
		argv[1] = argv[0];	/* parse the rest as if it were the command line */
		argc--;
		argv++;
	}
	argp_parse(&argp, argc, argv, ARGP_IN_ORDER, NULL, &c);

	if (c.json_path)
		json = open_output(c.json_path);
	if (!c.quiet && c.mode != MODE_RECORD)
		text = open_output(c.text_path);
	if (c.mode == MODE_REPORT)
		return run_report(&c, json, text);
	return run_trace(&c, json, text);
}
