// SPDX-License-Identifier: GPL-2.0-only
/* CPython support (python.h): interpreter discovery, and code objects named and cached per
 * process; the versions' offset tables are python_versions.c, the reads of a process's objects
 * python_mem.c, the interned (function, file, line) table python_lines.c. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "array.h"
#include "elf_object.h"
#include "hashmap.h"
#include "loader.h"
#include "log.h"
#include "proc_maps.h"
#include "python.h"
#include "python_lines.h"
#include "python_mem.h"
#include "python_versions.h"
#include "sysinfo.h"

const char *const python_unsupported_names[PY_UNSUP_NR] = {
    [PY_UNSUP_VERSION] = "version",
    [PY_UNSUP_NO_RUNTIME] = "no_runtime_symbol",
    [PY_UNSUP_UNREADABLE] = "unreadable",
    [PY_UNSUP_MAP_FULL] = "map_full",
};

#define FRAME_OWNED_BY_GENERATOR 1 /* _PyInterpreterFrame.owner value (3.11 to 3.13) */

#define NAME_MAX_BYTES 256  /* longest qualified name kept (UTF-8 bytes) */
#define FILE_MAX_BYTES 1024 /* longest file name kept */
#define LINETABLE_MAX_BYTES                                                                        \
	(1 << 20)	       /* longest location table read (a 30,000-line function: 270 kB) */
#define MAX_CODE_OBJECTS 65536 /* cached code objects; past it the cache starts over */
#define CODE_MEMO_LINES	 4     /* lines remembered per code object (struct py_code) */
#define PY_OBJECT_RANGE	 (1ull << 32) /* the synthetic objects' address range (line ids) */

/* ---- processes and code objects ---- */

struct py_proc {
	uint32_t pid;
	uint64_t start_ns;
	const struct py_version *v;
	struct object *obj; /* the interpreter's synthetic object (python->objs holds it) */
	uint64_t runtime;   /* &_PyRuntime in the process */
	uint64_t code_type; /* &PyCode_Type in the process; 0: unknown (no type check) */
	/* the interpreter file's image in the process [image_lo, image_hi), placed at bias
	 * (process address - link-time address), and the file's identity: the code objects the
	 * build froze into its data (3.11 and 3.12's deep-frozen modules: importlib, site, os...)
	 * lie there, the same in every process of the file */
	uint64_t image_lo, image_hi, bias, file_key;
	uint64_t set_ns; /* CLOCK_MONOTONIC when its py_procs entry was written; 0: by BPF */
	bool from_exec;	 /* given to the walker by the exec program (python__note_exec) */
};

/* An interpreter executable (py_exes): a process of it, its addresses made relative to its
 * start_code (py_proc_moved). */
struct py_exe {
	uint64_t dev, ino; /* makedev() form */
	struct py_proc at0;
};
#define PY_EXES 64 /* as py_exes' max_entries */

/* An exec record's identity of a new image, kept until python__note_process() reads it. */
struct py_exec_note {
	uint32_t pid;
	uint64_t start_ns;
	struct python_exec x;
};
#define PY_EXEC_NOTES 1024 /* indexed by pid: a newer exec overwrites an older one */

struct py_code {
	uint32_t pid;
	uint64_t start_ns;
	uint64_t addr; /* pid 0: one built into an interpreter file, start_ns the file's key and
			* addr the offset from its bias */
	/* checked again with firstlineno: code objects are freed and their addresses reused.
	 * The qualname alone does not tell modules apart (every <module> has the same interned
	 * name and first line 1; 3.13 reused <frozen site>'s for the main script's): the file
	 * and location table pointers do. */
	uint64_t qualname_ptr, filename_ptr, linetable_ptr;
	int32_t firstlineno;
	int32_t firsttraceable;
	uint32_t checked_gen; /* the drain when it was last checked */
	bool failed;	      /* unreadable: named by address */
	bool not_code;	      /* readable, but not a code object: its frames are dropped */
	char *function, *file;
	uint8_t *linetable;
	size_t linetable_len;
	/* The lines last looked up in it, LASTI units -> python_line_intern() id, replaced in
	 * turn: a frame of this code waits at one of a few call sites, so a sample's frame is
	 * nearly always one of these, with no location table to decode or line to hash. */
	int32_t memo_units[CODE_MEMO_LINES];
	uint32_t memo_id[CODE_MEMO_LINES];
	uint8_t memo_nr, memo_next;
};

