// SPDX-License-Identifier: GPL-2.0-only
/* tailprofd: wires options, the loader, the symbolizer, the collector and the HTTP API. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <linux/capability.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "collector.h"
#include "gc.h"
#include "gc_probes.h"
#include "caps.h"
#include "config.h"
#include "feature_table.h"
#include "http_api.h"
#include "kernel_probe.h"
#include "loader.h"
#include "log.h"
#include "notify.h"
#include "probes.h"
#include "python.h"
#include "push.h"
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

#define MAX_WINDOWS 1000000

#define MAX_DEBUG_DIRS 16

struct options {
	uint32_t frequency_hz;
	uint64_t window_ns;
	uint64_t retention_ns;
	const char *listen;
	size_t ringbuf_bytes;
	uint64_t offcpu_min_ns;
	const char *debug_dirs[MAX_DEBUG_DIRS];
	size_t nr_debug_dirs;
	bool verbose;
	const char *config; /* --config, or NULL: CONFIG_DEFAULT_PATH if it exists */
	unsigned set;	    /* opt_bit() of each option given as a flag: flags win */
	bool retention_set;
	struct gc_opts gc;
	bool gc_set;			 /* --gc given: the config's [gc] enabled does not apply */
	bool unwind_tables;		 /* --unwind=dwarf */
	size_t unwind_memory_bytes;	 /* --unwind-memory */
	uint32_t unwind_max_processes;	 /* --unwind-max-processes */
	bool check;			 /* --check */
	bool python_frames;		 /* --python-frames=on|off */
	struct spikes_opts spikes;	 /* [spikes], --spike-*, --pin-budget, --state-dir */
	struct snapshots_opts snapshots; /* [snapshots], --snapshot-* */
	struct push_opts push;		 /* [push], --push-url */
	uint32_t section_set;		 /* bit per section_flags entry given as a flag */
};

enum {
	OPT_RINGBUF = 256,
	OPT_DEBUG_DIR,
	OPT_GC,
	OPT_UNWIND,
	OPT_PYTHON_FRAMES,
	OPT_UNWIND_MEMORY,
	OPT_UNWIND_PROCS,
	OPT_OFFCPU_MIN,
	OPT_CHECK,
	OPT_SPIKE_K,
	OPT_SPIKE_BASELINE,
	OPT_SPIKE_MIN_REQUESTS,
	OPT_PIN_BUDGET,
	OPT_STATE_DIR,
	OPT_SNAPSHOT_MAX_COUNT,
	OPT_SNAPSHOT_MAX_BYTES,
	OPT_PUSH_URL,
};

/* Flags of [spikes] and [snapshots] keys: each flag and its key go through one parser. */
static const struct {
	int opt;
	const char *flag, *section, *key;
} section_flags[] = {
    {OPT_SPIKE_K, "--spike-k", "spikes", "k"},
    {OPT_SPIKE_BASELINE, "--spike-baseline-windows", "spikes", "baseline_windows"},
    {OPT_SPIKE_MIN_REQUESTS, "--spike-min-requests", "spikes", "min_requests"},
    {OPT_PIN_BUDGET, "--pin-budget", "spikes", "pin_budget"},
    {OPT_STATE_DIR, "--state-dir", "spikes", "state_dir"},
    {OPT_SNAPSHOT_MAX_COUNT, "--snapshot-max-count", "snapshots", "max_count"},
    {OPT_SNAPSHOT_MAX_BYTES, "--snapshot-max-bytes", "snapshots", "max_bytes"},
    {OPT_PUSH_URL, "--push-url", "push", "url"},
};

/* Sets key of [section] (spikes, snapshots) from a flag's or the config's value. Returns 0, or
 * non-zero with msg saying what is allowed. */
