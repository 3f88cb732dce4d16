"""Installing pyprof the way a user does, and the torch releases it builds against.

The slow tests build a copy of the checkout with pip into fresh virtual environments (the
checkout itself is never touched), and compile the extension against other torch releases'
headers (scripts/torch_headers_check.py); they need the network for pip and the wheels.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv

import pytest

import testlib
from pyprof import _torch_support

ROOT = testlib.ROOT


def run(cmd, cwd=None, timeout=1200, env=None):
    res = subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True,
                         timeout=timeout, env=env)
    return res.returncode, res.stdout + res.stderr


def clean_env() -> dict:
    """The environment without this checkout on PYTHONPATH: the venv's pyprof must be used."""
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env.pop("NVTX_INJECTION64_PATH", None)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def make_venv(path, system_site_packages: bool):
    venv.EnvBuilder(system_site_packages=system_site_packages, with_pip=True).create(path)
    return path / "bin" / "python"


def copy_checkout(dest):
    """The tracked and untracked-but-not-ignored files: what a fresh clone plus edits holds."""
    listed = subprocess.run(["git", "ls-files", "-z", "-co", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.split(b"\0")
    for rel in filter(None, listed):
        src = os.path.join(ROOT, rel.decode())
        if not os.path.isfile(src):
            continue  # deleted in the work tree but still tracked
        target = os.path.join(dest, rel.decode())
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copy2(src, target)
    return dest


# ---- fast ----------------------------------------------------------------------------------

def test_version_names_the_torch_it_was_built_against():
    import torch

    res = subprocess.run([sys.executable, "-m", "pyprof", "--version"], capture_output=True,
                         text=True, timeout=60, env=testlib.pyprof_env())
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    import pyprof
    assert lines[0] == f"pyprof {pyprof.__version__}"
    if _torch_support.build_info() is not None:
        assert f"built against torch {torch.__version__}" in lines[1]
        assert "CUPTI headers 13." in lines[1]


def test_cli_usage_lists_every_profile_option():
    """`pyprof --help` must name each option the launcher accepts (they drifted apart once)."""
    usage = subprocess.run([sys.executable, "-m", "pyprof", "--help"], capture_output=True,
                           text=True, timeout=60, env=testlib.pyprof_env()).stdout
    for option in ("-o NAME", "--force", "--delay", "--duration", "--capture-range",
                   "--no-cuda-trace", "--version"):
        assert option in usage, f"`pyprof --help` does not mention {option}"


def test_torch_version_rule():
    assert _torch_support.is_supported(_torch_support.MIN_TORCH)
    assert _torch_support.is_supported(f"{_torch_support.MIN_TORCH}.0+cu130")
    major, minor = _torch_support.version_tuple(_torch_support.MIN_TORCH)[:2]
    assert not _torch_support.is_supported(f"{major}.{minor - 1}.9")
    assert _torch_support.is_supported(f"{major}.{minor + 1}.0a0+gitabc")
    with pytest.raises(ValueError):
        _torch_support.version_tuple("nightly")


@pytest.mark.needs_build
def test_extension_that_no_longer_loads_names_both_torch_versions():
    from pyprof import _api

    built = _torch_support.build_info()
    assert built is not None, "no _build_info for this Python beside the built _C"
    advice = _api.extension_load_advice("undefined symbol: _ZN3c10...", "9.9.0")
    assert f"built against torch {built.TORCH_VERSION}" in advice
    assert "this is torch 9.9.0" in advice and "--no-build-isolation" in advice
    same = _api.extension_load_advice("some error", built.TORCH_VERSION)
    assert "built against this torch" in same


# ---- slow: pip into fresh virtual environments ---------------------------------------------

@pytest.fixture(scope="module")
def checkout_copy(tmp_path_factory):
    return copy_checkout(tmp_path_factory.mktemp("checkout"))


@pytest.mark.slow
@pytest.mark.needs_build
def test_pip_install_into_a_fresh_venv_then_profile_parse_prof(checkout_copy, tmp_path):
    """`pip install --no-build-isolation .` (not editable) in a new venv that sees the system's
    torch: it builds against that torch, leaves the checkout as it was, and the installed
    `pyprof` runs the whole chain from outside the checkout."""
    import torch

    python = make_venv(tmp_path / "venv", system_site_packages=True)
    env = clean_env()
    # -v: pip shows a build's output only when asked (or when it fails).
    rc, out = run([python, "-m", "pip", "install", "-v", "--no-build-isolation", "."],
                  cwd=checkout_copy, env=env)
    if rc != 0:
        # A venv's own old setuptools cannot make wheels: the build must say what to do.
        assert "pip install 'setuptools>=70.1'" in out, out[-3000:]
        rc, out = run([python, "-m", "pip", "install", "-q", "setuptools>=70.1"], env=env)
        assert rc == 0, out[-3000:]
        rc, out = run([python, "-m", "pip", "install", "-v", "--no-build-isolation", "."],
                      cwd=checkout_copy, env=env)
    assert rc == 0, out[-5000:]
    assert f"building against torch {torch.__version__}" in out
    assert not os.path.exists(checkout_copy / "pyprof" / "bin"), "install wrote into the checkout"

    work = tmp_path / "work"
    work.mkdir()
    pyprof_cmd = tmp_path / "venv" / "bin" / "pyprof"
    rc, out = run([pyprof_cmd, "--version"], cwd=work, env=env)
    assert rc == 0 and f"built against torch {torch.__version__}" in out, out
    assert str(tmp_path / "venv") in out, f"--version names another installation:\n{out}"

    rc, out = run([pyprof_cmd, "profile", "-o", "net", "--", python,
                   checkout_copy / "examples" / "train.py", "--model", "mlp", "--steps", "1"],
                  cwd=work, env=env, timeout=300)
    assert rc == 0, out
    rc, out = run([pyprof_cmd, "parse", "net.sqlite", "-o", "net.dict"], cwd=work, env=env)
    assert rc == 0, out
    rc, out = run([pyprof_cmd, "prof", "--report", "op", "net.dict"], cwd=work, env=env)
    assert rc == 0 and "aten::linear" in out, out


@pytest.mark.slow
def test_isolated_build_says_to_use_no_build_isolation(checkout_copy, tmp_path):
    python = make_venv(tmp_path / "venv", system_site_packages=True)
    rc, out = run([python, "-m", "pip", "install", "."], cwd=checkout_copy, env=clean_env(),
                  timeout=600)
    assert rc != 0
    assert "isolated environment" in out and "pip install --no-build-isolation ." in out, \
        out[-3000:]


@pytest.mark.slow
def test_build_without_torch_says_to_install_torch_first(checkout_copy, tmp_path):
    python = make_venv(tmp_path / "venv", system_site_packages=False)
    env = clean_env()
    rc, out = run([python, "-m", "pip", "install", "-q", "setuptools>=70.1"], env=env)
    assert rc == 0, out[-3000:]
    rc, out = run([python, "-m", "pip", "install", "--no-build-isolation", "."],
                  cwd=checkout_copy, env=env, timeout=600)
    assert rc != 0
    assert "no torch in this environment" in out, out[-3000:]
    assert f"torch >= {_torch_support.MIN_TORCH}" in out


# ---- slow: other torch releases' headers ---------------------------------------------------

@pytest.mark.slow
@pytest.mark.needs_build
def test_extension_compiles_against_the_oldest_supported_and_the_gpu_machines_torch():
    """MIN_TORCH must stay true: csrc/annotate compiles against its headers, and against 2.11,
    the torch of the GPU machines (docs/install.md lists every release checked)."""
    oldest = f"{_torch_support.MIN_TORCH}.0"
    rc, out = run([sys.executable, os.path.join(ROOT, "scripts", "torch_headers_check.py"),
                   oldest, "2.11.0"], timeout=1200)
    assert rc == 0, out
    assert f"torch {oldest:<8} ok" in out and "torch 2.11.0   ok" in out, out


# ---- scripts/setup.sh never replaces an installed torch ------------------------------------

def fake_torch_env(tmp_path, init_source: str):
    """A venv (no system packages) whose only torch is a stand-in package, for setup.sh's
    torch decision, which comes before it installs or builds anything."""
    python = tmp_path / "venv" / "bin" / "python"
    venv.EnvBuilder(system_site_packages=False, with_pip=False).create(tmp_path / "venv")
    fake = tmp_path / "fake" / "torch"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text(init_source)
    env = clean_env()
    env["PYTHONPATH"] = str(tmp_path / "fake")
    env["PYTHON"] = str(python)
    return env


def setup_sh(env):
    return run(["bash", os.path.join(ROOT, "scripts", "setup.sh")], cwd=ROOT, env=env,
               timeout=300)


def test_setup_refuses_a_torch_older_than_the_minimum_instead_of_replacing_it(tmp_path):
    env = fake_torch_env(tmp_path, '__version__ = "2.6.0+cu124"\n')
    rc, out = setup_sh(env)
    assert rc == 1, out
    assert f"torch 2.6.0+cu124 is older than {_torch_support.MIN_TORCH}" in out
    assert "does not replace an installed torch" in out
    assert "pip install" not in out and "building pyprof" not in out, out


def test_setup_stops_at_a_torch_that_does_not_import(tmp_path):
    env = fake_torch_env(tmp_path, 'raise OSError("libcudart.so.13: cannot open shared object")\n')
    rc, out = setup_sh(env)
    assert rc == 1, out
    assert "installed for" in out and "does not import" in out and "libcudart.so.13" in out
    assert "building pyprof" not in out, out
