"""The Python front's structure (issue 33): its modules import alone and form no import circle;
"is this a net.dict?" is decided in one place (pyprof/_tools.py); and each C++ tool's options
come from the tool itself (`--list-options`, csrc/common/cli_options.h), so that no front
takes an option's value for an input. Nothing here lists an option by hand: every case is
made from what the tools print."""

import ast
import json
import os
import re
import subprocess
import sys

import pytest

import testlib

PKG = os.path.join(testlib.ROOT, "pyprof")
TOOLS = ("pyprof-prof", "pyprof-diff", "pyprof-export", "pyprof-parse", "pyprof-profile")


def front_modules() -> list[str]:
    """pyprof's Python modules (the package itself as `pyprof`), generated build info aside."""
    names = ["pyprof"]
    for name in sorted(os.listdir(PKG)):
        if name.endswith(".py") and name != "__init__.py" and not name.startswith("_build_info"):
            names.append(f"pyprof.{name[:-3]}")
    return names


def module_file(module: str) -> str:
    if module == "pyprof":
        return os.path.join(PKG, "__init__.py")
    return os.path.join(PKG, module.split(".", 1)[1] + ".py")


def imports_of(module: str, modules: set[str]) -> set[str]:
    """The pyprof modules `module` imports anywhere in its code (at the top, inside functions,
    under `if __name__ == "__main__"`): every import a run may make. The package's own lazy
    attributes (__init__'s _MODULE_OF, loaded by importlib) count as its imports."""
    tree = ast.parse(open(module_file(module), encoding="utf-8").read())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name in modules}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "pyprof":
                for alias in node.names:
                    sub = f"pyprof.{alias.name}"
                    if sub in modules:
                        found.add(sub)
                    elif not any(n.startswith(f"{alias.name}.") for n in os.listdir(PKG)):
                        found.add("pyprof")  # a name of the package (__version__, ...)
                    # else a compiled extension (pyprof._C): it imports no pyprof module
            elif node.module in modules:
                found.add(node.module)
        elif (module == "pyprof" and isinstance(node, ast.Assign)
              and any(isinstance(t, ast.Name) and t.id == "_MODULE_OF" for t in node.targets)):
            found |= set(ast.literal_eval(node.value).values())
    found.discard(module)
    return found


def find_circle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of `graph` (its modules in order, the first again at the end), or
    None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node):
        state[node] = 1
        path.append(node)
        for following in sorted(graph[node]):
            if state.get(following) == 1:
                return path[path.index(following):] + [following]
            if following not in state and (circle := visit(following)):
                return circle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (circle := visit(node)):
            return circle
    return None


def test_the_circle_finder_finds_a_circle():
    assert find_circle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_circle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_the_front_imports_form_no_circle():
    """Before issue 33: cli -> parquet -> frames -> cli, parquet <-> rank_dataset and
    report -> cli -> report, each dodged with an import inside a function."""
    modules = set(front_modules())
    graph = {m: imports_of(m, modules) for m in modules}
    assert graph["pyprof.cli"], "the graph is read: cli imports pyprof modules"
    assert find_circle(graph) is None, " -> ".join(find_circle(graph))


@pytest.mark.parametrize("module", [m for m in front_modules() if m != "pyprof.__main__"])
def test_each_front_module_imports_alone(module):
    """Each module imported first, in a fresh interpreter (the order a circle depends on)."""
    res = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True,
                         text=True, env=testlib.pyprof_env(), cwd=testlib.ROOT, timeout=120)
    assert res.returncode == 0, res.stderr


def test_the_net_dict_test_lives_in_one_module():
    """The header's key is spelled in pyprof/_tools.py alone: every front asks it (before,
    cli.py, frames.py, rank_dataset.py and report.py each decided in their own way)."""
    spelled = [m for m in front_modules() if m != "pyprof._tools"
               and "pyprof_dict" in open(module_file(m), encoding="utf-8").read()]
    assert spelled == []


# ---- the net.dict test and the input classification, on real files --------------------------

@pytest.mark.needs_build
def test_input_kinds_on_real_files(tmp_path):
    from pyprof import _tools

    dict_path = str(tmp_path / "net.dict")
    testlib.parse_to(os.path.join(testlib.DATA, "synthetic_mlp.nsys.sqlite"), dict_path)
    with_bom = tmp_path / "bom.dict"
    with_bom.write_bytes(b"\xef\xbb\xbf" + open(dict_path, "rb").read())
    headless = tmp_path / "headless.dict"
    headless.write_bytes(b"".join(open(dict_path, "rb").readlines()[1:]))
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    kinds = {
        dict_path: _tools.DICT,
        str(with_bom): _tools.DICT,
        os.path.join(testlib.DATA, "synthetic_mlp.nsys.sqlite"): _tools.OTHER,
        os.path.join(testlib.DATA, "synthetic_mlp.nsys.pyprof.dict"): _tools.OTHER,  # PyProf's
        os.path.join(testlib.DATA, "kineto_hta-alexnet-a100.json.gz"): _tools.OTHER,
        str(headless): _tools.OTHER,  # parse says what it is ("a net.dict cut at its start")
        str(tmp_path): _tools.FOLDER,
        str(fifo): _tools.STREAM,  # never opened here: that would wait for a writer
        "-": _tools.STREAM,
        str(tmp_path / "nothing"): _tools.MISSING,
    }
    assert {path: _tools.input_kind(path) for path in kinds} == kinds
    assert _tools.read_dict_header(str(with_bom), 1 << 20)["pyprof_dict"] == \
        _tools.read_dict_header(dict_path, 1 << 20)["pyprof_dict"]
    with pytest.raises(_tools.NotADict, match="first line is not a net.dict header"):
        _tools.read_dict_header(str(headless), 1 << 20)
    with pytest.raises(_tools.NotADict, match="longer than"):
        _tools.read_dict_header(dict_path, 64)


