// SPDX-License-Identifier: GPL-2.0-only
/* Kernel probing, skeleton lifecycle (open, set rodata, load, attach) and BPF counters. */
#include "loader.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "kernel_probe.h"
#include "libbpf_log.h"
#include "log.h"
#include "sysinfo.h"
#include "profile.skel.h"
#include "sched.skel.h"

/* Where a captured block whose user stack was not taken at switch-out gets it, on its thread's
 * way back to user space: the order tried (loader__return_path() names them). */
enum sched_return {
	RET_TASK_WORK, /* a task work (bpf_task_work_schedule_resume, Linux 6.18) */
	RET_FEXIT,     /* fexit/schedule (BPF trampolines) */
	RET_SYS_EXIT,  /* raw_tp/sys_exit: every syscall's return */
};

static const char *const return_names[] = {"task_work", "fexit_schedule", "sys_exit"};

struct loader {
	struct profile_bpf *skel;
	bool unwind_tables;
	bool python_frames;
	uint32_t nr_cpus;
	uint32_t frequency_hz;
	int *perf_fds;		      /* [nr_cpus], -1 when not sampled */
	struct bpf_link **perf_links; /* [nr_cpus] */
	int stats_fd;
	uint64_t *counters; /* mmap of the counters map */
	size_t counters_bytes;
	struct sched_bpf *sched;   /* NULL when the kernel could not load it */
	struct tp_runq_hist *runq; /* mmap of runq_hist */
	size_t runq_bytes;
	struct tp_sched_pentry *ptab; /* mmap of sched_ptab */
	bool block_clock_rq;	      /* blocks timed with rq clocks (else CLOCK_MONOTONIC) */
	enum sched_return ret;	      /* how unpredicted captures get their user stacks */
	size_t ptab_bytes;
	uint64_t procs_taken;	    /* sched_procs entries deleted (against sched_procs_added) */
	struct tp_unwind_row *rows; /* mmap of unwind_rows */
	size_t rows_bytes;
	struct tp_unwind_page *pages; /* mmap of unwind_pages */
	size_t pages_bytes;
	uint64_t *epoch;	/* mmap of unwind_epoch (a page) */
	uint64_t live_since_ns; /* CLOCK_BOOTTIME when the fork program was attached; 0: not */
};

int loader__probe_kernel(struct features *f)
{
	char why[200];

	libbpf_log__install();
	if (!kernel_probe__sampler(why, sizeof(why)))
		return 0;
	pr_err("%s", why);
	features__set(f, FEATURE_CPU_SAMPLING, false, "", "%s", why);
	return -ENOTSUP;
}

static int open_cpu_clock(uint32_t cpu, uint32_t frequency_hz)
{
	struct perf_event_attr attr = {
	    .type = PERF_TYPE_SOFTWARE,
	    .config = PERF_COUNT_SW_CPU_CLOCK,
	    .size = sizeof(attr),
	    /* cpu-clock turns a frequency into this fixed period anyway; say it outright */
	    .sample_period = 1000000000ULL / frequency_hz,
	    .disabled = 0,
	};

	return syscall(__NR_perf_event_open, &attr, -1, (int)cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

int loader__sync_cpus(struct loader *l, uint8_t *online_out)
{
	uint8_t online[l->nr_cpus];
	int sampled = 0;

	if (sysinfo__online_cpus(online, l->nr_cpus) < 0)
		memset(online, 1, l->nr_cpus);
	for (uint32_t cpu = 0; cpu < l->nr_cpus; cpu++) {
		if (online[cpu] && l->perf_fds[cpu] < 0) {
			int fd = open_cpu_clock(cpu, l->frequency_hz);
			struct bpf_link *link;

			if (fd < 0) {
				/* the CPU may have gone offline again since we read the mask */
				online[cpu] = 0;
				continue;
			}
			link = bpf_program__attach_perf_event(l->skel->progs.perf_sample, fd);
			if (!link) {
				pr_warn("failed to attach perf_sample to cpu %u: %s", cpu,
					strerror(errno));
				close(fd);
				online[cpu] = 0;
				continue;
			}
			l->perf_fds[cpu] = fd;
			l->perf_links[cpu] = link;
			pr_debug("sampling cpu %u at %u Hz", cpu, l->frequency_hz);
		} else if (!online[cpu] && l->perf_fds[cpu] >= 0) {
			bpf_link__destroy(l->perf_links[cpu]);
			close(l->perf_fds[cpu]);
			l->perf_links[cpu] = NULL;
			l->perf_fds[cpu] = -1;
			pr_debug("cpu %u went offline", cpu);
		}
		sampled += l->perf_fds[cpu] >= 0;
		if (online_out)
			online_out[cpu] = l->perf_fds[cpu] >= 0;
	}
	return sampled;
}

static void free_sched(struct loader *l)
{
	if (l->runq)
		munmap(l->runq, l->runq_bytes);
	l->runq = NULL;
	if (l->ptab)
		munmap(l->ptab, l->ptab_bytes);
	l->ptab = NULL;
	sched_bpf__destroy(l->sched);
	l->sched = NULL;
}

/* Whether sched_clock is one clock on every CPU, so that a block that starts on one CPU and ends
 * on another can be timed with the run queues' clocks: on x86 the TSC clocksource says so (the
 * kernel leaves it, and marks sched_clock unstable, when the TSC is not synchronised). */
static bool sched_clock_is_global(void)
{
	char buf[32] = "";
	FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "re");

	if (!f)
		return false;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	return !strcmp(buf, "tsc\n");
}

/* Maps bytes of BPF map m (BPF_F_MMAPABLE) into this process, read-write and shared. Returns the
 * mapping, or NULL with *err set to -errno. */
static void *map_shared(const struct bpf_map *m, size_t bytes, int *err)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(m), 0);

	*err = p == MAP_FAILED ? -errno : 0;
	return p == MAP_FAILED ? NULL : p;
}

