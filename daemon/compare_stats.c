// SPDX-License-Identifier: GPL-2.0-only
/* The statistics of tailprof compare (compare_stats.h). */
#include "compare_stats.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "histogram.h"
#include "tp_hist.h"

/* ---- random numbers ---- */

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void cmp_rng__seed(struct cmp_rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t cmp_rng__next(struct cmp_rng *r)
{
	uint64_t *s = r->s, out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return out;
}

uint32_t cmp_rng__below(struct cmp_rng *r, uint32_t n)
{
	return (uint32_t)(((cmp_rng__next(r) >> 32) * (uint64_t)n) >> 32);
}

double cmp_rng__uniform(struct cmp_rng *r)
{
	return ((double)(cmp_rng__next(r) >> 11) + 0.5) / 9007199254740992.0; /* 2^53 */
}

/* ---- resampling plans ---- */

uint32_t cmp_block_len(uint32_t n)
{
	uint32_t b = 1;

	if (n < 3)
		return 1;
	while ((uint64_t)b * b * b < n)
		b++;
	return b;
}

int cmp_plan__init(struct cmp_plan *p, uint32_t n, uint32_t resamples, uint32_t block,
		   struct cmp_rng *rng)
{
	uint32_t *mult = NULL, cap = 0, used = 0;

	memset(p, 0, sizeof(*p));
	p->n = n;
	p->resamples = resamples;
	p->block = block ? block : 1;
	p->off = calloc((size_t)resamples + 1, sizeof(*p->off));
	if (!p->off)
		goto nomem;
	if (n) {
		mult = calloc(n, sizeof(*mult));
		/* distinct windows a resample: at most n, about (1 - 1/e) n for block 1 */
		cap = (uint32_t)((uint64_t)resamples * n < 1u << 20 ? (uint64_t)resamples * n
								    : 1u << 20);
		p->idx = malloc((size_t)cap * sizeof(*p->idx));
		p->wt = malloc((size_t)cap * sizeof(*p->wt));
		if (!mult || !p->idx || !p->wt)
			goto nomem;
	}
	for (uint32_t b = 0; b < resamples; b++) {
		uint32_t picked = 0;

		while (picked < n) {
			uint32_t s = cmp_rng__below(rng, n);

			for (uint32_t k = 0; k < p->block && picked < n; k++, picked++)
				mult[(s + k) % n]++;
		}
		if (used + n > cap) {
			uint64_t ncap = (uint64_t)cap * 2 > (uint64_t)used + n ? (uint64_t)cap * 2
									       : (uint64_t)used + n;
			uint32_t *ni, *nw;

			if (ncap > UINT32_MAX)
				goto nomem;
			ni = realloc(p->idx, ncap * sizeof(*ni));
			if (!ni)
				goto nomem;
			p->idx = ni;
			nw = realloc(p->wt, ncap * sizeof(*nw));
			if (!nw)
				goto nomem;
			p->wt = nw;
			cap = (uint32_t)ncap;
		}
		for (uint32_t i = 0; i < n; i++) {
			if (mult[i]) {
				p->idx[used] = i;
				p->wt[used++] = mult[i];
				mult[i] = 0;
			}
		}
		p->off[b + 1] = used;
	}
	free(mult);
	return 0;
nomem:
	free(mult);
	cmp_plan__free(p);
	return -ENOMEM;
}

void cmp_plan__free(struct cmp_plan *p)
{
	free(p->off);
	free(p->idx);
	free(p->wt);
	memset(p, 0, sizeof(*p));
}

/* ---- estimates ---- */

static int est_alloc(struct cmp_est *e, const struct cmp_plan *p)
{
	memset(e, 0, sizeof(*e));
	e->resamples = p->resamples;
	e->boot = malloc(((size_t)p->resamples + 1) * sizeof(*e->boot));
	e->per_window = malloc(((size_t)p->n + 1) * sizeof(*e->per_window));
	if (!e->boot || !e->per_window) {
		cmp_est__free(e);
		return -ENOMEM;
	}
	return 0;
}

void cmp_est__free(struct cmp_est *e)
{
	if (!e)
		return;
	free(e->boot);
	free(e->per_window);
	e->boot = e->per_window = NULL;
}

int cmp_est__ratio(struct cmp_est *e, const struct cmp_plan *p, const double *num,
		   const double *den)
{
	double sn = 0, sd = 0;

	if (est_alloc(e, p))
		return -ENOMEM;
	for (uint32_t i = 0; i < p->n; i++) {
		sn += num[i];
		sd += den[i];
		if (den[i] > 0)
			e->per_window[e->n_values++] = num[i] / den[i];
	}
	e->value = sd > 0 ? sn / sd : NAN;
	for (uint32_t b = 0; b < p->resamples; b++) {
		sn = sd = 0;
		for (uint32_t k = p->off[b]; k < p->off[b + 1]; k++) {
			sn += num[p->idx[k]] * p->wt[k];
			sd += den[p->idx[k]] * p->wt[k];
		}
		e->boot[b] = sd > 0 ? sn / sd : NAN;
	}
	return 0;
}

int cmp_est__max(struct cmp_est *e, const struct cmp_plan *p, const double *v)
{
	double m = NAN;

	if (est_alloc(e, p))
		return -ENOMEM;
	for (uint32_t i = 0; i < p->n; i++) {
		m = i == 0 || v[i] > m ? v[i] : m;
		e->per_window[e->n_values++] = v[i];
	}
	e->value = m;
	for (uint32_t b = 0; b < p->resamples; b++) {
		m = NAN;
		for (uint32_t k = p->off[b]; k < p->off[b + 1]; k++)
			m = k == p->off[b] || v[p->idx[k]] > m ? v[p->idx[k]] : m;
		e->boot[b] = m;
	}
	return 0;
}

/* The side's buckets in use, and each window's cumulative counts over them. */
struct cum_table {
	uint32_t nu; /* buckets in use, ascending in u[] */
	uint32_t *u;
	uint64_t *cum; /* [n][nu]: window i's values in buckets <= u[j] */
};

static int cum_build(struct cum_table *t, const struct cmp_hist_win *w, uint32_t n)
{
	uint8_t *used = calloc(TP_HIST_BUCKETS, 1);

	memset(t, 0, sizeof(*t));
	if (!used)
		goto nomem;
	for (uint32_t i = 0; i < n; i++)
		for (uint32_t c = 0; c < w[i].nr_cells; c++)
			if (w[i].cells[c].bucket < TP_HIST_BUCKETS)
				used[w[i].cells[c].bucket] = 1;
	for (uint32_t b = 0; b < TP_HIST_BUCKETS; b++)
		t->nu += used[b];
	t->u = malloc(((size_t)t->nu + 1) * sizeof(*t->u));
	t->cum = calloc((size_t)n * t->nu + 1, sizeof(*t->cum));
	if (!t->u || !t->cum)
		goto nomem;
	for (uint32_t b = 0, j = 0; b < TP_HIST_BUCKETS; b++)
		if (used[b])
			t->u[j++] = b;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t *row = t->cum + (size_t)i * t->nu, acc = 0;
		uint32_t c = 0;

		for (uint32_t j = 0; j < t->nu; j++) {
			while (c < w[i].nr_cells && w[i].cells[c].bucket <= t->u[j])
				acc += w[i].cells[c++].count;
			row[j] = acc;
		}
	}
	free(used);
	return 0;
nomem:
	free(used);
	free(t->u);
	free(t->cum);
	return -ENOMEM;
}

