"""Builds pyprof's C++ parts with CMake (see CMakeLists.txt); metadata lives in pyproject.toml.

    pip install --no-build-isolation .        # or -e . for a development checkout

--no-build-isolation matters: pyprof._C is compiled against the torch installed in your
environment, which an isolated build (pip's default) cannot see; installing a second torch into
the isolated environment would mean gigabytes and a mismatched build. The checks below turn each
way this goes wrong into one message that says what to do (docs/install.md).

Environment knobs: PYPROF_BUILD_DIR (default ./build), PYPROF_BUILD_TESTS (default 0),
PYPROF_JOBS (parallel compile jobs), PYPROF_CMAKE_ARGS (extra CMake arguments, e.g.
-DCMAKE_PREFIX_PATH=... for dependencies outside the system prefix).
"""

import importlib.util
import os
import shlex
import shutil
import subprocess
import sys

from setuptools import Extension, find_packages, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


def _load_torch_support():
    # Loaded by path: importing the pyprof package itself is not needed to build it.
    spec = importlib.util.spec_from_file_location(
        "pyprof_torch_support", os.path.join(ROOT, "pyprof", "_torch_support.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _fail(message):
    sys.stderr.write(f"\npyprof: error: {message}\n\n")
    sys.stderr.flush()
    raise SystemExit(1)


def _isolated_build():
    """True inside a PEP 517 isolated build environment (pip's or pypa/build's)."""
    return any("pip-build-env-" in p or os.sep + "build-env-" in p for p in sys.path)


def require_torch():
    """The torch this build compiles against, or a message saying how to get one."""
    support = _load_torch_support()
    try:
        import torch
    except ImportError as exc:
        if _isolated_build():
            _fail("pip is building pyprof in an isolated environment, which cannot see your "
                  "torch. pyprof must be compiled against the torch you run, so install it "
                  "with:\n    pip install --no-build-isolation .")
        if importlib.util.find_spec("torch") is not None:
            _fail(f"torch is installed but does not import ({exc}); fix that torch first.")
        _fail(f"no torch in this environment ({sys.executable}). Install torch "
              f">= {support.MIN_TORCH} first (the build that matches your CUDA, "
              "https://pytorch.org/get-started/locally/), then:\n"
              "    pip install --no-build-isolation .")
    if not support.is_supported(torch.__version__):
        _fail(f"torch {torch.__version__} is older than {support.MIN_TORCH}, the oldest "
              "release pyprof builds against (docs/install.md). Upgrade torch, then install "
              "pyprof again.")
    return torch


def require_bdist_wheel():
    """pip builds a wheel even for `pip install .`; old setuptools needs the `wheel` package."""
    if importlib.util.find_spec("setuptools.command.bdist_wheel") is not None:
        return  # setuptools >= 70.1 has it built in
    if importlib.util.find_spec("wheel") is not None:
        return
    import setuptools
    _fail(f"setuptools {setuptools.__version__} in this environment cannot build wheels "
          "without the `wheel` package, and with --no-build-isolation pip uses what is "
          "installed. Run\n    pip install 'setuptools>=70.1'\nthen the same install "
          "command again.")


class CMakeBuild(build_ext):
    def run(self):
        # setuptools clears `inplace` while it builds, then copies _C from its own tree back to
        # the source tree (editable installs, build_ext --inplace): remember which build this is.
        self._into_source_tree = bool(self.inplace or getattr(self, "editable_mode", False))
        super().run()

    def build_extension(self, ext):
        torch = require_torch()
        print(f"pyprof: building against torch {torch.__version__} ({torch.__file__})")

        build_dir = os.environ.get("PYPROF_BUILD_DIR", os.path.join(ROOT, "build"))
        # CMake writes _C, the collector and the tools into one package folder: ./pyprof for an
        # editable or in-place build (a stable place, which ctest and the tests use), else the
        # tree the wheel is made from, so a non-editable install leaves the checkout as it was.
        ext_path = os.path.abspath(self.get_ext_fullpath(ext.name))
        package_dir = (os.path.join(ROOT, "pyprof") if self._into_source_tree
                       else os.path.dirname(ext_path))
        tests = os.environ.get("PYPROF_BUILD_TESTS", "0")
        configure = [
            "cmake", "-S", ROOT, "-B", build_dir, "-G", "Ninja",
            f"-DPython3_EXECUTABLE={sys.executable}",
            f"-DPYPROF_PACKAGE_DIR={package_dir}",
            f"-DPYPROF_BUILD_TESTS={'ON' if tests not in ('0', '', 'OFF') else 'OFF'}",
        ] + shlex.split(os.environ.get("PYPROF_CMAKE_ARGS", ""))
        subprocess.check_call(configure)
        build = ["cmake", "--build", build_dir]
        if os.environ.get("PYPROF_JOBS"):
            build += ["-j", os.environ["PYPROF_JOBS"]]
        subprocess.check_call(build)

        if self._into_source_tree and os.path.dirname(ext_path) != package_dir:
            # setuptools copies the extension from its own tree back into ./pyprof afterwards.
            os.makedirs(os.path.dirname(ext_path), exist_ok=True)
            shutil.copy2(os.path.join(package_dir, os.path.basename(ext_path)), ext_path)


# pip asks for metadata (dist_info), then a wheel (bdist_wheel, or editable_wheel for -e): each
# needs bdist_wheel, and old setuptools' own message ("invalid command") says nothing useful.
if {"dist_info", "bdist_wheel", "editable_wheel"} & set(sys.argv[1:]):
    require_bdist_wheel()

setup(
    packages=find_packages(include=["pyprof", "pyprof.*"]),
    package_data={"pyprof": ["report_assets/*"]},
    ext_modules=[Extension("pyprof._C", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    zip_safe=False,
)
