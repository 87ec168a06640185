// SPDX-License-Identifier: GPL-2.0-only
/* The report of tailprof compare (compare.h). */
#include "compare.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare_stats.h"
#include "hashmap.h"
#include "json_util.h"
#include "timeparse.h"
#include "tp_hist.h"

/* What one side holds for the statistics. */
struct side {
	const struct cmp_side *orig; /* as given */
	const struct cmp_side *s;    /* orig, or coarse */
	struct cmp_side *coarse;     /* orig's windows merged in runs (COMPARE_MAX_WINDOWS) */
	uint32_t merged;	     /* windows a unit of s: 1, or the run length */
	struct cmp_plan plan;
	double *seconds;	 /* [n] each window's length */
	double *num, *den, *v;	 /* [n] scratch for one metric */
	struct cmp_hist_win *hw; /* [n] scratch for percentiles */
};

enum stage_metric { SM_P50, SM_P95, SM_P99, SM_MEAN, SM_RATE, SM_CPU, SM_NR };
static const char *const stage_metric_names[SM_NR] = {"p50", "p95", "p99", "mean", "rate", "cpu"};

struct stage_res {
	const char *name;
	struct cmp_result r[SM_NR];
	double floor[SM_NR];
};

enum total { T_CPU, T_OFFCPU, T_RUNQ, T_GC_TOTAL, T_GC_MAX, T_DROPS, T_NR };

struct fn_res {
	const char *name;
	struct cmp_result r;
};

struct report {
	struct side side[2]; /* before, after */
	const struct compare_opts *o;
	struct stage_res *stages;
	uint32_t nr_stages;
	struct cmp_result totals[T_NR];
	double total_floor[T_NR];
	struct fn_res *fns;
	uint32_t nr_fns;
};

/* Adds cells[n] into dense[TP_HIST_BUCKETS] (counts saturate at UINT32_MAX when emitted). */
static void add_cells(uint64_t *dense, const struct hist_cell *cells, uint32_t n)
{
	for (uint32_t k = 0; k < n; k++)
		if (cells[k].bucket < TP_HIST_BUCKETS)
			dense[cells[k].bucket] += cells[k].count;
}

/* The sparse cells of dense (cmp_side__cells), then dense zeroed for the next. */
static int take_cells(uint64_t *dense, struct hist_cell **out, uint32_t *nr)
{
	int err = cmp_side__cells(dense, out, nr);

	memset(dense, 0, TP_HIST_BUCKETS * sizeof(*dense));
	return err;
}

/* Frees what coarsen allocated: the windows, not the strings and stacks (orig's). */
static void coarse_free(struct cmp_side *c)
{
	for (uint32_t i = 0; c && i < c->nr_windows; i++) {
		struct cmp_window *w = &c->windows[i];

		for (uint32_t k = 0; k < w->nr_stages; k++)
			free(w->stages[k].cells);
		free(w->stages);
		free(w->stacks);
		free(w->runq_cells);
	}
	if (c)
		free(c->windows);
	free(c);
}

/* Merges one run of windows from[0..n) into w: counters summed, maxima kept, histograms and
 * stages merged by name, stacks concatenated (functions add them up by leaf). */
