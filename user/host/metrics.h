/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * metrics.h — the host view (hostview.h) as Prometheus metrics: rendering
 * (metrics.c, pure) and the --listen HTTP endpoint (metrics_http.c).
 */
#ifndef MW_METRICS_H
#define MW_METRICS_H

#include <stddef.h>
#include <stdio.h>
#include <sys/socket.h>

#include "host/hostview.h"

/* What a scraper that asks for OpenMetrics gets, and what everyone else
 * (curl, promtool, older scrapers) gets: Prometheus' text format 0.0.4. */
#define MW_METRICS_OPENMETRICS_TYPE \
	"application/openmetrics-text; version=1.0.0; charset=utf-8"
#define MW_METRICS_TEXT_TYPE	"text/plain; version=0.0.4; charset=utf-8"

#define MW_METRICS_TOP_CGROUPS	50	/* cgroups with series of their own */
#define MW_METRICS_PORT		9464	/* the port the examples use */

/*
 * @v in OpenMetrics text format, ending with "# EOF": series of their own
 * for the @top_n processes and the MW_METRICS_TOP_CGROUPS cgroups with the
 * largest RSS, each of the rest summed into one "other" series.  Returns 0,
 * or -EIO if @f reported a write error.
 */
int metrics_render(FILE *f, const struct mw_hostview *v, size_t top_n);

/* The same metrics in Prometheus' text format 0.0.4, which `promtool check
 * metrics` reads: counters' families named with their _total, the phase a
 * gauge, no UNIT lines, no "# EOF". */
int metrics_render_text(FILE *f, const struct mw_hostview *v, size_t top_n);

struct mw_metrics;

/*
 * Serve GET /metrics on @addr_port ("IPv4:PORT", "[IPv6]:PORT", ":PORT" or
 * "PORT", the last two on 127.0.0.1) from a thread of its own, with no
 * capabilities and every signal blocked.  Until the first metrics_publish()
 * it answers 503.  Returns 0, or after one line on stderr MW_EXIT_USAGE
 * (the address does not parse) or MW_EXIT_OUTPUT (it cannot be bound:
 * in use, not this host's, a port below 1024 without the capability).
 */
int metrics_listen(struct mw_metrics **out, const char *addr_port, size_t top_n);

/* Make @v what the next scrape shows.  Copies it, so @v is the caller's
 * again on return; never waits for a scrape in progress. */
void metrics_publish(struct mw_metrics *m, const struct mw_hostview *v);

/* Close the socket, end the thread, free @m (NULL: nothing to do). */
void metrics_stop(struct mw_metrics *m);

/* @addr_port as metrics_listen() reads it; 0 or -EINVAL. */
int metrics_parse_addr(const char *addr_port, struct sockaddr_storage *ss, socklen_t *len);

#endif /* MW_METRICS_H */
