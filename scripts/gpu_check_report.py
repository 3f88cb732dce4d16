#!/usr/bin/env python3
"""Turns what scripts/gpu-check.sh left in its output folder into the rows of
docs/gpu-validation.md's result tables, ready to paste.

    python scripts/gpu_check_report.py gpu-check-out

Reads facts.json and nvidia-smi.txt (the machine), tests.xml and tests.log (pytest -rP output of
tests/test_gpu_capture.py), overhead.log (benchmarks/gpu_overhead.py's table), report.log
(the report phase's "check NAME: ..." lines) and cuda12.xml and cuda12.log (pytest -rP output of
tests/test_gpu_cuda12.py: its "cuda12 RELEASE: ..." lines). A phase that did not run is said to be missing
rather than left blank.

Two helpers the report phase runs (their lines land in report.log):

    python scripts/gpu_check_report.py records A.dict B.dict
        records by kind in two net.dicts; exit 1 when they differ (the export round trip)
    python scripts/gpu_check_report.py peaks PEAKS.jsonl [MEASURED.json]
        from `pyprof prof --report peaks [--peaks MEASURED.json] --formats json`: which peaks each
        device got (datasheet, derived, none) and measured / datasheet per mode; exit 1 when the
        measured file's devices matched no device of the profile
"""

from __future__ import annotations

import collections
import datetime
import json
import os
import re
import sys
import xml.etree.ElementTree as ET


def read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def machine(out: str) -> tuple[str, str]:
    """('GPU, driver', 'torch, CUDA') for the table's first columns."""
    facts = {}
    try:
        facts = json.loads(read(os.path.join(out, "facts.json")) or "{}")
    except ValueError:
        pass
    smi = read(os.path.join(out, "nvidia-smi.txt")).strip().splitlines()
    parts = [p.strip() for p in smi[0].split(",")] if smi and "," in smi[0] else []
    gpu = parts[0] if parts else facts.get("gpu", "no GPU")
    driver = f", driver {parts[1]}" if len(parts) > 1 else ""
    torch = facts.get("torch", facts.get("torch_error", "torch ?"))
    return f"{gpu}{driver}", f"torch {torch}, CUDA {facts.get('cuda') or '-'}"


def test_result(out: str, junit: str = "tests.xml") -> str:
    """'9 passed, 1 failed (test_x)' from the JUnit file pytest wrote."""
    path = os.path.join(out, junit)
    if not os.path.exists(path):
        return "not run"
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as exc:
        return f"unreadable tests.xml ({exc})"
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    failed = []
    for case in root.iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            counts["failed"] += 1
            failed.append(case.get("name", "?"))
        elif case.find("skipped") is not None:
            counts["skipped"] += 1
        else:
            counts["passed"] += 1
    text = ", ".join(f"{n} {k}" for k, n in counts.items() if n or k == "passed")
    return text + (f" ({', '.join(failed)})" if failed else "")


def printed(log: str, pattern: str) -> str:
    """The per-model fractions the tests print (pytest -rP), joined per model."""
    found = [m.group(0).strip() for m in re.finditer(pattern, log, re.M)]
    return "; ".join(dict.fromkeys(found)) or "-"


# ---- the report phase's helpers -----------------------------------------------------------

def record_kinds(path: str) -> collections.Counter:
    """Records by kind in a net.dict (JSON Lines; the header line has no kind)."""
    kinds: collections.Counter = collections.Counter()
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                record = json.loads(line)
                if "pyprof_dict" not in record:
                    kinds[record.get("kind", "?")] += 1
    return kinds


# Lines the export draws but parse does not read back (docs/export.md): allocations and frees
# (docs/formats.md §3.2), drawn as counter tracks.
NOT_READ_BACK = ("memory",)


