/* SPDX-License-Identifier: GPL-2.0-only */
/* The statistics of tailprof compare: a cluster (circular block) bootstrap over windows, the
 * Mann-Whitney rank test over per-window values, Benjamini-Hochberg over a report's tests, and
 * the verdict rule. Pure: no daemon state, deterministic for a seed. docs/compare.md explains the
 * method and why the unit is the window, not the request.
 *
 * A metric of a side is a function of its windows: a percentile of their merged histograms, a
 * ratio of sums (a mean is sum over count, a rate count over seconds, a share part over whole),
 * or a maximum. Resampling whole windows keeps what requests of one window share (the same
 * load, the same noisy neighbour, the same GC), so the interval is honest where requests are
 * not independent; resampling runs of `block` consecutive windows keeps an effect that spans
 * windows (a burst every 8 s in 10 s windows) together. */
#ifndef TAILPROF_COMPARE_STATS_H
#define TAILPROF_COMPARE_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stages.h" /* struct hist_cell */

#define CMP_RESAMPLES	       2000 /* bootstrap resamples a side, at least */
#define CMP_CONFIDENCE	       0.95 /* of every interval */
#define CMP_MIN_WINDOWS	       6    /* values a side below which a metric is inconclusive */
#define CMP_EXACT_MAX	       40   /* the rank test is exact up to this many values in all */
#define CMP_MIN_EFFECT	       0.02 /* default minimum effect, a fraction of the before value */
#define CMP_ALPHA	       0.05 /* default false discovery rate */
#define CMP_WINDOWS_NEEDED_MAX 1000000

/* xoshiro256** seeded through splitmix64 (Blackman and Vigna, "Scrambled linear pseudorandom
 * number generators", 2021): fast, and the same sequence on every machine for a seed. */
struct cmp_rng {
	uint64_t s[4];
};
void cmp_rng__seed(struct cmp_rng *r, uint64_t seed);
uint64_t cmp_rng__next(struct cmp_rng *r);
/* Uniform in [0, n), n > 0 (Lemire's multiply-shift; bias below 2^-32 for n < 2^32). */
uint32_t cmp_rng__below(struct cmp_rng *r, uint32_t n);
/* Uniform in (0, 1). */
double cmp_rng__uniform(struct cmp_rng *r);

/* The block length for n windows: ceil(cbrt(n)) (the usual order for block bootstraps, Hall,
 * Horowitz and Jing 1995), 1 for n < 3. */
uint32_t cmp_block_len(uint32_t n);

/* The resamples of one side: resample b picks n windows as ceil(n / block) circular runs of
 * `block` windows from uniform starts (Politis and Romano's circular block bootstrap, cut to n),
 * stored as its distinct windows idx[off[b] .. off[b+1]) and their multiplicities wt[...]. */
struct cmp_plan {
	uint32_t n, resamples, block;
	uint32_t *off; /* [resamples + 1] */
	uint32_t *idx, *wt;
};

/* Draws p's resamples of n windows (n may be 0: every resample empty). Returns 0 or -ENOMEM. */
int cmp_plan__init(struct cmp_plan *p, uint32_t n, uint32_t resamples, uint32_t block,
		   struct cmp_rng *rng);
void cmp_plan__free(struct cmp_plan *p);

/* One metric of one side: its value over all windows, its value in each resample, and the
 * per-window values the rank test compares. NAN where undefined (no requests, no seconds). */
struct cmp_est {
	double value;
	double *boot;	    /* [plan->resamples] */
	double *per_window; /* [n_values] the windows where the metric is defined, in order */
	uint32_t n_values;
	double widen; /* the measurement's own error at value: a histogram bucket's width
		       * for percentiles, 0 for exact metrics */
	uint32_t resamples;
};

/* One window's histogram for percentiles: cells sorted by bucket, summing to count; max the
 * exact maximum (the value of the overflow bucket and the cap of every percentile). */
struct cmp_hist_win {
	const struct hist_cell *cells;
	uint32_t nr_cells;
	uint64_t count, max_ns;
};