/* What runtime_symbol() found in one interpreter file, by the file's identity. */
struct py_symbols {
	uint64_t dev, ino, size;
	int64_t mtime_ns;
	uint64_t runtime, code_type; /* link-time addresses of _PyRuntime and PyCode_Type */
	int64_t exec_delta;	     /* file offset - vaddr of the executable PT_LOAD */
	uint64_t image_lo, image_hi; /* link-time extent of the PT_LOAD segments [lo, hi) */
	int err;		     /* 0 or -ENODATA (no _PyRuntime): both are remembered */
	uint64_t used;		     /* python.sym_clock at the last hit; 0: empty */
	/* the device and inode a process's maps showed for it, and when the stat that found it
	 * (CLOCK_MONOTONIC ns) */
	uint64_t map_dev, map_ino, checked_ns;
};

#define SYM_CACHE 64 /* interpreter files remembered */
/* An interpreter file a process's maps show by the device and inode of a cached one checked this
 * recently is not stat()ed again (Python processes started in a burst: one stat through
 * /proc/PID/root each otherwise). As the unwinder's objects checked a moment ago. */
#define SYM_TRUST_NS 1000000000ull

#define COUNTED_SLOTS 1024 /* processes remembered as counted unsupported */

struct python {
	struct python_opts opts;
	uint64_t counted[COUNTED_SLOTS]; /* (pid, start_ns) keys counted unsupported */
	struct py_symbols syms[SYM_CACHE];
	uint64_t sym_clock;
	char proc_root[PATH_MAX];
	struct py_proc *procs;
	size_t nr_procs, cap_procs;
	struct object **objs; /* synthetic objects, one per interpreter path, referenced */
	size_t nr_objs;
	struct py_code *codes;
	size_t nr_codes;
	struct hashmap code_index;
	uint32_t gen;
	struct python_stats st;
	struct py_exe exes[PY_EXES];
	size_t nr_exes;
	uint32_t dropped_pid; /* the last process whose entry python__forget_process() deleted */
	struct py_exec_note execs[PY_EXEC_NOTES];
};

static struct py_proc *find_proc(struct python *p, uint32_t pid)
{
	for (size_t i = 0; i < p->nr_procs; i++)
		if (p->procs[i].pid == pid)
			return &p->procs[i];
	return NULL;
}

struct python *python__new(const struct python_opts *opts)
{
	struct python *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	if (opts)
		p->opts = *opts;
	snprintf(p->proc_root, sizeof(p->proc_root), "%s",
		 p->opts.proc_root ? p->opts.proc_root : "/proc");
	p->opts.proc_root = p->proc_root;
	if (p->opts.loader && loader__python_frames(p->opts.loader))
		for (uint32_t i = 0; i < py_nr_versions; i++) {
			/* the BPF walker reads a frame's first TP_PY_FRAME_HEAD bytes only */
			if (!tp_py_frame_fits(&py_versions[i].bpf)) {
				pr_warn(
				    "python: %s's frame fields lie past the %d bytes the walker "
				    "reads (TP_PY_FRAME_HEAD): its processes keep native frames "
				    "only",
				    py_versions[i].name, TP_PY_FRAME_HEAD);
				continue;
			}
			loader__python_set_offsets(p->opts.loader, i, &py_versions[i].bpf);
		}
	return p;
}

static void clear_codes(struct python *p)
{
	for (size_t i = 0; i < p->nr_codes; i++) {
		free(p->codes[i].function);
		free(p->codes[i].file);
		free(p->codes[i].linetable);
	}
	free(p->codes);
	p->codes = NULL;
	p->nr_codes = 0;
	hashmap__clear(&p->code_index);
}

void python__free(struct python *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nr_procs; i++)
		if (p->opts.loader)
			loader__python_drop_process(p->opts.loader, p->procs[i].pid);
	free(p->procs);
	/* the objects stay alive as long as stacks reference them */
	for (size_t i = 0; i < p->nr_objs; i++)
		object__put(p->objs[i]);
	free(p->objs);
	clear_codes(p);
	free(p);
}

