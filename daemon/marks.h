/* SPDX-License-Identifier: GPL-2.0-only */
/* The write endpoints' pure parts: the bodies of POST /api/v1/marks and of an Alertmanager
 * webhook (POST /api/v1/alertmanager) into spikes.h's structs, and the token bucket that limits
 * how often they are taken. No I/O, no clock, no locks: callers pass the time and serialize the
 * bucket. docs/spike-marks.md describes the bodies and the answers. */
#ifndef TAILPROF_MARKS_H
#define TAILPROF_MARKS_H

#include <stddef.h>
#include <stdint.h>

#include "spikes.h"

#define MARKS_MAX_BODY_BYTES (1024 * 1024)		 /* a larger body is answered 413 */
#define MARKS_MAX_ALERTS     256			 /* alerts of one webhook delivery */
#define MARKS_MAX_SPAN_NS    (24 * 3600 * 1000000000ULL) /* a mark's before and after */
#define MARKS_DEFAULT_RATE   60				 /* write requests a minute */
#define MARKS_DEFAULT_BURST  20				 /* taken at once after a quiet time */
#define MARKS_ZERO_TIME	     "0001-01-01T00:00:00Z" /* Go's time.Time{}: endsAt of a firing alert */
#define MARKS_ERR_ECHO_BYTES 64			    /* bytes of a bad value quoted in an error */

/* Parses the JSON body of POST /api/v1/marks (len bytes, need not be NUL-terminated) into *m:
 *   {"time": RFC 3339 string, Unix seconds as a number or a numeric string (default: now),
 *    "reason": string (default ""), "stage": stage name, "before": duration, "after": duration}
 * A key whose value is null counts as absent. An empty (or all white space) body is {}: a mark of
 * no stage at now_unix_ns. Unknown keys are errors (a typo must not pass silently). A JSON
 * number time is rounded to the microsecond (a double holds no more at today's times); a string
 * keeps nanoseconds. reason is cut to SPIKE_REASON_LEN - 1 bytes at a UTF-8 character boundary.
 * Durations are timeparse.h's ("500ms", "2s", "10m", "1h"), at most 24h.
 * Returns 0, -EINVAL after writing into err (errlen bytes) one sentence naming the field, what
 * is wrong and what is allowed ("before: '5 min' is not a duration; ..."), or -ENOMEM. *m is
 * written only on success. */
int marks__parse_mark(const char *body, size_t len, int64_t now_unix_ns, struct spike_mark *m,
		      char *err, size_t errlen);

/* Parses an Alertmanager webhook delivery, payload version "4" (Alertmanager's
 * notify/webhook Message: version, groupKey, truncatedAlerts, status, receiver, groupLabels,
 * commonLabels, commonAnnotations, externalURL, alerts[]), into *alerts, a malloc'd array of *n
 * entries (NULL when *n is 0) that the caller frees. Per alert: status "firing" or "resolved",
 * startsAt (RFC 3339) and fingerprint (1-64 of [A-Za-z0-9._-]) are required; endsAt is RFC 3339
 * or the zero time (0001-01-01T00:00:00Z, stored as 0), and a resolved alert needs a real one;
 * stage is labels.stage (a valid stage name, else an error), else labels.service when it is a
 * valid stage name, else ""; reason is labels.alertname, ": ", annotations.summary (either alone
 * when the other is absent) cut at a character boundary; group_key is groupKey cut the same way.
 * Other keys, top level or per alert, are ignored: Alertmanager adds fields within version 4,
 * and Grafana sends more. At most MARKS_MAX_ALERTS alerts (Alertmanager's webhook_config
 * max_alerts cuts a delivery to that).
 * Returns 0, -EINVAL after writing into err one sentence naming the field
 * ("alerts[2].startsAt: '...' is not an RFC 3339 time; ..."), or -ENOMEM. Nothing is returned
 * in *alerts on error. */
int marks__parse_alerts(const char *body, size_t len, struct spike_alert **alerts, size_t *n,
			char *err, size_t errlen);

/* A token bucket of burst tokens refilled at rate_per_min, kept as the generic cell rate
 * algorithm (one theoretical arrival time; integer nanoseconds, no drift). */
struct marks_bucket {
	uint64_t interval_ns;  /* between two tokens */
	uint64_t tolerance_ns; /* (burst - 1) x interval_ns */
	uint64_t tat_ns;       /* theoretical arrival time, monotonic ns */
};

/* Sets up b full: rate_per_min tokens a minute (0: MARKS_DEFAULT_RATE), burst at most at once
 * (0: MARKS_DEFAULT_BURST). */
void marks__bucket_init(struct marks_bucket *b, uint32_t rate_per_min, uint32_t burst);
/* Takes one token at now_ns (a monotonic clock). Returns 0 when taken, else the whole seconds
 * (>= 1) until one is there, for a Retry-After header; a refused request takes nothing. */
uint32_t marks__bucket_take(struct marks_bucket *b, uint64_t now_ns);

#endif