/* Sets the scheduler's three capabilities off: reason applies to offcpu and runq_latency (one
 * object serves both); quiet, it was asked for. */
static void sched_off(struct features *f, bool quiet, const char *reason)
{
	features__set(f, FEATURE_OFFCPU, false, "", "%s", reason);
	features__set(f, FEATURE_RUNQ, false, "", "%s", reason);
	features__set(f, FEATURE_TASK_WORK, false, "", "off-CPU capture is off");
	features__set_quiet(f, FEATURE_TASK_WORK);
	if (quiet) {
		features__set_quiet(f, FEATURE_OFFCPU);
		features__set_quiet(f, FEATURE_RUNQ);
	}
}

/* Opens, sizes and loads the scheduler object into l->sched with the return program ret says.
 * Returns 0 or a negative errno; l->sched stays for free_sched() either way (NULL when it could
 * not be opened). */
static int sched_open_load(struct loader *l, const struct loader_opts *opts, enum sched_return ret)
{
	int err;

	l->sched = sched_bpf__open();
	if (!l->sched)
		return -errno;
	l->sched->rodata->slot_ns = opts->slot_ns;
	l->sched->rodata->offcpu_min_ns = opts->offcpu_min_ns;
	l->sched->rodata->wakeup_bytes = opts->ringbuf_bytes / 4;
	l->sched->rodata->block_clock_rq = l->block_clock_rq;
	l->ret = ret;
	l->sched->rodata->use_task_work = ret == RET_TASK_WORK;
	/* two variants of the switch program: the task work's is verified only by kernels that
	 * have it (see capture_tw() in sched.bpf.c) */
	bpf_program__set_autoload(l->sched->progs.sched_switch, ret != RET_TASK_WORK);
	bpf_program__set_autoload(l->sched->progs.sched_switch_tw, ret == RET_TASK_WORK);
	bpf_program__set_autoload(l->sched->progs.sched_return, ret == RET_FEXIT);
	bpf_program__set_autoload(l->sched->progs.sys_exit, ret == RET_SYS_EXIT);

	/* the sampler's maps, one set for both objects: its ring buffer, the stage and GC labels,
	 * the processes it knows, and its unwind tables (off-CPU user stacks are walked with them)
	 */
	const struct {
		struct bpf_map *sched, *profile;
	} shared[] = {
	    {l->sched->maps.events, l->skel->maps.events},
	    {l->sched->maps.stage_stacks, l->skel->maps.stage_stacks},
	    {l->sched->maps.gc_pausing, l->skel->maps.gc_pausing},
	    {l->sched->maps.label_sources, l->skel->maps.label_sources},
	    {l->sched->maps.known_procs, l->skel->maps.known_procs},
	    {l->sched->maps.unwind_rows, l->skel->maps.unwind_rows},
	    {l->sched->maps.unwind_pages, l->skel->maps.unwind_pages},
	    {l->sched->maps.unwind_procs, l->skel->maps.unwind_procs},
	    {l->sched->maps.py_procs, l->skel->maps.py_procs},
	    {l->sched->maps.py_offsets, l->skel->maps.py_offsets},
	    {l->sched->maps.py_seen, l->skel->maps.py_seen},
	    {l->sched->maps.unwind_epoch, l->skel->maps.unwind_epoch},
	};
	err = 0;
	for (size_t i = 0; !err && i < sizeof(shared) / sizeof(shared[0]); i++)
		err = bpf_map__reuse_fd(shared[i].sched, bpf_map__fd(shared[i].profile));
	l->sched->rodata->unwind_tables_on = l->unwind_tables;
	l->sched->rodata->python_on = l->python_frames;
	if (!err)
		err =
		    bpf_map__set_max_entries(l->sched->maps.runq_hist, l->nr_cpus * TP_SCHED_SLOTS);
	if (!err)
		err = bpf_map__set_max_entries(l->sched->maps.sched_ptab,
					       l->nr_cpus * TP_SCHED_SLOTS * TP_SCHED_PTAB);
	if (!err)
		err = sched_bpf__load(l->sched);
	return err;
}