/* Reads the link-time addresses (.dynsym, then .symtab) of _PyRuntime and PyCode_Type (0 when
 * absent) of the ELF file at path, the (file offset - vaddr) of its executable PT_LOAD, to place
 * them in a mapping, and the extent of its PT_LOAD segments, into out's runtime, code_type,
 * exec_delta and image_lo/hi. Returns 0, -ENODATA (no _PyRuntime), or another negative errno
 * (unreadable: -ENOENT for a path that does not resolve). */
static int runtime_symbol(const char *path, struct py_symbols *out)
{
	int fd, err = -ENODATA;
	Elf_Scn *scn = NULL;
	bool have_seg = false;
	size_t nph = 0;
	Elf *elf;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOSYS;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getphdrnum(elf, &nph)) {
		err = -ENOEXEC;
		goto out;
	}
	out->image_lo = UINT64_MAX;
	out->image_hi = 0;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (ph.p_vaddr < out->image_lo)
			out->image_lo = ph.p_vaddr;
		if (ph.p_vaddr + ph.p_memsz > out->image_hi)
			out->image_hi = ph.p_vaddr + ph.p_memsz;
		if ((ph.p_flags & PF_X) && !have_seg) {
			out->exec_delta = (int64_t)ph.p_offset - (int64_t)ph.p_vaddr;
			have_seg = true;
		}
	}
	if (out->image_lo >= out->image_hi)
		out->image_lo = out->image_hi = 0;
	out->runtime = out->code_type = 0;
	for (int pass = 0; pass < 2 && have_seg && !(out->runtime && out->code_type); pass++) {
		int want = pass ? SHT_SYMTAB : SHT_DYNSYM;

		scn = NULL;
		while (!(out->runtime && out->code_type) && (scn = elf_nextscn(elf, scn))) {
			Elf_Data *data;
			GElf_Shdr sh;

			if (!gelf_getshdr(scn, &sh) || (int)sh.sh_type != want || !sh.sh_entsize)
				continue;
			data = elf_getdata(scn, NULL);
			for (size_t i = 0; data && i < sh.sh_size / sh.sh_entsize; i++) {
				GElf_Sym sym;
				const char *s;

				if (!gelf_getsym(data, i, &sym) ||
				    GELF_ST_TYPE(sym.st_info) != STT_OBJECT || !sym.st_value)
					continue;
				s = elf_strptr(elf, sh.sh_link, sym.st_name);
				if (s && !strcmp(s, "_PyRuntime"))
					out->runtime = sym.st_value;
				else if (s && !strcmp(s, "PyCode_Type"))
					out->code_type = sym.st_value;
			}
		}
	}
	if (out->runtime)
		err = 0;
out:
	if (elf)
		elf_end(elf);
	close(fd);
	return err;
}

static void trust(struct py_symbols *c, uint64_t map_dev, uint64_t map_ino, uint64_t now)
{
	c->map_dev = map_dev;
	c->map_ino = map_ino;
	c->checked_ns = now;
}

/* runtime_symbol() of the file at path, which process mapping m maps, remembered per file
 * (device, inode, size, mtime): the next process of an interpreter already seen costs a stat,
 * not an ELF read, and none when its maps show a file found within SYM_TRUST_NS. On success *out
 * is a copy of the file's entry (its identity too). Returns 0, -ENODATA (no _PyRuntime,
 * remembered too) or the negative errno of stat or the read. */
static int runtime_symbol_cached(struct python *p, const char *path, const struct proc_mapping *m,
				 struct py_symbols *out)
{
	struct py_symbols *victim = &p->syms[0];
	struct py_symbols e = {0};
	uint64_t dev = makedev(m->dev_major, m->dev_minor), now = sysinfo__mono_ns();
	struct stat st;
	int err;

