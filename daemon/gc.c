// SPDX-License-Identifier: GPL-2.0-only
/* GC tracking: discovery of runtimes in processes, one attachment per object, GC windows. */
#include "gc.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "gc_probes.h"
#include "hashmap.h"
#include "log.h"
#include "proc_maps.h"
#include "sysinfo.h"
#include "timeparse.h"

#define GC_PROC_MAX_OBJS  4		     /* runtime objects one process maps */
#define GC_MAX_OBJECTS	  8192		     /* classified objects cached */
#define GC_MAX_NOTICES	  16384		     /* exec/exit/dlopen notices between ticks */
#define GC_LINGER_NS	  (1 * NSEC_PER_SEC) /* unused objects keep their probes this long */
#define GC_FULL_SCAN_NS	  (30 * NSEC_PER_SEC)
#define GC_MAPS_MAX_BYTES (64u << 20)

struct gc_object {
	uint64_t dev, ino;
	struct gc_object_info info;
	enum gc_object_state state;
	char *path;
	uint32_t users;
	uint64_t unused_since_ns;
	struct gc_attachment *att;
};

struct gc_proc {
	uint32_t pid;
	uint32_t nr;
	uint32_t objs[GC_PROC_MAX_OBJS];
	char comm[16];
};

enum notice_kind { N_EXEC, N_EXIT, N_DLOPEN, N_LOADED };

struct notice {
	uint32_t pid;
	uint16_t kind;
	uint64_t due_ns;       /* re-scans after exec: not before */
	struct gc_exec exe;    /* N_EXEC: what the exec said (zeros: nothing) */
	struct proc_maps maps; /* N_LOADED: the process's (owned) */
};

struct gc {
	struct gc_opts opts;
	struct gc_probes *probes;
	pthread_mutex_t mu; /* objects, procs, stats: the status reads them */
	struct gc_object *objs;
	size_t nr_objs, cap_objs;
	struct hashmap index; /* (dev, ino) -> objs[] */
	struct gc_proc *procs;
	size_t nr_procs, cap_procs;
	struct notice *notices, *later;
	size_t nr_notices, nr_later;
	uint64_t last_full_scan_ns;
	uint32_t self_pid;
	struct gc_stats st;
	int dlopen_probes;
};

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		abort(); /* bounded tables: abort on failure (STYLE.md) */
	return p;
}

int gc_opts__parse_mode(const char *value, struct gc_opts *opts)
{
	if (!strcmp(value, "auto"))
		opts->enabled = true;
	else if (!strcmp(value, "off"))
		opts->enabled = false;
	else
		return -EINVAL;
	return 0;
}

const char *gc_object_state_name(enum gc_object_state s)
{
	static const char *const names[] = {
	    [GC_OBJ_ATTACHED] = "attached",	  [GC_OBJ_DETACHED] = "detached",
	    [GC_OBJ_UNSUPPORTED] = "unsupported", [GC_OBJ_FAILED] = "failed",
	    [GC_OBJ_DISABLED] = "disabled",
	};

	return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "unknown";
}

/* ---- windows ---- */

int gc_window__add(struct gc_window **gwp, const struct gc_event *ev)
{
	struct gc_window *gw = *gwp;

	if (!gw) {
		gw = calloc(1, sizeof(*gw));
		if (!gw)
			return -ENOMEM;
		*gwp = gw;
	}
	if (gw->nr == GC_WINDOW_MAX_EVENTS) {
		gw->dropped++;
		return -ENOSPC;
	}
	if (gw->nr == gw->cap) {
		size_t cap = gw->cap ? gw->cap * 2 : 16;
		struct gc_event *v = realloc(gw->v, cap * sizeof(*v));

		if (!v) {
			gw->dropped++;
			return -ENOMEM;
		}
		gw->v = v;
		gw->cap = cap;
	}
	gw->v[gw->nr++] = *ev;
	return 0;
}

void gc_window__free(struct gc_window *gw)
{
	if (!gw)
		return;
	free(gw->v);
	free(gw);
}

/* ---- objects ---- */

struct obj_key {
	const struct gc *g;
	uint64_t dev, ino;
};

static uint64_t obj_hash(uint64_t dev, uint64_t ino)
{
	return hashmap__combine(hashmap__mix64(dev), ino);
}

