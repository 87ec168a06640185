// SPDX-License-Identifier: GPL-2.0-only
/* The symbolizer: per-process caches of executable mappings, resolving addresses to objects. */
#include "symbolizer.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "elf_object.h"
#include "kallsyms.h"
#include "log.h"
#include "proc_maps.h"

#define MAPS_MAX_BYTES (256u << 20)
#define STAT_MAX_BYTES (64u << 10)
/* An address in no cached mapping rereads the maps at most this often per process. */
#define RESCAN_INTERVAL_NS (100ull * 1000 * 1000)
#define PROC_BUCKETS_MIN   256

/* The object of one mapping, opened when an address first falls into it. */
struct mapping_obj {
	struct object *obj; /* a reference; NULL for non-file mappings or until opened */
	bool opened;
};

struct process {
	struct process *hnext;
	uint32_t pid;
	uint64_t start_ns;
	bool readable;	       /* maps read and the process verified */
	int err;	       /* why not, when !readable */
	uint64_t last_read_ns; /* CLOCK_MONOTONIC of the last maps read attempt */
	struct proc_maps maps;
	struct mapping_obj *mobjs; /* parallel to maps.v */
};

/* A recent fork: the child's maps are its parent's until it execs. */
struct fork_link {
	uint32_t child, parent;
	uint64_t child_start, parent_start;
};

/* Forks remembered, a cache indexed by child pid: a newer fork overwrites an older one. */
#define FORK_LINKS 4096

struct symbolizer {
	char *proc_root;
	uint64_t ns_per_tick;
	struct object *kernel;
	struct object_cache objects;
	struct process **procs;
	size_t nr_buckets;
	size_t nr_procs;    /* entries, unreadable ones included */
	size_t nr_readable; /* entries with maps */
	/* Mappings replaced by a rescan: their objects may back frames of the current call, so they
	 * are released at the start of the next call (frames are borrowed until then). */
	struct proc_maps stale_maps;
	struct mapping_obj *stale_mobjs;
	struct symbolizer_stats stats;
	struct fork_link forks[FORK_LINKS];
};

static uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void release_mappings(struct proc_maps *maps, struct mapping_obj *mobjs)
{
	for (size_t i = 0; mobjs && i < maps->nr; i++)
		object__put(mobjs[i].obj);
	free(mobjs);
	proc_maps__clear(maps);
}

static void release_stale(struct symbolizer *s)
{
	release_mappings(&s->stale_maps, s->stale_mobjs);
	s->stale_mobjs = NULL;
}

/* --- processes --- */

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
	release_mappings(&p->maps, p->mobjs);
	free(p);
}

/* 0 when /proc/PID/stat shows the process that started at start_ns (boot-time ns), else -ESRCH
 * (gone, or the pid now belongs to another process) or another negative errno. Field 22,
 * starttime, is in clock ticks since boot (proc(5)); the kernel truncates start_boottime to it. */
static int check_identity(struct symbolizer *s, uint32_t pid, uint64_t start_ns)
{
	char path[PATH_MAX], *buf, *p, *end;
	unsigned long long ticks;
	size_t len;
	int err;

	if (snprintf(path, sizeof(path), "%s/%u/stat", s->proc_root, pid) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	err = proc_read_file(path, STAT_MAX_BYTES, &buf, &len);
	if (err)
		return err == -ENOENT ? -ESRCH : err;
	/* comm may hold spaces and parentheses: fields restart after the last ')'. */
	p = strrchr(buf, ')');
	err = -ESRCH;
	if (!p)
		goto out;
	p++;
	for (int field = 3; field < 22; field++) {
		p = strchr(p + 1, ' ');
		if (!p)
			goto out;
	}
	errno = 0;
	ticks = strtoull(p + 1, &end, 10);
	if (end == p + 1 || errno)
		goto out;
	if (ticks == start_ns / s->ns_per_tick)
		err = 0;
out:
	free(buf);
	return err;
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

/* (Re)reads the maps of p, verifying before and after that the pid still is that process, so a
 * process that exits or is replaced mid-read leaves nothing half-read. On failure the cached maps
 * (if any) stay. Returns 0 or a negative errno. */
static int read_process(struct symbolizer *s, struct process *p)
{
	struct proc_maps maps = {};
	struct mapping_obj *mobjs;
	char path[PATH_MAX], *buf;
	size_t len;
	int err;

	p->last_read_ns = monotonic_ns();
	s->stats.maps_reads++;
	err = check_identity(s, p->pid, p->start_ns);
	if (err)
		goto fail;
	if (snprintf(path, sizeof(path), "%s/%u/maps", s->proc_root, p->pid) >= (int)sizeof(path)) {
		err = -ENAMETOOLONG;
		goto fail;
	}
	err = proc_read_file(path, MAPS_MAX_BYTES, &buf, &len);
	if (err) {
		if (err == -ENOENT)
			err = -ESRCH;
		goto fail;
	}
	err = proc_maps__parse(buf, len, &maps);
	free(buf);
	if (err <= 0) {
		/* No executable mapping: an exited process (empty maps) or a kernel thread. */
		err = err ? err : -ESRCH;
		goto fail;
	}
	err = check_identity(s, p->pid, p->start_ns);
	if (err)
		goto fail;
	mobjs = calloc(maps.nr, sizeof(*mobjs));
	if (!mobjs) {
		err = -ENOMEM;
		goto fail;
	}
	carry_objects(&p->maps, p->mobjs, &maps, mobjs);
	release_stale(s);
	s->stale_maps = p->maps;
	s->stale_mobjs = p->mobjs;
	p->maps = maps;
	p->mobjs = mobjs;
	if (!p->readable)
		s->nr_readable++;
	p->readable = true;
	p->err = 0;
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
		*err = check_identity(s, pid, start_ns);
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
	if (!p->readable) {
		if (monotonic_ns() - p->last_read_ns < RESCAN_INTERVAL_NS) {
			*err = p->err;
			return NULL;
		}
		*err = read_process(s, p);
		return *err ? NULL : p;
	}
	*err = 0;
	return p;
}

/* --- objects of mappings --- */

/* Opens path read-only if it is a regular file (never blocks on a FIFO). */
static int open_regular(const char *path, struct stat *st)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);

	if (fd < 0)
		return -errno;
	if (fstat(fd, st) || !S_ISREG(st->st_mode)) {
		close(fd);
		return -EINVAL;
	}
	return fd;
}