/* The task_work capability's reason where ret, a fallback, runs: why the better ones do not
 * (each the failed load's reason, ending in FEATURE_CHECK_MORE, or a missing
 * kernel piece; "" for one not tried), then what runs instead. */
static void return_fallback(struct features *f, enum sched_return ret, const char *tw_why,
			    const char *fx_why)
{
	const char *whys[] = {tw_why, fx_why};
	bool any_more = false;
	char out[sizeof(features__get(f, FEATURE_TASK_WORK)->reason)];
	size_t o = 0;

	out[0] = '\0';
	for (int i = 0; i < 2; i++) {
		bool more;
		size_t n = features__without_check_more(whys[i], &more);

		any_more |= more;
		if (!n)
			continue;
		/* each cut to 140 bytes, said so: what runs instead must fit in the 400 */
		if (o < sizeof(out))
			o += snprintf(out + o, sizeof(out) - o, "%s%.*s%s", o ? "; " : "",
				      (int)(n < 140 ? n : 140), whys[i], n > 140 ? "..." : "");
	}
	features__set(f, FEATURE_TASK_WORK, true, return_names[ret],
		      "%s; instead %s takes those stacks%s", out,
		      ret == RET_FEXIT ? "a program on the return from schedule() (fexit/schedule)"
				       : "a program on every syscall's return (raw_tp/sys_exit)",
		      any_more ? FEATURE_CHECK_MORE : "");
}

/* The scheduler programs: off-CPU and run-queue latency. Optional: a kernel that cannot load
 * them (no task storage for tracing programs, no tp_btf) still gets CPU profiles. Their samples
 * go into the profile program's `events` ring buffer. The return program is the task work's
 * where the kernel has its kfunc and accepts it (6.18.44-fc-v1272 refuses bpf_task_work in any
 * program that cannot sleep), else fexit/schedule where it has BPF trampolines (Debian's 6.1 and
 * 6.12), else sys_exit (this machine kind's kernel): each tried in turn. */
static void load_sched(struct loader *l, const struct loader_opts *opts)
{
	struct features *f = opts->features;
	char why[200], tw_why[sizeof(features__get(f, FEATURE_TASK_WORK)->reason)] = "";
	char fx_why[sizeof(tw_why)] = "";
	bool forced = features__forced_off(f, FEATURE_TASK_WORK);
	enum sched_return ret;
	int err;

	if (features__forced_off(f, FEATURE_OFFCPU)) {
		sched_off(f, true, features__forced_reason(f, FEATURE_OFFCPU));
		return;
	}
	if (kernel_probe__sched(why, sizeof(why))) {
		sched_off(f, false, why);
		return;
	}
	l->block_clock_rq = sched_clock_is_global();
	/* for tests: the CLOCK_MONOTONIC path that machines without a TSC clocksource take */
	if (getenv("TAILPROF_SCHED_CLOCK") && !strcmp(getenv("TAILPROF_SCHED_CLOCK"), "monotonic"))
		l->block_clock_rq = false;
	l->runq_bytes = (size_t)l->nr_cpus * TP_SCHED_SLOTS * sizeof(struct tp_runq_hist);
	l->ptab_bytes =
	    (size_t)l->nr_cpus * TP_SCHED_SLOTS * TP_SCHED_PTAB * sizeof(struct tp_sched_pentry);

	/* forced off (TAILPROF_FEATURES_OFF=task_work, TAILPROF_SCHED_RETURN=sys_exit): sys_exit */
	ret = forced ? RET_SYS_EXIT : kernel_probe__task_work() ? RET_TASK_WORK : RET_FEXIT;
	if (!forced && ret == RET_FEXIT)
		snprintf(tw_why, sizeof(tw_why),
			 "the kernel lacks the kfunc bpf_task_work_schedule_resume (Linux 6.18)");
	for (;;) {
		if (ret == RET_FEXIT && kernel_probe__fexit_schedule(fx_why, sizeof(fx_why))) {
			ret = RET_SYS_EXIT;
			continue;
		}
		libbpf_log__reset();
		err = sched_open_load(l, opts, ret);
		if (err && ret != RET_SYS_EXIT) {
			/* refused: what the verifier said, then the next one's */
			char *to = ret == RET_TASK_WORK ? tw_why : fx_why;

			libbpf_log__load_failed(f, FEATURE_TASK_WORK, return_names[ret + 1],
						"sched_bpf", err);
			snprintf(to, sizeof(tw_why), "%s",
				 f ? features__get(f, FEATURE_TASK_WORK)->reason : strerror(-err));
			free_sched(l);
			ret++;
			continue;
		}
		if (err)
			goto fail_load;
		l->runq = map_shared(l->sched->maps.runq_hist, l->runq_bytes, &err);
		if (!err)
			l->ptab = map_shared(l->sched->maps.sched_ptab, l->ptab_bytes, &err);
		if (!err && !opts->load_only)
			err = sched_bpf__attach(l->sched);
		if (err && ret == RET_FEXIT) {
			/* loaded but not attached (ftrace refused the trampoline): sys_exit */
			snprintf(fx_why, sizeof(fx_why), "fexit/schedule did not attach: %s",
				 strerror(-err));
			free_sched(l);
			ret = RET_SYS_EXIT;
			continue;
		}
		break;
	}
	if (err) {
		snprintf(why, sizeof(why), "the scheduler programs did not attach: %s",
			 strerror(-err));
		sched_off(f, false, why);
		free_sched(l);
		return;
	}
	features__set(f, FEATURE_OFFCPU, true, "tp_btf/sched_switch", NULL);
	features__set(f, FEATURE_RUNQ, true, "tp_btf/sched_switch", NULL);
	if (ret == RET_TASK_WORK) {
		features__set(f, FEATURE_TASK_WORK, true, "task_work", NULL);
	} else if (forced) {
		features__set(f, FEATURE_TASK_WORK, true, "sys_exit", "%s",
			      features__forced_reason(f, FEATURE_TASK_WORK));
		features__set_quiet(f, FEATURE_TASK_WORK);
	} else {
		return_fallback(f, ret, tw_why, ret == RET_SYS_EXIT ? fx_why : "");
	}
	return;
fail_load:
	sched_off(f, false, "");
	libbpf_log__load_failed(f, FEATURE_OFFCPU, "", "sched_bpf", err);
	libbpf_log__load_failed(f, FEATURE_RUNQ, "", "sched_bpf", err);
	free_sched(l);
}