static int merge_run(struct cmp_window *w, const struct cmp_window *from, uint32_t n,
		     uint64_t *dense)
{
	uint32_t nr_stacks = 0, nr_stages = 0;

	for (uint32_t i = 0; i < n; i++) {
		nr_stacks += from[i].nr_stacks;
		nr_stages += from[i].nr_stages;
	}
	w->start_unix_ns = from[0].start_unix_ns;
	w->end_unix_ns = from[n - 1].end_unix_ns;
	w->stacks = malloc((nr_stacks ? nr_stacks : 1) * sizeof(*w->stacks));
	w->stages = calloc(nr_stages ? nr_stages : 1, sizeof(*w->stages));
	if (!w->stacks || !w->stages)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		const struct cmp_window *f = &from[i];

		w->cpu_samples += f->cpu_samples;
		w->offcpu_ns += f->offcpu_ns;
		w->offcpu_samples += f->offcpu_samples;
		w->runq_count += f->runq_count;
		w->runq_sum_ns += f->runq_sum_ns;
		w->runq_max_ns = f->runq_max_ns > w->runq_max_ns ? f->runq_max_ns : w->runq_max_ns;
		w->gc_count += f->gc_count;
		w->gc_pause_ns += f->gc_pause_ns;
		w->gc_max_ns = f->gc_max_ns > w->gc_max_ns ? f->gc_max_ns : w->gc_max_ns;
		w->drops += f->drops;
		memcpy(w->stacks + w->nr_stacks, f->stacks, f->nr_stacks * sizeof(*f->stacks));
		w->nr_stacks += f->nr_stacks;
		add_cells(dense, f->runq_cells, f->nr_runq_cells);
	}
	if (take_cells(dense, &w->runq_cells, &w->nr_runq_cells))
		return -ENOMEM;
	/* each stage name once: its windows' histograms summed */
	for (uint32_t i = 0; i < n; i++) {
		for (uint32_t k = 0; k < from[i].nr_stages; k++) {
			const struct cmp_stage_win *fs = &from[i].stages[k];
			struct cmp_stage_win *st;
			uint32_t x;

			for (x = 0; x < w->nr_stages && w->stages[x].name != fs->name; x++)
				;
			if (x < w->nr_stages)
				continue; /* merged with the first of its name */
			st = &w->stages[w->nr_stages++];
			st->name = fs->name;
			for (uint32_t j = i; j < n; j++) {
				for (uint32_t m = 0; m < from[j].nr_stages; m++) {
					const struct cmp_stage_win *o = &from[j].stages[m];

					if (o->name != fs->name)
						continue;
					st->count += o->count;
					st->sum_ns += o->sum_ns;
					st->max_ns =
					    o->max_ns > st->max_ns ? o->max_ns : st->max_ns;
					st->cpu_samples += o->cpu_samples;
					st->offcpu_ns += o->offcpu_ns;
					add_cells(dense, o->cells, o->nr_cells);
				}
			}
			if (take_cells(dense, &st->cells, &st->nr_cells))
				return -ENOMEM;
		}
	}
	return 0;
}

/* s with its windows merged in runs of ceil(n / COMPARE_MAX_WINDOWS) consecutive ones: a
 * cluster of windows is still a cluster, and the statistics' time and memory stay bounded (a
 * unit's cumulative histogram is a row of up to TP_HIST_BUCKETS counts). NULL: out of memory. */
static struct cmp_side *coarsen(const struct cmp_side *s, uint32_t run)
{
	struct cmp_side *c = calloc(1, sizeof(*c));
	uint64_t *dense = calloc(TP_HIST_BUCKETS, sizeof(*dense));
	uint32_t n = (s->nr_windows + run - 1) / run;

	if (!c || !dense)
		goto fail;
	*c = *s; /* the conditions; strings and stacks borrowed */
	c->nr_windows = 0;
	c->windows = calloc(n, sizeof(*c->windows));
	if (!c->windows)
		goto fail;
	for (uint32_t i = 0; i < s->nr_windows; i += run) {
		uint32_t len = s->nr_windows - i < run ? s->nr_windows - i : run;

		c->nr_windows++;
		if (merge_run(&c->windows[c->nr_windows - 1], &s->windows[i], len, dense))
			goto fail;
	}
	free(dense);
	return c;
fail:
	free(dense);
	coarse_free(c);
	return NULL;
}

static int side_init(struct side *sd, const struct cmp_side *s, struct cmp_rng *rng)
{
	uint32_t n;

	memset(sd, 0, sizeof(*sd));
	sd->orig = sd->s = s;
	sd->merged = 1;
	if (s->nr_windows > COMPARE_MAX_WINDOWS) {
		sd->merged = (s->nr_windows + COMPARE_MAX_WINDOWS - 1) / COMPARE_MAX_WINDOWS;
		sd->coarse = coarsen(s, sd->merged);
		if (!sd->coarse)
			return -ENOMEM;
		sd->s = sd->coarse;
	}
	s = sd->s;
	n = s->nr_windows;
	sd->seconds = calloc(n + 1, sizeof(double));
	sd->num = calloc(n + 1, sizeof(double));
	sd->den = calloc(n + 1, sizeof(double));
	sd->v = calloc(n + 1, sizeof(double));
	sd->hw = calloc(n + 1, sizeof(*sd->hw));
	if (!sd->seconds || !sd->num || !sd->den || !sd->v || !sd->hw)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++)
		sd->seconds[i] =
		    (double)(s->windows[i].end_unix_ns - s->windows[i].start_unix_ns) / 1e9;
	return cmp_plan__init(&sd->plan, n, CMP_RESAMPLES, cmp_block_len(n), rng);
}

static void side_free(struct side *sd)
{
	coarse_free(sd->coarse);
	cmp_plan__free(&sd->plan);
	free(sd->seconds);
	free(sd->num);
	free(sd->den);
	free(sd->v);
	free(sd->hw);
}

/* The index of name in s's strings, -1 when absent. */
static int64_t find_string(const struct cmp_side *s, const char *name)
{
	for (uint32_t i = 0; i < s->nr_strings; i++)
		if (!strcmp(s->strings[i], name))
			return i;
	return -1;
}

