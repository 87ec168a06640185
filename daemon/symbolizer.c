// SPDX-License-Identifier: GPL-2.0-only
/* The symbolizer: per-process caches of executable mappings, resolving addresses to objects. The
 * objects of mappings are opened in sym_objects.c. */
#include "symbolizer_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "elf_object.h"
#include "hashmap.h"
#include "log.h"
#include "proc_maps.h"
#include "sysinfo.h"
#include "tailprof.h"

_Static_assert(STATIC_LAYOUTS == TP_STATIC_LAYOUTS, "one table of static layouts each side");

#define MAPS_MAX_BYTES (256u << 20)
/* An address in no cached mapping rereads the maps at most this often per process. */
#define RESCAN_INTERVAL_NS (100ull * 1000 * 1000)
/* A reread that finds the same mappings doubles the wait before the next for an address past a
 * leaf, up to 2^REREAD_BACKOFF_MAX times RESCAN_INTERVAL_NS (3.2 s): those addresses were a
 * broken frame chain's garbage (a Go runtime function's CFI leading into the Go heap), which
 * comes back at every such stack. */
#define REREAD_BACKOFF_MAX    5
#define PROC_BUCKETS_MIN      256
#define DEFAULT_MAX_PROCESSES 8192
#define DEFAULT_MAX_OBJECTS   4096

static void release_mappings(struct proc_maps *maps, struct mapping_obj *mobjs)
{
	for (size_t i = 0; mobjs && i < maps->nr; i++)
		object__put(mobjs[i].obj);
	free(mobjs);
	proc_maps__clear(maps);
}

void symbolizer_release_stale(struct symbolizer *s)
{
	release_mappings(&s->stale_maps, s->stale_mobjs);
	s->stale_mobjs = NULL;
	object__put(s->stale_jit);
	s->stale_jit = NULL;
}

/* --- processes --- */

static void lru_unlink(struct symbolizer *s, struct process *p)
{
	if (p->lru_prev)
		p->lru_prev->lru_next = p->lru_next;
	else
		s->lru_head = p->lru_next;
	if (p->lru_next)
		p->lru_next->lru_prev = p->lru_prev;
	else
		s->lru_tail = p->lru_prev;
	p->lru_prev = p->lru_next = NULL;
}

static void lru_push(struct symbolizer *s, struct process *p)
{
	p->lru_prev = NULL;
	p->lru_next = s->lru_head;
	if (s->lru_head)
		s->lru_head->lru_prev = p;
	s->lru_head = p;
	if (!s->lru_tail)
		s->lru_tail = p;
}

static void lru_touch(struct symbolizer *s, struct process *p)
{
	if (s->lru_head != p) {
		lru_unlink(s, p);
		lru_push(s, p);
	}
}

static size_t pid_bucket(const struct symbolizer *s, uint32_t pid)
{
	return (pid * 2654435761u) & (s->nr_buckets - 1);
}

static struct process *proc_find(struct symbolizer *s, uint32_t pid)
{
	struct process *p = s->procs[pid_bucket(s, pid)];

	while (p && p->pid != pid)
		p = p->hnext;
	return p;
}

/* Doubles the buckets; on allocation failure the table just stays as it is (longer chains). */
static void proc_table_grow(struct symbolizer *s)
{
	size_t old_nr = s->nr_buckets;
	struct process **old = s->procs, **nb;

	if (old_nr > SIZE_MAX / 2 / sizeof(*nb))
		return;
	nb = calloc(old_nr * 2, sizeof(*nb));
	if (!nb)
		return;
	s->procs = nb;
	s->nr_buckets = old_nr * 2;
	for (size_t i = 0; i < old_nr; i++) {
		struct process *p = old[i];

		while (p) {
			struct process *next = p->hnext;
			size_t b = pid_bucket(s, p->pid);

			p->hnext = nb[b];
			nb[b] = p;
			p = next;
		}
	}
	free(old);
}

static struct process *proc_new(struct symbolizer *s, uint32_t pid, uint64_t start_ns)
{
	struct process *p = sym_xcalloc(1, sizeof(*p));
	size_t b;

	if (s->nr_procs >= s->nr_buckets)
		proc_table_grow(s);
	p->pid = pid;
	p->start_ns = start_ns;
	p->err = -ESRCH;
	b = pid_bucket(s, pid);
	p->hnext = s->procs[b];
	s->procs[b] = p;
	s->nr_procs++;
	lru_push(s, p);
	return p;
}

static void proc_drop(struct symbolizer *s, struct process *p)
{
	struct process **pp = &s->procs[pid_bucket(s, p->pid)];

	while (*pp != p)
		pp = &(*pp)->hnext;
	*pp = p->hnext;
	s->nr_procs--;
	if (p->readable)
		s->nr_readable--;
	lru_unlink(s, p);
	release_mappings(&p->maps, p->mobjs);
	object__put(p->jit);
	free(p);
}

/* True when dropping p would free an object: one only p references. */
static bool frees_objects(const struct process *p)
{
	for (size_t i = 0; p->mobjs && i < p->maps.nr; i++)
		if (p->mobjs[i].obj && p->mobjs[i].obj->refcnt == 1)
			return true;
	return p->jit && p->jit->refcnt == 1;
}

