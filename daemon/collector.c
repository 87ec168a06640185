// SPDX-License-Identifier: GPL-2.0-only
/* The drain loop: BPF ring buffer and counters into windows, under the store lock; captures, and
 * the lock's readers. The ring buffers' records are decoded in collector_events.c. */
#include "collector_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "gc.h"
#include "resource_limits.h"
#include "loader.h"
#include "log.h"
#include "mmap_records.h"
#include "probes.h"
#include "proc_maps.h"
#include "python.h"
#include "spikes.h"
#include "stages.h"
#include "symbolizer.h"
#include "sysinfo.h"
#include "timeparse.h"
#include "tailprof.h"
#include "xalloc.h"

static void stack_acquire(void *data, void *ctx)
{
	struct stack *s = data;

	for (uint32_t i = 0; i < (uint32_t)s->nr_kernel + s->nr_user; i++)
		if (s->frames[i].obj)
			object__get(s->frames[i].obj);
}

static void stack_release(void *data, void *ctx)
{
	struct stack *s = data;

	for (uint32_t i = 0; i < (uint32_t)s->nr_kernel + s->nr_user; i++)
		object__put(s->frames[i].obj);
}

/* ---- drain ---- */

/* Takes the BPF counts of drain period p of every CPU into window w (NULL: the period is older
 * than every window held; the counts still reach the totals). */
static void take_period(struct collector *c, uint64_t p, struct window *w)
{
	uint64_t *ctr = loader__counters(c->opts.loader);
	static const struct {
		enum tp_metric metric;
		enum window_drop drop;
	} drops[] = {
	    {TP_M_RINGBUF_FULL, DROP_RINGBUF_FULL},
	    {TP_M_KSTACK_FAILED, DROP_KERNEL_STACK},
	    {TP_M_USTACK_FAILED, DROP_USER_STACK},
	    {TP_M_EVENT_LOST, DROP_EVENT_LOST},
	};

	for (uint32_t cpu = 0; cpu < c->nr_cpus; cpu++) {
		uint64_t *slot =
		    &ctr[((size_t)cpu * TP_COUNTER_SLOTS + p % TP_COUNTER_SLOTS) * TP_M_NR];
		uint64_t d[TP_M_NR];

		/* exchange, not read-then-clear: a BPF program on another CPU may still add */
		for (int m = 0; m < TP_M_NR; m++)
			d[m] = __atomic_exchange_n(&slot[m], 0, __ATOMIC_RELAXED);
		c->cpu_received_total[cpu] += d[TP_M_SAMPLES];
		c->st.received_samples += d[TP_M_SAMPLES];
		if (d[TP_M_EVENT_LOST])
			symbolizer__forget_fork_identities(c->opts.symbolizer);
		c->st.idle_samples += d[TP_M_IDLE];
		for (size_t i = 0; i < sizeof(drops) / sizeof(drops[0]); i++)
			c->st.drops[drops[i].drop] += d[drops[i].metric];
		for (int m = TP_M_UNWIND_STACKS; m < TP_M_NR; m++)
			c->st.unwind_bpf[m - TP_M_UNWIND_STACKS] += d[m];
		if (!w)
			continue;
		w->cpu_received[cpu] += d[TP_M_SAMPLES];
		w->idle_samples += d[TP_M_IDLE];
		for (size_t i = 0; i < sizeof(drops) / sizeof(drops[0]); i++)
			w->drops[drops[i].drop] += d[drops[i].metric];
	}
}

/* Takes the run-queue histograms of drain period p of every CPU into window w (NULL: older than
 * every window held; the totals still count them). */
static void take_runq_period(struct collector *c, uint64_t p, struct window *w)
{
	struct tp_runq_hist *hists = loader__runq_hist(c->opts.loader);
	uint64_t b[TP_HIST_BUCKETS];

	for (uint32_t cpu = 0; hists && cpu < c->nr_cpus; cpu++) {
		struct tp_runq_hist *h = &hists[(size_t)cpu * TP_SCHED_SLOTS + p % TP_SCHED_SLOTS];
		uint64_t count = __atomic_exchange_n(&h->count, 0, __ATOMIC_RELAXED);
		uint64_t sum = __atomic_exchange_n(&h->sum_ns, 0, __ATOMIC_RELAXED);
		uint64_t max = __atomic_exchange_n(&h->max_ns, 0, __ATOMIC_RELAXED);

		if (!count && !max)
			continue;
		for (uint32_t i = 0; i < TP_HIST_BUCKETS; i++) {
			b[i] = __atomic_exchange_n(&h->buckets[i], 0, __ATOMIC_RELAXED);
			c->runq_buckets[i] += b[i];
		}
		c->st.runq_count += count;
		c->st.runq_sum_ns += sum;
		if (max > c->st.runq_max_ns)
			c->st.runq_max_ns = max;
		if (w && window__add_runq(w, count, sum, max, b))
			c->st.drops[DROP_NO_MEMORY]++;
	}
}

