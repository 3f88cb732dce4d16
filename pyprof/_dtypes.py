"""The dtype table of csrc/common/dtypes.h for the Python front: (PyTorch name, bytes per
element, Inductor's FX annotation prefix), as `pyprof-prof --list-dtypes` prints it.

Generated: edit the C++ table, then `PYPROF_UPDATE_GOLDENS=1 python -m pytest
tests/test_dtypes.py` rewrites this file (the test fails while the two differ).
"""

DTYPES = (
    ("float32", 4, "f32"),
    ("float64", 8, "f64"),
    ("float16", 2, "f16"),
    ("bfloat16", 2, "bf16"),
    ("float8_e5m2", 1, "f8e5m2"),
    ("float8_e4m3fn", 1, "f8e4m3fn"),
    ("float8_e5m2fnuz", 1, "f8e5m2fnuz"),
    ("float8_e4m3fnuz", 1, "f8e4m3fnuz"),
    ("float8_e8m0fnu", 1, "f8e8m0fnu"),
    ("float4_e2m1fn_x2", 1, "f4e2m1fnx2"),
    ("uint8", 1, "u8"),
    ("int8", 1, "i8"),
    ("int16", 2, "i16"),
    ("int32", 4, "i32"),
    ("int64", 8, "i64"),
    ("uint16", 2, "u16"),
    ("uint32", 4, "u32"),
    ("uint64", 8, "u64"),
    ("bool", 1, "b8"),
    ("complex32", 4, "c32"),
    ("complex64", 8, "c64"),
    ("complex128", 16, "c128"),
    ("qint8", 1, ""),
    ("quint8", 1, ""),
    ("qint32", 4, ""),
    ("quint4x2", 1, ""),
    ("quint2x4", 1, ""),
    ("bits1x8", 0, "b1x8"),
    ("bits2x4", 0, "b2x4"),
    ("bits4x2", 0, "b4x2"),
    ("bits8", 0, "b8x1"),
    ("bits16", 0, "b16x1"),
    ("int1", 0, ""),
    ("int2", 0, ""),
    ("int3", 0, ""),
    ("int4", 0, ""),
    ("int5", 0, ""),
    ("int6", 0, ""),
    ("int7", 0, ""),
    ("uint1", 0, ""),
    ("uint2", 0, ""),
    ("uint3", 0, ""),
    ("uint4", 0, ""),
    ("uint5", 0, ""),
    ("uint6", 0, ""),
    ("uint7", 0, ""),
)
# Inductor's prefix -> PyTorch name ("f32" -> "float32").
BY_INDUCTOR = {inductor: name for name, _, inductor in DTYPES if inductor}
