"""`--flop-registry MODULE`: the FLOP formulas libraries register with PyTorch
(`torch.utils.flop_counter.register_flop_formula`) used for the ops pyprof has no model of
(docs/ops.md "Formulas registered with PyTorch").

The formulas are Python functions, and the ops they cost are often registered only where the
user's libraries are imported, so this pass runs here, in the front, not in C++ prof:

1. prof lists the distinct calls of ops without a model (`pyprof-prof --unmodelled-calls`: op,
   args text as net.dict holds it, records);
2. the modules the user names are imported (importing registers their ops and formulas; torch's
   own entries are there once torch is imported);
3. for each call of an op whose `OpOverloadPacket` is in `torch.utils.flop_counter.flop_registry`,
   the call's arguments are rebuilt from the record on the meta device, the op is run on them
   (its meta or fake implementation) for the output, and the formula is called as
   FlopCounterMode calls it: `formula(*args, **kwargs, out_val=out)`;
4. the FLOPs go to prof as a FLOP table (docs/formats.md §5), which prof looks each call up in.

A call that cannot be evaluated (arguments the record does not give in full, an op without a
meta implementation whose formula needs the output, a formula that raises) is counted and said,
per op, with the first reason; it stays `na`.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import tempfile

from pyprof import _tools

OPTION = "--flop-registry"
TABLE_VERSION = 1  # docs/formats.md §5; models/flop_table.cpp reads it
SOURCE = "torch.utils.flop_counter"


class UsageError(Exception):
    pass


class ImportFailed(Exception):
    pass


def take_modules(args: list[str]) -> tuple[list[str], list[str]]:
    """The modules `--flop-registry MODULE` (or `--flop-registry=MODULE`, repeatable, before any
    `--`) names, and the arguments without them."""
    modules, rest = [], []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            rest += args[i:]
            break
        if arg == OPTION:
            if i + 1 >= len(args) or not args[i + 1] or args[i + 1].startswith("-"):
                raise UsageError(f"{OPTION} needs a module name (importable here)")
            modules.append(args[i + 1])
            i += 2
            continue
        if arg.startswith(OPTION + "="):
            value = arg[len(OPTION) + 1:]
            if not value:
                raise UsageError(f"{OPTION} needs a module name (importable here)")
            modules.append(value)
        else:
            rest.append(arg)
        i += 1
    return modules, rest


def import_modules(modules: list[str]) -> None:
    """Imports each module (from the current folder too, as `python -m` would); ImportFailed
    naming the first that cannot be imported and why."""
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    import torch  # noqa: F401  (its own formulas are registered on import)
    import torch.utils.flop_counter  # noqa: F401

    for name in modules:
        try:
            importlib.import_module(name)
        except BaseException as exc:  # SystemExit, a module's own errors: all said the same
            if isinstance(exc, KeyboardInterrupt):
                raise
            raise ImportFailed(f"{OPTION} {name}: cannot import it: "
                               f"{type(exc).__name__}: {exc}") from None


# ---- rebuilding a call from its record ----------------------------------------------------------

class Unsupported(Exception):
    """A record whose arguments cannot be rebuilt for the op's schema."""


def _dtype(name):
    import torch

    if name is None:
        return torch.float32  # pyprof's models assume float32 where the record gives none
    dtype = getattr(torch, name, None) if isinstance(name, str) else None
    if not isinstance(dtype, torch.dtype):
        raise Unsupported(f"unknown dtype {name!r}")
    return dtype


def _tensor(value: dict):
    import torch

    if "shape" not in value:
        raise Unsupported("a tensor without a recorded shape (symbolic or nested)")
    if value.get("layout", "strided") != "strided":
        raise Unsupported(f"a {value['layout']} tensor")
    shape = value["shape"]
    dtype = _dtype(value.get("dtype"))
    stride = value.get("stride")
    if stride is not None and len(stride) == len(shape):
        return torch.empty_strided(shape, stride, dtype=dtype, device="meta")
    return torch.empty(shape, dtype=dtype, device="meta")