static const struct cmp_stage_win *stage_in(const struct cmp_window *w, int64_t name)
{
	for (uint32_t k = 0; name >= 0 && k < w->nr_stages; k++)
		if (w->stages[k].name == (uint32_t)name)
			return &w->stages[k];
	return NULL;
}

/* Compares the ratio sum(num) / sum(den) of both sides (their num/den filled). */
static int compare_ratio(struct report *rp, struct cmp_result *r)
{
	struct cmp_est e[2];
	int err;

	if (cmp_est__ratio(&e[0], &rp->side[0].plan, rp->side[0].num, rp->side[0].den))
		return -ENOMEM;
	if (cmp_est__ratio(&e[1], &rp->side[1].plan, rp->side[1].num, rp->side[1].den)) {
		cmp_est__free(&e[0]);
		return -ENOMEM;
	}
	err = cmp_diff(&e[0], &e[1], r);
	cmp_est__free(&e[0]);
	cmp_est__free(&e[1]);
	return err;
}

/* Compares percentiles q[nq] of both sides' hw; floor[j]: a bucket's width at the before value. */
static int compare_quantiles(struct report *rp, const uint32_t *q, uint32_t nq,
			     struct cmp_result *r, double *floor)
{
	struct cmp_est e[2][3];
	int err = 0;

	if (cmp_est__quantiles(e[0], &rp->side[0].plan, rp->side[0].hw, q, nq))
		return -ENOMEM;
	if (cmp_est__quantiles(e[1], &rp->side[1].plan, rp->side[1].hw, q, nq)) {
		for (uint32_t j = 0; j < nq; j++)
			cmp_est__free(&e[0][j]);
		return -ENOMEM;
	}
	for (uint32_t j = 0; j < nq; j++) {
		err = err ?: cmp_diff(&e[0][j], &e[1][j], &r[j]);
		floor[j] = e[0][j].widen;
		cmp_est__free(&e[0][j]);
		cmp_est__free(&e[1][j]);
	}
	return err;
}

static int compare_stage(struct report *rp, struct stage_res *st)
{
	static const uint32_t q[] = {500, 950, 990};
	int err;

	for (int k = 0; k < 2; k++) {
		struct side *sd = &rp->side[k];
		int64_t name = find_string(sd->s, st->name);

		for (uint32_t i = 0; i < sd->s->nr_windows; i++) {
			const struct cmp_stage_win *w = stage_in(&sd->s->windows[i], name);

			sd->hw[i] =
			    w ? (struct cmp_hist_win){w->cells, w->nr_cells, w->count, w->max_ns}
			      : (struct cmp_hist_win){0};
		}
	}
	err = compare_quantiles(rp, q, 3, &st->r[SM_P50], &st->floor[SM_P50]);
	for (int m = SM_MEAN; !err && m < SM_NR; m++) {
		for (int k = 0; k < 2; k++) {
			struct side *sd = &rp->side[k];
			int64_t name = find_string(sd->s, st->name);
			double period = (double)sd->s->cond.sample_period_ns;

			for (uint32_t i = 0; i < sd->s->nr_windows; i++) {
				const struct cmp_stage_win *w = stage_in(&sd->s->windows[i], name);
				double count = w ? (double)w->count : 0;

				switch (m) {
				case SM_MEAN: /* latency sum over requests */
					sd->num[i] = w ? (double)w->sum_ns : 0;
					sd->den[i] = count;
					break;
				case SM_RATE: /* requests a second */
					sd->num[i] = count;
					sd->den[i] = sd->seconds[i];
					break;
				default: /* CPU time a request: its threads' samples times the
					    period */
					sd->num[i] = w ? (double)w->cpu_samples * period : 0;
					sd->den[i] = count;
					break;
				}
			}
		}
		err = compare_ratio(rp, &st->r[m]);
	}
	return err;
}

/* Every stage named on either side (or only o->stage), in the before side's order first. */
static int collect_stages(struct report *rp)
{
	uint32_t cap = 8;

	rp->stages = calloc(cap, sizeof(*rp->stages));
	if (!rp->stages)
		return -ENOMEM;
	for (int k = 0; k < 2; k++) {
		const struct cmp_side *s = rp->side[k].s;

		for (uint32_t i = 0; i < s->nr_windows; i++) {
			for (uint32_t j = 0; j < s->windows[i].nr_stages; j++) {
				const char *name = s->strings[s->windows[i].stages[j].name];
				uint32_t x;

				if (rp->o->stage && strcmp(name, rp->o->stage))
					continue;
				for (x = 0; x < rp->nr_stages; x++)
					if (!strcmp(rp->stages[x].name, name))
						break;
				if (x < rp->nr_stages)
					continue;
				if (rp->nr_stages == cap) {
					struct stage_res *v =
					    realloc(rp->stages, 2 * cap * sizeof(*v));

					if (!v)
						return -ENOMEM;
					rp->stages = v;
					cap *= 2;
				}
				rp->stages[rp->nr_stages++] = (struct stage_res){.name = name};
			}
		}
	}
	return 0;
}

