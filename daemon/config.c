// SPDX-License-Identifier: GPL-2.0-only
/* The configuration file: inih does the INI syntax, this file the sections, keys and values. */
#include "config.h"

#include <ctype.h>
#include <stdarg.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ini.h>

#include "timeparse.h"

/* The [limits] keys (resource_limits.h): here, with the parser that reads them (the fuzz targets
 * link the parser without the daemon's tables). */
const char *const limits_keys[LIMITS_NR_KEYS] = {
    [LIMIT_STACKS] = "stacks",
    [LIMIT_TASKS] = "tasks",
    [LIMIT_KNOWN_PROCESSES] = "known_processes",
    [LIMIT_PROCESSES] = "processes",
    [LIMIT_OBJECTS] = "objects",
    [LIMIT_HTTP_CONNECTIONS] = "http_connections",
};

/* A configuration file is at most this many bytes: a file that never ends (a link to /dev/zero
 * made by mistake) must not hang the reload. */
#define CONFIG_MAX_BYTES (1 << 20)

struct parse {
	struct config *c;
	FILE *f;
	char *linebuf; /* getline's */
	size_t linecap;
	size_t bytes;	  /* read so far */
	bool stop;	  /* the reader met an error: no more lines */
	int line;	  /* of the line inih handed us last */
	int section_line; /* of the last [section] header */
	int err_line;
	char err[512];
	/* the section being read */
	enum {
		SEC_NONE,
		SEC_DAEMON,
		SEC_STAGE,
		SEC_APP,
		SEC_GC,
		SEC_SPIKES,
		SEC_SNAPSHOTS,
		SEC_PUSH,
		SEC_LIMITS,
		SEC_BAD
	} kind;
	char section[128];
	struct config_stage *stage;
	struct config_app *app;
};

static void *xstrdup(const char *s)
{
	char *p = strdup(s);

	if (!p)
		abort(); /* config values are short (inih bounds lines): abort on failure */
	return p;
}

int config__valid_stage_name(const char *s)
{
	size_t n = strlen(s);

	if (!n || n >= TP_STAGE_NAME_LEN)
		return 0;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_' && *s != '.' && *s != '-')
			return 0;
	return 1;
}

static int __attribute__((format(printf, 2, 3))) fail(struct parse *p, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (p->err_line)
		return 0; /* keep the first error */
	p->err_line = p->line;
	n = snprintf(p->err, sizeof(p->err), "%s:%d: ", p->c->path, p->line);
	va_start(ap, fmt);
	vsnprintf(p->err + n, sizeof(p->err) - n, fmt, ap);
	va_end(ap);
	return 0;
}

/* inih reads lines through this (size: its line buffer, INI_MAX_LINE), so we know the line of
 * each callback. A line longer than inih takes, a NUL byte, a read error or a file past
 * CONFIG_MAX_BYTES ends the parse with an error: inih would split a long line, and a comment's
 * tail would become a setting. */
static char *reader(char *buf, int size, void *stream)
{
	struct parse *p = stream;
	const char *lead;
	ssize_t n;

	if (p->stop)
		return NULL;
	errno = 0;
	n = getline(&p->linebuf, &p->linecap, p->f);
	if (n < 0) {
		if (ferror(p->f)) {
			p->line++;
			fail(p, "cannot read: %s", strerror(errno ? errno : EIO));
		}
		return NULL;
	}
	p->line++;
	p->bytes += (size_t)n;
	if (p->bytes > CONFIG_MAX_BYTES)
		fail(p, "the file goes past %d bytes: not a configuration file", CONFIG_MAX_BYTES);
	else if (memchr(p->linebuf, 0, (size_t)n))
		fail(p, "a NUL byte: not a text file");
	else if (n >= size && !(n == size && p->linebuf[n - 1] == '\n'))
		fail(p, "a line of %zd bytes: at most %d are read; shorten it", n, size - 1);
	else if (*(lead = p->linebuf + strspn(p->linebuf, " \t")) == '[' && !strchr(lead, ']'))
		/* inih would note the line and go on, and the keys after it would be blamed */
		fail(p, "'%.*s' opens a section header without closing it; write it as [NAME]",
		     (int)strcspn(lead, "\r\n"), lead);
	if (p->err_line) {
		p->stop = true;
		return NULL;
	}
	memcpy(buf, p->linebuf, (size_t)n + 1);
	if (n >= size) /* n == size, its newline dropped */
		buf[size - 1] = 0;
	if (buf[strspn(buf, " \t")] == '[')
		p->section_line = p->line;
	return buf;
}

