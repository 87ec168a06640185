/* SPDX-License-Identifier: GPL-2.0-only */
/* The report of tailprof compare: every metric of two sides (cmp_side.h) compared with the
 * statistics of compare_stats.h, as the JSON docs/compare.md specifies. Pure: it reads the sides
 * only, so it runs without the collector's lock. */
#ifndef TAILPROF_COMPARE_H
#define TAILPROF_COMPARE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "cmp_side.h"

#define COMPARE_MAX_FUNCTIONS	 100   /* functions tested, the largest shares */
#define COMPARE_SHOWN_FUNCTIONS	 20    /* functions listed, besides every regressed one */
#define COMPARE_MIN_FUNCTION	 0.005 /* share on either side for a function to be tested */
#define COMPARE_LOAD_DIFFERS_PCT 10    /* request rates this far apart: "load_differs" */
/* Windows a side at most: beyond, consecutive windows are merged in runs (method.windows_merged)
 * so that a report takes about a second and tens of MB whatever the side's length */
#define COMPARE_MAX_WINDOWS 1024

struct compare_opts {
	double min_effect; /* the minimum effect, a fraction of the before value (0.02) */
	double alpha;	   /* the false discovery rate over the report (0.05) */
	uint64_t seed;	   /* the bootstrap's seed: the same seed, the same report */
	const char *stage; /* only this stage (totals and functions stay); NULL: all */
};

/* The report comparing after with before (both sides of windows oldest first). Returns a new
 * JSON object, or NULL with errno and err (errlen bytes) set: ENOENT (o->stage is in neither
 * side), ENOMEM. Takes some 0.1-1 s of CPU for an hour of 10 s windows a side (2,000 resamples of
 * every metric). */
json_t *compare__report(const struct cmp_side *before, const struct cmp_side *after,
			const struct compare_opts *o, char *err, size_t errlen);

#endif