static int compare_totals(struct report *rp)
{
	static const uint32_t q99 = 990;
	int err;

	for (int t = 0; t < T_NR; t++) {
		if (t == T_RUNQ) {
			for (int k = 0; k < 2; k++) {
				const struct cmp_side *s = rp->side[k].s;

				for (uint32_t i = 0; i < s->nr_windows; i++) {
					const struct cmp_window *w = &s->windows[i];

					rp->side[k].hw[i] =
					    (struct cmp_hist_win){w->runq_cells, w->nr_runq_cells,
								  w->runq_count, w->runq_max_ns};
				}
			}
			err = compare_quantiles(rp, &q99, 1, &rp->totals[t], &rp->total_floor[t]);
		} else if (t == T_GC_MAX) {
			struct cmp_est e[2];

			for (int k = 0; k < 2; k++)
				for (uint32_t i = 0; i < rp->side[k].s->nr_windows; i++)
					rp->side[k].v[i] =
					    (double)rp->side[k].s->windows[i].gc_max_ns;
			if (cmp_est__max(&e[0], &rp->side[0].plan, rp->side[0].v))
				return -ENOMEM;
			if (cmp_est__max(&e[1], &rp->side[1].plan, rp->side[1].v)) {
				cmp_est__free(&e[0]);
				return -ENOMEM;
			}
			err = cmp_diff(&e[0], &e[1], &rp->totals[t]);
			cmp_est__free(&e[0]);
			cmp_est__free(&e[1]);
		} else {
			for (int k = 0; k < 2; k++) {
				const struct cmp_side *s = rp->side[k].s;

				for (uint32_t i = 0; i < s->nr_windows; i++) {
					const struct cmp_window *w = &s->windows[i];

					rp->side[k].num[i] = t == T_CPU ? (double)w->cpu_samples
							     : t == T_OFFCPU ? (double)w->offcpu_ns
							     : t == T_GC_TOTAL
								 ? (double)w->gc_pause_ns
								 : (double)w->drops;
					rp->side[k].den[i] = rp->side[k].seconds[i];
				}
			}
			err = compare_ratio(rp, &rp->totals[t]);
		}
		if (err)
			return err;
	}
	return 0;
}

/* ---- functions ---- */

struct fn_table {
	struct hashmap index; /* name -> names index */
	const char **names;
	uint32_t n, cap;
	double *total[2]; /* [cap] leaf samples a side */
};

static bool fn_eq(const void *ctx, uint32_t i)
{
	const struct fn_table *t = ((const void *const *)ctx)[1];

	return !strcmp(t->names[i], ((const void *const *)ctx)[0]);
}

/* The id of function name, added when missing; -ENOMEM. */
static int64_t fn_id(struct fn_table *t, const char *name)
{
	const void *ctx[2] = {name, t};
	uint64_t h = hashmap__hash_str(name);
	uint32_t i;

	if (hashmap__find(&t->index, h, fn_eq, ctx, &i))
		return i;
	if (t->n == t->cap) {
		uint32_t cap = t->cap ? 2 * t->cap : 256;
		const char **v = realloc(t->names, cap * sizeof(*v));
		double *a, *b;

		if (!v)
			return -ENOMEM;
		t->names = v;
		a = realloc(t->total[0], cap * sizeof(*a));
		if (!a)
			return -ENOMEM;
		t->total[0] = a;
		b = realloc(t->total[1], cap * sizeof(*b));
		if (!b)
			return -ENOMEM;
		t->total[1] = b;
		t->cap = cap;
	}
	if (hashmap__insert(&t->index, h, t->n))
		return -ENOMEM;
	t->names[t->n] = name;
	t->total[0][t->n] = t->total[1][t->n] = 0;
	return t->n++;
}

/* The leaf function's name of stack index k of s ("" for an empty stack). */
static const char *leaf(const struct cmp_side *s, uint32_t k)
{
	const struct cmp_stack *st = &s->stacks[k];

	return st->nr_frames ? s->strings[st->frames[0]] : "[unknown]";
}

static int cmp_share_desc(const void *a, const void *b, void *arg)
{
	const struct fn_table *t = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	double sx = t->total[0][x] + t->total[1][x], sy = t->total[0][y] + t->total[1][y];

	return sx > sy ? -1 : sx < sy;
}