static void evict(struct symbolizer *s, struct process *p)
{
	size_t before = s->objects.nr;

	proc_drop(s, p);
	s->stats.evicted_processes++;
	s->stats.evicted_objects += before - s->objects.nr;
}

/* Keeps max_processes after a call that added a process (enforce_caps ran before it): evicts from
 * the least recently used end, never the process the call used (it is the most recent; a fork
 * fallback's parent too), so frames the call returned keep their objects, and a new process
 * shared the objects of the one it replaces before that one went. */
static void trim_processes(struct symbolizer *s)
{
	while (s->lru_tail && s->nr_procs > s->max_processes)
		evict(s, s->lru_tail);
}

/* Applies the caps, least recently used processes first: past max_processes any process goes;
 * past max_objects only processes whose going frees an object (one that no window and no other
 * process references), looking at most EVICT_SCAN of them per call so that a cache full of
 * objects the windows hold costs little. Called at the start of a resolve, when no frame of the
 * symbolizer's is borrowed any more. */
#define EVICT_SCAN 256
static void enforce_caps(struct symbolizer *s)
{
	struct process *p;

	while (s->lru_tail && s->nr_procs > s->max_processes)
		evict(s, s->lru_tail);
	if (s->objects.nr <= s->max_objects) {
		s->objects_floor = 0;
		return;
	}
	/* the objects the last fruitless scan left are all held elsewhere: look again only
	 * once there are more */
	if (s->objects.nr <= s->objects_floor)
		return;
	p = s->lru_tail;
	for (int n = 0; p && s->objects.nr > s->max_objects && n < EVICT_SCAN; n++) {
		struct process *prev = p->lru_prev;

		if (frees_objects(p))
			evict(s, p);
		p = prev;
	}
	if (s->objects.nr > s->max_objects)
		s->objects_floor = s->objects.nr;
}

/* Moves each object of old mappings to the identical new mapping, if any (both sorted). */
static void carry_objects(struct proc_maps *old, struct mapping_obj *old_mobjs,
			  const struct proc_maps *cur, struct mapping_obj *cur_mobjs)
{
	size_t i = 0, j = 0;

	while (old_mobjs && i < old->nr && j < cur->nr) {
		const struct proc_mapping *a = &old->v[i], *b = &cur->v[j];

		if (a->start < b->start) {
			i++;
		} else if (a->start > b->start) {
			j++;
		} else {
			if (a->end == b->end && a->pgoff == b->pgoff && a->inode == b->inode &&
			    a->dev_major == b->dev_major && a->dev_minor == b->dev_minor &&
			    !strcmp(a->path, b->path)) {
				cur_mobjs[j] = old_mobjs[i];
				old_mobjs[i] = (struct mapping_obj){};
			}
			i++;
			j++;
		}
	}
}

static bool same_mappings(const struct proc_maps *a, const struct proc_maps *b)
{
	if (a->nr != b->nr)
		return false;
	for (size_t i = 0; i < a->nr; i++)
		if (a->v[i].start != b->v[i].start || a->v[i].end != b->v[i].end ||
		    a->v[i].pgoff != b->v[i].pgoff || a->v[i].inode != b->v[i].inode ||
		    strcmp(a->v[i].path, b->v[i].path))
			return false;
	return true;
}

/* Whether code at mapping m runs only after p's dynamic loader mapped the libraries it loads at
 * start: its executable's, and, where the loader is known (the file its exec began in), any file
 * but the loader's. The loader hands over to the executable once they are all mapped and
 * relocated; a library's code runs before only during that relocation (IFUNC resolvers), after
 * they are mapped. */
static bool runs_after_loader(const struct process *p, const struct proc_mapping *m)
{
	if (!proc_mapping__is_file(m) || proc_mapping__of(m, p->loader_dev, p->loader_ino))
		return false;
	return proc_mapping__of(m, p->exe_dev, p->exe_ino) || p->loader_ino;
}

/* The code files p maps now, as a loaded_set of its executable. */
static struct loaded_set loaded_set_of(const struct process *p)
{
	struct loaded_set set = {.exe_dev = p->exe_dev, .exe_ino = p->exe_ino};

	for (size_t i = 0; i < p->maps.nr; i++) {
		const struct proc_mapping *m = &p->maps.v[i];

		if (!proc_mapping__is_file(m))
			continue;
		/* a sum: the order they were mapped in, or placed in, does not count */
		set.hash +=
		    hashmap__mix64(hashmap__combine(makedev(m->dev_major, m->dev_minor), m->inode));
		set.nr++;
	}
	return set;
}

/* Finds p's dynamic loader in its maps: the file mapped at its entry point. */
static void find_loader(struct process *p)
{
	const struct proc_mapping *m = p->entry_ip ? proc_maps__find(&p->maps, p->entry_ip) : NULL;

	if (m && proc_mapping__is_file(m) && m->inode) {
		p->loader_dev = makedev(m->dev_major, m->dev_minor);
		p->loader_ino = m->inode;
	}
}

/* Whether p's executable file is all the code of a file it has mapped (no dynamic loader: a
 * static executable; anonymous and special mappings aside). */
