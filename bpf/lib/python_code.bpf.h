/* SPDX-License-Identifier: GPL-2.0-only */
/* The code objects of a new Python stack, read by BPF at the sample that found the stack and sent
 * to user space (TP_EV_PY_CODE) ahead of it, so that tailprofd names the frames without reading
 * the process: no wake-up to read them while it lives, no process_vm_readv, and no frames lost
 * when a short-lived process exits before the drain. A code object whose name, file or line table
 * the record cannot hold whole is read by tailprofd as before. Included by profile.bpf.c only,
 * after python.bpf.h and the `events` ring buffer. */
#ifndef TAILPROF_PYTHON_CODE_BPF_H
#define TAILPROF_PYTHON_CODE_BPF_H

/* The most code objects one sample sends: a deeper new stack takes the old way (its sample wakes
 * tailprofd), so that a sample's time in BPF stays bounded. */
#define TP_PY_CODE_PER_SAMPLE 16

/* py_code_epoch: bumped by tailprofd whenever it drops its cached code objects (its cache is
 * full): what py_code_sent says was sent before is then sent again. */
__u64 py_code_epoch = 0;

/* py_code_sent: (process, code object address) -> what named the code object when it was last
 * sent (tp_py_code_sig of its qualname, filename and line table pointers and first line) and the
 * py_code_epoch then. A code object of a new stack with the same signature in the same epoch is
 * not sent again: user space has it (the same comparison tells it that an address holds another
 * code object now, daemon/python.c). One in the interpreter file's image is keyed (0, the file's
 * image_key, its offset from image_lo) and sent once per epoch for every process of the file: such
 * objects never change. LRU: forgetting one costs one record more. */
struct tp_py_code_key {
	__u32 pid;
	__u32 pad;
	__u64 start_ns; /* or image_key */
	__u64 addr;	/* or the offset in the image */
};

struct tp_py_code_sent {
	__u64 sig; /* 1 for image code objects */
	__u64 epoch;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct tp_py_code_key);
	__type(value, struct tp_py_code_sent);
} py_code_sent SEC(".maps");

/* py_code_fields: a code object's fields as read, per CPU (the sampler does not nest in
 * itself), checked before a record is reserved. */
struct tp_py_code_fields {
	__u8 b[TP_PY_CODE_FIELDS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tp_py_code_fields);
} py_code_fields SEC(".maps");

/* State of one sending, on the caller's stack, shared with the bpf_loop callback. */
struct tp_py_send_state {
	const struct tp_py_offsets *o;
	const __u64 *frames; /* the walk's struct tp_py_frame pairs */
	__u64 start_ns, ts_ns, epoch;
	__u64 image_lo, image_len, image_key; /* the interpreter file's image (tp_py_proc) */
	__u64 ring_max;			      /* bytes the ring may hold before a record */
	struct tp_py_code_fields *scratch;    /* py_code_fields' */
	__u32 pid, nr;
	__u32 sent;   /* records sent */
	__u32 failed; /* a code object was neither sent whole nor known: user space reads it */
};

/* The word at off in fields f (0 where off is past them). */
static __always_inline __u64 tp_py_code_word(const struct tp_py_code_fields *f, __u32 off)
{
	barrier_var(off);
	if (off > TP_PY_CODE_FIELDS - 8)
		return 0;
	return *(const __u64 *)&f->b[off];
}

/* Copies the first cap bytes (a power of two, at most a page) of the object at addr into dst, or
 * where they cross into a page that cannot be read, the bytes up to the end of addr's page.
 * Returns the bytes copied (0: none). Every byte of a page can be read if one can. */
static __always_inline __u32 tp_py_code_copy(__u8 *dst, __u64 addr, const __u32 cap)
{
	__u64 len;

	if (!addr)
		return 0;
	if (!bpf_probe_read_user(dst, cap, (const void *)addr))
		return cap;
	len = TP_UNWIND_PAGE - (addr & (TP_UNWIND_PAGE - 1));
	/* opaque to clang: the checks below are the verifier's bounds on the read's length */
	barrier_var(len);
	if (len >= cap || !len) /* all in one page: that read failed */
		return 0;
	/* no change, but a bound on the register passed (clang folds the checks above into one
	 * on a copy, which 6.1's verifier does not carry over) */
	barrier_var(len);
	len &= cap - 1;
	if (bpf_probe_read_user(dst, len, (const void *)addr))
		return 0;
	return len;
}