	for (size_t i = 0; m->inode && i < SYM_CACHE; i++) {
		struct py_symbols *c = &p->syms[i];

		if (c->used && c->map_ino == m->inode && c->map_dev == dev &&
		    now - c->checked_ns < SYM_TRUST_NS) {
			c->used = ++p->sym_clock;
			*out = *c;
			return c->err;
		}
	}
	p->st.symbol_stats++;
	if (stat(path, &st))
		return -errno;
	e.dev = st.st_dev;
	e.ino = st.st_ino;
	e.size = (uint64_t)st.st_size;
	e.mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	for (size_t i = 0; i < SYM_CACHE; i++) {
		struct py_symbols *c = &p->syms[i];

		if (c->used && c->dev == e.dev && c->ino == e.ino && c->size == e.size &&
		    c->mtime_ns == e.mtime_ns) {
			c->used = ++p->sym_clock;
			if (!c->err) /* a file without a runtime is looked for elsewhere next */
				trust(c, dev, m->inode, now);
			*out = *c;
			return c->err;
		}
		if (c->used < victim->used)
			victim = c;
	}
	err = runtime_symbol(path, &e);
	p->st.symbol_reads++;
	if (err && err != -ENODATA)
		return err;
	if (err)
		e.runtime = e.code_type = e.image_lo = e.image_hi = 0;
	e.err = err;
	e.used = ++p->sym_clock;
	if (!err)
		trust(&e, dev, m->inode, now);
	*victim = e;
	*out = e;
	return err;
}

/* The synthetic object of the interpreter at path (one per path, kept by p). */
static struct object *interp_object(struct python *p, const char *path)
{
	char name[PATH_MAX + 16];
	struct object *obj;

	snprintf(name, sizeof(name), "[python] %s", path);
	for (size_t i = 0; i < p->nr_objs; i++)
		if (!strcmp(object__path(p->objs[i]), name))
			return p->objs[i];
	obj = object__new(name);
	obj->is_python = true;
	obj->range_limit = PY_OBJECT_RANGE;
	p->objs = realloc(p->objs, (p->nr_objs + 1) * sizeof(*p->objs));
	if (!p->objs)
		abort();
	p->objs[p->nr_objs++] = obj;
	return obj;
}

bool python__is_object(const struct object *obj)
{
	return obj && obj->is_python;
}

/* Counts process (pid, start_ns) as refused for reason, once: it is looked at again at its
 * recheck after exec. */
static void count_unsupported(struct python *p, uint32_t pid, uint64_t start_ns,
			      enum python_unsupported reason)
{
	uint64_t key = hashmap__combine(pid, start_ns) | 1;
	uint64_t *slot = &p->counted[key % COUNTED_SLOTS];

	if (*slot == key)
		return;
	*slot = key;
	p->st.unsupported[reason]++;
}

/* Keeps pp (p->procs). Returns 0 or -ENOMEM. */
static int append_proc(struct python *p, const struct py_proc *pp)
{
	if (ARRAY_GROW(p->procs, p->cap_procs, p->nr_procs + 1))
		return -ENOMEM;
	p->procs[p->nr_procs++] = *pp;
	return 0;
}

/* pp's py_procs entry. */
static struct tp_py_proc walker_entry(const struct py_proc *pp)
{
	return (struct tp_py_proc){
	    .start_ns = pp->start_ns,
	    .runtime = pp->runtime,
	    .version = (uint32_t)(pp->v - py_versions),
	    .image_lo = pp->image_lo,
	    .image_hi = pp->image_hi,
	    .image_key = pp->file_key,
	};
}

int python__walker_entry(struct python *p, uint32_t pid, uint64_t start_ns, struct tp_py_proc *out)
{
	const struct py_proc *pp = find_proc(p, pid);

	if (!pp || pp->start_ns != start_ns)
		return -ENOENT;
	*out = walker_entry(pp);
	return 0;
}

/* Gives process pp->pid to the walker (py_procs) and keeps pp, stamped now (set_ns). Returns 0
 * (also when py_procs is full: the process is counted as refused), or -ENOMEM. */
static int add_proc(struct python *p, struct py_proc *pp)
{
	struct tp_py_proc bp = walker_entry(pp);

	pp->set_ns = sysinfo__mono_ns();
	if (p->opts.loader && loader__python_set_process(p->opts.loader, pp->pid, &bp)) {
		count_unsupported(p, pp->pid, pp->start_ns, PY_UNSUP_MAP_FULL);
		return 0;
	}
	if (append_proc(p, pp)) {
		if (p->opts.loader)
			loader__python_drop_process(p->opts.loader, pp->pid);
		return -ENOMEM;
	}
	return 0;
}

static const struct py_exe *find_exe(const struct python *p, uint64_t dev, uint64_t ino)
{
	for (size_t i = 0; i < p->nr_exes; i++)
		if (p->exes[i].ino == ino && p->exes[i].dev == dev)
			return &p->exes[i];
	return NULL;
}

