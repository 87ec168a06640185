// SPDX-License-Identifier: GPL-2.0-only
/* Snapshots of comparison sides: the spike store in STATE_DIR/snapshots, without eviction, with
 * a metadata object as each entry's JSON and the gzip'd side as its one blob. */
#include "snapshots.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "cmp_side_json.h"
#include "gzip.h"
#include "log.h"
#include "marks.h"
#include "spike_file.h"
#include "spike_store.h"
#include "textbuf.h"
#include "timeparse.h"
#include "window.h" /* task__sanitize_name */

#define RM_HINT "remove it with tailprof snapshot rm"

struct snapshots {
	struct spike_store *store;
	char *path; /* DIR/snapshots, for messages */
	uint32_t max_count;
	uint64_t max_bytes;
	pthread_mutex_t mu; /* the bucket and the counts below */
	struct marks_bucket bucket;
	uint64_t refused_full, refused_rate;
};

int snapshots_opts__set(struct snapshots_opts *o, const char *key, const char *value, char *msg,
			size_t msglen)
{
	uint64_t v;

	if (!strcmp(key, "max_count")) {
		if (tp_parse_uint(value, 1, SNAPSHOTS_MAX_COUNT, &v)) {
			snprintf(msg, msglen, "'%s': give an integer from 1 to %d, e.g. 32", value,
				 SNAPSHOTS_MAX_COUNT);
			return -EINVAL;
		}
		o->max_count = v;
		return 0;
	}
	if (!strcmp(key, "max_bytes")) {
		if (tp_parse_size(value, SNAPSHOTS_MIN_BYTES, SNAPSHOTS_MAX_BYTES, &v)) {
			snprintf(msg, msglen,
				 "'%s': give a size from 1M to 1024G, in bytes or with a K, M or G "
				 "suffix, e.g. 256M or 2G",
				 value);
			return -EINVAL;
		}
		o->max_bytes = v;
		return 0;
	}
	if (!strcmp(key, "save_rate")) {
		if (tp_parse_uint(value, 1, SNAPSHOTS_MAX_SAVE_RATE, &v)) {
			snprintf(msg, msglen,
				 "'%s': give saves a minute, an integer from 1 to %d, e.g. 60",
				 value, SNAPSHOTS_MAX_SAVE_RATE);
			return -EINVAL;
		}
		o->save_rate = v;
		return 0;
	}
	snprintf(msg, msglen, "unknown key '%s'; allowed: max_count, max_bytes, save_rate", key);
	return -ENOENT;
}

struct snapshots *snapshots__open(const char *dir, const struct snapshots_opts *o, char *err,
				  size_t errlen)
{
	struct snapshots_opts d = o ? *o : (struct snapshots_opts){0};
	struct snapshots *s;

	if (!d.max_count)
		d.max_count = SNAPSHOTS_DEFAULT_MAX_COUNT;
	if (!d.max_bytes)
		d.max_bytes = SNAPSHOTS_DEFAULT_MAX_BYTES;
	s = calloc(1, sizeof(*s));
	if (!s)
		abort(); /* fixed size (STYLE.md) */
	s->max_count = d.max_count;
	s->max_bytes = d.max_bytes;
	pthread_mutex_init(&s->mu, NULL);
	marks__bucket_init(&s->bucket, d.save_rate ? d.save_rate : SNAPSHOTS_DEFAULT_SAVE_RATE,
			   SNAPSHOTS_SAVE_BURST);
	s->store =
	    spike_store__open(&(struct spike_store_opts){.dir = dir,
							 .subdir = "snapshots",
							 .suffix = ".snap",
							 .what = "snapshot",
							 .max_bytes = d.max_bytes,
							 .max_spikes = d.max_count,
							 .no_evict = true,
							 .remove_cmd = "tailprof snapshot rm"},
			      err, errlen);
	if (!s->store) {
		int e = errno;

		pthread_mutex_destroy(&s->mu);
		free(s);
		errno = e;
		return NULL;
	}
	if (asprintf(&s->path, "%s/snapshots", dir) < 0)
		abort();
	return s;
}