static int compare_functions(struct report *rp)
{
	struct fn_table t = {0};
	double all[2] = {0, 0}, *nums = NULL;
	uint32_t *cand = NULL, nc = 0;
	int32_t *slot = NULL;
	int err = -ENOMEM;

	for (int k = 0; k < 2; k++) {
		const struct cmp_side *s = rp->side[k].s;

		for (uint32_t i = 0; i < s->nr_windows; i++) {
			for (uint32_t j = 0; j < s->windows[i].nr_stacks; j++) {
				const struct cmp_stack_count *c = &s->windows[i].stacks[j];
				int64_t id = fn_id(&t, leaf(s, c->stack));

				if (id < 0)
					goto out;
				t.total[k][id] += (double)c->count;
				all[k] += (double)c->count;
			}
		}
	}
	cand = malloc((t.n + 1) * sizeof(*cand));
	slot = malloc((t.n + 1) * sizeof(*slot));
	if (!cand || !slot)
		goto out;
	for (uint32_t f = 0; f < t.n; f++) {
		double sb = all[0] > 0 ? t.total[0][f] / all[0] : 0;
		double sa = all[1] > 0 ? t.total[1][f] / all[1] : 0;

		slot[f] = -1;
		if (sb >= COMPARE_MIN_FUNCTION || sa >= COMPARE_MIN_FUNCTION)
			cand[nc++] = f;
	}
	qsort_r(cand, nc, sizeof(*cand), cmp_share_desc, &t);
	if (nc > COMPARE_MAX_FUNCTIONS)
		nc = COMPARE_MAX_FUNCTIONS;
	rp->fns = calloc(nc + 1, sizeof(*rp->fns));
	if (!rp->fns)
		goto out;
	for (uint32_t c = 0; c < nc; c++) {
		slot[cand[c]] = (int32_t)c;
		rp->fns[c].name = t.names[cand[c]];
	}
	rp->nr_fns = nc;
	/* per window and candidate, its leaf samples: [2][nc][n] */
	{
		size_t n0 = rp->side[0].s->nr_windows, n1 = rp->side[1].s->nr_windows;

		nums = calloc((size_t)nc * (n0 + n1) + 1, sizeof(*nums));
		if (!nums)
			goto out;
		for (int k = 0; k < 2; k++) {
			const struct cmp_side *s = rp->side[k].s;
			double *base = nums + (k ? (size_t)nc * n0 : 0);

			for (uint32_t i = 0; i < s->nr_windows; i++) {
				for (uint32_t j = 0; j < s->windows[i].nr_stacks; j++) {
					const struct cmp_stack_count *c = &s->windows[i].stacks[j];
					int64_t id = fn_id(&t, leaf(s, c->stack));

					if (id >= 0 && slot[id] >= 0)
						base[(size_t)slot[id] * s->nr_windows + i] +=
						    (double)c->count;
				}
			}
		}
		for (int k = 0; k < 2; k++) {
			const struct cmp_side *s = rp->side[k].s;

			for (uint32_t i = 0; i < s->nr_windows; i++) {
				rp->side[k].den[i] = 0;
				for (uint32_t j = 0; j < s->windows[i].nr_stacks; j++)
					rp->side[k].den[i] += (double)s->windows[i].stacks[j].count;
			}
		}
		for (uint32_t c = 0; c < nc; c++) {
			memcpy(rp->side[0].num, nums + (size_t)c * n0, n0 * sizeof(double));
			memcpy(rp->side[1].num, nums + (size_t)nc * n0 + (size_t)c * n1,
			       n1 * sizeof(double));
			if (compare_ratio(rp, &rp->fns[c].r))
				goto out;
		}
	}
	err = 0;
out:
	hashmap__clear(&t.index);
	free(t.names);
	free(t.total[0]);
	free(t.total[1]);
	free(cand);
	free(slot);
	free(nums);
	return err;
}

/* ---- verdicts ---- */

static int decide_all(struct report *rp)
{
	size_t n = (size_t)rp->nr_stages * SM_NR + T_NR + rp->nr_fns, k = 0;
	struct cmp_result **all = malloc((n + 1) * sizeof(*all));

	if (!all)
		return -ENOMEM;
	for (uint32_t s = 0; s < rp->nr_stages; s++)
		for (int m = 0; m < SM_NR; m++)
			all[k++] = &rp->stages[s].r[m];
	for (int t = 0; t < T_NR; t++)
		all[k++] = &rp->totals[t];
	for (uint32_t f = 0; f < rp->nr_fns; f++)
		all[k++] = &rp->fns[f].r;
	cmp_fdr(all, k, rp->o->alpha);
	free(all);
	for (uint32_t s = 0; s < rp->nr_stages; s++)
		for (int m = 0; m < SM_NR; m++)
			cmp_decide(&rp->stages[s].r[m],
				   m == SM_RATE ? CMP_WORSE_DOWN : CMP_WORSE_UP, rp->o->min_effect,
				   m <= SM_P99 ? rp->stages[s].floor[m] : 0);
	for (int t = 0; t < T_NR; t++)
		cmp_decide(&rp->totals[t], CMP_WORSE_UP, rp->o->min_effect,
			   t == T_RUNQ ? rp->total_floor[t] : 0);
	for (uint32_t f = 0; f < rp->nr_fns; f++)
		cmp_decide(&rp->fns[f].r, CMP_WORSE_UP, rp->o->min_effect, 0);
	return 0;
}