/* pp with its addresses moved by delta (modular), code_type 0 (unknown) kept. */
static struct py_proc py_proc_moved(const struct py_proc *pp, uint64_t delta)
{
	struct py_proc m = *pp;

	m.runtime += delta;
	m.code_type += m.code_type ? delta : 0;
	m.image_lo += delta;
	m.image_hi += delta;
	m.bias += delta;
	return m;
}

int python__note_exec(struct python *p, uint32_t pid, uint64_t start_ns,
		      const struct python_exec *x)
{
	const struct py_exe *e;
	struct py_proc pp;

	p->execs[pid % PY_EXEC_NOTES] = (struct py_exec_note){pid, start_ns, *x};
	if (!x->walker_set || !(e = find_exe(p, x->exe_dev, x->exe_ino)))
		return 0;
	pp = py_proc_moved(&e->at0, x->start_code);
	pp.pid = pid;
	pp.start_ns = start_ns;
	pp.set_ns = 0;
	pp.from_exec = true;
	python__forget_process(p, pid, UINT64_MAX);
	/* tailprofd wrote an entry after the exec (maps read for the old image in a drain that
	 * ended after it), deleted at this record with the exec program's: written again */
	if (p->dropped_pid == pid) {
		p->dropped_pid = 0;
		if (add_proc(p, &pp))
			return 0;
		p->st.from_exec_rewritten++;
	} else if (append_proc(p, &pp)) {
		return 0;
	}
	p->st.from_exec++;
	return 1;
}

/* Gives the executable of process pp (exec'd with x) to the exec program, pp's interpreter being
 * its own code (pick, pp's interpreter file, is a mapping of it). */
static void note_exe(struct python *p, const struct py_proc *pp, const struct python_exec *x)
{
	struct py_exe *e;
	struct tp_py_proc at0;

	if (p->nr_exes == PY_EXES || find_exe(p, x->exe_dev, x->exe_ino))
		return;
	e = &p->exes[p->nr_exes];
	*e = (struct py_exe){.dev = x->exe_dev, .ino = x->exe_ino};
	e->at0 = py_proc_moved(pp, -x->start_code);
	at0 = walker_entry(&e->at0);
	if (p->opts.loader &&
	    loader__python_set_exe(p->opts.loader, x->exe_kdev, x->exe_ino,
				   &(struct tp_py_exe){.runtime_off = at0.runtime,
						       .image_lo_off = at0.image_lo,
						       .image_hi_off = at0.image_hi,
						       .image_key = at0.image_key,
						       .version = at0.version}))
		return;
	p->nr_exes++;
	p->st.exes = p->nr_exes;
}

int python__note_process(struct python *p, uint32_t pid, uint64_t start_ns)
{
	const struct py_exec_note *xn = &p->execs[pid % PY_EXEC_NOTES];
	const struct proc_mapping *pick = NULL;
	const struct py_version *v = NULL;
	struct proc_maps maps = {0};
	char path[PATH_MAX + 64];
	struct py_symbols sym;
	struct py_proc *known;
	bool named = false;
	int err;

	/* given to the walker at its exec: its executable is the interpreter */
	known = find_proc(p, pid);
	if (known && known->start_ns == start_ns && known->from_exec)
		return 1;
	python__forget_process(p, pid, 0);
	err = proc_maps__load(p->proc_root, pid, 64 << 20, &maps);
	if (err < 0)
		return err;
	/* libpython first: an executable linked to it has no runtime of its own */
	for (size_t i = 0; i < maps.nr; i++) {
		const struct proc_mapping *m = &maps.v[i];
		const char *base = strrchr(m->path, '/');
		bool lib, n;

		if (!proc_mapping__is_file(m))
			continue;
		base = base ? base + 1 : m->path;
		lib = !strncmp(base, "libpython3", 10);
		if (!lib && strncmp(base, "python3", 7))
			continue;
		if (pick && !lib)
			continue;
		v = py_version_of(m->path, &n);
		named |= n;
		if (n)
			pick = m;
		if (lib && n)
			break;
	}
	if (!pick) {
		proc_maps__clear(&maps);
		return 0;
	}
	v = py_version_of(pick->path, &named);
	if (!v) {
		count_unsupported(p, pid, start_ns, PY_UNSUP_VERSION);
		err = 0;
		goto out;
	}
	snprintf(path, sizeof(path), "%s/%u/root%s", p->proc_root, pid, pick->path);
	err = runtime_symbol_cached(p, path, pick, &sym);
	if (err == -ENODATA || err == -ENOENT || err == -EACCES)
		err = runtime_symbol_cached(p, pick->path, pick, &sym);
	if (err) {
		count_unsupported(p, pid, start_ns,
				  err == -ENODATA ? PY_UNSUP_NO_RUNTIME : PY_UNSUP_UNREADABLE);
		err = 0;
		goto out;
	}
	{
		/* the bias of the object in the process: a file offset pgoff sits at start */
		uint64_t bias = pick->start - pick->pgoff + sym.exec_delta;
		struct py_proc pp = {
		    .pid = pid,
		    .start_ns = start_ns,
		    .v = v,
		    .obj = interp_object(p, pick->path),
		    .runtime = bias + sym.runtime,
		    .code_type = sym.code_type ? bias + sym.code_type : 0,
		    .image_lo = bias + sym.image_lo,
		    .image_hi = bias + sym.image_hi,
		    .bias = bias,
		    .file_key =
			hashmap__combine(hashmap__combine(sym.dev, sym.ino),
					 hashmap__combine(sym.size, (uint64_t)sym.mtime_ns)),
		};

		err = add_proc(p, &pp);
		if (!err)
			err = 1;
		/* the interpreter is its executable's own code: its next images need no read */
		if (err == 1 && xn->pid == pid && xn->start_ns == start_ns && xn->x.start_code &&
		    proc_mapping__of(pick, xn->x.exe_dev, xn->x.exe_ino))
			note_exe(p, &pp, &xn->x);
	}
out:
	proc_maps__clear(&maps);
	return err;
}