void snapshots__free(struct snapshots *s)
{
	if (!s)
		return;
	spike_store__free(s->store);
	pthread_mutex_destroy(&s->mu);
	free(s->path);
	free(s);
}

uint32_t snapshots__take_save(struct snapshots *s, uint64_t now_ns)
{
	uint32_t wait;

	pthread_mutex_lock(&s->mu);
	wait = marks__bucket_take(&s->bucket, now_ns);
	s->refused_rate += wait != 0;
	pthread_mutex_unlock(&s->mu);
	return wait;
}

void snapshots__counts(struct snapshots *s, struct snapshots_counts *c)
{
	struct spike_store_stats st;

	spike_store__stats(s->store, &st);
	pthread_mutex_lock(&s->mu);
	*c = (struct snapshots_counts){.count = st.spikes,
				       .max_count = s->max_count,
				       .bytes = st.bytes,
				       .max_bytes = s->max_bytes,
				       .refused_full = s->refused_full,
				       .refused_rate = s->refused_rate};
	pthread_mutex_unlock(&s->mu);
}

static bool valid_name(const char *name)
{
	return spike_file__valid_name(name, SPIKE_STORE_ID_MAX);
}

/* The message for a bad name: the name is echoed cut to 80 bytes, any byte that is not printable
 * UTF-8 as '?', so that the message can go into JSON and logs. */
static void name_error(const char *name, char *buf, size_t len)
{
	char echo[81];

	snprintf(echo, sizeof(echo), "%s", name ? name : "");
	task__sanitize_name(echo);
	snprintf(buf, len,
		 "'%s' is not a snapshot name: give 1 to %d letters, digits, '.', '_' or '-'", echo,
		 SPIKE_STORE_ID_MAX);
}

static int64_t now_unix_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * (int64_t)NSEC_PER_SEC + ts.tv_nsec;
}

/* The entry's JSON: what a listing shows of it. NULL when out of memory. */
static char *metadata_json(const struct cmp_side *side)
{
	const struct cmp_conditions *c = &side->cond;
	char host[sizeof(c->host)], kernel[sizeof(c->kernel)], version[sizeof(c->version)];
	char saved[32], *text;
	json_t *o;

	/* json_pack takes UTF-8 only; these came from uname and the build */
	memcpy(host, c->host, sizeof(host));
	memcpy(kernel, c->kernel, sizeof(kernel));
	memcpy(version, c->version, sizeof(version));
	task__sanitize_name(host);
	task__sanitize_name(kernel);
	task__sanitize_name(version);
	o = json_pack(
	    "{s:s, s:s, s:I, s:I, s:I, s:I, s:s, s:s, s:s, s:I, s:I}", "name", c->snapshot, "saved",
	    tp_format_rfc3339(c->saved_unix_ns, saved, sizeof(saved)), "saved_unix_ns",
	    (json_int_t)c->saved_unix_ns, "from_unix_ns", (json_int_t)c->from_unix_ns, "to_unix_ns",
	    (json_int_t)c->to_unix_ns, "windows", (json_int_t)side->nr_windows, "host", host,
	    "kernel", kernel, "version", version, "frequency_hz", (json_int_t)c->frequency_hz,
	    "window_ns", (json_int_t)(c->window_ns <= INT64_MAX ? c->window_ns : INT64_MAX));
	text = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	return text;
}

