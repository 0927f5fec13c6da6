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
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/libbpf.h>

#include "analysis/account.h"
#include "analysis/findings.h"
#include "capture/capture.h"
#include "capture/control.h"
#include "analysis/hists.h"
#include "host/host.h"
#include "capture/launch.h"
#include "capture/recording.h"
#include "capture/kernel.h"
#include "output/report.h"
#include "output/report_tree.h"
#include "trace.h"
#include "util.h"
#include "version.h"	/* MW_VERSION, written by make (scripts/version) */

enum cli_mode { MODE_TRACE, MODE_RECORD, MODE_REPORT, MODE_MARK };

struct cli {
	enum cli_mode mode;
	struct trace_opts trace;
	const char *json_path;
	const char *text_path;
	const char *svg_path;		/* --svg: the timeline */
	const char *folded_path;	/* --folded: folded stacks */
	bool stack_bytes_given;		/* --stack-bytes */
	bool ringbuf_given;		/* --ringbuf-size */
	FILE *folded;
	bool folded_rss;		/* --folded-by rss */
	bool interval_given;		/* -i: text rows per sample */
	const char *record_path;	/* record: -o; report: the operand */
	struct mw_marker_spec *markers;
	size_t nmarkers;
	const char *mark_name;		/* mark: the phase name */
	bool mark_iter;
	pid_t mark_session;
	bool quiet;
	long max_mappings;	/* -1: per-format default */
	unsigned int hists;	/* --hist: MW_HISTS_* (0: the default) */
	struct mw_find_opts find;	/* --threshold */
	/* host-wide (host.h) */
	struct host_opts host;
	pid_t *pids;		/* every -p */
	size_t npids;
	bool by_given;		/* --by: host-wide, even with -f */
};

enum {
	OPT_RINGBUF = 0x100,
	OPT_MAX_DEAD,
	OPT_PHASE_AT,
	OPT_ITER,
	OPT_SESSION,
	OPT_HIST,
	OPT_SVG,
	OPT_STACKS,
	OPT_FOLDED,
	OPT_FOLDED_BY,
	OPT_PYTHON,
	OPT_NO_PYTHON,
	OPT_CGROUP,
	OPT_BY,
	OPT_TOP,
	OPT_LISTEN,
	OPT_MAX_PROCS,
	OPT_THRESHOLD,
	OPT_STACK_BYTES,
};

