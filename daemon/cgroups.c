// SPDX-License-Identifier: GPL-2.0-only
/* Processes' cgroups, interned (cgroups.h). */
#include "cgroups.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hashmap.h"
#include "proc_maps.h"

#define CGROUP_FILE_MAX (64u << 10)

static struct {
	pthread_mutex_t lock;
	struct cgroup_entry *v[CGROUPS_MAX + 1]; /* v[0] unused: id 0 is "none" */
	uint32_t nr;				 /* ids given: 1..nr */
	struct hashmap index;			 /* path -> id */
	uint64_t overflow;
} table = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The path of the line of /proc/PID/cgroup text that starts with prefix ("0::", or the v1
 * hierarchy's "name=systemd:" after its number), or NULL; *len set to its length. */
static const char *cgroup_line(const char *text, const char *prefix, bool numbered, size_t *len)
{
	size_t plen = strlen(prefix);

	for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
		const char *p = l, *end;

		if (numbered) {
			p += strspn(p, "0123456789");
			if (p == l || *p != ':')
				continue;
			p++;
		}
		if (strncmp(p, prefix, plen))
			continue;
		p += plen;
		end = strchr(p, '\n');
		*len = end ? (size_t)(end - p) : strlen(p);
		return p;
	}
	return NULL;
}

uint32_t cgroups__systemd_hierarchy(const char *path)
{
	const char *line;
	uint64_t id = 0;
	size_t tlen, n;
	char *text;

	if (proc_read_single(path, CGROUP_FILE_MAX, &text, &tlen))
		return 0;
	line = cgroup_line(text, "name=systemd:", true, &n);
	if (line) {
		/* back to the start of its line: the number before the first ':' */
		while (line > text && line[-1] != '\n')
			line--;
		if (sscanf(line, "%" SCNu64 ":", &id) != 1 || id > UINT32_MAX)
			id = 0;
	}
	free(text);
	return (uint32_t)id;
}

/* The mount points of the v2 hierarchy and of the v1 name=systemd one ("" when not mounted),
 * from /proc/self/mountinfo at the first call. */
static struct {
	pthread_once_t once;
	char v2[PATH_MAX], v1[PATH_MAX];
} mounts = {.once = PTHREAD_ONCE_INIT};

/* Whether comma-separated list opts holds opt as a whole item. */
static bool has_option(const char *opts, const char *opt)
{
	size_t n = strlen(opt);

	for (const char *p = opts; p; p = strchr(p, ','), p = p ? p + 1 : NULL)
		if (!strncmp(p, opt, n) && (p[n] == ',' || p[n] == '\0'))
			return true;
	return false;
}

static void find_mounts(void)
{
	char line[4096];
	FILE *f = fopen("/proc/self/mountinfo", "re");

	if (!f)
		return;
	/* "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [TAGS] - FSTYPE SOURCE SUPEROPTIONS" */
	while (fgets(line, sizeof(line), f)) {
		char point[PATH_MAX], fstype[64], super[1024];
		const char *dash = strstr(line, " - ");

		if (!dash || sscanf(line, "%*s %*s %*s %*s %4095s", point) != 1 ||
		    sscanf(dash + 3, "%63s %*s %1023s", fstype, super) != 2 || strchr(point, '\\'))
			continue; /* an escaped (octal) mount point is not worth decoding here */
		if (!strcmp(fstype, "cgroup2") && !mounts.v2[0])
			snprintf(mounts.v2, sizeof(mounts.v2), "%s", point);
		else if (!strcmp(fstype, "cgroup") && !mounts.v1[0] &&
			 has_option(super, "name=systemd"))
			snprintf(mounts.v1, sizeof(mounts.v1), "%s", point);
	}
	fclose(f);
}

int cgroups__id_of(void *ctx, bool v1, const char *path, uint64_t *id)
{
	struct {
		struct file_handle fh;
		unsigned char bytes[MAX_HANDLE_SZ];
	} h;
	char full[2 * PATH_MAX + 2];
	const char *root;
	int mnt;

	(void)ctx;
	pthread_once(&mounts.once, find_mounts);
	root = v1 ? mounts.v1 : mounts.v2;
	if (!root[0])
		return -ENOENT;
	if (snprintf(full, sizeof(full), "%s%s", root, path) >= (int)sizeof(full))
		return -ENAMETOOLONG;
	h.fh.handle_bytes = MAX_HANDLE_SZ;
	if (name_to_handle_at(AT_FDCWD, full, &h.fh, &mnt, 0))
		return -errno;
	/* kernfs's handle (FILEID_KERNFS): the node's 64-bit id */
	if (h.fh.handle_bytes != sizeof(*id))
		return -EOPNOTSUPP;
	memcpy(id, h.fh.f_handle, sizeof(*id));
	return 0;
}