/* One process's scheduler counts of an ended drain period, into the window of that period. */
static void take_sched_proc(const struct tp_sched_key *k, const struct tp_sched_proc *v, void *arg)
{
	struct collector *c = arg;
	uint64_t slot_ns = c->opts.drain_ns, cur = sysinfo__mono_ns() / slot_ns;
	uint64_t p = cur - (uint32_t)((uint32_t)cur - k->slot); /* the period, unwrapped */
	struct window *w = window_ring__window_at(c->ring, p * slot_ns + slot_ns / 2);
	struct window_sched_proc wp = {
	    .pid = k->pid,
	    .runq_count = v->runq_count,
	    .runq_ns = v->runq_ns,
	    .runq_max_ns = v->runq_max_ns,
	    .short_count = v->short_count,
	    .short_ns = v->short_ns,
	};

	c->st.short_blocks += v->short_count;
	c->st.short_blocked_ns += v->short_ns;
	if (w && window__add_sched_proc(w, &wp))
		c->st.drops[DROP_NO_MEMORY]++;
}

/* Takes the per-process counts of drain period p of every CPU from sched_ptab (those that found
 * no room there come from sched_procs, after). */
static void take_ptab_period(struct collector *c, uint64_t p)
{
	struct tp_sched_pentry *tab = loader__sched_ptab(c->opts.loader);

	for (uint32_t cpu = 0; tab && cpu < c->nr_cpus; cpu++) {
		struct tp_sched_pentry *e =
		    &tab[((size_t)cpu * TP_SCHED_SLOTS + p % TP_SCHED_SLOTS) * TP_SCHED_PTAB];

		for (uint32_t i = 0; i < TP_SCHED_PTAB; i++, e++) {
			struct tp_sched_key k = {.pid = e->pid, .slot = e->slot, .cpu = cpu};
			struct tp_sched_proc v;

			if (!k.pid || k.slot != (uint32_t)p)
				continue;
			v.runq_count = __atomic_exchange_n(&e->v.runq_count, 0, __ATOMIC_RELAXED);
			v.runq_ns = __atomic_exchange_n(&e->v.runq_ns, 0, __ATOMIC_RELAXED);
			v.runq_max_ns = __atomic_exchange_n(&e->v.runq_max_ns, 0, __ATOMIC_RELAXED);
			v.short_count = __atomic_exchange_n(&e->v.short_count, 0, __ATOMIC_RELAXED);
			v.short_ns = __atomic_exchange_n(&e->v.short_ns, 0, __ATOMIC_RELAXED);
			if (v.runq_count || v.short_count)
				take_sched_proc(&k, &v, c);
		}
	}
}