static const struct argp_option options[] = {
	{ "pid", 'p', "PID", 0, "Trace the running process PID (all its threads); given more than once, host-wide totals of each", 0 },
	{ "all", 'a', NULL, 0, "Host-wide: every process, new ones too (per-process totals, no mappings)", 0 },
	{ "cgroup", OPT_CGROUP, "PATH", 0, "Host-wide, only the processes in this cgroup v2 directory and below (a container's cgroup, a slice)", 0 },
	{ "follow", 'f', NULL, 0, "With -p PID or -- CMD: every process it starts as well, each with its own full report (host-wide totals of the tree instead, given a host-wide option such as --by)", 0 },
	{ "by", OPT_BY, "process|cgroup|container", 0, "Host-wide tables per process (default), per cgroup, or per container (its name, and the rest of the host in one row)", 0 },
	{ "top", OPT_TOP, "N", 0, "Host-wide: rows per table and processes with their own metrics series (default 10); -f: processes with a full text report, largest peak RSS first (default 5)", 0 },
	{ "listen", OPT_LISTEN, "ADDR:PORT", 0, "Host-wide: serve Prometheus/OpenMetrics metrics on http://ADDR:PORT/metrics (PORT alone: 127.0.0.1). It shows every traced process's name and memory to whoever can connect: keep it on loopback or behind a proxy that authenticates", 0 },
	{ "max-procs", OPT_MAX_PROCS, "N", 0, "Host-wide: processes the kernel keeps at once; beyond it the least recently active are dropped (default 65536); -f: processes with a full model at once, the rest get totals (default 64)", 0 },
	{ "duration", 'd', "SECONDS", 0, "Stop after SECONDS (default: when the process exits or on Ctrl-C)", 0 },
	{ "json", 'j', "FILE", 0, "Write newline-delimited JSON to FILE ('-' for stdout); the last line is the summary", 0 },
	{ "output", 'o', "FILE", 0, "Write the text report to FILE instead of stdout (record: the recording)", 0 },
	{ "quiet", 'q', NULL, 0, "No text report", 0 },
	{ "svg", OPT_SVG, "FILE", 0, "Draw a timeline of VM and RSS, phases and iterations to FILE (SVG)", 0 },
	{ "stacks", OPT_STACKS, NULL, 0, "Record the user call stack of every mmap/mremap/brk/shmat and of the first fault in each mapping; name call sites in the report", 0 },
	{ "folded", OPT_FOLDED, "FILE", 0, "Write folded stacks (frame;frame;... bytes) for flamegraph.pl, inferno or speedscope to FILE (implies --stacks)", 0 },
	{ "stack-bytes", OPT_STACK_BYTES, "BYTES", 0, "--stacks: user stack copied at each stacked event and unwound with the binaries' CFI, 0 to 65536 (default 32768; 0: frame pointers only); K suffix", 0 },
	{ "python", OPT_PYTHON, NULL, 0, "Merge CPython 3.11 frames (script.py:LINE function) into the stacks (implies --stacks; the default with --stacks when the process runs a CPython memwatch knows)", 0 },
	{ "no-python", OPT_NO_PYTHON, NULL, 0, "Native frames only in the stacks", 0 },
	{ "folded-by", OPT_FOLDED_BY, "vm|rss", 0, "Weigh folded stacks by VM mapped (default) or by RSS faulted in", 0 },
	{ "max-mappings", 'm', "N", 0, "Show at most N mappings, folding the rest into one row (default: 25 in text, 1000 in JSON)", 0 },
	{ "phase-at", OPT_PHASE_AT, "BINARY:SYMBOL[=NAME]", 0, "Each call of SYMBOL in BINARY (an executable or a library, also one loaded later) starts phase NAME (default: SYMBOL)", 0 },
	{ "iter", OPT_ITER, "BINARY:SYMBOL", 0, "Each call of SYMBOL starts an iteration (an inference, a request)", 0 },
	{ "hist", OPT_HIST, "LIST", 0, "Histograms in the text report: a comma list of size (mmap lengths), life (mapping lifetimes), touch (peak RSS / size), iter (steady-state growth), or all, none (default: iter); the JSON has them all", 0 },
	{ "threshold", OPT_THRESHOLD, "NAME=VALUE[,...]", 0, "Set a findings threshold (the list is below), or 'none': no findings; sizes take K, M, G", 0 },
	{ "interval", 'i', "SECONDS", 0, "Sample VM and RSS every SECONDS: a row each in the text output, a \"sample\" line in the JSON (with -j or --svg and no -i: every 10 ms for 5 s, then every 0.1 s, after a minute every 1 s, no rows; report: print the recorded samples as rows)", 0 },
	{ "session", OPT_SESSION, "PID", 0, "mark: only the session of this memwatch PID (default: all)", 0 },
	{ "ringbuf-size", OPT_RINGBUF, "BYTES", 0, "Ring buffer size, a power of two, at least a page (default 8 MiB)", 0 },
	{ "max-unmapped", OPT_MAX_DEAD, "N", 0, "Keep at most N unmapped mappings, summing the rest (default 100000)", 0 },
	{ "verbose", 'v', NULL, 0, "Say more (twice: libbpf debug output; thrice: verifier statistics)", 0 },
	{ 0 },
};

static const char doc[] =
	"memwatch -- trace a process's memory (mappings, page faults, RSS) with eBPF\n\n"
	"  memwatch [OPTIONS] -p PID\n"
	"  memwatch [OPTIONS] -- CMD [ARGS...]\n"
	"  memwatch record -o FILE [OPTIONS] (-p PID | -- CMD [ARGS...])\n"
	"  memwatch report [OPTIONS] FILE\n"
	"  memwatch mark [--session PID] NAME | memwatch mark --iter\n\n"
	"With -- CMD, memwatch starts CMD and traces it from its first instruction, "
	"then exits with CMD's exit status.  Needs root, or CAP_BPF and CAP_PERFMON."
	"\vExit codes: 0 ok (or CMD's status), 1 runtime error, 2 usage, 3 not "
	"permitted, 4 no kernel BTF, 5 no tracefs, 6 bad PID, 7 output not writable, "
	"8 BPF load/attach failed, 9 kernel too old, 10 recording unreadable, "
	"11 probe binary or symbol not found, 12 no session to mark, "
	"126/127 CMD not executable/found.  See memwatch(8).";

