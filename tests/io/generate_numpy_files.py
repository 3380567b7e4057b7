#!/usr/bin/python3
"""Writes the NumPy files that tests/io/test_numpy_files.cpp loads, and their expected values.

Run from anywhere with plain numpy (Debian's python3-numpy):  /usr/bin/python3 generate_numpy_files.py
It rewrites tests/io/data/: the .npy and .npz files numpy wrote, and expected_values.inc, the
values each supported array holds as xfunc loads it (C order, widened per the documented rule),
which the test #includes. Commit the results; rerunning gives the same bytes, except the zip
timestamps inside the .npz files.
"""
import io
import math
import os
import shutil
import zipfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")

# numpy dtype (kind, itemsize) -> the xfunc dtype load_npy widens it to (see docs/interchange.md)
XF_DTYPE = {
    ("b", 1): "xf::b8",
    ("i", 1): "xf::i64", ("i", 2): "xf::i64", ("i", 4): "xf::i64", ("i", 8): "xf::i64",
    ("u", 1): "xf::i64", ("u", 2): "xf::i64", ("u", 4): "xf::i64", ("u", 8): "xf::i64",
    ("f", 2): "xf::f32", ("f", 4): "xf::f32", ("f", 8): "xf::f64",
}

cases = []  # (file, member, array) for expected_values.inc