static int set_section_key(struct options *o, const char *section, const char *key,
			   const char *value, char *msg, size_t len)
{
	if (!strcmp(section, "snapshots"))
		return snapshots_opts__set(&o->snapshots, key, value, msg, len);
	if (!strcmp(section, "push"))
		return push_opts__set(&o->push, key, value, msg, len);
	return spikes_opts__set(&o->spikes, key, value, msg, len);
}

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "Usage: tailprofd [OPTIONS]\n"
	    "Always-on, system-wide CPU profiler: samples every CPU with eBPF, keeps a ring of\n"
	    "time windows and serves pprof profiles over HTTP. Runs as root.\n"
	    "\n"
	    "  -F, --frequency HZ      samples per second per CPU, 1-10000 (default 99)\n"
	    "  -w, --window DURATION   length of a window, a multiple of 100ms (default 10s)\n"
	    "  -r, --retention DURATION  how much history the ring keeps (default 1h)\n"
	    "  -l, --listen HOST:PORT  HTTP address (default 127.0.0.1:7077)\n"
	    "      --ringbuf-size BYTES  BPF ring buffer, a power of two >= 64K; K/M suffix\n"
	    "                          allowed (default 8M)\n"
	    "      --offcpu-min DURATION  blocks at least this long are stored with their\n"
	    "                          stacks; shorter ones are counted per process\n"
	    "                          (10us to 1h; default 1ms)\n"
	    "      --debug-dir DIR     where separate debug files live (.build-id/NN/REST.debug,\n"
	    "                          .gnu_debuglink names); repeatable, searched in order\n"
	    "                          (default /usr/lib/debug)\n"
	    "      --gc MODE           GC pauses of JVM, CPython and Go processes: auto (find\n"
	    "                          them and attach, the default) or off\n"
	    "  -c, --config FILE       [daemon] settings, [stage NAME] and [usdt-app NAME]\n"
	    "                          sections (default /etc/tailprof/tailprofd.conf if it\n"
	    "                          exists); SIGHUP reloads the stages\n"
	    "      --unwind=MODE       user stacks: dwarf (.eh_frame unwind tables, and\n"
	    "                          frame pointers where there are none) or fp\n"
	    "                          (frame pointers only) (default dwarf)\n"
	    "      --python-frames=on|off  CPython 3.11-3.13 function names, files and lines in\n"
	    "                          stacks (default on)\n"
	    "      --unwind-memory BYTES  BPF memory for unwind tables, 1M-4096M; K/M\n"
	    "                          suffix allowed (default 64M)\n"
	    "      --unwind-max-processes N  processes with unwind tables, 1-65536\n"
	    "                          (default 1024; 5 KiB of BPF memory each)\n"
	    "      --check             load every BPF object these flags and the config would\n"
	    "                          load, print what this kernel runs (each feature: on or\n"
	    "                          off, variant, why) and exit, attaching nothing: 0 when\n"
	    "                          all loaded, 1 when the kernel rejected one (its verifier\n"
	    "                          log follows) or CPU sampling cannot run\n"
	    "      --spike-k K         a stage's window is a spike when its p95 is over K x the\n"
	    "                          median p95 of its recent ordinary windows (default 2)\n"
	    "      --spike-baseline-windows N  ordinary windows that median takes, 10-1000\n"
	    "                          (default 30); N/2 spike windows in a row: a level shift\n"
	    "      --spike-min-requests N  windows with fewer requests of a stage are not\n"
	    "                          judged (default 20)\n"
	    "      --pin-budget N      windows that spikes keep past the ring (default 64)\n"
	    "      --state-dir DIR     write each closed spike (JSON and profiles) there, read\n"
	    "                          them back at start-up; snapshots live there too\n"
	    "                          (default: none)\n"
	    "      --snapshot-max-count N  snapshots kept at most, 1-10000 (default 32)\n"
	    "      --snapshot-max-bytes SIZE  their files together at most, 1M-1024G; K/M/G\n"
	    "                          suffix allowed (default 256M)\n"
	    "      --push-url URL      push each window's CPU and off-CPU profiles to this\n"
	    "                          Pyroscope-compatible store (URL/ingest); [push] in the\n"
	    "                          config file sets the rest (default: no push)\n"
	    "  -v, --verbose           debug logging (libbpf messages included)\n"
	    "  -V, --version           print the version and exit\n"
	    "  -h, --help              this help\n"
	    "\n"
	    "Durations: 500ms, 2s, 10m, 1h. API: docs/api.md, or GET /api/v1/status.\n");
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("tailprofd: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nTry 'tailprofd --help'.\n", stderr);
	return 2;
}

static int parse_size(const char *s, size_t *out)
{
	uint64_t v;
	int err = tp_parse_size(s, 0, SIZE_MAX, &v);

	if (!err)
		*out = v;
	return err;
}

/* Checks and sets one setting (a flag's or the config's). Returns 0, or -1 after writing what
 * is wrong and what is allowed into msg ("'VALUE': give ..."). */