/* --version: this build, the libbpf it runs with, what it would use here. */
static void print_version(FILE *f, struct argp_state *state)
{
	const char *lib = libbpf_version_string();

	fprintf(f, "memwatch %s\nlibbpf %s (built with %d.%d)\n", MW_VERSION,
		lib + (*lib == 'v'), LIBBPF_MAJOR_VERSION, LIBBPF_MINOR_VERSION);
	kernel_describe(f);
}

/* The thresholds of the findings, after the options in --help: rows that
 * fit 79 columns, so that argp does not reflow them. */
static char *help_filter(int key, const char *text, void *input)
{
	char *out = NULL, head[48];
	size_t len = 0;
	FILE *f;

	if (key != ARGP_KEY_HELP_POST_DOC || !(f = open_memstream(&out, &len)))
		return (char *)text;
	fputs("Findings are at the top of the report (\"findings\" in the JSON); their\n"
	      "thresholds, set with --threshold NAME=VALUE (defaults shown):\n", f);
	for (int i = 0; i < MW_NR_THRESHOLDS; i++) {
		int64_t v = findings_threshold_default(i);
		const char *doc = findings_threshold_doc(i);
		size_t col;

		if (findings_threshold_is_size(i) && v >= 1 << 20 && !(v % (1 << 20)))
			snprintf(head, sizeof(head), "  %s=%lldM", findings_threshold_name(i),
				 (long long)(v >> 20));
		else
			snprintf(head, sizeof(head), "  %s=%lld", findings_threshold_name(i),
				 (long long)v);
		fprintf(f, "%-20s", head);
		col = MW_MAX(strlen(head), (size_t)20);
		if (col > 20) {
			fputs("\n                    ", f);
			col = 20;
		}
		while (*doc) {
			size_t w = strcspn(doc, " ");

			if (col > 20 && col + 1 + w > 79) {
				fputs("\n                    ", f);
				col = 20;
			} else if (col > 20) {
				fputc(' ', f);
				col++;
			}
			fwrite(doc, 1, w, f);
			col += w;
			doc += w;
			doc += strspn(doc, " ");
		}
		fputc('\n', f);
	}
	fprintf(f, "\n%s", text ? text : "");
	fclose(f);
	return out;
}

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

/* BINARY:SYMBOL[=NAME]; the binary may itself contain ':' and '='. */
static void add_marker(struct cli *c, const char *arg, __u32 kind)
{
	char *spec = mw_xstrdup(arg), *colon, *eq = NULL;
	struct mw_marker_spec *m;

	colon = strrchr(spec, ':');
	if (colon && kind == MW_MARK_PHASE && (eq = strchr(colon, '=')))
		*eq++ = 0;
	if (!colon || colon == spec || !colon[1] || (eq && !*eq))
		usage_error("invalid marker '%s': expected BINARY:SYMBOL[=NAME]", arg);
	*colon = 0;
	if (eq && strlen(eq) >= MW_MARK_NAME_LEN)
		usage_error("invalid marker '%s': the name is too long", arg);
	c->markers = mw_xrealloc(c->markers, c->nmarkers + 1, sizeof(*c->markers));
	m = &c->markers[c->nmarkers++];
	*m = (struct mw_marker_spec){ .binary = spec, .symbol = colon + 1, .name = eq,
				      .kind = kind };
}

/* -f of one process or command: a model per process of its tree, unless
 * host-wide options ask for totals. */
static bool tree_mode(const struct cli *c)
{
	return c->host.follow && !c->host.all && !c->host.cgroup && c->npids <= 1 &&
	       (c->npids || c->trace.cmd) && !c->by_given && !c->host.listen;
}

static bool host_wide(const struct cli *c)
{
	return !tree_mode(c) &&
	       (c->host.all || c->host.cgroup || c->host.follow || c->npids > 1);
}