int snapshots__save(struct snapshots *s, const char *name, const struct cmp_side *side)
{
	struct cmp_side copy = *side; /* shallow: only its conditions change */
	char why[256], *json = NULL, *meta = NULL;
	size_t gz_len = 0, json_len;
	uint8_t *gz = NULL;
	int err;

	if (!valid_name(name))
		return -EINVAL;
	snprintf(copy.cond.snapshot, sizeof(copy.cond.snapshot), "%s", name);
	copy.cond.saved_unix_ns = now_unix_ns();
	err = cmp_side__to_json(&copy, &json, why, sizeof(why));
	if (err == -EINVAL || err == -ERANGE) {
		/* a builder's bug: nothing a caller can change */
		pr_warn("snapshot %s not saved: its side cannot be written: %s", name, why);
		err = -EINVAL;
	}
	if (err)
		goto out;
	json_len = strlen(json);
	if (json_len > SNAPSHOTS_MAX_JSON_BYTES) {
		err = -E2BIG;
		goto out;
	}
	err = gzip__compress((const uint8_t *)json, json_len, Z_DEFAULT_COMPRESSION, &gz, &gz_len);
	if (err == -EIO)
		pr_warn("snapshot %s not saved: zlib refused to compress it", name);
	if (err)
		goto out;
	if (gz_len > SPIKE_STORE_MAX_BLOB_BYTES) {
		err = -E2BIG;
		goto out;
	}
	meta = metadata_json(&copy);
	err = meta ? spike_store__save(
			 s->store, name, copy.cond.saved_unix_ns, meta,
			 &(struct spike_blob){.name = SNAPSHOTS_BLOB, .data = gz, .len = gz_len}, 1)
		   : -ENOMEM;
out:
	if (err == -EMLINK || err == -EFBIG) {
		pthread_mutex_lock(&s->mu);
		s->refused_full++;
		pthread_mutex_unlock(&s->mu);
	}
	free(json);
	free(gz);
	free(meta);
	return err;
}

/* The message for snapshot name found corrupt: its file and what is wrong with it, as the store
 * reported it (a directory or a link put in its place: by hand, as the store never deletes
 * those). Returns -EBADMSG. */
static int corrupt(struct snapshots *s, const char *name, char *err, size_t errlen)
{
	char why[128];

	if (spike_store__entry(s->store, name, NULL) == -ELOOP) {
		snprintf(err, errlen,
			 "snapshot %s is corrupt: %s/%s.snap is a symlink or not a regular file, "
			 "never followed; delete it by hand",
			 name, s->path, name);
		return -EBADMSG;
	}
	spike_store__why(s->store, name, why, sizeof(why));
	snprintf(err, errlen, "snapshot %s is corrupt: %s/%s.snap: %s; " RM_HINT " %s", name,
		 s->path, name, why[0] ? why : "cut short or damaged (the daemon's log says how)",
		 name);
	return -EBADMSG;
}

/* Reads and checks the side of snapshot name; on failure err says what, naming it and the fix. */
static int load_side(struct snapshots *s, const char *name, struct cmp_side **out, char *err,
		     size_t errlen)
{
	char why[256] = "";
	uint8_t *gz = NULL, *json = NULL;
	size_t gz_len, json_len;
	int ret;

	ret = spike_store__read_blob(s->store, name, SNAPSHOTS_BLOB, &gz, &gz_len);
	if (ret == -ENOENT && !spike_store__entry(s->store, name, NULL)) {
		snprintf(err, errlen, "snapshot %s has no %s; " RM_HINT " %s", name, SNAPSHOTS_BLOB,
			 name);
		return -EBADMSG;
	}
	if (ret == -ENOENT) {
		snprintf(err, errlen, "no snapshot %s (gone meanwhile)", name);
		return ret;
	}
	if (ret == -EBADMSG)
		return corrupt(s, name, err, errlen);
	if (ret == -ENOMEM)
		goto nomem;
	if (ret) {
		snprintf(err, errlen, "cannot read snapshot %s from %s: %s", name, s->path,
			 strerror(-ret));
		return ret;
	}
	ret =
	    gzip__inflate(gz, gz_len, SNAPSHOTS_MAX_JSON_BYTES, &json, &json_len, why, sizeof(why));
	free(gz);
	if (ret == -ENOMEM)
		goto nomem;
	if (!ret)
		ret = cmp_side__from_json((const char *)json, json_len, out, why, sizeof(why));
	free(json);
	if (ret == -ENOMEM)
		goto nomem;
	if (ret == -EPROTONOSUPPORT) {
		snprintf(err, errlen,
			 "snapshot %s was saved by a newer tailprofd (%s); read it with that "
			 "version, or " RM_HINT " %s",
			 name, why, name);
		return ret;
	}
	if (ret) {
		snprintf(err, errlen, "snapshot %s is corrupt (%s); " RM_HINT " %s", name, why,
			 name);
		return -EBADMSG;
	}
	return 0;
nomem:
	snprintf(err, errlen, "out of memory reading snapshot %s", name);
	return -ENOMEM;
}

