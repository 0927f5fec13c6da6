/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * findings.h — what the numbers mean, in words: detectors that read one
 * traced process's analysis (account.h: phases, iterations, the mapping
 * table, call sites) and say what they found, with the numbers, the
 * mappings and call sites that carry it, and a remedy where one is well
 * known.  Every threshold has a name and can be set (--threshold
 * NAME=VALUE); findings_thresholds() lists them.  Pure code: records in,
 * findings out (tests/unit/test_findings.c).
 *
 * The host-wide detectors (-a: RSS that grew across every interval of the
 * last N, exits whose peak was far above their end) keep their own state
 * per process: struct mw_hfind below, fed by host.c.
 */
#ifndef MW_FINDINGS_H
#define MW_FINDINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memwatch.h"
#include "analysis/idmap.h"
#include "analysis/model.h"

struct mw_account;

enum mw_finding_kind {
	MW_F_CHURN,		/* steady iterations flat in VM, paid with map/unmap/faults */
	MW_F_FIRST_TOUCH,	/* the first iteration faults far more than a steady one */
	MW_F_KEPT,		/* after a release phase, RSS that stayed */
	MW_F_SPARSE,		/* large mappings hardly ever touched */
	MW_F_WASTE,		/* mapped beyond what was asked for or used */
	MW_F_LEAK,		/* steady iterations keep growing */
	MW_F_HOST_GROWTH,	/* -a: RSS grew in each of the last N intervals */
	MW_F_HOST_EXIT_PEAK,	/* -a: an exit whose peak was far above its end */
	MW_F_PHASE_CHURN,	/* a phase ends flat, paid with map/unmap/faults */
	MW_F_COW,		/* steady iterations copy pages shared with a fork */
	MW_F_DEVICE_WINDOW,	/* the first iteration maps device memory */
	MW_F_PINNED,		/* phases that lock or pin memory (VmLck, VmPin) */
	MW_NR_FINDING_KINDS,
};

enum mw_severity { MW_SEV_INFO, MW_SEV_WARNING, MW_SEV_HIGH };

/* The thresholds, by name (findings_thresholds() says what each means). */
enum mw_threshold {
	MW_T_CHURN_BYTES,	/* mapped and unmapped per steady iteration */
	MW_T_CHURN_FAULTS,	/* faults per steady iteration */
	MW_T_FIRST_FAULTS,	/* first iteration's faults above a steady one's */
	MW_T_FIRST_RATIO,	/* ... and at least this many times a steady one's */
	MW_T_FIRST_BYTES,	/* or its RSS growth above a steady one's */
	MW_T_KEPT_BYTES,	/* RSS a mapping kept after a release phase */
	MW_T_SPARSE_BYTES,	/* mapping size from which "never touched" counts */
	MW_T_SPARSE_PCT,	/* peak RSS below this percent of the size */
	MW_T_WASTE_BYTES,	/* waste per call site */
	MW_T_WASTE_PCT,		/* ... and at least this percent of what it mapped */
	MW_T_WASTE_SIZE,	/* only mappings up to this size (larger: sparse) */
	MW_T_LEAK_BYTES,	/* median growth per steady iteration */
	MW_T_PHASE_CHURN_BYTES,	/* a flat phase's map/unmap or fault turnover ... */
	MW_T_PHASE_CHURN_RATIO,	/* ... and at least this many times its peak RSS */
	MW_T_HOST_INTERVALS,	/* -a: intervals in a row that grew */
	MW_T_HOST_GROWTH,	/* -a: ... by this much in all */
	MW_T_EXIT_BYTES,	/* -a: peak minus RSS at exit */
	MW_T_EXIT_RATIO,	/* -a: peak at least this many times RSS at exit */
	MW_T_PINNED_BYTES,	/* a phase's growth of VmLck + VmPin (peaks) */
	MW_NR_THRESHOLDS,
};

struct mw_find_opts {
	int64_t t[MW_NR_THRESHOLDS];
	bool off;		/* --threshold none: no findings at all */
};

/* A number a finding rests on: JSON "numbers": {key: value}. */
struct mw_fnum {
	const char *key;	/* static: "faults_per_iteration", ... */
	int64_t v;
};