/* BPF_ENABLE_STATS: counts the run time of every program while the fd is open. */
static void enable_stats(struct loader *l, const struct loader_opts *opts)
{
	struct features *f = opts->features;

	if (!opts->bpf_stats) {
		features__set(f, FEATURE_BPF_STATS, false, "",
			      "--bpf-stats=off (or [daemon] bpf_stats = off): the self-overhead "
			      "figures read 0 unless another process holds BPF statistics on");
		features__set_quiet(f, FEATURE_BPF_STATS);
		return;
	}
	if (features__forced_off(f, FEATURE_BPF_STATS)) {
		features__set(f, FEATURE_BPF_STATS, false, "", "%s",
			      features__forced_reason(f, FEATURE_BPF_STATS));
		features__set_quiet(f, FEATURE_BPF_STATS);
		return;
	}
	l->stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	if (l->stats_fd >= 0)
		features__set(f, FEATURE_BPF_STATS, true, "BPF_ENABLE_STATS", NULL);
	else if (errno == EPERM)
		features__set(
		    f, FEATURE_BPF_STATS, false, "",
		    "BPF_ENABLE_STATS needs CAP_SYS_ADMIN: the self-overhead figures read 0 "
		    "(run as root, or add CAP_SYS_ADMIN)");
	else
		features__set(f, FEATURE_BPF_STATS, false, "",
			      "BPF_ENABLE_STATS failed (%s; Linux 5.8): the self-overhead figures "
			      "read 0",
			      strerror(errno));
}

/* The table unwinder's maps loaded but could not be mapped into tailprofd (what, error err):
 * eh_frame_unwinding falls back to frame pointers (main loads the sampler again without it),
 * and --check reports the failure. */
static void unwind_map_failed(const struct loader_opts *opts, const char *what, int err)
{
	size_t mib = (size_t)opts->unwind_rows * sizeof(struct tp_unwind_row) >> 20;

	pr_warn("failed to map %s (--unwind-memory %zu MiB): %s", what, mib, strerror(-err));
	features__set(opts->features, FEATURE_EH_FRAME, false, "frame_pointers",
		      "cannot map %s (--unwind-memory %zu MiB) into tailprofd: %s; give a smaller "
		      "--unwind-memory",
		      what, mib, strerror(-err));
	features__set_load_failure(opts->features, FEATURE_EH_FRAME, "profile_bpf", NULL, false,
				   NULL);
}

/* Entries of unwind_pages: one per 16 rows (a page of code has some 80 rows in libc). */
static uint32_t unwind_pages_for(const struct loader_opts *opts)
{
	return opts->unwind_rows / 16 ? opts->unwind_rows / 16 : 1;
}

struct loader *loader__new(const struct loader_opts *opts)
{
	struct loader *l;
	int err, n;

