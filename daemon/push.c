// SPDX-License-Identifier: GPL-2.0-only
/* Push to a central profile store (push.h, docs/push.md). One thread: it polls the ring for
 * windows that closed since the last one it took, encodes each one's CPU and off-CPU profiles
 * under the read lock (one profile per lock, as the spike saver does), queues them, and sends the
 * queue's head with libcurl, waiting with exponential back-off after a failure. The queue is this
 * thread's alone; the counters are under mu for /metrics. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "collector.h"
#include "gzip.h"
#include "log.h"
#include "profile.pb-c.h"
#include "push.h"
#include "query.h"
#include "spikes.h"
#include "sysinfo.h"
#include "tailprof_config.h"
#include "textbuf.h"
#include "timeparse.h"
#include "window.h"

#define POLL_NS		   (200 * 1000 * 1000ULL) /* how often closed windows are looked for */
#define BACKOFF_FIRST_NS   (1 * NSEC_PER_SEC)
#define BACKOFF_MAX_NS	   (30 * NSEC_PER_SEC)
#define FLUSH_NS	   (2 * NSEC_PER_SEC) /* at stop */
#define REQUEST_TIMEOUT_MS 30000L
#define CONNECT_TIMEOUT_MS 5000L
#define MAX_PROFILE_BYTES  (512u << 20) /* an inflated profile, when labels are filtered */
#define MAX_SPOOL_BYTES	   (256u << 20) /* one file of the state directory read back */
#define SPOOL_MAGIC	   "tailprof-push 1\n"

enum push_drop {
	PUSH_DROP_QUEUE_FULL,
	PUSH_DROP_REJECTED,
	PUSH_DROP_SHUTDOWN,
	PUSH_DROP_ENCODE,
	PUSH_DROP_NR
};
static const char *const drop_names[PUSH_DROP_NR] = {"queue_full", "rejected", "shutdown",
						     "encode"};

/* One request: a profile and its series. */
struct item {
	char *name; /* APP.TYPE{host=...,...}, not escaped */
	int64_t from, until;
	uint8_t *body;
	size_t len;
};

struct push {
	const struct query_ctx *ctx;
	char *url; /* without a trailing '/' */
	char *app;
	char *series_labels; /* "host=H[,k=v...]" */
	char *auth;	     /* "Authorization: Bearer ..." or NULL */
	char *spool_dir;     /* state_dir/push, or NULL */
	char *names[PUSH_MAX_NAMES];
	size_t nr_names;
	bool keep; /* names: the sample labels kept (else: those dropped) */
	CURL *curl;
	pthread_t thread;
	/* the queue, the push thread's alone: a ring of cap items */
	struct item *q;
	size_t cap, head, n;
	uint64_t next_try_ns, backoff_ns;
	bool have_last;
	uint64_t last_start_ns; /* the newest window taken */
	/* under mu */
	pthread_mutex_t mu;
	pthread_cond_t cond;
	bool stopping;
	/* set once at stop (atomic): a request still going then ends by this time */
	uint64_t stop_deadline_ns;
	uint64_t sent, retries, dropped[PUSH_DROP_NR], queued;
	int64_t last_success_unix;
};

/* A label name or value of the series name: [A-Za-z0-9_.:/-], 1-128 characters. */
static bool series_word(const char *s, size_t len, bool name)
{
	if (!len || len > 128)
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (isalnum(c) || c == '_')
			continue;
		if (!name && (c == '.' || c == ':' || c == '/' || c == '-'))
			continue;
		return false;
	}
	return !name || !isdigit((unsigned char)s[0]);
}

