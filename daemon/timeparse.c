// SPDX-License-Identifier: GPL-2.0-only
/* Parsing and formatting of durations and RFC 3339 / Unix times. */
#include "timeparse.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const struct {
	const char *name;
	uint64_t ns;
} units[] = {
    {"ns", 1},		 {"us", NSEC_PER_USEC},	   {"ms", NSEC_PER_MSEC},
    {"s", NSEC_PER_SEC}, {"m", 60 * NSEC_PER_SEC}, {"h", 3600 * NSEC_PER_SEC},
};

int tp_parse_duration(const char *s, uint64_t *ns)
{
	uint64_t total = 0;

	if (!s || !*s)
		return -EINVAL;
	while (*s) {
		uint64_t v = 0, mult = 0;
		size_t i, len = 0;

		if (!isdigit((unsigned char)*s))
			return -EINVAL;
		while (isdigit((unsigned char)*s)) {
			if (v > (UINT64_MAX - 9) / 10)
				return -ERANGE;
			v = v * 10 + (uint64_t)(*s++ - '0');
		}
		while (isalpha((unsigned char)s[len]))
			len++;
		for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
			if (strlen(units[i].name) == len && !strncmp(s, units[i].name, len)) {
				mult = units[i].ns;
				break;
			}
		}
		if (!mult)
			return -EINVAL;
		if (v > (UINT64_MAX / 2) / mult || total + v * mult > UINT64_MAX / 2)
			return -ERANGE;
		total += v * mult;
		s += len;
	}
	*ns = total;
	return 0;
}

int tp_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;

	if (!s || !*s)
		return -EINVAL;
	for (; *s; s++) {
		if (!isdigit((unsigned char)*s))
			return -EINVAL;
		if (v > (UINT64_MAX - 9) / 10)
			return -ERANGE;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	if (v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int tp_parse_size(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	const char *p = s;
	unsigned int shift = 0;
	uint64_t v = 0;

	if (!s)
		return -EINVAL;
	for (; isdigit((unsigned char)*p); p++) {
		if (v > (UINT64_MAX - 9) / 10)
			return -ERANGE;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (p == s)
		return -EINVAL;
	switch (*p) {
	case '\0':
		break;
	case 'k':
	case 'K':
		shift = 10;
		break;
	case 'm':
	case 'M':
		shift = 20;
		break;
	case 'g':
	case 'G':
		shift = 30;
		break;
	default:
		return -EINVAL;
	}
	if (*p && p[1])
		return -EINVAL;
	if (v > UINT64_MAX >> shift || v << shift < min || v << shift > max)
		return -ERANGE;
	*out = v << shift;
	return 0;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	int64_t era;
	unsigned yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = (unsigned)(y - era * 400);
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

static int parse_digits(const char **p, int n, int *out)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if (!isdigit((unsigned char)(*p)[i]))
			return -EINVAL;
		v = v * 10 + ((*p)[i] - '0');
	}
	*p += n;
	*out = v;
	return 0;
}

static int parse_fraction_ns(const char **p, int64_t *ns)
{
	int64_t scale = NSEC_PER_SEC / 10, v = 0;

	if (!isdigit((unsigned char)**p))
		return -EINVAL;
	while (isdigit((unsigned char)**p)) {
		v += (**p - '0') * scale;
		scale /= 10;
		(*p)++;
	}
	*ns = v;
	return 0;
}

static int parse_rfc3339(const char *p, int64_t *unix_ns)
{
	int y, mo, d, h, mi, sec, oh = 0, om = 0, sign = 0;
	int64_t frac = 0, secs;

	if (parse_digits(&p, 4, &y) || *p++ != '-' || parse_digits(&p, 2, &mo) || *p++ != '-' ||
	    parse_digits(&p, 2, &d) || (*p != 'T' && *p != 't' && *p != ' '))
		return -EINVAL;
	p++;
	if (parse_digits(&p, 2, &h) || *p++ != ':' || parse_digits(&p, 2, &mi) || *p++ != ':' ||
	    parse_digits(&p, 2, &sec))
		return -EINVAL;
	if (*p == '.') {
		p++;
		if (parse_fraction_ns(&p, &frac))
			return -EINVAL;
	}
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		sign = *p++ == '+' ? 1 : -1;
		if (parse_digits(&p, 2, &oh) || *p++ != ':' || parse_digits(&p, 2, &om))
			return -EINVAL;
	} else {
		return -EINVAL;
	}
	if (*p || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60 ||
	    oh > 23 || om > 59)
		return -EINVAL;
	secs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec;
	secs -= sign * (oh * 3600 + om * 60);
	if (secs < 0 || secs >= TP_MAX_UNIX_SECONDS)
		return -ERANGE;
	*unix_ns = secs * (int64_t)NSEC_PER_SEC + frac;
	return 0;
}

int tp_parse_time(const char *s, int64_t *unix_ns)
{
	const char *p = s;
	int64_t secs = 0, frac = 0;

	if (!s || !*s)
		return -EINVAL;
	if (strlen(s) >= 10 && s[4] == '-')
		return parse_rfc3339(s, unix_ns);
	while (isdigit((unsigned char)*p)) {
		secs = secs * 10 + (*p++ - '0');
		if (secs >= TP_MAX_UNIX_SECONDS)
			return -ERANGE;
	}
	if (p == s)
		return -EINVAL;
	if (*p == '.') {
		p++;
		if (parse_fraction_ns(&p, &frac))
			return -EINVAL;
	}
	if (*p)
		return -EINVAL;
	*unix_ns = secs * (int64_t)NSEC_PER_SEC + frac;
	return 0;
}

char *tp_format_rfc3339(int64_t unix_ns, char *buf, size_t len)
{
	time_t secs = (time_t)(unix_ns / (int64_t)NSEC_PER_SEC);
	int64_t ms = (unix_ns % (int64_t)NSEC_PER_SEC) / (int64_t)NSEC_PER_MSEC;
	struct tm tm;

	if (ms < 0) {
		ms += 1000;
		secs--;
	}
	gmtime_r(&secs, &tm);
	snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)ms);
	return buf;
}

char *tp_format_duration(uint64_t ns, char *buf, size_t len)
{
	uint64_t ms = (ns + NSEC_PER_MSEC / 2) / NSEC_PER_MSEC;
	uint64_t h = ms / 3600000, m = ms / 60000 % 60, s = ms / 1000 % 60, frac = ms % 1000;
	int n = 0;

	if (ms < 1000) {
		snprintf(buf, len, "%llums", (unsigned long long)ms);
		return buf;
	}
	if (h)
		n = snprintf(buf, len, "%lluh", (unsigned long long)h);
	if (h || m)
		n += snprintf(buf + n, len - n, "%llum", (unsigned long long)m);
	if (frac)
		snprintf(buf + n, len - n, "%llu.%03llus", (unsigned long long)s,
			 (unsigned long long)frac);
	else
		snprintf(buf + n, len - n, "%llus", (unsigned long long)s);
	return buf;
}

int tp_parse_decimal(const char *s, double *out)
{
	char *end;

	if (!*s || strspn(s, "0123456789.eE+-") != strlen(s))
		return -EINVAL;
	errno = 0;
	*out = strtod(s, &end);
	return errno || end == s || *end || !isfinite(*out) ? -EINVAL : 0;
}
