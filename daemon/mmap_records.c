// SPDX-License-Identifier: GPL-2.0-only
/* The executable mappings of new processes from perf's mmap records (mmap_records.h).
 *
 * The kernel writes a PERF_RECORD_MMAP2 for each executable mapping a process makes (its
 * executable and interpreter at exec, the vDSO, every library the dynamic loader maps, a JIT's
 * code) to every event that asked for them on the CPU where it happened
 * (include/uapi/linux/perf_event.h; perf record keeps its processes' maps the same way). A
 * process's table starts empty at its exec (PERF_RECORD_COMM with PERF_RECORD_MISC_COMM_EXEC,
 * written before the new image is mapped), or as its parent's at its fork (PERF_RECORD_FORK);
 * a mapping replaces what it overlaps, as mmap(MAP_FIXED) does. Unmaps are not announced: a
 * range unmapped and never mapped again stays in the table, where no sample can land. */
#include "mmap_records.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define NR_BUCKETS   4096
#define DELETED	     " (deleted)"
#define RECORD_BYTES 4096 /* the largest record copied out of a ring's wrap (a path is < 4096) */

struct rec_proc {
	struct rec_proc *next;
	uint32_t pid;
	bool exited;
	bool complete;	    /* maps known since its exec, or since a fork from a known process */
	uint64_t fork_ns;   /* its fork record's time, 0 when not seen */
	uint64_t since_ns;  /* its exec or fork record's time: older mmap records are not its own */
	uint64_t exited_ns; /* its exit record's time */
	struct proc_maps maps;
	size_t cap;
};

struct ring {
	int fd;
	struct perf_event_mmap_page *page;
	uint64_t tail, head; /* a drain's cursor */
};

struct mmap_records {
	pthread_mutex_t mu;
	uint32_t nr_cpus;
	size_t data_bytes;
	struct ring *rings;
	struct rec_proc *buckets[NR_BUCKETS];
	uint64_t last_prune_ns;
	bool incomplete; /* an online CPU without an event: its records are missed, none served */
	struct mmap_records_stats st;
	union {
		struct perf_event_header h;
		char bytes[RECORD_BYTES];
	} wrap;
};

static struct rec_proc **slot_of(struct mmap_records *r, uint32_t pid)
{
	struct rec_proc **pp = &r->buckets[pid % NR_BUCKETS];

	while (*pp && (*pp)->pid != pid)
		pp = &(*pp)->next;
	return pp;
}

static void proc_free(struct rec_proc *p)
{
	proc_maps__clear(&p->maps);
	free(p);
}

static void drop(struct mmap_records *r, uint32_t pid)
{
	struct rec_proc **pp = slot_of(r, pid), *p = *pp;

	if (p) {
		*pp = p->next;
		proc_free(p);
		r->st.processes--;
	}
}

static void drop_all(struct mmap_records *r)
{
	for (size_t b = 0; b < NR_BUCKETS; b++) {
		while (r->buckets[b]) {
			struct rec_proc *p = r->buckets[b];

			r->buckets[b] = p->next;
			proc_free(p);
		}
	}
	r->st.processes = 0;
}

/* Empties p's table; complete: it holds every mapping from now on (an exec, a fork from a known
 * process), else it is not served until the process's next exec. */
static void empty(struct rec_proc *p, bool complete)
{
	proc_maps__clear(&p->maps);
	p->cap = 0;
	p->complete = complete;
}

/* pid's table, emptied (made if new), complete as of time ns; NULL when memory ran out. */
static struct rec_proc *reset(struct mmap_records *r, uint32_t pid, uint64_t ns)
{
	struct rec_proc **pp = slot_of(r, pid), *p = *pp;

	if (!p) {
		p = calloc(1, sizeof(*p));
		if (!p)
			return NULL;
		p->pid = pid;
		*pp = p;
		r->st.processes++;
	}
	empty(p, true);
	p->exited = false;
	p->since_ns = ns;
	return p;
}