static bool exe_only(const struct process *p)
{
	bool exe = false;

	for (size_t i = 0; i < p->maps.nr; i++) {
		if (!proc_mapping__is_file(&p->maps.v[i]))
			continue;
		if (!proc_mapping__of(&p->maps.v[i], p->exe_dev, p->exe_ino))
			return false;
		exe = true;
	}
	return exe;
}

/* ---- static executables' layouts ---- */

static struct static_layout *layout_slot(struct symbolizer *s, uint64_t dev, uint64_t ino)
{
	return &s->layouts[hashmap__mix64(hashmap__combine(dev, ino)) % STATIC_LAYOUTS];
}

/* The layout recorded for executable (dev, ino), or NULL. */
static struct static_layout *layout_of(struct symbolizer *s, uint64_t dev, uint64_t ino)
{
	struct static_layout *l = layout_slot(s, dev, ino);

	return ino && l->ino == ino && l->dev == dev ? l : NULL;
}

/* Empties layout slot l, telling BPF (tell) that its executable is no longer known. */
static void drop_layout(struct symbolizer *s, struct static_layout *l, bool tell)
{
	if (!l->ino)
		return;
	if (tell)
		s->layout_known(s->layout_ctx, sysinfo__kernel_dev(l->dev), l->ino, false);
	free(l->path);
	object__put(l->vdso);
	*l = (struct static_layout){};
	s->stats.layouts--;
}

/* Records the layout of p's executable from p's maps, read while all its code was its
 * executable's (exe_only): what processes exec'd from that file later are given, with no read
 * of their maps. Not for an executable of more mappings than LAYOUT_MAPPINGS, or one deleted or
 * replaced since (its path names another file). */
static void record_layout(struct symbolizer *s, const struct process *p)
{
	struct static_layout *l = layout_slot(s, p->exe_dev, p->exe_ino), n = {};
	const char *path = NULL;

	if (!s->layout_known || !p->start_code || !p->exe_ino ||
	    layout_of(s, p->exe_dev, p->exe_ino))
		return;
	for (size_t i = 0; i < p->maps.nr; i++) {
		const struct proc_mapping *m = &p->maps.v[i];

		if (proc_mapping__of(m, p->exe_dev, p->exe_ino)) {
			if (n.nr == LAYOUT_MAPPINGS || m->deleted)
				return;
			n.v[n.nr].start = m->start - p->start_code;
			n.v[n.nr].end = m->end - p->start_code;
			n.v[n.nr++].pgoff = m->pgoff;
			path = m->path;
		} else if (p->vdso && m->start == p->vdso && !strcmp(m->path, "[vdso]")) {
			n.vdso_size = m->end - m->start;
		}
	}
	if (!n.nr || !(n.path = strdup(path)))
		return;
	n.dev = p->exe_dev;
	n.ino = p->exe_ino;
	n.size = p->exe_size;
	drop_layout(s, l, true);
	if (s->layout_known(s->layout_ctx, sysinfo__kernel_dev(n.dev), n.ino, true)) {
		free(n.path);
		return;
	}
	*l = n;
	s->stats.layouts++;
}

/* Keeps the vDSO object obj that a process of a recorded static executable opened at mapping m
 * for the layout, so that its later processes have it without reading their memory. */
static void layout_vdso(struct symbolizer *s, const struct process *p, const struct proc_mapping *m,
			struct object *obj)
{
	struct static_layout *l = layout_of(s, p->exe_dev, p->exe_ino);

	if (obj && l && !l->vdso && l->vdso_size == m->end - m->start)
		l->vdso = object__get(obj);
}

static void sort_mappings(struct proc_maps *maps, struct mapping_obj *mobjs)
{
	for (size_t i = 1; i < maps->nr; i++)
		for (size_t j = i; j > 0 && maps->v[j - 1].start > maps->v[j].start; j--) {
			struct proc_mapping m = maps->v[j];
			struct mapping_obj mo = mobjs[j];

			maps->v[j] = maps->v[j - 1];
			mobjs[j] = mobjs[j - 1];
			maps->v[j - 1] = m;
			mobjs[j - 1] = mo;
		}
}

/* Process (pid, start_ns), just exec'd (identity id) from a static executable whose layout BPF
 * found recorded: its maps made from the layout at its start_code and vDSO, as a read would
 * give them, and its labels from its exec. Not when the layout is no longer here (replaced
 * since BPF looked) or is of a file of another size (rewritten in place: the same inode; the
 * layout is dropped then), which BPF is told to forget, or when memory runs out: the process's
 * maps are read at its first sample then. */
