/* SPDX-License-Identifier: GPL-2.0-only */
/* tailprof compare --before-profile A --after-profile B: two pprof files compared without a
 * server, by each leaf function's share of the first sample type. */
#ifndef TAILPROF_CLI_PROFILE_DIFF_H
#define TAILPROF_CLI_PROFILE_DIFF_H

#include <stdbool.h>
#include <stddef.h>

/* The most a profile file may take, read or inflated (a gzip bomb stops here). */
#define MAX_PROFILE_BYTES (1ULL << 30)

/*
 * Reads the pprof files before and after (gzip-compressed or plain profile.proto, as
 * github.com/google/pprof's proto/profile.proto defines them), sums each one's first sample type
 * by leaf function (a sample's first location's first line: the innermost inlined function), and
 * prints the top functions whose share changed most, as a table or, with json, as
 * {"before_profile", "after_profile", "sample_type", "functions": [{"function", "before_share",
 * "after_share", "diff"}], "note"}. Returns 0, or 1 after printing which file failed and why
 * (missing, unreadable, not gzip or not pprof, truncated, over MAX_PROFILE_BYTES, no samples).
 */
int profile_diff(const char *before, const char *after, size_t top, bool json);

#endif
