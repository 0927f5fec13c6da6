// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * metrics_http.c — --listen: GET /metrics, served by libmicrohttpd from a
 * thread of its own.
 *
 * The tracer hands over a copy of each host view (metrics_publish); the
 * HTTP thread renders the latest one when a scraper asks.  They share one
 * pointer and a reference count under a mutex held for a few instructions,
 * so neither ever waits for the other's work: a slow or stuck client holds
 * only its own connection (MHD multiplexes them, with a timeout and a
 * limit), never the tracer.
 *
 * The thread faces the network, so it holds no capabilities: it is created
 * by a short-lived thread that first drops its own (capabilities belong to
 * each thread, and a new one inherits its creator's).  The socket is bound
 * before that, by the caller, so a port below 1024 works where memwatch may
 * bind one.  Every signal is blocked in it, so SIGINT and SIGTERM reach the
 * tracer's thread and wake its poll.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <unistd.h>

#include <microhttpd.h>

#include "host/metrics.h"
#include "util.h"

#define MAX_CONNECTIONS		32	/* scrapers; more wait in the backlog */
#define MAX_PER_IP		8
#define CONNECTION_TIMEOUT_S	15	/* a client that stalls loses its connection */

/* One published view, deep-copied into one allocation. */
struct snap {
	unsigned int refs;	/* the current pointer, and each scrape rendering it */
	struct mw_hostview v;
	/* then the processes, the cgroups, their paths and the phase */
};

struct mw_metrics {
	struct MHD_Daemon *d;
	int fd;			/* the listening socket */
	size_t top_n;
	pthread_mutex_t lock;	/* guards cur and every refs */
	struct snap *cur;	/* NULL until the first publish */
};

/* ---- the view, handed over ---------------------------------------------- */

static char *copy_str(char **p, const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = *p;

	memcpy(d, s, n);
	*p += n;
	return d;
}

static struct snap *snap_copy(const struct mw_hostview *v)
{
	size_t procs = v->nprocs * sizeof(*v->procs);
	size_t cgroups = v->ncgroups * sizeof(*v->cgroups);
	size_t strs = v->phase ? strlen(v->phase) + 1 : 0;
	struct mw_hcgroup *cg;
	struct snap *s;
	char *p;

	for (size_t i = 0; i < v->ncgroups; i++)
		strs += v->cgroups[i].path ? strlen(v->cgroups[i].path) + 1 : 0;
	/* Both arrays' element sizes are multiples of 8, and so is snap's. */
	s = mw_xcalloc(1, sizeof(*s) + procs + cgroups + strs);
	s->refs = 1;
	s->v = *v;
	p = (char *)(s + 1);
	if (procs)
		memcpy(p, v->procs, procs);
	s->v.procs = (const struct mw_hproc *)p;
	p += procs;
	cg = (struct mw_hcgroup *)p;
	if (cgroups)
		memcpy(cg, v->cgroups, cgroups);
	s->v.cgroups = cg;
	p += cgroups;
	for (size_t i = 0; i < v->ncgroups; i++)
		if (cg[i].path)
			cg[i].path = copy_str(&p, cg[i].path);
	if (v->phase)
		s->v.phase = copy_str(&p, v->phase);
	return s;
}

void metrics_publish(struct mw_metrics *m, const struct mw_hostview *v)
{
	struct snap *s = snap_copy(v), *old;

	pthread_mutex_lock(&m->lock);
	old = m->cur;
	m->cur = s;
	if (old && --old->refs)
		old = NULL;	/* a scrape is rendering it: the scrape frees it */
	pthread_mutex_unlock(&m->lock);
	free(old);
}

static struct snap *snap_get(struct mw_metrics *m)
{
	struct snap *s;

	pthread_mutex_lock(&m->lock);
	s = m->cur;
	if (s)
		s->refs++;
	pthread_mutex_unlock(&m->lock);
	return s;
}

static void snap_put(struct mw_metrics *m, struct snap *s)
{
	bool last;

	pthread_mutex_lock(&m->lock);
	last = !--s->refs;
	pthread_mutex_unlock(&m->lock);
	if (last)
		free(s);
}

/* ---- HTTP ------------------------------------------------------------------ */

static enum MHD_Result reply(struct MHD_Connection *c, unsigned int status,
			     const char *type, char *body, size_t len, bool owned)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(len, body, owned ? MHD_RESPMEM_MUST_FREE
							      : MHD_RESPMEM_PERSISTENT);
	if (!r) {
		if (owned)
			free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	if (status == MHD_HTTP_SERVICE_UNAVAILABLE)
		MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "1");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result reply_text(struct MHD_Connection *c, unsigned int status,
				  const char *msg)
{
	return reply(c, status, "text/plain; charset=utf-8", (char *)msg, strlen(msg), false);
}

/* Prometheus asks for OpenMetrics first; curl, promtool and older scrapers
 * do not, and get the text format they all read. */
static bool wants_openmetrics(struct MHD_Connection *c)
{
	const char *accept = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
							 MHD_HTTP_HEADER_ACCEPT);

	return accept && strcasestr(accept, "application/openmetrics-text");
}