static void from_layout(struct symbolizer *s, uint32_t pid, uint64_t start_ns,
			const struct exec_identity *id)
{
	struct static_layout *l = layout_of(s, id->exe_dev, id->exe_ino);
	struct proc_maps maps = {};
	struct mapping_obj *mobjs;
	struct process *p;
	bool ok = true;

	if (!l || !id->start_code || l->size != id->exe_size) {
		s->stats.layouts_missing++;
		if (l)
			drop_layout(s, l, true); /* recorded again at the next read */
		else if (s->layout_known && id->exe_ino)
			s->layout_known(s->layout_ctx, sysinfo__kernel_dev(id->exe_dev),
					id->exe_ino, false);
		return;
	}
	maps.v = calloc(l->nr + 1, sizeof(*maps.v));
	mobjs = calloc(l->nr + 1, sizeof(*mobjs));
	if (!maps.v || !mobjs) {
		free(maps.v);
		free(mobjs);
		return;
	}
	for (uint32_t i = 0; i < l->nr; i++) {
		maps.v[maps.nr++] = (struct proc_mapping){
		    .start = id->start_code + l->v[i].start,
		    .end = id->start_code + l->v[i].end,
		    .pgoff = l->v[i].pgoff,
		    .inode = l->ino,
		    .dev_major = major(l->dev),
		    .dev_minor = minor(l->dev),
		    .path = strdup(l->path),
		};
		ok &= maps.v[maps.nr - 1].path != NULL;
	}
	if (l->vdso_size && id->vdso) {
		maps.v[maps.nr] = (struct proc_mapping){
		    .start = id->vdso, .end = id->vdso + l->vdso_size, .path = strdup("[vdso]")};
		ok &= maps.v[maps.nr].path != NULL;
		if (l->vdso)
			mobjs[maps.nr] =
			    (struct mapping_obj){.obj = object__get(l->vdso), .opened = true};
		maps.nr++;
	}
	if (!ok) {
		release_mappings(&maps, mobjs);
		return;
	}
	sort_mappings(&maps, mobjs);
	p = proc_find(s, pid);
	if (p)
		proc_drop(s, p);
	p = proc_new(s, pid, start_ns);
	p->maps = maps;
	p->mobjs = mobjs;
	p->readable = true;
	s->nr_readable++;
	p->err = 0;
	p->last_read_ns = p->maps_read_ns = sysinfo__mono_ns();
	/* the labels its exec told (the cgroup path read for an earlier process of its cgroup),
	 * /proc only for what it did not tell, while the pid is still this process */
	symbolizer_read_info(s, p, !symbolizer_check_identity(s, pid, start_ns));
	p->loader_dev = p->exe_dev;
	p->loader_ino = p->exe_ino;
	p->loaded = true;
	p->from_layout = true;
	s->stats.loaded_static++;
	s->stats.from_layout++;
}

/* (Re)reads the maps of p, verifying after the read that the pid still is that process, so a
 * process that exits or is replaced mid-read leaves nothing half-read. Once is enough: the read
 * came after p's sample, so a pid that still shows p's start time was p's all along. On failure
 * the cached maps (if any) stay. Returns 0 or a negative errno. */
static int read_process(struct symbolizer *s, struct process *p)
{
	struct proc_maps maps = {};
	struct mapping_obj *mobjs;
	bool known;
	int err;

	p->last_read_ns = sysinfo__mono_ns();
	s->stats.maps_reads++;
	/* the mmap records know a process that started after tailprofd, even once it exited */
	err = proc_maps__load_process(s->proc_root, p->pid, p->start_ns, MAPS_MAX_BYTES, &maps,
				      &known);
	if (err == -ENOENT)
		err = -ESRCH;
	if (err <= 0) {
		/* No executable mapping: an exited process (empty maps) or a kernel thread. */
		err = err ? err : -ESRCH;
		goto fail;
	}
	if (known)
		s->stats.identity_checks[2]++;
	else if ((err = symbolizer_check_identity(s, p->pid, p->start_ns)))
		goto fail;
	mobjs = calloc(maps.nr, sizeof(*mobjs));
	if (!mobjs) {
		err = -ENOMEM;
		goto fail;
	}
	if (p->readable && same_mappings(&p->maps, &maps))
		p->backoff += p->backoff < REREAD_BACKOFF_MAX;
	else
		p->backoff = 0;
	carry_objects(&p->maps, p->mobjs, &maps, mobjs);
	symbolizer_release_stale(s);
	s->stale_maps = p->maps;
	s->stale_mobjs = p->mobjs;
	p->maps = maps;
	p->mobjs = mobjs;
	if (!p->readable)
		s->nr_readable++;
	p->readable = true;
	p->err = 0;
	p->maps_read_ns = p->last_read_ns;
	if (!p->info_read)
		symbolizer_read_info(s, p, true);
	if (!p->loader_ino)
		find_loader(p);
	if (!p->loaded && exe_only(p)) {
		p->loaded = true;
		s->stats.loaded_static++;
		record_layout(s, p);
	}
	return 0;
fail:
	proc_maps__clear(&maps);
	s->stats.maps_failed++;
	if (!p->readable)
		p->err = err;
	pr_debug("cannot read maps of process %u: %s", p->pid, strerror(-err));
	return err;
}

/* The process (pid, start_ns) with its maps, or NULL with *err set. */
static struct process *get_process(struct symbolizer *s, uint32_t pid, uint64_t start_ns, int *err)
{
	struct process *p = proc_find(s, pid);

	if (p && p->start_ns != start_ns) {
		/* Either the pid was reused (drop the old entry) or this is a late sample of an
		 * earlier process with this pid (keep the entry of the live one): /proc decides. */
		*err = symbolizer_check_identity(s, pid, start_ns);
		if (*err) {
			s->stats.maps_failed++;
			return NULL;
		}
		proc_drop(s, p);
		p = NULL;
	}
	if (!p) {
		p = proc_new(s, pid, start_ns);
		*err = read_process(s, p);
		return *err ? NULL : p;
	}
	/* the most recent: trim_processes never takes the process a call used */
	lru_touch(s, p);
	if (!p->readable) {
		if (sysinfo__mono_ns() - p->last_read_ns < RESCAN_INTERVAL_NS) {
			*err = p->err;
			return NULL;
		}
		*err = read_process(s, p);
		return *err ? NULL : p;
	}
	*err = 0;
	return p;
}

