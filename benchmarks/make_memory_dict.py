"""A net.dict with many memory lines, for timing the memory timeline (the HTML page's Memory
section, `pyprof prof --report memory_timeline`) and the export's memory counters
(docs/benchmarks.md §8.1).

    python benchmarks/make_memory_dict.py /tmp/memory.dict --events 500000

EVENTS allocations and frees on each of two devices (the CPU and cuda:0), alternating, 100,000
of them a step; each allocation 1 B to 1 MiB, each free of a random live block; the allocator's
totals on every line; one op record a step; module paths cycling through three modules, fprop
and bprop in runs of 1,000 events.
"""

import argparse
import json
import random


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--events", type=int, default=500000, help="per device")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    total = 2 * args.events
    steps = max(1, total // 100000)
    step_ns = 10 ** 9
    header = {"pyprof_dict": 2, "source": "benchmarks/make_memory_dict.py", "records": "op",
              "iterations": {"rule": "step_range", "range": "step", "count": steps,
                             "steps": [{"index": i, "name": f"step {i}", "start": i * step_ns,
                                        "end": (i + 1) * step_ns} for i in range(steps)]}}
    modules = ("Net.fc1.act", "Net.fc2", "Net.conv")
    live = {0: [], -1: []}
    running = {0: 0, -1: 0}
    addr = 0
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(json.dumps(header) + "\n")
        for i in range(steps):
            f.write(json.dumps({"kind": "op", "name": "aten::mul", "op": "aten::mul",
                                "dir": "fprop", "start": i * step_ns + 1, "duration": 1,
                                "id": i + 1, "pid": 7, "tid": 7, "step": i}) + "\n")
        gap = steps * step_ns // total
        for k in range(total):
            start = k * gap + 5
            device = 0 if k % 2 else -1
            if live[device] and rng.random() < 0.5:
                block, size = live[device].pop(rng.randrange(len(live[device])))
                size = -size
            else:
                addr += 1
                block, size = addr, rng.randint(1, 1 << 20)
                live[device].append((block, size))
            running[device] += size
            f.write('{"kind":"memory","start":%d,"bytes":%d,"addr":%d,"device":%d,'
                    '"total_allocated":%d,"total_reserved":%d,"pid":7,"tid":7,'
                    '"op":"aten::mul","dir":"%s","instance":3,"module":"%s","step":%d}\n'
                    % (start, size, block, device, running[device],
                       (1 << 34) if device >= 0 else 0,
                       "fprop" if (k // 1000) % 2 else "bprop", modules[(k // 700) % 3],
                       start // step_ns))


if __name__ == "__main__":
    main()