	libbpf_log__install();
	l = calloc(1, sizeof(*l));
	if (!l)
		abort();
	l->stats_fd = -1;
	l->frequency_hz = opts->frequency_hz;
	n = libbpf_num_possible_cpus();
	if (n <= 0) {
		pr_err("cannot count possible CPUs: %s", strerror(-n));
		free(l);
		errno = -n;
		return NULL;
	}
	l->nr_cpus = n;
	l->perf_fds = malloc(n * sizeof(*l->perf_fds));
	l->perf_links = calloc(n, sizeof(*l->perf_links));
	if (!l->perf_fds || !l->perf_links)
		abort();
	for (int i = 0; i < n; i++)
		l->perf_fds[i] = -1;

	l->skel = profile_bpf__open();
	if (!l->skel) {
		err = -errno;
		pr_err("failed to open BPF object: %s", strerror(-err));
		goto fail;
	}
	l->skel->rodata->wakeup_bytes = opts->ringbuf_bytes / 4;
	err = bpf_map__set_max_entries(l->skel->maps.events, opts->ringbuf_bytes);
	if (err) {
		pr_err("failed to size the events ring buffer to %zu bytes: %s",
		       opts->ringbuf_bytes, strerror(-err));
		goto fail;
	}
	l->skel->rodata->slot_ns = opts->slot_ns;
	l->unwind_tables = opts->unwind_tables;
	l->skel->rodata->unwind_tables_on = opts->unwind_tables;
	l->python_frames = opts->python_frames;
	l->skel->rodata->python_on = opts->python_frames;
	l->skel->rodata->cgroup_v1_hierarchy = opts->cgroup_v1_hierarchy;
	l->skel->rodata->bench_pid = opts->bench_pid;
	/* off: the maps stay but hold one entry */
	err = bpf_map__set_max_entries(l->skel->maps.unwind_rows,
				       opts->unwind_tables ? opts->unwind_rows : 1);
	if (!err)
		err = bpf_map__set_max_entries(l->skel->maps.unwind_pages,
					       opts->unwind_tables ? unwind_pages_for(opts) : 1);
	if (!err)
		err =
		    bpf_map__set_max_entries(l->skel->maps.unwind_procs,
					     opts->unwind_tables ? opts->unwind_max_processes : 1);
	if (err) {
		pr_err("failed to size the unwind maps: %s", strerror(-err));
		goto fail;
	}
	l->skel->rodata->time_stage_label = opts->time_stage_label;
	l->counters_bytes = (size_t)n * TP_COUNTER_SLOTS * TP_M_NR * sizeof(uint64_t);
	err = bpf_map__set_max_entries(l->skel->maps.counters,
				       (uint32_t)n * TP_COUNTER_SLOTS * TP_M_NR);
	if (err) {
		pr_err("failed to size the counters map: %s", strerror(-err));
		goto fail;
	}
	/* gc_open is written by the GC programs only: without them one entry is enough */
	if (opts->gc_open_fd <= 0)
		err = bpf_map__set_max_entries(l->skel->maps.gc_open, 1);
	if (err) {
		pr_err("failed to size the gc_open map: %s", strerror(-err));
		goto fail;
	}
	/* the maps the stage and GC programs own, read by the sampler for its labels (and, for
	 * gc_open and gc_pausing, cleared by its exec and exit programs) */
	const struct {
		struct bpf_map *map;
		int fd;
	} owned[] = {
	    {l->skel->maps.stage_stacks, opts->stage_stacks_fd},
	    {l->skel->maps.label_sources, opts->label_sources_fd},
	    {l->skel->maps.gc_pausing, opts->gc_pausing_fd},
	    {l->skel->maps.gc_open, opts->gc_open_fd},
	};
	for (size_t i = 0; i < sizeof(owned) / sizeof(owned[0]); i++) {
		err = owned[i].fd > 0 ? bpf_map__reuse_fd(owned[i].map, owned[i].fd) : 0;
		if (err) {
			pr_err("failed to share the %s map with the sampler: %s",
			       bpf_map__name(owned[i].map), strerror(-err));
			goto fail;
		}
	}
	libbpf_log__reset();
	err = profile_bpf__load(l->skel);
	if (err) {
		/* with the Python walker, main tries again without it; then without the table
		 * unwinder */
		enum feature_id id = opts->python_frames   ? FEATURE_PYTHON_FRAMES
				     : opts->unwind_tables ? FEATURE_EH_FRAME
							   : FEATURE_CPU_SAMPLING;

		libbpf_log__load_failed(opts->features, id,
					id == FEATURE_EH_FRAME ? "frame_pointers" : "",
					"profile_bpf", err);
		if (id == FEATURE_CPU_SAMPLING)
			pr_err("CPU sampling cannot run: %s",
			       opts->features ? features__get(opts->features, id)->reason
					      : strerror(-err));
		goto fail;
	}
	l->counters = map_shared(l->skel->maps.counters, l->counters_bytes, &err);
	if (err) {
		pr_err("failed to map the BPF counters: %s", strerror(-err));
		goto fail;
	}
	if (opts->unwind_tables) {
		size_t page = sysconf(_SC_PAGESIZE);

		l->rows_bytes =
		    ((size_t)opts->unwind_rows * sizeof(struct tp_unwind_row) + page - 1) / page *
		    page;
		l->rows = map_shared(l->skel->maps.unwind_rows, l->rows_bytes, &err);
		if (err) {
			unwind_map_failed(opts, "the unwind tables", err);
			goto fail;
		}
		l->pages_bytes =
		    ((size_t)unwind_pages_for(opts) * sizeof(struct tp_unwind_page) + page - 1) /
		    page * page;
		l->pages = map_shared(l->skel->maps.unwind_pages, l->pages_bytes, &err);
		if (err) {
			unwind_map_failed(opts, "the unwind page indexes", err);
			goto fail;
		}
		l->epoch = map_shared(l->skel->maps.unwind_epoch, page, &err);
		if (err) {
			unwind_map_failed(opts, "the unwind tables' epoch", err);
			goto fail;
		}
	}
	err = opts->load_only ? 0 : profile_bpf__attach(l->skel);
	if (err) {
		pr_err("failed to attach sched_process_exec/exit/fork tracepoints: %s",
		       strerror(-err));
		goto fail;
	}
	/* read after the attach: a process that started later had its fork seen */
	if (!opts->load_only)
		l->live_since_ns = sysinfo__boot_ns();
	features__set(opts->features, FEATURE_CPU_SAMPLING, true, "perf_event/cpu-clock", NULL);
	if (opts->unwind_tables)
		features__set(opts->features, FEATURE_EH_FRAME, true, "bpf_loop", NULL);
	if (opts->python_frames)
		features__set(opts->features, FEATURE_PYTHON_FRAMES, true, "bpf_loop", NULL);
	load_sched(l, opts);
	enable_stats(l, opts);
	if (opts->load_only)
		return l;
	if (loader__sync_cpus(l, NULL) <= 0) {
		err = -ENODEV;
		pr_err("failed to open the cpu-clock perf event on any CPU: %s", strerror(errno));
		goto fail;
	}
	return l;
fail:
	loader__free(l);
	errno = -err;
	return NULL;
}