/* Host-wide tracing keeps totals per process, nothing per mapping. */
static void check_host_options(const struct cli *c)
{
	if (c->mode != MODE_TRACE)
		usage_error("record and report are for one process; host-wide tracing streams with -j%s", "");
	if (c->trace.stacks || c->svg_path || c->nmarkers || c->hists)
		usage_error("--stacks, --folded, --svg, --phase-at, --iter and --hist are for one process, not host-wide%s", "");
	if (c->host.all && c->host.cgroup)
		usage_error("give -a or --cgroup, not both%s", "");
	if (c->trace.cmd && (c->host.all || c->host.cgroup || c->npids))
		usage_error("host-wide, -- CMD goes only with -f (it and its children)%s", "");
	if (c->host.follow && !c->npids && !c->trace.cmd && !c->host.all && !c->host.cgroup)
		usage_error("-f follows the children of -p PID or -- CMD%s", "");
	if (c->host.max_procs && c->host.max_procs < 64)
		usage_error("host-wide, --max-procs is at least 64%s", "");
}

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct cli *c = state->input;
	long v;

	switch (key) {
	case 'p':
		v = parse_long(arg, 1, INT_MAX, "PID");
		if (!c->trace.pid)
			c->trace.pid = (pid_t)v;
		c->pids = mw_xrealloc(c->pids, c->npids + 1, sizeof(*c->pids));
		c->pids[c->npids++] = (pid_t)v;
		break;
	case 'a':
		c->host.all = true;
		break;
	case OPT_CGROUP:
		c->host.cgroup = arg;
		break;
	case 'f':
		c->host.follow = true;
		break;
	case OPT_BY:
		if (strcmp(arg, "process") && strcmp(arg, "cgroup") && strcmp(arg, "container"))
			usage_error("invalid --by '%s': expected process, cgroup or container", arg);
		c->host.by = !strcmp(arg, "cgroup") ? HOST_BY_CGROUP :
			     !strcmp(arg, "container") ? HOST_BY_CONTAINER : HOST_BY_PROCESS;
		c->by_given = true;
		break;
	case OPT_TOP:
		c->host.top = parse_long(arg, 1, 100000, "row count");
		break;
	case OPT_LISTEN:
		c->host.listen = arg;
		break;
	case OPT_MAX_PROCS:
		c->host.max_procs = parse_long(arg, 1, 1 << 22, "process count");
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
	case OPT_SVG:
		c->svg_path = arg;
		break;
	case OPT_STACKS:
		c->trace.stacks = true;
		break;
	case OPT_FOLDED:
		c->folded_path = arg;
		c->trace.stacks = true;
		break;
	case OPT_PYTHON:
		c->trace.python = true;
		c->trace.stacks = true;
		break;
	case OPT_NO_PYTHON:
		c->trace.python = false;
		break;
	case OPT_STACK_BYTES: {
		char *end;
		unsigned long long n = strtoull(arg, &end, 10);

		if (end == arg || arg[0] == '-')
			usage_error("invalid --stack-bytes '%s': expected 0 to 65536 (K suffix)", arg);
		if ((*end == 'K' || *end == 'k') && n <= 64) {
			n <<= 10;
			end++;
		}
		if (*end || n > MW_STACK_COPY_MAX)
			usage_error("invalid --stack-bytes '%s': expected 0 to 65536 (K suffix)", arg);
		c->trace.stack_bytes = (uint32_t)n;
		c->stack_bytes_given = true;
		break;
	}
	case OPT_FOLDED_BY:
		if (strcmp(arg, "vm") && strcmp(arg, "rss"))
			usage_error("invalid --folded-by '%s': expected vm or rss", arg);
		c->folded_rss = strcmp(arg, "rss") == 0;
		break;
	case 'm':
		c->max_mappings = parse_long(arg, 0, LONG_MAX, "mapping count");
		break;
	case OPT_PHASE_AT:
		add_marker(c, arg, MW_MARK_PHASE);
		break;
	case OPT_ITER:
		if (c->mode == MODE_MARK)
			c->mark_iter = true;
		else
			add_marker(c, arg, MW_MARK_ITER);
		break;
	case 'i':
		c->trace.interval = parse_seconds(arg);
		c->interval_given = true;
		break;
	case OPT_HIST:
		if (hists_parse(arg, &c->hists))
			usage_error("invalid --hist '%s': expected a comma list of size, life, touch, iter, all, none", arg);
		break;
	case OPT_THRESHOLD: {
		const char *bad = arg;

		if (findings_set(&c->find, arg, &bad))
			usage_error("invalid --threshold '%s': expected NAME=VALUE with a NAME from --help, or none", bad);
		break;
	}
	case OPT_SESSION:
		c->mark_session = parse_long(arg, 1, INT_MAX, "session PID");
		break;
	case OPT_RINGBUF:
		v = parse_long(arg, 4096, 1L << 30, "ring buffer size");
		if (v & (v - 1))
			usage_error("invalid ring buffer size '%s': must be a power of two", arg);
		c->trace.ringbuf_bytes = v;
		c->ringbuf_given = true;
		break;
	case OPT_MAX_DEAD:
		c->trace.dead_limit = parse_long(arg, 0, LONG_MAX, "unmapped mapping count");
		break;
	case 'v':
		mw_verbose++;
		break;
	case ARGP_KEY_ARG:
		if (c->mode == MODE_MARK) {
			if (c->mark_name)
				usage_error("mark: one phase name (got '%s' too)", arg);
			c->mark_name = arg;
			break;
		}
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
		if (c->mode == MODE_MARK) {
			if (!c->mark_name == !c->mark_iter)
				usage_error("mark: give a phase NAME, or --iter%s", "");
			break;
		}
		if (c->mode == MODE_REPORT) {
			if (!c->record_path)
				usage_error("report: name the recording to read%s", "");
			if (c->trace.pid || c->trace.duration)
				usage_error("report: -p and -d belong to 'memwatch record'%s", "");
			break;
		}
		if (c->mode == MODE_RECORD && !c->record_path)
			usage_error("record: -o FILE names the recording to write%s", "");
		if (host_wide(c)) {
			check_host_options(c);
			break;
		}
		if (tree_mode(c) && (c->mode != MODE_TRACE || c->svg_path || c->folded_path))
			usage_error("-f makes a report per process: record, --svg and --folded are for one%s", "");
		if (!tree_mode(c) && (c->host.max_procs || c->host.top))
			usage_error("--max-procs and --top go with -f or host-wide tracing (-a, --cgroup, several -p)%s", "");
		if (c->host.listen || c->by_given)
			usage_error("--listen and --by go with host-wide tracing (-a, --cgroup, several -p, -f)%s", "");
		if (c->trace.pid && c->trace.cmd)
			usage_error("give either -p PID or -- CMD, not both%s", "");
		if (!c->trace.pid && !c->trace.cmd)
			usage_error("nothing to trace: give -p PID, -- CMD [ARGS...] or -a%s", "");
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
		mw_err("cannot write %s: %s", path, mw_open_strerror(errno));
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

static int write_svg(struct cli *c, FILE *svg, const struct mw_account *acct)
{
	int err = report_svg(svg, acct);

	if (err)
		mw_err("writing %s failed: %s", c->svg_path, strerror(-err));
	return close_output(svg, c->svg_path) ?: (err ? MW_EXIT_OUTPUT : 0);
}

static int write_reports(struct cli *c, FILE *json, FILE *text, FILE *svg,
			 struct mw_account *acct, int status, const struct mw_kernel *k)
{
	struct report_opts ro = { .cmd_status = status, .hists = c->hists, .kernel = k,
				  .find = &c->find };
	int out_err = 0;

	if (json) {
		ro.max_mappings = c->max_mappings >= 0 ? (size_t)c->max_mappings : 1000;
		if ((!acct->json_started && report_json_start(json, acct)) ||
		    report_json_summary(json, acct, &ro))
			out_err = MW_EXIT_OUTPUT;
		out_err = close_output(json, c->json_path) ?: out_err;
	}
	if (svg)
		out_err = write_svg(c, svg, acct) ?: out_err;
	if (c->folded) {
		if (callsites_folded(c->folded, &acct->sites, acct->comm, c->folded_rss))
			out_err = MW_EXIT_OUTPUT;
		out_err = close_output(c->folded, c->folded_path) ?: out_err;
	}
	if (text) {
		ro.max_mappings = c->max_mappings >= 0 ? (size_t)c->max_mappings : 25;
		report_text(text, acct, &ro);
		out_err = close_output(text, c->text_path) ?: out_err;
	}
	return out_err;
}

/* memwatch report FILE: replay a recording through the analysis. */
static int run_report(struct cli *c, FILE *json, FILE *text, FILE *svg)
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
	report_live(&acct, &(struct report_live){ .json = json, .text = text,
					   .rows = c->interval_given });
	status = replay_into(f, &acct, &n);
	fclose(f);
	if (status == MW_REPLAY_VERSION || status == MW_REPLAY_NOTREC) {
		mw_err("%s: %s", c->record_path, replay_status_str(status));
		account_free(&acct);
		return MW_EXIT_RECORDING;
	}
	err = write_reports(c, json, text, svg, &acct, acct.wait_status, NULL);
	account_free(&acct);
	if (status != MW_REPLAY_OK) {
		mw_err("%s: %s after %llu records: the report covers those",
		       c->record_path, replay_status_str(status), (unsigned long long)n);
		return MW_EXIT_RECORDING;
	}
	return err;
}

