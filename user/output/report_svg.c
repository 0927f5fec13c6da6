// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * report_svg.c — the trace as a picture (--svg): VM and RSS (stacked by
 * anon/file/shmem) over time, phases as labelled bands, iterations as ticks,
 * the peaks marked.  Self-contained SVG 1.1: no script, no external fonts or
 * style sheets.  Names come from the traced program and may hold any bytes:
 * they are written as XML-escaped, valid UTF-8 (U+FFFD for what is not).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output/report.h"
#include "util.h"

#define W		1000
#define H		500
#define PLOT_X0		84.0	/* room for the byte labels */
#define PLOT_X1		980.0
#define PLOT_Y0		92.0	/* under the title, legend and phase names */
#define PLOT_Y1		440.0
#define STRIP_H		30.0	/* phase names: two rows above the plot */
#define FONT		"font-family=\"sans-serif\""

#define C_VM		"#c0392b"
#define C_ANON		"#4e79a7"
#define C_FILE		"#59a14f"
#define C_SHMEM		"#b07aa1"
#define C_DEVICE	"#e8871e"
#define C_BAND0		"#eef1f5"
#define C_BAND1		"#fbfbfc"
#define C_TEXT		"#222222"
#define C_MUTED		"#666666"

/* Scales from trace time and bytes to the plot's pixels. */
struct scale {
	uint64_t t0, t1;	/* ns */
	double ymax;		/* bytes at the plot's top */
	double ystep;		/* bytes between ticks */
};

/* ---- XML text ------------------------------------------------------------ */

/* Length of the valid UTF-8 sequence at s (NUL-terminated) that is an XML
 * Char we keep, or 0: no non-characters, no C1 controls. */
static size_t utf8_char(const unsigned char *s)
{
	uint32_t cp;
	size_t len = mw_utf8_len(s, strnlen((const char *)s, 4), &cp);

	if (!len || cp == 0xfffe || cp == 0xffff || (cp >= 0x80 && cp <= 0x9f))
		return 0;
	return len;
}

static const char *xml_entity(unsigned char c)
{
	switch (c) {
	case '<':
		return "&lt;";
	case '>':
		return "&gt;";
	case '&':
		return "&amp;";
	case '"':
		return "&quot;";
	case '\'':
		return "&apos;";
	}
	return NULL;
}

/* s as XML character data (also fit for an attribute value). */
static void xml_text(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t len;

	while (*p) {
		len = utf8_char(p);
		if (xml_entity(*p))
			fputs(xml_entity(*p), f);
		else if (!len || *p < 0x20 || *p == 0x7f)
			fputs("\xef\xbf\xbd", f);	/* U+FFFD */
		else
			fwrite(p, 1, len, f);
		p += len ? len : 1;
	}
}

/* ---- the series ---------------------------------------------------------- */

