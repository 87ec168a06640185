// SPDX-License-Identifier: GPL-2.0-only
/* tailprofd: wires options, the loader, the symbolizer, the collector and the HTTP API. */
#include <errno.h>
#include <linux/capability.h>
#include <malloc.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "access.h"
#include "caps.h"
#include "cgroups.h"
#include "collector.h"
#include "config.h"
#include "feature_table.h"
#include "gc.h"
#include "gc_probes.h"
#include "http_api.h"
#include "kernel_probe.h"
#include "loader.h"
#include "log.h"
#include "mmap_records.h"
#include "notify.h"
#include "options.h"
#include "probes.h"
#include "proc_maps.h"
#include "push.h"
#include "python.h"
#include "query.h"
#include "snapshots.h"
#include "spike_store.h"
#include "spikes.h"
#include "stages.h"
#include "symbolizer.h"
#include "sysinfo.h"
#include "tailprof_config.h"
#include "timeparse.h"
#include "unwinder.h"

/* The unwinder's mappings go to the loader's BPF maps. */
static int unwind_set_process(void *ctx, uint32_t pid, const struct tp_proc_mappings *m)
{
	return loader__unwind_set_process(ctx, pid, m);
}

static void unwind_drop_process(void *ctx, uint32_t pid)
{
	loader__unwind_drop_process(ctx, pid);
}

static int unwind_set_layout(void *ctx, uint32_t dev, uint64_t ino, const struct tp_layout_table *t)
{
	return loader__layout_tables(ctx, dev, ino, t);
}

static const struct unwinder_ops unwind_ops = {
    .set_process = unwind_set_process,
    .drop_process = unwind_drop_process,
    .set_layout = unwind_set_layout,
};

/* The symbolizer's identity checks ask BPF's table of live processes first. */
static int live_start(void *ctx, uint32_t pid, uint64_t *start_ns)
{
	return loader__live_start(ctx, pid, start_ns);
}

static uint64_t live_since(void *ctx)
{
	return loader__live_since(ctx);
}

/* The symbolizer's static layouts are told to BPF. */
static int layout_known(void *ctx, uint32_t dev, uint64_t ino, bool known)
{
	return loader__static_layout(ctx, dev, ino, known);
}

/* Root, or the capabilities that loading BPF, opening perf events system-wide and reading
 * every process's maps need. */
static bool has_privileges(void)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[2] = {};
	uint64_t eff;

	if (geteuid() == 0)
		return true;
	if (syscall(SYS_capget, &hdr, data))
		return false;
	eff = data[0].effective | ((uint64_t)data[1].effective << 32);
#define HAS(cap) (eff & (1ULL << (cap)))
	return (HAS(CAP_SYS_ADMIN) || (HAS(CAP_BPF) && HAS(CAP_PERFMON))) && HAS(CAP_SYS_PTRACE) &&
	       HAS(CAP_DAC_READ_SEARCH);
#undef HAS
}

/* The longest drain period <= 500 ms that divides the window, so ticks fall on its edges. */
static uint64_t drain_period(uint64_t window_ns)
{
	static const uint64_t periods_ms[] = {500, 250, 200, 100};

	for (size_t i = 0; i < sizeof(periods_ms) / sizeof(periods_ms[0]); i++)
		if (window_ns % (periods_ms[i] * NSEC_PER_MSEC) == 0)
			return periods_ms[i] * NSEC_PER_MSEC;
	return 100 * NSEC_PER_MSEC;
}

/* SIGHUP: reads the configuration again and applies its stages (the [daemon] settings need a
 * restart). A file that does not parse is reported and the running configuration kept. */
static void reload(const struct options *o, struct config **cfg, struct collector *coll,
		   struct stages *stages)
{
	const char *path = o->config ? o->config : CONFIG_DEFAULT_PATH;
	struct config *n = NULL;
	char err[600];
	int failed;