/* The parent of process (pid, start_ns), a forked child that has not exec'd since (its fork link
 * is intact), when its maps are cached and read: the child's own until it execs, its vDSO
 * included. NULL otherwise; the parent's maps are never read here (a call's frames may borrow
 * what a read frees). */
static struct process *fork_parent(struct symbolizer *s, uint32_t pid, uint64_t start_ns)
{
	struct process *parent;
	uint64_t pstart;
	uint32_t ppid;

	if (!symbolizer__fork_parent(s, pid, start_ns, &ppid, &pstart))
		return NULL;
	parent = proc_find(s, ppid);
	if (!parent || parent->start_ns != pstart || !parent->readable)
		return NULL;
	return parent;
}

/* The vDSO at mapping m of p, a forked child whose own memory cannot be read any more (it exited
 * before an address fell into its vDSO): its parent's, the child's until it execs, from the
 * parent's cached maps (the same mapping). NULL when there is no such parent. */
static struct object *fork_parent_vdso(struct symbolizer *s, const struct process *p,
				       const struct proc_mapping *m)
{
	struct process *parent = fork_parent(s, p->pid, p->start_ns);
	const struct proc_mapping *pm;
	struct mapping_obj *pmo;

	if (!parent)
		return NULL;
	pm = proc_maps__find(&parent->maps, m->start);
	if (!pm || pm->start != m->start || pm->end != m->end || strcmp(pm->path, "[vdso]"))
		return NULL;
	pmo = &parent->mobjs[pm - parent->maps.v];
	if (!pmo->opened) {
		pmo->obj = symbolizer_open_vdso(s, parent->pid, pm);
		pmo->opened = true;
	}
	return object__get(pmo->obj);
}

/* Resolves addr in the cached mappings of p. Returns false when no mapping holds it. */
static bool resolve_in(struct symbolizer *s, struct process *p, uint64_t addr, struct frame *f)
{
	const struct proc_mapping *m = proc_maps__find(&p->maps, addr);
	struct mapping_obj *mo;

	if (!m)
		return false;
	f->obj = NULL;
	f->addr = addr;
	mo = &p->mobjs[m - p->maps.v];
	if (proc_mapping__is_file(m)) {
		if (!mo->opened) {
			mo->obj = symbolizer_open_object(s, p->pid, m);
			mo->opened = true;
		}
	} else if (!strcmp(m->path, "[vdso]")) {
		if (!mo->opened) {
			mo->obj = symbolizer_open_vdso(s, p->pid, m);
			if (!mo->obj)
				mo->obj = fork_parent_vdso(s, p, m);
			mo->opened = true;
			layout_vdso(s, p, m, mo->obj);
		}
	} else if (!m->path[0] || !strncmp(m->path, "[anon:", 6)) {
		/* anonymous executable memory: JIT code, named by the process's perf map */
		struct object *jit = symbolizer_jit_object(s, p);

		if (jit && symtab__find(&jit->symtab, addr))
			f->obj = jit;
		return true;
	}
	if (!mo->obj)
		return true;
	f->obj = mo->obj;
	f->addr = object__file_to_vaddr(mo->obj, addr - m->start + m->pgoff);
	return true;
}

/* --- the public interface --- */

struct symbolizer *symbolizer__new(const struct symbolizer_opts *opts)
{
	const struct symbolizer_opts none = {};
	struct symbolizer *s;
	long hz;

	if (!opts)
		opts = &none;
	hz = sysconf(_SC_CLK_TCK);
	if (hz <= 0 || hz > 1000000000) {
		errno = EINVAL;
		return NULL;
	}
	s = sym_xcalloc(1, sizeof(*s));
	s->ns_per_tick = 1000000000ull / hz;
	s->proc_root = sym_xstrdup(opts->proc_root ? opts->proc_root : "/proc");
	s->nr_debug_dirs = opts->nr_debug_dirs ? opts->nr_debug_dirs : 1;
	s->debug_dirs = sym_xcalloc(s->nr_debug_dirs, sizeof(*s->debug_dirs));
	for (size_t i = 0; i < s->nr_debug_dirs; i++)
		s->debug_dirs[i] =
		    sym_xstrdup(opts->nr_debug_dirs ? opts->debug_dirs[i] : "/usr/lib/debug");
	s->max_processes = opts->max_processes ? opts->max_processes : DEFAULT_MAX_PROCESSES;
	s->max_objects = opts->max_objects ? opts->max_objects : DEFAULT_MAX_OBJECTS;
	s->live_start = opts->live_start;
	s->live_since = opts->live_since;
	s->live_ctx = opts->live_ctx;
	s->cgroup_id = opts->cgroup_id;
	s->cgroup_ctx = opts->cgroup_ctx;
	s->layout_known = opts->layout_known;
	s->layout_ctx = opts->layout_ctx;
	s->nr_buckets = PROC_BUCKETS_MIN;
	s->procs = sym_xcalloc(s->nr_buckets, sizeof(*s->procs));
	symbolizer_load_kernel(s, opts);
	object_cache__add(&s->objects, s->kernel, false);
	return s;
}

