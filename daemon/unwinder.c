// SPDX-License-Identifier: GPL-2.0-only
/* Unwind tables per object, executable mappings per process, into BPF through ops. */
#include "unwinder.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "array.h"
#include "hashmap.h"
#include "log.h"
#include "proc_maps.h"
#include "sysinfo.h"
#include "unwind_table.h"

#define OBJECT_BUCKETS 1024
#define PROC_BUCKETS   1024
#define MAPS_MAX_BYTES (64u << 20)
/* Objects kept with no process mapping them (their tables stay in BPF's rows until the room is
 * needed): a short-lived process of an executable that runs again and again (a shell's
 * commands, a compiler, python3 -c) then costs no table build after its first run. */
#define MAX_IDLE_OBJECTS 1024
/* A file whose stat matched its object this recently is taken for it by (dev, inode) alone */
#define OBJECT_RECHECK_NS (1000ull * 1000 * 1000)

/* One ELF object (a file, or the vDSO), shared by the processes that map it. */
struct uw_object {
	uint64_t dev, ino, size;
	int64_t mtime_ns;
	uint64_t checked_ns; /* now_ns() when a file's stat last matched this identity */
	bool vdso;
	int refcnt;	    /* mappings of known processes that use it */
	int status;	    /* 0: table loaded; else why not (-ENOENT no CFI, -ENOSPC no room...) */
	uint32_t row_start; /* its run of rows, when status == 0 */
	uint32_t nr_rows;
	uint32_t pages_start; /* its page index (0 pages: none) */
	uint32_t nr_pages;
	struct unwind_segment segs[UNWIND_MAX_SEGMENTS];
	size_t nr_segs;
	struct uw_object *next; /* hash chain */
	/* idle (refcnt 0): its place in the idle list, oldest first */
	struct uw_object *idle_prev, *idle_next;
};

/* A run of entries of unwind_rows or unwind_pages. */
struct extent {
	uint32_t start, len;
};

/* Free runs of one array, sorted by start, coalesced. */
struct extents {
	struct extent *v;
	size_t nr, cap;
};

struct uw_proc {
	uint32_t pid;
	uint64_t start_ns;
	uint64_t last_scan_ns;
	uint32_t rescans; /* of this process (its first is not rate-limited) */
	uint32_t backoff; /* rescans in a row that found its mappings unchanged (up to
			   * RESCAN_BACKOFF_MAX): the next waits rescan_min_ns << backoff */
	uint64_t sig;	  /* signature of the mappings BPF has (proc_scan) */
	uint64_t set_ns;  /* CLOCK_MONOTONIC once its mappings were last in BPF's map; 0: never */
	uint32_t nr;
	struct uw_object *objs[TP_MAX_PROC_MAPPINGS]; /* a reference per mapping (NULL: none) */
	struct uw_proc *next;
};

/* A rescan that finds a process's mappings unchanged doubles the wait before its next, up to
 * 2^RESCAN_BACKOFF_MAX times rescan_min_ns (4 s by default): the PCs that made it were a broken
 * frame chain's garbage (a Go runtime function's CFI that leads into its heap), which comes back
 * at every such walk. A change resets the wait. */
#define RESCAN_BACKOFF_MAX 4

/* Static layouts whose tables BPF has, direct-mapped by file: each keeps references on the objects
 * its tables use, so that their rows stay while BPF may build a process's entry from them. A pin
 * taken out (its slot wanted by another layout, or unused for LAYOUT_PIN_IDLE_NS) first has its
 * tables taken from BPF, then is retired: its references go only at the end of the next round
 * (unwinder__end_round), after the exec records of the processes whose entries BPF built from it
 * meanwhile were drained and their entries taken over (with references of their own). */
#define LAYOUT_PINS	   256
#define LAYOUT_PIN_IDLE_NS (60ull * 1000 * 1000 * 1000)
/* The pins are looked over for idle ones at most this often: a drain that wakes for one process
 * must not walk them all (20 KiB) */
#define LAYOUT_PIN_CHECK_NS (1000ull * 1000 * 1000)