def sample(dtype, n):
    """n values of dtype covering its extremes (integers) or specials (floats)."""
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return np.arange(n) % 3 == 0
    if dt.kind in "iu":
        info = np.iinfo(dt)
        base = [info.min, info.max, 0, 1, info.max - 1, info.min // 2 + 7]
        if dt.kind == "i":
            base += [-1, -2]
        vals = (base * n)[:n]
        return np.array(vals, dtype=dt)
    info = np.finfo(dt)
    base = [0.0, -0.0, 1.5, -2.25, float(info.max), float(info.tiny), float(info.smallest_subnormal),
            math.inf, -math.inf, math.nan, 1.0 / 3.0]
    return np.array((base * n)[:n], dtype=dt)


def save(name, a, fortran=False, version=None):
    """np.save (or format.write_array for an explicit header version) into data/name."""
    path = os.path.join(DATA, name)
    with open(path, "wb") as f:
        np.lib.format.write_array(f, np.asfortranarray(a) if fortran else a, version=version)
    # check what numpy reads back
    b = np.load(path)
    assert b.dtype == a.dtype and b.shape == a.shape and (b.tobytes() == a.tobytes())
    if fortran and a.ndim > 1 and a.size > 1:  # (numpy writes an empty array in C order)
        assert b.flags.f_contiguous and not b.flags.c_contiguous
    return path


def supported(name, a, **kw):
    save(name, a, **kw)
    cases.append((name, "", a))


def raw_npy(name, header_dict_text, data, pad_to=64):
    """A version 1.0 .npy file with a header written by hand (numpy only writes sorted keys)."""
    h = header_dict_text.encode("latin1")
    total = 10 + len(h) + 1
    h += b" " * ((-total) % pad_to) + b"\n"
    with open(os.path.join(DATA, name), "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + len(h).to_bytes(2, "little") + h + data)


def main():
    shutil.rmtree(DATA, ignore_errors=True)
    os.makedirs(DATA)

    # every numeric dtype numpy writes that load_npy reads, little endian, C order
    for dt in ["?", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "f2", "f4", "f8"]:
        d = np.dtype(dt).newbyteorder("<") if np.dtype(dt).itemsize > 1 else np.dtype(dt)
        supported(f"{d.kind}{d.itemsize}.npy", sample(d, 12).reshape(3, 4))
    # uint64 whose values fit int64 loads; one that does not is an error (below)
    supported("u8_fits.npy", np.array([0, 1, 2**62, 2**63 - 1], dtype="<u8"))
    # big endian, one per element size and kind
    for dt in [">i2", ">u4", ">i8", ">f2", ">f4", ">f8"]:
        d = np.dtype(dt)
        supported(f"be_{d.kind}{d.itemsize}.npy", sample(d, 6).reshape(2, 3))
    # Fortran order (also big endian, and 3-d)
    supported("fortran_f8.npy", np.arange(24, dtype="<f8").reshape(2, 3, 4) * 0.5 - 3, fortran=True)
    supported("fortran_be_i4.npy", sample(">i4", 12).reshape(3, 4), fortran=True)
    supported("fortran_bool.npy", sample("?", 6).reshape(3, 2), fortran=True)
    # 0-d and empty arrays
    supported("scalar_f8.npy", np.array(2.5, dtype="<f8"))
    supported("scalar_bool.npy", np.array(True))
    supported("scalar_be_i2.npy", np.array(-300, dtype=">i2"))
    supported("empty_f4.npy", np.zeros((0, 3), dtype="<f4"))
    supported("empty_i8.npy", np.zeros((2, 0, 3), dtype="<i8"))
    # header format versions 2.0 and 3.0 (4-byte header length; 3.0 allows utf-8)
    supported("version2_i4.npy", np.arange(5, dtype="<i4") - 2, version=(2, 0))
    supported("version3_f4.npy", np.arange(4, dtype="<f4") / 4, version=(3, 0))
    # a hand-written header: keys out of order, double quotes, a header longer than 127 bytes
    # (its 2-byte length has the high bit set in its low byte)
    a = np.arange(6, dtype="<i8").reshape(2, 3) * 11 - 20
    raw_npy("handmade_header.npy",
            '{"shape": (2, 3), "fortran_order": False, "descr": "<i8"' + " " * 120 + "}",
            a.tobytes(), pad_to=64)
    assert np.array_equal(np.load(os.path.join(DATA, "handmade_header.npy")), a)
    cases.append(("handmade_header.npy", "", a))

    # unsupported dtypes: each must fail with a clear message
    save("unsupported_complex64.npy", np.array([1 + 2j, 3 - 4j], dtype="<c8"))
    save("unsupported_u8_too_big.npy", np.array([1, 2**63, 2], dtype="<u8"))
    save("unsupported_unicode.npy", np.array(["ab", "c"], dtype="<U2"))
    save("unsupported_bytes.npy", np.array([b"ab", b"c"], dtype="|S2"))
    save("unsupported_structured.npy", np.zeros(2, dtype=[("a", "<i4"), ("b", "<f8")]))
    save("unsupported_datetime.npy", np.array(["2024-01-02"], dtype="<M8[D]"))
    save("unsupported_longdouble.npy", np.zeros(2, dtype=np.longdouble))
    with open(os.path.join(DATA, "unsupported_object.npy"), "wb") as f:
        np.save(f, np.array([1, "x"], dtype=object), allow_pickle=True)
    save("unsupported_17_dims.npy", np.zeros((1,) * 17, dtype="<f4"))

    # .npz: np.savez (stored) and np.savez_compressed (deflated) of the same arrays
    arrays = {
        "weights": np.arange(6, dtype="<f4").reshape(2, 3) / 8,
        "counts": sample("<u2", 5),
        "mask": np.array(False),
        "f_order": np.asfortranarray(np.arange(6, dtype=">f8").reshape(3, 2) - 2.5),
    }
    for name, fn in [("savez.npz", np.savez), ("savez_compressed.npz", np.savez_compressed)]:
        path = os.path.join(DATA, name)
        fn(path, **arrays)
        with np.load(path) as z:
            assert sorted(z.files) == sorted(arrays)
        with zipfile.ZipFile(path) as z:
            want = zipfile.ZIP_DEFLATED if "compressed" in name else zipfile.ZIP_STORED
            assert all(i.compress_type == want for i in z.infolist())
        for k, v in arrays.items():
            cases.append((name, k, v))

    # a zip whose second member is not a .npy array; one with two members of the same key; one
    # whose member is cut short; and one whose stored bytes were changed after writing (CRC)
    with zipfile.ZipFile(os.path.join(DATA, "member_not_npy.npz"), "w") as z:
        buf = io.BytesIO()
        np.save(buf, np.arange(3, dtype="<i8"))
        z.writestr("good.npy", buf.getvalue())
        z.writestr("notes.npy", b"these are notes, not an array\n")
    with zipfile.ZipFile(os.path.join(DATA, "duplicate_key.npz"), "w") as z:  # both are key "a"
        buf = io.BytesIO()
        np.save(buf, np.zeros(1, dtype="<f4"))
        z.writestr("a.npy", buf.getvalue())
        z.writestr("a", buf.getvalue())
    with zipfile.ZipFile(os.path.join(DATA, "member_truncated.npz"), "w") as z:
        buf = io.BytesIO()
        np.save(buf, np.arange(8, dtype="<f8"))
        z.writestr("cut.npy", buf.getvalue()[:-5])
    path = os.path.join(DATA, "bad_crc.npz")
    np.savez(path, x=np.arange(16, dtype="<i8"))
    raw = bytearray(open(path, "rb").read())
    at = raw.find(np.arange(16, dtype="<i8").tobytes())
    assert at > 0
    raw[at + 8] ^= 0x01  # element 1 becomes 0: still a valid .npy, only the CRC tells
    open(path, "wb").write(bytes(raw))

    write_expected()
    total = sum(os.path.getsize(os.path.join(DATA, f)) for f in os.listdir(DATA))
    print(f"wrote {len(os.listdir(DATA))} files, {total} bytes, to {DATA}")


def cxx_float(x):
    if math.isnan(x):
        return "XFUNC_TEST_NAN"
    if math.isinf(x):
        return "XFUNC_TEST_INF" if x > 0 else "-XFUNC_TEST_INF"
    m, e = float(x).hex().split("p")
    return (m.rstrip("0").rstrip(".") if "." in m else m) + "p" + e  # exact: a C++ hex float literal


def cxx_int(v):
    # -2**63 is no C++ literal (2**63 does not fit an int64 before the minus applies)
    return "-9223372036854775807 - 1" if v == -2**63 else str(v)


def write_expected():
    lines = [
        "// Generated by tests/io/generate_numpy_files.py: do not edit. The values numpy saved in each",
        "// supported array, in C order, as xf::load_npy / xf::load_npz return them:",
        "// {file, npz member (\"\" for a .npy file), dtype, shape, int64 or bool values, float values}",
    ]
    for file, member, a in cases:
        dt = XF_DTYPE[(a.dtype.kind, a.dtype.itemsize)]
        flat = np.ascontiguousarray(a).reshape(-1)
        shape = ", ".join(str(s) for s in a.shape)
        if a.dtype.kind in "biu":
            ints = ", ".join(cxx_int(int(v)) for v in flat)
            floats = ""
        else:
            ints = ""
            floats = ", ".join(cxx_float(float(v)) for v in flat)
        lines.append(f'{{"{file}", "{member}", {dt}, {{{shape}}}, {{{ints}}}, {{{floats}}}}},')
    with open(os.path.join(DATA, "expected_values.inc"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
