// SPDX-License-Identifier: GPL-2.0-only
/* The objects of mappings: the file behind a mapping opened (map_files, the process's root, or
 * the path), its separate debug file found (build ID, .gnu_debuglink) or its MiniDebugInfo read,
 * the DWARF's file recorded for source lines; the vDSO read from a process's memory; and a JIT's
 * symbols from its perf map. Objects are shared through the symbolizer's object cache
 * (elf_object.h). */
#include "symbolizer_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <sys/sysmacros.h>
#include <zlib.h>
#include <unistd.h>

#include "elf_object.h"
#include "log.h"
#include "perf_map.h"
#include "proc_maps.h"
#include "sysinfo.h"

/* A JIT's perf map is checked for growth at most this often per process. */
#define PERF_MAP_CHECK_NS (200ull * 1000 * 1000)
/* A perf map that changed is read again at most this often per process. */
#define PERF_MAP_REREAD_NS (1000ull * 1000 * 1000)
/* reads of a perf map in a look before one is whole (proc_read_file_whole_version) */
#define PERF_MAP_READ_TRIES 3
/* JIT symbol tables of all processes together, the versions windows still hold included: past
 * it a grown perf map is not read again (the version in use stays). */
#define JIT_BUDGET_BYTES (128u << 20)

/* A file whose stat matched its object this recently is taken for it by (dev, inode) alone */
#define OBJECT_RECHECK_NS (1000ull * 1000 * 1000)
/* Largest vDSO image read from a process, and largest MiniDebugInfo decompressed. */
#define VDSO_MAX_BYTES		(1u << 20)
#define MINIDEBUGINFO_MAX_BYTES (256u << 20)
/* A debug file found by .gnu_debuglink, without build IDs to compare, is taken on its CRC-32
 * only up to this size (the CRC reads it whole). */
#define DEBUGLINK_CRC_MAX_BYTES (256ull << 20)

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
		fd = open_regular_file(path, st);
		if (fd >= 0)
			return fd;
	}
	if (m->deleted) {
		/* The running executable, when it is the deleted file (map_files needs
		 * CAP_SYS_ADMIN; /proc/PID/exe only ptrace access). */
		n = snprintf(path, sizeof(path), "%s/%u/exe", s->proc_root, pid);
		fd = n > 0 && n < (int)sizeof(path) ? open_regular_file(path, st) : -ENAMETOOLONG;
		if (fd >= 0 && st->st_ino == m->inode &&
		    st->st_dev == makedev(m->dev_major, m->dev_minor))
			return fd;
		if (fd >= 0)
			close(fd);
		return -ENOENT;
	}
	n = snprintf(path, sizeof(path), "%s/%u/root%s", s->proc_root, pid, m->path);
	if (n > 0 && n < (int)sizeof(path)) {
		fd = open_regular_file(path, st);
		if (fd >= 0 && st->st_ino == m->inode)
			return fd;
		if (fd >= 0)
			close(fd);
	}
	fd = open_regular_file(m->path, st);
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

/* zlib's CRC-32 of the whole file in fd (what .gnu_debuglink holds). Returns 0 or -errno. */
static int file_crc32(int fd, uint32_t *crc)
{
	unsigned char buf[65536];
	uLong c = crc32(0, Z_NULL, 0);
	off_t off = 0;
	ssize_t n;

	while ((n = pread(fd, buf, sizeof(buf), off)) > 0) {
		c = crc32(c, buf, (uInt)n);
		off += n;
	}
	if (n < 0)
		return -errno;
	*crc = (uint32_t)c;
	return 0;
}

/* Records the identity of the file that holds obj's DWARF: a lazy reader opens it only if it is
 * still that file. */
static void set_dwarf_identity(struct object *obj, const struct stat *st)
{
	obj->dwarf.dev = st->st_dev;
	obj->dwarf.inode = st->st_ino;
	obj->dwarf.mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
	obj->dwarf.size_bytes = st->st_size;
}

/* A separate debug file for ef (the object, whose file is obj_st) at path: opened into *out with
 * its fd in *fdp when it is not the object itself and belongs to it (same build ID when both
 * have one, else the debuglink CRC when want_crc, for files up to DEBUGLINK_CRC_MAX_BYTES). With
 * owned, the file must belong to root or to the object's owner (a debug file beside the object,
 * where the process's user may have put anything). A file that exists but is refused (not the
 * object itself) counts in st->debug_rejected. Returns 0 or a negative errno. */