static bool obj_eq(const void *ctx, uint32_t i)
{
	const struct obj_key *k = ctx;

	return k->g->objs[i].dev == k->dev && k->g->objs[i].ino == k->ino;
}

static bool runtime_enabled(const struct gc *g, unsigned runtime)
{
	switch (runtime) {
	case TP_GC_JVM:
		return g->opts.jvm;
	case TP_GC_PYTHON:
		return g->opts.python;
	case TP_GC_GO:
		return g->opts.go;
	}
	return false;
}

/* The cache is full: forget the objects that are no runtime (they are classified again when
 * seen). Runtime objects stay: processes and the status refer to them by index. */
static void prune_objects(struct gc *g)
{
	size_t keep = 0;
	uint32_t *remap = xrealloc(NULL, g->nr_objs * sizeof(*remap));

	for (size_t i = 0; i < g->nr_objs; i++) {
		if (g->objs[i].info.runtime) {
			remap[i] = keep;
			g->objs[keep++] = g->objs[i];
		} else {
			free(g->objs[i].path);
			remap[i] = UINT32_MAX;
		}
	}
	g->nr_objs = keep;
	hashmap__clear(&g->index);
	for (size_t i = 0; i < keep; i++)
		if (hashmap__insert(&g->index, obj_hash(g->objs[i].dev, g->objs[i].ino), i))
			abort();
	for (size_t p = 0; p < g->nr_procs; p++)
		for (uint32_t k = 0; k < g->procs[p].nr; k++)
			g->procs[p].objs[k] = remap[g->procs[p].objs[k]];
	free(remap);
}

/* The path to open for a mapping of pid: its own path when that is the mapped file, else
 * through the process's root (another mount namespace) or map_files (a deleted file). */
static void open_path(uint32_t pid, const struct proc_mapping *m, uint64_t dev, char *buf,
		      size_t len)
{
	struct stat st;

	if (m->deleted) {
		snprintf(buf, len, "/proc/%u/map_files/%" PRIx64 "-%" PRIx64, pid, m->start,
			 m->end);
		return;
	}
	if (!stat(m->path, &st) && st.st_ino == m->inode && st.st_dev == dev) {
		snprintf(buf, len, "%s", m->path);
		return;
	}
	snprintf(buf, len, "/proc/%u/root%s", pid, m->path);
}

/* The index of the classified object (dev, ino) into *i, if there is one. */
static bool object_known(struct gc *g, uint64_t dev, uint64_t ino, uint32_t *i)
{
	struct obj_key key = {g, dev, ino};

	return hashmap__find(&g->index, obj_hash(dev, ino), obj_eq, &key, i);
}

/* Finds or classifies the object of mapping m. Returns its index, or -1 when it cannot be
 * read. */
static long object_for(struct gc *g, uint32_t pid, const struct proc_mapping *m)
{
	uint64_t dev = makedev(m->dev_major, m->dev_minor);
	struct gc_object *o;
	char path[4096 + 64];
	uint32_t i;

	if (object_known(g, dev, m->inode, &i))
		return i;
	if (g->nr_objs == GC_MAX_OBJECTS)
		prune_objects(g);
	if (g->nr_objs == GC_MAX_OBJECTS)
		return -1;
	open_path(pid, m, dev, path, sizeof(path));
	if (g->nr_objs == g->cap_objs) {
		g->cap_objs = g->cap_objs ? g->cap_objs * 2 : 64;
		g->objs = xrealloc(g->objs, g->cap_objs * sizeof(*g->objs));
	}
	o = &g->objs[g->nr_objs];
	memset(o, 0, sizeof(*o));
	o->dev = dev;
	o->ino = m->inode;
	if (gc_discovery__classify(path, m->path, &o->info))
		return -1; /* gone or unreadable: not cached, tried again when seen again */
	o->path = strdup(m->path);
	if (!o->path)
		abort();
	if (!o->info.runtime)
		o->state = GC_OBJ_DETACHED;
	else if (!o->info.supported)
		o->state = GC_OBJ_UNSUPPORTED;
	else if (!runtime_enabled(g, o->info.runtime))
		o->state = GC_OBJ_DISABLED;
	else
		o->state = GC_OBJ_DETACHED;
	if (o->info.runtime && !o->info.supported)
		pr_info("%s runtime in %s (pid %u) is unsupported: %s",
			gc_runtime_name(o->info.runtime), m->path, pid, o->info.reason);
	if (hashmap__insert(&g->index, obj_hash(dev, m->inode), g->nr_objs))
		abort();
	return g->nr_objs++;
}