	if (o->config || !access(CONFIG_DEFAULT_PATH, F_OK)) {
		n = config__load(path, err, sizeof(err));
		if (!n) {
			pr_err("SIGHUP: %s; keeping the running configuration", err);
			return;
		}
	}
	collector__wrlock(coll);
	failed = stages__apply_config(stages, n);
	collector__unlock(coll);
	config__free(*cfg);
	*cfg = n;
	pr_info("SIGHUP: reloaded %s%s: %zu stage%s, %zu usdt-app%s, %d failed to attach", path,
		n ? "" : " (no such file)", n ? n->nr_stages : 0, n && n->nr_stages == 1 ? "" : "s",
		n ? n->nr_apps : 0, n && n->nr_apps == 1 ? "" : "s", failed);
}

/* The GC programs, unless --gc off, the config or the test switch turned them off. */
static struct gc_probes *load_gc(const struct options *o, const struct config *cfg,
				 struct features *ft, int label_sources_fd)
{
	if (!o->gc.enabled) {
		if (o->gc_set)
			features__set(ft, FEATURE_GC, false, "", "--gc off");
		else
			features__set(ft, FEATURE_GC, false, "", "[gc] enabled = off in %s",
				      cfg ? cfg->path : "the config");
	} else if (features__forced_off(ft, FEATURE_GC)) {
		features__set(ft, FEATURE_GC, false, "", "%s",
			      features__forced_reason(ft, FEATURE_GC));
	} else {
		/* CPU profiling does not need them: off, the report says why */
		return gc_probes__new(label_sources_fd, ft);
	}
	features__set_quiet(ft, FEATURE_GC);
	return NULL;
}

/* Whether user stacks are walked with the table unwinder: --unwind=dwarf, not forced off, and
 * the kernel has its helpers. Sets eh_frame_unwinding off with the reason where not. */
static bool want_unwind_tables(const struct options *o, struct features *ft)
{
	char why[200];

	if (!o->unwind_tables) {
		features__set(ft, FEATURE_EH_FRAME, false, "frame_pointers", "--unwind=fp");
	} else if (features__forced_off(ft, FEATURE_EH_FRAME)) {
		features__set(ft, FEATURE_EH_FRAME, false, "frame_pointers", "%s",
			      features__forced_reason(ft, FEATURE_EH_FRAME));
	} else if (kernel_probe__unwind_tables(why, sizeof(why))) {
		features__set(ft, FEATURE_EH_FRAME, false, "frame_pointers",
			      "%s: user stacks are walked by frame pointers", why);
		return false;
	} else {
		return true;
	}
	features__set_quiet(ft, FEATURE_EH_FRAME);
	return false;
}

/* Whether Python frames are walked: --python-frames=on, not forced off, and the kernel has
 * bpf_loop. Sets python_frames off with the reason where not. */
static bool want_python_frames(const struct options *o, struct features *ft)
{
	char why[200];

	if (!o->python_frames) {
		features__set(ft, FEATURE_PYTHON_FRAMES, false, "", "--python-frames=off");
	} else if (features__forced_off(ft, FEATURE_PYTHON_FRAMES)) {
		features__set(ft, FEATURE_PYTHON_FRAMES, false, "", "%s",
			      features__forced_reason(ft, FEATURE_PYTHON_FRAMES));
	} else if (kernel_probe__python_frames(why, sizeof(why))) {
		features__set(ft, FEATURE_PYTHON_FRAMES, false, "",
			      "%s: Python processes get native frames only", why);
		return false;
	} else {
		return true;
	}
	features__set_quiet(ft, FEATURE_PYTHON_FRAMES);
	return false;
}

/* Everything tailprofd loads into the kernel, as the options and the config ask, each
 * capability decided into ft: the stage maps and programs, the GC programs, the sampler (with
 * the table unwinder, and again without it if the kernel rejects it) and the scheduler
 * programs. load_only (--check): nothing attached. Returns 0, or -1 after logging why
 * tailprofd cannot run (the kernel lacks what CPU sampling needs, the stage maps or the sampler
 * did not load). */
static int load_objects(struct options *o, const struct config *cfg, struct features *ft,
			bool load_only, struct probes **probes, struct gc_probes **gc_probes,
			struct loader **loader)
{
	struct loader_opts lopts;