/* "k=v,k=v": each name a label name, each value a series word; not host or spike. */
static int check_labels(const char *v, char *msg, size_t len)
{
	const char *p = v;

	while (*p) {
		const char *comma = strchr(p, ','), *end = comma ? comma : p + strlen(p);
		const char *eq = memchr(p, '=', (size_t)(end - p));

		if (!eq || !series_word(p, (size_t)(eq - p), true) ||
		    !series_word(eq + 1, (size_t)(end - eq - 1), false)) {
			snprintf(
			    msg, len,
			    "'%s' is not NAME=VALUE[,NAME=VALUE...] (names [A-Za-z_][A-Za-z0-9_]*, "
			    "values [A-Za-z0-9_.:/-]+)",
			    v);
			return -EINVAL;
		}
		if ((eq - p == 4 && !strncmp(p, "host", 4)) ||
		    (eq - p == 5 && !strncmp(p, "spike", 5))) {
			snprintf(msg, len, "'%.*s' is set by tailprofd; use another name",
				 (int)(eq - p), p);
			return -EINVAL;
		}
		p = comma ? comma + 1 : end;
		if (comma && !*p) {
			snprintf(msg, len, "'%s' ends with a comma", v);
			return -EINVAL;
		}
	}
	return 0;
}

/* "a,b,c" of sample label names into names[] (copies). Returns how many, or -EINVAL. */
static int split_names(const char *v, char **names, size_t max, char *msg, size_t len)
{
	const char *p = v;
	size_t n = 0;

	do {
		const char *comma = strchr(p, ','), *end = comma ? comma : p + strlen(p);

		if (end == p || n == max || !series_word(p, (size_t)(end - p), true)) {
			for (size_t i = 0; i < n; i++)
				free(names[i]);
			snprintf(
			    msg, len,
			    "'%s' is not a list of at most %zu label names separated by commas "
			    "(e.g. pid,tid)",
			    v, max);
			return -EINVAL;
		}
		if (names)
			names[n] = strndup(p, (size_t)(end - p));
		n++;
		p = comma ? comma + 1 : end;
	} while (*p || p[-1] == ',');
	return (int)n;
}

int push_opts__set(struct push_opts *o, const char *key, const char *value, char *msg, size_t len)
{
	char *names[PUSH_MAX_NAMES];
	char **field = NULL;
	uint64_t n;
	int rc;

	if (!strcmp(key, "url")) {
		if (strncmp(value, "http://", 7) && strncmp(value, "https://", 8)) {
			snprintf(msg, len, "'%s' is not an http:// or https:// URL", value);
			return -EINVAL;
		}
		field = &o->url;
	} else if (!strcmp(key, "app")) {
		if (!series_word(value, strlen(value), false)) {
			snprintf(msg, len, "'%s' is not 1-128 of [A-Za-z0-9_.:/-]", value);
			return -EINVAL;
		}
		field = &o->app;
	} else if (!strcmp(key, "token_file")) {
		if (value[0] != '/') {
			snprintf(msg, len, "'%s' is not an absolute path", value);
			return -EINVAL;
		}
		field = &o->token_file;
	} else if (!strcmp(key, "queue_windows")) {
		if (tp_parse_uint(value, 1, 100000, &n)) {
			snprintf(msg, len, "'%s' is not an integer 1-100000", value);
			return -EINVAL;
		}
		o->queue_windows = (uint32_t)n;
		return 0;
	} else if (!strcmp(key, "labels")) {
		if (check_labels(value, msg, len))
			return -EINVAL;
		field = &o->labels;
	} else if (!strcmp(key, "keep_labels") || !strcmp(key, "drop_labels")) {
		rc = split_names(value, names, PUSH_MAX_NAMES, msg, len);
		if (rc < 0)
			return rc;
		for (int i = 0; i < rc; i++)
			free(names[i]);
		field = key[0] == 'k' ? &o->keep_labels : &o->drop_labels;
	} else {
		snprintf(
		    msg, len,
		    "is not a [push] key; allowed: url, app, token_file, queue_windows, labels, "
		    "keep_labels, drop_labels");
		return -EINVAL;
	}
	free(*field);
	*field = strdup(value);
	return *field ? 0 : -ENOMEM;
}

int push_opts__check(const struct push_opts *o, char *msg, size_t len)
{
	if (o->keep_labels && o->drop_labels) {
		snprintf(msg, len,
			 "[push] keep_labels and drop_labels exclude each other; give one");
		return -EINVAL;
	}
	if (!o->url && (o->app || o->token_file || o->labels || o->keep_labels || o->drop_labels ||
			o->queue_windows)) {
		snprintf(msg, len, "[push] keys without a url (--push-url or [push] url)");
		return -EINVAL;
	}
	return 0;
}