static void attach(struct gc *g, struct gc_object *o, uint32_t pid)
{
	char path[4096 + 64], err[GC_REASON_LEN];
	struct proc_mapping m = {.path = o->path, .inode = o->ino};

	if (!g->probes || o->att || o->state != GC_OBJ_DETACHED || !o->info.runtime)
		return;
	m.dev_major = major(o->dev);
	m.dev_minor = minor(o->dev);
	open_path(pid, &m, o->dev, path, sizeof(path));
	o->att = gc_probes__attach(g->probes, &o->info, path, err, sizeof(err));
	if (!o->att) {
		/* once per object: a broken object must not turn into an error loop */
		o->state = GC_OBJ_FAILED;
		snprintf(o->info.reason, sizeof(o->info.reason), "%s", err);
		pr_warn("%s", err);
		return;
	}
	o->state = GC_OBJ_ATTACHED;
	g->st.attaches++;
	g->st.probes_attached += gc_attachment__nr_links(o->att);
	pr_debug("attached %s GC probes to %s (pid %u)", gc_runtime_name(o->info.runtime), o->path,
		 pid);
}

static void detach(struct gc *g, struct gc_object *o)
{
	if (!o->att)
		return;
	g->st.probes_attached -= gc_attachment__nr_links(o->att);
	gc_attachment__free(o->att);
	o->att = NULL;
	o->state = GC_OBJ_DETACHED;
	g->st.detaches++;
	pr_debug("detached GC probes from %s", o->path);
}

/* ---- processes ---- */

static struct gc_proc *proc_find(struct gc *g, uint32_t pid)
{
	for (size_t i = 0; i < g->nr_procs; i++)
		if (g->procs[i].pid == pid)
			return &g->procs[i];
	return NULL;
}

static void proc_release(struct gc *g, uint32_t pid)
{
	struct gc_proc *p = proc_find(g, pid);
	uint64_t now = sysinfo__mono_ns();

	/* its open phases and pause count in BPF went at its exec or exit (profile.bpf.c) */
	if (!p)
		return;
	for (uint32_t k = 0; k < p->nr; k++) {
		struct gc_object *o = &g->objs[p->objs[k]];

		if (o->users && !--o->users)
			o->unused_since_ns = now;
	}
	*p = g->procs[--g->nr_procs];
}

static void read_comm(uint32_t pid, char *out, size_t len)
{
	char path[64], *buf;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%u/comm", pid);
	out[0] = 0;
	if (proc_read_file(path, 64, &buf, &n))
		return;
	while (n && buf[n - 1] == '\n')
		n--;
	snprintf(out, len, "%.*s", (int)n, buf);
	free(buf);
}

/* Makes rec (a pid and the runtime objects it maps now) its record, attaching the objects and
 * releasing those of its old record after; no record when rec maps none. x as for scan_pid. */
static void record_proc(struct gc *g, const struct gc_proc *rec, const struct gc_exec *x)
{
	struct gc_proc np = *rec, *p;

	/* the old record's objects are released after the new ones are held: no detach churn */
	for (uint32_t k = 0; k < np.nr; k++) {
		struct gc_object *o = &g->objs[np.objs[k]];

		o->users++;
		attach(g, o, np.pid);
	}
	p = proc_find(g, np.pid);
	if (p) {
		for (uint32_t k = 0; k < p->nr; k++) {
			struct gc_object *o = &g->objs[p->objs[k]];

			if (o->users && !--o->users)
				o->unused_since_ns = sysinfo__mono_ns();
		}
	}
	if (!np.nr) {
		if (p)
			*p = g->procs[--g->nr_procs];
		return;
	}
	/* the look 250 ms after an exec finds the record of the one at the exec */
	if (p && p->comm[0])
		memcpy(np.comm, p->comm, sizeof(np.comm));
	else if (x && x->comm[0])
		memcpy(np.comm, x->comm, sizeof(np.comm));
	else
		read_comm(np.pid, np.comm, sizeof(np.comm));
	if (!p) {
		if (g->nr_procs == g->cap_procs) {
			g->cap_procs = g->cap_procs ? g->cap_procs * 2 : 32;
			g->procs = xrealloc(g->procs, g->cap_procs * sizeof(*g->procs));
		}
		p = &g->procs[g->nr_procs++];
	}
	*p = np;
}