static int set_option(struct options *o, int c, const char *val, char *msg, size_t len)
{
	uint64_t v;

	switch (c) {
	case 'F':
		if (tp_parse_uint(val, 1, 10000, &v)) {
			snprintf(
			    msg, len,
			    "'%s': give samples per second per CPU, an integer from 1 to 10000",
			    val);
			return -1;
		}
		o->frequency_hz = v;
		return 0;
	case 'w':
		if (tp_parse_duration(val, &o->window_ns) || o->window_ns < 100 * NSEC_PER_MSEC ||
		    o->window_ns % (100 * NSEC_PER_MSEC)) {
			snprintf(msg, len,
				 "'%s': give a duration that is a multiple of 100ms, e.g. 1s, 10s, "
				 "1m",
				 val);
			return -1;
		}
		return 0;
	case 'r':
		o->retention_set = true;
		if (tp_parse_duration(val, &o->retention_ns) || !o->retention_ns) {
			snprintf(msg, len, "'%s': give a duration, e.g. 10m, 1h", val);
			return -1;
		}
		return 0;
	case 'l':
		o->listen = val;
		return 0;
	case OPT_RINGBUF:
		if (parse_size(val, &o->ringbuf_bytes) || o->ringbuf_bytes < (64 << 10) ||
		    o->ringbuf_bytes > (1u << 30) || (o->ringbuf_bytes & (o->ringbuf_bytes - 1))) {
			snprintf(msg, len, "'%s': give a power of two from 64K to 1024M, e.g. 8M",
				 val);
			return -1;
		}
		return 0;
	}
	return -1;
}

static unsigned opt_bit(int c)
{
	return c == 'F' ? 1 : c == 'w' ? 2 : c == 'r' ? 4 : c == 'l' ? 8 : 16;
}

static const char *flag_name(int c)
{
	switch (c) {
	case 'F':
		return "--frequency";
	case 'w':
		return "--window";
	case 'r':
		return "--retention";
	case 'l':
		return "--listen";
	default:
		return "--ringbuf-size";
	}
}

