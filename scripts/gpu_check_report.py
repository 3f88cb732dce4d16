#!/usr/bin/env python3
"""Turns what scripts/gpu-check.sh left in its output folder into the rows of
docs/gpu-validation.md's two result tables, ready to paste.

    python scripts/gpu_check_report.py gpu-check-out

Reads facts.json and nvidia-smi.txt (the machine), tests.xml and tests.log (pytest -rP output of
tests/test_gpu_capture.py) and overhead.log (benchmarks/gpu_overhead.py's table). A phase that
did not run is said to be missing rather than left blank.
"""

from __future__ import annotations

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


def test_result(out: str) -> str:
    """'9 passed, 1 failed (test_x)' from the JUnit file pytest wrote."""
    path = os.path.join(out, "tests.xml")
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


def main(argv: list[str]) -> int:
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
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