/* Reads pid's maps (given: looks in those, another module's read) and records the runtime
 * objects it maps (attaching them). With at_exec, the maps are not read where the executable was
 * classified before: right after an exec they hold nothing else (the dynamic loader maps the
 * libraries after; the look 300 ms later finds them), so a runtime executable is recorded by its
 * identity alone, and another one left for that look. x (NULL: none) is what the process's last
 * exec said of its executable and comm: then /proc tells neither. */
static void scan_pid(struct gc *g, uint32_t pid, bool at_exec, const struct gc_exec *x,
		     const struct proc_maps *given)
{
	struct proc_maps maps = {0};
	struct gc_proc np = {.pid = pid};
	char path[64];
	struct stat exe = {0};
	uint32_t known;

	if (pid == g->self_pid)
		return;
	if (x && x->exe_ino) {
		/* the device and inode the maps show for the executable's mappings */
		exe.st_dev = x->exe_dev;
		exe.st_ino = x->exe_ino;
	} else {
		snprintf(path, sizeof(path), "/proc/%u/exe", pid);
		if (stat(path, &exe))
			return; /* gone, or a kernel thread */
	}
	if (at_exec && object_known(g, exe.st_dev, exe.st_ino, &known)) {
		g->st.exec_scans_skipped++;
		if (g->objs[known].info.runtime) {
			np.objs[np.nr++] = known;
			record_proc(g, &np, x);
		}
		return;
	}
	if (given) {
		g->st.later_looks_shared++;
	} else if (proc_maps__load("/proc", pid, GC_MAPS_MAX_BYTES, &maps) < 0) {
		return;
	} else {
		g->st.scans++;
		given = &maps;
	}
	for (size_t i = 0; i < given->nr; i++) {
		const struct proc_mapping *m = &given->v[i];
		bool dup = false;
		long idx;

		if (!proc_mapping__is_file(m) && !m->deleted)
			continue;
		if (!m->inode ||
		    !gc_discovery__candidate(m->path, proc_mapping__of(m, exe.st_dev, exe.st_ino)))
			continue;
		idx = object_for(g, pid, m);
		if (idx < 0 || !g->objs[idx].info.runtime)
			continue;
		for (uint32_t k = 0; k < np.nr; k++)
			dup |= np.objs[k] == idx;
		if (!dup && np.nr < GC_PROC_MAX_OBJS)
			np.objs[np.nr++] = idx;
	}
	proc_maps__clear(&maps);
	record_proc(g, &np, x);
}

void gc__scan_all(struct gc *g)
{
	DIR *d = opendir("/proc");
	struct dirent *de;

	if (!d)
		return;
	pthread_mutex_lock(&g->mu);
	while ((de = readdir(d))) {
		uint64_t pid;

		if (tp_parse_uint(de->d_name, 1, UINT32_MAX, &pid))
			continue;
		scan_pid(g, pid, false, NULL, NULL);
	}
	/* processes whose exit we missed (lost notices) */
	for (size_t i = 0; i < g->nr_procs;) {
		char path[32];

		snprintf(path, sizeof(path), "/proc/%u", g->procs[i].pid);
		if (access(path, F_OK))
			proc_release(g, g->procs[i].pid);
		else
			i++;
	}
	pthread_mutex_unlock(&g->mu);
	closedir(d);
}

/* ---- notices and ticks ---- */

static void notice(struct gc *g, uint32_t pid, enum notice_kind kind, const struct gc_exec *exe)
{
	pthread_mutex_lock(&g->mu);
	if (g->nr_notices < GC_MAX_NOTICES)
		g->notices[g->nr_notices++] = (struct notice){
		    .pid = pid, .kind = kind, .exe = exe ? *exe : (struct gc_exec){}};
	pthread_mutex_unlock(&g->mu);
}

void gc__process_exec(struct gc *g, uint32_t pid, const struct gc_exec *exe)
{
	notice(g, pid, N_EXEC, exe);
}

void gc__process_exit(struct gc *g, uint32_t pid)
{
	notice(g, pid, N_EXIT, NULL);
}

void gc__note_dlopen(struct gc *g, uint32_t pid)
{
	notice(g, pid, N_DLOPEN, NULL);
}