static int cmp_ts(const void *a, const void *b)
{
	const struct mw_point *x = a, *y = b;

	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static void push(struct mw_point *v, size_t *n, const struct mw_point *p)
{
	v[(*n)++] = *p;
}

/* One in this many of count boundaries, so at most MW_MAX_SAMPLES of them. */
static size_t bound_stride(size_t count)
{
	return count / MW_MAX_SAMPLES + 1;
}

/* Every point the trace knows, in time order: phase and iteration bounds
 * (exact; of millions, an even selection) and the samples between them.
 * The last phase's end is always there. */
static struct mw_point *collect(const struct mw_account *a, size_t *np)
{
	const struct mw_phases *ph = &a->phases;
	size_t ps = bound_stride(ph->n), is = bound_stride(ph->nit), n = 0;
	struct mw_point *v = mw_xcalloc(2 * (ph->n / ps + ph->nit / is + 3) + ph->nsamples,
					sizeof(*v));

	for (size_t i = 0; i < ph->n; i++) {
		if (i % ps && i + 1 < ph->n)
			continue;
		push(v, &n, &ph->v[i].start);
		if (!ph->v[i].open)
			push(v, &n, &ph->v[i].end);
	}
	for (size_t i = 0; i < ph->nit; i += is) {
		push(v, &n, &ph->it[i].start);
		if (!ph->it[i].open)
			push(v, &n, &ph->it[i].end);
	}
	for (size_t i = 0; i < ph->nsamples; i++)
		push(v, &n, &ph->samples[i].at);
	qsort(v, n, sizeof(*v), cmp_ts);
	*np = n;
	return v;
}

static double rss_of(const struct mw_point *p, int upto)
{
	static const int order[] = { MW_ANON, MW_FILE, MW_SHMEM };
	double sum = 0;

	for (int i = 0; i < upto; i++)
		sum += MW_MAX(p->rss[order[i]], 0);
	return sum;
}

static double xpos(const struct scale *s, uint64_t ts)
{
	double span = (double)(s->t1 - s->t0);

	if (ts < s->t0)
		ts = s->t0;
	if (ts > s->t1)
		ts = s->t1;
	return PLOT_X0 + (PLOT_X1 - PLOT_X0) * (double)(ts - s->t0) / span;
}

static double ypos(const struct scale *s, double bytes)
{
	return PLOT_Y1 - (PLOT_Y1 - PLOT_Y0) * MW_MIN(bytes, s->ymax) / s->ymax;
}

/* Indices i..j-1 share a pixel column: keep the first, the last and the
 * highest VM and RSS among them, in time order. */
static size_t thin_column(const struct mw_point *v, size_t i, size_t j, size_t *keep)
{
	size_t k[4] = { i, j - 1, i, i }, n = 0;

	for (size_t x = i; x < j; x++) {
		if (v[x].vm > v[k[2]].vm)
			k[2] = x;
		if (rss_of(&v[x], 3) > rss_of(&v[k[3]], 3))
			k[3] = x;
	}
	for (int a = 0; a < 4; a++)
		for (int b = a + 1; b < 4; b++)
			if (k[b] < k[a]) {
				size_t t = k[a];

				k[a] = k[b];
				k[b] = t;
			}
	for (int a = 0; a < 4; a++)
		if (!n || keep[n - 1] != k[a])
			keep[n++] = k[a];
	return n;
}

/* At most four points per pixel column, so a long trace stays small. */
static size_t thin_series(const struct scale *s, struct mw_point *v, size_t n)
{
	size_t out = 0, i = 0, keep[4];

	while (i < n) {
		long col = (long)xpos(s, v[i].ts);
		size_t j = i + 1, k;

		while (j < n && (long)xpos(s, v[j].ts) == col)
			j++;
		k = thin_column(v, i, j, keep);
		for (size_t x = 0; x < k; x++)
			v[out++] = v[keep[x]];
		i = j;
	}
	return out;
}

/* ---- scales and axes ----------------------------------------------------- */

/* A tick step of 1, 2 or 4 ... 512 times a binary unit: 4 to 8 ticks. */
static double byte_step(double max)
{
	double step = 1;

	while (max / step > 8)
		step *= 2;
	return step;
}

static void scale_init(struct scale *s, const struct mw_account *a,
		       const struct mw_point *v, size_t n)
{
	double top = (double)MW_MAX(account_vm_peak(a), account_rss_peak(a));

	s->t0 = a->start_ns && (!n || a->start_ns <= v[0].ts) ? a->start_ns : n ? v[0].ts : 0;
	s->t1 = n ? v[n - 1].ts : s->t0;
	if (a->end_ns > s->t1)
		s->t1 = a->end_ns;
	if (s->t1 <= s->t0)
		s->t1 = s->t0 + 1000000;	/* 1 ms: something to draw on */
	for (size_t i = 0; i < n; i++)
		top = MW_MAX(top, MW_MAX((double)v[i].vm, rss_of(&v[i], 3)));
	if (top < 4096)
		top = 4096;
	top *= 1.08;			/* headroom for the peak labels */
	s->ystep = byte_step(top);
	s->ymax = s->ystep * (double)(uint64_t)(top / s->ystep + 0.999999);
}

/* "512 MiB", "1.5 GiB", "0": a tick label, in the largest unit it reaches. */
static void byte_label(double v, char *buf, size_t len)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	size_t u = 0;

	while (v >= 1024 && u + 1 < MW_ARRAY_SIZE(units)) {
		v /= 1024;
		u++;
	}
	if (v == 0)
		snprintf(buf, len, "0");
	else
		snprintf(buf, len, "%.4g %s", v, units[u]);
}