/* Opens the file behind mapping m of pid: /proc/PID/map_files/START-END (the very file the
 * process mapped, even if deleted or replaced; needs privileges), else the path in the process's
 * root, else the path as we see it; a path is used only when its inode is the mapping's and the
 * mapping was not deleted. Returns an fd (st filled) or a negative errno. */
static int open_mapping_file(struct symbolizer *s, uint32_t pid, const struct proc_mapping *m,
			     struct stat *st)
{
	char path[PATH_MAX + 64];
	int fd, n;

	n = snprintf(path, sizeof(path), "%s/%u/map_files/%" PRIx64 "-%" PRIx64, s->proc_root, pid,
		     m->start, m->end);
	if (n > 0 && n < (int)sizeof(path)) {
		fd = open_regular(path, st);
		if (fd >= 0)
			return fd;
	}
	if (m->deleted)
		return -ENOENT;
	n = snprintf(path, sizeof(path), "%s/%u/root%s", s->proc_root, pid, m->path);
	if (n > 0 && n < (int)sizeof(path)) {
		fd = open_regular(path, st);
		if (fd >= 0 && st->st_ino == m->inode)
			return fd;
		if (fd >= 0)
			close(fd);
	}
	fd = open_regular(m->path, st);
	if (fd >= 0 && st->st_ino != m->inode) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

/* Frames of an object whose ELF could not be read are file offsets: its range is the file span
 * of the mapping that opened it. */
static void set_file_range(struct object *obj, const struct proc_mapping *m)
{
	obj->range_start = m->pgoff;
	obj->range_limit = m->pgoff + (m->end - m->start);
	obj->range_offset = m->pgoff;
}

/* The object of file mapping m of pid, with a reference: from the cache by (dev, inode) (same
 * mtime and size), else by build ID, else read now. Never NULL: an unreadable file gives an
 * object without symbols. */
static struct object *open_object(struct symbolizer *s, uint32_t pid, const struct proc_mapping *m)
{
	uint64_t dev = makedev(m->dev_major, m->dev_minor);
	struct elf_file ef = {};
	struct object *obj;
	struct stat st;
	int fd, err;