struct uw_layout_pin {
	uint64_t dev, ino; /* ino 0: empty */
	uint32_t nr;
	struct uw_object *objs[TP_LAYOUT_MAPPINGS];
	uint64_t used_ns; /* made, or last taken over from BPF */
	uint64_t round;	  /* retired: the round it was retired in */
};

struct unwinder {
	struct unwinder_opts opts;
	struct uw_object *objects[OBJECT_BUCKETS];
	struct uw_proc *procs[PROC_BUCKETS];
	struct extents rows_free;		 /* of opts.rows */
	struct extents pages_free;		 /* of opts.pages */
	struct uw_object *idle_head, *idle_tail; /* objects no process maps, oldest first */
	struct unwinder_stats st;
	struct tp_proc_mappings scratch;
	uint32_t gen; /* entries of unwind_procs written (tp_proc_mappings.gen) */
	struct uw_layout_pin pins[LAYOUT_PINS];
	struct uw_layout_pin *retired; /* taken out, released at the end of the next round */
	size_t nr_retired, cap_retired;
	uint64_t round;		  /* unwinder__end_round calls */
	uint64_t pins_checked_ns; /* the last look for idle pins (now_ns) */
};

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);

	if (!p)
		abort(); /* fixed-size allocations (STYLE.md) */
	return p;
}

static uint64_t now_ns(const struct unwinder *u)
{
	return u->opts.clock_ns ? u->opts.clock_ns() : sysinfo__mono_ns();
}

/* ---- runs of rows and pages: first fit over a sorted free list ---- */

/* A run of n entries, or -ENOSPC. */
static int64_t extent_alloc(struct extents *x, uint32_t n)
{
	for (size_t i = 0; i < x->nr; i++) {
		struct extent *e = &x->v[i];
		uint32_t start = e->start;

		if (e->len < n)
			continue;
		e->start += n;
		e->len -= n;
		if (!e->len) {
			memmove(e, e + 1, (x->nr - i - 1) * sizeof(*e));
			x->nr--;
		}
		return start;
	}
	return -ENOSPC;
}

static void extent_free(struct extents *x, uint32_t start, uint32_t n)
{
	size_t i = 0;

	if (!n)
		return;
	while (i < x->nr && x->v[i].start < start)
		i++;
	/* merge with the run before and/or after */
	if (i > 0 && x->v[i - 1].start + x->v[i - 1].len == start) {
		x->v[i - 1].len += n;
		if (i < x->nr && start + n == x->v[i].start) {
			x->v[i - 1].len += x->v[i].len;
			memmove(&x->v[i], &x->v[i + 1], (x->nr - i - 1) * sizeof(x->v[0]));
			x->nr--;
		}
		return;
	}
	if (i < x->nr && start + n == x->v[i].start) {
		x->v[i].start = start;
		x->v[i].len += n;
		return;
	}
	if (x->nr == x->cap) {
		x->cap = x->cap ? 2 * x->cap : 64;
		x->v = realloc(x->v, x->cap * sizeof(*x->v));
		if (!x->v)
			abort(); /* at most one run per object: small */
	}
	memmove(&x->v[i + 1], &x->v[i], (x->nr - i) * sizeof(x->v[0]));
	x->v[i] = (struct extent){.start = start, .len = n};
	x->nr++;
}

/* ---- objects ---- */

static size_t object_bucket(uint64_t dev, uint64_t ino)
{
	return hashmap__mix64(dev * 0x9e3779b97f4a7c15ull ^ ino) % OBJECT_BUCKETS;
}

static void idle_unlink(struct unwinder *u, struct uw_object *o)
{
	if (o->idle_prev)
		o->idle_prev->idle_next = o->idle_next;
	else
		u->idle_head = o->idle_next;
	if (o->idle_next)
		o->idle_next->idle_prev = o->idle_prev;
	else
		u->idle_tail = o->idle_prev;
	o->idle_prev = o->idle_next = NULL;
	u->st.idle_objects--;
}