/* The value of rank r among the windows idx[k] with weights wt[k] (k < m), capped at max_ns:
 * a binary search for the first bucket whose weighted cumulative count reaches r. */
static double rank_value(const struct cum_table *t, const uint32_t *idx, const uint32_t *wt,
			 uint32_t m, uint64_t r, uint64_t max_ns)
{
	uint32_t lo = 0, hi = t->nu - 1;
	uint64_t v;

	if (!t->nu)
		return NAN;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		uint64_t c = 0;

		for (uint32_t k = 0; k < m; k++)
			c += t->cum[(size_t)idx[k] * t->nu + mid] * (wt ? wt[k] : 1);
		if (c >= r)
			hi = mid;
		else
			lo = mid + 1;
	}
	v = t->u[lo] == TP_HIST_OVERFLOW ? max_ns : tp_hist_value(t->u[lo]);
	return (double)(v < max_ns || !max_ns ? v : max_ns);
}

int cmp_est__quantiles(struct cmp_est *e, const struct cmp_plan *p, const struct cmp_hist_win *w,
		       const uint32_t *q_permille, uint32_t nq)
{
	struct cum_table t;
	uint32_t *all = NULL;
	uint64_t count = 0, max_ns = 0;

	for (uint32_t j = 0; j < nq; j++)
		memset(&e[j], 0, sizeof(e[j]));
	if (cum_build(&t, w, p->n))
		return -ENOMEM;
	all = malloc(((size_t)p->n + 1) * sizeof(*all));
	if (!all)
		goto nomem;
	for (uint32_t j = 0; j < nq; j++)
		if (est_alloc(&e[j], p))
			goto nomem;
	for (uint32_t i = 0; i < p->n; i++) {
		all[i] = i;
		count += w[i].count;
		max_ns = w[i].max_ns > max_ns ? w[i].max_ns : max_ns;
		if (!w[i].count)
			continue;
		for (uint32_t j = 0; j < nq; j++)
			e[j].per_window[e[j].n_values++] =
			    rank_value(&t, &all[i], NULL, 1,
				       histogram__rank(w[i].count, q_permille[j]), w[i].max_ns);
	}
	for (uint32_t j = 0; j < nq; j++) {
		e[j].value = count ? rank_value(&t, all, NULL, p->n,
						histogram__rank(count, q_permille[j]), max_ns)
				   : NAN;
		if (isfinite(e[j].value)) {
			uint32_t bk = tp_hist_bucket((uint64_t)e[j].value);

			e[j].widen = (double)tp_hist_width(
			    bk < TP_HIST_OVERFLOW ? bk : TP_HIST_OVERFLOW - 1);
		}
	}
	for (uint32_t b = 0; b < p->resamples; b++) {
		const uint32_t *idx = p->idx + p->off[b], *wt = p->wt + p->off[b];
		uint32_t m = p->off[b + 1] - p->off[b];

		count = max_ns = 0;
		for (uint32_t k = 0; k < m; k++) {
			count += w[idx[k]].count * wt[k];
			max_ns = w[idx[k]].max_ns > max_ns ? w[idx[k]].max_ns : max_ns;
		}
		for (uint32_t j = 0; j < nq; j++)
			e[j].boot[b] =
			    count ? rank_value(&t, idx, wt, m,
					       histogram__rank(count, q_permille[j]), max_ns)
				  : NAN;
	}
	free(all);
	free(t.u);
	free(t.cum);
	return 0;
nomem:
	free(all);
	free(t.u);
	free(t.cum);
	for (uint32_t j = 0; j < nq; j++)
		cmp_est__free(&e[j]);
	return -ENOMEM;
}

