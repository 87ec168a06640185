// SPDX-License-Identifier: GPL-2.0-only
/* Stage skeleton instances: shared maps, per-stage programs, uprobe and USDT attachment. */
#include "probes.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "elf_symbols.h"
#include "feature_table.h"
#include "kernel_probe.h"
#include "libbpf_log.h"
#include "log.h"
#include "stage.skel.h"

struct probes {
	struct probes_opts opts;
	struct stage_bpf *base; /* owns the shared maps; no program loaded */
	struct tp_stage_hist *hist;
	size_t hist_bytes;
	bool off;      /* stage probes are off: probes__attach refuses */
	char why[400]; /* why, when off */
	bool exact;    /* spans get their exact accounting (rodata exact_accounting) */
};

struct probe {
	struct stage_bpf *skel;
	struct bpf_link *links[2];
	struct bpf_program *progs[2];
};

#define HIST_BYTES ((size_t)TP_STAGE_SLOTS * TP_MAX_STAGES * sizeof(struct tp_stage_hist))

static void autoload_none(struct stage_bpf *s)
{
	struct bpf_program *prog;

	bpf_object__for_each_program(prog, s->obj) bpf_program__set_autoload(prog, false);
}

static int share_maps(struct probes *p, struct stage_bpf *s);

/* Whether the kernel loads every stage program: an instance of them all, loaded and freed (each
 * stage loads its own pair when it attaches). 0 or libbpf's negative errno. */
static int load_all_programs(struct probes *p)
{
	struct stage_bpf *s = stage_bpf__open();
	int err;

	if (!s)
		return -errno;
	s->rodata->slot_ns = p->opts.slot_ns;
	s->rodata->exact_accounting = p->exact;
	err = share_maps(p, s);
	if (!err)
		err = stage_bpf__load(s);
	stage_bpf__destroy(s);
	return err;
}

/* Sets request_accounting: exact (sched_now in bpf/stage.bpf.c) where the kernel has what it
 * reads and the test switch allows it, else spans are accounted from samples. */
static void decide_accounting(struct probes *p)
{
	struct features *f = p->opts.features;
	char why[400];

	p->exact = false;
	if (features__forced_off(f, FEATURE_REQUEST_ACCT)) {
		features__set(f, FEATURE_REQUEST_ACCT, true, "sampled", "%s",
			      features__forced_reason(f, FEATURE_REQUEST_ACCT));
		features__set_quiet(f, FEATURE_REQUEST_ACCT);
	} else if (kernel_probe__request_accounting(why, sizeof(why))) {
		features__set(f, FEATURE_REQUEST_ACCT, true, "sampled", "%s", why);
	} else {
		p->exact = true;
		features__set(f, FEATURE_REQUEST_ACCT, true, "sum_exec_runtime", NULL);
	}
}

/* Sets the stages and usdt_semaphores capabilities; stage probes off where the kernel lacks what
 * they need, rejects their programs, or the test switch says so. */
static void decide_stages(struct probes *p)
{
	struct features *f = p->opts.features;
	int err;

	if (kernel_probe__uprobe_ref_ctr(p->why, sizeof(p->why)))
		features__set(f, FEATURE_USDT_SEMAPHORES, false, "", "%s", p->why);
	else
		features__set(f, FEATURE_USDT_SEMAPHORES, true, "ref_ctr_offset", NULL);
	if (features__forced_off(f, FEATURE_STAGES)) {
		p->off = true;
		snprintf(p->why, sizeof(p->why), "%s", features__forced_reason(f, FEATURE_STAGES));
		features__set(f, FEATURE_STAGES, false, "", "%s", p->why);
		features__set_quiet(f, FEATURE_STAGES);
		features__set(f, FEATURE_REQUEST_ACCT, false, "", "stage probes are off");
		features__set_quiet(f, FEATURE_REQUEST_ACCT);
		return;
	}
	if (kernel_probe__uprobes(true, p->why, sizeof(p->why))) {
		p->off = true;
		features__set(f, FEATURE_STAGES, false, "", "%s", p->why);
		features__set(f, FEATURE_REQUEST_ACCT, false, "", "stage probes are off");
		features__set_quiet(f, FEATURE_REQUEST_ACCT);
		return;
	}
	decide_accounting(p);
	libbpf_log__reset();
	err = load_all_programs(p);
	if (err && p->exact) {
		/* the stages without their accounting rather than no stages */
		libbpf_log__load_failed(f, FEATURE_REQUEST_ACCT, "sampled", "stage_bpf", err);
		p->exact = false;
		libbpf_log__reset();
		err = load_all_programs(p);
	}
	if (err) {
		p->off = true;
		libbpf_log__load_failed(f, FEATURE_STAGES, "", "stage_bpf", err);
		snprintf(p->why, sizeof(p->why), "%s",
			 f ? features__get(f, FEATURE_STAGES)->reason : strerror(-err));
		features__set(f, FEATURE_REQUEST_ACCT, false, "", "stage probes are off");
		features__set_quiet(f, FEATURE_REQUEST_ACCT);
		return;
	}
	features__set(f, FEATURE_STAGES, true, "uprobe", NULL);
}

