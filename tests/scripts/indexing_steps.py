"""Advanced-indexing cases (a None in the indices list, broadcasting index tensors, boolean
masks), each run forward and backward, recorded at once by pyprof (under `pyprof profile`) and by
torch.profiler (Kineto), for tests/test_indexing.py.

    pyprof profile -o NAME -- python tests/scripts/indexing_steps.py TRACE.json ORACLE.json

Each case runs inside `record_function(case)`, which both tools record (pyprof as the user range
"pyprof:CASE"). ORACLE.json holds, per case, what torch itself says: the number of elements each
indexing op addresses (the forward result's numel) and the index tensors' bytes.
"""

import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile, record_function  # noqa: E402

import pyprof  # noqa: E402

aten = torch.ops.aten


def idx(*values):
    return torch.tensor(values, dtype=torch.int64)


def cases():
    """name -> (self tensor, aten indices list with None, run(x) -> result of the forward)."""
    iu = torch.triu_indices(4, 4, 1)  # the DLRM pairwise interaction's upper triangle: [2, 6]
    i7, j7 = idx(0, 1, 1, 0, 1, 0, 1), idx(0, 3, 2, 1, 0, 3, 2)
    a31, b4 = idx(0, 2, 4).reshape(3, 1), idx(5, 0, 3, 1)
    ij23 = idx(0, 5, 2, 1, 3, 4).reshape(2, 3)
    mask = torch.rand(5, 6, generator=torch.Generator().manual_seed(0)) > 0.5
    return {
        # inter[:, iu[0], iu[1]] on [8, 4, 4]: [None, [6], [6]]
        "leading_none": ((8, 4, 4), [None, iu[0], iu[1]], lambda x: x[:, iu[0], iu[1]]),
        # x[i, :, j] on [2, 3, 4, 5]: [[7], None, [7]]
        "none_between": ((2, 3, 4, 5), [i7, None, j7], lambda x: x[i7, :, j7]),
        # aten.index(x, [i, None]) on [2, 3, 4]: a trailing None
        "trailing_none": ((2, 3, 4), [i7, None], lambda x: aten.index(x, [i7, None])),
        # x[:, :, ij] on [4, 5, 6, 7] with ij [2, 3]: two Nones
        "two_nones": ((4, 5, 6, 7), [None, None, ij23], lambda x: x[:, :, ij23]),
        # x[:, a[:, None], b] on [2, 5, 6]: index shapes [3, 1] and [4] broadcast to [3, 4]
        "broadcast": ((2, 5, 6), [None, a31, b4], lambda x: x[:, a31, b4]),
        # x[:, m] on [2, 5, 6, 3] with a bool mask [5, 6] over dims 1 and 2
        "mask_after_slice": ((2, 5, 6, 3), [None, mask], lambda x: x[:, mask]),
        # Inductor's decompositions: _unsafe_index with a leading None
        "unsafe_index": ((3, 4, 5), [None, idx(3, 0)],
                         lambda x: aten._unsafe_index(x, [None, idx(3, 0)])),
    }


def addressed(shape, indices, masks_all_true):
    """Elements addressed, as torch counts them: the numel of x[indices] on a zero tensor, with
    every mask made all-true (pyprof's upper bound: which elements are true is not recorded)."""
    x = torch.zeros(shape)
    full = [torch.ones_like(t) if masks_all_true and t is not None and t.dtype == torch.bool
            else t for t in indices]
    return aten.index(x, full).numel()


def main():
    trace, oracle_path = sys.argv[1], sys.argv[2]
    torch.set_num_threads(1)
    if not pyprof.init():
        sys.exit("pyprof.init() found no NVTX tool: run under `pyprof profile`")
    oracle = {}
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        for name, (shape, indices, run) in cases().items():
            x = torch.randn(*shape, requires_grad=True)
            with record_function(name):
                run(x).sum().backward()
            # index_put_ after a slice, with and without accumulate, on the same indices.
            y = torch.zeros(*shape)
            w = addressed(shape, indices, False)
            values = torch.ones(w).reshape(run(y).shape)
            with record_function(name + ".put"):
                aten.index_put_(y, indices, values, accumulate=False)
                aten.index_put(y, indices, values, accumulate=True)
            oracle[name] = {
                "shape": list(shape),
                "addressed": w,
                "addressed_upper": addressed(shape, indices, True),
                "index_bytes": sum(t.numel() * t.element_size() for t in indices
                                   if t is not None),
            }
    prof.export_chrome_trace(trace)
    with open(oracle_path, "w") as f:
        json.dump(oracle, f, indent=1)


if __name__ == "__main__":
    main()