void symbolizer__free(struct symbolizer *s)
{
	if (!s)
		return;
	symbolizer_release_stale(s);
	for (size_t i = 0; i < s->nr_buckets; i++)
		while (s->procs[i])
			proc_drop(s, s->procs[i]);
	for (size_t i = 0; i < STATIC_LAYOUTS; i++)
		drop_layout(s, &s->layouts[i], false);
	object__put(s->kernel);
	free(s->kallsyms_path);
	free(s->trampolines);
	object_cache__detach_all(&s->objects);
	free(s->procs);
	for (size_t i = 0; i < s->nr_debug_dirs; i++)
		free(s->debug_dirs[i]);
	free(s->debug_dirs);
	free(s->proc_root);
	free(s);
}

/* Whether addr, in no executable mapping of p, lies inside the load extent of an object that one
 * of p's mappings holds (between its lowest segment's start and its highest's end in memory: its
 * data, its bss, a gap between its segments): a stack word that a broken frame chain took for a
 * return address, not code mapped since p's maps were read. The bottom frame of a Go system stack
 * (g0's) is one: its CFI gives runtime.g0's address in the binary's .bss. Only objects already
 * opened are looked at (those that named a frame of p). */
static bool in_object_extent(const struct process *p, uint64_t addr)
{
	for (size_t i = 0; i < p->maps.nr; i++) {
		const struct proc_mapping *m = &p->maps.v[i];
		const struct object *o = p->mobjs[i].obj;
		uint64_t lo = UINT64_MAX, hi = 0, link;

		if (!o || o->is_kernel || o->elf_failed)
			continue;
		for (size_t j = 0; j < o->nr_segs; j++) {
			lo = o->segs[j].vaddr < lo ? o->segs[j].vaddr : lo;
			if (o->segs[j].vaddr + o->segs[j].memsz > hi)
				hi = o->segs[j].vaddr + o->segs[j].memsz;
		}
		/* addr's link-time address by this mapping's bias (modular: addr may lie below) */
		link = object__file_to_vaddr(o, m->pgoff) + (addr - m->start);
		if (lo < hi && link - lo < hi - lo)
			return true;
	}
	return false;
}

/* Process p ran code at ts_ns (leaf: the sample's leaf, resolved in p's maps) that runs only
 * after its dynamic loader's work (runs_after_loader), so maps read after then hold what it mapped
 * at start (symbolizer__loaded). Maps read before are read again now (reread_untold when they
 * changed), as the look 300 ms after the exec would have, unless they hold the code files an
 * earlier process of the executable held once loaded (s->loaded_sets, which a loaded process's
 * maps update), this sample read them already (rescanned), or a read tried since it was taken
 * failed (the process is gone). */
static void note_leaf(struct symbolizer *s, struct process *p, uint64_t leaf, uint64_t ts_ns,
		      bool rescanned)
{
	const struct proc_mapping *m = proc_maps__find(&p->maps, leaf);
	struct loaded_set have, *known;

	if (!m || !runs_after_loader(p, m))
		return;
	known =
	    &s->loaded_sets[hashmap__mix64(hashmap__combine(p->exe_dev, p->exe_ino)) % LOADED_SETS];
	have = loaded_set_of(p);
	if (p->maps_read_ns <= ts_ns) {
		/* what an earlier process of the executable held once its loader was done: its
		 * libraries are all there (the loader maps each before it runs any) */
		if (have.exe_ino == known->exe_ino && have.exe_dev == known->exe_dev &&
		    have.nr == known->nr && have.hash == known->hash) {
			p->loaded = true;
			s->stats.loaded_by_set++;
			return;
		}
		if (rescanned || p->last_read_ns > ts_ns || read_process(s, p))
			return;
		/* the mappings changed (read_process backs off after a read that found the same) */
		p->reread_untold = !p->backoff;
		have = loaded_set_of(p);
	}
	*known = have;
	p->loaded = true;
	s->stats.loaded_by_sample++;
}