static void drain_counters(struct collector *c, uint64_t now)
{
	uint64_t slot_ns = c->opts.drain_ns, cur = now / slot_ns;
	/* the period that just ended, and the one before again: an event stamped just before its
	 * end may have been counted after we took it (a straggler lands in the right window) */
	uint64_t p = c->next_period ? c->next_period - 1 : cur;

	if (cur >= TP_COUNTER_SLOTS && p < cur - TP_COUNTER_SLOTS + 1)
		p = cur - TP_COUNTER_SLOTS +
		    1; /* a stall longer than the slots: they were reused */
	for (; p < cur; p++) {
		struct window *w = window_ring__window_at(c->ring, p * slot_ns + slot_ns / 2);

		take_period(c, p, w);
		/* stage histograms keep fewer periods: older ones were reused */
		if (c->opts.stages && p + TP_STAGE_SLOTS > cur)
			stages__take_period(c->opts.stages, p, w);
		/* run-queue histograms and per-process counts too */
		if (p + TP_SCHED_SLOTS > cur) {
			take_runq_period(c, p, w);
			take_ptab_period(c, p);
		}
	}
	c->next_period = cur;
	if (loader__take_sched_procs(c->opts.loader, (uint32_t)cur, take_sched_proc, c) < 0)
		c->st.drops[DROP_NO_MEMORY]++;
	c->st.sched = loader__has_sched(c->opts.loader);
	loader__sched_metrics(c->opts.loader, c->st.sched_metrics);

	/* The time each CPU was sampled since the last tick, split over the windows it spans (a
	 * drain delayed by a long query must not put seconds of it into one window). */
	window_ring__window_at(c->ring, now - 1);
	for (uint32_t cpu = 0; cpu < c->nr_cpus; cpu++) {
		uint64_t from;

		if (!c->sampled_since[cpu])
			continue;
		from = c->sampled_since[cpu] > c->last_tick_ns ? c->sampled_since[cpu]
							       : c->last_tick_ns;
		if (now <= from)
			continue;
		c->cpu_sampled_ns_total[cpu] += now - from;
		for (size_t i = window_ring__count(c->ring); i-- > 0;) {
			struct window *w = window_ring__get(c->ring, i);
			uint64_t a = w->start_ns > from ? w->start_ns : from;
			uint64_t b = w->end_ns < now ? w->end_ns : now;

			if (w->end_ns <= from)
				break;
			if (b > a)
				w->cpu_sampled_ns[cpu] += b - a;
		}
	}
}

/* The deferral of young processes' wake-ups (loader__set_young) follows the mmap records: on for
 * processes started since it was set; after records were lost (a full ring: every table was
 * dropped), only for processes started since; off while an online CPU has no event. */
static void sync_young(struct collector *c)
{
	struct mmap_records_stats rs;
	uint64_t young;

	mmap_records__stats(c->opts.mmap_records, &rs);
	young = rs.incomplete ? 0 : c->opts.young_ns;
	if (young == c->young_set && rs.lost == c->young_lost)
		return;
	if (!young)
		pr_warn("a CPU has no mmap records event: every new process's first sample wakes "
			"tailprofd until it has one again");
	else if (rs.lost != c->young_lost)
		pr_warn("%" PRIu64 " mmap records lost (a full ring): processes started before now "
			"wake tailprofd at their first sample",
			rs.lost - c->young_lost);
	loader__set_young(c->opts.loader, young, sysinfo__boot_ns());
	c->young_set = young;
	c->young_lost = rs.lost;
}

static void sync_cpus(struct collector *c, uint64_t now)
{
	uint8_t online[c->nr_cpus];

	c->st.cpus_sampled = loader__sync_cpus(c->opts.loader, online);
	if (c->opts.mmap_records) {
		/* every online CPU, sampled or not: a process may map code on any */
		uint8_t all[c->nr_cpus];

		if (sysinfo__online_cpus(all, c->nr_cpus) >= 0)
			mmap_records__sync_cpus(c->opts.mmap_records, all);
	}
	for (uint32_t cpu = 0; cpu < c->nr_cpus; cpu++) {
		if (online[cpu] && !c->sampled_since[cpu]) {
			c->sampled_since[cpu] = now;
			if (c->st.drains)
				pr_info("cpu %u came online: sampling it", cpu);
		} else if (!online[cpu] && c->sampled_since[cpu]) {
			c->sampled_since[cpu] = 0;
			pr_info("cpu %u went offline", cpu);
		}
	}
	c->st.probes_attached = loader__nr_attached(c->opts.loader);
}

static bool window_held(struct window_ring *r, const struct window *w)
{
	for (size_t i = window_ring__count(r); i-- > 0;)
		if (window_ring__get(r, i) == w)
			return true;
	return false;
}

/* The spans of window w, which just closed, without exact accounting get their estimate from the
 * samples of the windows that still hold records (every sample of a span that ended in w came
 * before this tick: its thread ran its end probe after them). */
static void settle_spans(struct collector *c, struct window *w)
{
	size_t n = window_ring__count(c->ring), first = n > 3 ? n - 3 : 0, nr = 0;
	struct window *recent[3];

	for (size_t i = first; i < n; i++)
		recent[nr++] = window_ring__get(c->ring, i);
	stages__settle_spans(w, recent, nr);
}

/* A window is closed once its counters are in: at the first tick at or after its end, which takes
 * every drain period that ended (drain_counters). A sample stamped past the current window's end
 * pushes the next window in any drain (window_ring__window_at), and that closed the one before
 * early: its last period's counts still to come, "samples + idle_samples + ringbuf_full ==
 * received_samples" failed for a moment in a window the API called closed. counted_to_ns: the
 * last tick. Under the write lock. */