static enum MHD_Result serve_metrics(struct mw_metrics *m, struct MHD_Connection *c)
{
	bool om = wants_openmetrics(c);
	struct snap *s = snap_get(m);
	char *buf = NULL;
	size_t len = 0;
	int err = -ENOMEM;
	FILE *f;

	if (!s)
		return reply_text(c, MHD_HTTP_SERVICE_UNAVAILABLE,
				  "memwatch has no host view yet: try again in a moment\n");
	f = open_memstream(&buf, &len);
	if (f) {
		err = om ? metrics_render(f, &s->v, m->top_n)
			 : metrics_render_text(f, &s->v, m->top_n);
		if (fclose(f) && !err)
			err = -EIO;
	}
	snap_put(m, s);
	if (err) {
		free(buf);
		return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "memwatch: out of memory\n");
	}
	return reply(c, MHD_HTTP_OK, om ? MW_METRICS_OPENMETRICS_TYPE : MW_METRICS_TEXT_TYPE,
		     buf, len, true);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version,
				  const char *upload, size_t *upload_size, void **req)
{
	static int started;

	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return reply_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD\n");
	if (strcmp(url, "/metrics"))
		return reply_text(c, MHD_HTTP_NOT_FOUND, "not found: the metrics are at /metrics\n");
	/* The first call has the headers only; answer once a body, if a
	 * client sent one with its GET, has been read and dropped. */
	if (!*req) {
		*req = &started;
		return MHD_YES;
	}
	if (*upload_size) {
		*upload_size = 0;
		return MHD_YES;
	}
	return serve_metrics(cls, c);
}

/* MHD's complaints about clients (resets, timeouts) are not the user's
 * business unless they asked for diagnostics. */
static void on_log(void *cls, const char *fmt, va_list ap)
{
	if (!mw_verbose)
		return;
	fputs("memwatch: metrics: ", stderr);
	vfprintf(stderr, fmt, ap);
}

/* ---- starting and stopping ------------------------------------------------- */

/* Runs in a thread of its own: drop every capability, then start MHD,
 * whose thread inherits none. */
static void *start_daemon(void *arg)
{
	struct mw_metrics *m = arg;
	cap_t none = cap_init();
	int dropped = none ? cap_set_proc(none) : -1;

	cap_free(none);
	if (dropped)
		return NULL;
	m->d = MHD_start_daemon(MHD_USE_AUTO | MHD_USE_INTERNAL_POLLING_THREAD |
				MHD_USE_ITC | MHD_USE_ERROR_LOG, 0,
				NULL, NULL, on_request, m,
				MHD_OPTION_EXTERNAL_LOGGER, on_log, NULL,
				MHD_OPTION_LISTEN_SOCKET, m->fd,
				MHD_OPTION_CONNECTION_LIMIT, (unsigned int)MAX_CONNECTIONS,
				MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned int)MAX_PER_IP,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)CONNECTION_TIMEOUT_S,
				MHD_OPTION_END);
	return NULL;
}

static int start(struct mw_metrics *m)
{
	sigset_t all, old;
	pthread_t t;
	int err;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);	/* inherited, twice */
	err = pthread_create(&t, NULL, start_daemon, m);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err)
		return -err;
	pthread_join(t, NULL);
	return m->d ? 0 : -EIO;
}

static int bind_listen(const struct sockaddr_storage *ss, socklen_t len)
{
	int one = 1, err;
	int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	/* A restarted memwatch binds at once, whatever its predecessor's
	 * connections left in TIME_WAIT; a live listener still makes it fail. */
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (const struct sockaddr *)ss, len) || listen(fd, 64)) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

