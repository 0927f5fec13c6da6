// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * procfs.c — parsers and readers for /proc/PID/{maps,smaps,status,stat,
 * pagemap}.
 *
 * Every parser walks a (pointer, end) cursor and checks it before each byte,
 * so input is never assumed to be NUL-terminated and a fuzzer cannot push a
 * read past the buffer.  The accepted grammar is what the kernel prints; any
 * deviation is -EINVAL rather than a best guess, because a silently
 * misparsed mapping would corrupt every number derived from it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "capture/procfs.h"
#include "memwatch.h"
#include "util.h"

/* ---- bounded cursor ---------------------------------------------------- */

struct cur {
	const char *p;
	const char *end;
};

static bool cur_eof(const struct cur *c)
{
	return c->p >= c->end;
}

static bool cur_char(struct cur *c, char ch)
{
	if (cur_eof(c) || *c->p != ch)
		return false;
	c->p++;
	return true;
}

static void cur_skip_blanks(struct cur *c)
{
	while (!cur_eof(c) && (*c->p == ' ' || *c->p == '\t'))
		c->p++;
}

/* True when only blanks are left: /proc lines may carry a trailing space. */
static bool cur_rest_blank(struct cur *c)
{
	cur_skip_blanks(c);
	return cur_eof(c);
}