static void close_counted(struct collector *c, uint64_t counted_to_ns)
{
	struct window *cur = window_ring__current(c->ring);

	for (size_t i = window_ring__count(c->ring); i-- > 0;) {
		struct window *w = window_ring__get(c->ring, i);

		if (w == cur)
			continue;
		if (w->end_ns > counted_to_ns)
			w->closed = false;
		else if (w->closed)
			break; /* and every older one */
		else
			w->closed = true;
	}
}

static void drain(struct collector *c, bool tick)
{
	uint64_t now;
	int64_t offset;
	struct window *w;
	int n;

	pthread_rwlock_wrlock(&c->lock);
	/* the clocks after the lock: waiting for readers must not age the counters' time */
	now = sysinfo__mono_ns();
	c->drain_ns = now;
	sysinfo__test_clock_refresh();
	offset = sysinfo__wall_offset_ns();
	/* Keep the labels steady: the offset measured at each drain jitters by a few hundred ns,
	 * which would leave gaps between windows' labels. Follow it when it really moved (an NTP
	 * step or a slew that added up to a millisecond). */
	if (llabs(offset - c->wall_offset_ns) < (long long)NSEC_PER_MSEC)
		offset = c->wall_offset_ns;
	/* counters first: they are attributed to the period that just ended, and reading them
	 * after a long consume would count samples of the next window in this one */
	if (tick)
		drain_counters(c, now);
	if (c->opts.python)
		python__drain_begin(c->opts.python, tick);
	/* the maps text one module reads from here to the end of the drain serves the others */
	proc_maps__begin_round();
	/* the mmap records up to now, for the ring's room (a load takes the rest) */
	if (c->opts.mmap_records) {
		mmap_records__drain(c->opts.mmap_records);
		if (c->opts.young_ns && c->opts.loader)
			sync_young(c);
	}
	n = ring_buffer__consume(c->rb);
	if (n < 0)
		pr_warn("failed to drain the events ring buffer: %s", strerror(-n));
	collector_recheck_due(c, now);
	if (!tick) {
		close_counted(c, c->last_tick_ns);
		c->st.wakeups++;
	}
	if (tick) {
		repeats__prune(&c->repeats, c->stacks, c->opts.drain_ns);
		window_ring__advance(c->ring, now);
		close_counted(c, now); /* drain_counters took every period up to now */
		w = window_ring__current(c->ring);
		/* A window is done for stages at the first tick after it: that tick took its last
		 * period's histograms. (Samples past its end may have advanced the ring earlier.)
		 */
		if (c->opts.stages) {
			stages__sync_names(c->opts.stages);
			if (c->stage_window && c->stage_window != w &&
			    window_held(c->ring, c->stage_window)) {
				stages__window_closed(c->opts.stages, c->stage_window);
				settle_spans(c, c->stage_window);
				if (c->opts.spikes)
					spikes__window_closed(c->opts.spikes, c->ring,
							      c->stage_window);
			}
			c->stage_window = w;
		}
		/* after the spans of the window just closed took their estimates from them */
		window_ring__drop_records(c->ring);
		w->wall_offset_ns = offset;
		c->last_tick_ns = now;
		sync_cpus(c, now);
		c->st.drains++;
		c->st.last_drain_mono_ns = now;
		c->st.healthy = c->st.probes_attached >= 4;
		symbolizer__stats(c->opts.symbolizer, &c->st.sym);
		if (c->opts.python) {
			c->st.python = true;
			python__stats(c->opts.python, &c->st.py);
		}
	}
	pthread_rwlock_unlock(&c->lock);
	/* discovery reads /proc and attaches probes: not under the lock, and before the unwinder's
	 * work (a new binary's tables take a while), while short-lived processes still run */
	if (c->opts.gc)
		gc__tick(c->opts.gc, now);
	if (c->opts.unwinder)
		unwind_queue__run(&c->unwind_work, c->opts.unwinder);
	if (c->opts.python)
		collector_py_run_queue(c);
	if (c->opts.unwinder) {
		/* every 20 drain periods (10 s by default): processes whose exit was lost */
		if (tick && c->st.drains % 20 == 0)
			unwinder__prune(c->opts.unwinder);
		if (tick) {
			pthread_rwlock_wrlock(&c->lock);
			unwinder__stats(c->opts.unwinder, &c->st.unwind);
			pthread_rwlock_unlock(&c->lock);
		}
	}
	proc_maps__end_round();

	/* spikes that closed: to the state directory (it takes the read lock per profile) */
	if (tick && c->opts.spikes)
		spikes__save_pending(c->opts.spikes);
	if (tick) {
		pthread_mutex_lock(&c->drain_mu);
		c->drained_up_to_ns = now;
		c->wall_offset_ns = offset;
		pthread_cond_broadcast(&c->drain_cond);
		pthread_mutex_unlock(&c->drain_mu);
	}
}