int python__note_fork(struct python *p, uint32_t pid, uint64_t start_ns, uint32_t parent_pid,
		      uint64_t parent_start_ns)
{
	struct py_proc *parent = find_proc(p, parent_pid), child;
	int err;

	if (!parent || parent->start_ns != parent_start_ns)
		return 0;
	child = *parent;
	child.pid = pid;
	child.start_ns = start_ns;
	python__forget_process(p, pid, 0);
	err = add_proc(p, &child);
	return err ? err : 1;
}

void python__forget_process(struct python *p, uint32_t pid, uint64_t event_ns)
{
	struct py_proc *pp = find_proc(p, pid);

	if (!pp)
		return;
	if (pp->set_ns >= event_ns) {
		if (p->opts.loader)
			loader__python_drop_process(p->opts.loader, pid);
		/* at an exec, the entry the exec program wrote went with it */
		p->dropped_pid = pid;
	}
	*pp = p->procs[--p->nr_procs];
	/* its code objects are keyed by start_ns too: stale entries are never hit again */
}

void python__drain_begin(struct python *p, bool tick)
{
	if (tick)
		p->gen++;
}

/* Fills c from the code object at addr of the process of pp: failed when it cannot be read,
 * not_code too when what is there is not a code object (its type is not PyCode_Type: a frame read
 * while it was being set up or torn down). */
static void read_code(struct python *p, const struct py_proc *pp, uint64_t addr, struct py_code *c)
{
	const struct py_user_offsets *u = &pp->v->user;
	char name[NAME_MAX_BYTES], file[FILE_MAX_BYTES];
	struct py_prefetch pre[3];
	struct py_code_fields cf;
	uint64_t size = 0;

	p->st.code_reads++;
	c->failed = true;
	if (py_read_code_fields(pp->pid, u, addr, &cf)) {
		p->st.code_read_failed++;
		return;
	}
	if (pp->code_type && cf.type != pp->code_type) {
		c->not_code = true;
		return;
	}
	/* the name, the file and the location table in one system call (most of them are within
	 * their first PY_PREFETCH_BYTES), rather than two to three each */
	py_prefetch(pp->pid, (const uint64_t[]){cf.qualname, cf.filename, cf.linetable}, pre,
		    cf.linetable ? 3 : 2);
	if (!cf.linetable)
		pre[2].len = 0;
	if (py_read_str(pp->pid, u, cf.qualname, &pre[0], name, sizeof(name)) ||
	    py_read_str(pp->pid, u, cf.filename, &pre[1], file, sizeof(file))) {
		p->st.code_read_failed++;
		return;
	}
	c->failed = false;
	c->firstlineno = cf.firstlineno;
	c->firsttraceable = cf.firsttraceable;
	c->qualname_ptr = cf.qualname;
	c->filename_ptr = cf.filename;
	c->linetable_ptr = cf.linetable;
	c->function = sym_xstrdup(name);
	c->file = sym_xstrdup(file);
	if (pre[2].len >= (size_t)u->bytes_size + 8)
		memcpy(&size, pre[2].buf + u->bytes_size, 8);
	else if (!cf.linetable || py_read_mem(pp->pid, cf.linetable + u->bytes_size, &size, 8) != 8)
		size = 0;
	if (size <= LINETABLE_MAX_BYTES && size) {
		c->linetable = malloc(size);
		if (c->linetable && u->bytes_data + size <= pre[2].len) {
			memcpy(c->linetable, pre[2].buf + u->bytes_data, size);
			c->linetable_len = size;
		} else if (c->linetable && py_read_mem(pp->pid, cf.linetable + u->bytes_data,
						       c->linetable, size) == (ssize_t)size) {
			c->linetable_len = size;
		} else {
			free(c->linetable);
			c->linetable = NULL;
		}
	}
}