static int resolve_user(struct symbolizer *s, uint32_t pid, uint64_t start_ns, uint64_t ts_ns,
			const uint64_t *addrs, uint32_t n, struct frame *out)
{
	bool rescanned = false, borrowed = false; /* borrowed: p is the fork parent */
	uint32_t valid = n;
	struct process *p;
	int err;

	symbolizer_release_stale(s);
	enforce_caps(s);
	for (uint32_t i = 0; i < n; i++)
		out[i] = (struct frame){.obj = NULL, .addr = addrs[i]};
	if (!n)
		return 0;
	/* A forked child whose maps were never read runs its parent's image until it execs: its
	 * parent's cached maps name it while its leaf lies in them (a child that mapped new code
	 * and runs there is read), without rereading them for it. Forks followed by an exec cost no
	 * read of the old image. */
	p = proc_find(s, pid);
	if (!p || (p->start_ns == start_ns && !p->last_read_ns)) {
		struct process *parent = fork_parent(s, pid, start_ns);

		borrowed = parent && resolve_in(s, parent, addrs[0], &out[0]);
		if (borrowed)
			p = parent;
	}
	if (borrowed) {
		rescanned = true;
		s->stats.fork_borrowed++;
	} else if (!(p = get_process(s, pid, start_ns, &err))) {
		uint64_t pstart;
		uint32_t ppid;
		int perr;

		/* a child that is gone already and never exec'd had its parent's maps */
		if (symbolizer__fork_parent(s, pid, start_ns, &ppid, &pstart))
			p = get_process(s, ppid, pstart, &perr);
		if (!p) {
			s->stats.unresolved += n;
			return err;
		}
		s->stats.fork_fallbacks++;
		borrowed = true;
	}
	for (uint32_t i = 0; i < n; i++) {
		bool found = resolve_in(s, p, addrs[i], &out[i]);

		/* The leaf was running, so mapped, when the stack was taken: maps read before then
		 * are out of date (a process first seen in its dynamic loader, before its
		 * libraries were mapped). Other addresses may be garbage from a broken frame
		 * chain: they reread at most every RESCAN_INTERVAL_NS (longer after rereads that
		 * found nothing new), and never for an address in a mapped object's data (garbage
		 * for sure). */
		bool reread = !found && !rescanned && i == 0 && ts_ns > p->last_read_ns;

		if (!found && !rescanned && !reread &&
		    sysinfo__mono_ns() - p->last_read_ns >= (RESCAN_INTERVAL_NS << p->backoff)) {
			reread = !in_object_extent(p, addrs[i]);
			s->stats.rereads_saved += !reread;
		}
		if (reread) {
			/* A library loaded since the last read, most likely. Old mappings stay
			 * valid if the process is gone by now. */
			rescanned = true;
			if (!read_process(s, p))
				found = resolve_in(s, p, addrs[i], &out[i]);
		}
		if (!found && valid == n)
			valid = i;
		if (!found || !out[i].obj)
			s->stats.unresolved++;
	}
	/* (only a process whose exec named its executable can tell: none of those that ran before
	 * tailprofd, which most samples of a steady host are of) */
	if (!borrowed && !p->loaded && p->exe_ino && valid > 0 && p->readable)
		note_leaf(s, p, addrs[0], ts_ns, rescanned);
	return valid;
}

int symbolizer__resolve_user(struct symbolizer *s, uint32_t pid, uint64_t start_ns, uint64_t ts_ns,
			     const uint64_t *addrs, uint32_t n, struct frame *out)
{
	int rc = resolve_user(s, pid, start_ns, ts_ns, addrs, n, out);

	trim_processes(s);
	return rc;
}

bool symbolizer__in_object_data(struct symbolizer *s, uint32_t pid, uint64_t start_ns,
				uint64_t addr)
{
	struct process *p = proc_find(s, pid);

	if (!p || p->start_ns != start_ns || !p->readable || proc_maps__find(&p->maps, addr))
		return false;
	return in_object_extent(p, addr);
}

int symbolizer__note_process(struct symbolizer *s, uint32_t pid, uint64_t start_ns)
{
	int err = 0;

	symbolizer_release_stale(s);
	enforce_caps(s);
	if (get_process(s, pid, start_ns, &err))
		err = 0;
	trim_processes(s);
	return err;
}

int symbolizer__reread_process(struct symbolizer *s, uint32_t pid, uint64_t start_ns)
{
	struct process *p;
	int err = 0;

	symbolizer_release_stale(s);
	enforce_caps(s);
	p = proc_find(s, pid); /* enforce_caps may have dropped it */
	if (p && p->start_ns == start_ns)
		return read_process(s, p);
	if (get_process(s, pid, start_ns, &err))
		err = 0;
	trim_processes(s);
	return err;
}

int symbolizer__process_info(struct symbolizer *s, uint32_t pid, uint64_t start_ns,
			     struct process_info *info)
{
	struct process *p = proc_find(s, pid);
	struct exited *x = &s->exited[pid % EXITED];
	struct process gone = {.pid = pid, .start_ns = start_ns};
	bool told;

	if (p && p->start_ns == start_ns) {
		/* its maps could not be read (a kernel thread, or gone before the read) or none
		 * was needed yet (its samples so far were all in the kernel) */
		if (!p->info_read)
			symbolizer_read_info(s, p, !symbolizer_check_identity(s, pid, start_ns));
		*info = p->info;
		return 0;
	}
	if (x->pid == pid && x->start_ns == start_ns) {
		*info = x->info;
		return 0;
	}
	/* A process first seen here, with no user frame to resolve yet (in execve, a page
	 * fault, exit_mmap): its identity does not wait for its maps. A pid held by another
	 * process (a late sample of an earlier one) tells nothing of this one. */
	if (p)
		return -ESRCH;
	/* whether it still runs matters only for what /proc would add to its records */
	told = symbolizer_info_told(s, &gone);
	if (!told && !symbolizer_check_identity(s, pid, start_ns)) {
		p = proc_new(s, pid, start_ns);
		symbolizer_read_info(s, p, true);
		*info = p->info;
		return 0;
	}
	/* told, or gone: what its exec (or its fork, if it never exec'd) told, kept for its next
	 * samples */
	if (!told && !symbolizer_record_identity(s, &gone, &(struct exec_identity){0}))
		return -ESRCH;
	symbolizer_read_info(s, &gone, false);
	*x = (struct exited){pid, start_ns, gone.info};
	*info = gone.info;
	return 0;
}