/* ---- JSON ---- */

static json_t *num(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

/* An integer in ns, rounded; null when undefined. */
static json_t *ns(double v)
{
	return isfinite(v) ? json_integer((json_int_t)llround(v)) : json_null();
}

/* The metric object: _ns keys when unit is NULL, else plain keys and the unit. */
static json_t *metric_json(const struct cmp_result *r, const char *unit)
{
	static const char *const keys[2][7] = {
	    {"before_ns", "after_ns", "diff_ns", "ci_low_ns", "ci_high_ns", "before_spread_ns",
	     "after_spread_ns"},
	    {"before", "after", "diff", "ci_low", "ci_high", "before_spread", "after_spread"}};
	const double v[7] = {r->before,	 r->after,	   r->diff,	   r->ci_low,
			     r->ci_high, r->before_spread, r->after_spread};
	json_t *o = json_object();
	int u = unit != NULL;

	for (int i = 0; i < 7; i++)
		json_object_set_new(o, keys[u][i], u ? num(v[i]) : ns(v[i]));
	if (unit)
		json_object_set_new(o, "unit", json_string(unit));
	json_object_set_new(o, "p_value", num(r->p_value));
	json_object_set_new(o, "verdict", json_string(cmp_verdict_name(r->verdict)));
	json_object_set_new(o, "n_before", json_integer(r->n_before));
	json_object_set_new(o, "n_after", json_integer(r->n_after));
	json_object_set_new(o, u ? "min_effect" : "min_effect_ns",
			    u ? num(r->min_effect) : ns(r->min_effect));
	if (r->windows_needed)
		json_object_set_new(o, "windows_needed", json_integer(r->windows_needed));
	if (r->reason)
		json_object_set_new(o, "reason", json_string(r->reason));
	return o;
}

static uint64_t side_requests(const struct report *rp, const struct cmp_side *s)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < s->nr_windows; i++)
		for (uint32_t j = 0; j < s->windows[i].nr_stages; j++)
			if (!rp->o->stage ||
			    !strcmp(s->strings[s->windows[i].stages[j].name], rp->o->stage))
				n += s->windows[i].stages[j].count;
	return n;
}

static json_t *side_conditions(const struct report *rp, const struct cmp_side *s)
{
	const struct cmp_conditions *c = &s->cond;
	json_t *o = json_object();

	tp_json_set_time(o, "from", c->from_unix_ns);
	tp_json_set_time(o, "to", c->to_unix_ns);
	if (s->nr_windows) {
		tp_json_set_time(o, "windows_from", s->windows[0].start_unix_ns);
		tp_json_set_time(o, "windows_to", s->windows[s->nr_windows - 1].end_unix_ns);
	}
	if (c->snapshot[0]) {
		json_object_set_new(o, "snapshot", json_string(c->snapshot));
		tp_json_set_time(o, "saved", c->saved_unix_ns);
	}
	json_object_set_new(o, "windows", json_integer(s->nr_windows));
	json_object_set_new(o, "requests", json_integer((json_int_t)side_requests(rp, s)));
	json_object_set_new(o, "frequency_hz", json_integer(c->frequency_hz));
	json_object_set_new(o, "window_ns", json_integer((json_int_t)c->window_ns));
	json_object_set_new(o, "host", json_string(c->host));
	json_object_set_new(o, "kernel", json_string(c->kernel));
	json_object_set_new(o, "version", json_string(c->version));
	return o;
}

/* A note in notes when the two sides' windows (of one host) share time: what they share counts
 * on both sides, so a change shows smaller than it is and its test is not of two samples. */
