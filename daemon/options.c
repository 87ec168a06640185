// SPDX-License-Identifier: GPL-2.0-only
/* tailprofd's flags and configuration file: --help, parsing, the [daemon], [gc], [spikes],
 * [snapshots] and [push] settings a config gives where no flag did, and the checks across them
 * (options.h). */
#include "options.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "access.h"
#include "config.h"
#include "query.h"
#include "tailprof_config.h"
#include "timeparse.h"

#define MAX_WINDOWS 1000000

enum {
	OPT_RINGBUF = 256,
	OPT_DEBUG_DIR,
	OPT_GC,
	OPT_UNWIND,
	OPT_PYTHON_FRAMES,
	OPT_BPF_STATS,
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
	OPT_SOCKET,
	OPT_AUTH_TOKEN_FILE,
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
	if (!strcmp(section, "limits"))
		return limits_opts__set(&o->limits, key, value, msg, len);
	return spikes_opts__set(&o->spikes, key, value, msg, len);
}

void options__usage(FILE *f)
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
	    "  -l, --listen HOST:PORT  HTTP address (default 127.0.0.1:7077); an address off\n"
	    "                          loopback needs --auth-token-file\n"
	    "      --socket PATH       the API on a unix socket too, mode 0660, group tailprof\n"
	    "                          if it exists; none: no socket (default\n"
	    "                          " ACCESS_SOCKET_DEFAULT ")\n"
	    "      --auth-token-file FILE  every request on --listen but /healthz and the\n"
	    "                          page's files (/, /ui/FILE) needs Authorization:\n"
	    "                          Bearer TOKEN, the first line of FILE (mode 0600);\n"
	    "                          required for an address off loopback\n"
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
	    "      --bpf-stats=on|off  hold BPF run-time statistics on, for tailprofd's own\n"
	    "                          BPF cost (default on; two clock reads around every BPF\n"
	    "                          program run on the host while on)\n"
	    "      --unwind-memory BYTES  BPF memory for unwind tables, 1M-4096M; K/M\n"
	    "                          suffix allowed (default 64M)\n"
	    "      --unwind-max-processes N  processes with unwind tables, 1-65536\n"
	    "                          (default 1024; 5 KiB of BPF memory each)\n"
	    "      --check             load every BPF object these flags and the config would\n"
	    "                          load, print what this kernel runs (each feature: on or\n"
	    "                          off, variant, why) and exit, attaching nothing: 0 when\n"
	    "                          every feature runs (a refused variant whose fallback\n"
	    "                          does the same job included), 1 when the kernel rejected\n"
	    "                          one that left a feature off or on a lesser fallback (its\n"
	    "                          verifier log follows) or CPU sampling cannot run\n"
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

int options__usage_error(const char *fmt, ...)
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

/* "on" or "off" into *out. Returns false (*out untouched) for any other value. */
static bool on_off(const char *val, bool *out)
{
	if (strcmp(val, "on") && strcmp(val, "off"))
		return false;
	*out = !strcmp(val, "on");
	return true;
}

/* Checks and sets one setting (a flag's or the config's). Returns 0, or -1 after writing what
 * is wrong and what is allowed into msg ("'VALUE': give ..."). */