	if (loader__probe_kernel(ft))
		return -1;
	/* the stage maps first: the sampler reads the stage of each thread from one of them */
	*probes = probes__new(&(struct probes_opts){
	    .slot_ns = drain_period(o->window_ns),
	    .features = ft,
	});
	if (!*probes)
		return -1;
	/* GC probes first too: the sampler shares their map of processes in a pause */
	*gc_probes = load_gc(o, cfg, ft, probes__label_sources_fd(*probes));
	o->unwind_tables = want_unwind_tables(o, ft);
	o->python_frames = want_python_frames(o, ft);
	lopts = (struct loader_opts){
	    .frequency_hz = o->frequency_hz,
	    .ringbuf_bytes = o->ringbuf_bytes,
	    .slot_ns = drain_period(o->window_ns),
	    .stage_stacks_fd = probes__stage_stacks_fd(*probes),
	    /* tests/bench/stages.py measures what the stage label costs each sample */
	    .time_stage_label = getenv("TAILPROF_BENCH_LABEL_COST") != NULL,
	    .offcpu_min_ns = o->offcpu_min_ns,
	    .gc_pausing_fd = *gc_probes ? gc_probes__pausing_fd(*gc_probes) : 0,
	    .gc_open_fd = *gc_probes ? gc_probes__open_fd(*gc_probes) : 0,
	    .label_sources_fd = probes__label_sources_fd(*probes),
	    .unwind_tables = o->unwind_tables,
	    .unwind_rows = o->unwind_memory_bytes / sizeof(struct tp_unwind_row),
	    .unwind_max_processes = o->unwind_max_processes,
	    .python_frames = o->python_frames,
	    .bpf_stats = o->bpf_stats,
	    /* tests/bench/python.py times the sampler on one process */
	    .bench_pid = getenv("TAILPROF_BENCH_PID") ? atoi(getenv("TAILPROF_BENCH_PID")) : 0,
	    .features = ft,
	    .load_only = load_only,
	    .cgroup_v1_hierarchy = cgroups__systemd_hierarchy("/proc/self/cgroup"),
	};
	*loader = loader__new(&lopts);
	if (!*loader && lopts.python_frames) {
		/* a verifier that rejects the Python walker: native stacks, the report says why */
		lopts.python_frames = o->python_frames = false;
		*loader = loader__new(&lopts);
	}
	if (!*loader && lopts.unwind_tables) {
		/* a kernel whose verifier rejects the walker still gets CPU profiles; the
		 * features report says why the unwinder is off */
		lopts.unwind_tables = o->unwind_tables = false;
		*loader = loader__new(&lopts);
	}
	kernel_probe__release();
	return *loader ? 0 : -1;
}

/* The mmap records of new processes (mmap_records.h): a dummy event on each online CPU. NULL
 * when off (the test switch) or when the events cannot be opened: each new process's maps are then
 * read from /proc, and the features table says why. */
static struct mmap_records *start_mmap_records(struct loader *loader, struct features *ft)
{
	uint32_t n = loader__nr_cpus(loader);
	uint8_t online[n ? n : 1];
	struct mmap_records *r;

	if (features__forced_off(ft, FEATURE_MMAP_RECORDS)) {
		features__set(ft, FEATURE_MMAP_RECORDS, false, "proc_maps", "%s",
			      features__forced_reason(ft, FEATURE_MMAP_RECORDS));
		features__set_quiet(ft, FEATURE_MMAP_RECORDS);
		return NULL;
	}
	if (sysinfo__online_cpus(online, n) < 0)
		memset(online, 1, n);
	/* 32 pages a CPU: some 1,000 records (a hundred process starts) between two drains */
	r = mmap_records__new(n, online, 5);
	if (!r) {
		features__set(ft, FEATURE_MMAP_RECORDS, false, "proc_maps",
			      "perf_event_open of a dummy event with mmap records failed: %s; "
			      "instead each new process's maps are read from /proc/PID/maps",
			      strerror(errno));
		return NULL;
	}
	features__set(ft, FEATURE_MMAP_RECORDS, true, "perf_event/dummy", NULL);
	return r;
}

/* How young a new process is while its CPU samples wait for the next drain instead of waking it
 * (the mmap records name it even after it exited; collector_opts.young_ns): its sampled thread has
 * run less than 5 sampling periods at frequency_hz, so that at most some 5 of its samples a thread
 * are unwound by frame pointers before its unwind tables and CPython are read; within 5 to
 * 100 ms. TAILPROF_YOUNG_MS (the benchmarks' switch) sets it, 0 off. */