	fd = open_mapping_file(s, pid, m, &st);
	if (fd < 0) {
		/* Identity unchecked: the object cached for (dev, inode) is the best bet. */
		obj = object_cache__find_file(&s->objects, dev, m->inode, NULL);
		if (obj)
			return object__get(obj);
		obj = object__new(m->path);
		obj->dev = dev;
		obj->inode = m->inode;
		obj->elf_failed = true;
		set_file_range(obj, m);
		/* Not findable: the failure may be this process's (exited, other namespace). */
		object_cache__add(&s->objects, obj, false);
		s->stats.elf_failed++;
		pr_debug("cannot open %s of process %u: %s", m->path, pid, strerror(-fd));
		return obj;
	}
	obj = object_cache__find_file(&s->objects, dev, m->inode, &st);
	if (obj)
		goto found;
	err = elf_file__open(&ef, fd);
	if (!err) {
		obj = object_cache__find_build_id(&s->objects, ef.build_id);
		if (obj)
			goto found;
	}
	obj = object__new(m->path);
	obj->dev = dev;
	obj->inode = m->inode;
	obj->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	obj->size_bytes = st.st_size;
	if (!err)
		err = elf_file__load(&ef, obj);
	elf_file__close(&ef);
	close(fd);
	if (err) {
		symtab__clear(&obj->symtab);
		obj->elf_failed = true;
		s->stats.elf_failed++;
		pr_debug("cannot read elf symbols of %s: %s", m->path,
			 err == -ENOEXEC ? "malformed elf" : strerror(-err));
	}
	if (obj->range_limit <= obj->range_start && !obj->nr_segs)
		set_file_range(obj, m);
	/* A transient failure (-ENOMEM) must not stick to the file. */
	object_cache__add(&s->objects, obj, err != -ENOMEM);
	return obj;
found:
	elf_file__close(&ef);
	close(fd);
	return object__get(obj);
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
	if (!proc_mapping__is_file(m))
		return true;
	mo = &p->mobjs[m - p->maps.v];
	if (!mo->opened) {
		mo->obj = open_object(s, p->pid, m);
		mo->opened = true;
	}
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
	s->nr_buckets = PROC_BUCKETS_MIN;
	s->procs = sym_xcalloc(s->nr_buckets, sizeof(*s->procs));
	s->kernel = kallsyms__load(opts->kallsyms ? opts->kallsyms : "/proc/kallsyms",
				   opts->kernel_notes ? opts->kernel_notes : "/sys/kernel/notes");
	object_cache__add(&s->objects, s->kernel, false);
	return s;
}

void symbolizer__free(struct symbolizer *s)
{
	if (!s)
		return;
	release_stale(s);
	for (size_t i = 0; i < s->nr_buckets; i++)
		while (s->procs[i])
			proc_drop(s, s->procs[i]);
	object__put(s->kernel);
	object_cache__detach_all(&s->objects);
	free(s->procs);
	free(s->proc_root);
	free(s);
}

int symbolizer__resolve_user(struct symbolizer *s, uint32_t pid, uint64_t start_ns,
			     const uint64_t *addrs, uint32_t n, struct frame *out)
{
	bool rescanned = false;
	uint32_t valid = n;
	struct process *p;
	int err;

	release_stale(s);
	for (uint32_t i = 0; i < n; i++)
		out[i] = (struct frame){.obj = NULL, .addr = addrs[i]};
	if (!n)
		return 0;
	p = get_process(s, pid, start_ns, &err);
	if (!p) {
		const struct fork_link *l = &s->forks[pid % FORK_LINKS];
		int perr;

		/* a child that is gone already and never exec'd had its parent's maps */
		if (l->child == pid && l->child_start == start_ns)
			p = get_process(s, l->parent, l->parent_start, &perr);
		if (!p) {
			s->stats.unresolved += n;
			return err;
		}
		s->stats.fork_fallbacks++;
	}
	for (uint32_t i = 0; i < n; i++) {
		bool found = resolve_in(s, p, addrs[i], &out[i]);

		if (!found && !rescanned &&
		    monotonic_ns() - p->last_read_ns >= RESCAN_INTERVAL_NS) {
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
	return valid;
}

void symbolizer__resolve_kernel(struct symbolizer *s, const uint64_t *addrs, uint32_t n,
				struct frame *out)
{
	release_stale(s);
	for (uint32_t i = 0; i < n; i++)
		out[i] = (struct frame){.obj = s->kernel, .addr = addrs[i]};
}

bool symbolizer__knows(struct symbolizer *s, uint32_t pid, uint64_t start_ns)
{
	struct process *p = proc_find(s, pid);

	return p && p->start_ns == start_ns && p->readable;
}

void symbolizer__note_fork(struct symbolizer *s, uint32_t pid, uint64_t start_ns,
			   uint32_t parent_pid, uint64_t parent_start_ns)
{
	s->forks[pid % FORK_LINKS] = (struct fork_link){
	    .child = pid,
	    .parent = parent_pid,
	    .child_start = start_ns,
	    .parent_start = parent_start_ns,
	};
}

void symbolizer__forget_process(struct symbolizer *s, uint32_t pid)
{
	struct fork_link *l = &s->forks[pid % FORK_LINKS];
	struct process *p;

	/* after an exec the parent's maps say nothing about this process */
	if (l->child == pid)
		l->child = 0;

	release_stale(s);
	p = proc_find(s, pid);
	if (p)
		proc_drop(s, p);
}

void symbolizer__stats(const struct symbolizer *s, struct symbolizer_stats *st)
{
	*st = s->stats;
	st->objects = s->objects.nr;
	st->processes = s->nr_readable;
}