void push_opts__free(struct push_opts *o)
{
	free(o->url);
	free(o->app);
	free(o->token_file);
	free(o->labels);
	free(o->keep_labels);
	free(o->drop_labels);
	*o = (struct push_opts){0};
}

static void item_free(struct item *it)
{
	free(it->name);
	free(it->body);
	*it = (struct item){0};
}

/* Adds n to counter (NULL: none) and publishes the queue's length. */
static void count(struct push *p, uint64_t *counter, uint64_t n)
{
	pthread_mutex_lock(&p->mu);
	if (counter)
		*counter += n;
	p->queued = p->n;
	pthread_mutex_unlock(&p->mu);
}

/* Appends it (taken over); a full queue drops its oldest item. */
static void enqueue(struct push *p, struct item *it)
{
	if (p->n == p->cap) {
		item_free(&p->q[p->head]);
		p->head = (p->head + 1) % p->cap;
		p->n--;
		count(p, &p->dropped[PUSH_DROP_QUEUE_FULL], 1);
	}
	p->q[(p->head + p->n) % p->cap] = *it;
	p->n++;
	*it = (struct item){0};
	count(p, NULL, 0);
}

static void dequeue(struct push *p)
{
	item_free(&p->q[p->head]);
	p->head = (p->head + 1) % p->cap;
	p->n--;
}

/* Whether the sample label named name leaves the host. */
static bool label_kept(const struct push *p, const char *name)
{
	for (size_t i = 0; i < p->nr_names; i++)
		if (!strcmp(p->names[i], name))
			return p->keep;
	return !p->keep;
}

/* The profile gz[0..len) with the labels keep_labels/drop_labels remove: *out (malloc'd).
 * Returns 0 or -errno. */
static int filter_labels(const struct push *p, const uint8_t *gz, size_t len, uint8_t **out,
			 size_t *out_len)
{
	Perftools__Profiles__Profile *prof;
	uint8_t *raw = NULL, *packed = NULL;
	size_t raw_len = 0, packed_len;
	char why[64];
	int rc;

	rc = gzip__inflate(gz, len, MAX_PROFILE_BYTES, &raw, &raw_len, why, sizeof(why));
	if (rc)
		return rc;
	prof = perftools__profiles__profile__unpack(NULL, raw_len, raw);
	free(raw);
	if (!prof)
		return -EBADMSG;
	for (size_t i = 0; i < prof->n_sample; i++) {
		Perftools__Profiles__Sample *s = prof->sample[i];
		size_t kept = 0;

		for (size_t j = 0; j < s->n_label; j++) {
			Perftools__Profiles__Label *l = s->label[j];
			bool keep = l->key < 0 || (size_t)l->key >= prof->n_string_table ||
				    label_kept(p, prof->string_table[l->key]);

			if (keep)
				s->label[kept++] = l;
			else
				perftools__profiles__label__free_unpacked(l, NULL);
		}
		s->n_label = kept;
	}
	packed_len = perftools__profiles__profile__get_packed_size(prof);
	packed = malloc(packed_len ? packed_len : 1);
	if (packed) {
		perftools__profiles__profile__pack(prof, packed);
		rc = gzip__compress(packed, packed_len, 6, out, out_len);
	} else {
		rc = -ENOMEM;
	}
	free(packed);
	perftools__profiles__profile__free_unpacked(prof, NULL);
	return rc;
}

/* The profile of type of the window that starts at start_ns into it, under the read lock. */
static int encode_one(struct push *p, uint64_t start_ns, enum profile_type type, const char *spike,
		      struct item *it)
{
	static const char *const type_names[] = {"cpu", "offcpu", "wall"};
	struct collector *c = p->ctx->collector;
	struct profile_filter f = {.type = type};
	struct profile_summary sum;
	int64_t offset;
	struct window *w;
	uint8_t *buf = NULL;
	size_t len = 0;
	int rc = -ENOENT;

