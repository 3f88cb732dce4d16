"""Interned op markers (docs/formats.md §1.1, interned form): each distinct marker is registered
once and every call pushes its handle, with the op id as the NVTX payload and seq + 1 as the
category.

The oracle is the same program recorded with PYPROF_MARKERS=text, where every call sends its
full marker: parse must produce the same records from both databases (timings aside), and the
independent sqlite reading (pyprof_db) must find the same markers in both.
"""

import os
import sqlite3

import pytest

import pyprof_db
import testlib

pytestmark = pytest.mark.needs_build

TRAIN = os.path.join(testlib.ROOT, "examples", "train.py")
# What differs between two runs of one program: times and process/thread ids.
RUN_SPECIFIC = {"start", "duration", "self_duration", "end", "launch", "pid", "tid"}


def record_and_parse(tmp_path, mode, script, *args):
    out = tmp_path / mode
    out.mkdir()
    # One intra-op thread: with several, which thread runs an op inside a parallel region (a
    # kernel's per-thread scratch tensors, SDPA's backward) depends on timing, and the two
    # runs' records then differ for a reason that has nothing to do with the marker form.
    res = pyprof_db.profile(out, script, *args,
                            env={"PYPROF_MARKERS": mode, "OMP_NUM_THREADS": "1"})
    assert res.returncode == 0, res.stderr
    db = out / "net.sqlite"
    testlib.parse_to(db, out / "net.dict")
    header, records = testlib.read_dict(out / "net.dict")
    return db, header, [{k: v for k, v in r.items() if k not in RUN_SPECIFIC} for r in records]


def both_modes(tmp_path, script, *args):
    return (record_and_parse(tmp_path, "interned", script, *args),
            record_and_parse(tmp_path, "text", script, *args))


def assert_same_records(interned, text):
    """Equal record lists; on a difference, name the first differing record and its keys
    instead of printing thousands of records."""
    if interned == text:
        return
    for i, (a, b) in enumerate(zip(interned, text)):
        if a != b:
            keys = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
            pytest.fail(f"record {i} differs in {keys}:\n  interned {a}\n  text     {b}\n"
                        f"  before   {interned[max(0, i - 2):i]}")
    pytest.fail(f"{len(interned)} interned records against {len(text)} text records; the "
                f"first extra: {(interned + text)[min(len(interned), len(text))]}")


def assert_same_markers(db_interned, db_text):
    """The sqlite oracle: the interned database, its ids and seqs taken from payload and
    category, holds exactly the text database's markers (only the version differs)."""
    def markers(db):
        return [dict(r.marker, v=None) for r in pyprof_db.read_ranges(str(db))
                if r.marker is not None]
    interned, text = markers(db_interned), markers(db_text)
    assert len(interned) == len(text)
    assert_same_records(interned, text)


def registered_and_payloads(db):
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return con.execute("SELECT count(textId), count(text), count(uint64Value), "
                           "(SELECT count(*) FROM StringIds) FROM NVTX_EVENTS "
                           "WHERE eventType = 59 AND domainId != 0").fetchone()  # pyprof's
    finally:
        con.close()


@pytest.mark.parametrize("model", testlib.all_but_one_slow(
    ["resnet_block", "lenet", "transformer", "lstm", "mlp"], "resnet_block"))
def test_parse_output_identical_to_text_markers(tmp_path, model):
    (db_i, header_i, interned), (db_t, header_t, text) = both_modes(
        tmp_path, TRAIN, "--model", model, "--steps", "3", "--batch", "4")
    assert header_i["records"] == header_t["records"] == "op"
    assert header_i["iterations"]["count"] == header_t["iterations"]["count"] == 3
    assert len(interned) > 100
    assert_same_records(interned, text)
    assert any(r.get("paired") for r in interned)  # backward pairing used payload seqs
    assert_same_markers(db_i, db_t)
    # Every op range went by handle, each distinct marker registered once; a training loop
    # repeats its markers, so there are far fewer strings than ranges.
    with_id, with_text, with_payload, strings = registered_and_payloads(db_i)
    assert with_text == 0 and with_payload > 0 and with_id >= with_payload
    assert strings * 2 < with_id, (strings, with_id)
    assert os.path.getsize(db_i) < os.path.getsize(db_t)


def test_every_kind_of_argument_keeps_its_marker(tmp_path):
    """Ints vs bools vs floats of one value, lists vs tuples, strides, dtypes, strings, None,
    complex, non-finite and opaque arguments, shapes that never repeat: no two different
    markers may share a handle."""
    script = testlib.script("varied_args.py")
    (db_i, _, interned), (db_t, _, text) = both_modes(tmp_path, script)
    assert_same_records(interned, text)
    assert_same_markers(db_i, db_t)
    ops = [r.marker for r in pyprof_db.ops(pyprof_db.read_ranges(str(db_i)))]
    fills = {repr(m["args"]["fill_value"]) for m in ops if m["op"] == "aten::full"}
    # (An integral float is written like an int, "1", in both forms: JSON numbers.)
    assert {"1", "True", "1.5"} <= fills, fills


def test_bad_markers_setting_is_an_error(tmp_path):
    res = pyprof_db.profile(tmp_path, TRAIN, "--steps", "1", env={"PYPROF_MARKERS": "json"})
    assert res.returncode != 0
    assert "PYPROF_MARKERS='json'" in res.stderr and "interned" in res.stderr, res.stderr