int snapshots__load(struct snapshots *s, const char *name, struct cmp_side **out, char *err,
		    size_t errlen)
{
	int ret;

	*out = NULL;
	if (!valid_name(name)) {
		name_error(name, err, errlen);
		return -EINVAL;
	}
	ret = spike_store__entry(s->store, name, NULL);
	if (ret == -ENOENT) {
		snprintf(err, errlen, "no snapshot %s; tailprof snapshot list shows the saved ones",
			 name);
		return ret;
	}
	if (ret == -EBADMSG || ret == -ELOOP)
		return corrupt(s, name, err, errlen);
	if (ret == -EPROTONOSUPPORT) {
		snprintf(err, errlen,
			 "snapshot %s was written by a newer tailprofd (its file format); read it "
			 "with that version, or delete %s/%s.snap by hand",
			 name, s->path, name);
		return ret;
	}
	ret = load_side(s, name, out, err, errlen);
	if (ret)
		return ret;
	snprintf((*out)->cond.snapshot, sizeof((*out)->cond.snapshot), "%s", name);
	return 0;
}

struct list_ctx {
	struct snapshots *s;
	json_t *snapshots;
};

static int list_one(void *arg, const char *id, int64_t start_unix_ns, const char *json)
{
	struct list_ctx *l = arg;
	uint64_t bytes = 0;
	json_t *o;

	(void)start_unix_ns;
	o = json_loads(json, 0, NULL);
	if (!json_is_object(o)) {
		/* its checksums held: a newer writer's metadata, or memory ran out */
		pr_debug("snapshot %s: metadata not an object; not listed", id);
		json_decref(o);
		return 0;
	}
	spike_store__entry(l->s->store, id, &bytes);
	if (json_object_set_new(o, "name", json_string(id)) ||
	    json_object_set_new(o, "bytes", json_integer((json_int_t)bytes)) ||
	    json_array_append_new(l->snapshots, o))
		return -ENOMEM;
	return 0;
}

json_t *snapshots__list(struct snapshots *s)
{
	struct list_ctx l = {.s = s, .snapshots = json_array()};
	struct spike_store_stats st;

	if (!l.snapshots || spike_store__each(s->store, list_one, &l)) {
		json_decref(l.snapshots);
		return NULL;
	}
	spike_store__stats(s->store, &st);
	return json_pack("{s:o, s:I, s:I, s:I}", "snapshots", l.snapshots, "max_count",
			 (json_int_t)s->max_count, "max_bytes", (json_int_t)s->max_bytes, "bytes",
			 (json_int_t)st.bytes);
}

int snapshots__remove(struct snapshots *s, const char *name)
{
	return spike_store__remove(s->store, name);
}

/* What to check when the disk refused a write or an unlink of DIR: err's likely causes. */
static const char *disk_hint(int err)
{
	switch (err) {
	case -ENOSPC:
	case -EDQUOT:
		return "free some space on its filesystem";
	case -EROFS:
		return "its filesystem is mounted read-only";
	case -EPERM:
	case -EACCES:
		return "check that tailprofd may write there (permissions, chattr +i, an LSM)";
	default:
		return "the daemon's log says more";
	}
}

