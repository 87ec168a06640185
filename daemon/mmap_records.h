/* SPDX-License-Identifier: GPL-2.0-only */
/* The executable mappings of new processes as the kernel announces them (perf's
 * PERF_RECORD_MMAP2, COMM and FORK records of a software dummy event on each CPU), so that a
 * process started after tailprofd is known without reading /proc/PID/maps, even after it exited.
 * docs/symbolization.md explains the rules; proc_maps__load() asks here first. */
#ifndef TAILPROF_MMAP_RECORDS_H
#define TAILPROF_MMAP_RECORDS_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proc_maps.h"

struct mmap_records;

/* Most executable mappings kept for one process: past it, its table is dropped and its maps
 * come from /proc (a JIT mapping code page by page). */
#define MMAP_RECORDS_MAX_PER_PROCESS 4096
/* How long a process's table stays after its exit record (ns): its last samples are symbolized
 * at the drains after it exited. The records' clock is CLOCK_BOOTTIME, the clock of a process's
 * start time (task->start_boottime) as BPF gives it. */
#define MMAP_RECORDS_EXITED_KEEP_NS (10ULL * 1000 * 1000 * 1000)

/* Opens a dummy software event on each CPU with online[cpu] set (nr_cpus of them; NULL online:
 * none, for tests that feed records with mmap_records__apply()), each with a ring of 2^order
 * pages (a few records a process started: 16 pages hold some 500). Returns the object, or NULL
 * with errno set (EACCES/EPERM without CAP_PERFMON, ENOMEM). */
struct mmap_records *mmap_records__new(uint32_t nr_cpus, const uint8_t *online, unsigned order);
void mmap_records__free(struct mmap_records *r);

/* Opens the CPUs of online[] that have no event yet and closes those gone offline. A CPU
 * opened now missed its records until now: every table is dropped (those processes' maps come
 * from /proc). Returns the number of CPUs with an event. */
int mmap_records__sync_cpus(struct mmap_records *r, const uint8_t *online);

/* Takes every record in the rings into the tables, in time order across CPUs, and ages the
 * exited processes' tables out. Thread-safe. */
void mmap_records__drain(struct mmap_records *r);

/* Takes one record (its header and body, with the sample_id of PERF_SAMPLE_TID and
 * PERF_SAMPLE_TIME last) into the tables. For the drain and for tests. */
void mmap_records__apply(struct mmap_records *r, const struct perf_event_header *h);

/* The executable mappings of process pid since its exec (or its fork from a process so known)
 * into *out (empty; the caller's to clear), sorted by start, as proc_maps__load() gives them
 * from /proc: at most max_mappings. start_ns 0: of the live process pid; else of the process
 * that started then (CLOCK_BOOTTIME ns, task->start_boottime), live or exited less than
 * MMAP_RECORDS_EXITED_KEEP_NS ago (its last samples come after its exit). Drains the rings
 * first. Returns the number of mappings, -ENOENT when the records do not know the whole of
 * that process's mappings (started before tailprofd, records lost, a forked child of such a
 * process that has not exec'd, or pid now another process: read /proc), -EFBIG past
 * max_mappings, or -ENOMEM. Thread-safe. */
int mmap_records__maps(struct mmap_records *r, uint32_t pid, uint64_t start_ns, size_t max_mappings,
		       struct proc_maps *out);

/* How long after a process's start time its fork record may be written (ns): copy_process()
 * writes it at its end, microseconds after it set the start time; a pid that passed to another
 * process meanwhile would have another fork record, later. */
#define MMAP_RECORDS_FORK_SLACK_NS (100ULL * 1000 * 1000)

/* Whether pid is, by the records, the live process that started at start_ns (CLOCK_BOOTTIME,
 * task->start_boottime): its fork record came within MMAP_RECORDS_FORK_SLACK_NS after it and no
 * exit record since. Drains the rings first. 1 yes, 0 the records cannot tell (ask elsewhere).
 * Thread-safe. */
int mmap_records__is_process(struct mmap_records *r, uint32_t pid, uint64_t start_ns);

struct mmap_records_stats {
	uint64_t served;	/* maps given by mmap_records__maps() */
	uint64_t served_exited; /* of them, of a process that had exited */
	uint64_t identities;	/* mmap_records__is_process() answers yes */
	uint64_t records;	/* MMAP2 records taken */
	uint64_t lost;	    /* records the kernel could not write (a full ring): tables dropped */
	uint64_t processes; /* tables held now */
	uint32_t cpus;	    /* CPUs with an event */
	bool incomplete;    /* an online CPU has none: no maps are served */
};
void mmap_records__stats(struct mmap_records *r, struct mmap_records_stats *st);

#endif