/* Whether the len bytes at b, the start of a bytes object, hold all of it. */
static __always_inline bool tp_py_bytes_whole(const __u8 *b, __u32 len,
					      const struct tp_py_offsets *o)
{
	__u32 off = o->bytes_size & 255; /* a bound for the verifier (it is some 16) */
	__u64 size;

	if (off + 8 > len)
		return false;
	size = *(const __u64 *)&b[off];
	return size <= TP_PY_CODE_LINES && o->bytes_data + size <= len;
}

/* A code object's signature: what user space compares to tell whether an address holds the code
 * object it read there (never 0). */
static __always_inline __u64 tp_py_code_sig(__u64 qualname, __u64 filename, __u64 linetable,
					    __u32 firstlineno)
{
	__u64 h = tp_py_stack_step(TP_PY_STACK_SEED, qualname);

	h = tp_py_stack_step(h, filename);
	h = tp_py_stack_step(h, linetable);
	h = tp_py_stack_step(h, firstlineno);
	return h > 1 ? h : 2;
}

/* Sends the index-th frame's code object unless it is no object (a frame being set up: user
 * space drops it) or was sent unchanged in this epoch. Returns 1 to stop. */
static long tp_py_send_step(__u32 index, void *ctx)
{
	struct tp_py_send_state *ss = ctx;
	const struct tp_py_offsets *o = ss->o;
	struct tp_py_code_fields *f = ss->scratch;
	struct tp_py_code_key k = {};
	struct tp_py_code_sent v = {.sig = 1, .epoch = ss->epoch}, *old;
	__u64 code, qualname, filename, linetable;
	__u32 lo, len, line_off, firstlineno = 0;
	struct tp_py_code *rec;
	bool in_image, whole;

	if (index >= ss->nr || index >= TP_PY_MAX_FRAMES)
		return 1;
	if (!f) {
		ss->failed = 1;
		return 1;
	}
	barrier_var(index);
	index &= TP_PY_MAX_FRAMES - 1;
	code = ss->frames[2 * index];
	if (code < 4096 || (code & 7))
		return 0;
	in_image = code - ss->image_lo < ss->image_len;
	if (in_image) {
		/* built into the file and never freed: one sent is known for good */
		k.start_ns = ss->image_key;
		k.addr = code - ss->image_lo;
		old = bpf_map_lookup_elem(&py_code_sent, &k);
		if (old && old->epoch == ss->epoch)
			return 0;
	} else {
		k.pid = ss->pid;
		k.start_ns = ss->start_ns;
		k.addr = code;
	}
	lo = o->code_fields_lo;
	/* the mask is the verifier's bound (tailprofd keeps the length below it) */
	len = o->code_fields_len & (TP_PY_CODE_FIELDS - 1);
	barrier_var(len);
	if (len < 8 || bpf_probe_read_user(f->b, len, (const void *)(code + lo))) {
		ss->failed = 1;
		return 0;
	}
	qualname = tp_py_code_word(f, o->code_qualname - lo);
	filename = tp_py_code_word(f, o->code_filename - lo);
	linetable = tp_py_code_word(f, o->code_linetable - lo);
	line_off = o->code_firstlineno - lo;
	barrier_var(line_off);
	if (line_off <= TP_PY_CODE_FIELDS - 4)
		firstlineno = *(const __u32 *)&f->b[line_off];
	if (!in_image) {
		v.sig = tp_py_code_sig(qualname, filename, linetable, firstlineno);
		old = bpf_map_lookup_elem(&py_code_sent, &k);
		if (old && old->sig == v.sig && old->epoch == ss->epoch)
			return 0;
	}
	/* bounded per sample, and never into the room samples need */
	if (ss->sent >= TP_PY_CODE_PER_SAMPLE ||
	    bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) > ss->ring_max) {
		ss->failed = 1;
		return 1;
	}
	rec = bpf_ringbuf_reserve(&events, sizeof(*rec), 0);
	if (!rec) {
		ss->failed = 1;
		return 1;
	}
	ss->sent++;
	rec->hdr.kind = TP_EV_PY_CODE;
	rec->hdr.pid = ss->pid;
	rec->hdr.ts_ns = ss->ts_ns;
	rec->hdr.start_ns = ss->start_ns;
	rec->addr = code;
	rec->fields_len = len;
	bpf_probe_read_kernel(rec->fields, TP_PY_CODE_FIELDS, f->b);
	rec->len[TP_PY_CODE_QUALNAME] =
	    tp_py_code_copy(rec->str[TP_PY_CODE_QUALNAME], qualname, TP_PY_CODE_BYTES);
	rec->len[TP_PY_CODE_FILENAME] =
	    tp_py_code_copy(rec->str[TP_PY_CODE_FILENAME], filename, TP_PY_CODE_BYTES);
	rec->len[TP_PY_CODE_LINETABLE] = tp_py_code_copy(rec->lines, linetable, TP_PY_CODE_LINES);
	/* whole: the names' copies run their full length (a name is some tens of bytes: one cut
	 * at a page end is not trusted, one longer than the copy is read on by user space), and the
	 * line table's holds all of it; else user space reads what is missing, while the process
	 * lives */
	whole = rec->len[TP_PY_CODE_QUALNAME] == TP_PY_CODE_BYTES &&
		rec->len[TP_PY_CODE_FILENAME] == TP_PY_CODE_BYTES &&
		(!linetable || tp_py_bytes_whole(rec->lines, rec->len[TP_PY_CODE_LINETABLE], o));
	if (whole)
		bpf_map_update_elem(&py_code_sent, &k, &v, BPF_ANY);
	else
		ss->failed = 1;
	bpf_ringbuf_submit(rec, BPF_RB_NO_WAKEUP);
	return 0;
}