int cgroups__read_pid(const char *proc_root, uint32_t pid, char *out, size_t len, bool *from_v2)
{
	const char *v2, *v1, *pick;
	size_t n2 = 0, n1 = 0, n;
	char path[4096], *text;
	size_t tlen;
	int err;

	if (snprintf(path, sizeof(path), "%s/%u/cgroup", proc_root, pid) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	/* one show of the kernel's writes it (proc_cgroup_show): one read */
	err = proc_read_single(path, CGROUP_FILE_MAX, &text, &tlen);
	if (err)
		return err;
	v2 = cgroup_line(text, "0::", false, &n2);
	v1 = cgroup_line(text, "name=systemd:", true, &n1);
	if (v2 && !(n2 == 1 && *v2 == '/'))
		pick = v2, n = n2;
	else if (v1)
		pick = v1, n = n1;
	else
		pick = v2, n = n2;
	err = !pick ? -ENOENT : n >= len ? -ENAMETOOLONG : 0;
	if (!err) {
		memcpy(out, pick, n);
		out[n] = 0;
		if (from_v2)
			*from_v2 = pick == v2;
	}
	free(text);
	return err;
}

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* A run of exactly 64 hex digits in component [c, end), or NULL. */
static const char *hex64_in(const char *c, const char *end)
{
	for (const char *p = c; p < end;) {
		const char *q = p;

		while (q < end && is_hex(*q))
			q++;
		if (q - p == 64)
			return p;
		p = q < end ? q + 1 : q;
	}
	return NULL;
}

/* A pod UID in component [c, end): "pod" then 36 characters of hex digits and '-' or '_'
 * (8-4-4-4-12), written with '-' into out; false if none. */
static bool pod_in(const char *c, const char *end, char out[POD_UID_LEN])
{
	for (const char *p = c; p + 3 + 36 <= end; p++) {
		static const int dash[] = {8, 13, 18, 23};
		bool ok = !strncmp(p, "pod", 3);

		for (int i = 0; ok && i < 36; i++) {
			char ch = p[3 + i];
			bool sep = i == dash[0] || i == dash[1] || i == dash[2] || i == dash[3];

			ok = sep ? ch == '-' || ch == '_' : is_hex(ch);
		}
		if (ok && (p + 39 == end || !is_hex(p[39]))) {
			for (int i = 0; i < 36; i++)
				out[i] = p[3 + i] == '_' ? '-' : p[3 + i];
			out[36] = 0;
			return true;
		}
	}
	return false;
}

void cgroups__parse(const char *path, char container_id[CONTAINER_ID_LEN],
		    char pod_uid[POD_UID_LEN])
{
	container_id[0] = 0;
	pod_uid[0] = 0;
	for (const char *c = path; *c;) {
		const char *end = strchr(c, '/'), *hex;

		if (!end)
			end = c + strlen(c);
		hex = hex64_in(c, end);
		if (hex) {
			memcpy(container_id, hex, 64);
			container_id[64] = 0;
		}
		pod_in(c, end, pod_uid);
		c = *end ? end + 1 : end;
	}
}

static bool path_eq(const void *ctx, uint32_t id)
{
	return !strcmp(table.v[id]->path, ctx);
}

uint32_t cgroups__intern(const char *raw)
{
	struct cgroup_entry *e = NULL;
	uint32_t id = 0;
	uint64_t h;
	char *path;

	if (!raw[0] || !strcmp(raw, "/"))
		return 0;
	path = strdup(raw);
	if (!path)
		return 0;
	/* a label value: printable ASCII (cgroup names are any bytes but '/' and NUL) */
	for (char *c = path; *c; c++)
		if (*c < 0x20 || *c > 0x7e)
			*c = '?';
	h = hashmap__hash_str(path);
	pthread_mutex_lock(&table.lock);
	if (hashmap__find(&table.index, h, path_eq, path, &id))
		goto out;
	id = 0;
	if (table.nr == CGROUPS_MAX) {
		table.overflow++;
		goto out;
	}
	e = calloc(1, sizeof(*e));
	if (!e || hashmap__insert(&table.index, h, table.nr + 1)) {
		free(e);
		goto out;
	}
	e->path = path;
	path = NULL;
	cgroups__parse(e->path, e->container_id, e->pod_uid);
	id = ++table.nr;
	table.v[id] = e;
out:
	pthread_mutex_unlock(&table.lock);
	free(path);
	return id;
}

const struct cgroup_entry *cgroups__get(uint32_t id)
{
	const struct cgroup_entry *e = NULL;

	pthread_mutex_lock(&table.lock);
	if (id && id <= table.nr)
		e = table.v[id];
	pthread_mutex_unlock(&table.lock);
	return e;
}

bool cgroups__container_is(uint32_t id, const char *want)
{
	const struct cgroup_entry *e = cgroups__get(id);
	size_t n = strlen(want);

	if (!e || !e->container_id[0])
		return false;
	return n == 64 ? !strcmp(e->container_id, want)
		       : n >= 12 && n < 64 && !strncmp(e->container_id, want, n);
}

uint64_t cgroups__overflow(void)
{
	uint64_t n;

	pthread_mutex_lock(&table.lock);
	n = table.overflow;
	pthread_mutex_unlock(&table.lock);
	return n;
}