	collector__rdlock(c);
	w = window_ring__find(collector__ring(c), start_ns);
	if (w) {
		offset = w->wall_offset_ns ? w->wall_offset_ns : collector__wall_offset_ns(c);
		it->from = ((int64_t)w->start_ns + offset) / NSEC_PER_SEC;
		it->until = ((int64_t)w->end_ns + offset) / NSEC_PER_SEC;
		rc = query__cpu_profile(p->ctx, &w, 1, &f, NULL, &buf, &len, &sum);
	}
	collector__unlock(c);
	if (rc)
		return rc;
	if (p->nr_names) {
		uint8_t *filtered = NULL;
		size_t flen = 0;

		rc = filter_labels(p, buf, len, &filtered, &flen);
		free(buf);
		if (rc)
			return rc;
		buf = filtered;
		len = flen;
	}
	if (asprintf(&it->name, "%s.%s{%s%s%s}", p->app, type_names[type], p->series_labels,
		     spike ? ",spike=" : "", spike ? spike : "") < 0) {
		it->name = NULL;
		free(buf);
		return -ENOMEM;
	}
	it->body = buf;
	it->len = len;
	return 0;
}

/* Queues the profiles of the windows that closed since the last call, oldest first. */
static void take_closed(struct push *p)
{
	struct collector *c = p->ctx->collector;

	for (;;) {
		char spike_id[SPIKE_ID_LEN];
		bool spike = false, found = false;
		uint64_t start = 0;

		collector__rdlock(c);
		{
			struct window_ring *r = collector__ring(c);
			size_t n = window_ring__count(r);

			for (size_t i = 0; i < n && !found; i++) {
				struct window *w = window_ring__get(r, i);

				if (!w->closed || (p->have_last && w->start_ns <= p->last_start_ns))
					continue;
				found = true;
				start = w->start_ns;
			}
			if (found && p->ctx->spikes)
				spike = spikes__window_spike(p->ctx->spikes, start, spike_id);
		}
		collector__unlock(c);
		if (!found)
			return;
		p->have_last = true;
		p->last_start_ns = start;
		for (int t = PROFILE_CPU; t <= PROFILE_OFFCPU; t++) {
			struct item it = {0};
			int rc = encode_one(p, start, (enum profile_type)t, spike ? spike_id : NULL,
					    &it);

			if (rc) {
				if (rc != -ENOENT)
					pr_warn("push: a profile could not be encoded: %s",
						strerror(-rc));
				count(p, &p->dropped[PUSH_DROP_ENCODE], 1);
				item_free(&it);
				continue;
			}
			enqueue(p, &it);
		}
	}
}

struct response {
	char buf[512];
	size_t len;
};

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	struct response *r = arg;
	size_t n = size * nmemb, room = sizeof(r->buf) - 1 - r->len;

	memcpy(r->buf + r->len, data, n < room ? n : room);
	r->len += n < room ? n : room;
	r->buf[r->len] = '\0';
	return n;
}