static int start_section_at(struct parse *p, const char *section);

/* Errors about a section name the line of its header. */
static int start_section(struct parse *p, const char *section)
{
	int line = p->line, ok;

	p->line = p->section_line ? p->section_line : line;
	ok = start_section_at(p, section);
	p->line = line;
	return ok;
}

static int start_section_at(struct parse *p, const char *section)
{
	const char *sp = strchr(section, ' ');
	char kind[32];
	size_t klen = sp ? (size_t)(sp - section) : strlen(section);
	const char *name = sp ? sp + 1 : "";

	snprintf(p->section, sizeof(p->section), "%s", section);
	p->kind = SEC_BAD;
	p->stage = NULL;
	p->app = NULL;
	snprintf(kind, sizeof(kind), "%.*s", (int)(klen < sizeof(kind) ? klen : sizeof(kind) - 1),
		 section);
	while (*name == ' ')
		name++;
	if (!strcmp(section, "daemon")) {
		p->kind = SEC_DAEMON;
		return 1;
	}
	if (!strcmp(section, "gc")) {
		p->kind = SEC_GC;
		return 1;
	}
	if (!strcmp(section, "spikes")) {
		p->kind = SEC_SPIKES;
		return 1;
	}
	if (!strcmp(section, "snapshots")) {
		p->kind = SEC_SNAPSHOTS;
		return 1;
	}
	if (!strcmp(section, "push")) {
		p->kind = SEC_PUSH;
		return 1;
	}
	if (!strcmp(section, "limits")) {
		p->kind = SEC_LIMITS;
		return 1;
	}
	if (strcmp(kind, "stage") && strcmp(kind, "usdt-app"))
		return fail(p,
			    "unknown section [%s]; allowed: [daemon], [gc], [spikes], [snapshots], "
			    "[push], [limits], [stage NAME], [usdt-app NAME]",
			    section);
	if (!config__valid_stage_name(name))
		return fail(p,
			    "[%s]: give a name of 1 to %d letters, digits, '_', '.' or '-' after "
			    "'%s '",
			    section, TP_STAGE_NAME_LEN - 1, kind);
	if (!strcmp(kind, "stage")) {
		for (size_t i = 0; i < p->c->nr_stages; i++)
			if (!strcmp(p->c->stages[i].name, name))
				return fail(p, "[stage %s] is defined twice (first at line %d)",
					    name, p->c->stages[i].line);
		if (p->c->nr_stages == CONFIG_MAX_STAGES)
			return fail(p, "too many [stage] sections; at most %d", CONFIG_MAX_STAGES);
		p->stage = &p->c->stages[p->c->nr_stages++];
		snprintf(p->stage->name, sizeof(p->stage->name), "%s", name);
		p->stage->pid = -1;
		p->stage->line = p->line;
		p->kind = SEC_STAGE;
	} else {
		for (size_t i = 0; i < p->c->nr_apps; i++)
			if (!strcmp(p->c->apps[i].name, name))
				return fail(p, "[usdt-app %s] is defined twice (first at line %d)",
					    name, p->c->apps[i].line);
		if (p->c->nr_apps == CONFIG_MAX_APPS)
			return fail(p, "too many [usdt-app] sections; at most %d", CONFIG_MAX_APPS);
		p->app = &p->c->apps[p->c->nr_apps++];
		snprintf(p->app->name, sizeof(p->app->name), "%s", name);
		p->app->pid = -1;
		p->app->line = p->line;
		p->kind = SEC_APP;
	}
	return 1;
}

