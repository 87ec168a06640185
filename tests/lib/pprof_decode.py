# SPDX-License-Identifier: GPL-2.0-only
"""A small decoder of gzip'd pprof profiles (profile.proto wire format), for tests and
benchmarks: no protobuf package needed. Returns plain dicts and lists."""
import gzip


def _varint(buf, i):
    shift = result = 0
    while True:
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, i
        shift += 7


def _fields(buf):
    """Yields (field number, wire type, value) of one message."""
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _varint(buf, i)
        elif wt == 2:
            n, i = _varint(buf, i)
            v = buf[i:i + n]
            i += n
        elif wt == 1:
            v = int.from_bytes(buf[i:i + 8], "little")
            i += 8
        elif wt == 5:
            v = int.from_bytes(buf[i:i + 4], "little")
            i += 4
        else:
            raise ValueError("bad wire type %d" % wt)
        yield num, wt, v


def _signed(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def _repeated_ints(wt, v, out, signed=False):
    if wt == 2:  # packed
        i = 0
        while i < len(v):
            x, i = _varint(v, i)
            out.append(_signed(x) if signed else x)
    else:
        out.append(_signed(v) if signed else v)


def _message(buf, schema):
    """schema: {field: (name, kind)} with kind in int, sint, str, bytes, bool, [int], [sint],
    or a nested schema dict / [dict] for messages."""
    out = {}
    for name, kind in schema.values():
        out[name] = [] if isinstance(kind, list) else None
    for num, wt, v in _fields(buf):
        if num not in schema:
            continue
        name, kind = schema[num]
        if isinstance(kind, list):
            k = kind[0]
            if isinstance(k, dict):
                out[name].append(_message(v, k))
            elif k == "str":
                out[name].append(v.decode())
            else:
                _repeated_ints(wt, v, out[name], signed=(k == "sint"))
        elif isinstance(kind, dict):
            out[name] = _message(v, kind)
        elif kind == "sint":
            out[name] = _signed(v)
        elif kind == "bool":
            out[name] = bool(v)
        else:
            out[name] = v
    for name, kind in schema.values():
        if out[name] is None:
            out[name] = {} if isinstance(kind, dict) else (False if kind == "bool" else 0)
    return out


VALUE_TYPE = {1: ("type", "sint"), 2: ("unit", "sint")}
LABEL = {1: ("key", "sint"), 2: ("str", "sint"), 3: ("num", "sint"), 4: ("num_unit", "sint")}
SAMPLE = {1: ("location_id", ["int"]), 2: ("value", ["sint"]), 3: ("label", [LABEL])}
MAPPING = {1: ("id", "int"), 2: ("memory_start", "int"), 3: ("memory_limit", "int"),
           4: ("file_offset", "int"), 5: ("filename", "sint"), 6: ("build_id", "sint"),
           7: ("has_functions", "bool"), 8: ("has_filenames", "bool"),
           9: ("has_line_numbers", "bool"), 10: ("has_inline_frames", "bool")}
LINE = {1: ("function_id", "int"), 2: ("line", "sint")}
LOCATION = {1: ("id", "int"), 2: ("mapping_id", "int"), 3: ("address", "int"),
            4: ("line", [LINE])}
FUNCTION = {1: ("id", "int"), 2: ("name", "sint"), 3: ("system_name", "sint"),
            4: ("filename", "sint"), 5: ("start_line", "sint")}
PROFILE = {1: ("sample_type", [VALUE_TYPE]), 2: ("sample", [SAMPLE]), 3: ("mapping", [MAPPING]),
           4: ("location", [LOCATION]), 5: ("function", [FUNCTION]), 6: ("string_table", ["str"]),
           9: ("time_nanos", "sint"), 10: ("duration_nanos", "sint"),
           11: ("period_type", VALUE_TYPE), 12: ("period", "sint"), 13: ("comment", ["sint"]),
           14: ("default_sample_type", "sint")}


class Profile:
    """A decoded profile with resolved names: samples as dicts with 'values', 'labels' and
    'frames' (leaf first; each frame a dict with function, mapping file, address). A frame's
    'function', 'system_name', 'file' and 'line' are those of its location's last Line (the
    out-of-line function the address is in: its symbol); 'lines' lists all of them as pprof has
    them, the functions inlined there first (innermost first), each a dict with function,
    system_name, file, line and start_line. mapping_order: the mappings' files in profile
    order (pprof takes the first for the main binary)."""

    def __init__(self, data):
        raw = _message(gzip.decompress(data), PROFILE)
        self.raw = raw
        st = raw["string_table"]
        self.strings = st
        self.sample_types = [(st[v["type"]], st[v["unit"]]) for v in raw["sample_type"]]
        self.period = raw["period"]
        self.period_type = (st[raw["period_type"]["type"]], st[raw["period_type"]["unit"]]) \
            if raw["period_type"] else None
        self.time_nanos = raw["time_nanos"]
        self.duration_nanos = raw["duration_nanos"]
        self.comments = [st[i] for i in raw["comment"]]
        self.mappings = {m["id"]: dict(m, filename=st[m["filename"]], build_id=st[m["build_id"]])
                         for m in raw["mapping"]}
        self.functions = {f["id"]: dict(f, name=st[f["name"]], system_name=st[f["system_name"]],
                                        filename=st[f["filename"]])
                          for f in raw["function"]}
        self.mapping_order = [st[m["filename"]] for m in raw["mapping"]]
        self.locations = {}
        for loc in raw["location"]:
            lines = []
            for ln in loc["line"]:
                f = self.functions[ln["function_id"]]
                lines.append({"function": f["name"], "system_name": f["system_name"],
                              "file": f["filename"], "line": ln["line"],
                              "start_line": f["start_line"]})
            last = lines[-1] if lines else None
            m = self.mappings.get(loc["mapping_id"])
            self.locations[loc["id"]] = {"function": last["function"] if last else None,
                                         "system_name": last["system_name"] if last else None,
                                         "file": last["file"] if last else None,
                                         "line": last["line"] if last else 0,
                                         "lines": lines,
                                         "address": loc["address"],
                                         "mapping": m["filename"] if m else None,
                                         "build_id": m["build_id"] if m else None,
                                         "mapping_id": loc["mapping_id"],
                                         "start_line": last["start_line"] if last else 0}
        self.samples = []
        for s in raw["sample"]:
            self.samples.append({
                "values": s["value"],
                "labels": {st[lb["key"]]: st[lb["str"]] for lb in s["label"]},
                "frames": [self.locations[i] for i in s["location_id"]],
            })

    def total(self, index=0):
        return sum(s["values"][index] for s in self.samples)