static void overlap_note(const struct cmp_side *b, const struct cmp_side *a, json_t *notes)
{
	int64_t from, to; /* Unix ns: a crafted snapshot may hold times before 1970 */
	char note[256], d[32];

	if (!b->nr_windows || !a->nr_windows || strcmp(b->cond.host, a->cond.host))
		return;
	from = b->windows[0].start_unix_ns > a->windows[0].start_unix_ns
		   ? b->windows[0].start_unix_ns
		   : a->windows[0].start_unix_ns;
	to = b->windows[b->nr_windows - 1].end_unix_ns < a->windows[a->nr_windows - 1].end_unix_ns
		 ? b->windows[b->nr_windows - 1].end_unix_ns
		 : a->windows[a->nr_windows - 1].end_unix_ns;
	if (to <= from)
		return;
	tp_format_duration((uint64_t)to - (uint64_t)from, d, sizeof(d));
	snprintf(
	    note, sizeof(note),
	    "the sides' windows overlap by %s: what they share counts on both sides, so a change "
	    "shows smaller than it is (give ranges that do not overlap)",
	    d);
	json_array_append_new(notes, json_string(note));
}

static json_t *conditions_json(const struct report *rp)
{
	const struct cmp_conditions *b = &rp->side[0].s->cond, *a = &rp->side[1].s->cond;
	json_t *o = json_object(), *notes = json_array(), *m = json_object();
	char note[768], load[1024] = "";
	size_t ln = 0;

	json_object_set_new(o, "before", side_conditions(rp, rp->side[0].orig));
	json_object_set_new(o, "after", side_conditions(rp, rp->side[1].orig));
	for (uint32_t s = 0; s < rp->nr_stages; s++) {
		const struct cmp_result *r = &rp->stages[s].r[SM_RATE];

		if (!(r->before > 0) || !isfinite(r->after) ||
		    fabs(r->diff) <= r->before * COMPARE_LOAD_DIFFERS_PCT / 100)
			continue;
		ln += (size_t)snprintf(load + ln, ln < sizeof(load) ? sizeof(load) - ln : 0,
				       "%s%s %.1f/s before, %.1f/s after (%+.0f%%)", ln ? "; " : "",
				       rp->stages[s].name, r->before, r->after,
				       100 * r->diff / r->before);
	}
	json_object_set_new(o, "load_differs", json_boolean(ln > 0));
	if (ln) {
		snprintf(note, sizeof(note),
			 "the request rates differ by more than %d%%: %.400s. A comparison under "
			 "different load is weaker (verdicts are not changed by it: a closed-loop "
			 "service's rate moves with its latency)",
			 COMPARE_LOAD_DIFFERS_PCT, load);
		json_object_set_new(o, "load_note", json_string(note));
	}
	if (strcmp(b->host, a->host)) {
		snprintf(note, sizeof(note), "different hosts: %.200s before, %.200s after",
			 b->host, a->host);
		json_array_append_new(notes, json_string(note));
	}
	if (strcmp(b->kernel, a->kernel)) {
		snprintf(note, sizeof(note), "different kernels: %.120s before, %.120s after",
			 b->kernel, a->kernel);
		json_array_append_new(notes, json_string(note));
	}
	if (strcmp(b->version, a->version)) {
		snprintf(note, sizeof(note),
			 "different tailprofd versions: %.60s before, %.60s after", b->version,
			 a->version);
		json_array_append_new(notes, json_string(note));
	}
	if (b->frequency_hz != a->frequency_hz) {
		snprintf(note, sizeof(note),
			 "different sampling frequencies: %u Hz before, %u Hz after (CPU totals "
			 "count samples: compare shares, or CPU time a request)",
			 b->frequency_hz, a->frequency_hz);
		json_array_append_new(notes, json_string(note));
	}
	if (b->window_ns != a->window_ns) {
		snprintf(note, sizeof(note),
			 "different window lengths: %llu ns before, %llu ns after (per-window "
			 "values are not alike; intervals stay valid)",
			 (unsigned long long)b->window_ns, (unsigned long long)a->window_ns);
		json_array_append_new(notes, json_string(note));
	}
	overlap_note(rp->side[0].orig, rp->side[1].orig, notes);
	json_object_set_new(o, "notes", notes);
	json_object_set_new(m, "resamples", json_integer(CMP_RESAMPLES));
	json_object_set_new(m, "seed", json_integer((json_int_t)rp->o->seed));
	json_object_set_new(m, "confidence", json_real(CMP_CONFIDENCE));
	json_object_set_new(m, "block_windows",
			    json_pack("{s:i,s:i}", "before", (int)rp->side[0].plan.block, "after",
				      (int)rp->side[1].plan.block));
	json_object_set_new(m, "windows_merged",
			    json_pack("{s:i,s:i}", "before", (int)rp->side[0].merged, "after",
				      (int)rp->side[1].merged));
	json_object_set_new(m, "alpha", json_real(rp->o->alpha));
	json_object_set_new(m, "min_effect_pct", json_real(100 * rp->o->min_effect));
	json_object_set_new(m, "test",
			    json_string("Mann-Whitney U over per-window values, "
					"Benjamini-Hochberg over the report"));
	json_object_set_new(o, "method", m);
	return o;
}