void loader__free(struct loader *l)
{
	if (!l)
		return;
	for (uint32_t cpu = 0; cpu < l->nr_cpus; cpu++) {
		bpf_link__destroy(l->perf_links[cpu]);
		if (l->perf_fds[cpu] >= 0)
			close(l->perf_fds[cpu]);
	}
	if (l->counters)
		munmap(l->counters, l->counters_bytes);
	free_sched(l);
	if (l->rows)
		munmap(l->rows, l->rows_bytes);
	if (l->pages)
		munmap(l->pages, l->pages_bytes);
	if (l->epoch)
		munmap(l->epoch, sysconf(_SC_PAGESIZE));
	profile_bpf__destroy(l->skel);
	if (l->stats_fd >= 0)
		close(l->stats_fd);
	free(l->perf_fds);
	free(l->perf_links);
	free(l);
}

int loader__events_fd(const struct loader *l)
{
	return bpf_map__fd(l->skel->maps.events);
}

uint32_t loader__nr_cpus(const struct loader *l)
{
	return l->nr_cpus;
}

int loader__nr_attached(const struct loader *l)
{
	int n = 3; /* sched_process_exec, sched_process_exit, sched_process_fork */

	for (uint32_t cpu = 0; cpu < l->nr_cpus; cpu++)
		n += l->perf_fds[cpu] >= 0;
	if (l->sched) /* sched_switch, thread exit, and fexit/schedule or sys_exit */
		n += l->ret == RET_TASK_WORK ? 2 : 3;
	return n;
}

int loader__nr_sampled_cpus(const struct loader *l)
{
	int n = 0;

	for (uint32_t cpu = 0; cpu < l->nr_cpus; cpu++)
		n += l->perf_fds[cpu] >= 0;
	return n;
}

bool loader__has_sched(const struct loader *l)
{
	return l->sched != NULL;
}

struct tp_runq_hist *loader__runq_hist(const struct loader *l)
{
	return l->runq;
}

const char *loader__return_path(const struct loader *l)
{
	return !l->sched ? "none" : return_names[l->ret];
}

bool loader__fexit_schedule(const struct loader *l)
{
	return l && l->sched && l->ret == RET_FEXIT;
}

const char *loader__block_clock(const struct loader *l)
{
	return !l->sched ? "none" : l->block_clock_rq ? "rq" : "monotonic";
}

struct tp_sched_pentry *loader__sched_ptab(const struct loader *l)
{
	return l->ptab;
}