def _value(value, type_text: str):
    """One recorded argument (docs/formats.md §1.1) as the op takes it, tensors on the meta
    device."""
    import torch

    if value is None:
        return None
    if isinstance(value, dict):
        if "shape" in value or "nested" in value or "symbolic" in value:
            return _tensor(value)
        if set(value) == {"real", "imag"}:
            return complex(value["real"], value["imag"])
        raise Unsupported(f"an argument the record gives as {json.dumps(value)[:60]}")
    if isinstance(value, list):
        element = type_text.rstrip("?")
        element = element[:element.rfind("[")] if element.endswith("]") else element
        if any(isinstance(v, str) and v.startswith("...+") for v in value):
            raise Unsupported("a list the capture cut short")
        return [_value(v, element) for v in value]
    if isinstance(value, str):
        if value in ("inf", "-inf", "nan") and "float" in type_text.lower() or \
                value in ("inf", "-inf", "nan") and "Scalar" in type_text:
            return float(value)
        if "ScalarType" in type_text:
            return _dtype(value)
        if "Device" in type_text:
            return torch.device("meta")
        if "Layout" in type_text:
            return getattr(torch, value)
        if "MemoryFormat" in type_text:
            return getattr(torch, value)
        if value.startswith("<") and value.endswith(">"):
            raise Unsupported(f"an argument recorded as {value}")
        return value
    if isinstance(value, int) and not isinstance(value, bool) and "ScalarType" in type_text:
        raise Unsupported("a dtype given as a ScalarType number")
    return value


def _call_arguments(overload, record_args) -> tuple[list, dict]:
    """The positional and keyword arguments of `overload` from the record's args (by schema name
    for pyprof captures, by position for torch.profiler traces), as the dispatcher hands them
    to FlopCounterMode: keyword-only arguments by keyword, the others by position."""
    schema = overload._schema
    names = [a.name for a in schema.arguments]
    if not isinstance(record_args, dict):
        raise Unsupported("arguments in the legacy PyProf form")
    positional = bool(record_args) and all(k.isdigit() for k in record_args)
    if positional:
        if len(record_args) > len(names):
            raise Unsupported(f"{len(record_args)} arguments for a schema of {len(names)}")
    else:
        unknown = [k for k in record_args if k not in names]
        if unknown:
            raise Unsupported(f"argument {unknown[0]!r} is not in the schema {schema}")
    args, kwargs = [], {}
    for position, arg in enumerate(schema.arguments):
        key = str(position) if positional else arg.name
        if key in record_args:
            value = _value(record_args[key], str(arg.type))
        elif arg.has_default_value():
            value = arg.default_value
        else:
            raise Unsupported(f"argument {arg.name!r} is not recorded")
        if arg.kwarg_only:
            kwargs[arg.name] = value
        else:
            args.append(value)
    return args, kwargs


def _overloads(packet, name: str):
    """The overloads of `packet` to try for a record naming `name` (`ns::op.overload`: that
    one; `ns::op`: `default` first, then the others)."""
    if "." in name.rpartition("::")[2]:
        overload = name.rpartition(".")[2]
        found = getattr(packet, overload, None)
        return [found] if found is not None else []
    names = list(packet.overloads())
    names.sort(key=lambda n: n != "default")
    return [getattr(packet, n) for n in names]


def _packet(op: str):
    """torch.ops' OpOverloadPacket of `op` ("mylib::gate", "aten::foo.out"), or None."""
    import torch

    namespace, _, name = op.rpartition("::")
    if not namespace or not name:
        return None
    name = name.partition(".")[0]
    try:
        return getattr(getattr(torch.ops, namespace), name)
    except (AttributeError, RuntimeError):
        return None


