# SPDX-License-Identifier: BSD-3-Clause
"""Checks the files HDF5CrossRanks.Write (tests/collectives/hdf5_test.cpp) wrote on 4 ranks, with
h5py: every dataset's NumPy dtype, shape, values, chunking/compression, Fletcher32 checksum and
attributes, and the file's attributes. The values are recomputed here from the same formula
(cross_value), so a file that h5py reads differently from what Skein meant to write fails. A copy
of each file with one byte changed inside a chunk of "u" must make h5py's read of "u" fail (the
checksum is HDF5's own, so any HDF5 reader checks it).

    python3 hdf5_check.py FILE...      exit 0: all good; 1: a mismatch (each one printed)
"""
import os
import shutil
import sys
import tempfile

import h5py
import numpy as np


def cross_value(row, col, salt):
    return float((row * 31 + col * 7 + salt * 13) % 251 - 125)


# name: (NumPy dtype h5py must give, shape, salt, deflate level or None, Skein dtype, Fletcher32)
# bfloat16 has no NumPy dtype: HDF5 converts it for h5py, which reads it as float32. "n" is
# written with WriteOptions::checksum = false (contiguous); "e" is empty (HDF5 cannot chunk it).
DATASETS = {
    "u": ("float64", (37, 5), 1, None, "float64", True),
    "c": ("complex64", (23,), 2, None, "complex64", True),
    "z": ("complex128", (6, 2), 3, None, "complex128", True),
    "h": ("float16", (11, 3), 4, None, "float16", True),
    "b": ("float32", (9,), 5, None, "bfloat16", True),
    "i": ("int16", (13, 2), 6, None, "int16", True),
    "n": ("uint64", (5,), 7, None, "uint64", False),
    "e": ("float32", (0, 3), 8, None, "float32", False),
    "one": ("int8", (1,), 9, None, "int8", True),
    "fields/p": ("float32", (101, 3), 10, 4, "float32", True),
}


def expected(shape, salt, dtype):
    rows = shape[0]
    cols = shape[1] if len(shape) > 1 else 1
    values = np.array([[cross_value(r, c, salt) for c in range(cols)] for r in range(rows)], dtype=np.float64)
    values = values.reshape(shape)
    if np.dtype(dtype).kind == "c":
        return (values - 2j * values).astype(dtype)
    return values.astype(dtype)


def check(path):
    problems = []
    with h5py.File(path, "r") as f:
        if f.attrs.get("skein_format_version") != 1:
            problems.append(f"skein_format_version is {f.attrs.get('skein_format_version')!r}")
        if not isinstance(f.attrs.get("skein_version"), str):
            problems.append(f"skein_version is {f.attrs.get('skein_version')!r}, not a string")
        if f.attrs.get("purpose") != "cross-rank test":
            problems.append(f"purpose is {f.attrs.get('purpose')!r}")
        for name, (dtype, shape, salt, level, skein_dtype, fletcher32) in DATASETS.items():
            d = f[name]
            where = f"{path}:{name}"
            if d.dtype != np.dtype(dtype):
                problems.append(f"{where}: h5py reads dtype {d.dtype}, expected {dtype}")
            if d.shape != shape:
                problems.append(f"{where}: shape {d.shape}, expected {shape}")
                continue
            got = d[()]
            want = expected(shape, salt, dtype)
            if not np.array_equal(got, want):
                bad = np.argwhere(got != want)
                problems.append(f"{where}: {len(bad)} values differ, first at {bad[0].tolist()}: "
                                f"{got[tuple(bad[0])]} instead of {want[tuple(bad[0])]}")
            if level is None:
                if d.compression is not None:
                    problems.append(f"{where}: compressed ({d.compression}) although no compression was asked for")
            elif d.compression != "gzip" or d.compression_opts != level or d.chunks is None:
                problems.append(f"{where}: compression {d.compression} {d.compression_opts}, chunks {d.chunks}; "
                                f"expected gzip {level}")
            if d.fletcher32 != fletcher32:
                problems.append(f"{where}: h5py sees fletcher32={d.fletcher32}, expected {fletcher32}")
            if fletcher32 and d.chunks is None:
                problems.append(f"{where}: has the Fletcher32 filter but is not chunked")
            if name == "n" and d.chunks is not None:
                problems.append(f"{where}: written without checksum, yet chunked {d.chunks} (expected contiguous)")
            a = d.attrs
            checks = {
                "skein_dtype": skein_dtype,
                "skein_step": 1000 + salt,
                "skein_time": 0.5 * salt,
                "salt": salt,
                "written_by_ranks": 4,
            }
            for key, value in checks.items():
                if a.get(key) != value:
                    problems.append(f"{where}: attribute {key} is {a.get(key)!r}, expected {value!r}")
            if list(a.get("skein_global_shape", [])) != list(shape):
                problems.append(f"{where}: skein_global_shape is {a.get('skein_global_shape')!r}")
            if "over 4 members on 4 ranks" not in a.get("skein_layout", ""):
                problems.append(f"{where}: skein_layout is {a.get('skein_layout')!r}")
            starts = list(a.get("skein_row_starts", []))
            if len(starts) != 5 or starts[0] != 0 or starts[-1] != shape[0]:
                problems.append(f"{where}: skein_row_starts is {starts!r}")
    return problems


def check_damage(path):
    """A copy of the file with one byte changed in the middle of the first chunk of "u"."""
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, "damaged.h5")
        shutil.copyfile(path, copy)
        with h5py.File(copy, "r") as f:
            info = f["u"].id.get_chunk_info_by_coord((0, 0))
        with open(copy, "r+b") as raw:
            raw.seek(info.byte_offset + info.size // 2)
            byte = raw.read(1)[0]
            raw.seek(info.byte_offset + info.size // 2)
            raw.write(bytes([byte ^ 0x5A]))
        with h5py.File(copy, "r") as f:
            try:
                f["u"][()]
                problems.append(f"{path}:u: a byte changed inside its chunk at {info.byte_offset}, yet h5py "
                                f"read it without an error")
            except OSError:
                pass
            # The other datasets are untouched and still read.
            if not np.array_equal(f["i"][()], expected((13, 2), 6, "int16")):
                problems.append(f"{path}:i changed in the damaged copy")
    return problems


def main():
    problems = []
    for path in sys.argv[1:]:
        problems += check(path)
        problems += check_damage(path)
    for p in problems:
        print("MISMATCH", p)
    print(f"h5py {h5py.version.version} (HDF5 {h5py.version.hdf5_version}) checked {len(sys.argv) - 1} file(s): "
          f"{'ok' if not problems else f'{len(problems)} problem(s)'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