static int arm_timer(int tfd, uint64_t drain_ns)
{
	/* absolute ticks on multiples of the drain period, so windows (multiples of it) are cut
	 * exactly at ticks */
	uint64_t now = sysinfo__mono_ns(), next = now - now % drain_ns + drain_ns;
	struct itimerspec its = {
	    .it_value = {.tv_sec = next / 1000000000ULL, .tv_nsec = next % 1000000000ULL},
	    .it_interval = {.tv_sec = drain_ns / 1000000000ULL,
			    .tv_nsec = drain_ns % 1000000000ULL},
	};

	return timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL) ? -errno : 0;
}

int collector__run(struct collector *c, int stop_fd)
{
	struct epoll_event ev, evs[4];
	int ep, tfd, err = 0;
	bool running = true;

	ep = epoll_create1(EPOLL_CLOEXEC);
	tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (ep < 0 || tfd < 0) {
		err = -errno;
		pr_err("failed to set up the drain loop: %s", strerror(-err));
		goto out;
	}
	err = arm_timer(tfd, c->opts.drain_ns);
	ev = (struct epoll_event){.events = EPOLLIN, .data.u32 = 0};
	if (!err && epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev))
		err = -errno;
	ev.data.u32 = 1;
	if (!err && epoll_ctl(ep, EPOLL_CTL_ADD, ring_buffer__epoll_fd(c->rb), &ev))
		err = -errno;
	ev.data.u32 = 2;
	if (!err && epoll_ctl(ep, EPOLL_CTL_ADD, stop_fd, &ev))
		err = -errno;
	if (err) {
		pr_err("failed to set up the drain loop: %s", strerror(-err));
		goto out;
	}
	/* the first drain right away: /healthz turns 200 once it is done */
	drain(c, true);
	while (running) {
		int n = epoll_wait(ep, evs, 4, -1);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			pr_err("drain loop: epoll_wait failed: %s", strerror(-err));
			break;
		}
		for (int i = 0; i < n; i++) {
			uint64_t expirations;

			switch (evs[i].data.u32) {
			case 0:
				if (read(tfd, &expirations, sizeof(expirations)) > 0)
					drain(c, true);
				break;
			case 1:
				drain(c, false);
				break;
			case 2:
				running = false;
				break;
			}
		}
	}
	drain(c, true);
out:
	if (err)
		collector__stop(c);
	if (ep >= 0)
		close(ep);
	if (tfd >= 0)
		close(tfd);
	return err;
}

void collector__stop(struct collector *c)
{
	pthread_mutex_lock(&c->drain_mu);
	c->stopping = true;
	pthread_cond_broadcast(&c->drain_cond);
	pthread_mutex_unlock(&c->drain_mu);
}

struct collector *collector__new(const struct collector_opts *opts)
{
	struct intern_ops stack_ops = {.acquire = stack_acquire, .release = stack_release};
	pthread_rwlockattr_t attr;
	pthread_condattr_t cattr;
	struct collector *c;