int loader__take_sched_procs(struct loader *l, uint32_t before,
			     void (*fn)(const struct tp_sched_key *, const struct tp_sched_proc *,
					void *),
			     void *ctx)
{
	uint32_t max = l->sched ? bpf_map__max_entries(l->sched->maps.sched_procs) : 0;
	struct tp_sched_key cur, next, *done;
	struct tp_sched_proc v;
	bool first = true;
	int fd, n = 0;

	/* nothing added since the last walk took all: the walk of an empty hash reads every bucket
	 * (a seventh of an idle tailprofd's CPU time, at every drain) */
	if (!l->sched ||
	    __atomic_load_n(&l->sched->bss->sched_procs_added, __ATOMIC_ACQUIRE) == l->procs_taken)
		return 0;
	fd = bpf_map__fd(l->sched->maps.sched_procs);
	done = malloc(max * sizeof(*done));
	if (!done)
		return -ENOMEM;
	/* Walk first, delete after: deleting the key a walk stands on restarts it. */
	while ((uint32_t)n < max && !bpf_map_get_next_key(fd, first ? NULL : &cur, &next)) {
		first = false;
		cur = next;
		/* periods wrap at 2^32: compare as a signed distance */
		if ((int32_t)(cur.slot - before) >= 0 || bpf_map_lookup_elem(fd, &cur, &v))
			continue;
		fn(&cur, &v, ctx);
		done[n++] = cur;
	}
	for (int i = 0; i < n; i++)
		if (!bpf_map_delete_elem(fd, &done[i]))
			l->procs_taken++;
	free(done);
	return n;
}

void loader__sched_metrics(const struct loader *l, uint64_t out[TP_SCH_NR])
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t *v = ncpu > 0 ? calloc((size_t)ncpu * TP_SCH_NR, sizeof(*v)) : NULL;
	uint32_t keys[TP_SCH_NR], count = TP_SCH_NR, next;
	int err;

	memset(out, 0, TP_SCH_NR * sizeof(out[0]));
	if (!l->sched || !v) {
		free(v);
		return;
	}
	/* per-CPU counters, one value per possible CPU, all in one call (a lookup each was a
	 * tenth of an idle tailprofd's CPU time); -ENOENT: the end of the map, reached */
	err = bpf_map_lookup_batch(bpf_map__fd(l->sched->maps.sched_metrics), NULL, &next, keys, v,
				   &count, NULL);
	if (err && err != -ENOENT)
		count = 0;
	for (uint32_t i = 0; i < count; i++)
		if (keys[i] < TP_SCH_NR)
			for (int c = 0; c < ncpu; c++)
				out[keys[i]] += v[(size_t)i * ncpu + c];
	free(v);
}

uint64_t *loader__counters(const struct loader *l)
{
	return l->counters;
}

int loader__live_start(struct loader *l, uint32_t pid, uint64_t *start_ns)
{
	if (bpf_map_lookup_elem(bpf_map__fd(l->skel->maps.live_procs), &pid, start_ns))
		return -errno;
	return 0;
}

uint64_t loader__live_since(const struct loader *l)
{
	if (__atomic_load_n(&l->skel->bss->live_procs_full, __ATOMIC_RELAXED))
		return 0;
	return l->live_since_ns;
}

void loader__set_young(struct loader *l, uint64_t young_ns, uint64_t since_ns)
{
	/* since first: a reader that sees the new length sees the processes it applies to */
	__atomic_store_n(&l->skel->bss->young_since_ns, since_ns, __ATOMIC_RELEASE);
	__atomic_store_n(&l->skel->bss->young_ns, young_ns, __ATOMIC_RELEASE);
}

void loader__forget(struct loader *l, uint32_t pid)
{
	bpf_map_delete_elem(bpf_map__fd(l->skel->maps.known_procs), &pid);
}

int loader__static_layout(struct loader *l, uint32_t dev, uint64_t ino, bool known)
{
	struct tp_file_key k = {.ino = ino, .dev = dev};
	struct tp_layout_table none = {.nr = 0, .vdso = TP_LAYOUT_NO_VDSO};
	int fd = bpf_map__fd(l->skel->maps.static_layouts);

	if (known ? bpf_map_update_elem(fd, &k, &none, BPF_ANY) : bpf_map_delete_elem(fd, &k))
		return -errno;
	return 0;
}

int loader__layout_tables(struct loader *l, uint32_t dev, uint64_t ino,
			  const struct tp_layout_table *t)
{
	struct tp_file_key k = {.ino = ino, .dev = dev};

	if (bpf_map_update_elem(bpf_map__fd(l->skel->maps.static_layouts), &k, t, BPF_EXIST))
		return -errno;
	return 0;
}