/* ---- the rank test ---- */

struct ranked {
	double v;
	uint32_t side; /* 0: x, 1: y */
};

static int cmp_ranked(const void *a, const void *b)
{
	double x = ((const struct ranked *)a)->v, y = ((const struct ranked *)b)->v;

	return x < y ? -1 : x > y;
}

static uint64_t sum_r2(const uint32_t *r2, uint32_t n)
{
	uint64_t s = 0;

	for (uint32_t i = 0; i < n; i++)
		s += r2[i];
	return s;
}

/* The exact two-sided p of the rank sum of x: the share of the C(N, nx) ways to pick nx of the
 * N doubled mid-ranks r2[] whose sum lies at least as far from its mean as t2 does. */
static double exact_p(const uint32_t *r2, uint32_t N, uint32_t nx, uint64_t t2)
{
	uint64_t smax = sum_r2(r2, N), mean2 = (uint64_t)nx * (N + 1), dev;
	double *dp, hit = 0, total = 0;

	dp = calloc((size_t)(nx + 1) * (smax + 1), sizeof(*dp));
	if (!dp)
		return NAN;
	dp[0] = 1;
	for (uint32_t i = 0; i < N; i++)
		for (uint32_t k = i + 1 < nx ? i + 1 : nx; k >= 1; k--)
			for (uint64_t s = smax; s >= r2[i]; s--)
				dp[k * (smax + 1) + s] += dp[(k - 1) * (smax + 1) + s - r2[i]];
	dev = t2 > mean2 ? t2 - mean2 : mean2 - t2;
	for (uint64_t s = 0; s <= smax; s++) {
		double c = dp[(size_t)nx * (smax + 1) + s];
		uint64_t d = s > mean2 ? s - mean2 : mean2 - s;

		total += c;
		if (d >= dev)
			hit += c;
	}
	free(dp);
	return total > 0 ? hit / total : 1;
}

