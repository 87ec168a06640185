// SPDX-License-Identifier: GPL-2.0-only
/* libFuzzer target: the pprof decoder of tailprof compare --before-profile/--after-profile
 * (cli/profile_diff.c: a file read whole, gunzip'd when it is gzip, decoded as profile.proto,
 * summed by leaf function and printed). The input is one profile file, compared with itself and
 * with a small valid profile, printed as JSON and as a table (stdout goes to /dev/null, and the
 * CLI's error messages are formatted and dropped: the link wraps p_err). */
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FUZZ_OWN_INITIALIZE
#include "fuzz.h"
#include "profile_diff.h"

/* The link passes -Wl,--wrap=p_err: the CLI's messages land here, formatted (their format
 * arguments are checked, as printing them would) and dropped. */
void __wrap_p_err(const char *fmt, ...);
void __wrap_p_err(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
}

/* A valid gzip'd-or-not pprof profile to compare with: one sample type, two functions. The bytes
 * of profile.proto: sample_type {type: 1, unit: 2}, sample {location_id: 1, value: 5}, sample
 * {location_id: 2, value: 3}, location {id 1, line {function_id 1}}, location {id 2, line
 * {function_id 2}}, function {id 1, name 3}, function {id 2, name 4}, string_table "",
 * "samples", "count", "f", "g". */
static const uint8_t other[] = {
    0x0a, 0x04, 0x08, 0x01, 0x10, 0x02,		    /* sample_type */
    0x12, 0x04, 0x08, 0x01, 0x10, 0x05,		    /* sample */
    0x12, 0x04, 0x08, 0x02, 0x10, 0x03,		    /* sample */
    0x22, 0x06, 0x08, 0x01, 0x22, 0x02, 0x08, 0x01, /* location 1 */
    0x22, 0x06, 0x08, 0x02, 0x22, 0x02, 0x08, 0x02, /* location 2 */
    0x2a, 0x04, 0x08, 0x01, 0x10, 0x03,		    /* function 1 */
    0x2a, 0x04, 0x08, 0x02, 0x10, 0x04,		    /* function 2 */
    0x32, 0x00,					    /* "" */
    0x32, 0x07, 's',  'a',  'm',  'p',	'l',  'e',  's',  0x32, 0x05,
    'c',  'o',	'u',  'n',  't',  0x32, 0x01, 'f',  0x32, 0x01, 'g',
};

static char input_path[64], other_path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

	(void)argc;
	(void)argv;
	fuzz_quiet();
	if (null < 0 || dup2(null, STDOUT_FILENO) < 0) {
		perror("/dev/null");
		abort();
	}
	close(null);
	fuzz_fd_path(fuzz_file(1, other, sizeof(other)), other_path, sizeof(other_path));
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int rc;

	fuzz_fd_path(fuzz_file(0, data, size), input_path, sizeof(input_path));
	rc = profile_diff(input_path, input_path, 20, true);
	FUZZ_CHECK(rc == 0 || rc == 1);
	if (rc == 0) {
		/* a profile that reads: against another one, both ways, and as a table */
		FUZZ_CHECK(profile_diff(input_path, other_path, 5, false) == 0);
		FUZZ_CHECK(profile_diff(other_path, input_path, 5, true) == 0);
	}
	fflush(stdout);
	return 0;
}
