"""Trains one example model for two steps under pyprof and dumps torch.profiler's view of step 1.

    pyprof profile -o NAME -- python tests/scripts/models_oracle.py MODEL ORACLE.json

Step 0 is a warm-up; step 1 runs inside torch.profiler.profile (the oracle), and inside it the
pyprof user range "oracle-window", so that the test can compare what each of them saw. The
oracle JSON holds the Kineto CPU events of step 1, the schemas of their ops, the model's module
tree, the order in which its modules ran in step 1, and the file:line call sites the test checks.
"""

import inspect
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "examples"))
sys.path.insert(0, ROOT)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch._C._profiler import _ExperimentalConfig  # noqa: E402
from torch.profiler import ProfilerActivity, profile, record_function  # noqa: E402

import models  # noqa: E402
import pyprof  # noqa: E402

WINDOW_COLOR = 0xFFAB12CD  # high bit set: the DB must keep the ARGB unsigned
STEP_COLOR = "green"

# Lines of examples/models.py whose call sites the test checks: label -> text on that line.
MODEL_SITES = {
    "lenet": {"conv1": "self.conv1(x)", "conv2": "self.conv2(x)", "flatten": "torch.flatten(x, 1)",
              "fc1": "self.fc1(x)", "fc3": "return self.fc3(x)"},
    "mlp": {"forward": "return self.head(self.body(x))"},
    "transformer": {"norm1": "self.attn(self.norm1(x))", "norm2": "self.mlp(self.norm2(x))",
                    "sdpa": "F.scaled_dot_product_attention(", "mean": "x.mean(dim=1)",
                    "qkv": "self.qkv(x).view("},
    "lstm": {"lstm": "self.lstm(self.embed(tokens))", "head": "return self.head(out[:, -1])"},
}


def train_step(model, opt, x, target):
    opt.zero_grad(set_to_none=True)  # site:zero_grad
    out = model(x)  # site:forward
    with record_function("my_scope"):  # site:my_scope
        loss = F.cross_entropy(out, target)  # site:loss
    loss.backward()  # site:backward
    opt.step()  # site:opt_step
    return loss


def line_of(path, text):
    """The one line number of path that contains text."""
    with open(path) as f:
        hits = [i for i, line in enumerate(f, 1) if text in line]
    if len(hits) != 1:
        raise SystemExit(f"{path}: {text!r} is on lines {hits}, expected exactly one")
    return hits[0]


def call_sites(model):
    script = os.path.abspath(__file__)
    sites = {label: f"{script}:{line_of(script, '# site:' + label)}"
             for label in ("zero_grad", "forward", "my_scope", "loss", "backward", "opt_step")}
    model_file = inspect.getsourcefile(type(model))
    for label, text in MODEL_SITES[sys.argv[1]].items():
        sites["model:" + label] = f"{model_file}:{line_of(model_file, text)}"
    return sites, model_file


def jsonable(value):
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, float) and value != value:
        return "nan"
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        return "inf" if value > 0 else "-inf"
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)


def kineto_events(prof):
    """Kineto's CPU events. Older torch lacks some accessors: is_python_function, activity_type
    and structured_input_shapes (2.11), is_hidden_event (2.7). No Python events are recorded
    without with_stack anyway, nor hidden ones before torch had them; list shapes are then None
    (the test compares tensor lists without their shapes)."""
    out = []
    for e in prof.profiler.kineto_results.events():
        if getattr(e, "is_python_function", lambda: False)():
            continue
        structured = getattr(e, "structured_input_shapes", None)
        activity = getattr(e, "activity_type", None)
        out.append({
            "name": e.name(), "overload": e.overload_name(), "scope": int(e.scope()),
            "activity": str(activity() if activity else e.device_type()),
            "hidden": bool(getattr(e, "is_hidden_event", lambda: False)()),
            "seq": e.sequence_nr(), "tid": e.start_thread_id(), "fwd_tid": e.fwd_thread_id(),
            "start_ns": e.start_ns(), "duration_ns": e.duration_ns(),
            "shapes": jsonable(e.shapes()),
            "structured_shapes": jsonable(structured()) if structured else None,
            "dtypes": list(e.dtypes()), "concrete": jsonable(e.concrete_inputs()),
        })
    return out


def schemas(events):
    """(name, overload) -> [(argument name, real type)] for the ops that have a schema."""
    out = {}
    for e in events:
        key = f"{e['name']}.{e['overload']}"
        if key in out:
            continue
        try:
            schema = torch._C._get_schema(e["name"], e["overload"])
        except RuntimeError:
            continue
        out[key] = [[a.name, str(a.real_type)] for a in schema.arguments]
    return out


def module_tree(model, root):
    out = {}
    for path, module in model.named_modules(prefix=root):
        info = {"type": type(module).__name__}
        weight = getattr(module, "weight", None)
        if isinstance(weight, torch.Tensor):
            info["weight"] = list(weight.shape)
        if isinstance(module, torch.nn.RNNBase):
            info["flat_weights"] = [list(w.shape) for w in module._flat_weights]
        if isinstance(module, torch.nn.LayerNorm):
            info["normalized_shape"] = list(module.normalized_shape)
        out[path] = info
    return out


def main():
    name, oracle_path = sys.argv[1], sys.argv[2]
    torch.manual_seed(0)
    model, x, target = models.make(name)
    if not pyprof.init(model=model, with_stack=True):
        raise SystemExit("pyprof.init() found no NVTX tool: run me under `pyprof profile`")
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    root = type(model).__name__
    calls, recording = [], [False]
    for path, module in model.named_modules(prefix=root):
        module.register_forward_pre_hook(
            lambda m, args, path=path: calls.append(path) if recording[0] else None)

    with pyprof.range("step 0", color=STEP_COLOR):
        train_step(model, opt, x, target)

    with profile(activities=[ProfilerActivity.CPU], record_shapes=True,
                 experimental_config=_ExperimentalConfig(capture_overload_names=True)) as prof:
        with pyprof.range("oracle-window", color=WINDOW_COLOR):
            with pyprof.range("step 1", color=STEP_COLOR):
                recording[0] = True
                loss = train_step(model, opt, x, target)
                recording[0] = False
    assert torch.isfinite(loss)

    events = kineto_events(prof)
    sites, model_file = call_sites(model)
    oracle = {
        "model": name, "root": root, "model_file": model_file,
        "script": os.path.abspath(__file__), "pid": os.getpid(),
        "window_color": WINDOW_COLOR, "step_color": 0xFF76B900,
        "events": events, "schemas": schemas(events), "modules": module_tree(model, root),
        "tensor_list_shapes": all(e["structured_shapes"] is not None for e in events),
        "module_calls": calls, "sites": sites,
    }
    with open(oracle_path, "w") as f:
        json.dump(oracle, f, indent=1)


if __name__ == "__main__":
    main()