double cmp_mann_whitney(const double *x, uint32_t nx, const double *y, uint32_t ny)
{
	uint32_t N = nx + ny, *r2;
	struct ranked *v;
	double ties = 0, p = NAN;
	uint64_t t2 = 0;

	if (!nx || !ny)
		return 1;
	v = malloc(N * sizeof(*v));
	r2 = malloc(N * sizeof(*r2));
	if (!v || !r2) {
		free(v);
		free(r2);
		return NAN;
	}
	for (uint32_t i = 0; i < nx; i++)
		v[i] = (struct ranked){x[i], 0};
	for (uint32_t i = 0; i < ny; i++)
		v[nx + i] = (struct ranked){y[i], 1};
	qsort(v, N, sizeof(*v), cmp_ranked);
	/* doubled mid-ranks: a run of equal values over ranks i+1 .. j gets i + 1 + j */
	for (uint32_t i = 0, j; i < N; i = j) {
		for (j = i + 1; j < N && v[j].v == v[i].v; j++)
			;
		for (uint32_t k = i; k < j; k++) {
			r2[k] = i + 1 + j;
			if (!v[k].side)
				t2 += r2[k];
		}
		ties += ((double)(j - i) * (j - i) * (j - i)) - (j - i);
	}
	if (ties >= (double)N * N * N - N) {
		p = 1; /* every value ties */
	} else if (N <= CMP_EXACT_MAX) {
		/* the distribution of the smaller side's sum is the smaller table */
		p = nx <= ny ? exact_p(r2, N, nx, t2) : exact_p(r2, N, ny, sum_r2(r2, N) - t2);
	}
	if (isnan(p)) {
		/* U of x = R - nx (nx + 1) / 2, mean nx ny / 2; tie-corrected variance
		 * nx ny / 12 * ((N + 1) - sum(t^3 - t) / (N (N - 1))) */
		double u = (double)t2 / 2 - (double)nx * (nx + 1) / 2, mu = (double)nx * ny / 2;
		double var = (double)nx * ny / 12 * ((N + 1) - ties / ((double)N * (N - 1)));
		double z = var > 0 ? (fabs(u - mu) - 0.5) / sqrt(var) : 0;

		p = var > 0 ? erfc((z > 0 ? z : 0) / M_SQRT2) : 1;
	}
	free(v);
	free(r2);
	return p < 0 ? 0 : p > 1 ? 1 : p;
}

/* ---- comparison and verdicts ---- */

