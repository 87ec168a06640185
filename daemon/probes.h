/* SPDX-License-Identifier: GPL-2.0-only */
/* Stage probes: loads bpf/stage.bpf.c once for its shared maps, then once more per configured
 * stage or USDT application (so that each one's BPF run time is its own), attaches uprobes,
 * uretprobes and USDT probes by binary path, and gives access to the shared maps. Like the
 * loader, the only place that touches the stage skeleton; it knows nothing of windows. */
#ifndef TAILPROF_PROBES_H
#define TAILPROF_PROBES_H

#include <stddef.h>
#include <stdint.h>

#include "tailprof.h"

struct features;

struct probes_opts {
	uint64_t slot_ns; /* the drain period: one histogram slot each (tailprof.h) */
	/* Filled in: stages (what the kernel lacks, or a stage object it rejects, turns stage
	 * probes off: probes__attach refuses) and usdt_semaphores; read: TAILPROF_FEATURES_OFF.
	 * NULL: neither. */
	struct features *features;
};

enum probe_kind {
	PROBE_FUNCTION, /* uprobe on entry + uretprobe, cookie = stage id */
	PROBE_USDT,	/* USDT begin/end pair, cookie = stage id */
	PROBE_APP,	/* tailprof:stage__begin/stage__end of include/tailprof/stage.h */
};

struct probe_spec {
	enum probe_kind kind;
	const char *binary;
	const char *function;		   /* PROBE_FUNCTION */
	const char *usdt_begin, *usdt_end; /* PROBE_USDT: "provider:name" */
	int pid;			   /* -1: every process, later ones included */
	uint32_t stage;			   /* PROBE_FUNCTION, PROBE_USDT */
};

struct probe_stats {
	uint64_t enter_cnt, exit_cnt; /* program runs (hits) */
	uint64_t run_time_ns;	      /* both programs, while BPF stats are enabled */
};

/* Loads the shared maps, then checks that the kernel has what stage probes need and that it
 * loads the stage programs (an instance loaded and freed). Returns NULL with errno set after
 * logging what failed (the maps; the programs only turn stages off). */
struct probes *probes__new(const struct probes_opts *opts);
/* Detaches every probe still attached and frees. NULL allowed. */
void probes__free(struct probes *p);

/* Attaches one stage or application. Returns the probe, or NULL with errno set and err (errlen
 * bytes) holding a sentence that names the binary, the symbol or probe and the problem: no such
 * file, no such function or USDT probe, a uretprobe on a Go binary (refused: Go moves goroutine
 * stacks, the return trampoline would corrupt them; use USDT), stage probes off (ENOTSUP: the
 * features report says why). */
struct probe *probes__attach(struct probes *p, const struct probe_spec *spec, char *err,
			     size_t errlen);
/* Detaches and frees. NULL allowed. */
void probe__detach(struct probe *pr);
/* Runs and run time of the probe's programs since it was attached. */
void probe__stats(const struct probe *pr, struct probe_stats *st);

/* The stage_stacks map (task storage) for the CPU sampler to read, and the spans ring buffer. */
int probes__stage_stacks_fd(const struct probes *p);
/* The label_sources map (bpf/lib/label_sources.bpf.h) of the stage programs, which the GC
 * programs and the loader share; 0 for NULL. */
int probes__label_sources_fd(const struct probes *p);
int probes__spans_fd(const struct probes *p);
/* The histograms, mapped: TP_STAGE_SLOTS * TP_MAX_STAGES of them (tailprof.h). BPF adds
 * concurrently: take them with atomic exchanges. */
struct tp_stage_hist *probes__hist(const struct probes *p);
/* Sets the slow-span threshold of stage id (0: no spans). 0 or -errno. */
int probes__set_slow_ns(struct probes *p, uint32_t id, uint64_t ns);
/* Gives name the id id for applications' stages too (a configured stage and an application's
 * stage of the same name are one stage). 0 or -errno. */
int probes__name_stage(struct probes *p, const char *name, uint32_t id);
/* Calls fn for every (name, id) in the BPF name table; returns how many. */
size_t probes__for_each_name(struct probes *p, void (*fn)(void *arg, const char *name, uint32_t id),
			     void *arg);
/* The stage programs' error counters (enum tp_stage_metric), since load. */
void probes__metrics(struct probes *p, uint64_t out[TP_SM_NR]);

/* Whether the ELF file at path is a Go program (.go.buildinfo section or runtime.main symbol):
 * 1, 0, or -errno when it cannot be read. */
int probes__is_go_binary(const char *path);

#endif