bool symbolizer__fork_parent(struct symbolizer *s, uint32_t pid, uint64_t start_ns,
			     uint32_t *parent_pid, uint64_t *parent_start_ns)
{
	const struct fork_link *l = &s->forks[pid % FORK_LINKS];

	if (l->child != pid || l->child_start != start_ns)
		return false;
	*parent_pid = l->parent;
	*parent_start_ns = l->parent_start;
	return true;
}

bool symbolizer__knows(struct symbolizer *s, uint32_t pid, uint64_t start_ns)
{
	struct process *p = proc_find(s, pid);

	return p && p->start_ns == start_ns && p->readable;
}

bool symbolizer__loaded(struct symbolizer *s, uint32_t pid, uint64_t start_ns)
{
	struct process *p = proc_find(s, pid);

	return p && p->start_ns == start_ns && p->readable && p->loaded;
}

int symbolizer__copy_maps(struct symbolizer *s, uint32_t pid, uint64_t start_ns,
			  struct proc_maps *out)
{
	struct process *p = proc_find(s, pid);

	*out = (struct proc_maps){0};
	if (!p || p->start_ns != start_ns || !p->readable)
		return -ESRCH;
	return proc_maps__copy(&p->maps, out);
}

bool symbolizer__take_loaded_reread(struct symbolizer *s, uint32_t pid, uint64_t start_ns)
{
	struct process *p = proc_find(s, pid);

	if (!p || p->start_ns != start_ns || !p->reread_untold)
		return false;
	p->reread_untold = false;
	return true;
}

void symbolizer__note_exec(struct symbolizer *s, uint32_t pid, uint64_t start_ns,
			   const struct exec_identity *id)
{
	struct exec_note *x = &s->execs[pid % EXEC_NOTES];

	x->pid = pid;
	x->start_ns = start_ns;
	x->id = *id;
	x->id.name[sizeof(x->id.name) - 1] = 0;
	if (id->layout_known)
		from_layout(s, pid, start_ns, &x->id);
}

bool symbolizer__offer_layout_maps(struct symbolizer *s, uint32_t pid, uint64_t start_ns,
				   struct symbolizer_layout *out)
{
	const struct process *p = proc_find(s, pid);

	if (!p || p->start_ns != start_ns || !p->from_layout)
		return false;
	proc_maps__offer(s->proc_root, pid, &p->maps);
	if (out)
		*out = (struct symbolizer_layout){.dev = p->exe_dev,
						  .ino = p->exe_ino,
						  .start_code = p->start_code,
						  .vdso = p->vdso};
	return true;
}

void symbolizer__note_fork(struct symbolizer *s, uint32_t pid, uint64_t start_ns,
			   uint32_t parent_pid, uint64_t parent_start_ns,
			   const struct exec_identity *id)
{
	struct fork_link *l = &s->forks[pid % FORK_LINKS];

	*l = (struct fork_link){
	    .child = pid,
	    .parent = parent_pid,
	    .child_start = start_ns,
	    .parent_start = parent_start_ns,
	    .cgroup_id = id ? id->cgroup_id : 0,
	    .cgroup_v1_id = id ? id->cgroup_v1_id : 0,
	    .pid_ns = id ? id->pid_ns : 0,
	    .ns_pid = id ? id->ns_pid : 0,
	};
	if (id) {
		_Static_assert(sizeof(l->name) == sizeof(id->name), "name sizes");
		memcpy(l->name, id->name, sizeof(l->name));
		l->name[sizeof(l->name) - 1] = 0;
	}
}

void symbolizer__forget_fork_identities(struct symbolizer *s)
{
	for (size_t i = 0; i < FORK_LINKS; i++)
		s->forks[i].pid_ns = 0;
}

static void drop_process(struct symbolizer *s, uint32_t pid)
{
	struct process *p;

	symbolizer_release_stale(s);
	p = proc_find(s, pid);
	if (p)
		proc_drop(s, p);
}

void symbolizer__forget_process(struct symbolizer *s, uint32_t pid)
{
	struct fork_link *l = &s->forks[pid % FORK_LINKS];

	/* after an exec the parent's maps say nothing about this process, nor the labels kept
	 * from its fork record about its new image */
	if (l->child == pid)
		l->child = 0;
	if (s->exited[pid % EXITED].pid == pid)
		s->exited[pid % EXITED].pid = 0;
	drop_process(s, pid);
}

void symbolizer__forget_exited(struct symbolizer *s, uint32_t pid)
{
	struct process *p = proc_find(s, pid);

	if (p && p->info_read)
		s->exited[pid % EXITED] = (struct exited){pid, p->start_ns, p->info};
	/* The fork link stays: a child that exits had its parent's maps all the same, and its
	 * last samples come after its exit event, when its own maps are gone (the tracepoint
	 * runs before exit_mm where it has a group_dead argument, as on 6.18). */
	drop_process(s, pid);
}

void symbolizer__stats(const struct symbolizer *s, struct symbolizer_stats *st)
{
	*st = s->stats;
	st->objects = s->objects.nr;
	st->processes = s->nr_readable;
	st->processes_held = s->nr_procs;
	st->max_processes = s->max_processes;
	st->max_objects = s->max_objects;
}