void gc__process_loaded(struct gc *g, uint32_t pid, struct proc_maps *maps)
{
	pthread_mutex_lock(&g->mu);
	if (g->nr_notices < GC_MAX_NOTICES) {
		g->notices[g->nr_notices++] =
		    (struct notice){.pid = pid, .kind = N_LOADED, .maps = *maps};
		*maps = (struct proc_maps){0};
	}
	pthread_mutex_unlock(&g->mu);
	proc_maps__clear(maps);
}

/* Drops the look due after pid's exec, if any. */
static void drop_later(struct gc *g, uint32_t pid)
{
	for (size_t k = 0; k < g->nr_later;)
		if (g->later[k].pid == pid)
			g->later[k] = g->later[--g->nr_later];
		else
			k++;
}

void gc__tick(struct gc *g, uint64_t now)
{
	size_t keep = 0;

	pthread_mutex_lock(&g->mu);
	for (size_t i = 0; i < g->nr_notices; i++) {
		struct notice *n = &g->notices[i];

		switch (n->kind) {
		case N_EXIT:
			/* The exit tracepoint sends it once no thread of the process is live
			 * (signal->live 0, the kernel's group_dead): nothing of it runs GC again,
			 * so no look at /proc (its stat read was 4% of tailprofd's CPU under
			 * churn). Threads exiting at once may each send one: the second finds no
			 * record. */
			proc_release(g, n->pid);
			/* nor is its look after the exec due (most processes are this short) */
			drop_later(g, n->pid);
			break;
		case N_EXEC:
			proc_release(g, n->pid);
			/* the look after an earlier exec would be of this image */
			drop_later(g, n->pid);
			scan_pid(g, n->pid, true, &n->exe, NULL);
			/* the dynamic loader maps the libraries after exec: look once more */
			if (g->nr_later < GC_MAX_NOTICES) {
				g->later[g->nr_later] = *n;
				g->later[g->nr_later++].due_ns = now + PROC_MAPS_EXEC_RECHECK_NS;
			}
			break;
		case N_DLOPEN:
			scan_pid(g, n->pid, false, NULL, NULL);
			break;
		case N_LOADED:
			/* the look after the exec (one a pid: drop_later), from these maps */
			for (size_t k = 0; k < g->nr_later; k++) {
				if (g->later[k].pid != n->pid)
					continue;
				scan_pid(g, n->pid, false, &g->later[k].exe, &n->maps);
				g->later[k] = g->later[--g->nr_later];
				break;
			}
			proc_maps__clear(&n->maps);
			break;
		}
	}
	g->nr_notices = 0;
	for (size_t i = 0; i < g->nr_later; i++) {
		struct notice *n = &g->later[i];

		if (n->due_ns > now) {
			g->later[keep++] = *n;
		} else if (!(kill((pid_t)n->pid, 0) && errno == ESRCH)) {
			/* alive, or its exit notice was lost: a signal 0 tells without a path
			 * walk */
			scan_pid(g, n->pid, false, &n->exe, NULL);
		}
	}
	g->nr_later = keep;
	for (size_t i = 0; i < g->nr_objs; i++) {
		struct gc_object *o = &g->objs[i];

		/* unused_since may be later than now: it is read after now was */
		if (o->att && !o->users && now > o->unused_since_ns &&
		    now - o->unused_since_ns >= GC_LINGER_NS)
			detach(g, o);
	}
	pthread_mutex_unlock(&g->mu);
	if (now - g->last_full_scan_ns >= GC_FULL_SCAN_NS) {
		g->last_full_scan_ns = now;
		gc__scan_all(g);
	}
}

/* The C library this daemon runs with: the one processes dlopen libjvm.so through. */
static void attach_dlopen(struct gc *g)
{
	char *text, libc[4096] = "";
	struct proc_maps maps = {0};
	size_t len;

	if (proc_read_file("/proc/self/maps", GC_MAPS_MAX_BYTES, &text, &len))
		return;
	proc_maps__parse(text, len, &maps);
	free(text);
	for (size_t i = 0; i < maps.nr; i++) {
		const char *base = strrchr(maps.v[i].path, '/');

		if (base && !strncmp(base, "/libc.so", 8)) {
			snprintf(libc, sizeof(libc), "%s", maps.v[i].path);
			break;
		}
	}
	proc_maps__clear(&maps);
	if (libc[0] && !gc_probes__attach_dlopen(g->probes, libc)) {
		g->dlopen_probes = 1;
		g->st.probes_attached++;
	}
}