/* Frees o (no process maps it) and its rows and page index. */
static void object_destroy(struct unwinder *u, struct uw_object *o)
{
	struct uw_object **pp;

	for (pp = &u->objects[object_bucket(o->dev, o->ino)]; *pp; pp = &(*pp)->next) {
		if (*pp == o) {
			*pp = o->next;
			break;
		}
	}
	if (o->status == 0) {
		/* no mapping in BPF points at these rows any more */
		extent_free(&u->rows_free, o->row_start, o->nr_rows);
		extent_free(&u->pages_free, o->pages_start, o->nr_pages);
		u->st.pages -= o->nr_pages;
		u->st.tables--;
		u->st.table_rows -= o->nr_rows;
	}
	free(o);
}

/* Frees the oldest idle object. Returns false when there is none. */
static bool evict_idle(struct unwinder *u)
{
	struct uw_object *o = u->idle_head;

	if (!o)
		return false;
	idle_unlink(u, o);
	object_destroy(u, o);
	u->st.idle_evicted++;
	return true;
}

/* A run of n entries of x, idle objects' tables evicted (oldest first) until it fits; -ENOSPC
 * when it does not fit even so. */
static int64_t alloc_evicting(struct unwinder *u, struct extents *x, uint32_t n)
{
	int64_t start;

	while ((start = extent_alloc(x, n)) < 0 && evict_idle(u))
		;
	return start;
}

/* A reference less: an object no process maps any more stays, idle, for the next process that
 * maps it (the oldest idle ones go first when room is needed, or past MAX_IDLE_OBJECTS). One
 * that found no room is freed, so that its next user tries again. */
static void object_release(struct unwinder *u, struct uw_object *o)
{
	if (!o || --o->refcnt > 0)
		return;
	u->st.objects--;
	if (o->status == -ENOSPC) {
		object_destroy(u, o);
		return;
	}
	o->idle_prev = u->idle_tail;
	if (u->idle_tail)
		u->idle_tail->idle_next = o;
	else
		u->idle_head = o;
	u->idle_tail = o;
	if (++u->st.idle_objects > MAX_IDLE_OBJECTS)
		evict_idle(u);
}

/* The page index of o's rows: for each TP_UNWIND_PAGE_BYTES of PCs from the first row's, the
 * row in effect at its start, so that the walker's search spans one page's rows. No index
 * (nr_pages 0) when there is no room: the walker then searches all rows. */
static void index_pages(struct unwinder *u, struct uw_object *o, const struct tp_unwind_row *rows)
{
	uint64_t span = rows[o->nr_rows - 1].pc - rows[0].pc;
	uint32_t n = span / TP_UNWIND_PAGE_BYTES + 1, j = 0;
	int64_t start;

	if (!u->opts.pages || o->nr_rows < 16)
		return;
	start = alloc_evicting(u, &u->pages_free, n);
	if (start < 0)
		return;
	for (uint32_t p = 0; p < n; p++) {
		uint64_t pc = rows[0].pc + (uint64_t)p * TP_UNWIND_PAGE_BYTES;

		while (j + 1 < o->nr_rows && rows[j + 1].pc <= pc)
			j++;
		u->opts.pages[start + p].first = j;
		if (p)
			u->opts.pages[start + p - 1].end = j + 1;
	}
	u->opts.pages[start + n - 1].end = o->nr_rows;
	o->pages_start = start;
	o->nr_pages = n;
	u->st.pages += n;
}

/* Builds o's table from fd and copies it into BPF's rows if it fits. Sets o->status. */
static void object_load(struct unwinder *u, struct uw_object *o, int fd, const char *what)
{
	struct unwind_table t;
	uint64_t t0 = sysinfo__mono_ns();
	int64_t start;
	int err;

	err = unwind_table__build_fd(fd, &t);
	u->st.build_ns += sysinfo__mono_ns() - t0;
	u->st.builds++;
	if (err) {
		o->status = err;
		if (err == -ENOENT)
			u->st.no_cfi++;
		else
			u->st.failed++;
		pr_debug("no unwind table for %s: %s", what, strerror(-err));
		return;
	}
	memcpy(o->segs, t.segs, sizeof(o->segs));
	o->nr_segs = t.nr_segs;
	start = t.nr_rows <= UINT32_MAX ? alloc_evicting(u, &u->rows_free, t.nr_rows) : -ENOSPC;
	if (start < 0) {
		o->status = -ENOSPC;
		u->st.over_budget++;
		pr_debug("no room for the unwind table of %s (%zu rows): frame pointers there",
			 what, t.nr_rows);
	} else {
		/* rows no mapping uses yet: BPF does not read them until set_process */
		memcpy(&u->opts.rows[start], t.rows, t.nr_rows * sizeof(*t.rows));
		o->status = 0;
		o->row_start = start;
		o->nr_rows = t.nr_rows;
		u->st.tables++;
		u->st.table_rows += t.nr_rows;
		index_pages(u, o, t.rows);
	}
	/* BPF has its copy: user space keeps only what the bias needs */
	unwind_table__clear(&t);
}