	c = xcalloc(1, sizeof(*c));
	c->opts = *opts;
	c->nr_cpus = loader__nr_cpus(opts->loader);
	c->self_pid = getpid();
	c->period_ns = 1000000000ULL / opts->frequency_hz;
	c->stacks = intern_table__new(&stack_ops);
	c->tasks = intern_table__new(NULL);
	if (!c->stacks || !c->tasks)
		abort();
	if (!c->opts.max_stacks)
		c->opts.max_stacks = LIMITS_DEFAULT_STACKS;
	if (!c->opts.max_tasks)
		c->opts.max_tasks = LIMITS_DEFAULT_TASKS;
	if (!c->opts.max_known)
		c->opts.max_known = LIMITS_DEFAULT_KNOWN_PROCESSES;
	intern_table__set_max(c->stacks, c->opts.max_stacks);
	intern_table__set_max(c->tasks, c->opts.max_tasks);
	c->ring = window_ring__new(&(struct window_ring_opts){
	    .window_ns = opts->window_ns,
	    .nr_windows = opts->nr_windows,
	    .nr_cpus = c->nr_cpus,
	    .sample_period_ns = c->period_ns,
	    .stacks = c->stacks,
	    .tasks = c->tasks,
	});
	if (!c->ring)
		goto fail;
	c->sampled_since = xcalloc(c->nr_cpus, sizeof(uint64_t));
	c->cpu_received_total = xcalloc(c->nr_cpus, sizeof(uint64_t));
	c->cpu_sampled_ns_total = xcalloc(c->nr_cpus, sizeof(uint64_t));
	c->key = xcalloc(1, sizeof(struct stack) + 2 * TP_MAX_STACK_DEPTH * sizeof(struct frame));
	pid_set__init(&c->known);
	pthread_rwlockattr_init(&attr);
	/* a stream of profile queries must not starve the drain loop */
	pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&c->lock, &attr);
	pthread_rwlockattr_destroy(&attr);
	pthread_mutex_init(&c->drain_mu, NULL);
	/* capture waiters time out on CLOCK_MONOTONIC, like everything else here */
	pthread_condattr_init(&cattr);
	pthread_condattr_setclock(&cattr, CLOCK_MONOTONIC);
	pthread_cond_init(&c->drain_cond, &cattr);
	pthread_condattr_destroy(&cattr);

	c->rb = ring_buffer__new(loader__events_fd(opts->loader), collector_on_event, c, NULL);
	if (!c->rb) {
		pr_err("failed to open the events ring buffer: %s", strerror(errno));
		goto fail;
	}
	if (opts->probes &&
	    ring_buffer__add(c->rb, probes__spans_fd(opts->probes), collector_on_span, c)) {
		pr_err("failed to open the spans ring buffer: %s", strerror(errno));
		goto fail;
	}
	if (opts->gc && ring_buffer__add(c->rb, opts->gc_events_fd, collector_on_gc_event, c)) {
		pr_err("failed to open the GC events ring buffer: %s", strerror(errno));
		goto fail;
	}
	/* counts from before the daemon started are not ours to report; nor are the samples
	 * stamped before started_mono_ns, taken after the counts were zeroed (collector_events.c)
	 */
	for (size_t i = 0; i < (size_t)c->nr_cpus * TP_COUNTER_SLOTS * TP_M_NR; i++)
		__atomic_store_n(&loader__counters(opts->loader)[i], 0, __ATOMIC_RELAXED);
	/* the offset measured as at each drain (bracketed reads): the drains keep it unless it
	 * moved by a millisecond, so an error made here would last */
	c->wall_offset_ns = sysinfo__wall_offset_ns();
	c->st.started_mono_ns = c->last_tick_ns = sysinfo__mono_ns();
	c->st.started_unix_ns = (int64_t)c->st.started_mono_ns + c->wall_offset_ns;
	c->next_period = c->last_tick_ns / opts->drain_ns;
	sync_cpus(c, c->last_tick_ns);
	window_ring__advance(c->ring, c->last_tick_ns);
	window_ring__current(c->ring)->wall_offset_ns = c->wall_offset_ns;
	return c;
fail:
	collector__free(c);
	return NULL;
}

void collector__free(struct collector *c)
{
	if (!c)
		return;
	ring_buffer__free(c->rb);
	while (c->captures) {
		struct capture *cap = c->captures;

		c->captures = cap->next;
		window__free(cap->w, c->stacks, c->tasks);
		free(cap);
	}
	window_ring__free(c->ring);
	repeats__free(&c->repeats, c->stacks);
	intern_table__free(c->stacks);
	intern_table__free(c->tasks);
	free(c->sampled_since);
	free(c->cpu_received_total);
	free(c->cpu_sampled_ns_total);
	free(c->key);
	unwind_queue__free(&c->unwind_work);
	pid_set__free(&c->known);
	free(c);
}

void collector__rdlock(struct collector *c)
{
	pthread_rwlock_rdlock(&c->lock);
}

void collector__wrlock(struct collector *c)
{
	pthread_rwlock_wrlock(&c->lock);
}

void collector__unlock(struct collector *c)
{
	pthread_rwlock_unlock(&c->lock);
}

struct window_ring *collector__ring(struct collector *c)
{
	return c->ring;
}

