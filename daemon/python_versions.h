/* SPDX-License-Identifier: GPL-2.0-only */
/* The CPython versions tailprofd reads: each one's structure offsets, for the BPF walker
 * (struct tp_py_offsets) and for user space's reads of code objects and strings, and the version
 * of an interpreter file by its name. */
#ifndef TAILPROF_PYTHON_VERSIONS_H
#define TAILPROF_PYTHON_VERSIONS_H

#include <stdbool.h>
#include <stdint.h>

#include "tailprof.h"

/* What user space reads of code objects and strings, per version (bytes, x86-64). */
struct py_user_offsets {
	uint16_t co_firstlineno, co_filename, co_qualname, co_linetable, co_firsttraceable;
	uint16_t ascii_size;   /* sizeof(PyASCIIObject): compact ASCII data follows */
	uint16_t compact_size; /* sizeof(PyCompactUnicodeObject): other compact data follows */
	uint16_t str_length;   /* PyASCIIObject.length */
	uint16_t str_state;    /* PyASCIIObject.state */
	uint16_t bytes_size;   /* PyVarObject.ob_size of a bytes object */
	uint16_t bytes_data;   /* PyBytesObject.ob_sval */
};

struct py_version {
	const char *name; /* "3.11": matched in file names python3.11, libpython3.11.so */
	struct tp_py_offsets bpf;
	struct py_user_offsets user;
	/* The owner value (_PyInterpreterFrame.owner) of the eval loop's own entry frame on the C
	 * stack (3.12 on: FRAME_OWNED_BY_CSTACK, in place of is_entry): such a frame is dropped
	 * and the frame inside it marked entry. PY_NO_OWNER: none (3.11's is_entry). */
	uint8_t cstack_owner;
};

#define PY_NO_OWNER 0xff

/* The supported versions, indexed by version id (py_offsets' key): py_versions[0 ..
 * py_nr_versions). */
extern const struct py_version py_versions[];
extern const uint32_t py_nr_versions;

/* The version whose name follows "python" in the file name at path (python3.11,
 * libpython3.11.so.1.0), or NULL; *named tells whether the name looked like a CPython at all. */
const struct py_version *py_version_of(const char *path, bool *named);

#endif