static int set_option(struct options *o, int c, const char *val, char *msg, size_t len)
{
	uint64_t v;

	switch (c) {
	case OPT_BPF_STATS:
		if (!on_off(val, &o->bpf_stats)) {
			snprintf(msg, len, "'%s': give on or off", val);
			return -1;
		}
		return 0;
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
	case OPT_SOCKET:
		if (strcmp(val, "none") &&
		    (val[0] != '/' || strlen(val) > ACCESS_SOCKET_PATH_MAX)) {
			snprintf(msg, len,
				 "'%s': give an absolute path of at most %d characters, or none",
				 val, ACCESS_SOCKET_PATH_MAX);
			return -1;
		}
		o->socket = strcmp(val, "none") ? val : NULL;
		o->socket_explicit = true;
		return 0;
	case OPT_AUTH_TOKEN_FILE:
		if (!*val) {
			snprintf(msg, len, "'': give the path of a file holding the token");
			return -1;
		}
		o->auth_token_file = val;
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
	return c == 'F'			  ? 1
	       : c == 'w'		  ? 2
	       : c == 'r'		  ? 4
	       : c == 'l'		  ? 8
	       : c == OPT_SOCKET	  ? 32
	       : c == OPT_AUTH_TOKEN_FILE ? 64
	       : c == OPT_BPF_STATS	  ? 128
					  : 16;
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
	case OPT_SOCKET:
		return "--socket";
	case OPT_AUTH_TOKEN_FILE:
		return "--auth-token-file";
	case OPT_BPF_STATS:
		return "--bpf-stats";
	default:
		return "--ringbuf-size";
	}
}