static int cmp_fn_order(const void *a, const void *b)
{
	const struct fn_res *x = a, *y = b;
	int rx = x->r.verdict == CMP_REGRESSED, ry = y->r.verdict == CMP_REGRESSED;
	double dx = isfinite(x->r.diff) ? fabs(x->r.diff) : 0;
	double dy = isfinite(y->r.diff) ? fabs(y->r.diff) : 0;

	if (rx != ry)
		return ry - rx;
	return dx > dy ? -1 : dx < dy;
}

static void add_regression(json_t *list, const struct cmp_result *r, const char *path)
{
	if (r->verdict == CMP_REGRESSED)
		json_array_append_new(list, json_string(path));
}

static json_t *report_json(struct report *rp)
{
	static const char *const total_keys[T_NR] = {"cpu",	 "offcpu", "runq",
						     "gc.total", "gc.max", "drops"};
	static const char *const total_units[T_NR] = {"samples/s", "ns/s", NULL,
						      "ns/s",	   NULL,   "1/s"};
	json_t *o = json_object(), *stages = json_array(), *fns = json_array();
	json_t *regs = json_array(), *gc = json_object();
	char path[300];

	json_object_set_new(o, "conditions", conditions_json(rp));
	for (uint32_t s = 0; s < rp->nr_stages; s++) {
		json_t *so = json_pack("{s:s}", "stage", rp->stages[s].name);

		for (int m = 0; m < SM_NR; m++) {
			const struct cmp_result *r = &rp->stages[s].r[m];

			json_object_set_new(so, stage_metric_names[m],
					    metric_json(r, m == SM_RATE ? "1/s" : NULL));
			snprintf(path, sizeof(path), "stages.%.200s.%s", rp->stages[s].name,
				 stage_metric_names[m]);
			add_regression(regs, r, path);
		}
		json_array_append_new(stages, so);
	}
	json_object_set_new(o, "stages", stages);
	for (int t = 0; t < T_NR; t++) {
		json_t *m = metric_json(&rp->totals[t], total_units[t]);

		if (t == T_GC_TOTAL || t == T_GC_MAX)
			json_object_set_new(gc, t == T_GC_TOTAL ? "total" : "max", m);
		else
			json_object_set_new(o, total_keys[t], m);
		add_regression(regs, &rp->totals[t], total_keys[t]);
	}
	json_object_set_new(o, "gc", gc);
	qsort(rp->fns, rp->nr_fns, sizeof(*rp->fns), cmp_fn_order);
	for (uint32_t f = 0; f < rp->nr_fns; f++) {
		json_t *m;

		snprintf(path, sizeof(path), "functions.%.250s", rp->fns[f].name);
		add_regression(regs, &rp->fns[f].r, path);
		if (f >= COMPARE_SHOWN_FUNCTIONS && rp->fns[f].r.verdict != CMP_REGRESSED)
			continue;
		m = metric_json(&rp->fns[f].r, "share");
		json_object_set_new(m, "function", json_string(rp->fns[f].name));
		json_array_append_new(fns, m);
	}
	json_object_set_new(o, "functions", fns);
	json_object_set_new(o, "regressions", regs);
	return o;
}

json_t *compare__report(const struct cmp_side *before, const struct cmp_side *after,
			const struct compare_opts *o, char *err, size_t errlen)
{
	struct report rp = {.o = o};
	struct cmp_rng rng;
	json_t *out = NULL;
	int e;

	err[0] = 0;
	cmp_rng__seed(&rng, o->seed);
	e = side_init(&rp.side[0], before, &rng);
	if (!e)
		e = side_init(&rp.side[1], after, &rng);
	if (!e)
		e = collect_stages(&rp);
	if (!e && o->stage && !rp.nr_stages) {
		snprintf(err, errlen,
			 "stage: no stage '%.100s' has requests on either side; see tailprof "
			 "stages",
			 o->stage);
		e = -ENOENT;
	}
	for (uint32_t s = 0; !e && s < rp.nr_stages; s++)
		e = compare_stage(&rp, &rp.stages[s]);
	if (!e)
		e = compare_totals(&rp);
	if (!e)
		e = compare_functions(&rp);
	if (!e)
		e = decide_all(&rp);
	if (!e) {
		out = report_json(&rp);
		if (!out)
			e = -ENOMEM;
	}
	if (e == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	side_free(&rp.side[0]);
	side_free(&rp.side[1]);
	free(rp.stages);
	free(rp.fns);
	errno = -e;
	return out;
}