/* Sends the code objects of a new Python stack of process pid (started at start_ns), the nr
 * struct tp_py_frame pairs at frames, that tp_py_walk() left in ns: each one user space has not
 * had unchanged goes as a TP_EV_PY_CODE record before the sample. Where all of them are sent
 * whole or known, the stack goes into py_seen (an image stack too: its key is the file's) and
 * *flags gets TP_SAMPLE_PY_NEW | TP_SAMPLE_PY_SENT (the sample need not wake user space); else
 * the stack is new as without this (tp_py_stack_new). Records stop where the ring buffer would
 * be more than half full (tailprofd, woken at a quarter, is late: samples come first). ts_ns: the
 * sample's time. Needs bpf_loop (Linux 5.17). */
static __always_inline void tp_py_send_codes(__u32 pid, __u64 start_ns, __u64 ts_ns,
					     const __u64 *frames, __u32 nr,
					     const struct tp_py_new_stack *ns, __u32 *flags)
{
	struct tp_py_send_state ss = {
	    .frames = frames, .pid = pid, .nr = nr, .start_ns = start_ns, .ts_ns = ts_ns};
	struct tp_py_proc *py = bpf_map_lookup_elem(&py_procs, &pid);
	__u64 key = ns->key;
	__u32 v, zero = 0;
	__u8 one = 1;

	if (!py || py->start_ns != start_ns)
		return;
	v = py->version;
	ss.o = bpf_map_lookup_elem(&py_offsets, &v);
	if (!ss.o) {
		tp_py_stack_new(py, key, ns->outside, flags);
		return;
	}
	ss.ring_max = bpf_ringbuf_query(&events, BPF_RB_RING_SIZE) / 2 - sizeof(struct tp_py_code);
	ss.epoch = *(volatile __u64 *)&py_code_epoch;
	if (py->image_hi > py->image_lo) {
		ss.image_lo = py->image_lo;
		ss.image_len = py->image_hi - py->image_lo;
		ss.image_key = py->image_key;
	}
	ss.scratch = bpf_map_lookup_elem(&py_code_fields, &zero);
	bpf_loop(TP_PY_MAX_FRAMES, tp_py_send_step, &ss, 0);
	if (ss.failed) {
		tp_py_stack_new(py, key, ns->outside, flags);
		return;
	}
	bpf_map_update_elem(&py_seen, &key, &one, BPF_ANY);
	*flags |= TP_SAMPLE_PY_NEW | TP_SAMPLE_PY_SENT;
}

#endif