def _out_bytes(out, inputs) -> int:
    """Bytes of the output tensors that are none of the inputs (an in-place op's result is its
    input, which the record lists already)."""
    import torch
    from torch.utils._pytree import tree_leaves

    seen = {id(t) for t in tree_leaves(inputs) if isinstance(t, torch.Tensor)}
    total = 0
    for t in tree_leaves(out):
        if isinstance(t, torch.Tensor) and id(t) not in seen and not t._is_view():
            total += t.numel() * t.element_size()
    return total


def evaluate_call(op: str, record_args, formula, packet) -> tuple[int, int]:
    """(FLOPs, output bytes) of one call under `formula` (a flop_registry entry, called as
    FlopCounterMode calls it); raises Unsupported when the call cannot be rebuilt and lets the
    formula's own exception through."""
    import torch

    problems = []
    for overload in _overloads(packet, op):
        try:
            args, kwargs = _call_arguments(overload, record_args)
        except Unsupported as exc:
            problems.append(str(exc))
            continue
        try:
            with torch.no_grad():
                out = overload(*args, **kwargs)  # its meta / fake implementation
        except Exception:  # no meta implementation: the formula gets out_val=None
            out = None
        flops = formula(*args, **kwargs, out_val=out)
        if isinstance(flops, torch.Tensor):
            flops = flops.item()
        if isinstance(flops, bool) or not isinstance(flops, (int, float)) or \
                not flops >= 0 or flops == float("inf"):
            raise ValueError(f"the formula returned {flops!r}, not a count")
        return int(round(flops)), _out_bytes(out, (args, kwargs)) if out is not None else 0
    raise Unsupported(problems[0] if problems else "no overload of the op fits the record")


class PassResult:
    """What the pass did, for its messages: per op, the calls costed and those not, why."""

    def __init__(self):
        self.entries: list[dict] = []
        self.costed: dict[str, int] = {}          # op -> calls costed
        self.failed: dict[str, list] = {}         # op -> [calls, records, first reason]
        self.no_formula: set[str] = set()         # ops torch knows, without a formula
        self.unknown: set[str] = set()            # ops torch.ops does not know here

    def fail(self, op: str, records: int, reason: str) -> None:
        tally = self.failed.setdefault(op, [0, 0, reason])
        tally[0] += 1
        tally[1] += records

    def messages(self, command: str) -> list[str]:
        lines = []
        calls = sum(self.costed.values())
        if calls:
            ops = ", ".join(sorted(self.costed))
            lines.append(f"pyprof {command}: note: {OPTION}: {calls} distinct call"
                         f"{'s' if calls != 1 else ''} costed by the formulas registered with "
                         f"PyTorch ({ops}); Params registry={SOURCE}")
        for op, (n, records, reason) in sorted(self.failed.items()):
            lines.append(f"pyprof {command}: warning: {OPTION}: {op}: {n} distinct call"
                         f"{'s' if n != 1 else ''} ({records} record{'s' if records != 1 else ''})"
                         f" not costed: {reason}; left na")
        if self.unknown:
            lines.append(f"pyprof {command}: note: {OPTION}: ops torch does not know in this "
                         f"process (import the module that registers them with {OPTION}): "
                         f"{', '.join(sorted(self.unknown))}")
        return lines


def evaluate_calls(calls: list[dict]) -> PassResult:
    """Each call (`pyprof-prof --unmodelled-calls`'s objects) costed by its op's registered
    formula, if any."""
    from torch.utils.flop_counter import flop_registry

    result = PassResult()
    for call in calls:
        op, records = call["op"], call.get("records", 0)
        if "::" not in op:
            continue  # emit_nvtx and legacy names: no namespace, no torch op to find
        packet = _packet(op)
        if packet is None:
            result.unknown.add(op)
            continue
        formula = flop_registry.get(packet)
        if formula is None:
            result.no_formula.add(op)
            continue
        try:
            record_args = json.loads(call["args"]) if call["args"] else {}
            flops, out_bytes = evaluate_call(op, record_args, formula, packet)
        except Unsupported as exc:
            result.fail(op, records, f"the record's arguments do not fit: {exc}")
            continue
        except Exception as exc:  # the formula's own error, or the op's
            text = str(exc).splitlines()[0] if str(exc) else ""
            result.fail(op, records, f"its formula raised {type(exc).__name__}: {text}"[:300])
            continue
        result.costed[op] = result.costed.get(op, 0) + 1
        entry = {"op": op, "args": call["args"], "flops": flops, "source": SOURCE}
        if out_bytes:
            entry["out_bytes"] = out_bytes
        result.entries.append(entry)
    return result