/* The ratio sum(num) / sum(den) over p's windows (num, den [p->n]); per-window values
 * num/den where den > 0. Returns 0 or -ENOMEM. */
int cmp_est__ratio(struct cmp_est *e, const struct cmp_plan *p, const double *num,
		   const double *den);
/* The maximum of v[p->n]; every window has a value. Returns 0 or -ENOMEM. */
int cmp_est__max(struct cmp_est *e, const struct cmp_plan *p, const double *v);
/* The q_permille[j]-th per-mille of the merged histograms of w[p->n], into e[j] for j < nq,
 * by histogram__percentile's rule (nearest rank, the bucket's midpoint, never above the
 * resample's maximum); per-window values from each window with requests. widen: the width of
 * the value's bucket. Returns 0 or -ENOMEM. */
int cmp_est__quantiles(struct cmp_est *e, const struct cmp_plan *p, const struct cmp_hist_win *w,
		       const uint32_t *q_permille, uint32_t nq);
/* Frees e's arrays. NULL allowed. */
void cmp_est__free(struct cmp_est *e);

/* The two-sided p-value of the Mann-Whitney U test between x[nx] and y[ny], mid-ranks for ties:
 * exact (the permutation distribution of the rank sum, ties included) when nx + ny <=
 * CMP_EXACT_MAX, else the normal approximation with the tie-corrected variance and a
 * continuity correction. 1 when every value ties or a side is empty; NAN when out of memory
 * (the caller treats the metric as untested). */
double cmp_mann_whitney(const double *x, uint32_t nx, const double *y, uint32_t ny);

enum cmp_verdict {
	CMP_INCONCLUSIVE = 0,
	CMP_UNCHANGED,
	CMP_IMPROVED,
	CMP_REGRESSED,
};
/* "inconclusive", "unchanged", "improved", "regressed" */
const char *cmp_verdict_name(enum cmp_verdict v);

/* Which way is worse. */
enum cmp_worse {
	CMP_WORSE_UP = 0, /* latency, CPU, off-CPU, run-queue, GC, drops, a function's share */
	CMP_WORSE_DOWN,	  /* request rate */
};

/* The comparison of one metric, after minus before. */
struct cmp_result {
	double before, after, diff; /* values over all windows */
	double ci_low, ci_high;	    /* the diff's interval, widened by the histogram error */
	double before_spread, after_spread; /* half-widths of each side's own interval */
	double p_value;			    /* NAN: not tested (a side without values) */
	uint32_t n_before, n_after;	    /* per-window values */
	double min_effect;		    /* the smallest change that counts, absolute */
	bool significant;		    /* cmp_fdr: discovered at the report's alpha */
	enum cmp_verdict verdict;
	uint32_t windows_needed; /* inconclusive: windows a side that would likely settle it */
	const char *reason;	 /* inconclusive for want of data: why (static text), else NULL */
};

/* Fills r's values, intervals and p-value from before and after (the same resample count):
 * diff's interval from the percentiles of the resamples' differences at CMP_CONFIDENCE, widened
 * at each end by the larger of the two sides' widen. Returns 0 or -ENOMEM. */
int cmp_diff(const struct cmp_est *before, const struct cmp_est *after, struct cmp_result *r);

/* Benjamini-Hochberg at alpha over the tested results (p_value not NAN) of r[0..n): sets
 * significant on the discoveries. The report calls it once over every metric it tests. */
void cmp_fdr(struct cmp_result *const *r, size_t n, double alpha);

/* Decides r's verdict (after cmp_fdr). The minimum effect is min_effect (a fraction) of |before|,
 * and never less than floor_abs (percentiles: one bucket's width at the before value).
 * improved/regressed: the interval excludes 0, significant, and |diff| >= the minimum effect;
 * unchanged: the interval lies within +- the minimum effect; else inconclusive, with
 * windows_needed. Fewer than CMP_MIN_WINDOWS values on a side: inconclusive with a reason. */
void cmp_decide(struct cmp_result *r, enum cmp_worse worse, double min_effect, double floor_abs);

#endif