static int set_string(struct parse *p, char **dst, const char *key, const char *value)
{
	if (*dst)
		return fail(p, "%s: given twice in [%s]; give it once", key, p->section);
	if (!*value)
		return fail(p, "%s: empty value in [%s]", key, p->section);
	*dst = xstrdup(value);
	return 1;
}

static int set_pid(struct parse *p, int32_t *dst, const char *value)
{
	uint64_t v;

	if (tp_parse_uint(value, 1, INT32_MAX, &v))
		return fail(p, "pid: '%s' is not a process id (a positive integer)", value);
	*dst = (int32_t)v;
	return 1;
}

static int check_usdt_name(struct parse *p, const char *key, const char *value)
{
	const char *colon = strchr(value, ':');

	if (!colon || colon == value || !colon[1] || strchr(colon + 1, ':'))
		return fail(p, "%s: '%s' is not PROVIDER:NAME (e.g. myapp:compute__begin)", key,
			    value);
	return 1;
}

/* key = value of a section whose keys are keys[0..n) and are checked when applied: kept as
 * written in settings[i]. Refused when unknown or given twice. */
static int set_setting(struct parse *p, const char *const *keys,
		       struct config_setting *const *settings, size_t n, const char *key,
		       const char *value)
{
	char allowed[256] = "";
	size_t len = 0;

	for (size_t i = 0; i < n; i++) {
		if (strcmp(key, keys[i]))
			continue;
		if (settings[i]->value)
			return fail(p, "%s: given twice in [%s] (first at line %d)", key,
				    p->section, settings[i]->line);
		settings[i]->value = xstrdup(value);
		settings[i]->line = p->line;
		return 1;
	}
	for (size_t i = 0; i < n && len < sizeof(allowed); i++)
		len +=
		    snprintf(allowed + len, sizeof(allowed) - len, "%s%s", i ? ", " : "", keys[i]);
	return fail(p, "unknown key '%s' in [%s]; allowed: %s", key, p->section, allowed);
}

static int set_daemon(struct parse *p, const char *key, const char *value)
{
	static const char *const keys[] = {"frequency",	      "window",	      "retention",
					   "listen",	      "ringbuf_size", "socket",
					   "auth_token_file", "bpf_stats"};
	struct config_setting *const s[] = {
	    &p->c->frequency,	 &p->c->window, &p->c->retention,	&p->c->listen,
	    &p->c->ringbuf_size, &p->c->socket, &p->c->auth_token_file, &p->c->bpf_stats};

	return set_setting(p, keys, s, sizeof(keys) / sizeof(keys[0]), key, value);
}

static int set_gc(struct parse *p, const char *key, const char *value)
{
	static const char *const keys[] = {"enabled", "jvm", "python", "go"};
	struct config_setting *s[] = {&p->c->gc_enabled, &p->c->gc_jvm, &p->c->gc_python,
				      &p->c->gc_go};

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		if (strcmp(key, keys[i]))
			continue;
		if (s[i]->value)
			return fail(p, "%s: given twice in [gc] (first at line %d)", key,
				    s[i]->line);
		if (i == 0 && strcmp(value, "auto") && strcmp(value, "off"))
			return fail(p, "enabled: '%s' is not auto or off", value);
		if (i > 0 && strcmp(value, "on") && strcmp(value, "off"))
			return fail(p, "%s: '%s' is not on or off", key, value);
		s[i]->value = xstrdup(value);
		s[i]->line = p->line;
		return 1;
	}
	return fail(p, "unknown key '%s' in [gc]; allowed: enabled, jvm, python, go", key);
}

static int set_spikes(struct parse *p, const char *key, const char *value)
{
	static const char *const keys[] = {"k",		"baseline_windows", "min_requests",
					   "min_rise",	"pin_budget",	    "state_dir",
					   "write_rate"};
	struct config_setting *const s[] = {
	    &p->c->spikes_k,	     &p->c->spikes_baseline_windows, &p->c->spikes_min_requests,
	    &p->c->spikes_min_rise,  &p->c->spikes_pin_budget,	     &p->c->spikes_state_dir,
	    &p->c->spikes_write_rate};

	return set_setting(p, keys, s, sizeof(keys) / sizeof(keys[0]), key, value);
}