/* The object open in fd (stat st), found or built; one more reference. */
static struct uw_object *object_ref(struct unwinder *u, struct uw_object *o)
{
	if (!o->refcnt++) {
		idle_unlink(u, o);
		u->st.objects++;
	}
	return o;
}

/* The object of file (dev, ino) whose stat matched at most OBJECT_RECHECK_NS ago (the latest such),
 * with a reference; or NULL: then the file is opened and its stat compared. Processes started in
 * a burst share their libraries, whose files are then opened once, not once per process. */
static struct uw_object *object_recent(struct unwinder *u, uint64_t dev, uint64_t ino)
{
	uint64_t now = now_ns(u);
	struct uw_object *best = NULL;

	for (struct uw_object *o = u->objects[object_bucket(dev, ino)]; o; o = o->next)
		if (!o->vdso && o->dev == dev && o->ino == ino &&
		    now - o->checked_ns < OBJECT_RECHECK_NS &&
		    (!best || o->checked_ns > best->checked_ns))
			best = o;
	return best ? object_ref(u, best) : NULL;
}

static struct uw_object *object_get(struct unwinder *u, int fd, const struct stat *st, bool vdso,
				    const char *what)
{
	uint64_t dev = vdso ? 0 : st->st_dev, ino = vdso ? 0 : st->st_ino;
	int64_t mtime = vdso ? 0 : (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
	uint64_t size = vdso ? 0 : (uint64_t)st->st_size;
	size_t b = object_bucket(dev, ino);
	struct uw_object *o;

	for (o = u->objects[b]; o; o = o->next) {
		if (o->dev == dev && o->ino == ino && o->mtime_ns == mtime && o->size == size &&
		    o->vdso == vdso) {
			o->checked_ns = now_ns(u);
			return object_ref(u, o);
		}
	}
	o = xcalloc(1, sizeof(*o));
	o->dev = dev;
	o->ino = ino;
	o->mtime_ns = mtime;
	o->size = size;
	o->vdso = vdso;
	o->refcnt = 1;
	o->checked_ns = now_ns(u);
	object_load(u, o, fd, what);
	o->next = u->objects[b];
	u->objects[b] = o;
	u->st.objects++;
	return o;
}

/* The vDSO is the same image in every process: ours, copied into a memfd once per lookup (it is
 * a few KiB) so that libelf reads it like a file. */
static struct uw_object *vdso_get(struct unwinder *u)
{
	size_t b = object_bucket(0, 0);
	unsigned long base = getauxval(AT_SYSINFO_EHDR);
	struct uw_object *o;
	struct stat st = {0};
	char *maps = NULL;
	size_t len, vdso_len = 0;
	int fd;

	for (o = u->objects[b]; o; o = o->next) {
		if (o->vdso)
			return object_ref(u, o);
	}
	if (!base || proc_read_file("/proc/self/maps", MAPS_MAX_BYTES, &maps, &len))
		return NULL;
	for (char *line = maps; line && *line;) {
		unsigned long lo, hi;
		char *nl = strchr(line, '\n');

		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && lo == base &&
		    strstr(line, "[vdso]") && (!nl || strstr(line, "[vdso]") < nl))
			vdso_len = hi - lo;
		line = nl ? nl + 1 : NULL;
	}
	free(maps);
	if (!vdso_len)
		return NULL;
	fd = memfd_create("tailprof-vdso", MFD_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (write(fd, (const void *)base, vdso_len) != (ssize_t)vdso_len) {
		close(fd);
		return NULL;
	}
	o = object_get(u, fd, &st, true, "[vdso]");
	close(fd);
	return o;
}

/* Opens the file of mapping m of pid: /proc/PID/map_files/START-END (the very file mapped, even
 * when deleted or in another mount namespace), else /proc/PID/root/PATH. */
static int open_mapping(const struct unwinder *u, uint32_t pid, const struct proc_mapping *m)
{
	char path[PATH_MAX + 64];
	int fd;

	snprintf(path, sizeof(path), "%s/%u/map_files/%" PRIx64 "-%" PRIx64, u->opts.proc_root, pid,
		 m->start, m->end);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	if (snprintf(path, sizeof(path), "%s/%u/root%s", u->opts.proc_root, pid, m->path) >=
	    (int)sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd >= 0 ? fd : -errno;
}

/* ---- processes ---- */

static struct uw_proc **proc_slot(struct unwinder *u, uint32_t pid)
{
	struct uw_proc **pp = &u->procs[hashmap__mix64(pid) % PROC_BUCKETS];

	while (*pp && (*pp)->pid != pid)
		pp = &(*pp)->next;
	return pp;
}

static void proc_release_objects(struct unwinder *u, struct uw_object **objs, uint32_t nr)
{
	for (uint32_t i = 0; i < nr; i++)
		object_release(u, objs[i]);
}

/* Reads the maps of p and fills u->scratch and p->objs (taking references). Returns 0 or a
 * negative errno (p then holds no references). */
static int proc_scan(struct unwinder *u, struct uw_proc *p)
{
	struct tp_proc_mappings *out = &u->scratch;
	struct proc_maps maps = {0};
	int err;

	p->nr = 0;
	err = proc_maps__load(u->opts.proc_root, p->pid, MAPS_MAX_BYTES, &maps);
	if (err < 0)
		return err;
	memset(out, 0, offsetof(struct tp_proc_mappings, m));
	out->start_ns = p->start_ns;
	out->gen = ++u->gen; /* tells cached off-CPU user stacks the tables changed */
	for (size_t i = 0; i < maps.nr; i++) {
		const struct proc_mapping *m = &maps.v[i];
		struct tp_exec_mapping *e;
		struct uw_object *o = NULL;

		if (p->nr == TP_MAX_PROC_MAPPINGS) {
			u->st.mappings_dropped += maps.nr - i;
			break;
		}
		if (proc_mapping__is_file(m) && !m->deleted &&
		    (o = object_recent(u, makedev(m->dev_major, m->dev_minor), m->inode))) {
			/* checked a moment ago for another process */
		} else if (proc_mapping__is_file(m)) {
			int fd = open_mapping(u, p->pid, m);
			struct stat st;

			if (fd >= 0) {
				if (!fstat(fd, &st))
					o = object_get(u, fd, &st, false, m->path);
				close(fd);
			}
		} else if (!strcmp(m->path, "[vdso]")) {
			o = vdso_get(u);
		}
		e = &out->m[p->nr];
		*e = (struct tp_exec_mapping){
		    .start = m->start,
		    .end = m->end,
		};
		if (o && o->status == 0) {
			struct unwind_table t = {.nr_segs = o->nr_segs};
			uint64_t bias;

			memcpy(t.segs, o->segs, sizeof(t.segs));
			if (!unwind_table__bias(&t, m->start, m->pgoff, &bias)) {
				e->bias = bias;
				e->row_start = o->row_start;
				e->nr_rows = o->nr_rows;
				e->pages_start = o->pages_start;
				e->nr_pages = o->nr_pages;
			}
		}
		p->objs[p->nr++] = o;
	}
	out->nr = p->nr;
	p->sig = 0;
	for (uint32_t i = 0; i < p->nr; i++) {
		const struct uw_object *o = p->objs[i];

		p->sig =
		    hashmap__mix64(p->sig ^ out->m[i].start ^ (out->m[i].end << 1) ^
				   (out->m[i].bias << 3) ^ ((uint64_t)(uintptr_t)o << 2) ^
				   (o ? (uint64_t)o->row_start << 32 ^ (uint64_t)o->status : 0));
	}
	proc_maps__clear(&maps);
	return 0;
}

static void proc_free(struct unwinder *u, struct uw_proc **pp, bool drop_bpf)
{
	struct uw_proc *p = *pp;

	*pp = p->next;
	if (drop_bpf)
		u->opts.ops->drop_process(u->opts.ops_ctx, p->pid);
	proc_release_objects(u, p->objs, p->nr);
	free(p);
	u->st.processes--;
}

/* (Re)reads the maps of *pp and hands BPF the result; the old references are released after the
 * new ones are taken, so that objects still mapped keep their tables. rescan: mappings found
 * unchanged are not handed again (BPF's entry and its generation stay: its off-CPU walks wake
 * nobody again for them) and back the next rescan off. */
static int proc_update(struct unwinder *u, struct uw_proc **pp, bool rescan)
{
	struct uw_proc *p = *pp;
	struct uw_object *old[TP_MAX_PROC_MAPPINGS];
	uint32_t old_nr = p->nr;
	uint64_t old_sig = p->sig;
	int err;

	memcpy(old, p->objs, sizeof(old[0]) * old_nr);
	p->last_scan_ns = now_ns(u);
	err = proc_scan(u, p);
	if (!err && rescan && p->set_ns && p->sig == old_sig) {
		u->st.rescans_same++;
		if (p->backoff < RESCAN_BACKOFF_MAX)
			p->backoff++;
		proc_release_objects(u, old, old_nr);
		return 0;
	}
	p->backoff = 0;
	if (!err)
		err = u->opts.ops->set_process(u->opts.ops_ctx, p->pid, &u->scratch);
	if (!err)
		p->set_ns =
		    sysinfo__mono_ns(); /* the real clock: BPF's events are compared with it */
	proc_release_objects(u, old, old_nr);
	if (err) {
		if (err == -E2BIG || err == -ENOSPC)
			u->st.procs_dropped++;
		proc_free(u, pp, true);
	}
	return err;
}

int unwinder__add_process(struct unwinder *u, uint32_t pid, uint64_t start_ns)
{
	struct uw_proc **pp = proc_slot(u, pid), *p = *pp;

	if (p && p->start_ns == start_ns)
		return 0;
	if (p) /* pid reused, or an exec we did not hear of */
		proc_free(u, pp, false);
	if (u->st.processes >= u->opts.max_processes) {
		u->st.procs_dropped++;
		return -E2BIG;
	}
	p = xcalloc(1, sizeof(*p));
	p->pid = pid;
	p->start_ns = start_ns;
	p->next = *pp;
	*pp = p;
	u->st.processes++;
	return proc_update(u, pp, false);
}

/* The tables of process p, just scanned (u->scratch holds its entry), relative to layout lay, into
 * t. false: it maps more than its executable and the vDSO, the vDSO lies below them, or its maps
 * are not of the image lay describes (its vDSO or start_code elsewhere: a read of another image
 * of the pid). */
static bool layout_template(const struct unwinder *u, const struct uw_proc *p,
			    const struct unwind_layout *lay, struct tp_layout_table *t)
{
	const struct tp_proc_mappings *m = &u->scratch;
	bool code = false;

	*t = (struct tp_layout_table){.vdso = TP_LAYOUT_NO_VDSO};
	if (!m->nr || m->nr > TP_LAYOUT_MAPPINGS || m->nr != p->nr)
		return false;
	for (uint32_t i = 0; i < m->nr; i++) {
		const struct uw_object *o = p->objs[i];
		struct tp_exec_mapping e = m->m[i];
		uint64_t base;

		if (!o)
			return false;
		if (o->vdso) {
			if (!lay->vdso || i != m->nr - 1 || e.start != lay->vdso)
				return false;
			base = lay->vdso;
			t->vdso = i;
		} else if (o->dev == lay->dev && o->ino == lay->ino) {
			base = lay->start_code;
			code |= e.start <= lay->start_code && lay->start_code < e.end;
			t->size = o->size;
		} else {
			return false;
		}
		/* mod 2^64: BPF adds the next process's bases back */
		e.start -= base;
		e.end -= base;
		e.bias -= base;
		t->m[i] = e;
	}
	t->nr = m->nr;
	return code;
}

static void pin_release(struct unwinder *u, struct uw_layout_pin *pin)
{
	for (uint32_t i = 0; i < pin->nr; i++)
		object_release(u, pin->objs[i]);
	*pin = (struct uw_layout_pin){0};
}

/* Takes pin out: BPF's tables of its layout first (unless replaced already; nr 0: the layout
 * stays, without them), then its references, at the end of the next round. */
static void pin_retire(struct unwinder *u, struct uw_layout_pin *pin, bool replaced)
{
	struct tp_layout_table none = {.vdso = TP_LAYOUT_NO_VDSO};

	if (!pin->ino)
		return;
	if (!replaced)
		u->opts.ops->set_layout(u->opts.ops_ctx, sysinfo__kernel_dev(pin->dev), pin->ino,
					&none);
	u->st.layout_pins--;
	if (ARRAY_GROW(u->retired, u->cap_retired, u->nr_retired + 1))
		abort(); /* a few pins a round at most */
	pin->round = u->round;
	u->retired[u->nr_retired++] = *pin;
	*pin = (struct uw_layout_pin){0};
}

int unwinder__add_layout_process(struct unwinder *u, uint32_t pid, uint64_t start_ns,
				 const struct unwind_layout *lay)
{
	struct uw_layout_pin *pin = &u->pins[object_bucket(lay->dev, lay->ino) % LAYOUT_PINS];
	struct uw_layout_pin next = {.dev = lay->dev, .ino = lay->ino};
	struct uw_proc *p = *proc_slot(u, pid);
	struct tp_layout_table t;
	int err;

	if (p && p->start_ns == start_ns)
		return 0; /* nothing scanned now */
	err = unwinder__add_process(u, pid, start_ns);
	if (lay->tables_set) {
		/* BPF's entry, made from the layout's tables, is ours now; where we could not take
		 * it (no room), it goes: the process is walked by frame pointers, as when full */
		if (err)
			u->opts.ops->drop_process(u->opts.ops_ctx, pid);
		else if (pin->ino == lay->ino && pin->dev == lay->dev)
			pin->used_ns = now_ns(u);
		return err;
	}
	if (err || !u->opts.ops->set_layout || !lay->ino)
		return err;
	p = *proc_slot(u, pid);
	if (!p || !layout_template(u, p, lay, &t))
		return 0;
	next.nr = t.nr;
	next.used_ns = now_ns(u);
	for (uint32_t i = 0; i < t.nr; i++)
		next.objs[i] = object_ref(u, p->objs[i]);
	if (u->opts.ops->set_layout(u->opts.ops_ctx, sysinfo__kernel_dev(lay->dev), lay->ino, &t)) {
		/* the layout was dropped meanwhile: nothing to keep */
		pin_release(u, &next);
		return 0;
	}
	/* the slot's pin goes: another layout's (BPF's tables of it taken out first), or this
	 * one's older tables (replaced just now) */
	pin_retire(u, pin, pin->dev == lay->dev && pin->ino == lay->ino);
	*pin = next;
	u->st.layout_pins++;
	u->st.layout_tables++;
	return 0;
}

void unwinder__end_round(struct unwinder *u)
{
	uint64_t now = now_ns(u);
	size_t keep = 0;

	for (size_t i = 0; i < u->nr_retired; i++) {
		if (u->retired[i].round < u->round)
			pin_release(u, &u->retired[i]);
		else
			u->retired[keep++] = u->retired[i];
	}
	u->nr_retired = keep;
	/* layouts no process used for a while: their objects may go idle (a host running many
	 * static binaries once, as `go test` does, must not keep all their tables) */
	if (now - u->pins_checked_ns >= LAYOUT_PIN_CHECK_NS) {
		u->pins_checked_ns = now;
		for (size_t i = 0; i < LAYOUT_PINS; i++)
			if (u->pins[i].ino && now - u->pins[i].used_ns > LAYOUT_PIN_IDLE_NS)
				pin_retire(u, &u->pins[i], false);
	}
	u->round++;
}

int unwinder__rescan(struct unwinder *u, uint32_t pid, uint64_t start_ns, bool sure)
{
	struct uw_proc **pp = proc_slot(u, pid), *p = *pp;
	uint32_t n;
	int err;

	if (!p || p->start_ns != start_ns) {
		err = unwinder__add_process(u, pid, start_ns);
		return err ? err : 1;
	}
	/* The first at once: the maps read at the process's first block may be those of its
	 * dynamic loader (a syscall there blocked) without the libraries it was mapping, and its
	 * blocks keep their leaf alone until they are read again. */
	if (p->rescans && now_ns(u) - p->last_scan_ns < u->opts.rescan_min_ns
							    << (sure ? 0 : p->backoff))
		return 0;
	p->rescans++;
	u->st.rescans++;
	n = p->rescans;
	err = proc_update(u, pp, true); /* frees p on error */
	pr_debug("unwind tables: process %u's maps read again (rescan %u)%s%s", pid, n,
		 err ? ": " : "", err ? strerror(-err) : "");
	return err ? err : 1;
}

void unwinder__forget_process(struct unwinder *u, uint32_t pid, uint64_t bpf_dropped_ns)
{
	struct uw_proc **pp = proc_slot(u, pid);

	/* mappings set before BPF dropped them at the event are gone from its map already */
	if (*pp)
		proc_free(u, pp,
			  !bpf_dropped_ns || ((*pp)->set_ns && (*pp)->set_ns >= bpf_dropped_ns));
}

static bool proc_gone(const struct unwinder *u, uint32_t pid)
{
	char path[PATH_MAX];

	if (!strcmp(u->opts.proc_root, "/proc"))
		return kill((pid_t)pid, 0) && errno == ESRCH;
	snprintf(path, sizeof(path), "%s/%u", u->opts.proc_root, pid);
	return access(path, F_OK) != 0;
}

int unwinder__prune(struct unwinder *u)
{
	int n = 0;

	for (size_t b = 0; b < PROC_BUCKETS; b++) {
		struct uw_proc **pp = &u->procs[b];

		while (*pp) {
			if (proc_gone(u, (*pp)->pid)) {
				proc_free(u, pp, true);
				n++;
			} else {
				pp = &(*pp)->next;
			}
		}
	}
	return n;
}

void unwinder__stats(const struct unwinder *u, struct unwinder_stats *st)
{
	*st = u->st;
	st->max_processes = u->opts.max_processes;
}

struct unwinder *unwinder__new(const struct unwinder_opts *opts)
{
	struct unwinder *u;

	if (!opts || !opts->ops || !opts->rows || !opts->nr_rows || !opts->max_processes) {
		errno = EINVAL;
		return NULL;
	}
	u = xcalloc(1, sizeof(*u));
	u->opts = *opts;
	if (!u->opts.proc_root)
		u->opts.proc_root = "/proc";
	if (!u->opts.rescan_min_ns)
		u->opts.rescan_min_ns = 250000000ull;
	u->st.capacity_rows = opts->nr_rows;
	extent_free(&u->rows_free, 0, opts->nr_rows);
	if (opts->pages)
		extent_free(&u->pages_free, 0, opts->nr_pages);
	return u;
}

void unwinder__free(struct unwinder *u)
{
	if (!u)
		return;
	for (size_t b = 0; b < PROC_BUCKETS; b++)
		while (u->procs[b])
			proc_free(u, &u->procs[b], true);
	for (size_t i = 0; i < LAYOUT_PINS; i++)
		pin_release(u, &u->pins[i]);
	for (size_t i = 0; i < u->nr_retired; i++)
		pin_release(u, &u->retired[i]);
	free(u->retired);
	while (evict_idle(u))
		;
	free(u->rows_free.v);
	free(u->pages_free.v);
	free(u);
}