const char *cmp_verdict_name(enum cmp_verdict v)
{
	static const char *const names[] = {"inconclusive", "unchanged", "improved", "regressed"};

	return (unsigned)v < 4 ? names[v] : "inconclusive";
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The q-quantile (0..1) of sorted v[n] by linear interpolation between order statistics. */
static double quantile_sorted(const double *v, uint32_t n, double q)
{
	double h = q * (n - 1);
	uint32_t i = (uint32_t)h;

	if (!n)
		return NAN;
	if (i + 1 >= n)
		return v[n - 1];
	return v[i] + (h - i) * (v[i + 1] - v[i]);
}

/* The finite values of v[n], sorted, into out; returns how many. */
static uint32_t sorted_finite(const double *v, uint32_t n, double *out)
{
	uint32_t m = 0;

	for (uint32_t i = 0; i < n; i++)
		if (isfinite(v[i]))
			out[m++] = v[i];
	qsort(out, m, sizeof(*out), cmp_double);
	return m;
}

static double half_width(const double *boot, uint32_t n, double *tmp)
{
	uint32_t m = sorted_finite(boot, n, tmp);
	double a = (1 - CMP_CONFIDENCE) / 2;

	/* at least half the resamples must be defined for an interval to mean anything */
	if (m < n / 2 || !m)
		return NAN;
	return (quantile_sorted(tmp, m, 1 - a) - quantile_sorted(tmp, m, a)) / 2;
}

int cmp_diff(const struct cmp_est *before, const struct cmp_est *after, struct cmp_result *r)
{
	uint32_t n = before->resamples < after->resamples ? before->resamples : after->resamples;
	double *d = malloc(((size_t)n + 1) * sizeof(*d)),
	       *tmp = malloc(((size_t)n + 1) * sizeof(*tmp));
	double a = (1 - CMP_CONFIDENCE) / 2, widen;
	uint32_t m;

	memset(r, 0, sizeof(*r));
	if (!d || !tmp) {
		free(d);
		free(tmp);
		return -ENOMEM;
	}
	r->before = before->value;
	r->after = after->value;
	r->diff = after->value - before->value;
	r->n_before = before->n_values;
	r->n_after = after->n_values;
	for (uint32_t b = 0; b < n; b++)
		d[b] = after->boot[b] - before->boot[b];
	m = sorted_finite(d, n, tmp);
	widen = before->widen > after->widen ? before->widen : after->widen;
	if (m >= n / 2 && m) {
		r->ci_low = quantile_sorted(tmp, m, a) - widen;
		r->ci_high = quantile_sorted(tmp, m, 1 - a) + widen;
	} else {
		r->ci_low = r->ci_high = NAN;
	}
	r->before_spread = half_width(before->boot, n, tmp);
	r->after_spread = half_width(after->boot, n, tmp);
	r->p_value = before->n_values && after->n_values
			 ? cmp_mann_whitney(before->per_window, before->n_values, after->per_window,
					    after->n_values)
			 : NAN;
	free(d);
	free(tmp);
	return 0;
}

struct p_ref {
	double p;
	struct cmp_result *r;
};

static int cmp_p_ref(const void *a, const void *b)
{
	double x = ((const struct p_ref *)a)->p, y = ((const struct p_ref *)b)->p;

	return x < y ? -1 : x > y;
}

void cmp_fdr(struct cmp_result *const *r, size_t n, double alpha)
{
	struct p_ref *v = malloc((n + 1) * sizeof(*v));
	size_t m = 0, k = 0;

	for (size_t i = 0; i < n; i++)
		r[i]->significant = false;
	if (!v)
		return; /* nothing is discovered: the safe side */
	for (size_t i = 0; i < n; i++)
		if (!isnan(r[i]->p_value))
			v[m++] = (struct p_ref){r[i]->p_value, r[i]};
	qsort(v, m, sizeof(*v), cmp_p_ref);
	/* the largest k with p_(k) <= k / m * alpha; p_(1) .. p_(k) are discoveries */
	for (size_t i = 0; i < m; i++)
		if (v[i].p <= (double)(i + 1) / m * alpha)
			k = i + 1;
	for (size_t i = 0; i < k; i++)
		v[i].r->significant = true;
	free(v);
}

void cmp_decide(struct cmp_result *r, enum cmp_worse worse, double min_effect, double floor_abs)
{
	double thr = fabs(r->before) * min_effect, ad = fabs(r->diff), hw, target, need;
	uint32_t n = r->n_before < r->n_after ? r->n_before : r->n_after;

	if (thr < floor_abs || isnan(thr))
		thr = floor_abs;
	r->min_effect = thr;
	r->verdict = CMP_INCONCLUSIVE;
	r->windows_needed = 0;
	r->reason = NULL;
	if (!r->n_before || !r->n_after || isnan(r->before) || isnan(r->after)) {
		r->reason =
		    !r->n_before || isnan(r->before) ? "no values before" : "no values after";
		return;
	}
	if (n < CMP_MIN_WINDOWS) {
		r->reason = "fewer than 6 windows with values on a side";
		r->windows_needed = CMP_MIN_WINDOWS;
		return;
	}
	if (isnan(r->ci_low) || isnan(r->ci_high)) {
		r->reason = "too few resamples had values";
		return;
	}
	if ((r->ci_low > 0 || r->ci_high < 0) && r->significant && ad >= thr && ad > 0) {
		bool up = r->diff > 0;

		r->verdict = up == (worse == CMP_WORSE_UP) ? CMP_REGRESSED : CMP_IMPROVED;
		return;
	}
	if (r->ci_low >= -thr && r->ci_high <= thr) {
		r->verdict = CMP_UNCHANGED;
		return;
	}
	/* The interval's half-width shrinks as 1 / sqrt(windows): to exclude 0 it must fall below
	 * |diff| (a change at least the minimum effect), to fit within +-thr below thr - |diff|. */
	hw = (r->ci_high - r->ci_low) / 2;
	target = ad >= thr && ad > 0 ? ad : thr - ad;
	if (target <= 0 || hw <= 0) {
		r->windows_needed = CMP_WINDOWS_NEEDED_MAX;
		return;
	}
	need = ceil(n * (hw / target) * (hw / target));
	if (need <= n)
		need = n + 1;
	r->windows_needed = need > CMP_WINDOWS_NEEDED_MAX ? CMP_WINDOWS_NEEDED_MAX : (uint32_t)need;
}
