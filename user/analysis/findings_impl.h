/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * findings_impl.h — what the detectors share, inside analysis/: building a
 * finding (findings.c) and the detectors that read iterations and phases
 * (findings_iter.c).  Not for the rest of the program: findings.h is.
 */
#ifndef MW_FINDINGS_IMPL_H
#define MW_FINDINGS_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/account.h"
#include "analysis/findings.h"
#include "analysis/idmap.h"

#define MIB (1ll << 20)

/* Call sites summed by stack (the biggest go into a finding: fi_sites). */
struct site_acc {
	uint32_t stack;
	int64_t value;
	uint64_t count;
	uint64_t max_size;
};

struct sites {
	struct site_acc *v;
	size_t n, cap;
	struct mw_idmap by_stack;	/* stack + 1 -> index */
};

/* A mapping and how much of something it took (sorted by fi_took_cmp). */
struct took {
	const struct mw_mapping *mp;
	int64_t bytes;
};

/* qsort(), which must not be handed NULL, not even for nothing. */
void fi_sort(void *v, size_t n, size_t size, int (*cmp)(const void *, const void *));
/* A new finding of @kind in @out; its text and numbers are the caller's. */
struct mw_finding *fi_new(struct mw_findings *out, enum mw_finding_kind kind,
			  enum mw_severity sev);
char *fi_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void fi_num(struct mw_finding *f, const char *key, int64_t v);
/* A mapping named in f, with @value of @what; NULL past MW_FMAX_MAPS. */
struct mw_fmap *fi_map(struct mw_finding *f, const struct mw_account *a,
		       const struct mw_mapping *mp, int64_t value, const char *what,
		       uint32_t stack);
/* "12.5 MiB", "12,345": into buf (32 bytes). */
const char *fi_hum(int64_t v, char *buf);
const char *fi_commas(uint64_t v, char *buf);
void fi_sites_add(struct sites *s, uint32_t stack, int64_t value, uint64_t size);
/* The sites of acc, biggest first, into f; returns how many say glibc (with
 * the largest such mapping in *glibc_max, when given). */
size_t fi_sites(struct mw_finding *f, const struct mw_account *a, struct sites *acc,
		uint64_t *glibc_max);
int fi_took_cmp(const void *x, const void *y);
/* s contains w, in any case (NULL s: no). */
bool fi_has_word(const char *s, const char *w);
/* Every mapping, live in address order then the unmapped, in an array the
 * next call reuses (the detectors run one at a time, at report time). */
struct mw_mapping **fi_all_mappings(const struct mw_model *m, size_t *n);

/* The detectors of findings_iter.c. */
void find_churn(const struct mw_account *a, const struct mw_find_opts *o,
		struct mw_findings *out);
void find_cow(const struct mw_account *a, const struct mw_find_opts *o,
	      struct mw_findings *out);
void find_phase_churn(const struct mw_account *a, const struct mw_find_opts *o,
		      struct mw_findings *out);
void find_device_window(const struct mw_account *a, const struct mw_find_opts *o,
			struct mw_findings *out);
void find_first_touch(const struct mw_account *a, const struct mw_find_opts *o,
		      struct mw_findings *out);
void find_leak(const struct mw_account *a, const struct mw_find_opts *o,
	       struct mw_findings *out);

/* The detectors of findings_maps.c. */
void find_kept(const struct mw_account *a, const struct mw_find_opts *o,
	       struct mw_findings *out);
void find_sparse(const struct mw_account *a, const struct mw_find_opts *o,
		 struct mw_findings *out);
void find_waste(const struct mw_account *a, const struct mw_find_opts *o,
		struct mw_findings *out);
void find_pinned(const struct mw_account *a, const struct mw_find_opts *o,
		 struct mw_findings *out);

#endif /* MW_FINDINGS_IMPL_H */