struct code_key {
	uint32_t pid;
	uint64_t start_ns, addr;
	const struct python *p;
};

static bool code_eq(const void *ctx, uint32_t val)
{
	const struct code_key *k = ctx;
	const struct py_code *c = &k->p->codes[val];

	return c->pid == k->pid && c->start_ns == k->start_ns && c->addr == k->addr;
}

/* The cached code object at addr of the process, read now if new or no longer the same. A cached
 * one is checked once per drain tick, and at once where recheck (a stack BPF had not seen: a
 * freed object's address may hold a new one, as a script's functions take the addresses of the
 * `<module>` code objects its start-up imports freed). One in the interpreter file's image is
 * kept by file and offset, for every process of that file, and not checked again: such objects
 * were built into the file and are never freed. */
static struct py_code *code_of(struct python *p, const struct py_proc *pp, uint64_t addr,
			       bool recheck)
{
	bool in_image = addr >= pp->image_lo && addr < pp->image_hi;
	struct code_key k = {in_image ? 0 : pp->pid, in_image ? pp->file_key : pp->start_ns,
			     in_image ? addr - pp->bias : addr, p};
	uint64_t h = hashmap__combine(hashmap__combine(k.pid, k.start_ns), k.addr);
	struct py_code *c;
	uint32_t i;

	if (hashmap__find(&p->code_index, h, code_eq, &k, &i)) {
		struct py_code_fields cf;

		c = &p->codes[i];
		if ((c->checked_gen == p->gen && !recheck) ||
		    (in_image && !c->failed && !c->not_code)) {
			if (in_image)
				p->st.code_image_hits++;
			return c;
		}
		c->checked_gen = p->gen;
		p->st.code_checks++;
		/* the address may hold another code object now: check what names it (unreadable:
		 * the process is gone, what was read stands) */
		if (py_read_code_fields(pp->pid, &pp->v->user, addr, &cf))
			return c;
		if (pp->code_type && cf.type != pp->code_type && c->not_code)
			return c;
		if (!c->failed && cf.firstlineno == c->firstlineno &&
		    cf.qualname == c->qualname_ptr && cf.filename == c->filename_ptr &&
		    cf.linetable == c->linetable_ptr &&
		    (!pp->code_type || cf.type == pp->code_type))
			return c;
		free(c->function);
		free(c->file);
		free(c->linetable);
	} else {
		if (p->nr_codes >= MAX_CODE_OBJECTS)
			clear_codes(p);
		if (!p->codes) {
			p->codes = calloc(MAX_CODE_OBJECTS, sizeof(*p->codes));
			if (!p->codes)
				return NULL;
		}
		if (hashmap__insert(&p->code_index, h, p->nr_codes))
			return NULL;
		c = &p->codes[p->nr_codes++];
	}
	*c = (struct py_code){.pid = k.pid, .start_ns = k.start_ns, .addr = k.addr};
	c->checked_gen = p->gen;
	read_code(p, pp, addr, c);
	return c;
}

/* The line id (python_line_intern) of code object c at LASTI units, from its memo when there;
 * UINT32_MAX when the line table is full. */