/* The end of a run whose outputs were written as it went (host-wide, -f):
 * close them; the run's error first, then the outputs', then CMD's status. */
static int streamed_end(struct cli *c, FILE *json, FILE *text, int err, int out_err, int status)
{
	if (json)
		out_err = close_output(json, c->json_path) ?: out_err;
	if (text)
		out_err = close_output(text, c->text_path) ?: out_err;
	if (err)
		return err;
	if (out_err)
		return out_err;
	if (c->trace.cmd && status >= 0)
		return launch_exit_code(status);
	return MW_EXIT_OK;
}

/* Host-wide: tables as it goes, JSON lines, metrics. */
static int run_host(struct cli *c, FILE *json, FILE *text)
{
	struct host_opts *o = &c->host;
	int err, status;

	o->pids = c->pids;
	o->npids = c->npids;
	o->cmd = c->trace.cmd;
	o->interval = c->interval_given ? c->trace.interval : 0;
	o->duration = c->trace.duration;
	o->top = o->top ?: 10;
	o->max_procs = o->max_procs ?: 65536;
	o->ringbuf_bytes = c->trace.ringbuf_bytes;
	o->json = json;
	o->text = text;
	o->find = &c->find;
	err = host_run(o, &status);
	return streamed_end(c, json, text, err, 0, status);
}

