/* SPDX-License-Identifier: GPL-2.0-only */
/* systemd's service notifications (Type=notify): READY=1 once the probes are attached and the
 * first drain is done, STATUS= with samples and windows, WATCHDOG=1 while drains go on. Only
 * under systemd (NOTIFY_SOCKET set) and when built with libsystemd; otherwise nothing. */
#ifndef TAILPROF_NOTIFY_H
#define TAILPROF_NOTIFY_H

struct collector;
struct notify;

/* Starts the notifier's thread when NOTIFY_SOCKET is set; NULL otherwise (or on failure, which
 * is logged: systemd then times the start-up out). cpus and hz go into the status line. */
struct notify *notify__start(struct collector *coll, int cpus, unsigned int hz);
/* Sends STOPPING=1 and joins the thread. NULL allowed. */
void notify__stop(struct notify *n);

#endif