def table_text(entries: list[dict]) -> str:
    """A FLOP table (docs/formats.md §5): the header line, then one entry per call."""
    lines = [json.dumps({"pyprof_flop_table": TABLE_VERSION})]
    lines += [json.dumps(entry, ensure_ascii=False, separators=(",", ":")) for entry in entries]
    return "\n".join(lines) + "\n"


def unmodelled_calls(dict_path: str, op_models: list[str], command: str) -> list[dict]:
    """The distinct calls of ops without a model in the net.dict at `dict_path`, as prof finds
    them (with the user models `op_models` and $PYPROF_OP_MODELS installed)."""
    args = ["--unmodelled-calls"]
    for f in op_models:
        args += ["--op-models", f]
    import subprocess

    from pyprof import _signals

    if why := _tools.first_missing("pyprof-prof"):
        raise ImportFailed(why)
    res = _signals.run([_tools.tool_path("pyprof-prof"), *args, dict_path],
                       stdin=subprocess.DEVNULL, capture_output=True)
    if res.returncode != 0:
        sys.stderr.write(res.stderr.decode("utf-8", "replace"))
        raise ImportFailed(f"{OPTION}: pyprof prof could not list the calls of {dict_path} "
                           "(above)")
    return [json.loads(line) for line in res.stdout.decode("utf-8").splitlines() if line]


def _op_model_files(args: list[str]) -> list[str]:
    """Every `--op-models FILE` value (repeatable) in a prof command line."""
    split = _tools.split_arguments("pyprof-prof", args)
    return [split.args[start + 1] if end - start == 2 else split.args[start].partition("=")[2]
            for start, end, name in split.spans if name == "--op-models"]


def build_table(command: str, modules: list[str], dict_paths: list[str], op_models: list[str],
                table_path: str) -> int:
    """The pass over `dict_paths`: the table written to `table_path` (pyprof/_files.py's
    write_atomic), what it did said on standard error; 0, or an exit status (2: a module that
    cannot be imported or a net.dict prof cannot read)."""
    calls, seen = [], set()
    try:
        for path in dict_paths:
            for call in unmodelled_calls(path, op_models, command):
                key = (call["op"], call["args"])
                if key not in seen:
                    seen.add(key)
                    calls.append(call)
        import_modules(modules)
    except ImportFailed as exc:
        print(f"pyprof {command}: error: {exc}", file=sys.stderr)
        return 2
    result = evaluate_calls(calls)
    from pyprof import _files

    _files.write_atomic(table_path, table_text(result.entries))
    _tools.flush_standard_streams()
    for line in result.messages(command):
        print(line, file=sys.stderr)
    sys.stderr.flush()
    return 0


def _dict_inputs(command: str, args: list[str], tmp: str):
    """The prof command line with each input that is not a net.dict parsed into one under
    `tmp`: (arguments, net.dict paths, {temporary: input}) or an exit status."""
    split = _tools.split_arguments("pyprof-prof", args)
    rest, dicts, temporaries = list(args), [], {}
    if not split.inputs:
        print(f"pyprof {command}: error: {OPTION} reads its input twice: give a net.dict, "
              "database or trace file, not standard input", file=sys.stderr)
        return 2
    for n, i in enumerate(split.inputs):
        kind = _tools.input_kind(args[i])
        if kind in (_tools.STREAM, _tools.FOLDER, _tools.MISSING):
            why = {_tools.STREAM: "a stream, which it cannot read twice",
                   _tools.FOLDER: "a folder (give its net.dicts)",
                   _tools.MISSING: "no such file"}[kind]
            print(f"pyprof {command}: error: {OPTION}: {args[i]}: {why}", file=sys.stderr)
            return 2 if kind != _tools.MISSING else 1
        if kind == _tools.OTHER:
            dict_path = os.path.join(tmp, f"input{n}.dict")
            if (status := _tools.parse_into(args[i], dict_path, command)) != 0:
                return status
            rest[i] = dict_path
            temporaries[dict_path] = args[i]
        dicts.append(rest[i])
    return rest, dicts, temporaries