static const char *bind_strerror(int err)
{
	switch (err) {
	case EADDRINUSE:
		return "the port is in use (another memwatch or exporter listens there?)";
	case EADDRNOTAVAIL:
		return "no interface of this host has that address";
	case EACCES:
		return "ports below 1024 need CAP_NET_BIND_SERVICE";
	}
	return strerror(err);
}

/* The port: 1 to 65535, decimal digits only. */
static int parse_port(const char *s, in_port_t *port)
{
	unsigned long v = 0;
	size_t n = strlen(s);

	if (!n || n > 5 || strspn(s, "0123456789") != n)
		return -EINVAL;
	v = strtoul(s, NULL, 10);
	if (!v || v > 65535)
		return -EINVAL;
	*port = htons((in_port_t)v);
	return 0;
}

int metrics_parse_addr(const char *s, struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_in *in = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
	char host[INET6_ADDRSTRLEN];
	const char *h = s, *port, *colon;
	size_t hlen = 0;
	bool v6 = false;

	memset(ss, 0, sizeof(*ss));
	if (!s)
		return -EINVAL;
	if (s[0] == '[') {		/* [IPv6]:PORT */
		colon = strchr(s, ']');
		if (!colon || colon[1] != ':')
			return -EINVAL;
		h = s + 1;
		hlen = colon - h;
		port = colon + 2;
		v6 = true;
	} else if ((colon = strrchr(s, ':'))) {
		if (memchr(s, ':', colon - s))
			return -EINVAL;	/* a bare IPv6 address: needs brackets */
		hlen = colon - s;
		port = colon + 1;
	} else {
		port = s;		/* PORT */
	}
	if (hlen >= sizeof(host) || parse_port(port, v6 ? &in6->sin6_port : &in->sin_port))
		return -EINVAL;
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	if (v6) {
		in6->sin6_family = AF_INET6;
		*len = sizeof(*in6);
		return inet_pton(AF_INET6, host, &in6->sin6_addr) == 1 ? 0 : -EINVAL;
	}
	in->sin_family = AF_INET;
	*len = sizeof(*in);
	/* Loopback unless asked otherwise: the metrics show every process. */
	if (!hlen || !strcmp(host, "localhost"))
		return inet_pton(AF_INET, "127.0.0.1", &in->sin_addr) == 1 ? 0 : -EINVAL;
	return inet_pton(AF_INET, host, &in->sin_addr) == 1 ? 0 : -EINVAL;
}

int metrics_listen(struct mw_metrics **out, const char *addr_port, size_t top_n)
{
	struct sockaddr_storage ss;
	struct mw_metrics *m;
	socklen_t len;
	int fd, err;

	*out = NULL;
	if (metrics_parse_addr(addr_port, &ss, &len)) {
		mw_err("--listen %s: expected IPv4:PORT, [IPv6]:PORT or PORT (1-65535)",
		       addr_port ? addr_port : "");
		return MW_EXIT_USAGE;
	}
	fd = bind_listen(&ss, len);
	if (fd < 0) {
		mw_err("--listen %s: cannot listen there: %s", addr_port, bind_strerror(-fd));
		return MW_EXIT_OUTPUT;
	}
	m = mw_xcalloc(1, sizeof(*m));
	m->fd = fd;
	m->top_n = top_n;
	pthread_mutex_init(&m->lock, NULL);
	err = start(m);
	if (err) {
		mw_err("--listen %s: cannot start the HTTP server: %s", addr_port,
		       err == -EIO ? "libmicrohttpd refused" : strerror(-err));
		metrics_stop(m);
		return MW_EXIT_RUNTIME;
	}
	*out = m;
	return 0;
}

void metrics_stop(struct mw_metrics *m)
{
	int fd = m ? m->fd : -1;

	if (!m)
		return;
	if (m->d) {
		/* Take the socket back first: what MHD does at stop with a
		 * socket it was given has varied between versions.  If it
		 * will not give it back, it is MHD's to close. */
		fd = MHD_quiesce_daemon(m->d);
		MHD_stop_daemon(m->d);
	}
	if (fd != MHD_INVALID_SOCKET)
		close(fd);
	free(m->cur);		/* the thread is gone: no scrape holds it */
	pthread_mutex_destroy(&m->lock);
	free(m);
}