void snapshots__describe_op(struct snapshots *s, enum snapshots_op op, const char *name, int err,
			    char *buf, size_t len)
{
	struct spike_store_stats st;

	spike_store__stats(s->store, &st);
	if (!valid_name(name)) {
		name_error(name, buf, len);
		return;
	}
	switch (err) {
	case 0:
		snprintf(buf, len, "snapshot %s: done", name);
		break;
	case -EMLINK:
		snprintf(buf, len,
			 "snapshot %s not saved: %" PRIu32
			 " snapshots are the most [snapshots] max_count (--snapshot-max-count) "
			 "allows; %" PRIu32
			 " are stored; remove one (tailprof snapshot rm NAME) or "
			 "raise it",
			 name, s->max_count, st.spikes);
		break;
	case -EFBIG:
		snprintf(buf, len,
			 "snapshot %s not saved: it would take the snapshots past [snapshots] "
			 "max_bytes (--snapshot-max-bytes), %" PRIu64 " bytes, with %" PRIu64
			 " stored (corrupt files too); remove some (tailprof snapshot rm NAME) or "
			 "raise it",
			 name, s->max_bytes, st.bytes);
		break;
	case -E2BIG:
		snprintf(buf, len,
			 "snapshot %s not saved: its data is larger than a snapshot may be (%u MiB "
			 "of JSON, %u MiB compressed); save a shorter range",
			 name, SNAPSHOTS_MAX_JSON_BYTES >> 20, SPIKE_STORE_MAX_BLOB_BYTES >> 20);
		break;
	case -EEXIST: /* a save onto a file the store keeps */
		if (spike_store__entry(s->store, name, NULL) == -EPROTONOSUPPORT)
			snprintf(buf, len,
				 "snapshot %s not saved: %s/%s.snap was written by a newer "
				 "tailprofd and is kept; choose another name",
				 name, s->path, name);
		else
			snprintf(buf, len,
				 "snapshot %s not saved: %s/%s.snap is not a snapshot file "
				 "tailprofd wrote (a symlink, or no snapshot magic) and is kept; "
				 "remove it (tailprof snapshot rm %s; a symlink by hand) or choose "
				 "another name",
				 name, s->path, name, name);
		break;
	case -EPROTONOSUPPORT: /* a removal */
		snprintf(buf, len,
			 "snapshot %s not removed: %s/%s.snap was written by a newer tailprofd and "
			 "is kept; delete it by hand if it is not needed",
			 name, s->path, name);
		break;
	case -ELOOP: /* a removal */
		snprintf(buf, len,
			 "snapshot %s not removed: %s/%s.snap is a symlink or not a regular file, "
			 "which tailprofd never deletes; delete it by hand",
			 name, s->path, name);
		break;
	case -EINVAL:
		snprintf(buf, len,
			 "snapshot %s not saved: its data is not consistent (a bug; the daemon's "
			 "log says more)",
			 name);
		break;
	case -ENOENT:
		snprintf(buf, len, "no snapshot %s; tailprof snapshot list shows the saved ones",
			 name);
		break;
	case -ENOMEM:
		snprintf(buf, len, "snapshot %s: out of memory", name);
		break;
	default:
		if (op == SNAPSHOTS_SAVE)
			snprintf(buf, len, "cannot write snapshot %s in %s: %s; %s", name, s->path,
				 strerror(-err), disk_hint(err));
		else if (op == SNAPSHOTS_REMOVE)
			snprintf(buf, len, "cannot remove snapshot %s, %s/%s.snap: %s; %s", name,
				 s->path, name, strerror(-err), disk_hint(err));
		else
			snprintf(buf, len, "snapshot %s in %s: %s; %s", name, s->path,
				 strerror(-err), disk_hint(err));
		break;
	}
}

char *snapshots__metrics_text(struct snapshots *s)
{
	struct spike_store_stats st;
	struct text t = {0};

	spike_store__stats(s->store, &st);
	text_metric(
	    &t, "tailprof_snapshot_store_files_total", "counter",
	    "Snapshot files: written, saves failed (refused by a bound or by the disk), temp "
	    "files of interrupted writes removed at start-up.");
	text_put(&t, "tailprof_snapshot_store_files_total{event=\"saved\"} %" PRIu64 "\n",
		 st.saved);
	text_put(&t, "tailprof_snapshot_store_files_total{event=\"failed\"} %" PRIu64 "\n",
		 st.save_failed);
	text_put(&t, "tailprof_snapshot_store_files_total{event=\"temp_removed\"} %" PRIu64 "\n",
		 st.temp_removed);
	text_metric(&t, "tailprof_snapshot_store_write_failing", "gauge",
		    "1 while the state directory refuses the snapshots' writes (the last one "
		    "failed: full, read-only), else 0.");
	text_put(&t, "tailprof_snapshot_store_write_failing %d\n", st.last_write_err != 0);
	return text_finish(&t);
}