struct probes *probes__new(const struct probes_opts *opts)
{
	struct probes *p = calloc(1, sizeof(*p));
	__u32 zero = 0, first = TP_FIRST_DYN_STAGE;
	int err;

	if (!p)
		abort();
	p->opts = *opts;
	p->base = stage_bpf__open();
	if (!p->base) {
		err = -errno;
		pr_err("failed to open the stage BPF object: %s", strerror(-err));
		goto fail;
	}
	p->base->rodata->slot_ns = opts->slot_ns;
	autoload_none(p->base);
	err = stage_bpf__load(p->base);
	if (err) {
		pr_err("failed to load the stage BPF maps: %s", strerror(-err));
		goto fail;
	}
	p->hist = mmap(NULL, HIST_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED,
		       bpf_map__fd(p->base->maps.stage_hist), 0);
	if (p->hist == MAP_FAILED) {
		p->hist = NULL;
		err = -errno;
		pr_err("failed to map the stage histograms: %s", strerror(-err));
		goto fail;
	}
	p->hist_bytes = HIST_BYTES;
	if (bpf_map_update_elem(bpf_map__fd(p->base->maps.stage_next_id), &zero, &first, BPF_ANY)) {
		err = -errno;
		pr_err("failed to initialize the stage ids: %s", strerror(-err));
		goto fail;
	}
	decide_stages(p);
	return p;
fail:
	probes__free(p);
	errno = -err;
	return NULL;
}

void probes__free(struct probes *p)
{
	if (!p)
		return;
	if (p->hist)
		munmap(p->hist, p->hist_bytes);
	stage_bpf__destroy(p->base);
	free(p);
}

static bool is_runtime_main(const char *name, const GElf_Sym *sym, void *ctx)
{
	(void)sym;
	(void)ctx;
	return !strcmp(name, "runtime.main");
}

int probes__is_go_binary(const char *path)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	bool go = false;
	Elf *e;
	int fd;

	elf_version(EV_CURRENT);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF || elf_getshdrstrndx(e, &shstrndx)) {
		if (e)
			elf_end(e);
		close(fd);
		return -ENOEXEC;
	}
	while (!go && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			continue;
		name = elf_strptr(e, shstrndx, sh.sh_name);
		if (name && !strcmp(name, ".go.buildinfo")) {
			go = true;
			break;
		}
		if (sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM)
			go = elf_each_function(e, scn, is_runtime_main, NULL);
	}
	elf_end(e);
	close(fd);
	return go;
}

/* Makes the instance's maps the base's own, so that all share one set. */
static int share_maps(struct probes *p, struct stage_bpf *s)
{
	struct {
		struct bpf_map *mine, *base;
	} m[] = {
	    {s->maps.stage_stacks, p->base->maps.stage_stacks},
	    {s->maps.label_sources, p->base->maps.label_sources},
	    {s->maps.stage_hist, p->base->maps.stage_hist},
	    {s->maps.stage_slow_ns, p->base->maps.stage_slow_ns},
	    {s->maps.stage_names, p->base->maps.stage_names},
	    {s->maps.stage_next_id, p->base->maps.stage_next_id},
	    {s->maps.stage_metrics, p->base->maps.stage_metrics},
	    {s->maps.spans, p->base->maps.spans},
	};

	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
		int err = bpf_map__reuse_fd(m[i].mine, bpf_map__fd(m[i].base));

		if (err)
			return err;
	}
	return 0;
}