int options__parse(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
	    {"frequency", required_argument, NULL, 'F'},
	    {"window", required_argument, NULL, 'w'},
	    {"retention", required_argument, NULL, 'r'},
	    {"listen", required_argument, NULL, 'l'},
	    {"ringbuf-size", required_argument, NULL, OPT_RINGBUF},
	    {"socket", required_argument, NULL, OPT_SOCKET},
	    {"auth-token-file", required_argument, NULL, OPT_AUTH_TOKEN_FILE},
	    {"debug-dir", required_argument, NULL, OPT_DEBUG_DIR},
	    {"gc", required_argument, NULL, OPT_GC},
	    {"unwind", required_argument, NULL, OPT_UNWIND},
	    {"python-frames", required_argument, NULL, OPT_PYTHON_FRAMES},
	    {"bpf-stats", required_argument, NULL, OPT_BPF_STATS},
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
	    .socket = ACCESS_SOCKET_DEFAULT,
	    .ringbuf_bytes = 8 << 20,
	    .gc = GC_OPTS_DEFAULT,
	    .unwind_tables = true,
	    .python_frames = true,
	    .bpf_stats = true,
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
		case OPT_SOCKET:
		case OPT_AUTH_TOKEN_FILE:
		case OPT_BPF_STATS:
			if (set_option(o, c, optarg, msg, sizeof(msg)))
				return options__usage_error("%s %s", flag_name(c), msg);
			o->set |= opt_bit(c);
			break;
		case 'c':
			o->config = optarg;
			break;
		case OPT_OFFCPU_MIN:
			if (tp_parse_duration(optarg, &o->offcpu_min_ns) ||
			    o->offcpu_min_ns < 10 * NSEC_PER_USEC ||
			    o->offcpu_min_ns > 3600 * NSEC_PER_SEC)
				return options__usage_error(
				    "--offcpu-min '%s': give a duration from 10us to 1h, "
				    "e.g. 500us, 1ms, 10ms",
				    optarg);
			break;
		case OPT_DEBUG_DIR: {
			struct stat st;
			int e = stat(optarg, &st) ? errno : S_ISDIR(st.st_mode) ? 0 : ENOTDIR;

			if (e)
				return options__usage_error(
				    "--debug-dir '%s': %s; give a directory of debug "
				    "files, e.g. /usr/lib/debug",
				    optarg, strerror(e));
			if (o->nr_debug_dirs == MAX_DEBUG_DIRS)
				return options__usage_error("--debug-dir given more than %d times",
							    MAX_DEBUG_DIRS);
			o->debug_dirs[o->nr_debug_dirs++] = optarg;
			break;
		}
		case OPT_GC:
			if (gc_opts__parse_mode(optarg, &o->gc))
				return options__usage_error("--gc '%s': give auto or off", optarg);
			o->gc_set = true;
			break;
		case OPT_UNWIND:
			if (strcmp(optarg, "dwarf") && strcmp(optarg, "fp"))
				return options__usage_error("--unwind '%s': give dwarf or fp",
							    optarg);
			o->unwind_tables = !strcmp(optarg, "dwarf");
			break;
		case OPT_PYTHON_FRAMES:
			if (!on_off(optarg, &o->python_frames))
				return options__usage_error("--python-frames '%s': give on or off",
							    optarg);
			break;
		case OPT_UNWIND_MEMORY:
			if (parse_size(optarg, &o->unwind_memory_bytes) ||
			    o->unwind_memory_bytes < (1 << 20) ||
			    o->unwind_memory_bytes > (4ull << 30))
				return options__usage_error(
				    "--unwind-memory '%s': give bytes from 1M to 4096M, "
				    "e.g. 64M",
				    optarg);
			break;
		case OPT_UNWIND_PROCS: {
			uint64_t v;

			if (tp_parse_uint(optarg, 1, 65536, &v))
				return options__usage_error(
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
					return options__usage_error("%s %s", section_flags[i].flag,
								    msg);
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
			options__usage(stdout);
			exit(0);
		case ':':
			return options__usage_error("%s needs a value", argv[optind - 1]);
		default:
			return options__usage_error("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return options__usage_error("unexpected argument '%s'", argv[optind]);
	return 0;
}

/* Reads the configuration file (--config, or the default one if it exists): NULL when there
 * is none. Start-up errors return 2 through *rc after one line naming file:line. */
struct config *options__read_config(const struct options *o, int *rc)
{
	char err[600];
	struct config *cfg;

	*rc = 0;
	if (!o->config && access(CONFIG_DEFAULT_PATH, F_OK))
		return NULL;
	cfg = config__load(o->config ? o->config : CONFIG_DEFAULT_PATH, err, sizeof(err));
	if (!cfg)
		*rc = options__usage_error("%s", err);
	return cfg;
}

/* [daemon] settings the flags did not give. Returns 0, or 2 after naming file:line. */
int options__apply_config(struct options *o, const struct config *cfg)
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
	    {OPT_SOCKET, "socket", &cfg->socket},
	    {OPT_AUTH_TOKEN_FILE, "auth_token_file", &cfg->auth_token_file},
	    {OPT_BPF_STATS, "bpf_stats", &cfg->bpf_stats},
	};
	char msg[256];

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		int c = keys[i].opt;

		if (!keys[i].s->value || (o->set & (opt_bit(c))))
			continue;
		if (set_option(o, c, keys[i].s->value, msg, sizeof(msg)))
			return options__usage_error("%s:%d: %s %s", cfg->path, keys[i].s->line,
						    keys[i].key, msg);
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
		    {"snapshots", "save_rate", &cfg->snapshots_save_rate},
		    {"limits", "stacks", &cfg->limits[LIMIT_STACKS]},
		    {"limits", "tasks", &cfg->limits[LIMIT_TASKS]},
		    {"limits", "known_processes", &cfg->limits[LIMIT_KNOWN_PROCESSES]},
		    {"limits", "processes", &cfg->limits[LIMIT_PROCESSES]},
		    {"limits", "objects", &cfg->limits[LIMIT_OBJECTS]},
		    {"limits", "http_connections", &cfg->limits[LIMIT_HTTP_CONNECTIONS]},
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
				return options__usage_error("%s:%d: [%s] %s %s", cfg->path,
							    sk[i].s->line, sk[i].section, sk[i].key,
							    msg);
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

int options__check(const struct options *o)
{
	if (o->retention_ns < o->window_ns)
		return options__usage_error(
		    "--retention (%llu s%s) must be at least --window (%llu ms)",
		    (unsigned long long)(o->retention_ns / NSEC_PER_SEC),
		    o->retention_set ? "" : ", the default",
		    (unsigned long long)(o->window_ns / NSEC_PER_MSEC));
	if ((o->retention_ns + o->window_ns - 1) / o->window_ns > MAX_WINDOWS)
		return options__usage_error(
		    "--retention / --window is over %d windows; use longer windows", MAX_WINDOWS);
	return 0;
}
