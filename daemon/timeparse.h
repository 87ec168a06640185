/* SPDX-License-Identifier: GPL-2.0-only */
/* Durations, times, integers and sizes as flags, config and queries write them (see
 * docs/api.md's conventions). */
#ifndef TAILPROF_TIMEPARSE_H
#define TAILPROF_TIMEPARSE_H

#include <stddef.h>
#include <stdint.h>

#define NSEC_PER_USEC 1000ULL
#define NSEC_PER_MSEC 1000000ULL
#define NSEC_PER_SEC  1000000000ULL

/* Parses a duration: one or more <integer><unit> groups, unit one of ns, us, ms, s, m, h
 * ("500ms", "2s", "10m", "1h", "1h30m"). Returns 0 and *ns, or -EINVAL (empty, no unit, unknown
 * unit, zero is allowed) or -ERANGE (over ~292 years). */
int tp_parse_duration(const char *s, uint64_t *ns);

/* Parses a decimal integer of digits only (no sign, no spaces) within [min, max] into *out.
 * Returns 0, -EINVAL (not digits), or -ERANGE. Shared by flags and query parameters. */
int tp_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/* Parses a decimal number: digits, a point, a sign and an exponent only ("2", "2.5", "5e-4"; not
 * strtod's hex floats, "inf" or "nan"), the whole string, finite, into *out. Returns 0 or
 * -EINVAL. Shared by the configuration and query parameters; callers check the range. */
int tp_parse_decimal(const char *s, double *out);

/* Parses a size in bytes: a decimal integer (digits only) with an optional suffix K, M or G
 * (either case; KiB, MiB, GiB: 2^10, 2^20, 2^30) within [min, max] into *out ("4096", "64K",
 * "256M", "1g"). Returns 0, -EINVAL (not of that form) or -ERANGE. Shared by flags and the
 * configuration. */
int tp_parse_size(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/* Times are Unix nanoseconds in an int64_t: from 1970 to 2262-04-11. */
#define TP_MAX_UNIX_SECONDS 9223372036LL

/* Parses a point in time: RFC 3339 ("2026-11-29T21:04:05Z", "...05.250+01:00") or Unix seconds
 * with an optional fraction ("1764450245", "1764450245.5"). Returns 0 and *unix_ns, -EINVAL
 * when it is neither, or -ERANGE for times before 1970 or after 2262-04-11. */
int tp_parse_time(const char *s, int64_t *unix_ns);

/* Formats unix_ns as RFC 3339 UTC with millisecond precision ("2026-11-29T21:04:05.250Z").
 * buf needs 32 bytes. Returns buf. */
char *tp_format_rfc3339(int64_t unix_ns, char *buf, size_t len);

/* Formats a duration the way Go prints one, rounded to ms ("1h2m3s", "5m0s", "1.5s", "250ms").
 * buf needs 32 bytes. Returns buf. */
char *tp_format_duration(uint64_t ns, char *buf, size_t len);

#endif