static int split_usdt(const char *spec, char *provider, size_t plen, const char **name)
{
	const char *colon = strchr(spec, ':');

	if (!colon || (size_t)(colon - spec) >= plen)
		return -EINVAL;
	memcpy(provider, spec, colon - spec);
	provider[colon - spec] = 0;
	*name = colon + 1;
	return 0;
}

static struct bpf_link *attach_usdt(struct bpf_program *prog, const struct probe_spec *spec,
				    const char *usdt, uint64_t cookie, char *err, size_t errlen)
{
	LIBBPF_OPTS(bpf_usdt_opts, uo, .usdt_cookie = cookie);
	char provider[128];
	const char *name;
	struct bpf_link *l;

	if (split_usdt(usdt, provider, sizeof(provider), &name)) {
		snprintf(err, errlen, "'%s' is not PROVIDER:NAME", usdt);
		errno = EINVAL;
		return NULL;
	}
	l = bpf_program__attach_usdt(prog, spec->pid, spec->binary, provider, name, &uo);
	if (!l) {
		int e = errno;

		snprintf(err, errlen, "failed to attach USDT probe %s in %s: %s%s", usdt,
			 spec->binary, strerror(e),
			 e == ENOENT ? " (no such probe in the file: list them with "
				       "'readelf -n' or 'bpftrace -l usdt:PATH:*')"
				     : "");
		errno = e;
	}
	return l;
}

static struct bpf_link *attach_function(struct bpf_program *prog, const struct probe_spec *spec,
					bool ret, char *err, size_t errlen)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uo, .bpf_cookie = spec->stage, .retprobe = ret,
		    .func_name = spec->function);
	struct bpf_link *l;

	l = bpf_program__attach_uprobe_opts(prog, spec->pid, spec->binary, 0, &uo);
	if (!l) {
		int e = errno;

		snprintf(err, errlen, "failed to attach %s %s in %s: %s%s",
			 ret ? "uretprobe" : "uprobe", spec->function, spec->binary, strerror(e),
			 e == ENOENT ? " (no such function in the file's symbol tables)" : "");
		errno = e;
	}
	return l;
}

struct probe *probes__attach(struct probes *p, const struct probe_spec *spec, char *err,
			     size_t errlen)
{
	struct probe *pr;
	int rc, e;

	if (p->off) {
		snprintf(err, errlen, "stage probes are off: %s", p->why);
		errno = ENOTSUP;
		return NULL;
	}
	if (access(spec->binary, R_OK)) {
		e = errno;
		snprintf(err, errlen, "cannot read %s: %s", spec->binary, strerror(e));
		errno = e;
		return NULL;
	}
	if (spec->kind == PROBE_FUNCTION) {
		rc = probes__is_go_binary(spec->binary);
		if (rc < 0) {
			snprintf(err, errlen, "%s is not an ELF file: %s", spec->binary,
				 strerror(-rc));
			errno = -rc;
			return NULL;
		}
		if (rc) {
			snprintf(err, errlen,
				 "%s is a Go program: a uretprobe on %s would crash it (Go moves "
				 "goroutine stacks and the return trampoline corrupts them); mark "
				 "the stage with USDT probes instead (usdt_begin/usdt_end)",
				 spec->binary, spec->function);
			errno = EPERM;
			return NULL;
		}
	}
	pr = calloc(1, sizeof(*pr));
	if (!pr)
		abort();
	pr->skel = stage_bpf__open();
	if (!pr->skel) {
		e = errno;
		snprintf(err, errlen, "failed to open the stage BPF object: %s", strerror(e));
		goto fail;
	}
	pr->skel->rodata->slot_ns = p->opts.slot_ns;
	pr->skel->rodata->exact_accounting = p->exact;
	autoload_none(pr->skel);
	switch (spec->kind) {
	case PROBE_FUNCTION:
		pr->progs[0] = pr->skel->progs.uprobe_stage_enter;
		pr->progs[1] = pr->skel->progs.uretprobe_stage_exit;
		break;
	case PROBE_USDT:
		pr->progs[0] = pr->skel->progs.usdt_stage_begin;
		pr->progs[1] = pr->skel->progs.usdt_stage_end;
		break;
	case PROBE_APP:
		pr->progs[0] = pr->skel->progs.usdt_app_begin;
		pr->progs[1] = pr->skel->progs.usdt_app_end;
		break;
	}
	bpf_program__set_autoload(pr->progs[0], true);
	bpf_program__set_autoload(pr->progs[1], true);
	rc = share_maps(p, pr->skel);
	if (!rc)
		rc = stage_bpf__load(pr->skel);
	if (rc) {
		e = -rc;
		snprintf(err, errlen,
			 "failed to load the stage BPF programs: %s (run with -v for "
			 "the verifier log)",
			 strerror(e));
		goto fail;
	}
	switch (spec->kind) {
	case PROBE_FUNCTION:
		pr->links[0] = attach_function(pr->progs[0], spec, false, err, errlen);
		if (pr->links[0])
			pr->links[1] = attach_function(pr->progs[1], spec, true, err, errlen);
		break;
	case PROBE_USDT:
		pr->links[0] =
		    attach_usdt(pr->progs[0], spec, spec->usdt_begin, spec->stage, err, errlen);
		if (pr->links[0])
			pr->links[1] = attach_usdt(pr->progs[1], spec, spec->usdt_end, spec->stage,
						   err, errlen);
		break;
	case PROBE_APP:
		pr->links[0] =
		    attach_usdt(pr->progs[0], spec, "tailprof:stage__begin", 0, err, errlen);
		if (pr->links[0])
			pr->links[1] =
			    attach_usdt(pr->progs[1], spec, "tailprof:stage__end", 0, err, errlen);
		break;
	}
	if (!pr->links[0] || !pr->links[1]) {
		e = errno;
		goto fail;
	}
	return pr;
fail:
	probe__detach(pr);
	errno = e;
	return NULL;
}

