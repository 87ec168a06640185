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
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "collector.h"
#include "http_api.h"
#include "loader.h"
#include "log.h"
#include "query.h"
#include "symbolizer.h"
#include "tailprof_config.h"
#include "timeparse.h"
#include "unwinder.h"

#define MAX_WINDOWS 1000000

struct options {
	uint32_t frequency_hz;
	uint64_t window_ns;
	uint64_t retention_ns;
	const char *listen;
	size_t ringbuf_bytes;
	bool unwind_tables;	       /* --unwind=dwarf */
	size_t unwind_memory_bytes;    /* --unwind-memory */
	uint32_t unwind_max_processes; /* --unwind-max-processes */
	bool verbose;
};

static void usage(FILE *f)
{
	fprintf(
	    f, "Usage: tailprofd [OPTIONS]\n"
	       "Always-on, system-wide CPU profiler: samples every CPU with eBPF, keeps a ring of\n"
	       "time windows and serves pprof profiles over HTTP. Runs as root.\n"
	       "\n"
	       "  -F, --frequency HZ      samples per second per CPU, 1-10000 (default 99)\n"
	       "  -w, --window DURATION   length of a window, a multiple of 100ms (default 10s)\n"
	       "  -r, --retention DURATION  how much history the ring keeps (default 1h)\n"
	       "  -l, --listen HOST:PORT  HTTP address (default 127.0.0.1:7077)\n"
	       "      --ringbuf-size BYTES  BPF ring buffer, a power of two >= 64K; K/M suffix\n"
	       "                          allowed (default 8M)\n");
	fprintf(f, "      --unwind=MODE       user stacks: dwarf (.eh_frame unwind tables, and\n"
		   "                          frame pointers where there are none) or fp\n"
		   "                          (frame pointers only) (default dwarf)\n"
		   "      --unwind-memory BYTES  BPF memory for unwind tables, 1M-4096M; K/M\n"
		   "                          suffix allowed (default 64M)\n"
		   "      --unwind-max-processes N  processes with unwind tables, 1-65536\n"
		   "                          (default 1024; 5 KiB of BPF memory each)\n");
	fprintf(f, "  -v, --verbose           debug logging (libbpf messages included)\n"
		   "  -V, --version           print the version and exit\n"
		   "  -h, --help              this help\n"
		   "\n"
		   "Durations: 500ms, 2s, 10m, 1h. API: see README.md or GET /api/v1/status.\n");
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
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	if (*end == 'K' || *end == 'k')
		v <<= 10, end++;
	else if (*end == 'M' || *end == 'm')
		v <<= 20, end++;
	if (*end)
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_options(int argc, char **argv, struct options *o)
{
	enum { OPT_RINGBUF = 256, OPT_UNWIND, OPT_UNWIND_MEMORY, OPT_UNWIND_PROCS };
	static const struct option longopts[] = {
	    {"frequency", required_argument, NULL, 'F'},
	    {"window", required_argument, NULL, 'w'},
	    {"retention", required_argument, NULL, 'r'},
	    {"listen", required_argument, NULL, 'l'},
	    {"ringbuf-size", required_argument, NULL, OPT_RINGBUF},
	    {"unwind", required_argument, NULL, OPT_UNWIND},
	    {"unwind-memory", required_argument, NULL, OPT_UNWIND_MEMORY},
	    {"unwind-max-processes", required_argument, NULL, OPT_UNWIND_PROCS},
	    {"verbose", no_argument, NULL, 'v'},
	    {"version", no_argument, NULL, 'V'},
	    {"help", no_argument, NULL, 'h'},
	    {},
	};
	bool retention_set = false;
	int c;

	*o = (struct options){
	    .frequency_hz = 99,
	    .window_ns = 10 * NSEC_PER_SEC,
	    .retention_ns = 3600 * NSEC_PER_SEC,
	    .listen = "127.0.0.1:7077",
	    .ringbuf_bytes = 8 << 20,
	    .unwind_tables = true,
	    .unwind_memory_bytes = 64 << 20,
	    .unwind_max_processes = 1024,
	};
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":F:w:r:l:vVh", longopts, NULL)) != -1) {
		switch (c) {
		case 'F': {
			uint64_t v;

			if (tp_parse_uint(optarg, 1, 10000, &v))
				return usage_error("--frequency '%s': give samples per second per "
						   "CPU, an integer from 1 to 10000",
						   optarg);
			o->frequency_hz = v;
			break;
		}
		case 'w':
			if (tp_parse_duration(optarg, &o->window_ns) ||
			    o->window_ns < 100 * NSEC_PER_MSEC ||
			    o->window_ns % (100 * NSEC_PER_MSEC))
				return usage_error(
				    "--window '%s': give a duration that is a multiple "
				    "of 100ms, e.g. 1s, 10s, 1m",
				    optarg);
			break;
		case 'r':
			retention_set = true;
			if (tp_parse_duration(optarg, &o->retention_ns) || !o->retention_ns)
				return usage_error(
				    "--retention '%s': give a duration, e.g. 10m, 1h", optarg);
			break;
		case 'l':
			o->listen = optarg;
			break;
		case OPT_RINGBUF:
			if (parse_size(optarg, &o->ringbuf_bytes) ||
			    o->ringbuf_bytes < (64 << 10) || o->ringbuf_bytes > (1u << 30) ||
			    (o->ringbuf_bytes & (o->ringbuf_bytes - 1)))
				return usage_error(
				    "--ringbuf-size '%s': give a power of two from 64K "
				    "to 1024M, e.g. 8M",
				    optarg);
			break;
		case OPT_UNWIND:
			if (strcmp(optarg, "dwarf") && strcmp(optarg, "fp"))
				return usage_error("--unwind '%s': give dwarf or fp", optarg);
			o->unwind_tables = !strcmp(optarg, "dwarf");
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
	if (o->retention_ns < o->window_ns)
		return usage_error("--retention (%llu s%s) must be at least --window (%llu ms)",
				   (unsigned long long)(o->retention_ns / NSEC_PER_SEC),
				   retention_set ? "" : ", the default",
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

int main(int argc, char **argv)
{
	struct symbolizer *sym = NULL;
	struct loader *loader = NULL;
	struct unwinder *unwinder = NULL;
	struct collector *coll = NULL;
	struct http_api *http = NULL;
	struct options o;
	struct query_ctx qctx;
	struct loader_opts lopts;
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
	if (o.verbose)
		log_set_level(LOG_DEBUG);
	if (!has_privileges()) {
		pr_err(
		    "tailprofd must run as root (or with CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE and "
		    "CAP_DAC_READ_SEARCH): run it with sudo");
		return 1;
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
	if (loader__probe_kernel())
		goto out;
	sym = symbolizer__new(NULL);
	if (!sym) {
		pr_err("failed to start the symbolizer: %s", strerror(errno));
		goto out;
	}
	if (o.unwind_tables && !loader__can_unwind_tables()) {
		pr_warn("the kernel lacks bpf_loop or bpf_task_pt_regs for perf_event programs "
			"(Linux 5.17): user stacks are walked by frame pointers");
		o.unwind_tables = false;
	}
	lopts = (struct loader_opts){
	    .frequency_hz = o.frequency_hz,
	    .ringbuf_bytes = o.ringbuf_bytes,
	    .slot_ns = drain_period(o.window_ns),
	    .unwind_tables = o.unwind_tables,
	    .unwind_rows = o.unwind_memory_bytes / sizeof(struct tp_unwind_row),
	    .unwind_max_processes = o.unwind_max_processes,
	};
	loader = loader__new(&lopts);
	if (!loader && lopts.unwind_tables) {
		/* a kernel whose verifier rejects the walker still gets CPU profiles */
		pr_warn("the table unwinder did not load: user stacks are walked by frame pointers "
			"(--unwind=fp says so without this retry)");
		lopts.unwind_tables = o.unwind_tables = false;
		loader = loader__new(&lopts);
	}
	if (!loader)
		goto out;
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
	coll = collector__new(&(struct collector_opts){
	    .loader = loader,
	    .symbolizer = sym,
	    .unwinder = unwinder,
	    .frequency_hz = o.frequency_hz,
	    .window_ns = o.window_ns,
	    .nr_windows = (o.retention_ns + o.window_ns - 1) / o.window_ns,
	    .drain_ns = drain_period(o.window_ns),
	});
	if (!coll)
		goto out;
	qctx = (struct query_ctx){
	    .collector = coll,
	    .loader = loader,
	    .listen = o.listen,
	    .frequency_hz = o.frequency_hz,
	    .retention_ns = o.retention_ns,
	};
	http = http_api__start(lfd, &qctx);
	if (!http) {
		pr_err("failed to start the HTTP server on %s", o.listen);
		goto out;
	}
	lfd = -1;
	nr_windows = (o.retention_ns + o.window_ns - 1) / o.window_ns;
	pr_info("sampling %d CPUs at %u Hz; %llu window%s of %llu ms; serving http://%s",
		loader__nr_attached(loader) - 3, o.frequency_hz, nr_windows,
		nr_windows == 1 ? "" : "s", (unsigned long long)(o.window_ns / NSEC_PER_MSEC),
		o.listen);

	for (;;) {
		struct signalfd_siginfo si;

		if (collector__run(coll, sfd))
			goto out;
		if (read(sfd, &si, sizeof(si)) != sizeof(si))
			continue;
		if (si.ssi_signo == SIGHUP) {
			pr_info("SIGHUP: no configuration to reload yet");
			continue;
		}
		pr_info("%s: detaching probes and exiting", strsignal(si.ssi_signo));
		break;
	}
	ret = 0;
out:
	/* teardown in reverse: stop serving before the data it reads goes away */
	http_api__stop(http);
	collector__free(coll);
	unwinder__free(unwinder);
	loader__free(loader);
	symbolizer__free(sym);
	if (lfd >= 0)
		close(lfd);
	if (sfd >= 0)
		close(sfd);
	return ret;
}
