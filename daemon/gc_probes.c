// SPDX-License-Identifier: GPL-2.0-only
/* The GC skeleton's lifecycle and its attachments (USDT, entry uprobes, the dlopen uretprobe). */
#include "gc_probes.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "gc_discovery.h"
#include "kernel_probe.h"
#include "libbpf_log.h"
#include "log.h"
#include "gc.skel.h"

#define GC_MAX_LINKS 4

struct gc_probes {
	struct gc_bpf *skel;
	struct bpf_link *dlopen;
};

struct gc_attachment {
	struct bpf_link *links[GC_MAX_LINKS];
	int nr;
};

struct gc_probes *gc_probes__new(int label_sources_fd, struct features *f)
{
	struct gc_probes *p = calloc(1, sizeof(*p));
	char why[200];
	int err;

	if (!p)
		abort();
	if (kernel_probe__uprobes(false, why, sizeof(why))) {
		features__set(f, FEATURE_GC, false, "", "%s", why);
		free(p);
		errno = ENOTSUP;
		return NULL;
	}
	libbpf_log__reset();
	p->skel = gc_bpf__open();
	err = p->skel ? 0 : -errno;
	if (!err && label_sources_fd > 0)
		err = bpf_map__reuse_fd(p->skel->maps.label_sources, label_sources_fd);
	if (!err)
		err = gc_bpf__load(p->skel);
	if (err) {
		libbpf_log__load_failed(f, FEATURE_GC, "", "gc_bpf", err);
		gc_probes__free(p);
		errno = -err;
		return NULL;
	}
	features__set(f, FEATURE_GC, true, "usdt+uprobe", NULL);
	return p;
}

void gc_probes__free(struct gc_probes *p)
{
	if (!p)
		return;
	bpf_link__destroy(p->dlopen);
	gc_bpf__destroy(p->skel);
	free(p);
}

int gc_probes__events_fd(const struct gc_probes *p)
{
	return bpf_map__fd(p->skel->maps.gc_events);
}

int gc_probes__label_sources_fd(const struct gc_probes *p)
{
	return bpf_map__fd(p->skel->maps.label_sources);
}

int gc_probes__pausing_fd(const struct gc_probes *p)
{
	return bpf_map__fd(p->skel->maps.gc_pausing);
}

int gc_probes__open_fd(const struct gc_probes *p)
{
	return bpf_map__fd(p->skel->maps.gc_open);
}

int gc_probes__attach_dlopen(struct gc_probes *p, const char *libc_path)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .retprobe = true);
	uint64_t off;
	int err;

	/* libbpf finds glibc's two versions of dlopen ambiguous: look it up ourselves */
	err = gc_discovery__func_offset(libc_path, "dlopen", &off);
	if (!err) {
		p->dlopen = bpf_program__attach_uprobe_opts(p->skel->progs.dlopen_return, -1,
							    libc_path, off, &opts);
		if (!p->dlopen)
			err = -errno;
	}
	if (err) {

		pr_warn("failed to attach uretprobe dlopen in %s: %s (libjvm.so loaded later is "
			"found by the periodic scan only)",
			libc_path, strerror(-err));
		return err;
	}
	return 0;
}

struct probe_def {
	struct bpf_program *prog;
	const char *provider; /* USDT provider, NULL: a uprobe on function */
	const char *name;     /* USDT name or function */
	uint64_t offset;      /* uprobe: the function's file offset; 0: looked up by name */
	bool retprobe;	      /* uprobe: at the function's return */
};

/* The probes of a supported object (struct gc_object_info), in attach order. Returns how many,
 * or -EINVAL. */
static int probe_defs(struct gc_bpf *s, const struct gc_object_info *info,
		      struct probe_def defs[GC_MAX_LINKS])
{
	int n = 0;

