/* SPDX-License-Identifier: GPL-2.0-only */
/* libbpf's messages: logged one level quieter than ours (debug, with -v), and what they say of a
 * failed load kept whatever the log level (the last lines of the verifier's log, else libbpf's
 * own last warnings), so that a capability turned off by a rejection says why without -v and
 * `tailprofd --check` can print the log. Safe from any thread. */
#ifndef TAILPROF_LIBBPF_LOG_H
#define TAILPROF_LIBBPF_LOG_H

#include <bpf/libbpf.h>

#include "feature_table.h"

/* Lines kept of a verifier log, and of libbpf's warnings. */
#define LIBBPF_LOG_LINES 20

/* Sends libbpf's messages here (libbpf_set_print). Call before the first libbpf call. */
void libbpf_log__install(void);
/* Keeps what a whole libbpf message (msg, as libbpf formatted it) says of a failed load: a
 * verifier log between its "-- BEGIN PROG LOAD LOG --" and "-- END PROG LOAD LOG --" lines
 * replaces the one kept; a warning joins the last ones. Other levels are ignored. The
 * installed print function calls it; tests call it directly. */
void libbpf_log__capture(enum libbpf_print_level level, const char *msg);
/* Forgets what libbpf said before: call before a load whose failure may need explaining. */
void libbpf_log__reset(void);
/* After a load of object (a skeleton name, e.g. "sched_bpf") failed with err (negative errno):
 * sets capability id off in f (NULL: nothing) with variant (what runs instead, "" for nothing)
 * and a reason naming the program and the verifier's last line that says what is wrong ("the
 * verifier rejected PROG: LINE; tailprofd --check prints more"; without a verifier log, libbpf's
 * last message that names a cause, else strerror(-err)), and records the failure with the last
 * LIBBPF_LOG_LINES lines kept since libbpf_log__reset(). */
void libbpf_log__load_failed(struct features *f, enum feature_id id, const char *variant,
			     const char *object, int err);

#endif