# ---- each tool's options, from the tool -----------------------------------------------------

def listed(tool: str) -> dict:
    res = testlib.run_tool(os.path.join(testlib.BIN, tool), "--list-options")
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def help_value_options(tool: str) -> tuple[set[str], set[str]]:
    """(options shown taking a value, options shown as flags) in the tool's --help, as CLI11's
    formatter writes them: `  -o,--output TEXT   text` / `  --force   text` (an independent
    reading of what --list-options says)."""
    res = testlib.run_tool(os.path.join(testlib.BIN, tool), "--help")
    takes, flags = set(), set()
    for line in res.stdout.splitlines():
        m = re.match(r"^ {2}((?:-[\w-]+,)*-[\w-]+)(?: ([A-Z][A-Z_]*)\b)?", line)
        if not m or line.startswith("   "):
            continue
        (takes if m.group(2) else flags).update(m.group(1).split(","))
    return takes, flags


@pytest.mark.needs_build
@pytest.mark.parametrize("tool", TOOLS)
def test_list_options_agrees_with_help(tool):
    """What --list-options says takes a value is what --help shows with a value (TEXT, INT,
    NAME, ...), for every option --help shows; hidden ones are listed too, marked hidden."""
    options = listed(tool)["options"]
    visible = [o for o in options if not o["hidden"] and not o["positional"]]
    takes, flags = help_value_options(tool)
    assert visible and takes, (tool, takes)
    for option in visible:
        for name in option["names"]:
            assert name in (takes if option["takes_value"] else flags), (tool, name, option)
    assert "--list-options" not in json.dumps(options)  # hidden: not among CLI11's options


@pytest.mark.needs_build
def test_list_options_is_hidden_from_help():
    for tool in TOOLS:
        help_text = testlib.run_tool(os.path.join(testlib.BIN, tool), "--help").stdout
        assert "--list-options" not in help_text


def value_options(tool: str) -> list[str]:
    return sorted(name for o in listed(tool)["options"] if o["takes_value"] and not o["positional"]
                  for name in o["names"])


@pytest.mark.needs_build
def test_the_parquet_front_takes_no_option_value_for_an_input():
    """Every option of pyprof-prof that takes a value, given to `pyprof prof --parquet`, leaves
    the one input alone among the inputs (before, its own list lacked --explain-tc)."""
    from pyprof import parquet

    names = value_options("pyprof-prof")
    assert "--explain-tc" in names and "-c" in names
    forms = [form for name in names
             for form in ([name, "VALUE"], [f"{name}=VALUE"] if name.startswith("--") else
                          [f"{name}VALUE"])]
    taken = {" ".join(form): parquet._Args(["--parquet", "-o", "out.parquet", *form,
                                            "net.dict"]).inputs for form in forms}
    assert {form: inputs for form, inputs in taken.items() if inputs != ["net.dict"]} == {}
    for form in forms:
        opts = parquet._Args(["--parquet", "-o", "out.parquet", *form, "net.dict"])
        assert opts.values[opts.split.spans[2][2].lstrip("-")] == "VALUE", form


@pytest.mark.needs_build
@pytest.mark.parametrize("command,tool,inputs", [
    ("prof", "pyprof-prof", 1), ("export", "pyprof-export", 1), ("diff", "pyprof-diff", 2)])
def test_the_fronts_parse_inputs_only(command, tool, inputs, tmp_path):
    """`pyprof prof|export|diff` parse what is not a net.dict: for every option of the tool
    that takes a value, a database given as that value is not taken for an input (it would be
    parsed, and the real input not)."""
    from pyprof import cli

    database = os.path.join(testlib.DATA, "synthetic_mlp.nsys.sqlite")
    dict_path = str(tmp_path / "net.dict")
    testlib.parse_to(database, dict_path)
    for name in value_options(tool):
        args = [name, database, *[dict_path] * inputs]
        assert cli.inputs_to_parse(tool, args) == [], args
        args = [name, dict_path, *[database] * inputs]
        assert cli.inputs_to_parse(tool, args) == list(range(2, 2 + inputs)), args


@pytest.mark.needs_build
def test_the_launcher_options_end_where_the_command_begins():
    """`pyprof profile [OPTIONS] CMD ...`: the command begins at its first word that is neither
    an option of the launcher nor an option's value, for every option the launcher lists."""
    from pyprof import _tools

    for name in value_options("pyprof-profile"):
        split = _tools.split_arguments("pyprof-profile", [name, "V", "--report", "python", "-o",
                                                         "x"], stop_at_input=True)
        assert split.command_at == 3 and split.has("--report"), name
        assert split.without("--report") == [name, "V", "python", "-o", "x"]