uint64_t collector__period_ns(const struct collector *c)
{
	return c->period_ns;
}

uint32_t collector__nr_cpus(const struct collector *c)
{
	return c->nr_cpus;
}

bool collector__cpu_totals(struct collector *c, uint32_t cpu, uint64_t *received,
			   uint64_t *expected)
{
	*received = c->cpu_received_total[cpu];
	*expected = c->cpu_sampled_ns_total[cpu] / c->period_ns;
	return c->sampled_since[cpu] || c->cpu_sampled_ns_total[cpu] || *received;
}

const uint64_t *collector__runq_buckets(const struct collector *c)
{
	return c->runq_buckets;
}

int64_t collector__wall_offset_ns(struct collector *c)
{
	int64_t v;

	pthread_mutex_lock(&c->drain_mu);
	v = c->wall_offset_ns;
	pthread_mutex_unlock(&c->drain_mu);
	return v;
}

void collector__status(struct collector *c, struct collector_status *st)
{
	struct window_ring *r = c->ring;
	size_t n = window_ring__count(r);

	*st = c->st;
	/* drains that stopped (a thread stuck) are not health: probes and readiness say 503 */
	if (st->healthy &&
	    sysinfo__mono_ns() - st->last_drain_mono_ns >= COLLECTOR_DRAIN_STALLED_NS)
		st->healthy = false;
	st->window_bytes = st->record_bytes = st->records = 0;
	for (size_t i = 0; i < n + window_ring__nr_pinned(r); i++) {
		struct window *w = i < n ? window_ring__get(r, i) : window_ring__pinned(r, i - n);

		st->window_bytes += window__bytes(w);
		st->record_bytes += w->cap_records * sizeof(*w->records);
		st->records += w->nr_records;
	}
	st->expected_samples = 0;
	for (uint32_t cpu = 0; cpu < c->nr_cpus; cpu++)
		st->expected_samples += c->cpu_sampled_ns_total[cpu] / c->period_ns;
	st->stacks = intern_table__count(c->stacks);
	st->tasks = intern_table__count(c->tasks);
	st->max_stacks = c->opts.max_stacks;
	st->max_tasks = c->opts.max_tasks;
	st->known = c->known.count;
	st->max_known = c->opts.max_known;
	st->known_evicted = c->known_evicted;
	st->interned_bytes = intern_table__bytes(c->stacks) + intern_table__bytes(c->tasks);
	st->windows = n;
	st->max_windows = window_ring__capacity(r);
}

struct window *collector__capture_begin(struct collector *c, uint64_t duration_ns)
{
	uint64_t now = sysinfo__mono_ns();
	struct capture *cap = calloc(1, sizeof(*cap));

	if (!cap)
		return NULL;
	cap->w = window__new(now, now + duration_ns, c->nr_cpus);
	if (!cap->w) {
		free(cap);
		return NULL;
	}
	pthread_rwlock_wrlock(&c->lock);
	cap->next = c->captures;
	c->captures = cap;
	pthread_rwlock_unlock(&c->lock);
	return cap->w;
}

int collector__capture_wait(struct collector *c, struct window *w, bool (*wanted)(void *arg),
			    void *arg)
{
	int err = 0;

	pthread_mutex_lock(&c->drain_mu);
	while (c->drained_up_to_ns < w->end_ns && !c->stopping) {
		struct timespec until;

		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_nsec += 200 * NSEC_PER_MSEC;
		if (until.tv_nsec >= (long)NSEC_PER_SEC) {
			until.tv_sec++;
			until.tv_nsec -= NSEC_PER_SEC;
		}
		pthread_cond_timedwait(&c->drain_cond, &c->drain_mu, &until);
		if (wanted && !wanted(arg)) {
			err = -ECONNRESET;
			break;
		}
	}
	if (!err && c->drained_up_to_ns < w->end_ns)
		err = -EINTR;
	pthread_mutex_unlock(&c->drain_mu);
	return err;
}

void collector__capture_end(struct collector *c, struct window *w)
{
	struct capture **pp, *cap = NULL;

	pthread_rwlock_wrlock(&c->lock);
	for (pp = &c->captures; *pp; pp = &(*pp)->next) {
		if ((*pp)->w == w) {
			cap = *pp;
			*pp = cap->next;
			break;
		}
	}
	window__free(w, c->stacks, c->tasks);
	pthread_rwlock_unlock(&c->lock);
	free(cap);
}