/* libcurl's progress callback: a request that runs into the stop's 2 s ends there. */
static int on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
		       curl_off_t ulnow)
{
	struct push *p = arg;
	uint64_t deadline = __atomic_load_n(&p->stop_deadline_ns, __ATOMIC_RELAXED);

	(void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
	return deadline && sysinfo__mono_ns() > deadline;
}

enum send_result { SENT, RETRY, REJECTED };

static enum send_result send_item(struct push *p, const struct item *it, long timeout_ms)
{
	struct curl_slist *headers = NULL;
	struct response resp = {.len = 0};
	char *name, *url = NULL;
	long status = 0;
	CURLcode cc;
	enum send_result res;

	name = curl_easy_escape(p->curl, it->name, 0);
	if (!name || asprintf(&url, "%s/ingest?name=%s&from=%lld&until=%lld&format=pprof", p->url,
			      name, (long long)it->from, (long long)it->until) < 0) {
		curl_free(name);
		return RETRY;
	}
	curl_free(name);
	headers = curl_slist_append(headers, "Content-Type: application/octet-stream");
	if (p->auth)
		headers = curl_slist_append(headers, p->auth);
	headers = curl_slist_append(headers, "Expect:");
	curl_easy_setopt(p->curl, CURLOPT_URL, url);
	curl_easy_setopt(p->curl, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(p->curl, CURLOPT_POST, 1L);
	curl_easy_setopt(p->curl, CURLOPT_POSTFIELDS, (const char *)it->body);
	curl_easy_setopt(p->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)it->len);
	curl_easy_setopt(p->curl, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(p->curl, CURLOPT_WRITEDATA, &resp);
	curl_easy_setopt(p->curl, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(p->curl, CURLOPT_CONNECTTIMEOUT_MS,
			 timeout_ms < CONNECT_TIMEOUT_MS ? timeout_ms : CONNECT_TIMEOUT_MS);
	cc = curl_easy_perform(p->curl);
	if (cc == CURLE_OK)
		curl_easy_getinfo(p->curl, CURLINFO_RESPONSE_CODE, &status);
	curl_slist_free_all(headers);
	if (cc != CURLE_OK) {
		pr_debug("push: %s: %s", p->url, curl_easy_strerror(cc));
		res = RETRY;
	} else if (status >= 200 && status < 300) {
		res = SENT;
	} else if (status == 429 || status >= 500) {
		pr_debug("push: %s answered %ld", p->url, status);
		res = RETRY;
	} else {
		resp.buf[strcspn(resp.buf, "\r\n")] = '\0';
		pr_warn("push: %s refused %s (from %lld): %ld %s; not retried", url, it->name,
			(long long)it->from, status, resp.buf);
		res = REJECTED;
	}
	free(url);
	return res;
}

/* Sends the queue's head while it goes through; after a failure waits (back-off). until_ns
 * (0: none) bounds it, and then a failure ends it. Returns false when it stopped on a failure. */
static bool send_queue(struct push *p, uint64_t until_ns)
{
	while (p->n) {
		uint64_t now = sysinfo__mono_ns();
		long timeout_ms = REQUEST_TIMEOUT_MS;
		enum send_result res;

		if (!until_ns && now < p->next_try_ns)
			return true;
		if (until_ns) {
			if (now >= until_ns)
				return false;
			timeout_ms = (long)((until_ns - now) / 1000000);
			if (timeout_ms < 1)
				timeout_ms = 1;
			if (timeout_ms > REQUEST_TIMEOUT_MS)
				timeout_ms = REQUEST_TIMEOUT_MS;
		}
		res = send_item(p, &p->q[p->head], timeout_ms);
		if (res == RETRY) {
			p->backoff_ns = p->backoff_ns ? p->backoff_ns * 2 : BACKOFF_FIRST_NS;
			if (p->backoff_ns > BACKOFF_MAX_NS)
				p->backoff_ns = BACKOFF_MAX_NS;
			p->next_try_ns = sysinfo__mono_ns() + p->backoff_ns;
			count(p, &p->retries, 1);
			return false;
		}
		p->backoff_ns = 0;
		dequeue(p);
		pthread_mutex_lock(&p->mu);
		if (res == SENT) {
			p->sent++;
			p->last_success_unix = sysinfo__real_ns() / NSEC_PER_SEC;
		} else {
			p->dropped[PUSH_DROP_REJECTED]++;
		}
		p->queued = p->n;
		pthread_mutex_unlock(&p->mu);
	}
	return true;
}

/* The state directory: what the queue held at the last stop, one file per profile, sent first
 * and in order. Each file: SPOOL_MAGIC, the series name, "FROM UNTIL", then the body. */
static void spool_write(struct push *p)
{
	size_t written = 0, n = p->n;

	for (size_t i = 0; i < n; i++) {
		const struct item *it = &p->q[(p->head + i) % p->cap];
		char path[PATH_MAX], tmp[PATH_MAX + 8];
		FILE *f;
		bool ok;

		snprintf(path, sizeof(path), "%s/%06zu.req", p->spool_dir, i);
		snprintf(tmp, sizeof(tmp), "%s.tmp", path);
		f = fopen(tmp, "we");
		if (!f) {
			pr_warn("push: cannot write %s: %s", tmp, strerror(errno));
			break;
		}
		ok = fprintf(f, "%s%s\n%lld %lld\n", SPOOL_MAGIC, it->name, (long long)it->from,
			     (long long)it->until) > 0 &&
		     fwrite(it->body, 1, it->len, f) == it->len;
		ok = !fflush(f) && !fsync(fileno(f)) && ok;
		ok = !fclose(f) && ok;
		if (!ok || rename(tmp, path)) {
			pr_warn("push: cannot write %s: %s", path, strerror(errno));
			unlink(tmp);
			break;
		}
		written++;
	}
	while (p->n)
		dequeue(p);
	pthread_mutex_lock(&p->mu);
	p->dropped[PUSH_DROP_SHUTDOWN] += n - written;
	p->queued = 0;
	pthread_mutex_unlock(&p->mu);
	if (written)
		pr_info("push: %zu profile%s not sent yet written to %s", written,
			written == 1 ? "" : "s", p->spool_dir);
}

static int spool_filter(const struct dirent *d)
{
	size_t len = strlen(d->d_name);

	return len > 4 && !strcmp(d->d_name + len - 4, ".req");
}

/* Reads one spooled file into it. Returns 0 or -errno. */
static int spool_read(const char *path, struct item *it)
{
	uint8_t *data = NULL;
	size_t len = 0, cap = 0, nl1, nl2;
	long long from, until;
	FILE *f = fopen(path, "re");
	int rc = -EBADMSG;

	if (!f)
		return -errno;
	for (;;) {
		size_t got;

		if (len == cap) {
			uint8_t *d =
			    cap >= MAX_SPOOL_BYTES ? NULL : realloc(data, cap ? cap * 2 : 65536);

			if (!d) {
				free(data);
				fclose(f);
				return cap >= MAX_SPOOL_BYTES ? -EFBIG : -ENOMEM;
			}
			data = d;
			cap = cap ? cap * 2 : 65536;
		}
		got = fread(data + len, 1, cap - len, f);
		len += got;
		if (!got)
			break;
	}
	fclose(f);
	if (len < strlen(SPOOL_MAGIC) || memcmp(data, SPOOL_MAGIC, strlen(SPOOL_MAGIC)))
		goto out;
	nl1 = strlen(SPOOL_MAGIC);
	for (nl2 = nl1; nl2 < len && data[nl2] != '\n'; nl2++)
		;
	if (nl2 == len || nl2 == nl1)
		goto out;
	it->name = strndup((const char *)data + nl1, nl2 - nl1);
	{
		char line[64];
		size_t start = nl2 + 1, end = start;

		while (end < len && data[end] != '\n' && end - start < sizeof(line) - 1)
			end++;
		if (end == len || data[end] != '\n')
			goto out;
		memcpy(line, data + start, end - start);
		line[end - start] = '\0';
		if (sscanf(line, "%lld %lld", &from, &until) != 2)
			goto out;
		it->from = from;
		it->until = until;
		it->len = len - end - 1;
		it->body = malloc(it->len ? it->len : 1);
		if (!it->body || !it->name) {
			rc = -ENOMEM;
			goto out;
		}
		memcpy(it->body, data + end + 1, it->len);
	}
	rc = 0;
out:
	free(data);
	if (rc)
		item_free(it);
	return rc;
}

/* Queues what the last stop left, oldest first, and removes the files. */
static void spool_load(struct push *p)
{
	struct dirent **list = NULL;
	int n = scandir(p->spool_dir, &list, spool_filter, alphasort);
	size_t loaded = 0;

	for (int i = 0; i < n; i++) {
		char path[PATH_MAX];
		struct item it = {0};
		int rc;

		snprintf(path, sizeof(path), "%s/%s", p->spool_dir, list[i]->d_name);
		rc = spool_read(path, &it);
		if (rc)
			pr_warn("push: %s: %s; removed", path,
				rc == -EBADMSG ? "not a queued profile" : strerror(-rc));
		else {
			enqueue(p, &it);
			loaded++;
		}
		if (unlink(path))
			pr_warn("push: cannot remove %s: %s", path, strerror(errno));
		free(list[i]);
	}
	free(list);
	if (loaded)
		pr_info("push: %zu profile%s queued at the last stop will be sent", loaded,
			loaded == 1 ? "" : "s");
}

static void *run(void *arg)
{
	struct push *p = arg;
	uint64_t flush_until;

	pthread_mutex_lock(&p->mu);
	while (!p->stopping) {
		uint64_t now, wait_ns = POLL_NS;
		struct timespec ts;

		pthread_mutex_unlock(&p->mu);
		take_closed(p);
		send_queue(p, 0);
		now = sysinfo__mono_ns();
		if (p->n && p->next_try_ns > now && p->next_try_ns - now < wait_ns)
			wait_ns = p->next_try_ns - now;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += (long)wait_ns;
		ts.tv_sec += ts.tv_nsec / NSEC_PER_SEC;
		ts.tv_nsec %= NSEC_PER_SEC;
		pthread_mutex_lock(&p->mu);
		if (!p->stopping)
			pthread_cond_timedwait(&p->cond, &p->mu, &ts);
	}
	pthread_mutex_unlock(&p->mu);
	/* stopping: the drain has ended; the windows it closed last, then at most 2 s */
	flush_until = __atomic_load_n(&p->stop_deadline_ns, __ATOMIC_RELAXED);
	take_closed(p);
	send_queue(p, flush_until);
	if (p->n && p->spool_dir) {
		spool_write(p);
	} else if (p->n) {
		pr_warn("push: %zu profile%s not sent (no state directory to keep them)", p->n,
			p->n == 1 ? "" : "s");
		count(p, &p->dropped[PUSH_DROP_SHUTDOWN], p->n);
		while (p->n)
			dequeue(p);
	}
	return NULL;
}

/* The bearer token: the file's first line. */
static int read_token(const char *path, char **auth, char *err, size_t errlen)
{
	char line[4096];
	FILE *f = fopen(path, "re");
	size_t len;

	if (!f) {
		snprintf(err, errlen, "[push] token_file %s: %s", path, strerror(errno));
		return -1;
	}
	if (!fgets(line, sizeof(line), f))
		line[0] = '\0';
	fclose(f);
	len = strcspn(line, "\r\n");
	line[len] = '\0';
	if (!len) {
		snprintf(err, errlen, "[push] token_file %s: empty", path);
		return -1;
	}
	for (size_t i = 0; i < len; i++)
		if (!isgraph((unsigned char)line[i])) {
			snprintf(err, errlen,
				 "[push] token_file %s: the token has a blank or a "
				 "control character",
				 path);
			return -1;
		}
	if (asprintf(auth, "Authorization: Bearer %s", line) < 0) {
		*auth = NULL;
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	explicit_bzero(line, sizeof(line));
	return 0;
}

static void push_free(struct push *p)
{
	if (!p)
		return;
	while (p->n)
		dequeue(p);
	free(p->q);
	if (p->curl)
		curl_easy_cleanup(p->curl);
	free(p->url);
	free(p->app);
	free(p->series_labels);
	if (p->auth)
		explicit_bzero(p->auth, strlen(p->auth));
	free(p->auth);
	free(p->spool_dir);
	for (size_t i = 0; i < p->nr_names; i++)
		free(p->names[i]);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cond);
	free(p);
}

struct push *push__start(const struct push_opts *o, const struct query_ctx *ctx,
			 const char *state_dir, char *err, size_t errlen)
{
	struct push *p = calloc(1, sizeof(*p));
	char host[256] = "";
	pthread_condattr_t ca;
	size_t len;
	int rc;

	if (!p) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&p->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->cond, &ca);
	pthread_condattr_destroy(&ca);
	p->ctx = ctx;
	p->url = strdup(o->url);
	p->app = strdup(o->app ? o->app : "tailprof");
	p->cap = 2 * (size_t)(o->queue_windows ? o->queue_windows : 60);
	p->q = calloc(p->cap, sizeof(*p->q));
	if (gethostname(host, sizeof(host) - 1) || !host[0])
		snprintf(host, sizeof(host), "unknown");
	for (char *c = host; *c; c++)
		if (!isalnum((unsigned char)*c) && *c != '.' && *c != '-' && *c != '_')
			*c = '_';
	if (asprintf(&p->series_labels, "host=%s%s%s", host, o->labels ? "," : "",
		     o->labels ? o->labels : "") < 0)
		p->series_labels = NULL;
	if (!p->url || !p->app || !p->q || !p->series_labels) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	len = strlen(p->url);
	while (len && p->url[len - 1] == '/')
		p->url[--len] = '\0';
	if (o->keep_labels || o->drop_labels) {
		rc = split_names(o->keep_labels ? o->keep_labels : o->drop_labels, p->names,
				 PUSH_MAX_NAMES, err, errlen);
		if (rc < 0)
			goto fail;
		p->nr_names = (size_t)rc;
		p->keep = o->keep_labels != NULL;
	}
	if (o->token_file && read_token(o->token_file, &p->auth, err, errlen))
		goto fail;
	p->curl = curl_easy_init();
	if (!p->curl) {
		snprintf(err, errlen, "libcurl did not start");
		goto fail;
	}
	/* TLS verification stays on (libcurl's default); only http and https */
	curl_easy_setopt(p->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(p->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(p->curl, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(p->curl, CURLOPT_XFERINFODATA, p);
	curl_easy_setopt(p->curl, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(p->curl, CURLOPT_USERAGENT, "tailprofd/" TAILPROF_VERSION);
	if (state_dir) {
		if (asprintf(&p->spool_dir, "%s/push", state_dir) < 0) {
			p->spool_dir = NULL;
			snprintf(err, errlen, "out of memory");
			goto fail;
		}
		if (mkdir(p->spool_dir, 0700) && errno != EEXIST) {
			snprintf(err, errlen, "%s: %s", p->spool_dir, strerror(errno));
			goto fail;
		}
		spool_load(p);
	}
	rc = pthread_create(&p->thread, NULL, run, p);
	if (rc) {
		snprintf(err, errlen, "cannot start the push thread: %s", strerror(rc));
		goto fail;
	}
	pr_info("pushing each window's profiles to %s/ingest as %s.cpu and %s.offcpu", p->url,
		p->app, p->app);
	return p;
fail:
	push_free(p);
	return NULL;
}

void push__stop(struct push *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stopping = true;
	__atomic_store_n(&p->stop_deadline_ns, sysinfo__mono_ns() + FLUSH_NS, __ATOMIC_RELAXED);
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->mu);
	pthread_join(p->thread, NULL);
	push_free(p);
}

void push__queue_counts(struct push *p, uint64_t *queued, uint64_t *cap, uint64_t *dropped)
{
	pthread_mutex_lock(&p->mu);
	*queued = p->queued;
	*cap = p->cap;
	*dropped = p->dropped[PUSH_DROP_QUEUE_FULL];
	pthread_mutex_unlock(&p->mu);
}

char *push__metrics_text(struct push *p)
{
	struct text t = {0};

	pthread_mutex_lock(&p->mu);
	text_metric(&t, "tailprof_push_sent_total", "counter",
		    "Profiles the central store accepted (2xx).");
	text_put(&t, "tailprof_push_sent_total %llu\n", (unsigned long long)p->sent);
	text_metric(&t, "tailprof_push_retries_total", "counter",
		    "Sends that failed and will be tried again (no answer, 429, 5xx).");
	text_put(&t, "tailprof_push_retries_total %llu\n", (unsigned long long)p->retries);
	text_metric(&t, "tailprof_push_dropped_total", "counter",
		    "Profiles never sent, by reason.");
	for (int i = 0; i < PUSH_DROP_NR; i++)
		text_put(&t, "tailprof_push_dropped_total{reason=\"%s\"} %llu\n", drop_names[i],
			 (unsigned long long)p->dropped[i]);
	text_metric(&t, "tailprof_push_queue_length", "gauge",
		    "Profiles waiting to be sent (two a window).");
	text_put(&t, "tailprof_push_queue_length %llu\n", (unsigned long long)p->queued);
	text_metric(&t, "tailprof_push_last_success_timestamp_seconds", "gauge",
		    "When the store last accepted a profile (Unix seconds; 0: never).");
	text_put(&t, "tailprof_push_last_success_timestamp_seconds %lld\n",
		 (long long)p->last_success_unix);
	pthread_mutex_unlock(&p->mu);
	return text_finish(&t);
}
