/* SPDX-License-Identifier: GPL-2.0-only */
/* The features report: for each capability tailprofd decides at start-up (CPU sampling, the
 * .eh_frame unwinder, off-CPU, run-queue latency, ...), whether it runs, which variant runs and
 * why it is off or why a fallback was chosen. The loader, the stage and GC probes and main fill
 * it in while they probe the kernel and load their objects; the status, /metrics, the start-up
 * log and `tailprofd --check` read it. Also the test switch TAILPROF_FEATURES_OFF.
 *
 * Filled in before the HTTP server starts, read-only after: no locking. */
#ifndef TAILPROF_FEATURE_TABLE_H
#define TAILPROF_FEATURE_TABLE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

enum feature_id {
	FEATURE_CPU_SAMPLING,	 /* perf_event program on cpu-clock; required */
	FEATURE_EH_FRAME,	 /* the .eh_frame table unwinder; else frame pointers */
	FEATURE_OFFCPU,		 /* off-CPU capture (the scheduler object) */
	FEATURE_RUNQ,		 /* run-queue latency (the same object) */
	FEATURE_TASK_WORK,	 /* user stacks of unpredicted captures: task work, or sys_exit */
	FEATURE_STAGES,		 /* uprobes and USDT probes of configured stages */
	FEATURE_USDT_SEMAPHORES, /* the kernel sets USDT semaphores (uprobe ref_ctr_offset) */
	FEATURE_GC,		 /* GC pauses (the GC object) */
	FEATURE_BPF_STATS,	 /* BPF_ENABLE_STATS, for the self-overhead figures */
	FEATURE_REQUEST_ACCT,	 /* slow spans' exact CPU and run-queue time; else from samples */
	FEATURE_PYTHON_FRAMES,	 /* CPython frames walked in BPF; else native frames only */
	FEATURE_MMAP_RECORDS,	 /* new processes' maps from perf mmap records; else /proc */
	FEATURE_NR,
};

/* How a reason that a failed load gave ends: `tailprofd --check` prints the load's log (its own
 * table says "; more below" in its place). */
#define FEATURE_CHECK_MORE "; tailprofd --check prints more"

/* The length of reason without the ending FEATURE_CHECK_MORE; *more: whether it had it. */
size_t features__without_check_more(const char *reason, bool *more);

/* The reason of a capability turned off by TAILPROF_FEATURES_OFF. */
#define FEATURE_FORCED_OFF "forced off by TAILPROF_FEATURES_OFF (tests)"

struct feature {
	const char *name; /* the JSON key and metric label, e.g. "offcpu" */
	bool enabled;	  /* it runs, by its preferred variant or a fallback */
	bool quiet; /* off (or a fallback) on request (a flag, the config, the test switch) or as
		       another capability's consequence: logged at info, not as a warning */
	char variant[40]; /* what runs, e.g. "tp_btf/sched_switch"; "" when nothing does */
	char reason[400]; /* why it is off or a fallback runs; "" when on as preferred */
	/* A load that failed for a reason no probe found (a verifier rejection, a libbpf error):
	 * `tailprofd --check` exits 1 and prints it. */
	bool load_failed;
	bool verifier;	       /* log is the verifier's, else libbpf's own messages */
	char object[32];       /* e.g. "sched_bpf" */
	char program[64];      /* the program libbpf named, "" if none; after a fallback of the same
				* object failed too, "FIRST, then SECOND" (cut to fit) */
	char *log;	       /* its last lines, '\n'-separated; NULL when none; after several
				* failures each one's under a line "[PROGRAM]" */
	uint32_t failures;     /* load failures recorded in these fields */
	char last_program[64]; /* the last one's program */
};

/* A table with every capability off, reason "not probed". Aborts on ENOMEM (small, fixed). */
struct features *features__new(void);
/* Frees. NULL allowed. */
void features__free(struct features *f);

/* Reads the test switches: off, a comma-separated list of capabilities whose preferred variant
 * is forced off (TAILPROF_FEATURES_OFF: eh_frame_unwinding, offcpu, runq_latency, task_work,
 * stages, gc, bpf_stats, request_accounting, python_frames, mmap_records; offcpu and runq_latency
 * go together, one object serves both), and sched_return (TAILPROF_SCHED_RETURN: "sys_exit", the
 * older alias of task_work). Either may be NULL. Returns 0, or -EINVAL after writing into err (len
 * bytes) a sentence naming the bad value and the names allowed. */
int features__parse_off(struct features *f, const char *off, const char *sched_return, char *err,
			size_t len);
/* Whether a test switch forced capability id's preferred variant off. false for NULL f. */
bool features__forced_off(const struct features *f, enum feature_id id);
/* The reason that goes with features__forced_off(): names the switch that was given. */
const char *features__forced_reason(const struct features *f, enum feature_id id);

/* Sets capability id: whether it runs, the variant that runs ("" for none) and why it is off or
 * a fallback was chosen (printf format; NULL or "" when it runs as preferred). NULL f: nothing.
 */
void features__set(struct features *f, enum feature_id id, bool enabled, const char *variant,
		   const char *reason, ...) __attribute__((format(printf, 5, 6)));
/* Marks capability id's state as asked for (a flag, the config, the test switch) or following
 * from another capability's: the start-up log says it at info. Call after features__set(). */
void features__set_quiet(struct features *f, enum feature_id id);
/* Records a load failure of capability id: the object, the program libbpf named (may be "" or
 * NULL) and the last lines libbpf gave (verifier: its log; may be NULL). Copies the strings;
 * leaves enabled, variant and reason as they are. A failure of the same object by another
 * program than the last one recorded (a fallback refused too: task_work's sched_switch_tw, then
 * sched_return) is added to the record, each log under its program's name; else the record is
 * replaced. NULL f: nothing. */
void features__set_load_failure(struct features *f, enum feature_id id, const char *object,
				const char *program, bool verifier, const char *log);
/* Capability id. */
const struct feature *features__get(const struct features *f, enum feature_id id);
/* Whether any capability that is off records a load failure (--check exits 1). One that runs by
 * a fallback doing the same job after a load failure (task_work on sys_exit) does not count. */
bool features__any_load_failed(const struct features *f);

/* The status object: {"NAME": {"enabled": bool, "variant": "...", "reason": "..."}, ...}, every
 * capability in enum order. A new reference; NULL on ENOMEM. */
json_t *features__json(const struct features *f);
/* tailprof_feature_enabled{feature="NAME"} 0|1 with its HELP and TYPE lines (Prometheus text
 * 0.0.4). malloc'd; NULL on ENOMEM. */
char *features__metrics_text(const struct features *f);
/* One log line per capability: info when it runs or was turned off on request, a warning when
 * it is off otherwise. */
void features__log(const struct features *f);
/* The --check report: a header and one line per capability (NAME, on/off, variant, reason), then
 * each load failure once per object and program with its last lines. */
void features__print(const struct features *f, FILE *out);

#endif