/* A mapping that carries a finding (copied: the table may change). */
struct mw_fmap {
	uint64_t start, bytes;
	enum mw_kind kind;
	char *path;		/* as /proc prints it */
	int64_t value;		/* what it contributes, in the finding's unit */
	const char *what;	/* static: what value is ("rss_kept_bytes", ...) */
	uint64_t count;		/* mappings it stands for (churn: per size and path) */
	bool unmapped;
	char *site;		/* --stacks: its call site, or NULL */
};

/* A call site that carries it (--stacks). */
struct mw_fsite {
	uint32_t stack;		/* callsite.h id */
	char *site;		/* "func+0x1f (module) file.c:12" */
	char *allocator;	/* "glibc malloc", "pool (func)", ... or NULL */
	int64_t value;
	uint64_t count;		/* mappings */
};

#define MW_FMAX_NUMS 16
#define MW_FMAX_MAPS 5
#define MW_FMAX_SITES 5

struct mw_finding {
	enum mw_finding_kind kind;
	enum mw_severity severity;
	char *summary;		/* one line, in words, with the numbers */
	char *remedy;		/* one line, or NULL when none is well known */
	struct mw_fnum nums[MW_FMAX_NUMS];
	size_t nnums;
	struct mw_fmap maps[MW_FMAX_MAPS];
	size_t nmaps;
	uint64_t maps_more;	/* further mappings, not listed */
	struct mw_fsite sites[MW_FMAX_SITES];
	size_t nsites;
	/* host-wide */
	uint32_t pid;
	char comm[MW_COMM_LEN];
};

struct mw_findings {
	struct mw_finding *v;
	size_t n, cap;
};

const char *finding_kind_name(enum mw_finding_kind k);	/* "steady_state_churn", ... */
const char *finding_severity_name(enum mw_severity s);	/* "info", "warning", "high" */

void findings_defaults(struct mw_find_opts *o);
/* A phase named for a release ("release", "free", "unload", ...): where
 * "released but kept" looks, and where capture walks malloc's arenas. */
bool findings_release_name(const char *name);
/* "NAME=VALUE[,NAME=VALUE...]" (sizes take K/M/G suffixes), or "none";
 * 0, or -1 with *bad pointing at the part that is wrong. */
int findings_set(struct mw_find_opts *o, const char *spec, const char **bad);
/* Threshold i: its name, its default, whether it is a size, what it means. */
const char *findings_threshold_name(int i);
int64_t findings_threshold_default(int i);
bool findings_threshold_is_size(int i);
const char *findings_threshold_doc(int i);

/* Every detector of one process, in order of severity, then kind. */
void findings_compute(const struct mw_account *a, const struct mw_find_opts *o,
		      struct mw_findings *out);
void findings_free(struct mw_findings *f);
const struct mw_fnum *finding_num(const struct mw_finding *f, const char *key);

/* ---- host-wide --------------------------------------------------------- */

struct mw_hfproc {
	uint32_t pid;
	uint64_t first_ns;
	char comm[MW_COMM_LEN];
	int64_t last_rss;	/* at the last interval's end */
	bool seen;		/* in the last snapshot */
	uint32_t streak;	/* intervals in a row whose RSS grew */
	int64_t streak_rss0;	/* RSS when the streak began */
	uint64_t streak_t0;
	/* the longest streak of at least the threshold, when it ended */
	uint32_t best;
	int64_t best_rss0, best_rss1;
	uint64_t best_t0, best_t1;
	bool exited;
};

struct mw_hfind {
	struct mw_hfproc *v;
	size_t n, cap;
	struct mw_idmap by_proc;	/* (pid, first_ns) -> index */
	struct mw_findings exits;	/* exit-peak findings, as they came */
	uint64_t exits_more;
	uint64_t intervals;
};

struct mw_hproc;
void hfind_init(struct mw_hfind *h);
void hfind_free(struct mw_hfind *h);
/* One interval ended at ts: every process traced then. */
void hfind_interval(struct mw_hfind *h, const struct mw_find_opts *o, uint64_t ts,
		    const struct mw_hproc *procs, size_t n);
/* A process exited: its totals as it went. */
void hfind_exit(struct mw_hfind *h, const struct mw_find_opts *o, const struct mw_hproc *p);
/* The host-wide findings so far (caller frees with findings_free). */
void hfind_findings(const struct mw_hfind *h, const struct mw_find_opts *o,
		    uint64_t start_ns, struct mw_findings *out);

#endif /* MW_FINDINGS_H */