static int try_debug_file(struct symbolizer_stats *stats, const char *path,
			  const struct elf_file *ef, const struct stat *obj_st,
			  const uint32_t *want_crc, bool owned, struct elf_file *out, int *fdp)
{
	struct stat st;
	uint32_t crc;
	int fd = open_regular_file(path, &st), err;

	if (fd < 0)
		return fd;
	err = -ESTALE;
	if (st.st_dev == obj_st->st_dev && st.st_ino == obj_st->st_ino)
		goto fail;
	err = -EPERM;
	if (owned && st.st_uid != 0 && st.st_uid != obj_st->st_uid)
		goto fail;
	err = elf_file__open(out, fd);
	if (err)
		goto fail;
	err = -ESTALE;
	if (!out->has_symtab)
		goto fail_elf;
	if (ef->build_id[0] && out->build_id[0]) {
		if (strcmp(ef->build_id, out->build_id))
			goto fail_elf;
	} else if (!want_crc || (uint64_t)st.st_size > DEBUGLINK_CRC_MAX_BYTES ||
		   file_crc32(fd, &crc) || crc != *want_crc) {
		/* the CRC reads the whole file on the drain thread: a file too large for that
		 * (a sparse one, made to stall us) is not taken on its CRC */
		goto fail_elf;
	}
	*fdp = fd;
	return 0;
fail_elf:
	elf_file__close(out);
fail:
	close(fd);
	if (err != -ESTALE || st.st_dev != obj_st->st_dev || st.st_ino != obj_st->st_ino)
		stats->debug_rejected++;
	return err;
}

/* Finds the separate debug file of the object ef of mapping m of pid (see struct
 * symbolizer_opts for the order). Returns 0 with *out open, *fdp its fd and its path in
 * found[0..len), or -ENOENT. */
static int find_debug_file(struct symbolizer *s, uint32_t pid, const struct proc_mapping *m,
			   const struct elf_file *ef, const struct stat *obj_st,
			   struct elf_file *out, int *fdp, char *found, size_t len)
{
	char path[2 * PATH_MAX], name[NAME_MAX + 1], dir[PATH_MAX];
	const char *slash;
	uint32_t crc;

	if (ef->build_id[0] && strlen(ef->build_id) > 2) {
		for (size_t i = 0; i < s->nr_debug_dirs; i++) {
			snprintf(path, sizeof(path), "%s/.build-id/%.2s/%s.debug", s->debug_dirs[i],
				 ef->build_id, ef->build_id + 2);
			if (!try_debug_file(&s->stats, path, ef, obj_st, NULL, false, out, fdp))
				goto found;
		}
	}
	if (elf_file__debuglink((struct elf_file *)ef, name, sizeof(name), &crc))
		return -ENOENT;
	slash = strrchr(m->path, '/');
	if (!slash)
		return -ENOENT;
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - m->path), m->path);
	/* beside the object and in .debug/ there, as the process sees them */
	snprintf(path, sizeof(path), "%s/%u/root%s/%s", s->proc_root, pid, dir, name);
	if (!try_debug_file(&s->stats, path, ef, obj_st, &crc, true, out, fdp))
		goto found;
	snprintf(path, sizeof(path), "%s/%u/root%s/.debug/%s", s->proc_root, pid, dir, name);
	if (!try_debug_file(&s->stats, path, ef, obj_st, &crc, true, out, fdp))
		goto found;
	for (size_t i = 0; i < s->nr_debug_dirs; i++) {
		snprintf(path, sizeof(path), "%s%s/%s", s->debug_dirs[i], dir, name);
		if (!try_debug_file(&s->stats, path, ef, obj_st, &crc, false, out, fdp))
			goto found;
	}
	return -ENOENT;
found:
	snprintf(found, len, "%s", path);
	return 0;
}

/* The DWARF of obj is in its own file, that of mapping m of pid (identity st): reachable later
 * through the path as we see it, in the process's root, or as the process's mapping. */
static void set_dwarf_self(struct symbolizer *s, struct object *obj, uint32_t pid,
			   const struct proc_mapping *m, const struct stat *st)
{
	char path[PATH_MAX + 64];
	int n = 0;

	if (!m->deleted) {
		obj->dwarf.paths[n++] = sym_xstrdup(m->path);
		snprintf(path, sizeof(path), "%s/%u/root%s", s->proc_root, pid, m->path);
		obj->dwarf.paths[n++] = sym_xstrdup(path);
	}
	snprintf(path, sizeof(path), "%s/%u/map_files/%" PRIx64 "-%" PRIx64, s->proc_root, pid,
		 m->start, m->end);
	obj->dwarf.paths[n++] = sym_xstrdup(path);
	set_dwarf_identity(obj, st);
}