	switch (info->runtime) {
	case TP_GC_JVM:
		defs[n++] = (struct probe_def){s->progs.jvm_gc_begin, "hotspot", "gc__begin"};
		defs[n++] = (struct probe_def){s->progs.jvm_gc_end, "hotspot", "gc__end"};
		if (info->safepoints) {
			defs[n++] = (struct probe_def){s->progs.jvm_safepoint_begin, "hs_private",
						       "safepoint__begin"};
			defs[n++] = (struct probe_def){s->progs.jvm_safepoint_end, "hs_private",
						       "safepoint__end"};
		}
		return n;
	case TP_GC_PYTHON:
		if (info->method == GC_METHOD_UPROBE) {
			/* C code: a uretprobe is safe here (unlike Go's moving stacks) */
			defs[n++] = (struct probe_def){s->progs.python_gc_return, NULL,
						       GC_PY_COLLECT, info->collect_offset, true};
			defs[n++] = (struct probe_def){s->progs.python_gc_entry, NULL,
						       GC_PY_COLLECT, info->collect_offset};
			return n;
		}
		defs[n++] = (struct probe_def){s->progs.python_gc_start, "python", "gc__start"};
		defs[n++] = (struct probe_def){s->progs.python_gc_done, "python", "gc__done"};
		return n;
	case TP_GC_GO:
		/* entry only: a uretprobe would corrupt goroutine stacks Go moves */
		defs[n++] = (struct probe_def){s->progs.go_gc_reset, NULL, GC_GO_RESET};
		defs[n++] = (struct probe_def){s->progs.go_stop_world, NULL, GC_GO_STOP_WORLD};
		defs[n++] = (struct probe_def){s->progs.go_mark_termination, NULL, GC_GO_MARK_TERM};
		defs[n++] = (struct probe_def){s->progs.go_start_world, NULL, GC_GO_START_WORLD};
		return n;
	default:
		return -EINVAL;
	}
}

struct gc_attachment *gc_probes__attach(struct gc_probes *p, const struct gc_object_info *info,
					const char *path, char *err, size_t errlen)
{
	struct probe_def defs[GC_MAX_LINKS];
	struct gc_attachment *a;
	int n = probe_defs(p->skel, info, defs), e;

	if (n < 0) {
		snprintf(err, errlen, "unknown runtime %u", info->runtime);
		errno = EINVAL;
		return NULL;
	}
	a = calloc(1, sizeof(*a));
	if (!a)
		abort();
	for (int i = 0; i < n; i++) {
		struct bpf_link *l;

		if (defs[i].provider) {
			l = bpf_program__attach_usdt(defs[i].prog, -1, path, defs[i].provider,
						     defs[i].name, NULL);
		} else {
			LIBBPF_OPTS(bpf_uprobe_opts, opts, .retprobe = defs[i].retprobe,
				    .func_name = defs[i].offset ? NULL : defs[i].name);

			l = bpf_program__attach_uprobe_opts(defs[i].prog, -1, path, defs[i].offset,
							    &opts);
		}
		if (!l) {
			e = errno;
			snprintf(err, errlen, "failed to attach %s %s%s%s in %s: %s",
				 defs[i].provider   ? "USDT"
				 : defs[i].retprobe ? "uretprobe"
						    : "uprobe",
				 defs[i].provider ? defs[i].provider : "",
				 defs[i].provider ? ":" : "", defs[i].name, path, strerror(e));
			gc_attachment__free(a);
			errno = e;
			return NULL;
		}
		a->links[a->nr++] = l;
	}
	return a;
}

int gc_attachment__nr_links(const struct gc_attachment *a)
{
	return a ? a->nr : 0;
}

void gc_attachment__free(struct gc_attachment *a)
{
	if (!a)
		return;
	/* the last attached first: the Python uprobe way's entry goes before its return */
	while (a->nr > 0)
		bpf_link__destroy(a->links[--a->nr]);
	free(a);
}

void gc_probes__metrics(struct gc_probes *p, uint64_t out[TP_GCM_NR])
{
	int fd = bpf_map__fd(p->skel->maps.gc_metrics);

	for (uint32_t m = 0; m < TP_GCM_NR; m++)
		if (bpf_map_lookup_elem(fd, &m, &out[m]))
			out[m] = 0;
}

size_t gc_probes__prog_stats(struct gc_probes *p, struct loader_prog_stats *out, size_t max)
{
	return loader__object_prog_stats(p->skel->obj, out, max);
}