struct gc *gc__new(const struct gc_opts *opts, struct gc_probes *probes)
{
	struct gc *g = calloc(1, sizeof(*g));

	if (!g)
		abort();
	g->opts = *opts;
	g->probes = probes;
	g->self_pid = getpid();
	g->notices = xrealloc(NULL, GC_MAX_NOTICES * sizeof(*g->notices));
	g->later = xrealloc(NULL, GC_MAX_NOTICES * sizeof(*g->later));
	pthread_mutex_init(&g->mu, NULL);
	if (probes && opts->jvm)
		attach_dlopen(g);
	g->last_full_scan_ns = sysinfo__mono_ns();
	gc__scan_all(g);
	return g;
}

void gc__free(struct gc *g)
{
	if (!g)
		return;
	for (size_t i = 0; i < g->nr_objs; i++) {
		gc_attachment__free(g->objs[i].att);
		free(g->objs[i].path);
	}
	free(g->objs);
	hashmap__clear(&g->index);
	free(g->procs);
	for (size_t i = 0; i < g->nr_notices; i++)
		proc_maps__clear(&g->notices[i].maps);
	free(g->notices);
	free(g->later);
	pthread_mutex_destroy(&g->mu);
	free(g);
}

/* The comm of pid's exec not handled yet (its notice waits for the next tick, or its look 300 ms
 * after) into comm; left as it is when there is none. Its first pauses come before its record
 * when the runtime's probes are attached already (another process of it runs). */
static void exec_comm(const struct gc *g, uint32_t pid, char comm[16])
{
	const struct notice *found = NULL;

	for (size_t i = 0; i < g->nr_notices; i++)
		if (g->notices[i].pid == pid && g->notices[i].kind == N_EXEC)
			found = &g->notices[i]; /* the last exec */
	for (size_t i = 0; !found && i < g->nr_later; i++)
		if (g->later[i].pid == pid)
			found = &g->later[i];
	if (found && found->exe.comm[0])
		memcpy(comm, found->exe.comm, 16);
}

void gc__event(struct gc *g, const struct tp_gc_event *rec, struct gc_event *out)
{
	struct gc_proc *p;

	*out = (struct gc_event){
	    .pid = rec->pid,
	    .tid = rec->tid,
	    .runtime = rec->runtime,
	    .kind = rec->kind,
	    .arg = rec->arg,
	    .arg2 = rec->arg2,
	    .start_ns = rec->start_ns,
	    .duration_ns = rec->duration_ns,
	};
	pthread_mutex_lock(&g->mu);
	if (rec->kind == TP_GC_PAUSE && rec->runtime < TP_GC_RUNTIME_NR) {
		g->st.pauses[rec->runtime]++;
		g->st.pause_ns[rec->runtime] += rec->duration_ns;
	}
	p = proc_find(g, rec->pid);
	if (p)
		memcpy(out->comm, p->comm, sizeof(out->comm));
	else
		exec_comm(g, rec->pid, out->comm);
	pthread_mutex_unlock(&g->mu);
}

void gc__count_late(struct gc *g)
{
	pthread_mutex_lock(&g->mu);
	g->st.late++;
	pthread_mutex_unlock(&g->mu);
}

size_t gc__objects(struct gc *g, struct gc_object_status *out, size_t max)
{
	size_t n = 0;

	pthread_mutex_lock(&g->mu);
	for (size_t i = 0; i < g->nr_objs; i++) {
		const struct gc_object *o = &g->objs[i];

		if (!o->info.runtime)
			continue;
		if (n < max) {
			out[n] = (struct gc_object_status){
			    .info = o->info,
			    .state = o->state,
			    .dev = o->dev,
			    .ino = o->ino,
			    .processes = o->users,
			    .probes = gc_attachment__nr_links(o->att),
			};
			snprintf(out[n].path, sizeof(out[n].path), "%s", o->path);
		}
		n++;
	}
	pthread_mutex_unlock(&g->mu);
	return n;
}

void gc__stats(struct gc *g, struct gc_stats *st)
{
	pthread_mutex_lock(&g->mu);
	*st = g->st;
	pthread_mutex_unlock(&g->mu);
	if (g->probes)
		gc_probes__metrics(g->probes, st->metrics);
}

const struct gc_opts *gc__opts(const struct gc *g)
{
	return &g->opts;
}