/* The object of file mapping m of pid, with a reference: from the cache by (dev, inode) (same
 * mtime and size), else by build ID, else read now, with the symbols of its separate debug file
 * or MiniDebugInfo when it has no .symtab. Never NULL: an unreadable file gives an object without
 * symbols. */
struct object *symbolizer_open_object(struct symbolizer *s, uint32_t pid,
				      const struct proc_mapping *m)
{
	uint64_t dev = makedev(m->dev_major, m->dev_minor);
	struct elf_file ef = {}, dbg = {}, mini = {};
	char dbg_path[2 * PATH_MAX];
	struct elf_file *extra[2] = {};
	struct object *obj;
	int fd, dbg_fd = -1, err;
	bool found_dbg = false;
	struct stat st;
	uint64_t now;

	/* A file whose identity was checked a moment ago for another process is not opened again:
	 * per process started, only its own mappings cost anything (processes started in a burst
	 * share their libraries). */
	now = sysinfo__mono_ns();
	obj = object_cache__find_checked(&s->objects, dev, m->inode,
					 now > OBJECT_RECHECK_NS ? now - OBJECT_RECHECK_NS : 0);
	if (obj && !m->deleted)
		return object__get(obj);
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
		s->stats.elf_unopenable++;
		pr_debug("cannot open %s of process %u: %s", m->path, pid, strerror(-fd));
		return obj;
	}
	obj = object_cache__find_file(&s->objects, dev, m->inode, &st);
	if (obj) {
		obj->checked_ns = now;
		goto found;
	}
	err = elf_file__open(&ef, fd);
	if (!err) {
		obj = object_cache__find_build_id(&s->objects, ef.build_id);
		if (obj)
			goto found;
		/* the debug file names the functions of an object without .symtab, and holds
		 * the source lines of one without DWARF */
		if (!ef.has_symtab || !ef.has_dwarf)
			found_dbg = !find_debug_file(s, pid, m, &ef, &st, &dbg, &dbg_fd, dbg_path,
						     sizeof(dbg_path));
		if (!ef.has_symtab) {
			if (found_dbg)
				extra[0] = &dbg;
			else if (!elf_file__minidebuginfo(&ef, &mini, MINIDEBUGINFO_MAX_BYTES))
				extra[1] = &mini;
		}
	}
	obj = object__new(m->path);
	obj->dev = dev;
	obj->inode = m->inode;
	obj->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	obj->size_bytes = st.st_size;
	obj->checked_ns = now;
	if (!err)
		err = elf_file__load(&ef, extra, 2, obj);
	if (err > 0) {
		/* the debug file or MiniDebugInfo was unreadable: the object is named without it */
		s->stats.debug_rejected += err;
		found_dbg = false;
		extra[0] = extra[1] = NULL;
		err = 0;
	}
	if (!err && ef.has_dwarf) {
		set_dwarf_self(s, obj, pid, m, &st);
	} else if (!err && found_dbg && dbg.has_dwarf) {
		struct stat dst;

		if (!fstat(dbg_fd, &dst)) {
			obj->dwarf.paths[0] = sym_xstrdup(dbg_path);
			set_dwarf_identity(obj, &dst);
		}
	}
	elf_file__close(&ef);
	elf_file__close(&dbg);
	elf_file__close(&mini);
	if (dbg_fd >= 0)
		close(dbg_fd);
	close(fd);
	if (err) {
		symtab__clear(&obj->symtab);
		obj->elf_failed = true;
		s->stats.elf_failed++;
		s->stats.elf_malformed++;
		pr_debug("cannot read elf symbols of %s: %s", m->path,
			 err == -ENOEXEC ? "malformed elf" : strerror(-err));
	} else if (extra[0]) {
		s->stats.debug_files++;
	} else if (extra[1]) {
		s->stats.minidebuginfo++;
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

/* The vDSO of pid, read from its memory at mapping m: cached by build ID (every process of one
 * kernel and ABI has the same image). NULL when it cannot be read. */
struct object *symbolizer_open_vdso(struct symbolizer *s, uint32_t pid,
				    const struct proc_mapping *m)
{
	struct elf_file ef;
	struct object *obj;
	char path[PATH_MAX];
	size_t size = m->end - m->start;
	void *buf;
	int fd, err;

	if (size > VDSO_MAX_BYTES || m->start > INT64_MAX)
		return NULL;
	snprintf(path, sizeof(path), "%s/%u/mem", s->proc_root, pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	buf = malloc(size);
	if (!buf || pread(fd, buf, size, (off_t)m->start) != (ssize_t)size) {
		free(buf);
		close(fd);
		return NULL;
	}
	close(fd);
	if (elf_file__open_mem(&ef, buf, size, true))
		return NULL;
	obj = object_cache__find_build_id(&s->objects, ef.build_id);
	if (obj) {
		elf_file__close(&ef);
		return object__get(obj);
	}
	obj = object__new("[vdso]");
	err = elf_file__load(&ef, NULL, 0, obj);
	elf_file__close(&ef);
	if (err) {
		object__put(obj);
		return NULL;
	}
	object_cache__add(&s->objects, obj, obj->build_id[0] != 0);
	return obj;
}

struct object *symbolizer_jit_object(struct symbolizer *s, struct process *p)
{
	uint64_t now = sysinfo__mono_ns();
	char root[PATH_MAX], name[64], *buf;
	struct object *obj;
	struct stat st;
	int64_t mtime;
	size_t len, skipped = 0;
	int fd, err;

	if (p->jit_checked_ns && now - p->jit_checked_ns < PERF_MAP_CHECK_NS)
		return p->jit;
	p->jit_checked_ns = now;
	if (!p->status_read)
		symbolizer_read_status(s, p);
	snprintf(root, sizeof(root), "%s/%u/root", s->proc_root, p->pid);
	fd = perf_map__open(root, p->info.ns_pid ? p->info.ns_pid : p->pid, p->uid, p->euid, &st);
	if (fd < 0) {
		if ((fd == -EPERM || fd == -EFBIG) && !p->jit_refused) {
			p->jit_refused = true;
			s->stats.perf_map_rejected++;
			pr_debug("perf map of process %u refused: %s", p->pid,
				 fd == -EPERM ? "not a regular file of the process's user"
					      : "too large");
		}
		return p->jit;
	}
	mtime = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	if ((p->jit_seen && (uint64_t)st.st_size == p->jit_size && mtime == p->jit_mtime_ns) ||
	    (p->jit_read_ns && now - p->jit_read_ns < PERF_MAP_REREAD_NS) ||
	    s->objects.jit_bytes > JIT_BUDGET_BYTES) {
		close(fd);
		return p->jit;
	}
	snprintf(root, sizeof(root), "/proc/self/fd/%d", fd);
	err = proc_read_file_whole_version(root, fd, PERF_MAP_MAX_BYTES, PERF_MAP_READ_TRIES, &st,
					   &buf, &len, &s->stats.perf_map_torn_reads);
	close(fd);
	if (err == -EAGAIN) {
		/* rewritten under every read: the old table stays, and the next look (not a
		 * second from now) reads again */
		return p->jit;
	}
	/* whatever comes of it, this version of the file (the one read) has been looked at */
	p->jit_seen = true;
	p->jit_size = st.st_size;
	p->jit_mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	p->jit_read_ns = now;
	if (err) {
		if (!p->jit_refused) {
			p->jit_refused = true;
			s->stats.perf_map_rejected++;
		}
		return p->jit;
	}
	snprintf(name, sizeof(name), "/tmp/perf-%u.map", p->info.ns_pid ? p->info.ns_pid : p->pid);
	obj = object__new(name);
	err = perf_map__parse(buf, len, &obj->symtab, &skipped);
	free(buf);
	s->stats.perf_map_lines_skipped += skipped;
	if (err < 0) {
		object__put(obj);
		return p->jit;
	}
	if (obj->symtab.nr_spans) {
		const struct sym_span *last = &obj->symtab.spans[obj->symtab.nr_spans - 1];

		obj->range_start = obj->symtab.spans[0].start;
		obj->range_limit = last->start + last->len;
	}
	obj->size_bytes = st.st_size;
	obj->jit_bytes = obj->symtab.nr_spans * sizeof(struct sym_span) + obj->symtab.names_bytes;
	object_cache__add(&s->objects, obj, false);
	s->objects.jit_bytes += obj->jit_bytes;
	s->stats.perf_map_reads++;
	object__put(s->stale_jit);
	s->stale_jit = p->jit;
	p->jit = obj;
	return obj;
}