static void y_axis(FILE *f, const struct scale *s)
{
	char lbl[32];

	fprintf(f, "<g " FONT " font-size=\"11\" fill=\"" C_MUTED "\" text-anchor=\"end\">\n");
	for (int k = 0; k * s->ystep <= s->ymax * (1 + 1e-9); k++) {
		double b = k * s->ystep, y = ypos(s, b);

		byte_label(b, lbl, sizeof(lbl));
		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
			"stroke=\"#000000\" stroke-opacity=\"0.12\"/>\n",
			PLOT_X0, y, PLOT_X1, y);
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">%s</text>\n", PLOT_X0 - 6, y + 4, lbl);
	}
	fprintf(f, "</g>\n");
}

struct time_unit {
	const char *name;
	double ns;
};

/* ms under 2 s, then s, min (from 20 min), h (from 3 h). */
static struct time_unit time_unit(double span_ns)
{
	static const struct time_unit units[] = {
		{ "ms", 1e6 }, { "s", 1e9 }, { "min", 60e9 }, { "h", 3600e9 },
	};
	static const double from[] = { 0, 2e9, 1200e9, 10800e9 };
	size_t i = 0;

	while (i + 1 < MW_ARRAY_SIZE(units) && span_ns >= from[i + 1])
		i++;
	return units[i];
}

/* The smallest of 1, 2 or 5 times a power of ten that makes at most 10 ticks. */
static double time_step(double span)
{
	double mag = 1, m;

	while (mag * 10 <= span / 10)
		mag *= 10;
	while (mag > span / 10)
		mag /= 10;
	m = span / 10 / mag;
	return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * mag;
}

static void x_axis(FILE *f, const struct scale *s)
{
	struct time_unit u = time_unit((double)(s->t1 - s->t0));
	double span = (double)(s->t1 - s->t0) / u.ns, step = time_step(span);

	fprintf(f, "<g " FONT " font-size=\"11\" fill=\"" C_MUTED "\" text-anchor=\"middle\">\n");
	for (int k = 0; k * step <= span * (1 + 1e-9); k++) {
		double t = k * step, x = xpos(s, s->t0 + (uint64_t)(t * u.ns));

		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\""
			C_MUTED "\"/>\n", x, PLOT_Y1, x, PLOT_Y1 + 5);
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">%.6g</text>\n", x, PLOT_Y1 + 18, t);
	}
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">time since the trace began (%s)</text>\n",
		(PLOT_X0 + PLOT_X1) / 2, PLOT_Y1 + 38, u.name);
	fprintf(f, "</g>\n");
	fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"" C_MUTED
		"\"/>\n", PLOT_X0, PLOT_Y1, PLOT_X1, PLOT_Y1);
}

/* ---- phases and iterations ----------------------------------------------- */

static uint64_t phase_end(const struct mw_phases *ph, size_t i, const struct scale *s)
{
	if (!ph->v[i].open && ph->v[i].end.ts)
		return ph->v[i].end.ts;
	return i + 1 < ph->n ? ph->v[i + 1].start.ts : s->t1;
}

/* Phase i's name, clipped to where the next name on its row begins. */
static void phase_label(FILE *f, const struct mw_phases *ph, size_t i, const struct scale *s)
{
	double x = xpos(s, ph->v[i].start.ts), y = PLOT_Y0 - STRIP_H + 11 + (i % 2) * 14;
	double x2 = i + 2 < ph->n ? xpos(s, ph->v[i + 2].start.ts) : PLOT_X1;

	if (x2 - x < 12)
		return;		/* no room for even a letter */
	fprintf(f, "<clipPath id=\"ph%zu\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
		"height=\"14\"/></clipPath>\n", i, x, y - 11, x2 - x - 3);
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" clip-path=\"url(#ph%zu)\">", x + 3, y, i);
	xml_text(f, ph->v[i].name);
	fprintf(f, "</text>\n");
}