static uint64_t young_ns(uint32_t frequency_hz)
{
	const char *env = getenv("TAILPROF_YOUNG_MS");
	unsigned long long ms;
	char *end;
	uint64_t ns;

	if (env && *env) {
		errno = 0;
		ms = strtoull(env, &end, 10);
		if (!errno && !*end && *env != '-' && ms <= 1000) {
			pr_info("young processes: %llu ms (TAILPROF_YOUNG_MS)", ms);
			return ms * NSEC_PER_MSEC;
		}
		pr_warn("TAILPROF_YOUNG_MS=%s is not a number of ms from 0 to 1000: ignored, the "
			"default taken (unset it, or give say 0 to turn the youth off)",
			env);
	}
	ns = frequency_hz ? 5 * NSEC_PER_SEC / frequency_hz : 0;
	if (ns < 5 * NSEC_PER_MSEC)
		ns = 5 * NSEC_PER_MSEC;
	return ns > 100 * NSEC_PER_MSEC ? 100 * NSEC_PER_MSEC : ns;
}

/* tailprofd --check: the features report on stdout, then a closing line. loaded: what
 * load_objects() returned. Returns the exit code: 1 when an object failed to load for a reason
 * no probe found, CPU sampling cannot run, loading stopped early (its error was logged), or the
 * report could not be written. */
static int report_check(struct features *ft, int loaded)
{
	bool cpu = features__get(ft, FEATURE_CPU_SAMPLING)->enabled;
	bool failed = features__any_load_failed(ft), fell_back = false;

	/* what loading never reached says so, not "not probed" */
	for (int i = 0; loaded && i < FEATURE_NR; i++)
		if (!strcmp(features__get(ft, i)->reason, "not probed"))
			features__set(ft, i, false, "",
				      "not reached: loading stopped at the error "
				      "above");
	for (int i = 0; i < FEATURE_NR; i++)
		fell_back |= features__get(ft, i)->load_failed;
	printf("tailprofd %s --check on Linux %s\n", TAILPROF_VERSION, sysinfo__kernel_release());
	features__print(ft, stdout);
	if (loaded)
		printf("\ntailprofd cannot start: loading stopped at the error logged above\n");
	else if (!cpu)
		printf("\ntailprofd cannot run on this kernel: CPU sampling is off (above)\n");
	else if (failed)
		printf("\na BPF object failed to load (above): tailprofd would run here without "
		       "the features it serves\n");
	else if (fell_back)
		printf("\nevery feature runs: where a variant failed to load (above), its fallback "
		       "does the same job\n");
	else
		printf("\nevery object loaded\n");
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "tailprofd: cannot write the report: %s\n", strerror(errno));
		return 1;
	}
	return loaded || !cpu || failed;
}

/* Raises the soft limit on open files to the hard one: every BPF map and program, perf event
 * (one per CPU), uprobe link and HTTP connection is a descriptor, and a daemon that runs out
 * loses features or stops answering. Logs when the limit stays low. */
static void raise_nofile(void)
{
	struct rlimit r;

	if (getrlimit(RLIMIT_NOFILE, &r))
		return;
	if (r.rlim_cur < r.rlim_max) {
		r.rlim_cur = r.rlim_max;
		setrlimit(RLIMIT_NOFILE, &r);
		getrlimit(RLIMIT_NOFILE, &r);
	}
	if (r.rlim_cur < 1024)
		pr_warn("the open-file limit is %llu: tailprofd may run out of descriptors (BPF "
			"maps, perf events, probes); raise it (ulimit -n, LimitNOFILE= in a unit)",
			(unsigned long long)r.rlim_cur);
}

/* The API's access (docs/security.md): the token of --auth-token-file into *token, required
 * when the listener lfd is off loopback; the unix socket of --socket into *usock (the default
 * one only warns when it cannot be served). Returns 0, or -1 with *ret the exit code after
 * logging why tailprofd cannot start. */