static int parse_options(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
	    {"frequency", required_argument, NULL, 'F'},
	    {"window", required_argument, NULL, 'w'},
	    {"retention", required_argument, NULL, 'r'},
	    {"listen", required_argument, NULL, 'l'},
	    {"ringbuf-size", required_argument, NULL, OPT_RINGBUF},
	    {"debug-dir", required_argument, NULL, OPT_DEBUG_DIR},
	    {"gc", required_argument, NULL, OPT_GC},
	    {"unwind", required_argument, NULL, OPT_UNWIND},
	    {"python-frames", required_argument, NULL, OPT_PYTHON_FRAMES},
	    {"unwind-memory", required_argument, NULL, OPT_UNWIND_MEMORY},
	    {"unwind-max-processes", required_argument, NULL, OPT_UNWIND_PROCS},
	    {"offcpu-min", required_argument, NULL, OPT_OFFCPU_MIN},
	    {"check", no_argument, NULL, OPT_CHECK},
	    {"spike-k", required_argument, NULL, OPT_SPIKE_K},
	    {"spike-baseline-windows", required_argument, NULL, OPT_SPIKE_BASELINE},
	    {"spike-min-requests", required_argument, NULL, OPT_SPIKE_MIN_REQUESTS},
	    {"pin-budget", required_argument, NULL, OPT_PIN_BUDGET},
	    {"state-dir", required_argument, NULL, OPT_STATE_DIR},
	    {"snapshot-max-count", required_argument, NULL, OPT_SNAPSHOT_MAX_COUNT},
	    {"snapshot-max-bytes", required_argument, NULL, OPT_SNAPSHOT_MAX_BYTES},
	    {"push-url", required_argument, NULL, OPT_PUSH_URL},
	    {"config", required_argument, NULL, 'c'},
	    {"verbose", no_argument, NULL, 'v'},
	    {"version", no_argument, NULL, 'V'},
	    {"help", no_argument, NULL, 'h'},
	    {},
	};
	char msg[256];
	int c;

	*o = (struct options){
	    .frequency_hz = 99,
	    .window_ns = 10 * NSEC_PER_SEC,
	    .retention_ns = 3600 * NSEC_PER_SEC,
	    .listen = "127.0.0.1:7077",
	    .ringbuf_bytes = 8 << 20,
	    .gc = GC_OPTS_DEFAULT,
	    .unwind_tables = true,
	    .python_frames = true,
	    .unwind_memory_bytes = 64 << 20,
	    .unwind_max_processes = 1024,
	    .offcpu_min_ns = NSEC_PER_MSEC,
	    .spikes = SPIKES_OPTS_DEFAULT,
	};
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":F:w:r:l:c:vVh", longopts, NULL)) != -1) {
		switch (c) {
		case 'F':
		case 'w':
		case 'r':
		case 'l':
		case OPT_RINGBUF:
			if (set_option(o, c, optarg, msg, sizeof(msg)))
				return usage_error("%s %s", flag_name(c), msg);
			o->set |= opt_bit(c);
			break;
		case 'c':
			o->config = optarg;
			break;
		case OPT_OFFCPU_MIN:
			if (tp_parse_duration(optarg, &o->offcpu_min_ns) ||
			    o->offcpu_min_ns < 10 * NSEC_PER_USEC ||
			    o->offcpu_min_ns > 3600 * NSEC_PER_SEC)
				return usage_error(
				    "--offcpu-min '%s': give a duration from 10us to 1h, "
				    "e.g. 500us, 1ms, 10ms",
				    optarg);
			break;
		case OPT_DEBUG_DIR: {
			struct stat st;
			int e = stat(optarg, &st) ? errno : S_ISDIR(st.st_mode) ? 0 : ENOTDIR;

			if (e)
				return usage_error(
				    "--debug-dir '%s': %s; give a directory of debug "
				    "files, e.g. /usr/lib/debug",
				    optarg, strerror(e));
			if (o->nr_debug_dirs == MAX_DEBUG_DIRS)
				return usage_error("--debug-dir given more than %d times",
						   MAX_DEBUG_DIRS);
			o->debug_dirs[o->nr_debug_dirs++] = optarg;
			break;
		}
		case OPT_GC:
			if (gc_opts__parse_mode(optarg, &o->gc))
				return usage_error("--gc '%s': give auto or off", optarg);
			o->gc_set = true;
			break;
		case OPT_UNWIND:
			if (strcmp(optarg, "dwarf") && strcmp(optarg, "fp"))
				return usage_error("--unwind '%s': give dwarf or fp", optarg);
			o->unwind_tables = !strcmp(optarg, "dwarf");
			break;
		case OPT_PYTHON_FRAMES:
			if (strcmp(optarg, "on") && strcmp(optarg, "off"))
				return usage_error("--python-frames '%s': give on or off", optarg);
			o->python_frames = !strcmp(optarg, "on");
			break;
		case OPT_UNWIND_MEMORY:
			if (parse_size(optarg, &o->unwind_memory_bytes) ||
			    o->unwind_memory_bytes < (1 << 20) ||
			    o->unwind_memory_bytes > (4ull << 30))
				return usage_error(
				    "--unwind-memory '%s': give bytes from 1M to 4096M, "
				    "e.g. 64M",
				    optarg);
			break;
		case OPT_UNWIND_PROCS: {
			uint64_t v;

			if (tp_parse_uint(optarg, 1, 65536, &v))
				return usage_error(
				    "--unwind-max-processes '%s': give an integer from "
				    "1 to 65536",
				    optarg);
			o->unwind_max_processes = v;
			break;
		}
		case OPT_CHECK:
			o->check = true;
			break;
		case OPT_SPIKE_K:
		case OPT_SPIKE_BASELINE:
		case OPT_SPIKE_MIN_REQUESTS:
		case OPT_PIN_BUDGET:
		case OPT_STATE_DIR:
		case OPT_SNAPSHOT_MAX_COUNT:
		case OPT_SNAPSHOT_MAX_BYTES:
		case OPT_PUSH_URL:
			for (size_t i = 0; i < sizeof(section_flags) / sizeof(section_flags[0]);
			     i++) {
				if (section_flags[i].opt != c)
					continue;
				if (set_section_key(o, section_flags[i].section,
						    section_flags[i].key, optarg, msg, sizeof(msg)))
					return usage_error("%s %s", section_flags[i].flag, msg);
				o->section_set |= 1u << i;
			}
			break;
		case 'v':
			o->verbose = true;
			break;
		case 'V':
			printf("tailprofd %s\n", TAILPROF_VERSION);
			exit(0);
		case 'h':
			usage(stdout);
			exit(0);
		case ':':
			return usage_error("%s needs a value", argv[optind - 1]);
		default:
			return usage_error("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	return 0;
}

/* Reads the configuration file (--config, or the default one if it exists): NULL when there
 * is none. Start-up errors return 2 through *rc after one line naming file:line. */
static struct config *read_config(const struct options *o, int *rc)
{
	char err[600];
	struct config *cfg;

	*rc = 0;
	if (!o->config && access(CONFIG_DEFAULT_PATH, F_OK))
		return NULL;
	cfg = config__load(o->config ? o->config : CONFIG_DEFAULT_PATH, err, sizeof(err));
	if (!cfg)
		*rc = usage_error("%s", err);
	return cfg;
}

/* [daemon] settings the flags did not give. Returns 0, or 2 after naming file:line. */
static int apply_config_settings(struct options *o, const struct config *cfg)
{
	const struct {
		int opt;
		const char *key;
		const struct config_setting *s;
	} keys[] = {
	    {'F', "frequency", &cfg->frequency},
	    {'w', "window", &cfg->window},
	    {'r', "retention", &cfg->retention},
	    {'l', "listen", &cfg->listen},
	    {OPT_RINGBUF, "ringbuf_size", &cfg->ringbuf_size},
	};
	char msg[256];

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		int c = keys[i].opt;

		if (!keys[i].s->value || (o->set & (opt_bit(c))))
			continue;
		if (set_option(o, c, keys[i].s->value, msg, sizeof(msg)))
			return usage_error("%s:%d: %s %s", cfg->path, keys[i].s->line, keys[i].key,
					   msg);
	}
	/* [spikes] and [snapshots]: a flag wins */
	{
		const struct {
			const char *section, *key;
			const struct config_setting *s;
		} sk[] = {
		    {"spikes", "k", &cfg->spikes_k},
		    {"spikes", "baseline_windows", &cfg->spikes_baseline_windows},
		    {"spikes", "min_requests", &cfg->spikes_min_requests},
		    {"spikes", "min_rise", &cfg->spikes_min_rise},
		    {"spikes", "pin_budget", &cfg->spikes_pin_budget},
		    {"spikes", "state_dir", &cfg->spikes_state_dir},
		    {"spikes", "write_rate", &cfg->spikes_write_rate},
		    {"snapshots", "max_count", &cfg->snapshots_max_count},
		    {"snapshots", "max_bytes", &cfg->snapshots_max_bytes},
		    {"push", "url", &cfg->push_url},
		    {"push", "app", &cfg->push_app},
		    {"push", "token_file", &cfg->push_token_file},
		    {"push", "queue_windows", &cfg->push_queue_windows},
		    {"push", "labels", &cfg->push_labels},
		    {"push", "keep_labels", &cfg->push_keep_labels},
		    {"push", "drop_labels", &cfg->push_drop_labels},
		};

		for (size_t i = 0; i < sizeof(sk) / sizeof(sk[0]); i++) {
			bool flag = false;

			for (size_t f = 0; f < sizeof(section_flags) / sizeof(section_flags[0]);
			     f++)
				flag |= !strcmp(section_flags[f].section, sk[i].section) &&
					!strcmp(section_flags[f].key, sk[i].key) &&
					(o->section_set & (1u << f));
			if (!sk[i].s->value || flag)
				continue;
			if (set_section_key(o, sk[i].section, sk[i].key, sk[i].s->value, msg,
					    sizeof(msg)))
				return usage_error("%s:%d: [%s] %s %s", cfg->path, sk[i].s->line,
						   sk[i].section, sk[i].key, msg);
		}
	}
	/* [gc]: values were checked when the file was read */
	if (cfg->gc_enabled.value && !o->gc_set)
		o->gc.enabled = !strcmp(cfg->gc_enabled.value, "auto");
	if (cfg->gc_jvm.value)
		o->gc.jvm = !strcmp(cfg->gc_jvm.value, "on");
	if (cfg->gc_python.value)
		o->gc.python = !strcmp(cfg->gc_python.value, "on");
	if (cfg->gc_go.value)
		o->gc.go = !strcmp(cfg->gc_go.value, "on");
	return 0;
}

static int check_options(const struct options *o)
{
	if (o->retention_ns < o->window_ns)
		return usage_error("--retention (%llu s%s) must be at least --window (%llu ms)",
				   (unsigned long long)(o->retention_ns / NSEC_PER_SEC),
				   o->retention_set ? "" : ", the default",
				   (unsigned long long)(o->window_ns / NSEC_PER_MSEC));
	if ((o->retention_ns + o->window_ns - 1) / o->window_ns > MAX_WINDOWS)
		return usage_error("--retention / --window is over %d windows; use longer windows",
				   MAX_WINDOWS);
	return 0;
}

/* The unwinder's mappings go to the loader's BPF maps. */
static int unwind_set_process(void *ctx, uint32_t pid, const struct tp_proc_mappings *m)
{
	return loader__unwind_set_process(ctx, pid, m);
}

static void unwind_drop_process(void *ctx, uint32_t pid)
{
	loader__unwind_drop_process(ctx, pid);
}

static const struct unwinder_ops unwind_ops = {
    .set_process = unwind_set_process,
    .drop_process = unwind_drop_process,
};

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
	    .label_sources_fd = probes__label_sources_fd(*probes),
	    .unwind_tables = o->unwind_tables,
	    .unwind_rows = o->unwind_memory_bytes / sizeof(struct tp_unwind_row),
	    .unwind_max_processes = o->unwind_max_processes,
	    .python_frames = o->python_frames,
	    /* tests/bench/python.py times the sampler on one process */
	    .bench_pid = getenv("TAILPROF_BENCH_PID") ? atoi(getenv("TAILPROF_BENCH_PID")) : 0,
	    .features = ft,
	    .load_only = load_only,
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

/* tailprofd --check: the features report on stdout, then a closing line. loaded: what
 * load_objects() returned. Returns the exit code: 1 when an object failed to load for a reason
 * no probe found, CPU sampling cannot run, loading stopped early (its error was logged), or the
 * report could not be written. */
static int report_check(struct features *ft, int loaded)
{
	bool cpu = features__get(ft, FEATURE_CPU_SAMPLING)->enabled;
	bool failed = features__any_load_failed(ft);

	/* what loading never reached says so, not "not probed" */
	for (int i = 0; loaded && i < FEATURE_NR; i++)
		if (!strcmp(features__get(ft, i)->reason, "not probed"))
			features__set(ft, i, false, "",
				      "not reached: loading stopped at the error "
				      "above");
	printf("tailprofd %s --check on Linux %s\n", TAILPROF_VERSION, sysinfo__kernel_release());
	features__print(ft, stdout);
	if (loaded)
		printf("\ntailprofd cannot start: loading stopped at the error logged above\n");
	else if (!cpu)
		printf("\ntailprofd cannot run on this kernel: CPU sampling is off (above)\n");
	else if (failed)
		printf("\na BPF object failed to load (above): tailprofd would run here without "
		       "the features it serves\n");
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
	unsigned long long nr_windows;
	char err[512];
	sigset_t mask;
	int rc, sfd = -1, lfd = -1, ret = 1;

	log_set_prefix("tailprofd");
	/* HTTP requests run on their own threads; glibc would give each its own malloc arena and
	 * keep what a large profile query freed. Two arenas keep RSS near what is live. */
	mallopt(M_ARENA_MAX, 2);
	rc = parse_options(argc, argv, &o);
	if (rc)
		return rc;
	cfg = read_config(&o, &rc);
	if (rc)
		return rc;
	if (cfg && (rc = apply_config_settings(&o, cfg))) {
		config__free(cfg);
		return rc;
	}
	rc = check_options(&o);
	if (!rc && push_opts__check(&o.push, err, sizeof(err)))
		rc = usage_error("%s", err);
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
			ret = usage_error("%s", err);
			goto out;
		}
		rc = load_objects(&o, cfg, features, true, &probes, &gc_probes, &loader);
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
		ret = usage_error("%s", err);
		goto out;
	}
	if (lfd < 0) {
		pr_err("%s", err);
		goto out;
	}
	if (load_objects(&o, cfg, features, false, &probes, &gc_probes, &loader))
		goto out;
	features__log(features);
	sym = symbolizer__new(&(struct symbolizer_opts){
	    .debug_dirs = o.debug_dirs,
	    .nr_debug_dirs = o.nr_debug_dirs,
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
	http = http_api__start(lfd, &qctx,
			       &(struct http_api_opts){.write_rate_per_min = o.spikes.write_rate});
	if (!http) {
		pr_err("failed to start the HTTP server on %s", o.listen);
		goto out;
	}
	lfd = -1;
	notify = notify__start(coll, loader__nr_sampled_cpus(loader), o.frequency_hz);
	nr_windows = (o.retention_ns + o.window_ns - 1) / o.window_ns;
	pr_info("sampling %d CPUs at %u Hz; %llu window%s of %llu ms; serving http://%s",
		loader__nr_sampled_cpus(loader), o.frequency_hz, nr_windows,
		nr_windows == 1 ? "" : "s", (unsigned long long)(o.window_ns / NSEC_PER_MSEC),
		o.listen);

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
	features__free(features);
	if (lfd >= 0)
		close(lfd);
	if (sfd >= 0)
		close(sfd);
	return ret;
}
