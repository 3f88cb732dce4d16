"""Runs, one by one and eagerly, the ATen nodes that torch.compile's kernels compute, as a
net.dict's `compiled_kernel` lines list them, for tests/test_compile.py's oracle.

    pyprof profile -o NAME -- python tests/scripts/replay_nodes.py NET.dict [--cpu]

--cpu runs every node on the CPU, also those whose arguments name a device (`device="cuda:0"`
of a GPU compile's `aten::full`), so that a GPU profile's kernels can be replayed where there
is no GPU. Tensors are made on the CPU in any case: FLOPs do not depend on the device.

Each kernel's nodes run inside a `kernel <name>` range (`kernel <name>@<graph>` for a name two
compiled graphs share, one line per graph), on tensors of the listed shapes, dtypes
and strides, with the listed scalars. pyprof's eager annotation (the C++ RecordFunction hook,
not the compile-time metadata) then records each call, so prof's cost of the calls under a
kernel's range is what the same nodes cost unfused: the sum of their FLOPs must equal the fused
kernel's FLOPs, and the sum of their bytes its `unfused_bytes`.
"""

import json
import sys

import torch

import pyprof


def tensor(spec: dict) -> torch.Tensor:
    dtype = getattr(torch, spec["dtype"])
    shape = spec["shape"]
    stride = spec.get("stride")
    if stride is None or len(stride) != len(shape):
        stride = torch.empty(shape).stride()
    t = torch.empty_strided(shape, stride, dtype=dtype)
    if dtype.is_floating_point:
        return t.uniform_(0.1, 1.0)
    return t.random_(0, 2)


def value(v, arg_type: str):
    if isinstance(v, dict) and "shape" in v:
        return tensor(v)
    if isinstance(v, list):
        return [value(x, arg_type) for x in v]
    if isinstance(v, str):
        if "ScalarType" in arg_type or "Layout" in arg_type or "MemoryFormat" in arg_type:
            return getattr(torch, v)
        if "Device" in arg_type:
            return torch.device("cpu" if ON_CPU else v)
        if v in ("inf", "-inf", "nan") and ("float" in arg_type or "Scalar" in arg_type):
            return float(v)
    return v


def call(node: dict):
    namespace, name = node["op"].split("::")
    op = getattr(getattr(getattr(torch.ops, namespace), name), node.get("overload") or "default")
    args, kwargs = [], {}
    for a in op._schema.arguments:
        if a.name not in node["args"]:
            continue
        v = value(node["args"][a.name], str(getattr(a, "real_type", a.type)))
        if a.kwarg_only:
            kwargs[a.name] = v
        else:
            args.append(v)
    return args, kwargs, op


ON_CPU = "--cpu" in sys.argv[2:]


def main() -> int:
    torch.set_num_threads(1)
    kernels = []
    with open(sys.argv[1]) as f:
        for line in f:
            d = json.loads(line)
            if d.get("kind") == "compiled_kernel":
                kernels.append(d)
    pyprof.init()
    # A name two graphs share has a line per graph: its range says which ("kernel NAME@0/1").
    calls = [(k["name"] + (f"@{k['graph']}" if k.get("graph") else ""),
              [call(n) for n in k["kernel"]["nodes"]]) for k in kernels]
    for name, nodes in calls:
        with pyprof.range(f"kernel {name}"):
            for args, kwargs, op in nodes:
                op(*args, **kwargs)
    print(json.dumps({"kernels": len(calls)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
