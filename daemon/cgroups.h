/* SPDX-License-Identifier: GPL-2.0-only */
/* Processes' cgroups, interned: the path a process is in and, under Docker, containerd, CRI-O,
 * Podman or Kubernetes, the container ID and pod UID its path names. A process's cgroup is read
 * once, with its other identity (symbolizer.c's read_info); samples carry the id (struct task).
 * The table is process-wide, append-only and thread-safe: an id, once given, names the same
 * cgroup until the daemon exits. */
#ifndef TAILPROF_CGROUPS_H
#define TAILPROF_CGROUPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Paths the table holds at most; later new paths get id 0 (counted: cgroups__overflow). At most
 * some 4 KiB each, in practice under 200 bytes. */
#define CGROUPS_MAX	 16384
#define CONTAINER_ID_LEN 65 /* 64 hex digits and NUL */
#define POD_UID_LEN	 37 /* a UUID and NUL */

struct cgroup_entry {
	const char *path;		     /* "/system.slice/docker-ID.scope" */
	char container_id[CONTAINER_ID_LEN]; /* "" when the path names none */
	char pod_uid[POD_UID_LEN];	     /* "" when the path names none */
};

/* The cgroup path of pid from PROC_ROOT/PID/cgroup (proc_root "/proc" on the host) into out:
 * the cgroup v2 line ("0::PATH") when it is below the root, else the v1 name=systemd
 * hierarchy's when it is (hybrid layouts keep containers there), else the v2 path. *v2 (NULL
 * allowed) is set when the path is the v2 one, the cgroup bpf_get_current_cgroup_id() names.
 * Returns 0, -ENOENT (no such line: a kernel thread, a process gone), -ENAMETOOLONG or another
 * negative errno. */
int cgroups__read_pid(const char *proc_root, uint32_t pid, char *out, size_t len, bool *v2);

/* The hierarchy id of the cgroup v1 name=systemd hierarchy (hybrid layouts) in the cgroup file
 * at path (/proc/self/cgroup: "ID:name=systemd:PATH"), the kernel's cgroup_root.hierarchy_id,
 * which the exec record's walk looks for (bpf/profile.bpf.c); 0 when there is none (pure v2 or
 * pure v1 hosts) or the file cannot be read. */
uint32_t cgroups__systemd_hierarchy(const char *path);

/* The kernfs node id (what bpf_get_current_cgroup_id() and the exec record's cgroup_v1_id give)
 * of cgroup path `path` in the v2 hierarchy (v1 false) or in the v1 name=systemd one (v1 true),
 * by name_to_handle_at(2) below the hierarchy's mount point, found once in
 * /proc/self/mountinfo. ctx is unused (the signature of symbolizer_opts.cgroup_id). Returns 0,
 * -ENOENT (no such mount, no such cgroup now), -EOPNOTSUPP (a handle that is no kernfs id) or
 * another negative errno. */
int cgroups__id_of(void *ctx, bool v1, const char *path, uint64_t *id);

/* The container ID and pod UID that cgroup path `path` names, "" for none: the last path
 * component holding a run of exactly 64 hex digits (docker-ID.scope, cri-containerd-ID.scope,
 * crio-ID.scope, libpod-ID.scope, /docker/ID, /kubepods/.../ID), and the last component naming
 * a pod ("pod" and a UUID, '_' for '-' under the systemd driver: kubepods-burstable-podUID.slice).
 */
void cgroups__parse(const char *path, char container_id[CONTAINER_ID_LEN],
		    char pod_uid[POD_UID_LEN]);

/* The id of path (1 and up), interned; 0 for "" or "/" (no cgroup worth a label) and when the
 * table is full. */
uint32_t cgroups__intern(const char *path);

/* The entry of id, or NULL for 0 and ids never given. */
const struct cgroup_entry *cgroups__get(uint32_t id);

/* Whether id's container ID is want, or starts with it (want at least 12 characters, as
 * `docker ps` shortens them). */
bool cgroups__container_is(uint32_t id, const char *want);

/* Paths not interned because the table was full (total). */
uint64_t cgroups__overflow(void);

#endif