static void phase_bands(FILE *f, const struct mw_phases *ph, const struct scale *s)
{
	double last = -1;

	fprintf(f, "<g id=\"phases\">\n");
	for (size_t i = 0; i < ph->n; i++) {
		double x = xpos(s, ph->v[i].start.ts), x2 = xpos(s, phase_end(ph, i, s));

		if (x - last < 1 && i + 1 < ph->n)
			continue;	/* thousands of phases: one band a pixel */
		last = x;
		fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
			"fill=\"%s\"/>\n", x, PLOT_Y0 - STRIP_H, MW_MAX(x2 - x, 0.5),
			PLOT_Y1 - PLOT_Y0 + STRIP_H, i % 2 ? C_BAND1 : C_BAND0);
		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
			"stroke=\"#8a94a6\" stroke-dasharray=\"3,3\"/>\n",
			x, PLOT_Y0 - STRIP_H + (i % 2) * 14, x, PLOT_Y1);
	}
	fprintf(f, "<g " FONT " font-size=\"11\" fill=\"" C_TEXT "\">\n");
	for (size_t i = 0; i < ph->n; i++)
		phase_label(f, ph, i, s);
	fprintf(f, "</g>\n</g>\n");
}

static void iter_ticks(FILE *f, const struct mw_phases *ph, const struct scale *s)
{
	long last = -1;

	if (!ph->nit)
		return;
	fprintf(f, "<path id=\"iterations\" stroke=\"#111111\" stroke-width=\"1.2\" d=\"");
	for (size_t i = 0; i < ph->nit; i++) {
		double x = xpos(s, ph->it[i].start.ts);

		if ((long)(x * 2) == last)
			continue;	/* one per half pixel is all that shows */
		last = (long)(x * 2);
		fprintf(f, "M%.1f %.1fv-9", x, PLOT_Y1);
	}
	fprintf(f, "\"/>\n");
}

/* ---- the series ---------------------------------------------------------- */

/* RSS members stacked: the layer between the sum of the first upto-1 and
 * the first upto members. */
static void rss_layer(FILE *f, const struct scale *s, const struct mw_point *v,
		      size_t n, int upto, const char *color)
{
	fprintf(f, "<path fill=\"%s\" fill-opacity=\"0.85\" d=\"", color);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%c%.1f %.1f", i ? 'L' : 'M', xpos(s, v[i].ts),
			ypos(s, rss_of(&v[i], upto)));
	for (size_t i = n; i > 0; i--)
		fprintf(f, "L%.1f %.1f", xpos(s, v[i - 1].ts),
			ypos(s, rss_of(&v[i - 1], upto - 1)));
	fprintf(f, "Z\"/>\n");
}

/* A line through the points: their VM, or (device) its device part; attrs
 * style it. */
static void vm_line(FILE *f, const struct scale *s, const struct mw_point *v, size_t n,
		    bool device, const char *attrs)
{
	fprintf(f, "<path %s stroke-width=\"2\" stroke-linejoin=\"round\" d=\"", attrs);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%c%.1f %.1f", i ? 'L' : 'M', xpos(s, v[i].ts),
			ypos(s, (double)(device ? v[i].device_vm : v[i].vm)));
	fprintf(f, "\"/>\n");
}

/* Is any of VM a device driver's (kind "device")?  Then that part is
 * drawn too, dashed under the VM line. */
static bool has_device(const struct mw_point *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].device_vm)
			return true;
	return false;
}