def records_check(original: str, reparsed: str) -> tuple[str, bool]:
    """'records by kind: ... : equal' for the export round trip, and whether they are (the kinds
    the export draws as counters, which parse does not read back, left out of the comparison,
    and said)."""
    a, b = record_kinds(original), record_kinds(reparsed)
    left_out = {kind: a.pop(kind) for kind in NOT_READ_BACK if kind in a}

    def spell(kinds):
        return ", ".join(f"{kind} {n}" for kind, n in sorted(kinds.items())) or "none"
    verdict = "equal" if a == b else "DIFFER"
    not_exported = (f" (exported as counter tracks, not read back: {spell(left_out)})"
                    if left_out else "")
    return (f"records by kind: parse --ranges of the database {spell(a)}; the export parsed back "
            f"{spell(b)}{not_exported}: {verdict}"), a == b


def si(value: float, unit: str) -> str:
    """3 significant digits with an SI prefix: 989 TFLOP/s, 3.35 TB/s."""
    for factor, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


SHEET_KINDS = ("datasheet", "derived", "override")


def peaks_check(jsonl: str, measured_file: str | None) -> tuple[list[str], bool]:
    """Lines 'check peaks: ...' (which peaks each device got) and 'check ratio: DEVICE | MODE |
    measured | datasheet | measured/datasheet' from prof's peaks report in JSON."""
    devices: dict[str, dict] = {}
    for line in read(jsonl).splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        if "columns" in row:  # the table's own line (docs/prof.md §3, "JSON"); rows follow
            continue
        device = devices.setdefault(row["Device"], {"name": row["Name"], "sheet": None,
                                                    "measured": None, "none": None})
        kind = row["Kind"]
        if kind in SHEET_KINDS or kind == "measured":
            slot = "sheet" if kind in SHEET_KINDS else "measured"
            if device[slot] is None:
                device[slot] = {"kind": kind, "source": row["Source"], "modes": {},
                                "bandwidth": row["Memory B/s"]}
            if row["Mode"] not in (None, "-") and row["Peak FLOP/s"] is not None:
                device[slot]["modes"][row["Mode"]] = row["Peak FLOP/s"]
        else:
            device["none"] = row["Source"]
    lines, ok = [], True
    if not devices:
        return ["check peaks: FAILED: the peaks report listed no device"], False
    for key, device in devices.items():
        name, sheet, measured = device["name"], device["sheet"], device["measured"]
        if sheet:
            lines.append(f"check peaks: device {key} '{name}': {sheet['kind']}: {sheet['source']}")
        else:
            why = device["none"] or ("only the measured ones" if measured else "no reason given")
            lines.append(f"check peaks: device {key} '{name}': no datasheet peaks: {why}")
        if not measured:
            continue
        sheet_modes = sheet["modes"] if sheet else {}
        for mode, flops in measured["modes"].items():
            reference = sheet_modes.get(mode)
            ratio = f"{100 * flops / reference:.1f} %" if reference else "-"
            # cuBLAS runs fp64 GEMMs on the FP64 Tensor Cores where there are some (sm_80+):
            # the fp64_tc figure is then the one to compare with.
            if mode == "fp64" and sheet_modes.get("fp64_tc"):
                ratio += f" (of fp64_tc {si(sheet_modes['fp64_tc'], 'FLOP/s')}: " \
                         f"{100 * flops / sheet_modes['fp64_tc']:.1f} %)"
            lines.append(f"check ratio: {name} | {mode} | {si(flops, 'FLOP/s')} | "
                         f"{si(reference, 'FLOP/s') if reference else '-'} | {ratio}")
        bandwidth = measured["bandwidth"]
        reference = sheet["bandwidth"] if sheet else None
        if bandwidth:
            lines.append(f"check ratio: {name} | copy (memory B/s) | {si(bandwidth, 'B/s')} | "
                         f"{si(reference, 'B/s') if reference else '-'} | "
                         f"{f'{100 * bandwidth / reference:.1f} %' if reference else '-'}")
    if measured_file:
        try:
            entries = json.loads(read(measured_file) or "{}").get("devices", [])
        except ValueError as exc:
            return lines + [f"check peaks: FAILED: {measured_file}: {exc}"], False
        if entries and not any(device["measured"] for device in devices.values()):
            names = ", ".join(repr(entry.get("name")) for entry in entries)
            profiled = ", ".join(f"{key} {device['name']!r}" for key, device in devices.items())
            lines.append(f"check peaks: FAILED: the measured peaks of {names} matched no device "
                         f"of the profile ({profiled}): `--peaks` matches by the CUDA device name")
            ok = False
    return lines, ok