static int set_snapshots(struct parse *p, const char *key, const char *value)
{
	static const char *const keys[] = {"max_count", "max_bytes", "save_rate"};
	struct config_setting *const s[] = {&p->c->snapshots_max_count, &p->c->snapshots_max_bytes,
					    &p->c->snapshots_save_rate};

	return set_setting(p, keys, s, sizeof(keys) / sizeof(keys[0]), key, value);
}

static int set_limits(struct parse *p, const char *key, const char *value)
{
	struct config_setting *s[LIMITS_NR_KEYS];

	for (int i = 0; i < LIMITS_NR_KEYS; i++)
		s[i] = &p->c->limits[i];
	return set_setting(p, limits_keys, s, LIMITS_NR_KEYS, key, value);
}

static int set_push(struct parse *p, const char *key, const char *value)
{
	static const char *const keys[] = {"url",    "app",	    "token_file", "queue_windows",
					   "labels", "keep_labels", "drop_labels"};
	struct config_setting *const s[] = {&p->c->push_url,	    &p->c->push_app,
					    &p->c->push_token_file, &p->c->push_queue_windows,
					    &p->c->push_labels,	    &p->c->push_keep_labels,
					    &p->c->push_drop_labels};

	return set_setting(p, keys, s, sizeof(keys) / sizeof(keys[0]), key, value);
}

static int handler(void *user, const char *section, const char *key, const char *value)
{
	struct parse *p = user;

	if (!key) /* a new section (inih's INI_CALL_HANDLER_ON_NEW_SECTION) */
		return start_section(p, section);
	if (strcmp(section, p->section) && !start_section(p, section))
		return 0;
	switch (p->kind) {
	case SEC_NONE:
		return fail(p, "'%s' outside any section; put it under [daemon] or [stage NAME]",
			    key);
	case SEC_BAD:
		return 0;
	case SEC_DAEMON:
		return set_daemon(p, key, value);
	case SEC_GC:
		return set_gc(p, key, value);
	case SEC_SPIKES:
		return set_spikes(p, key, value);
	case SEC_SNAPSHOTS:
		return set_snapshots(p, key, value);
	case SEC_PUSH:
		return set_push(p, key, value);
	case SEC_LIMITS:
		return set_limits(p, key, value);
	case SEC_APP:
		if (!strcmp(key, "binary"))
			return set_string(p, &p->app->binary, key, value);
		if (!strcmp(key, "pid"))
			return set_pid(p, &p->app->pid, value);
		return fail(p, "unknown key '%s' in [%s]; allowed: binary, pid", key, p->section);
	case SEC_STAGE:
		if (!strcmp(key, "binary"))
			return set_string(p, &p->stage->binary, key, value);
		if (!strcmp(key, "function"))
			return set_string(p, &p->stage->function, key, value);
		if (!strcmp(key, "usdt_begin"))
			return check_usdt_name(p, key, value) &&
			       set_string(p, &p->stage->usdt_begin, key, value);
		if (!strcmp(key, "usdt_end"))
			return check_usdt_name(p, key, value) &&
			       set_string(p, &p->stage->usdt_end, key, value);
		if (!strcmp(key, "pid"))
			return set_pid(p, &p->stage->pid, value);
		if (!strcmp(key, "threshold")) {
			if (tp_parse_duration(value, &p->stage->threshold_ns) ||
			    !p->stage->threshold_ns)
				return fail(p,
					    "threshold: '%s' is not a positive duration; use e.g. "
					    "500us, 25ms, 2s",
					    value);
			return 1;
		}
		return fail(p,
			    "unknown key '%s' in [%s]; allowed: binary, function, usdt_begin, "
			    "usdt_end, threshold, pid",
			    key, p->section);
	}
	return 0;
}