void probe__detach(struct probe *pr)
{
	if (!pr)
		return;
	bpf_link__destroy(pr->links[0]);
	bpf_link__destroy(pr->links[1]);
	stage_bpf__destroy(pr->skel);
	free(pr);
}

void probe__stats(const struct probe *pr, struct probe_stats *st)
{
	memset(st, 0, sizeof(*st));
	for (int i = 0; i < 2; i++) {
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);

		if (bpf_obj_get_info_by_fd(bpf_program__fd(pr->progs[i]), &info, &len))
			continue;
		if (i == 0)
			st->enter_cnt = info.run_cnt;
		else
			st->exit_cnt = info.run_cnt;
		st->run_time_ns += info.run_time_ns;
	}
}

int probes__label_sources_fd(const struct probes *p)
{
	return p ? bpf_map__fd(p->base->maps.label_sources) : 0;
}

int probes__stage_stacks_fd(const struct probes *p)
{
	return bpf_map__fd(p->base->maps.stage_stacks);
}

int probes__spans_fd(const struct probes *p)
{
	return bpf_map__fd(p->base->maps.spans);
}

struct tp_stage_hist *probes__hist(const struct probes *p)
{
	return p->hist;
}

int probes__set_slow_ns(struct probes *p, uint32_t id, uint64_t ns)
{
	if (bpf_map_update_elem(bpf_map__fd(p->base->maps.stage_slow_ns), &id, &ns, BPF_ANY))
		return -errno;
	return 0;
}

int probes__name_stage(struct probes *p, const char *name, uint32_t id)
{
	char key[TP_STAGE_NAME_LEN] = {};

	snprintf(key, sizeof(key), "%s", name);
	if (bpf_map_update_elem(bpf_map__fd(p->base->maps.stage_names), key, &id, BPF_ANY))
		return -errno;
	return 0;
}

size_t probes__for_each_name(struct probes *p, void (*fn)(void *arg, const char *name, uint32_t id),
			     void *arg)
{
	int fd = bpf_map__fd(p->base->maps.stage_names);
	char key[TP_STAGE_NAME_LEN], next[TP_STAGE_NAME_LEN];
	void *prev = NULL;
	size_t n = 0;
	__u32 id;

	while (!bpf_map_get_next_key(fd, prev, next)) {
		memcpy(key, next, sizeof(key));
		prev = key;
		if (bpf_map_lookup_elem(fd, key, &id))
			continue;
		key[sizeof(key) - 1] = 0;
		fn(arg, key, id);
		n++;
	}
	return n;
}

void probes__metrics(struct probes *p, uint64_t out[TP_SM_NR])
{
	int fd = bpf_map__fd(p->base->maps.stage_metrics);

	for (__u32 i = 0; i < TP_SM_NR; i++)
		if (bpf_map_lookup_elem(fd, &i, &out[i]))
			out[i] = 0;
}