static uint32_t code_line(struct py_code *c, int32_t units)
{
	uint32_t id;

	for (uint32_t i = 0; i < c->memo_nr; i++)
		if (c->memo_units[i] == units)
			return c->memo_id[i];
	id = python_line_intern(
	    c->function, c->file, (uint32_t)c->firstlineno,
	    python__linetable_line(c->linetable, c->linetable_len, c->firstlineno, units));
	if (id != UINT32_MAX) {
		c->memo_units[c->memo_next] = units;
		c->memo_id[c->memo_next] = id;
		c->memo_next = (c->memo_next + 1) % CODE_MEMO_LINES;
		if (c->memo_nr < CODE_MEMO_LINES)
			c->memo_nr++;
	}
	return id;
}

uint32_t python__resolve(struct python *p, uint32_t pid, uint64_t start_ns,
			 const struct tp_py_frame *in, uint32_t n, bool new_stack,
			 struct python_frame *out)
{
	struct py_proc *pp = find_proc(p, pid);
	uint32_t nr = 0, seg = 0, real = 0;
	/* a new stack wholly in the image, every code object of it read: BPF's py_seen key */
	bool image_stack = new_stack && pp && pp->image_hi > pp->image_lo;
	uint64_t key = TP_PY_STACK_SEED;

	if (!pp || pp->start_ns != start_ns)
		return 0;
	if (new_stack)
		p->st.new_stacks++;
	for (uint32_t i = 0; i < n; i++) {
		int32_t units = (int32_t)(uint32_t)in[i].info;
		uint8_t owner = (uint8_t)(in[i].info >> TP_PY_INFO_OWNER_SHIFT);
		struct py_code *c;
		uint32_t id;

		if (image_stack) {
			if (in[i].code >= pp->image_lo && in[i].code < pp->image_hi)
				key = tp_py_stack_step(key, in[i].code - pp->image_lo);
			else
				image_stack = false;
		}

		/* 3.12 on: the eval loop's own frame (its code the interpreter's trampoline, or
		 * None) is not shown; the frame inside it is the one the C frame was entered with.
		 * When none is (its frames all incomplete), an empty entry stands for them. */
		if (pp->v->cstack_owner != PY_NO_OWNER && owner == pp->v->cstack_owner) {
			if (nr > seg) {
				out[nr - 1].entry = true;
			} else {
				out[nr].f = (struct frame){0};
				out[nr].entry = true;
				nr++;
			}
			seg = nr;
			continue;
		}
		/* a frame read while it was set up or torn down: no object is in the first page or
		 * misaligned */
		if (in[i].code < 4096 || (in[i].code & 7)) {
			p->st.not_code++;
			image_stack = false;
			continue;
		}
		c = code_of(p, pp, in[i].code, new_stack);
		if (!c || c->failed || c->not_code)
			image_stack = false;
		if (c && c->not_code) {
			p->st.not_code++;
			continue;
		}
		if (c && !c->failed) {
			/* _PyFrame_IsIncomplete: before its first traceable instruction (units is
			 * the frame's LASTI: prev_instr's offset to 3.12, instr_ptr's in 3.13, as
			 * CPython compares them; its lines are looked up there too) */
			if (owner != FRAME_OWNED_BY_GENERATOR && units < c->firsttraceable) {
				p->st.incomplete++;
				continue;
			}
			id = code_line(c, units);
		} else {
			char name[48];

			snprintf(name, sizeof(name), "[python code 0x%" PRIx64 "]",
				 (uint64_t)in[i].code);
			id = python_line_intern(name, "", 0, 0);
		}
		if (id == UINT32_MAX)
			continue; /* the table is full: counted as lines, shown as native only */
		out[nr].f = (struct frame){.obj = pp->obj, .addr = id};
		out[nr].entry = (in[i].info & TP_PY_INFO_ENTRY) != 0;
		nr++;
		real++;
	}
	p->st.frames += real;
	/* later processes of the file need no wake-up for this stack: its names are cached by file
	 * and offset (code_of) */
	if (image_stack && n && p->opts.loader &&
	    !loader__python_mark_seen(p->opts.loader,
				      tp_py_stack_end(key, 1, pp->file_key, pid, start_ns)))
		p->st.image_stacks++;
	return nr;
}

void python__stats(const struct python *p, struct python_stats *st)
{
	*st = p->st;
	st->processes = p->nr_procs;
	st->lines = python_nr_lines();
}
