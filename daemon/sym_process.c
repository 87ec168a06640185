// SPDX-License-Identifier: GPL-2.0-only
/* Who a process is: its identity checked against its start time, and its labels (name,
 * PID-namespace pid, uids, cgroup), taken from its exec record where that tells them (or, for a
 * forked child that has not exec'd, its fork record), else read from /proc. */
#include "symbolizer_internal.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroups.h"
#include "hashmap.h"
#include "proc_maps.h"

#define STAT_MAX_BYTES (64u << 10)

/* 0 when the pid belongs to the process that started at start_ns (boot-time ns), else -ESRCH
 * (gone, or the pid now belongs to another process) or another negative errno. BPF's table of
 * live processes tells where it has the pid (a bpf() lookup, against an open, read and close of
 * a file the kernel formats), and that one started since it has every process is gone where it
 * does not; else /proc/PID/stat, whose field 22, starttime, is in clock ticks
 * since boot (proc(5)): the kernel truncates start_boottime to it. */
int symbolizer_check_identity(struct symbolizer *s, uint32_t pid, uint64_t start_ns)
{
	char path[PATH_MAX], *buf, *p, *end;
	unsigned long long ticks;
	uint64_t live, since;
	size_t len;
	int err;

	/* a process started after tailprofd: its fork record, and no exit record since */
	if (proc_maps__records_is_process(s->proc_root, pid, start_ns)) {
		s->stats.identity_checks[2]++;
		return 0;
	}
	if (s->live_start) {
		err = s->live_start(s->live_ctx, pid, &live);
		if (!err || (err == -ENOENT && s->live_since &&
			     (since = s->live_since(s->live_ctx)) && start_ns > since)) {
			s->stats.identity_checks[0]++;
			return !err && live == start_ns ? 0 : -ESRCH;
		}
	}
	s->stats.identity_checks[1]++;

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

/* The value of the first line of /proc/PID/status that starts with key ("NSpid:"), or NULL. */
static const char *status_field(const char *status, const char *key)
{
	size_t klen = strlen(key);

	for (const char *l = status; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
		if (!strncmp(l, key, klen))
			return l + klen;
	return NULL;
}

/* The innermost pid of a status file's "NSpid:" value f (the outermost namespace first, the
 * process's own last), or NULL when f lists one pid only (the process is in the proc mount's
 * namespace). */
static const char *nspid_innermost(const char *f)
{
	const char *last = NULL;

	for (const char *t = f; *t && *t != '\n'; t++)
		if ((*t == ' ' || *t == '\t') && t[1] >= '0' && t[1] <= '9')
			last = t + 1;
	return last && last != f + 1 ? last : NULL;
}

/* Reads the uids and the PID-namespace pid of p from its status file (once). */
void symbolizer_read_status(struct symbolizer *s, struct process *p)
{
	char path[PATH_MAX], *buf;
	const char *f;
	size_t len;

	p->status_read = true;
	snprintf(path, sizeof(path), "%s/%u/status", s->proc_root, p->pid);
	if (proc_read_file(path, STAT_MAX_BYTES, &buf, &len))
		return;
	f = status_field(buf, "Uid:");
	if (f)
		sscanf(f, "%u %u", &p->uid, &p->euid);
	f = status_field(buf, "NSpid:");
	if (f && (f = nspid_innermost(f)))
		p->info.ns_pid = strtoul(f, NULL, 10);
	if (p->info.ns_pid == p->pid)
		p->info.ns_pid = 0;
	free(buf);
}

/* The ns/pid link of the proc mount's PID namespace into s->root_pid_ns (and its inode number
 * into s->root_pid_ns_inum): its pid 1's (the namespace's init), else, where pid 1 may not be
 * looked at (a sandbox), this daemon's own if its status shows one pid (it runs in that
 * namespace). Empty when neither tells. */
static void read_root_pid_ns(struct symbolizer *s)
{
	char path[PATH_MAX], *buf;
	const char *f;
	size_t len;
	ssize_t n;

	s->root_pid_ns_read = true;
	snprintf(path, sizeof(path), "%s/1/ns/pid", s->proc_root);
	n = readlink(path, s->root_pid_ns, sizeof(s->root_pid_ns) - 1);
	if (n > 0) {
		s->root_pid_ns[n] = 0;
		goto inum;
	}
	snprintf(path, sizeof(path), "%s/self/status", s->proc_root);
	if (proc_read_file(path, STAT_MAX_BYTES, &buf, &len))
		return;
	f = status_field(buf, "NSpid:");
	if (f && !nspid_innermost(f)) {
		snprintf(path, sizeof(path), "%s/self/ns/pid", s->proc_root);
		n = readlink(path, s->root_pid_ns, sizeof(s->root_pid_ns) - 1);
		s->root_pid_ns[n > 0 ? n : 0] = 0;
	}
	free(buf);
inum:
	/* "pid:[4026531836]" (proc(5), /proc/PID/ns) */
	if (sscanf(s->root_pid_ns, "pid:[%u]", &s->root_pid_ns_inum) != 1)
		s->root_pid_ns_inum = 0;
}

/* Whether p is in the PID namespace of the proc mount, by their ns/pid links: then its pid there
 * is its own and its status file need not be read (the dearest file of a process to read: its
 * memory figures are counted for it). False when unsure. */
static bool same_pid_ns(struct symbolizer *s, const struct process *p)
{
	char path[PATH_MAX], link[64];
	ssize_t n;

	if (!s->root_pid_ns_read)
		read_root_pid_ns(s);
	if (!s->root_pid_ns[0])
		return false;
	snprintf(path, sizeof(path), "%s/%u/ns/pid", s->proc_root, p->pid);
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return false;
	link[n] = 0;
	return !strcmp(link, s->root_pid_ns);
}

/* The identity p exec'd with (symbolizer__note_exec), or NULL. */
const struct exec_identity *symbolizer_exec_identity_of(struct symbolizer *s,
							const struct process *p)
{
	const struct exec_note *x = &s->execs[p->pid % EXEC_NOTES];

	return x->pid == p->pid && x->start_ns == p->start_ns ? &x->id : NULL;
}

bool symbolizer_fork_identity_of(struct symbolizer *s, const struct process *p,
				 struct exec_identity *out)
{
	const struct fork_link *l = &s->forks[p->pid % FORK_LINKS];

	if (l->child != p->pid || l->child_start != p->start_ns || !l->pid_ns)
		return false;
	*out = (struct exec_identity){.cgroup_id = l->cgroup_id,
				      .cgroup_v1_id = l->cgroup_v1_id,
				      .pid_ns = l->pid_ns,
				      .ns_pid = l->ns_pid};
	_Static_assert(sizeof(out->name) == sizeof(l->name), "name sizes");
	memcpy(out->name, l->name, sizeof(out->name));
	return true;
}

/* Whether the proc mount's PID namespace's inode number is known (read once). */
static bool root_pid_ns_known(struct symbolizer *s)
{
	if (!s->root_pid_ns_read)
		read_root_pid_ns(s);
	return s->root_pid_ns_inum != 0;
}

const struct exec_identity *symbolizer_record_identity(struct symbolizer *s,
						       const struct process *p,
						       struct exec_identity *forked)
{
	const struct exec_identity *x = symbolizer_exec_identity_of(s, p);

	if (!x && symbolizer_fork_identity_of(s, p, forked))
		x = forked;
	return x;
}

/* The PID-namespace part of p's identity from its exec: true when that decides it. */
static bool pid_ns_from_exec(struct symbolizer *s, struct process *p, const struct exec_identity *x)
{
	if (!x || !x->pid_ns || !root_pid_ns_known(s))
		return false;
	/* in another namespace, the uids wait for a perf map (read_status) as they do otherwise */
	if (x->pid_ns != s->root_pid_ns_inum && x->ns_pid != p->pid)
		p->info.ns_pid = x->ns_pid;
	return true;
}

/* Whether path, read from the cgroup file of a process that exec'd in the cgroups x names, names
 * them still: the v2 cgroup's path (v2), else the name=systemd one's with the v2 cgroup the root.
 * A process moved between its exec and the read (runc moves its init into the container's
 * cgroup) must not give its new path to the next processes exec'd where it was. */
static bool names_exec_cgroups(struct symbolizer *s, const struct exec_identity *x,
			       const char *path, bool v2)
{
	uint64_t id;

	if (!s->cgroup_id)
		return false;
	if (v2)
		return !s->cgroup_id(s->cgroup_ctx, false, path, &id) && id == x->cgroup_id;
	return x->cgroup_v1_id && !s->cgroup_id(s->cgroup_ctx, true, path, &id) &&
	       id == x->cgroup_v1_id && !s->cgroup_id(s->cgroup_ctx, false, "/", &id) &&
	       id == x->cgroup_id;
}

/* The slot of the cgroup path of the cgroups x names (x->cgroup_id not 0). */
static struct cgroup_id_path *cgroup_slot(struct symbolizer *s, const struct exec_identity *x)
{
	uint64_t key = hashmap__combine(x->cgroup_id, x->cgroup_v1_id);

	return &s->cgroup_paths[hashmap__mix64(key) % CGROUP_ID_PATHS];
}

/* Whether the path of the cgroups x names is known (read for an earlier process). */
static bool cgroup_known(struct symbolizer *s, const struct exec_identity *x)
{
	const struct cgroup_id_path *c;

	if (!x->cgroup_id)
		return false;
	c = cgroup_slot(s, x);
	return c->kernfs_id == x->cgroup_id && c->v1_id == x->cgroup_v1_id;
}

/* p's cgroup (cgroups.h id) from the path read for the cgroups it exec'd in (v2, and v1
 * name=systemd on hybrid layouts: the two lines of the cgroup file that the path is taken from),
 * else, while it lives, from its cgroup file, remembered for them when the path names them. */
static uint32_t read_cgroup(struct symbolizer *s, const struct process *p,
			    const struct exec_identity *x, bool live)
{
	struct cgroup_id_path *c = NULL;
	char path[PATH_MAX];
	uint32_t id = 0;
	bool v2 = false;

	if (x && x->cgroup_id) {
		c = cgroup_slot(s, x);
		if (cgroup_known(s, x)) {
			s->stats.cgroup_reads_saved++;
			return c->cgroup;
		}
	}
	if (!live || cgroups__read_pid(s->proc_root, p->pid, path, sizeof(path), &v2))
		return 0;
	id = cgroups__intern(path);
	if (c && names_exec_cgroups(s, x, path, v2))
		*c = (struct cgroup_id_path){
		    .kernfs_id = x->cgroup_id, .v1_id = x->cgroup_v1_id, .cgroup = id};
	return id;
}

/* Whether an executable's file name is a dynamic loader's (ld-linux-x86-64.so.2, ld-2.31.so,
 * ld-musl-x86_64.so.1, ld64.so.2, ld.so.1), which runs as the program when invoked by name. */
static bool loader_name(const char *name)
{
	return (!strncmp(name, "ld-", 3) || !strncmp(name, "ld64.so", 7) ||
		!strncmp(name, "ld.so", 5)) &&
	       strstr(name, ".so");
}

bool symbolizer_info_told(struct symbolizer *s, const struct process *p)
{
	struct exec_identity forked;
	const struct exec_identity *x = symbolizer_record_identity(s, p, &forked);

	return x && x->name[0] && x->pid_ns && cgroup_known(s, x) && root_pid_ns_known(s);
}

/* Reads the process's name (executable, else argv[0]) and PID-namespace pid; its uids wait for
 * a perf map (symbolizer_jit_object). What its exec told (symbolizer__note_exec) is not read
 * again. What cannot be read stays empty: these are labels, never a reason to drop a sample.
 * Unless live (its identity checked), only what its exec told: the pid may be another
 * process's now. */
void symbolizer_read_info(struct symbolizer *s, struct process *p, bool live)
{
	char path[PATH_MAX], target[PATH_MAX], *buf;
	struct exec_identity forked;
	/* a child sampled before it execs: its /proc files may be its new image's by now */
	const struct exec_identity *x = symbolizer_record_identity(s, p, &forked);
	const bool fork = x == &forked;
	const char *base = NULL;
	size_t len;
	ssize_t n;

	p->info_read = true;
	if (fork)
		s->stats.identities_from_fork++;
	/* a dynamic loader run as the program maps the real one and its libraries itself: its
	 * own code says nothing of them */
	if (x && !fork && !loader_name(x->name)) {
		p->exe_dev = x->exe_dev;
		p->exe_ino = x->exe_ino;
		p->entry_ip = x->entry_ip;
		p->start_code = x->start_code;
		p->exe_size = x->exe_size;
		p->vdso = x->vdso;
	}
	if (x && !fork && x->name[0])
		s->stats.identities_from_exec++;
	if (!pid_ns_from_exec(s, p, x) && live && !same_pid_ns(s, p))
		symbolizer_read_status(s, p);
	p->info.cgroup = read_cgroup(s, p, x, live);
	if (x && x->name[0]) {
		snprintf(p->info.name, sizeof(p->info.name), "%s", x->name);
		return;
	}
	if (!live)
		return;
	snprintf(path, sizeof(path), "%s/%u/exe", s->proc_root, p->pid);
	n = readlink(path, target, sizeof(target) - 1);
	if (n > 0) {
		target[n] = 0;
		if (n > 10 && !strcmp(target + n - 10, " (deleted)"))
			target[n - 10] = 0;
		base = strrchr(target, '/');
		base = base ? base + 1 : target;
	} else {
		snprintf(path, sizeof(path), "%s/%u/cmdline", s->proc_root, p->pid);
		if (!proc_read_file(path, 4096, &buf, &len)) {
			snprintf(target, sizeof(target), "%s", buf);
			free(buf);
			base = strrchr(target, '/');
			base = base ? base + 1 : target;
		}
	}
	if (base)
		snprintf(p->info.name, sizeof(p->info.name), "%.*s", PROCESS_NAME_LEN - 1, base);
}