static void series(FILE *f, const struct scale *s, const struct mw_point *v, size_t n)
{
	if (!n)
		return;
	rss_layer(f, s, v, n, 1, C_ANON);
	rss_layer(f, s, v, n, 2, C_FILE);
	rss_layer(f, s, v, n, 3, C_SHMEM);
	if (has_device(v, n))
		vm_line(f, s, v, n, true, "id=\"device-vm\" fill=\"none\" stroke=\"" C_DEVICE
			"\" stroke-dasharray=\"6,3\"");
	vm_line(f, s, v, n, false, "fill=\"none\" stroke=\"" C_VM "\"");
}

/* ---- peaks --------------------------------------------------------------- */

static double value_of(const struct mw_point *p, bool vm)
{
	return vm ? (double)p->vm : rss_of(p, 3);
}

/* When the peak came: the highest point of the phase that held it (its
 * index in v, n if none). */
static size_t peak_at(const struct mw_account *a, const struct mw_point *v, size_t n,
		      bool vm, const struct scale *s)
{
	const struct mw_phases *ph = &a->phases;
	uint64_t lo = 0, hi = UINT64_MAX, best = 0;
	size_t at = n;

	for (size_t i = 0; i < ph->n; i++) {
		uint64_t pk = vm ? ph->v[i].vm_peak : ph->v[i].rss_peak;

		if (i == 0 || pk > best) {
			best = pk;
			lo = ph->v[i].start.ts;
			hi = phase_end(ph, i, s);
		}
	}
	for (int pass = 0; pass < 2 && at == n; pass++, lo = 0, hi = UINT64_MAX)
		for (size_t i = 0; i < n; i++)
			if (v[i].ts >= lo && v[i].ts <= hi &&
			    (at == n || value_of(&v[i], vm) > value_of(&v[at], vm)))
				at = i;
	return at;
}

struct peak {
	double x, y;
	double from_y;		/* the series there: below y if the peak fell between points */
	const char *what;
	uint64_t bytes;
	const char *color;
};

static void peak_mark(FILE *f, const struct peak *p, bool below)
{
	char b[32];
	bool left = p->x > PLOT_X0 + 0.7 * (PLOT_X1 - PLOT_X0);
	double ty = below ? p->y + 17 : p->y - 9;

	mw_human((int64_t)p->bytes, b, sizeof(b));
	if (p->from_y > p->y + 3)
		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
			"stroke-width=\"1.5\" stroke-dasharray=\"2,2\"/>\n",
			p->x, p->from_y, p->x, p->y, p->color);
	fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4.5\" fill=\"%s\" stroke=\"#ffffff\" "
		"stroke-width=\"1.5\"/>\n", p->x, p->y, p->color);
	/* A white halo under the label, then the label: legible over the areas. */
	fprintf(f, "<g " FONT " font-size=\"12\" font-weight=\"bold\" text-anchor=\"%s\">\n",
		left ? "end" : "start");
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#ffffff\" stroke=\"#ffffff\" "
		"stroke-width=\"4\" stroke-linejoin=\"round\">%s peak %s</text>\n",
		left ? p->x - 8 : p->x + 8, ty, p->what, b);
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" fill=\"%s\">%s peak %s</text>\n",
		left ? p->x - 8 : p->x + 8, ty, p->color, p->what, b);
	fprintf(f, "</g>\n");
}

static struct peak peak_of(const struct mw_account *a, const struct scale *s,
			   const struct mw_point *v, size_t n, bool vm)
{
	size_t at = peak_at(a, v, n, vm, s);
	struct peak p = {
		.bytes = vm ? account_vm_peak(a) : account_rss_peak(a),
		.what = vm ? "VM" : "RSS",
		.color = vm ? C_VM : "#1d3f66",
	};

	p.x = xpos(s, at < n ? v[at].ts : s->t0);
	p.y = ypos(s, (double)p.bytes);
	p.from_y = at < n ? ypos(s, value_of(&v[at], vm)) : p.y;
	return p;
}

static void peaks(FILE *f, const struct mw_account *a, const struct scale *s,
		  const struct mw_point *v, size_t n)
{
	struct peak vm = peak_of(a, s, v, n, true), rss = peak_of(a, s, v, n, false);

	peak_mark(f, &vm, false);
	/* Under its dot if it would run into the VM label. */
	peak_mark(f, &rss, rss.y - vm.y < 22 && vm.y - rss.y < 22 &&
			   rss.x - vm.x < 200 && vm.x - rss.x < 200);
}

