// SPDX-License-Identifier: GPL-2.0-only
/* systemd notifications from a thread of their own: it looks at the collector's status once a
 * second under the read lock, so the drain loop is not changed, and a drain stuck with the
 * store lock held stops the watchdog pings as surely as a dead loop. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collector.h"
#include "log.h"
#include "notify.h"
#include "sysinfo.h"
#include "tailprof_config.h"

#ifdef HAVE_LIBSYSTEMD
#include <systemd/sd-daemon.h>

#define NSEC_PER_SEC 1000000000ULL
/* the status line changes at most this often */
#define STATUS_EVERY_NS (5 * NSEC_PER_SEC)
/* no drain for this long (drains are 500 ms apart at most): no watchdog ping */

struct notify {
	struct collector *coll;
	int cpus;
	unsigned int hz;
	uint64_t watchdog_usec; /* 0: no watchdog */
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cond; /* CLOCK_MONOTONIC */
	bool stop;
};

static void *notify_thread(void *arg)
{
	struct notify *n = arg;
	uint64_t last_status = 0;
	bool ready = false;

	pthread_mutex_lock(&n->mu);
	while (!n->stop) {
		struct collector_status st;
		struct timespec until;
		uint64_t now;

		pthread_mutex_unlock(&n->mu);
		collector__rdlock(n->coll);
		collector__status(n->coll, &st);
		collector__unlock(n->coll);
		now = sysinfo__mono_ns();
		if (st.healthy && (!ready || now - last_status >= STATUS_EVERY_NS)) {
			sd_notifyf(
			    0,
			    "%sSTATUS=sampling %d CPUs at %u Hz; %llu samples; %u/%u windows; "
			    "%llu drains",
			    ready ? "" : "READY=1\n", n->cpus, n->hz,
			    (unsigned long long)st.samples, st.windows, st.max_windows,
			    (unsigned long long)st.drains);
			ready = true;
			last_status = now;
		}
		if (ready && n->watchdog_usec &&
		    now - st.last_drain_mono_ns < COLLECTOR_DRAIN_LATE_NS)
			sd_notify(0, "WATCHDOG=1");
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += 1;
		pthread_mutex_lock(&n->mu);
		while (!n->stop && pthread_cond_timedwait(&n->cond, &n->mu, &until) != ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&n->mu);
	return NULL;
}

struct notify *notify__start(struct collector *coll, int cpus, unsigned int hz)
{
	struct notify *n;
	pthread_condattr_t attr;
	int err;

	if (!getenv("NOTIFY_SOCKET"))
		return NULL;
	n = calloc(1, sizeof(*n));
	if (!n) {
		pr_err("systemd notifications: out of memory");
		return NULL;
	}
	n->coll = coll;
	n->cpus = cpus;
	n->hz = hz;
	if (sd_watchdog_enabled(0, &n->watchdog_usec) <= 0)
		n->watchdog_usec = 0;
	pthread_mutex_init(&n->mu, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&n->cond, &attr);
	pthread_condattr_destroy(&attr);
	err = pthread_create(&n->thread, NULL, notify_thread, n);
	if (err) {
		pr_err("systemd notifications: cannot start a thread: %s", strerror(err));
		pthread_cond_destroy(&n->cond);
		pthread_mutex_destroy(&n->mu);
		free(n);
		return NULL;
	}
	return n;
}

void notify__stop(struct notify *n)
{
	if (!n)
		return;
	sd_notify(0, "STOPPING=1");
	pthread_mutex_lock(&n->mu);
	n->stop = true;
	pthread_cond_signal(&n->cond);
	pthread_mutex_unlock(&n->mu);
	pthread_join(n->thread, NULL);
	pthread_cond_destroy(&n->cond);
	pthread_mutex_destroy(&n->mu);
	free(n);
}

#else /* !HAVE_LIBSYSTEMD */

struct notify *notify__start(struct collector *coll, int cpus, unsigned int hz)
{
	if (getenv("NOTIFY_SOCKET"))
		pr_warn("NOTIFY_SOCKET is set but tailprofd " TAILPROF_VERSION
			" was built without libsystemd: use Type=simple");
	return NULL;
}

void notify__stop(struct notify *n)
{
}

#endif