void loader__label_cost(const struct loader *l, uint64_t *ns, uint64_t *clock_ns, uint64_t *samples)
{
	*ns = __atomic_load_n(&l->skel->bss->label_cost[0], __ATOMIC_RELAXED);
	*clock_ns = __atomic_load_n(&l->skel->bss->label_cost[1], __ATOMIC_RELAXED);
	*samples = __atomic_load_n(&l->skel->bss->label_cost[2], __ATOMIC_RELAXED);
}

bool loader__unwind_tables(const struct loader *l)
{
	return l->unwind_tables;
}

struct tp_unwind_row *loader__unwind_rows(struct loader *l, uint32_t *nr_rows)
{
	*nr_rows = l->rows ? bpf_map__max_entries(l->skel->maps.unwind_rows) : 0;
	return l->rows;
}

struct tp_unwind_page *loader__unwind_pages(struct loader *l, uint32_t *nr_pages)
{
	*nr_pages = l->pages ? bpf_map__max_entries(l->skel->maps.unwind_pages) : 0;
	return l->pages;
}

int loader__unwind_set_process(struct loader *l, uint32_t pid, const struct tp_proc_mappings *m)
{
	if (!l->unwind_tables)
		return -EINVAL;
	/* the epoch before the entry: a walk verified before this must not be taken as current */
	__atomic_fetch_add(l->epoch, 1, __ATOMIC_SEQ_CST);
	if (bpf_map_update_elem(bpf_map__fd(l->skel->maps.unwind_procs), &pid, m, BPF_ANY))
		return -errno;
	return 0;
}

void loader__unwind_drop_process(struct loader *l, uint32_t pid)
{
	if (l->unwind_tables) {
		__atomic_fetch_add(l->epoch, 1, __ATOMIC_SEQ_CST);
		bpf_map_delete_elem(bpf_map__fd(l->skel->maps.unwind_procs), &pid);
	}
}

void loader__bench_cost(const struct loader *l, uint64_t out[4])
{
	for (int i = 0; i < 4; i++)
		out[i] = __atomic_load_n(&l->skel->bss->bench_cost[i], __ATOMIC_RELAXED);
}

bool loader__python_frames(const struct loader *l)
{
	return l->python_frames;
}

int loader__python_set_offsets(struct loader *l, uint32_t version, const struct tp_py_offsets *o)
{
	if (!l->python_frames || version >= TP_PY_MAX_VERSIONS)
		return -EINVAL;
	if (bpf_map_update_elem(bpf_map__fd(l->skel->maps.py_offsets), &version, o, BPF_ANY))
		return -errno;
	return 0;
}

int loader__python_set_process(struct loader *l, uint32_t pid, const struct tp_py_proc *p)
{
	if (!l->python_frames)
		return -EINVAL;
	if (bpf_map_update_elem(bpf_map__fd(l->skel->maps.py_procs), &pid, p, BPF_ANY))
		return -errno;
	return 0;
}

void loader__python_drop_process(struct loader *l, uint32_t pid)
{
	if (l->python_frames)
		bpf_map_delete_elem(bpf_map__fd(l->skel->maps.py_procs), &pid);
}

int loader__python_set_exe(struct loader *l, uint32_t kdev, uint64_t ino, const struct tp_py_exe *x)
{
	struct tp_file_key k = {.ino = ino, .dev = kdev};

	if (!l->python_frames)
		return -EINVAL;
	if (bpf_map_update_elem(bpf_map__fd(l->skel->maps.py_exes), &k, x, BPF_NOEXIST))
		return -errno;
	return 0;
}

int loader__python_mark_seen(struct loader *l, uint64_t key)
{
	uint8_t one = 1;

	if (!l->python_frames)
		return -EINVAL;
	if (bpf_map_update_elem(bpf_map__fd(l->skel->maps.py_seen), &key, &one, BPF_ANY))
		return -errno;
	return 0;
}

size_t loader__object_prog_stats(struct bpf_object *obj, struct loader_prog_stats *out, size_t max)
{
	struct bpf_program *prog;
	size_t n = 0;

	bpf_object__for_each_program(prog, obj)
	{
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);
		const char *name = bpf_program__name(prog);

		if (n == max)
			break;
		if (!bpf_program__autoload(prog) ||
		    bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len))
			continue;
		/* the variants of one hook report under its name (metrics keep their labels) */
		if (!strcmp(name, "sched_switch_tw"))
			name = "sched_switch";
		out[n++] = (struct loader_prog_stats){
		    .name = name,
		    .run_time_ns = info.run_time_ns,
		    .run_cnt = info.run_cnt,
		};
	}
	return n;
}

size_t loader__prog_stats(struct loader *l, struct loader_prog_stats *out, size_t max)
{
	size_t n = loader__object_prog_stats(l->skel->obj, out, max);

	if (l->sched)
		n += loader__object_prog_stats(l->sched->obj, out + n, max - n);
	return n;
}