/* What a section lacks once it is read: checked at the end, with the section's line. */
static int check_sections(struct parse *p)
{
	for (size_t i = 0; i < p->c->nr_stages; i++) {
		struct config_stage *s = &p->c->stages[i];

		p->line = s->line;
		if (!s->binary)
			return fail(p, "[stage %s] has no binary = PATH", s->name);
		if (s->function && (s->usdt_begin || s->usdt_end))
			return fail(p,
				    "[stage %s] has both function and usdt_begin/usdt_end; give "
				    "one of them",
				    s->name);
		if (!s->function && !(s->usdt_begin && s->usdt_end))
			return fail(p,
				    "[stage %s] needs function = NAME, or both usdt_begin and "
				    "usdt_end = PROVIDER:NAME",
				    s->name);
	}
	for (size_t i = 0; i < p->c->nr_apps; i++) {
		p->line = p->c->apps[i].line;
		if (!p->c->apps[i].binary)
			return fail(p, "[usdt-app %s] has no binary = PATH", p->c->apps[i].name);
	}
	return 1;
}

struct config *config__load(const char *path, char *err, size_t errlen)
{
	struct parse p = {.kind = SEC_NONE};
	struct stat st;
	int rc, e, fd;

	/* not blocking on a FIFO's open; a regular file only (a directory reads as empty) */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	e = fd < 0 || fstat(fd, &st) ? errno : !S_ISREG(st.st_mode) ? EINVAL : 0;
	if (!e &&
	    (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) || !(p.f = fdopen(fd, "r"))))
		e = errno;
	if (e) {
		snprintf(err, errlen, "cannot read the configuration file %s: %s", path,
			 e == EINVAL
			     ? "not a regular file (a directory, a FIFO, a device?): give a file"
			     : strerror(e));
		if (fd >= 0)
			close(fd);
		errno = e;
		return NULL;
	}
	p.c = calloc(1, sizeof(*p.c));
	if (!p.c)
		abort();
	p.c->path = xstrdup(path);
	rc = ini_parse_stream(reader, &p, handler, &p);
	fclose(p.f);
	free(p.linebuf);
	if (rc > 0 && !p.err_line) {
		p.line = rc;
		fail(&p, "not a [section] or key = value line");
	} else if (rc < 0 && !p.err_line) {
		p.line = 0;
		fail(&p, "cannot parse the file (out of memory)");
	}
	if (!p.err_line)
		check_sections(&p);
	if (p.err_line) {
		snprintf(err, errlen, "%s", p.err);
		config__free(p.c);
		errno = EINVAL;
		return NULL;
	}
	return p.c;
}

void config__free(struct config *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nr_stages; i++) {
		free(c->stages[i].binary);
		free(c->stages[i].function);
		free(c->stages[i].usdt_begin);
		free(c->stages[i].usdt_end);
	}
	for (size_t i = 0; i < c->nr_apps; i++)
		free(c->apps[i].binary);
	free(c->frequency.value);
	free(c->window.value);
	free(c->retention.value);
	free(c->listen.value);
	free(c->ringbuf_size.value);
	free(c->socket.value);
	free(c->auth_token_file.value);
	free(c->bpf_stats.value);
	free(c->gc_enabled.value);
	free(c->gc_jvm.value);
	free(c->gc_python.value);
	free(c->gc_go.value);
	free(c->spikes_k.value);
	free(c->spikes_baseline_windows.value);
	free(c->spikes_min_requests.value);
	free(c->spikes_min_rise.value);
	free(c->spikes_pin_budget.value);
	free(c->spikes_state_dir.value);
	free(c->spikes_write_rate.value);
	free(c->snapshots_max_count.value);
	free(c->snapshots_max_bytes.value);
	free(c->push_url.value);
	free(c->push_app.value);
	free(c->push_token_file.value);
	free(c->push_queue_windows.value);
	free(c->push_labels.value);
	free(c->push_keep_labels.value);
	free(c->push_drop_labels.value);
	free(c->snapshots_save_rate.value);
	for (int i = 0; i < LIMITS_NR_KEYS; i++)
		free(c->limits[i].value);
	free(c->path);
	free(c);
}