static int hex_digit(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/*
 * One or more digits in @base (10 or 16) whose value fits in @max.
 * Overflow is an error, not a wrap: a wrapped address would look valid.
 */
static bool cur_num(struct cur *c, unsigned int base, uint64_t max,
		    uint64_t *out)
{
	const char *start = c->p;
	uint64_t v = 0;
	int d;

	while (!cur_eof(c)) {
		d = hex_digit(*c->p);
		if (d < 0 || (unsigned int)d >= base)
			break;
		if ((uint64_t)d > max || v > (max - d) / base)
			return false;
		v = v * base + d;
		c->p++;
	}
	if (c->p == start)
		return false;
	*out = v;
	return true;
}

static bool cur_hex(struct cur *c, uint64_t max, uint64_t *out)
{
	return cur_num(c, 16, max, out);
}

static bool cur_dec(struct cur *c, uint64_t max, uint64_t *out)
{
	return cur_num(c, 10, max, out);
}

/* "   1234 kB" to bytes; the whole rest of the line must be that. */
static bool cur_kb(struct cur *c, uint64_t *bytes)
{
	uint64_t kb;

	cur_skip_blanks(c);
	if (!cur_dec(c, UINT64_MAX / 1024, &kb))
		return false;
	cur_skip_blanks(c);
	if (!cur_char(c, 'k') || !cur_char(c, 'B') || !cur_rest_blank(c))
		return false;
	*bytes = kb * 1024;
	return true;
}

/* A decimal that fits an int (pids, thread counts), alone on its line. */
static bool cur_int(struct cur *c, int *out)
{
	uint64_t v;

	cur_skip_blanks(c);
	if (!cur_dec(c, INT_MAX, &v) || !cur_rest_blank(c))
		return false;
	*out = (int)v;
	return true;
}

/* Cut the next line (without its '\n') off [*pos, end). */
static bool next_line(const char **pos, const char *end, struct cur *line)
{
	const char *nl;

	if (*pos >= end)
		return false;
	nl = memchr(*pos, '\n', end - *pos);
	line->p = *pos;
	line->end = nl ? nl : end;
	*pos = nl ? nl + 1 : end;
	return true;
}

/* ---- maps --------------------------------------------------------------- */

static const char deleted_suffix[] = " (deleted)";

/*
 * Store the path, minus " (deleted)", with the kernel's one escape undone:
 * seq_path() prints '\n' in a file name as the octal "\012" so that a name
 * cannot forge an extra maps line.
 */
static int vma_set_path(struct pm_vma *v, const char *s, size_t n)
{
	const size_t sl = sizeof(deleted_suffix) - 1;
	size_t i = 0, j = 0;
	char *d;

	if (memchr(s, '\0', n))
		return -EINVAL;
	if (n >= sl && !memcmp(s + n - sl, deleted_suffix, sl)) {
		v->deleted = true;
		n -= sl;
	}
	d = malloc(n + 1);
	if (!d)
		return -ENOMEM;
	while (i < n) {
		if (n - i >= 4 && !memcmp(s + i, "\\012", 4)) {
			d[j++] = '\n';
			i += 4;
		} else {
			d[j++] = s[i++];
		}
	}
	d[j] = '\0';
	v->path = d;
	return 0;
}

/* "rwxp": each position is its letter or '-', the last 'p' or 's'. */
static bool cur_perms(struct cur *c, char perms[5])
{
	static const char letter[] = "rwx";
	int i;

	if (c->end - c->p < 4)
		return false;
	for (i = 0; i < 3; i++) {
		if (c->p[i] != letter[i] && c->p[i] != '-')
			return false;
	}
	if (c->p[3] != 'p' && c->p[3] != 's')
		return false;
	memcpy(perms, c->p, 4);
	perms[4] = '\0';
	c->p += 4;
	return true;
}

/*
 * "start-end perms offset major:minor inode[ padding path]".  The kernel
 * separates the fixed fields with exactly one space, then pads with spaces
 * up to the path column (and leaves one trailing space when there is no
 * path), so everything after that run of spaces is the path, spaces and all.
 */
static int parse_vma(struct cur c, struct pm_vma *out)
{
	uint64_t major, minor;

	memset(out, 0, sizeof(*out));
	if (!cur_hex(&c, UINT64_MAX, &out->start) || !cur_char(&c, '-') ||
	    !cur_hex(&c, UINT64_MAX, &out->end) || !cur_char(&c, ' ') ||
	    !cur_perms(&c, out->perms) || !cur_char(&c, ' ') ||
	    !cur_hex(&c, UINT64_MAX, &out->pgoff) || !cur_char(&c, ' ') ||
	    !cur_hex(&c, UINT32_MAX, &major) || !cur_char(&c, ':') ||
	    !cur_hex(&c, UINT32_MAX, &minor) || !cur_char(&c, ' ') ||
	    !cur_dec(&c, UINT64_MAX, &out->ino))
		return -EINVAL;
	if (out->end < out->start)
		return -EINVAL;
	/* The inode ends at a space or the end of line, never "12abc". */
	if (!cur_eof(&c) && *c.p != ' ')
		return -EINVAL;
	while (!cur_eof(&c) && *c.p == ' ')
		c.p++;
	out->dev_major = (uint32_t)major;
	out->dev_minor = (uint32_t)minor;
	return vma_set_path(out, c.p, c.end - c.p);
}

int procfs_parse_maps_line(const char *line, struct pm_vma *out)
{
	struct cur c;

	if (!out)
		return -EINVAL;
	if (!line) {
		memset(out, 0, sizeof(*out));
		return -EINVAL;
	}
	/* A caller may hand us the line with its '\n' (or more) attached. */
	c.p = line;
	c.end = line + strcspn(line, "\n");
	return parse_vma(c, out);
}

void procfs_maps_free(struct pm_maps *m)
{
	size_t i;

	if (!m)
		return;
	for (i = 0; i < m->n; i++)
		free(m->v[i].path);
	free(m->v);
	m->v = NULL;
	m->n = 0;
}

/* Room for one more VMA at m->v[m->n]; the caller bumps m->n once it holds. */
static struct pm_vma *maps_slot(struct pm_maps *m, size_t *cap)
{
	struct pm_vma *nv;
	size_t ncap;

	if (m->n < *cap)
		return &m->v[m->n];
	ncap = *cap ? *cap * 2 : 64;
	if (ncap > SIZE_MAX / sizeof(*nv))
		return NULL;
	nv = realloc(m->v, ncap * sizeof(*nv));
	if (!nv)
		return NULL;
	m->v = nv;
	*cap = ncap;
	return &m->v[m->n];
}

/* An smaps VMA header starts "hexdigits-"; counter keys never do. */
static bool is_vma_header(const struct cur *line)
{
	const char *p = line->p;

	while (p < line->end && hex_digit(*p) >= 0)
		p++;
	return p > line->p && p < line->end && *p == '-';
}

/* The smaps counters memwatch keeps, and where they go. */
static const struct smaps_key {
	const char *key;
	size_t off;
} smaps_keys[] = {
	{ "Rss", offsetof(struct pm_vma, rss) },
	{ "Pss", offsetof(struct pm_vma, pss) },
	{ "Anonymous", offsetof(struct pm_vma, anon) },
	{ "AnonHugePages", offsetof(struct pm_vma, anon_huge) },
	{ "Swap", offsetof(struct pm_vma, swap) },
	{ "SwapPss", offsetof(struct pm_vma, swap_pss) },
	{ "Locked", offsetof(struct pm_vma, locked) },
	{ "Pss_Dirty", offsetof(struct pm_vma, pss_dirty) },
	{ "Pss_Anon", offsetof(struct pm_vma, pss_anon) },	/* smaps_rollup */
	{ "Pss_File", offsetof(struct pm_vma, pss_file) },
	{ "Pss_Shmem", offsetof(struct pm_vma, pss_shmem) },
};

/* Where an smaps counter memwatch keeps goes, or NULL to ignore the line. */
static uint64_t *smaps_counter(struct pm_vma *v, const char *key, size_t len)
{
	for (size_t i = 0; i < sizeof(smaps_keys) / sizeof(smaps_keys[0]); i++)
		if (strlen(smaps_keys[i].key) == len && !memcmp(key, smaps_keys[i].key, len))
			return (uint64_t *)((char *)v + smaps_keys[i].off);
	return NULL;
}

/*
 * "VmFlags: rd wr mr mw me ac sd pf io": two letters a flag
 * (show_smap_vma_flags() in fs/proc/task_mmu.c); the ones maps' perms do
 * not say, and memwatch tells device and locked memory by.
 */
static int parse_vm_flags(struct cur c, struct pm_vma *v)
{
	static const struct { char n[3]; uint64_t bit; } names[] = {
		{ "pf", MW_VM_PFNMAP }, { "io", MW_VM_IO }, { "mm", MW_VM_MIXEDMAP },
		{ "lo", MW_VM_LOCKED },
	};

	v->has_vm_flags = true;
	while (c.p < c.end) {
		const char *w;

		while (c.p < c.end && *c.p == ' ')
			c.p++;
		w = c.p;
		while (c.p < c.end && *c.p != ' ')
			c.p++;
		if (c.p - w != 2)
			continue;
		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (!memcmp(w, names[i].n, 2))
				v->vm_flags |= names[i].bit;
	}
	return 0;
}

/*
 * "Key:   N kB", or VmFlags.  Keys we do not use (THPeligible, ...) are
 * skipped unparsed, so a new kernel adding one costs nothing; but every
 * line must still look like "Key:" or the VMA structure is in doubt.
 */
static int parse_smaps_line(struct cur c, struct pm_vma *v)
{
	const char *colon = memchr(c.p, ':', c.end - c.p);
	uint64_t *dst;

	if (!colon || colon == c.p)
		return -EINVAL;
	if (colon - c.p == 7 && !memcmp(c.p, "VmFlags", 7))
		return parse_vm_flags((struct cur){ colon + 1, c.end }, v);
	dst = smaps_counter(v, c.p, colon - c.p);
	if (!dst)
		return 0;
	c.p = colon + 1;
	return cur_kb(&c, dst) ? 0 : -EINVAL;
}

/* maps and smaps share one loop: smaps only adds counter lines. */
static int parse_vmas(const char *text, size_t len, struct pm_maps *out,
		      bool smaps)
{
	struct pm_maps m = { NULL, 0 };
	const char *pos = text;
	struct pm_vma *v;
	struct cur line;
	size_t cap = 0;
	int err = 0;

	if (!out)
		return -EINVAL;
	out->v = NULL;
	out->n = 0;
	if (!text)
		return len ? -EINVAL : 0;

	while (!err && next_line(&pos, text + len, &line)) {
		if (cur_eof(&line))
			continue;
		if (!smaps || is_vma_header(&line)) {
			v = maps_slot(&m, &cap);
			if (!v) {
				err = -ENOMEM;
				break;
			}
			err = parse_vma(line, v);
			if (!err)
				m.n++;
		} else if (m.n) {
			err = parse_smaps_line(line, &m.v[m.n - 1]);
		} else {
			err = -EINVAL;	/* counters before any header */
		}
	}
	if (err) {
		procfs_maps_free(&m);
		return err;
	}
	*out = m;
	return 0;
}

int procfs_parse_maps(const char *text, size_t len, struct pm_maps *out)
{
	return parse_vmas(text, len, out, false);
}

int procfs_parse_smaps(const char *text, size_t len, struct pm_maps *out)
{
	return parse_vmas(text, len, out, true);
}

/* ---- status ------------------------------------------------------------- */

enum status_kind { ST_NAME, ST_STATE, ST_PID, ST_INT, ST_KB };

struct status_key {
	const char *key;
	enum status_kind kind;
	size_t off;
};

#define STATUS_KEY(k, kind, field) { k, kind, offsetof(struct pm_status, field) }

/* Order matters: the masks below name keys by their index. */
static const struct status_key status_keys[] = {
	STATUS_KEY("Name",	ST_NAME,  name),
	STATUS_KEY("State",	ST_STATE, state),
	STATUS_KEY("Tgid",	ST_PID,   tgid),
	STATUS_KEY("PPid",	ST_PID,   ppid),
	STATUS_KEY("Threads",	ST_INT,   threads),
	STATUS_KEY("VmSize",	ST_KB,    vm_size),
	STATUS_KEY("VmPeak",	ST_KB,    vm_peak),
	STATUS_KEY("VmHWM",	ST_KB,    vm_hwm),
	STATUS_KEY("VmRSS",	ST_KB,    vm_rss),
	STATUS_KEY("RssAnon",	ST_KB,    rss_anon),
	STATUS_KEY("RssFile",	ST_KB,    rss_file),
	STATUS_KEY("RssShmem",	ST_KB,    rss_shmem),
	STATUS_KEY("VmSwap",	ST_KB,    vm_swap),
	STATUS_KEY("VmLck",	ST_KB,    vm_lck),
	STATUS_KEY("VmPin",	ST_KB,    vm_pin),
};

#define NR_STATUS_KEYS	(sizeof(status_keys) / sizeof(status_keys[0]))
_Static_assert(sizeof(pid_t) == sizeof(int), "pid_t is parsed as an int");
_Static_assert(NR_STATUS_KEYS <= 32, "status keys fit the seen mask");

/* The first five keys: every task, kernel thread or zombie, has them. */
#define STATUS_REQUIRED	0x1fu
#define STATUS_VMSIZE	(1u << 5)

/*
 * The name is copied as printed, escapes included: unescaping would make
 * "a\nb" and a real newline indistinguishable to whoever prints it next.
 * The kernel writes "Name:\t" and escapes tabs in the name, so leading
 * tabs are only the separator.
 */
static void status_name(struct cur c, char *name, size_t size)
{
	size_t n;

	while (!cur_eof(&c) && *c.p == '\t')
		c.p++;
	n = c.end - c.p;
	if (n > size - 1)
		n = size - 1;
	memcpy(name, c.p, n);
	name[n] = '\0';
}

static int status_value(const struct status_key *k, struct cur c,
			struct pm_status *out)
{
	void *dst = (char *)out + k->off;

	switch (k->kind) {
	case ST_NAME:
		status_name(c, dst, sizeof(out->name));
		return 0;
	case ST_STATE:
		cur_skip_blanks(&c);
		if (cur_eof(&c))
			return -EINVAL;
		*(char *)dst = *c.p;
		return 0;
	case ST_PID:
	case ST_INT:
		/* pid_t is int on Linux, so one parser serves both */
		return cur_int(&c, dst) ? 0 : -EINVAL;
	case ST_KB:
		return cur_kb(&c, dst) ? 0 : -EINVAL;
	}
	return -EINVAL;
}

static int status_line(struct cur line, struct pm_status *out,
		       unsigned int *seen)
{
	const char *colon = memchr(line.p, ':', line.end - line.p);
	size_t klen, i;

	if (!colon)
		return -EINVAL;
	klen = colon - line.p;
	for (i = 0; i < NR_STATUS_KEYS; i++) {
		const struct status_key *k = &status_keys[i];

		if (strlen(k->key) != klen || memcmp(k->key, line.p, klen))
			continue;
		*seen |= 1u << i;
		line.p = colon + 1;
		return status_value(k, line, out);
	}
	return 0;
}

int procfs_parse_status(const char *text, size_t len, struct pm_status *out)
{
	const char *pos = text;
	unsigned int seen = 0;
	struct cur line;
	int err = 0;

	if (!out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	if (!text)
		return -EINVAL;
	while (!err && next_line(&pos, text + len, &line)) {
		if (!cur_eof(&line))
			err = status_line(line, out, &seen);
	}
	if (!err && (seen & STATUS_REQUIRED) != STATUS_REQUIRED)
		err = -EINVAL;
	if (err) {
		memset(out, 0, sizeof(*out));
		return err;
	}
	out->kernel_thread = !(seen & STATUS_VMSIZE);
	return 0;
}

/* ---- stat --------------------------------------------------------------- */

#define STAT_MIN_FIELDS	47	/* start_brk, the last field we use */

/* Fields we do not keep must still be integers (some are negative). */
static bool stat_token_ok(struct cur tok)
{
	uint64_t v;

	cur_char(&tok, '-');
	return cur_dec(&tok, UINT64_MAX, &v) && cur_eof(&tok);
}

static bool stat_u64(struct cur tok, uint64_t *out)
{
	return cur_dec(&tok, UINT64_MAX, out) && cur_eof(&tok);
}

static int stat_field(int n, struct cur tok, struct pm_stat *out)
{
	uint64_t *dst = NULL;

	switch (n) {
	case 3:
		if (tok.end - tok.p != 1)
			return -EINVAL;
		out->state = *tok.p;
		return 0;
	case 10:
		dst = &out->minflt;
		break;
	case 12:
		dst = &out->majflt;
		break;
	case 28:
		dst = &out->start_stack;
		break;
	case 47:
		dst = &out->start_brk;
		break;
	default:
		return stat_token_ok(tok) ? 0 : -EINVAL;
	}
	return stat_u64(tok, dst) ? 0 : -EINVAL;
}

/*
 * "pid (comm) S f4 f5 ...".  stat prints comm raw, so it may contain
 * spaces, ')' and even '\n': only the last ')' in the text ends it.
 */
static int parse_stat(const char *text, size_t len, struct pm_stat *out)
{
	const char *rparen = NULL;
	struct cur c, tok;
	uint64_t pid;
	const char *nl;
	int n = 2, err;
	size_t i;

	for (i = len; i > 0; i--) {
		if (text[i - 1] == ')') {
			rparen = text + i - 1;
			break;
		}
	}
	if (!rparen)
		return -EINVAL;
	c.p = text;
	c.end = rparen;
	if (!cur_dec(&c, INT_MAX, &pid) || !cur_char(&c, ' ') ||
	    !cur_char(&c, '('))
		return -EINVAL;

	c.p = rparen + 1;
	c.end = text + len;
	nl = memchr(c.p, '\n', c.end - c.p);
	if (nl)
		c.end = nl;
	while (!cur_eof(&c)) {
		if (!cur_char(&c, ' '))
			return -EINVAL;
		tok.p = c.p;
		while (!cur_eof(&c) && *c.p != ' ')
			c.p++;
		tok.end = c.p;
		if (tok.p == tok.end)
			return -EINVAL;
		err = stat_field(++n, tok, out);
		if (err)
			return err;
	}
	return n >= STAT_MIN_FIELDS ? 0 : -EINVAL;
}

int procfs_parse_stat(const char *text, size_t len, struct pm_stat *out)
{
	int err;

	if (!out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	if (!text)
		return -EINVAL;
	err = parse_stat(text, len, out);
	if (err)
		memset(out, 0, sizeof(*out));
	return err;
}

/* ---- readers ------------------------------------------------------------ */

#define READ_INITIAL	4096
#define READ_MAX	((size_t)1 << 30)	/* far beyond any sane /proc file */

/* A task that dies while we read makes the kernel say ESRCH: it is gone. */
static int neg_errno(void)
{
	return errno == ESRCH ? -ENOENT : -errno;
}

/* /proc files report st_size 0, so read until EOF into a doubling buffer. */
/* until: a CLOCK_MONOTONIC time (mw_now_ns()) past which the read gives up
 * with -ETIME, 0 for none; one read() of a seq_file is a page or so. */
static int read_fd(int fd, char **buf, size_t *len, uint64_t until)
{
	size_t cap = READ_INITIAL, n = 0;
	char *b, *nb;
	ssize_t r;

	b = malloc(cap + 1);
	if (!b)
		return -ENOMEM;
	for (;;) {
		if (n == cap) {
			if (cap >= READ_MAX) {
				free(b);
				return -EFBIG;
			}
			cap *= 2;
			nb = realloc(b, cap + 1);
			if (!nb) {
				free(b);
				return -ENOMEM;
			}
			b = nb;
		}
		r = read(fd, b + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int err = neg_errno();

			free(b);
			return err;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (until && mw_now_ns() > until) {
			free(b);
			return -ETIME;
		}
	}
	b[n] = '\0';
	*buf = b;
	*len = n;
	return 0;
}

int procfs_read_file(const char *path, char **buf, size_t *len)
{
	return procfs_read_file_until(path, buf, len, 0);
}

int procfs_read_file_until(const char *path, char **buf, size_t *len, uint64_t until)
{
	int fd, err;

	if (!buf || !len)
		return -EINVAL;
	*buf = NULL;
	*len = 0;
	if (!path)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return neg_errno();
	err = read_fd(fd, buf, len, until);
	close(fd);
	return err;
}

static int proc_path(char *path, size_t size, pid_t pid, const char *file)
{
	if (pid <= 0)
		return -EINVAL;
	snprintf(path, size, "/proc/%d/%s", (int)pid, file);
	return 0;
}

static int read_pid_file(pid_t pid, const char *file, char **buf, size_t *len)
{
	char path[64];
	int err;

	*buf = NULL;
	*len = 0;
	err = proc_path(path, sizeof(path), pid, file);
	if (err)
		return err;
	return procfs_read_file(path, buf, len);
}

static int read_vmas(pid_t pid, const char *file, struct pm_maps *out,
		     bool smaps)
{
	size_t len;
	char *buf;
	int err;

	if (!out)
		return -EINVAL;
	out->v = NULL;
	out->n = 0;
	err = read_pid_file(pid, file, &buf, &len);
	if (err)
		return err;
	err = parse_vmas(buf, len, out, smaps);
	free(buf);
	return err;
}

int procfs_read_maps(pid_t pid, struct pm_maps *out)
{
	return read_vmas(pid, "maps", out, false);
}

int procfs_read_smaps(pid_t pid, struct pm_maps *out)
{
	return read_vmas(pid, "smaps", out, true);
}

int procfs_read_status(pid_t pid, struct pm_status *out)
{
	size_t len;
	char *buf;
	int err;

	if (!out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	err = read_pid_file(pid, "status", &buf, &len);
	if (err)
		return err;
	err = procfs_parse_status(buf, len, out);
	free(buf);
	return err;
}

/*
 * stat has start_brk but not brk.  The kernel labels [heap] the VMA that
 * brk(2) grows, [start_brk, PAGE_ALIGN(brk)), so its end is the break to
 * page granularity; no such VMA means the heap is still empty.
 */
static int read_brk(pid_t pid, uint64_t start_brk, uint64_t *brk)
{
	struct pm_maps m;
	size_t i;
	int err;

	*brk = start_brk;
	err = procfs_read_maps(pid, &m);
	if (err)
		return err;
	for (i = 0; i < m.n; i++) {
		if (!strcmp(m.v[i].path, "[heap]")) {
			*brk = m.v[i].end;
			break;
		}
	}
	procfs_maps_free(&m);
	return 0;
}

int procfs_read_stat(pid_t pid, struct pm_stat *out)
{
	size_t len;
	char *buf;
	int err;

	if (!out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	err = read_pid_file(pid, "stat", &buf, &len);
	if (err)
		return err;
	err = procfs_parse_stat(buf, len, out);
	free(buf);
	/* start_brk reads 0 for kernel threads and when we may not look */
	if (!err && out->start_brk)
		err = read_brk(pid, out->start_brk, &out->brk);
	if (err)
		memset(out, 0, sizeof(*out));
	return err;
}

/* ---- pagemap ------------------------------------------------------------ */

#define PM_PRESENT	(1ULL << 63)
#define PM_FILE		(1ULL << 61)	/* file page or shared anon */
#define PM_PFN		((1ULL << 55) - 1)	/* present: the page frame, 0 if hidden */
#define PAGEMAP_CHUNK	4096		/* entries per pread(): 32 KiB */

/* The zero page's frame and the huge zero page's first, 0: not known; the
 * pages of a PMD (a huge zero page): a page table is a page of 8-byte
 * entries, so 512 with 4 KiB pages (2 MiB), 2048 with 16 KiB (32 MiB),
 * 8192 with 64 KiB (512 MiB). */
static uint64_t zero_pfn, huge_zero_pfn, pmd_pages = 512;

/* The frame behind addr in this process, 0: none or hidden. */
static uint64_t self_pfn(int fd, const volatile char *addr, long ps)
{
	uint64_t e = 0;

	(void)*addr;	/* a read fault: the zero page, not a page of our own */
	if (pread(fd, &e, sizeof(e), (off_t)((uintptr_t)addr / ps * sizeof(e))) != sizeof(e))
		return 0;
	return e & PM_PRESENT ? e & PM_PFN : 0;
}

/*
 * The zero pages' frames, as two live read-only mappings see them: a frame
 * both share is the kernel's zero page.  Kernels that give every read
 * fault a page of its own (seen on a 6.18 build: thp_zero_page_alloc stays
 * 0) show two frames, and there is no zero page to tell apart.  Taking one
 * such frame for it would hide a page of the traced process once the probe
 * freed it and the process got it: -2 MiB for a huge page (e2e thp/cmd).
 */
void procfs_pagemap_probe_zero(void)
{
	long ps = sysconf(_SC_PAGESIZE);
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	uint64_t a, b;
	size_t huge;
	char *p, *h;

	zero_pfn = huge_zero_pfn = 0;
	if (fd < 0 || ps <= 0)
		goto out;
	pmd_pages = (uint64_t)ps / sizeof(uint64_t);
	huge = (size_t)ps * pmd_pages;
	p = mmap(NULL, 2 * (size_t)ps, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p != MAP_FAILED) {
		a = self_pfn(fd, p, ps);
		b = self_pfn(fd, p + ps, ps);
		if (a && a == b)
			zero_pfn = a;
		munmap(p, 2 * (size_t)ps);
	}
	/* A read fault in a huge-page-eligible, aligned range maps the huge
	 * zero page where THP is on and use_zero_page is set; otherwise a
	 * small zero page or nothing, and no process has a huge one.  Two
	 * such ranges, both mapped, share it. */
	p = mmap(NULL, 3 * huge, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p != MAP_FAILED) {
		h = (char *)(((uintptr_t)p + huge - 1) & ~(uintptr_t)(huge - 1));
		madvise(h, 2 * huge, MADV_HUGEPAGE);
		a = self_pfn(fd, h, ps);
		b = self_pfn(fd, h + huge, ps);
		if (a && a == b && a != zero_pfn && a % pmd_pages == 0 &&
		    self_pfn(fd, h + huge - ps, ps) == a + pmd_pages - 1)
			huge_zero_pfn = a;
		munmap(p, 3 * huge);
	}
out:
	if (fd >= 0)
		close(fd);
}

void procfs_pagemap_zero_pfns(uint64_t *zero, uint64_t *huge_zero)
{
	*zero = zero_pfn;
	*huge_zero = huge_zero_pfn;
}

/*
 * Present but not resident: where a process read memory it never wrote,
 * its page table maps the shared zero page (or a huge one), which neither
 * the RSS counters nor smaps count (vm_normal_page() skips it).  pagemap
 * shows it present, so it is told apart by its frame.
 */
static bool pagemap_zero(uint64_t e)
{
	uint64_t pfn = e & PM_PFN;

	return pfn && ((zero_pfn && pfn == zero_pfn) ||
		       (huge_zero_pfn && pfn - huge_zero_pfn < pmd_pages));
}

/* A page the RSS counters and smaps count: present, not a zero page. */
static bool pagemap_resident(uint64_t e)
{
	return (e & PM_PRESENT) && !pagemap_zero(e);
}

/* What pagemap_walk() hands each run of entries to; pg: the first's page. */
typedef void (*pagemap_fn)(const uint64_t *e, size_t n, uint64_t pg, void *ctx);

struct pagemap_counts {
	uint64_t anon, file;
};

static void pagemap_count(const uint64_t *e, size_t n, uint64_t pg, void *ctx)
{
	struct pagemap_counts *c = ctx;

	for (size_t i = 0; i < n; i++) {
		if (!pagemap_resident(e[i]))
			continue;
		if (e[i] & PM_FILE)
			c->file++;
		else
			c->anon++;
	}
}

struct pagemap_bits {
	uint64_t first;		/* the page of bit 0 */
	uint64_t *bits;
};

static void pagemap_mark(const uint64_t *e, size_t n, uint64_t pg, void *ctx)
{
	struct pagemap_bits *b = ctx;

	for (size_t i = 0; i < n; i++) {
		uint64_t k = pg + i - b->first;

		if (pagemap_resident(e[i]))
			b->bits[k / 64] |= 1ull << (k % 64);
	}
}

/*
 * Entry i of pagemap describes virtual page i, so the file offset is
 * page * 8; with pages of at least 4 KiB that stays below 2^55 and fits
 * off_t.  Past the top of the user address space the kernel returns EOF,
 * which simply ends the walk.
 */
static int pagemap_walk(int fd, uint64_t pg, uint64_t pg_end, uint64_t *e,
			pagemap_fn fn, void *ctx)
{
	size_t want;
	ssize_t r;

	while (pg < pg_end) {
		want = pg_end - pg < PAGEMAP_CHUNK ? pg_end - pg : PAGEMAP_CHUNK;
		r = pread(fd, e, want * sizeof(*e), (off_t)(pg * sizeof(*e)));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return neg_errno();
		/* The end of user space ([vsyscall] is above it), or the
		 * address space is gone (past exit_mm(), a zombie): page 0
		 * tells which, as it always has an entry while there is one.
		 * Gone is an error, never "nothing resident". */
		if ((size_t)r < sizeof(*e)) {
			uint64_t first;

			if (pg && pread(fd, &first, sizeof(first), 0) == sizeof(first))
				break;
			return -ESRCH;
		}
		want = (size_t)r / sizeof(*e);
		fn(e, want, pg, ctx);
		pg += want;
	}
	return 0;
}

int procfs_pagemap_open(pid_t pid)
{
	char path[64];
	int fd, err = proc_path(path, sizeof(path), pid, "pagemap");

	if (err)
		return err;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? neg_errno() : fd;
}

/* The pages of [start, end), ps bytes each, through fn, with a chunk
 * buffer of its own.  0 or -errno. */
static int pagemap_range(int fd, uint64_t start, uint64_t end, uint64_t ps,
			 pagemap_fn fn, void *ctx)
{
	uint64_t *e;
	int err;

	if (start >= end)
		return 0;
	e = malloc(PAGEMAP_CHUNK * sizeof(*e));
	if (!e)
		return -ENOMEM;
	err = pagemap_walk(fd, start / ps, end / ps + (end % ps != 0), e, fn, ctx);
	free(e);
	return err;
}

/* The kernel's page size, or 0. */
static uint64_t page_size(void)
{
	long sz = sysconf(_SC_PAGESIZE);

	return sz > 0 ? (uint64_t)sz : 0;
}

int procfs_pagemap_rss_fd(int fd, uint64_t start, uint64_t end,
			  uint64_t *anon_bytes, uint64_t *file_bytes)
{
	struct pagemap_counts c = { 0 };
	uint64_t ps = page_size();
	int err;

	if (!anon_bytes || !file_bytes || !ps)
		return -EINVAL;
	*anon_bytes = 0;
	*file_bytes = 0;
	err = pagemap_range(fd, start, end, ps, pagemap_count, &c);
	if (err)
		return err;
	*anon_bytes = c.anon * ps;
	*file_bytes = c.file * ps;
	return 0;
}

int procfs_pagemap_resident_fd(int fd, uint64_t start, uint64_t end, uint64_t *bits)
{
	uint64_t ps = page_size();
	struct pagemap_bits b = { .first = ps ? start / ps : 0, .bits = bits };

	return ps ? pagemap_range(fd, start, end, ps, pagemap_mark, &b) : -EINVAL;
}

int procfs_pagemap_rss(pid_t pid, uint64_t start, uint64_t end,
		       uint64_t *anon_bytes, uint64_t *file_bytes)
{
	int fd, err;

	if (!anon_bytes || !file_bytes)
		return -EINVAL;
	*anon_bytes = 0;
	*file_bytes = 0;
	fd = procfs_pagemap_open(pid);
	if (fd < 0)
		return fd;
	err = procfs_pagemap_rss_fd(fd, start, end, anon_bytes, file_bytes);
	close(fd);
	return err;
}