/* -f: a report per process of the tree (output/report_tree.h). */
static int run_tree(struct cli *c, FILE *json, FILE *text)
{
	struct trace_tree_stats st = { 0 };
	struct report_opts ro = { .hists = c->hists, .kernel = kernel_get(), .find = &c->find };
	struct mw_tree_report_opts to = {
		.json = json, .text = text, .rows = c->interval_given,
		.top = c->host.top ?: 5, .dead_limit = c->trace.dead_limit,
		.json_ro = ro, .text_ro = ro,
	};
	struct mw_tree_report *r;
	struct mw_account acct;
	int err, status, out_err;

	account_init(&acct, c->trace.pid, c->trace.dead_limit);
	report_live(&acct, &(struct report_live){ .json = json, .text = text,
						  .rows = c->interval_given });
	to.root = &acct;
	to.json_ro.max_mappings = c->max_mappings >= 0 ? (size_t)c->max_mappings : 1000;
	to.text_ro.max_mappings = c->max_mappings >= 0 ? (size_t)c->max_mappings : 25;
	r = tree_report_new(&to);
	c->trace.follow = true;
	c->trace.max_models = c->host.max_procs ?: 64;
	c->trace.tree = tree_report_ops(r);
	c->trace.tree_stats = &st;
	err = trace_run(&c->trace, &acct, &status);
	out_err = tree_report_finish(r, &st);
	account_free(&acct);
	return streamed_end(c, json, text, err, out_err, status);
}