def checks(out: str) -> dict[str, list[str]]:
    """The report phase's 'check NAME: TEXT' lines, TEXTs by NAME in their order."""
    found: dict[str, list[str]] = {}
    for line in read(os.path.join(out, "report.log")).splitlines():
        match = re.match(r"check ([\w-]+): (.*)$", line)
        if match:
            found.setdefault(match.group(1), []).append(match.group(2).strip())
    return found


def report_rows(out: str, date: str, gpu: str) -> None:
    found = checks(out)
    print("Report, export and peaks (third table):")
    if not found:
        print("(the report phase did not run)")
        return

    def cell(*names: str) -> str:
        return "; ".join(text.replace("|", "/") for name in names for text in found.get(name, [])) \
            or "-"
    print(f"| {date} | {gpu.split(',')[0]} | {cell('report', 'report-measured')} "
          f"| {cell('export')} | {cell('peaks')} | {cell('peak')} |")
    print()
    print("Measured vs datasheet (fourth table):")
    ratios = found.get("ratio", [])
    if not ratios:
        print("(no measured peaks)")
    for text in ratios:
        print(f"| {date} | {text} |")


def cuda12_rows(out: str, date: str, gpu: str) -> None:
    """One row per packed CUDA 12 release: what the cuda12 phase's tests printed about it."""
    print("CUDA 12 (fifth table):")
    by_release: dict[str, list[str]] = {}
    for line in read(os.path.join(out, "cuda12.log")).splitlines():
        match = re.match(r"cuda12 (\d+\.\d+\.\d+)( client-first)?: (.*)$", line)
        if match:
            text = ("client-first: " if match.group(2) else "") + match.group(3).strip()
            texts = by_release.setdefault(match.group(1), [])
            if text not in texts:
                texts.append(text.replace("|", "/"))
    result = test_result(out, "cuda12.xml")
    if not by_release:
        print(f"(the cuda12 phase did not run: {result})")
        return
    for release, texts in sorted(by_release.items()):
        print(f"| {date} | {gpu} | CUDA {release} (pip's libcudart.so.12 and libcupti.so.12), "
              f"cuda12_capture_app | {result} | {'; '.join(texts)} |")


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[0] == "records":
        text, equal = records_check(argv[1], argv[2])
        print(text)
        return 0 if equal else 1
    if len(argv) in (2, 3) and argv[0] == "peaks":
        lines, ok = peaks_check(argv[1], argv[2] if len(argv) == 3 else None)
        print("\n".join(lines))
        return 0 if ok else 1
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    out = argv[0]
    date = datetime.date.today().isoformat()
    gpu, software = machine(out)
    log = read(os.path.join(out, "tests.log"))
    inside = printed(log, r"^\S+: launch calls inside an op range: .*$")
    attributed = printed(log, r"^\S+: kernel records attributed to an op: .*$")
    print("Tests (docs/gpu-validation.md, first table):")
    print(f"| {date} | {gpu} | {software} | {test_result(out)} | {inside} | {attributed} |")
    print()
    print("Overhead (second table):")
    rows = [line for line in read(os.path.join(out, "overhead.log")).splitlines()
            if line.startswith("| ") and not line.startswith(("| model", "| ---"))]
    if not rows:
        print("(benchmarks/gpu_overhead.py did not run or printed no table)")
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        # gpu_overhead: model | batch | none | pyprof | overhead | kernels/step | trace | verdict
        if len(cells) >= 5:
            print(f"| {date} | {gpu.split(',')[0]} | {cells[0]} | {cells[1]} | {cells[2]} "
                  f"| {cells[3]} | {cells[4]} |")
    notes = [line for line in read(os.path.join(out, "overhead.log")).splitlines()
             if line.startswith(("machine:", "note:"))]
    for note in notes:
        print(note)
    print()
    report_rows(out, date, gpu)
    print()
    cuda12_rows(out, date, gpu)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