def prof_command(args: list[str], modules: list[str], run_prof) -> int:
    """`pyprof prof --flop-registry MODULE ... ARGS`: the pass, then pyprof-prof ARGS with the
    table (`--flop-table`), run by `run_prof(tool, args, command, {temporary: name})` (cli's,
    which names the inputs in place of their temporaries)."""
    from pyprof import parquet

    split = _tools.split_arguments("pyprof-prof", args)
    if split.has("--help"):
        return _tools.exec_tool("pyprof-prof", args)
    with tempfile.TemporaryDirectory(prefix="pyprof-prof-") as tmp:
        found = _dict_inputs("prof", args, tmp)
        if isinstance(found, int):
            return found
        rest, dicts, temporaries = found
        table = os.path.join(tmp, "registry.flops")
        if (status := build_table("prof", modules, dicts, _op_model_files(args), table)) != 0:
            return status
        rest += ["--flop-table", table]
        temporaries[table] = f"the {OPTION} table"
        if parquet.handles(rest):
            return parquet.prof_command(rest)
        return run_prof("pyprof-prof", rest, "prof", temporaries)


FLOP_TABLE_USAGE = f"""usage: pyprof flop-table {OPTION} MODULE [{OPTION} MODULE ...]
                         [--op-models FILE ...] INPUT [INPUT ...] -o TABLE

Writes the FLOP table that `pyprof prof {OPTION} MODULE` makes and uses:
the FLOPs of each distinct call, in INPUT (a net.dict, or a database or trace,
parsed first), of the ops pyprof has no model of, by the formulas registered
with torch.utils.flop_counter once the MODULEs are imported (torch's own
entries count). Reuse it without the modules: `pyprof prof --flop-table TABLE
net.dict` (also diff and export). docs/ops.md "Formulas registered with
PyTorch"; the format: docs/formats.md section 5.
"""


def flop_table_command(argv: list[str]) -> int:
    """`pyprof flop-table`: the table alone, written to -o."""
    if not argv or "-h" in argv or "--help" in argv:
        print(FLOP_TABLE_USAGE, end="")
        return 0 if argv else 2
    try:
        modules, args = take_modules(argv)
    except UsageError as exc:
        print(f"pyprof flop-table: error: {exc}", file=sys.stderr)
        return 2
    output, rest = None, []
    i = 0
    while i < len(args):
        if args[i] in ("-o", "--output") and i + 1 < len(args):
            output = args[i + 1]
            i += 2
            continue
        if args[i].startswith("--output="):
            output = args[i].partition("=")[2]
        else:
            rest.append(args[i])
        i += 1
    if not output:
        print("pyprof flop-table: error: -o TABLE is required", file=sys.stderr)
        return 2
    unknown = [a for a in rest if a.startswith("-") and a != "--op-models"
               and not a.startswith("--op-models=")
               and rest[rest.index(a) - 1:rest.index(a)] != ["--op-models"]]
    if unknown:
        print(f"pyprof flop-table: error: unknown option {unknown[0]}\n\n{FLOP_TABLE_USAGE}",
              file=sys.stderr, end="")
        return 2
    with tempfile.TemporaryDirectory(prefix="pyprof-flop-table-") as tmp:
        found = _dict_inputs("flop-table", rest, tmp)
        if isinstance(found, int):
            return found
        _, dicts, _ = found
        _tools.check_output_not_input(output, [a for a in rest if not a.startswith("-")])
        return build_table("flop-table", modules, dicts, _op_model_files(rest), output)