/* Trace (and with 'record', save the stream); report at the end. */
static int run_trace(struct cli *c, FILE *json, FILE *text, FILE *svg)
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
	report_live(&acct, &(struct report_live){ .json = json, .text = text,
					   .rows = c->interval_given });
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
	/* -p: how it ended comes from its exit record, as in a replay. */
	out_err = write_reports(c, json, text, svg, &acct, status >= 0 ? status : acct.wait_status,
				kernel_get());
	account_free(&acct);
	if (out_err)
		return out_err;
	if (c->trace.cmd && status >= 0)
		return launch_exit_code(status);
	return MW_EXIT_OK;
}

static void free_cli(struct cli *c)
{
	for (size_t i = 0; i < c->nmarkers; i++)
		free(c->markers[i].binary);	/* symbol and name point into it */
	free(c->markers);
	free(c->pids);
}

int main(int argc, char **argv)
{
	struct cli c = {
		.trace = { .ringbuf_bytes = 8 << 20, .max_procs = 64, .dead_limit = 100000,
			   .stack_bytes = 32 << 10, .python = true },
		.max_mappings = -1,
	};
	struct argp argp = { options, parse_opt, NULL, doc, NULL, help_filter, NULL };
	FILE *json = NULL, *text = NULL, *svg = NULL;
	int err;

	findings_defaults(&c.find);
	argv[0] = "memwatch";	/* getopt's messages name argv[0] */
	argp_program_version_hook = print_version;
	argp_err_exit_status = MW_EXIT_USAGE;
	if (argc > 1 && strcmp(argv[1], "record") == 0)
		c.mode = MODE_RECORD;
	else if (argc > 1 && strcmp(argv[1], "report") == 0)
		c.mode = MODE_REPORT;
	else if (argc > 1 && strcmp(argv[1], "mark") == 0)
		c.mode = MODE_MARK;
	if (c.mode != MODE_TRACE) {
		argv[1] = argv[0];	/* parse the rest as if it were the command line */
		argc--;
		argv++;
	}
	/* --iter takes an argument, except after 'mark'. */
	if (c.mode == MODE_MARK)
		for (int i = 1; i < argc; i++)
			if (strcmp(argv[i], "--iter") == 0)
				argv[i] = "--iter=";
	argp_parse(&argp, argc, argv, ARGP_IN_ORDER, NULL, &c);
	/* Inside a command memwatch runs: its own session, unless told. */
	if (c.mode == MODE_MARK)
		return control_mark(c.mark_session ? c.mark_session : control_env_session(),
				    c.mark_iter, c.mark_name);
	c.trace.markers = c.markers;
	c.trace.nmarkers = c.nmarkers;
	/* A series for the JSON and the timeline; text rows only with -i. */
	if (!c.interval_given && (c.json_path || c.svg_path))
		c.trace.auto_samples = true;
	/* Stack copies fill the ring buffer: room for 2048 of them (64 MiB
	 * at the default 32 KiB; importing torch makes bursts of hundreds
	 * while the loader reads a big library's tables), 64 MiB at most. */
	if (c.trace.stacks && !c.ringbuf_given)
		while (c.trace.ringbuf_bytes < MW_MIN((size_t)c.trace.stack_bytes * 2048,
						      (size_t)64 << 20))
			c.trace.ringbuf_bytes <<= 1;
	/* A BPF ring buffer is whole pages (libbpf would round it up unsaid,
	 * and the wake-up threshold is a fraction of it): 4096 is 16 KiB on
	 * 16 KiB pages. */
	if (c.trace.ringbuf_bytes < mw_page_size()) {
		mw_dbg("ring buffer: %" PRIu64 " bytes, one page (asked for %zu)",
		       mw_page_size(), c.trace.ringbuf_bytes);
		c.trace.ringbuf_bytes = mw_page_size();
	}

	if (c.json_path)
		json = open_output(c.json_path);
	if (!c.quiet && c.mode != MODE_RECORD)
		text = open_output(c.text_path);
	if (c.svg_path)
		svg = open_output(c.svg_path);
	if (c.folded_path)
		c.folded = open_output(c.folded_path);
	if (c.mode == MODE_REPORT) {
		err = run_report(&c, json, text, svg);
		free_cli(&c);
		return err;
	}
	if (host_wide(&c))
		err = run_host(&c, json, text);
	else if (tree_mode(&c))
		err = run_tree(&c, json, text);
	else
		err = run_trace(&c, json, text, svg);
	free_cli(&c);
	return err;
}