static int start_access(const struct options *o, int lfd, char **token, struct access_socket *usock,
			int *ret)
{
	char err[512];
	int rc;

	if (o->auth_token_file &&
	    !(*token = access__read_token(o->auth_token_file, err, sizeof(err)))) {
		*ret = options__usage_error("--auth-token-file: %s", err);
		return -1;
	}
	if (!*token && !access__fd_is_loopback(lfd)) {
		*ret = options__usage_error(
		    "--listen %s is not a loopback address: the API shows what every process "
		    "does, so an address off loopback needs --auth-token-file FILE (a token in a "
		    "file of mode 0600; docs/security.md)",
		    o->listen);
		return -1;
	}
	if (!o->socket)
		return 0;
	rc = access__listen_unix(o->socket, usock, err, sizeof(err));
	if (rc && o->socket_explicit) {
		pr_err("--socket: %s", err);
		*ret = 1;
		return -1;
	}
	if (rc)
		pr_warn("%s; the API is served on http://%s only", err, o->listen);
	else if (!usock->group_set)
		pr_info("socket %s is root's only (mode 0660, group root)", usock->path);
	return 0;
}

int main(int argc, char **argv)
{
	struct symbolizer *sym = NULL;
	struct loader *loader = NULL;
	struct features *features = NULL;
	struct gc_probes *gc_probes = NULL;
	struct gc *gc = NULL;
	struct unwinder *unwinder = NULL;
	struct collector *coll = NULL;
	struct python *python = NULL;
	struct mmap_records *records = NULL;
	struct http_api *http = NULL;
	struct notify *notify = NULL;
	struct probes *probes = NULL;
	struct stages *stages = NULL;
	struct spikes *spikes = NULL;
	struct spike_store *store = NULL;
	struct snapshots *snapshots = NULL;
	struct push *push = NULL;
	struct config *cfg = NULL;
	struct options o;
	struct query_ctx qctx;
	struct access_socket usock = {.fd = -1};
	char *token = NULL;
	unsigned long long nr_windows;
	char err[512];
	sigset_t mask;
	int rc, sfd = -1, lfd = -1, ret = 1;

	log_set_prefix("tailprofd");
	/* HTTP requests run on their own threads; glibc would give each its own malloc arena and
	 * keep what a large profile query freed. Two arenas keep RSS near what is live. */
	mallopt(M_ARENA_MAX, 2);
	rc = options__parse(argc, argv, &o);
	if (rc)
		return rc;
	cfg = options__read_config(&o, &rc);
	if (rc)
		return rc;
	if (cfg && (rc = options__apply_config(&o, cfg))) {
		config__free(cfg);
		return rc;
	}
	rc = options__check(&o);
	if (!rc && push_opts__check(&o.push, err, sizeof(err)))
		rc = options__usage_error("%s", err);
	if (rc) {
		config__free(cfg);
		return rc;
	}
	features = features__new();
	if (features__parse_off(features, getenv("TAILPROF_FEATURES_OFF"),
				getenv("TAILPROF_SCHED_RETURN"), err, sizeof(err))) {
		fprintf(stderr, "tailprofd: %s\n", err);
		ret = 2;
		goto out;
	}
	if (o.verbose)
		log_set_level(LOG_DEBUG);
	if (!has_privileges()) {
		pr_err(
		    "tailprofd must run as root (or with CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE and "
		    "CAP_DAC_READ_SEARCH): run it with sudo");
		goto out;
	}
	raise_nofile();
	if (o.check) {
		/* no listener (a running tailprofd may hold the port: its form is checked), no
		 * signal handling: load, report, unload */
		if (http_api__check_listen(o.listen, err, sizeof(err))) {
			ret = options__usage_error("%s", err);
			goto out;
		}
		rc = load_objects(&o, cfg, features, true, &probes, &gc_probes, &loader);
		if (!rc)
			mmap_records__free(start_mmap_records(loader, features));
		ret = report_check(features, rc);
		goto out;
	}
	/* Signals are read from a signalfd in the drain loop; block them before any thread
	 * starts so that none of them takes one. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (sfd < 0) {
		pr_err("cannot create a signalfd: %s", strerror(errno));
		return 1;
	}

	lfd = http_api__listen(o.listen, err, sizeof(err));
	if (lfd == -2) {
		ret = options__usage_error("%s", err);
		goto out;
	}
	if (lfd < 0) {
		pr_err("%s", err);
		goto out;
	}
	if (start_access(&o, lfd, &token, &usock, &ret))
		goto out;
	if (load_objects(&o, cfg, features, false, &probes, &gc_probes, &loader))
		goto out;
	records = start_mmap_records(loader, features);
	proc_maps__use_records(records, "/proc",
			       getenv("TAILPROF_MAPS_RECORDS_CHECK") &&
				   !strcmp(getenv("TAILPROF_MAPS_RECORDS_CHECK"), "1"));
	features__log(features);
	sym = symbolizer__new(&(struct symbolizer_opts){
	    .hide_trampolines = loader__fexit_schedule(loader),
	    .debug_dirs = o.debug_dirs,
	    .nr_debug_dirs = o.nr_debug_dirs,
	    .max_processes = o.limits.v[LIMIT_PROCESSES],
	    .max_objects = o.limits.v[LIMIT_OBJECTS],
	    .live_start = live_start,
	    .live_since = live_since,
	    .live_ctx = loader,
	    .cgroup_id = cgroups__id_of,
	    .layout_known = layout_known,
	    .layout_ctx = loader,
	});
	if (!sym) {
		pr_err("failed to start the symbolizer: %s", strerror(errno));
		goto out;
	}
	stages = stages__new(probes);
	if (gc_probes)
		gc = gc__new(&o.gc, gc_probes);
	if (o.unwind_tables) {
		uint32_t nr_rows, nr_pages;
		struct tp_unwind_row *rows = loader__unwind_rows(loader, &nr_rows);
		struct tp_unwind_page *pages = loader__unwind_pages(loader, &nr_pages);

		unwinder = unwinder__new(&(struct unwinder_opts){
		    .ops = &unwind_ops,
		    .ops_ctx = loader,
		    .rows = rows,
		    .nr_rows = nr_rows,
		    .pages = pages,
		    .nr_pages = nr_pages,
		    .max_processes = o.unwind_max_processes,
		});
		if (!unwinder) {
			pr_err("failed to start the unwinder: %s", strerror(errno));
			goto out;
		}
	}
	spikes = spikes__new(&o.spikes, stages, o.window_ns);
	if (!spikes) {
		pr_err("failed to start spike detection: %s", strerror(errno));
		goto out;
	}
	if (o.spikes.state_dir) {
		store = spike_store__open(&(struct spike_store_opts){.dir = o.spikes.state_dir},
					  err, sizeof(err));
		if (!store) {
			pr_err("--state-dir: %s", err);
			goto out;
		}
		snapshots = snapshots__open(o.spikes.state_dir, &o.snapshots, err, sizeof(err));
		if (!snapshots) {
			pr_err("--state-dir: %s", err);
			goto out;
		}
	}
	if (loader__python_frames(loader)) {
		python = python__new(&(struct python_opts){.loader = loader});
		if (!python) {
			pr_err("failed to start Python support: %s", strerror(errno));
			goto out;
		}
	}
	coll = collector__new(&(struct collector_opts){
	    .loader = loader,
	    .symbolizer = sym,
	    .frequency_hz = o.frequency_hz,
	    .window_ns = o.window_ns,
	    .nr_windows = (o.retention_ns + o.window_ns - 1) / o.window_ns,
	    .drain_ns = drain_period(o.window_ns),
	    .probes = probes,
	    .stages = stages,
	    .spikes = spikes,
	    .gc = gc,
	    .gc_events_fd = gc_probes ? gc_probes__events_fd(gc_probes) : -1,
	    .unwinder = unwinder,
	    .python = python,
	    .max_stacks = o.limits.v[LIMIT_STACKS],
	    .max_tasks = o.limits.v[LIMIT_TASKS],
	    .max_known = o.limits.v[LIMIT_KNOWN_PROCESSES],
	    .mmap_records = records,
	    .young_ns = records ? young_ns(o.frequency_hz) : 0,
	});
	if (!coll)
		goto out;
	/* attach failures are per stage: logged and shown in the status, not fatal */
	stages__apply_config(stages, cfg);
	qctx = (struct query_ctx){
	    .collector = coll,
	    .loader = loader,
	    .listen = o.listen,
	    .frequency_hz = o.frequency_hz,
	    .retention_ns = o.retention_ns,
	    .offcpu_min_ns = o.offcpu_min_ns,
	    .stages = stages,
	    .spikes = spikes,
	    .gc = gc,
	    .gc_probes = gc_probes,
	    .features = features,
	    .snapshots = snapshots,
	};
	if (store && spikes__attach_store(spikes, store, &qctx)) {
		pr_err("--state-dir: out of memory reading the stored spikes");
		goto out;
	}
	/* Every probe of the configuration is attached and the BPF statistics descriptor held:
	 * what is left to do (probes attached later, other processes' files and memory) needs
	 * the few capabilities docs/deployment.md lists, so the others go, before the HTTP
	 * threads start (capabilities are per thread; new threads inherit them). */
	rc = caps__drop_after_startup(err, sizeof(err));
	if (rc)
		pr_warn("cannot drop the capabilities start-up needed: %s", strerror(-rc));
	else
		pr_info("capabilities kept: %s", err[0] ? err : "none");
	if (o.push.url) {
		push = push__start(&o.push, &qctx, o.spikes.state_dir, err, sizeof(err));
		if (!push) {
			pr_err("push: %s", err);
			goto out;
		}
		qctx.push = push;
	}
	http = http_api__start(
	    lfd, &qctx,
	    &(struct http_api_opts){.write_rate_per_min = o.spikes.write_rate,
				    .max_connections = o.limits.v[LIMIT_HTTP_CONNECTIONS],
				    .token = token,
				    .serve_unix = usock.fd >= 0,
				    .unix_fd = usock.fd});
	usock.fd = -1; /* the server's now, or closed */
	if (!http) {
		pr_err("failed to start the HTTP server on %s", o.listen);
		goto out;
	}
	lfd = -1;
	notify = notify__start(coll, loader__nr_sampled_cpus(loader), o.frequency_hz);
	nr_windows = (o.retention_ns + o.window_ns - 1) / o.window_ns;
	pr_info("sampling %d CPUs at %u Hz; %llu window%s of %llu ms; serving http://%s%s%s%s",
		loader__nr_sampled_cpus(loader), o.frequency_hz, nr_windows,
		nr_windows == 1 ? "" : "s", (unsigned long long)(o.window_ns / NSEC_PER_MSEC),
		o.listen, token ? " (token required)" : "", usock.ino ? " and unix:" : "",
		usock.ino ? usock.path : "");

	for (;;) {
		struct signalfd_siginfo si;

		if (collector__run(coll, sfd))
			goto out;
		if (read(sfd, &si, sizeof(si)) != sizeof(si))
			continue;
		if (si.ssi_signo == SIGHUP) {
			reload(&o, &cfg, coll, stages);
			continue;
		}
		pr_info("%s: detaching probes and exiting", strsignal(si.ssi_signo));
		break;
	}
	collector__stop(coll);
	/* spikes closed but not written yet, and those going on: to the state directory */
	spikes__save_all(spikes);
	ret = 0;
out:
	/* teardown in reverse: stop serving before the data it reads goes away */
	notify__stop(notify);
	http_api__stop(http);
	access__close_unix(&usock);
	if (token)
		explicit_bzero(token, strlen(token));
	free(token);
	/* the last windows to the store (at most 2 s), the rest to the state directory */
	push__stop(push);
	push_opts__free(&o.push);
	/* pins are released into the ring, so before it goes */
	spikes__free(spikes, coll ? collector__ring(coll) : NULL);
	spike_store__free(store);
	snapshots__free(snapshots);
	collector__free(coll);
	python__free(python);
	stages__free(stages);
	unwinder__free(unwinder);
	loader__free(loader);
	gc__free(gc);
	gc_probes__free(gc_probes);
	probes__free(probes);
	kernel_probe__release(); /* where loading stopped early */
	config__free(cfg);
	symbolizer__free(sym);
	proc_maps__use_records(NULL, "", false);
	mmap_records__free(records);
	features__free(features);
	if (lfd >= 0)
		close(lfd);
	if (sfd >= 0)
		close(sfd);
	return ret;
}