/* ---- frame --------------------------------------------------------------- */

static void title(FILE *f, const struct mw_account *a, const struct scale *s)
{
	double secs = (double)(s->t1 - s->t0) / 1e9;

	fprintf(f, "<text x=\"%.1f\" y=\"24\" " FONT " font-size=\"16\" font-weight=\"bold\" "
		"fill=\"" C_TEXT "\">", PLOT_X0);
	xml_text(f, a->comm[0] ? a->comm : "?");
	fprintf(f, " (PID %d): VM and RSS over %.*f s</text>\n", a->pid,
		secs < 10 ? 2 : 0, secs);
}

static void legend_item(FILE *f, double *x, const char *swatch, const char *label)
{
	fprintf(f, "<g transform=\"translate(%.1f,0)\">%s<text x=\"18\" y=\"48\">%s</text></g>\n",
		*x, swatch, label);
	*x += 34 + 7 * (double)strlen(label);
}

static void legend(FILE *f, const struct mw_phases *ph, bool device)
{
	double x = PLOT_X0;

	fprintf(f, "<g id=\"legend\" " FONT " font-size=\"12\" fill=\"" C_TEXT "\">\n");
	legend_item(f, &x, "<line x1=\"0\" y1=\"44\" x2=\"14\" y2=\"44\" stroke=\"" C_VM
		    "\" stroke-width=\"2\"/>", "VM size");
	legend_item(f, &x, "<rect x=\"0\" y=\"38\" width=\"14\" height=\"12\" fill=\"" C_ANON
		    "\"/>", "RSS anon");
	legend_item(f, &x, "<rect x=\"0\" y=\"38\" width=\"14\" height=\"12\" fill=\"" C_FILE
		    "\"/>", "RSS file");
	legend_item(f, &x, "<rect x=\"0\" y=\"38\" width=\"14\" height=\"12\" fill=\"" C_SHMEM
		    "\"/>", "RSS shmem");
	if (device)
		legend_item(f, &x, "<line x1=\"0\" y1=\"44\" x2=\"14\" y2=\"44\" stroke=\""
			    C_DEVICE "\" stroke-width=\"2\" stroke-dasharray=\"6,3\"/>", "VM device");
	legend_item(f, &x, "<rect x=\"0\" y=\"38\" width=\"14\" height=\"12\" fill=\"" C_BAND0
		    "\" stroke=\"#8a94a6\" stroke-dasharray=\"3,3\"/>", "phase");
	if (ph->nit)
		legend_item(f, &x, "<line x1=\"7\" y1=\"38\" x2=\"7\" y2=\"50\" stroke=\"#111111\""
			    " stroke-width=\"1.2\"/>", "iteration starts");
	fprintf(f, "</g>\n");
}

int report_svg(FILE *f, const struct mw_account *a)
{
	struct scale s;
	size_t n;
	struct mw_point *v = collect(a, &n);
	bool device = has_device(v, n);

	scale_init(&s, a, v, n);
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" "
		"height=\"%d\" viewBox=\"0 0 %d %d\">\n", W, H, W, H);
	fprintf(f, "<title>memwatch: ");
	xml_text(f, a->comm[0] ? a->comm : "?");
	fprintf(f, " (PID %d)</title>\n", a->pid);
	fprintf(f, "<rect width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", W, H);
	title(f, a, &s);
	phase_bands(f, &a->phases, &s);
	y_axis(f, &s);
	n = thin_series(&s, v, n);
	series(f, &s, v, n);
	x_axis(f, &s);
	iter_ticks(f, &a->phases, &s);
	peaks(f, a, &s, v, n);
	legend(f, &a->phases, device);
	fprintf(f, "</svg>\n");
	free(v);
	if (fflush(f) || ferror(f))
		return -(errno ? errno : EIO);
	return 0;
}