static int grow(struct rec_proc *p, size_t need)
{
	struct proc_mapping *v;
	size_t cap = p->cap ? p->cap : 16;

	if (need <= p->cap)
		return 0;
	while (cap < need)
		cap *= 2;
	v = realloc(p->maps.v, cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	p->maps.v = v;
	p->cap = cap;
	return 0;
}

/* Puts m (its path owned) into p's sorted table, cutting what it overlaps. */
static int insert(struct rec_proc *p, struct proc_mapping *m)
{
	struct proc_maps *t = &p->maps;
	size_t i = 0, j, keep;

	/* first mapping that ends after m starts */
	while (i < t->nr && t->v[i].end <= m->start)
		i++;
	/* one that starts before m and ends after it is split in two */
	if (i < t->nr && t->v[i].start < m->start && t->v[i].end > m->end) {
		struct proc_mapping tail = t->v[i];

		tail.path = strdup(t->v[i].path);
		if (!tail.path || grow(p, t->nr + 2)) {
			free(tail.path);
			return -ENOMEM;
		}
		tail.pgoff += m->end - tail.start;
		tail.start = m->end;
		t->v[i].end = m->start;
		memmove(&t->v[i + 2], &t->v[i + 1], (t->nr - i - 1) * sizeof(*t->v));
		t->v[i + 1] = *m;
		t->v[i + 2] = tail;
		t->nr += 2;
		return 0;
	}
	if (grow(p, t->nr + 1))
		return -ENOMEM;
	/* the one it starts inside keeps its head */
	if (i < t->nr && t->v[i].start < m->start)
		t->v[i++].end = m->start;
	/* those it covers go; the one it ends inside keeps its tail */
	for (j = i; j < t->nr && t->v[j].end <= m->end; j++)
		free(t->v[j].path);
	if (j < t->nr && t->v[j].start < m->end) {
		t->v[j].pgoff += m->end - t->v[j].start;
		t->v[j].start = m->end;
	}
	keep = t->nr - j;
	memmove(&t->v[i + 1], &t->v[j], keep * sizeof(*t->v));
	t->v[i] = *m;
	t->nr = i + 1 + keep;
	return 0;
}

struct mmap2_body {
	uint32_t pid, tid;
	uint64_t addr, len, pgoff;
	uint32_t maj, min;
	uint64_t ino, ino_generation;
	uint32_t prot, flags;
	char filename[];
};

static void take_mmap2(struct mmap_records *r, const struct perf_event_header *h, uint64_t ns)
{
	const struct mmap2_body *b = (const void *)(h + 1);
	size_t room = h->size - sizeof(*h) - sizeof(*b) - 16, len;
	struct rec_proc *p = *slot_of(r, b->pid);
	struct proc_mapping m = {0};
	size_t slen = strlen(DELETED);

	r->st.records++;
	if (!p || p->exited || !p->complete || ns < p->since_ns || !(b->prot & PROT_EXEC) ||
	    !b->len || b->addr + b->len < b->addr || (h->misc & PERF_RECORD_MISC_MMAP_BUILD_ID))
		return;
	if (p->maps.nr >= MMAP_RECORDS_MAX_PER_PROCESS) {
		empty(p, false);
		return;
	}
	len = strnlen(b->filename, room);
	m.start = b->addr;
	m.end = b->addr + b->len;
	m.pgoff = b->pgoff;
	/* /proc's way of naming: anonymous code unnamed, no file; a deleted file's suffix off */
	if (len == 6 && !memcmp(b->filename, "//anon", 6)) {
		len = 0;
	} else {
		m.inode = b->ino;
		m.dev_major = b->maj;
		m.dev_minor = b->min;
		if (len >= slen && !memcmp(b->filename + len - slen, DELETED, slen)) {
			m.deleted = true;
			len -= slen;
		}
	}
	m.path = malloc(len + 1);
	if (m.path) {
		memcpy(m.path, b->filename, len);
		m.path[len] = '\0';
	}
	if (!m.path || insert(p, &m)) {
		free(m.path);
		empty(p, false);
	}
}

static void take_fork(struct mmap_records *r, const uint32_t *ids, uint64_t ns)
{
	uint32_t pid = ids[0], ppid = ids[1], tid = ids[2];
	struct rec_proc *parent, *child;

	if (pid != tid || pid == ppid)
		return; /* a thread */
	parent = *slot_of(r, ppid);
	child = reset(r, pid, ns);
	if (!child)
		return;
	child->fork_ns = ns;
	if (!parent || parent->exited || !parent->complete)
		child->complete = false; /* its maps not known until its exec */
	else if (proc_maps__copy(&parent->maps, &child->maps))
		child->complete = false;
	else
		child->cap = child->maps.nr;
}

void mmap_records__apply(struct mmap_records *r, const struct perf_event_header *h)
{
	uint64_t ns;
	const uint32_t *ids = (const void *)(h + 1);

	/* every record ends with its sample_id: pid, tid, time */
	if (h->size < sizeof(*h) + 16 + 8)
		return;
	memcpy(&ns, (const char *)h + h->size - 8, sizeof(ns));
	switch (h->type) {
	case PERF_RECORD_MMAP2:
		if (h->size >= sizeof(*h) + sizeof(struct mmap2_body) + 16)
			take_mmap2(r, h, ns);
		break;
	case PERF_RECORD_COMM:
		if ((h->misc & PERF_RECORD_MISC_COMM_EXEC) && !reset(r, ids[0], ns))
			drop(r, ids[0]);
		break;
	case PERF_RECORD_FORK:
		if (h->size >= sizeof(*h) + 24 + 16)
			take_fork(r, ids, ns);
		break;
	case PERF_RECORD_EXIT:
		if (h->size >= sizeof(*h) + 24 + 16 && ids[0] == ids[2]) {
			struct rec_proc *p = *slot_of(r, ids[0]);

			if (p) {
				p->exited = true;
				p->exited_ns = ns;
			}
		}
		break;
	case PERF_RECORD_LOST: {
		uint64_t lost;

		memcpy(&lost, (const char *)(h + 1) + 8, sizeof(lost));
		r->st.lost += lost;
		drop_all(r);
		break;
	}
	}
}

/* The record at ring's tail (copied out when it wraps), or NULL when the ring is drained. */
static const struct perf_event_header *peek(struct mmap_records *r, struct ring *g)
{
	const char *data = (const char *)g->page + g->page->data_offset;
	const struct perf_event_header *h;
	size_t off, first;

	if (g->tail >= g->head)
		return NULL;
	off = g->tail % r->data_bytes;
	h = (const void *)(data + off);
	if (off + sizeof(*h) <= r->data_bytes && off + h->size <= r->data_bytes)
		return h;
	/* wraps: the header first (it may itself be cut), then the whole record */
	first = r->data_bytes - off;
	for (size_t i = 0; i < sizeof(*h); i++)
		r->wrap.bytes[i] = data[(off + i) % r->data_bytes];
	if (r->wrap.h.size > sizeof(r->wrap) || r->wrap.h.size < sizeof(*h))
		return NULL;
	if (first > r->wrap.h.size)
		first = r->wrap.h.size;
	memcpy(r->wrap.bytes, data + off, first);
	memcpy(r->wrap.bytes + first, data, r->wrap.h.size - first);
	return &r->wrap.h;
}

static uint64_t time_of(const struct perf_event_header *h)
{
	uint64_t ns = 0;

	if (h->size >= sizeof(*h) + 8)
		memcpy(&ns, (const char *)h + h->size - 8, sizeof(ns));
	return ns;
}

static void prune(struct mmap_records *r, uint64_t now_ns)
{
	if (now_ns - r->last_prune_ns < 1000000000ULL)
		return;
	r->last_prune_ns = now_ns;
	for (size_t b = 0; b < NR_BUCKETS; b++) {
		for (struct rec_proc **pp = &r->buckets[b]; *pp;) {
			struct rec_proc *p = *pp;

			if (p->exited && now_ns - p->exited_ns > MMAP_RECORDS_EXITED_KEEP_NS) {
				*pp = p->next;
				proc_free(p);
				r->st.processes--;
			} else {
				pp = &p->next;
			}
		}
	}
}

static uint64_t boot_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void drain_locked(struct mmap_records *r)
{
	uint32_t open = 0;

	for (uint32_t c = 0; c < r->nr_cpus; c++) {
		struct ring *g = &r->rings[c];

		if (!g->page)
			continue;
		g->head = __atomic_load_n(&g->page->data_head, __ATOMIC_ACQUIRE);
		g->tail = g->page->data_tail;
		open += g->tail < g->head;
	}
	/* in time order across the CPUs: an exec on one CPU and its mappings on another */
	while (open) {
		struct ring *best = NULL;
		const struct perf_event_header *bh = NULL;

		for (uint32_t c = 0; c < r->nr_cpus; c++) {
			struct ring *g = &r->rings[c];
			const struct perf_event_header *h;

			if (!g->page || g->tail >= g->head)
				continue;
			h = (const void *)((const char *)g->page + g->page->data_offset +
					   g->tail % r->data_bytes);
			/* the time of a record that wraps is read after the copy */
			if (g->tail % r->data_bytes + sizeof(*h) > r->data_bytes ||
			    g->tail % r->data_bytes + h->size > r->data_bytes) {
				best = g;
				bh = NULL;
				break;
			}
			if (!best || time_of(h) < time_of(bh)) {
				best = g;
				bh = h;
			}
		}
		if (!best)
			break;
		if (!bh)
			bh = peek(r, best);
		if (!bh || bh->size < sizeof(*bh)) {
			best->tail = best->head; /* a torn ring: give up on it, and on the tables */
			drop_all(r);
		} else {
			mmap_records__apply(r, bh);
			best->tail += bh->size;
		}
		if (best->tail >= best->head)
			open--;
		__atomic_store_n(&best->page->data_tail, best->tail, __ATOMIC_RELEASE);
	}
	prune(r, boot_ns());
}

void mmap_records__drain(struct mmap_records *r)
{
	pthread_mutex_lock(&r->mu);
	drain_locked(r);
	pthread_mutex_unlock(&r->mu);
}

/* Whether table p is of the process that started at start_ns: its fork record came within
 * MMAP_RECORDS_FORK_SLACK_NS after that. */
static bool forked_at(const struct rec_proc *p, uint64_t start_ns)
{
	return p->fork_ns >= start_ns && p->fork_ns - start_ns <= MMAP_RECORDS_FORK_SLACK_NS;
}

int mmap_records__is_process(struct mmap_records *r, uint32_t pid, uint64_t start_ns)
{
	struct rec_proc *p;
	int yes;

	pthread_mutex_lock(&r->mu);
	drain_locked(r);
	p = *slot_of(r, pid);
	yes = p && !p->exited && !r->incomplete && forked_at(p, start_ns);
	r->st.identities += yes;
	pthread_mutex_unlock(&r->mu);
	return yes;
}

int mmap_records__maps(struct mmap_records *r, uint32_t pid, uint64_t start_ns, size_t max_mappings,
		       struct proc_maps *out)
{
	struct rec_proc *p;
	int err;

	out->v = NULL;
	out->nr = 0;
	pthread_mutex_lock(&r->mu);
	drain_locked(r);
	p = *slot_of(r, pid);
	if (!p || !p->complete || r->incomplete || (start_ns ? !forked_at(p, start_ns) : p->exited))
		err = -ENOENT;
	else if (p->maps.nr > max_mappings)
		err = -EFBIG;
	else
		err = proc_maps__copy(&p->maps, out);
	if (!err) {
		r->st.served++;
		r->st.served_exited += p->exited;
		err = out->nr > INT32_MAX ? INT32_MAX : (int)out->nr;
	}
	pthread_mutex_unlock(&r->mu);
	return err;
}

static int open_cpu(struct mmap_records *r, uint32_t cpu)
{
	struct perf_event_attr a = {
	    .size = sizeof(a),
	    .type = PERF_TYPE_SOFTWARE,
	    .config = PERF_COUNT_SW_DUMMY,
	    .sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME,
	    .mmap = 1,
	    .mmap2 = 1,
	    .comm = 1,
	    .comm_exec = 1,
	    .task = 1,
	    .sample_id_all = 1,
	    .use_clockid = 1,
	    .clockid = CLOCK_BOOTTIME, /* a process's start time's clock */
	    /* no wake-ups: the drains read the rings */
	    .watermark = 1,
	    .wakeup_watermark = (uint32_t)r->data_bytes,
	};
	struct ring *g = &r->rings[cpu];
	void *p;
	int fd;

	fd = (int)syscall(SYS_perf_event_open, &a, -1, (int)cpu, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -errno;
	p = mmap(NULL, r->data_bytes + (size_t)sysconf(_SC_PAGESIZE), PROT_READ | PROT_WRITE,
		 MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		int err = -errno;

		close(fd);
		return err;
	}
	g->fd = fd;
	g->page = p;
	return 0;
}

static void close_cpu(struct mmap_records *r, uint32_t cpu)
{
	struct ring *g = &r->rings[cpu];

	if (!g->page)
		return;
	munmap(g->page, r->data_bytes + (size_t)sysconf(_SC_PAGESIZE));
	close(g->fd);
	g->page = NULL;
	g->fd = -1;
}

int mmap_records__sync_cpus(struct mmap_records *r, const uint8_t *online)
{
	bool opened = false;
	int n = 0, err = 0;

	pthread_mutex_lock(&r->mu);
	r->incomplete = false;
	for (uint32_t c = 0; c < r->nr_cpus; c++) {
		if (online && online[c] && !r->rings[c].page) {
			err = open_cpu(r, c);
			opened |= !err;
			r->incomplete |= err != 0;
		} else if ((!online || !online[c]) && r->rings[c].page) {
			close_cpu(r, c);
		}
		n += r->rings[c].page != NULL;
	}
	if (opened)
		drop_all(r);
	r->st.cpus = (uint32_t)n;
	pthread_mutex_unlock(&r->mu);
	return n ? n : err;
}

struct mmap_records *mmap_records__new(uint32_t nr_cpus, const uint8_t *online, unsigned order)
{
	struct mmap_records *r = calloc(1, sizeof(*r));
	int n;

	if (!r)
		return NULL;
	pthread_mutex_init(&r->mu, NULL);
	r->nr_cpus = nr_cpus;
	r->data_bytes = (size_t)sysconf(_SC_PAGESIZE) << order;
	r->rings = calloc(nr_cpus ? nr_cpus : 1, sizeof(*r->rings));
	if (!r->rings) {
		free(r);
		errno = ENOMEM;
		return NULL;
	}
	for (uint32_t c = 0; c < nr_cpus; c++)
		r->rings[c].fd = -1;
	if (!online)
		return r;
	n = mmap_records__sync_cpus(r, online);
	if (n <= 0) {
		mmap_records__free(r);
		errno = n < 0 ? -n : ENODEV;
		return NULL;
	}
	return r;
}

void mmap_records__free(struct mmap_records *r)
{
	if (!r)
		return;
	for (uint32_t c = 0; c < r->nr_cpus; c++)
		close_cpu(r, c);
	drop_all(r);
	free(r->rings);
	pthread_mutex_destroy(&r->mu);
	free(r);
}

void mmap_records__stats(struct mmap_records *r, struct mmap_records_stats *st)
{
	pthread_mutex_lock(&r->mu);
	*st = r->st;
	st->incomplete = r->incomplete;
	pthread_mutex_unlock(&r->mu);
}
