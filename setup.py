"""Builds pyprof's C++ parts with CMake (see CMakeLists.txt) and packages them.

    pip install --no-build-isolation .

--no-build-isolation matters: the extension must be built against the torch that is
installed, not against a fresh one pip would download into an isolated environment.
Environment knobs: PYPROF_BUILD_DIR (default ./build), PYPROF_BUILD_TESTS (default 0),
PYPROF_JOBS (parallel compile jobs).
"""

import os
import shutil
import subprocess
import sys

from setuptools import Extension, find_packages, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))
# Binary parts CMake writes into the package folder, beside the Python sources.
BINARY_PARTS = ["bin/pyprof-profile", "bin/pyprof-parse", "bin/pyprof-prof",
                "lib/libpyprof_collect.so"]


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        import torch.utils  # noqa: F401  (fail early with a clear message if torch is missing)

        build_dir = os.environ.get("PYPROF_BUILD_DIR", os.path.join(ROOT, "build"))
        package_dir = os.path.join(ROOT, "pyprof")
        tests = os.environ.get("PYPROF_BUILD_TESTS", "0")
        configure = [
            "cmake", "-S", ROOT, "-B", build_dir, "-G", "Ninja",
            f"-DPython3_EXECUTABLE={sys.executable}",
            f"-DPYPROF_PACKAGE_DIR={package_dir}",
            f"-DPYPROF_BUILD_TESTS={'ON' if tests not in ('0', '', 'OFF') else 'OFF'}",
        ]
        subprocess.check_call(configure)
        build = ["cmake", "--build", build_dir]
        if os.environ.get("PYPROF_JOBS"):
            build += ["-j", os.environ["PYPROF_JOBS"]]
        subprocess.check_call(build)

        # CMake wrote _C, the collector and the launcher into ./pyprof; a non-editable install
        # also needs them in the build tree setuptools packages from.
        ext_path = self.get_ext_fullpath(ext.name)
        target_dir = os.path.dirname(ext_path)
        if os.path.abspath(target_dir) != os.path.abspath(package_dir):
            os.makedirs(target_dir, exist_ok=True)
            shutil.copy2(os.path.join(package_dir, os.path.basename(ext_path)), ext_path)
            for part in BINARY_PARTS:
                dest = os.path.join(target_dir, part)
                os.makedirs(os.path.dirname(dest), exist_ok=True)
                shutil.copy2(os.path.join(package_dir, part), dest)


setup(
    name="pyprof",
    version="0.1.0",
    description="C++-core profiler for PyTorch models on NVIDIA GPUs (PyProf/DLProf lineage)",
    packages=find_packages(include=["pyprof", "pyprof.*"]),
    ext_modules=[Extension("pyprof._C", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    package_data={"pyprof": BINARY_PARTS},
    entry_points={"console_scripts": ["pyprof = pyprof.cli:main"]},
    python_requires=">=3.9",
    zip_safe=False,
)
