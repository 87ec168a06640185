// SPDX-License-Identifier: GPL-2.0-only
/* The CPython versions tailprofd reads (python_versions.h). */
#include <string.h>

#include "python_versions.h"

/* The offset sets, indexed by version id (py_offsets' key). Derived with tests/tools/py_offsets.c
 * from the internal headers of CPython 3.11.7 and Debian's 3.11.2 (identical), 3.12.1 and 3.13.0
 * (pyenv builds). 3.12: no is_entry (entry frames are owner FRAME_OWNED_BY_CSTACK frames), str
 * objects without wstr (smaller headers). 3.13: also no cframe (tstate->current_frame),
 * f_executable for f_code, instr_ptr (the current instruction) for prev_instr. */
const struct py_version py_versions[] = {
    {
	.name = "3.11",
	.bpf =
	    {
		.runtime_interp_head = 40,
		.interp_next = 0,
		.interp_threads_head = 16,
		.tstate_next = 8,
		.tstate_native_tid = 160,
		.tstate_cframe = 56,
		.cframe_current_frame = 8,
		.frame_code = 32,
		.frame_previous = 48,
		.frame_prev_instr = 56,
		.frame_is_entry = 68,
		.frame_owner = 69,
		.code_adaptive = 184,
	    },
	.user =
	    {
		.co_firstlineno = 72,
		.co_filename = 112,
		.co_qualname = 128,
		.co_linetable = 136,
		.co_firsttraceable = 168,
		.ascii_size = 48,
		.compact_size = 72,
		.str_length = 16,
		.str_state = 32,
		.bytes_size = 16,
		.bytes_data = 32,
	    },
	.cstack_owner = PY_NO_OWNER,
    },
    {
	.name = "3.12",
	.bpf =
	    {
		.runtime_interp_head = 40,
		.interp_next = 0,
		.interp_threads_head = 72,
		.tstate_next = 8,
		.tstate_native_tid = 144,
		.tstate_cframe = 56,
		.cframe_current_frame = 0,
		.frame_code = 0,
		.frame_previous = 8,
		.frame_prev_instr = 56,
		.frame_is_entry = TP_PY_NO_OFFSET,
		.frame_owner = 70,
		.code_adaptive = 192,
	    },
	.user =
	    {
		.co_firstlineno = 68,
		.co_filename = 112,
		.co_qualname = 128,
		.co_linetable = 136,
		.co_firsttraceable = 176,
		.ascii_size = 40,
		.compact_size = 56,
		.str_length = 16,
		.str_state = 32,
		.bytes_size = 16,
		.bytes_data = 32,
	    },
	.cstack_owner = 3,
    },
    {
	.name = "3.13",
	.bpf =
	    {
		.runtime_interp_head = 632,
		.interp_next = 7264,
		.interp_threads_head = 7344,
		.tstate_next = 8,
		.tstate_native_tid = 160,
		.tstate_cframe = TP_PY_NO_OFFSET,
		.cframe_current_frame = 72, /* PyThreadState.current_frame */
		.frame_code = 0,	    /* f_executable */
		.frame_previous = 8,
		.frame_prev_instr = 56, /* instr_ptr */
		.frame_is_entry = TP_PY_NO_OFFSET,
		.frame_owner = 70,
		.code_adaptive = 200,
	    },
	.user =
	    {
		.co_firstlineno = 68,
		.co_filename = 112,
		.co_qualname = 128,
		.co_linetable = 136,
		.co_firsttraceable = 184,
		.ascii_size = 40,
		.compact_size = 56,
		.str_length = 16,
		.str_state = 32,
		.bytes_size = 16,
		.bytes_data = 32,
	    },
	.cstack_owner = 3,
    },
};
#define NR_VERSIONS (sizeof(py_versions) / sizeof(py_versions[0]))
const uint32_t py_nr_versions = NR_VERSIONS;
_Static_assert(NR_VERSIONS <= TP_PY_MAX_VERSIONS, "py_offsets too small");

const struct py_version *py_version_of(const char *path, bool *named)
{
	const char *name = strrchr(path, '/'), *s;
	char ver[16];
	size_t n = 0;

	name = name ? name + 1 : path;
	*named = false;
	if (!strncmp(name, "libpython", 9))
		s = name + 9;
	else if (!strncmp(name, "python", 6))
		s = name + 6;
	else
		return NULL;
	while (n + 1 < sizeof(ver) && ((s[n] >= '0' && s[n] <= '9') || s[n] == '.'))
		n++;
	/* "3.11" from "3.11.so.1.0" or "3.11": the major.minor part */
	memcpy(ver, s, n);
	ver[n] = 0;
	if (strncmp(ver, "3.", 2))
		return NULL;
	*named = true;
	/* ABI flags after the version (3.13t: free-threaded, other object headers; d: debug):
	 * other layouts than the table's */
	if (s[n] && (!n || s[n - 1] != '.'))
		return NULL;
	for (char *dot = strchr(ver + 2, '.'); dot; dot = NULL)
		*dot = 0;
	for (uint32_t i = 0; i < NR_VERSIONS; i++)
		if (!strcmp(ver, py_versions[i].name))
			return &py_versions[i];
	return NULL;
}
