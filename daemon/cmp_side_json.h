/* SPDX-License-Identifier: GPL-2.0-only */
/* A comparison side (cmp_side.h) as JSON text, the body of a snapshot (snapshots.h): written
 * compact, read back trusting nothing of it. Format 1:
 *
 *   {"format": 1,
 *    "conditions": {"host", "kernel", "version", "snapshot": strings; "frequency_hz",
 *                   "sample_period_ns", "window_ns", "from_unix_ns", "to_unix_ns",
 *                   "saved_unix_ns": integers},
 *    "strings": [string, ...],
 *    "stacks": [[string index, ...] (leaf first), ...],
 *    "windows": [{"start_unix_ns", "end_unix_ns", "cpu_samples", "offcpu_ns", "offcpu_samples",
 *                 "runq_count", "runq_sum_ns", "runq_max_ns", "gc_count", "gc_pause_ns",
 *                 "gc_max_ns", "drops": integers,
 *                 "runq_cells": [bucket, count, bucket, count, ...],
 *                 "stages": [{"name": string index, "count", "sum_ns", "max_ns", "cpu_samples",
 *                             "offcpu_ns": integers, "cells": [bucket, count, ...]}, ...],
 *                 "stacks": [stack index, samples, stack index, samples, ...]}, ...]}
 *
 * Every key is required; keys a reader does not know are ignored (a later writer may add some
 * without changing the format); a change a format-1 reader would misread bumps "format". Strings
 * that are not UTF-8 (a function name is any bytes an ELF file holds) are written with '?' for
 * each invalid byte. */
#ifndef TAILPROF_CMP_SIDE_JSON_H
#define TAILPROF_CMP_SIDE_JSON_H

#include <stddef.h>

#include "cmp_side.h"

#define CMP_SIDE_JSON_FORMAT 1

/* What a reader accepts at most (a hostile text is refused before it costs memory beyond its
 * own size): windows a side, strings and stacks a side, frames a stack, stages a window, stack
 * counts a window; a histogram has at most TP_HIST_BUCKETS cells. */
#define CMP_SIDE_JSON_MAX_WINDOWS 100000
#define CMP_SIDE_JSON_MAX_STRINGS 1000000
#define CMP_SIDE_JSON_MAX_STACKS  1000000
#define CMP_SIDE_JSON_MAX_FRAMES  4096
#define CMP_SIDE_JSON_MAX_STAGES  4096

/* Writes side as compact JSON text: *out malloc'd and NUL-terminated (the caller frees). Returns
 * 0, -EINVAL (side is not cmp_side__valid), -E2BIG (it holds more than a reader accepts: the caps
 * above), -ERANGE (a counter above INT64_MAX, which the JSON integers here cannot hold), each
 * with why (whylen bytes) saying what, or -ENOMEM. */
int cmp_side__to_json(const struct cmp_side *side, char **out, char *why, size_t whylen);

/* Reads a side from text[0..len) (NUL not needed), checking every type, range and index, the
 * caps above, and then cmp_side__valid. Returns 0 and *out (free with cmp_side__free), or with
 * *out NULL: -EPROTONOSUPPORT ("format" newer than CMP_SIDE_JSON_FORMAT), -EBADMSG (anything
 * else wrong) with why (whylen bytes) naming the problem and where ("windows[3].stages[0].cells:
 * ..."), or -ENOMEM. */
int cmp_side__from_json(const char *text, size_t len, struct cmp_side **out, char *why,
			size_t whylen);

#endif
