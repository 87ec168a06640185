/* SPDX-License-Identifier: MIT */
/* tailprof stage markers for applications: USDT probes that tailprofd times as stages.
 *
 *   #include <tailprof/stage.h>
 *   TAILPROF_STAGE_BEGIN("compute", request_id);
 *   ... the stage's work ...
 *   TAILPROF_STAGE_END("compute", request_id);
 *
 * name: a string (at most 31 bytes are read) naming the stage; request_id: an integer carried
 * by slow spans. Stages nest (up to 8 deep) and may recurse; an END closes the innermost BEGIN
 * of the same name. The probes are USDT probes of provider "tailprof" (tailprof:stage__begin,
 * tailprof:stage__end), guarded by a semaphore: when no tailprofd watches the binary, each
 * marker costs one load and a not-taken branch. Attach them with a section
 *   [usdt-app NAME]
 *   binary = /path/to/the/binary
 * in tailprofd's configuration. Needs <sys/sdt.h> (Debian: systemtap-sdt-dev). */
#ifndef TAILPROF_STAGE_H
#define TAILPROF_STAGE_H

#if defined(_SYS_SDT_H) && !defined(_SDT_HAS_SEMAPHORES)
#error "include <tailprof/stage.h> before <sys/sdt.h> (its probes need _SDT_HAS_SEMAPHORES)"
#endif
#ifndef _SDT_HAS_SEMAPHORES
#define _SDT_HAS_SEMAPHORES 1
#endif
#include <sys/sdt.h>

#ifdef __cplusplus
extern "C" {
#endif

__extension__ extern unsigned short tailprof_stage__begin_semaphore
    __attribute__((unused)) __attribute__((section(".probes")));
__extension__ extern unsigned short tailprof_stage__end_semaphore
    __attribute__((unused)) __attribute__((section(".probes")));

#ifdef __cplusplus
}
#endif

/* Define the semaphores in exactly one file of the program: #define TAILPROF_STAGE_DEFINE
 * before including this header there. */
#ifdef TAILPROF_STAGE_DEFINE
__extension__ unsigned short tailprof_stage__begin_semaphore
    __attribute__((unused)) __attribute__((section(".probes")));
__extension__ unsigned short tailprof_stage__end_semaphore
    __attribute__((unused)) __attribute__((section(".probes")));
#endif

/* The probe reads the name from the process's memory and cannot fault a page in: the markers
 * read the name's bytes first (only while tailprofd watches), so a string literal in a page the
 * program never touched otherwise is there when the probe fires. */
#define TAILPROF_STAGE_TOUCH_(n)                                                                   \
	do {                                                                                       \
		const volatile char *tp_p_ = (n);                                                  \
		for (int tp_i_ = 0; tp_i_ < 31 && tp_p_[tp_i_]; tp_i_++)                           \
			;                                                                          \
	} while (0)

#define TAILPROF_STAGE_BEGIN(name, request_id)                                                     \
	do {                                                                                       \
		if (__builtin_expect(tailprof_stage__begin_semaphore, 0)) {                        \
			const char *tp_name_ = (name);                                             \
			TAILPROF_STAGE_TOUCH_(tp_name_);                                           \
			DTRACE_PROBE2(tailprof, stage__begin, tp_name_,                            \
				      (unsigned long long)(request_id));                           \
		}                                                                                  \
	} while (0)

#define TAILPROF_STAGE_END(name, request_id)                                                       \
	do {                                                                                       \
		if (__builtin_expect(tailprof_stage__end_semaphore, 0)) {                          \
			const char *tp_name_ = (name);                                             \
			TAILPROF_STAGE_TOUCH_(tp_name_);                                           \
			DTRACE_PROBE2(tailprof, stage__end, tp_name_,                              \
				      (unsigned long long)(request_id));                           \
		}                                                                                  \
	} while (0)

#endif
