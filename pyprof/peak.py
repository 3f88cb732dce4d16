"""`pyprof peak`: measure this machine's roofs (docs/peak-measure.md).

    pyprof peak                          # the CPU: fp64, fp32, bf16, fp16 matmuls and a copy
    pyprof peak --device cuda -o h100.json
    pyprof prof --report roofline --peaks h100.json net.dict

For each dtype (a "mode") it times torch.mm of two square N x N matrices (2 N^3 FLOPs, large
enough to be compute-bound) and a large tensor copy_ (bytes read + bytes written), takes the
median of several timed runs after warm-up (CPU: time.perf_counter; CUDA: CUDA events around
the op, then a synchronize), prints a table, and with -o writes the peaks file that `--peaks`
reads. A mode that fails or that this torch or device does not support is listed as skipped
with the reason; it never ends the run.

The CUDA modes are fp64, fp32 (TF32 off: CUDA cores), tf32_tc (TF32 allowed), fp16_tc,
bf16_tc, fp8_tc (torch._scaled_mm, sm_89 and later) and int8_tc (torch._int_mm). They cannot run
on the development machines (CPU only): scripts/gpu-check.sh's environment is where they are
checked.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import statistics
import sys
import tempfile
import time

CPU_MODES = ["fp64", "fp32", "bf16", "fp16"]
CUDA_MODES = ["fp64", "fp32", "tf32_tc", "fp16_tc", "bf16_tc", "fp8_tc", "int8_tc"]
ALL_MODES = CPU_MODES + [m for m in CUDA_MODES if m not in CPU_MODES]

DEFAULT_SIZE = {"cpu": 2048, "cuda": 8192}  # the largest N tried; calibration may take less
DEFAULT_COPY_MB = {"cpu": 256, "cuda": 1024}
MAX_RUN_S = 0.5  # calibration picks the largest N whose one run is predicted to take this long
MIN_SIZE = 256
CALIBRATION_SIZE = 256


class Skipped(Exception):
    """A mode this torch or device cannot run; the message says why."""


# ---- arguments ----------------------------------------------------------------------------

def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="pyprof peak",
        description="Measure this machine's achievable matmul FLOP/s per dtype and its copy "
                    "bandwidth (median of timed runs after warm-up); -o writes a peaks file "
                    "for `pyprof prof --peaks FILE` (docs/peak-measure.md).")
    parser.add_argument("-o", "--output", metavar="FILE",
                        help="write the peaks file (JSON) here, atomically")
    parser.add_argument("--device", default="cpu", metavar="cpu|cuda[:N]",
                        help="what to measure (default cpu)")
    parser.add_argument("--dtypes", metavar="LIST",
                        help="modes, comma-separated (default: all of the device's; CPU: "
                             f"{','.join(CPU_MODES)}; CUDA: {','.join(CUDA_MODES)})")
    parser.add_argument("--repeat", type=_positive, default=5, metavar="N",
                        help="timed runs per mode; the median counts (default 5)")
    parser.add_argument("--warmup", type=_nonnegative, default=2, metavar="N",
                        help="untimed runs before them (default 2)")
    parser.add_argument("--size", type=_positive, metavar="N",
                        help="matmul size N (N x N times N x N) for every mode; default: the "
                             "largest of 256, 512, ... up to 2048 (CPU) or 8192 (CUDA) whose "
                             f"run takes about {MAX_RUN_S} s or less")
    parser.add_argument("--copy-mb", type=_positive, metavar="MB",
                        help="size of the copied tensor in MiB (default 256 on a CPU, 1024 on "
                             "a GPU)")
    parser.add_argument("--no-copy", action="store_true",
                        help="skip the bandwidth measurement")
    args = parser.parse_args(argv)
    args.kind, args.index = _parse_device(parser, args.device)
    modes = CPU_MODES if args.kind == "cpu" else CUDA_MODES
    if args.dtypes is None:
        args.modes = list(modes)
    else:
        args.modes = [m for m in args.dtypes.split(",") if m]
        unknown = [m for m in args.modes if m not in ALL_MODES]
        if unknown or not args.modes:
            parser.error(f"--dtypes: unknown mode '{unknown[0] if unknown else ''}' (modes: "
                         f"{','.join(ALL_MODES)})")
        if len(set(args.modes)) != len(args.modes):
            parser.error(f"--dtypes {args.dtypes}: a mode is named twice")
    return args


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not positive")
    return value


def _nonnegative(text: str) -> int:
    return 0 if text.strip() == "0" else _positive(text)


def _parse_device(parser, text: str) -> tuple[str, int]:
    if text == "cpu":
        return "cpu", 0
    if text == "cuda":
        return "cuda", 0
    if text.startswith("cuda:") and text[5:].isdigit():
        return "cuda", int(text[5:])
    parser.error(f"--device {text}: expected cpu, cuda or cuda:N")
    raise AssertionError  # parser.error exits


# ---- timing -------------------------------------------------------------------------------

class Timer:
    """Times a callable on the device: CPU wall time, or CUDA events around the work."""

    def __init__(self, torch, device):
        self.torch = torch
        self.device = device
        self.cuda = device.type == "cuda"

    def once(self, fn) -> float:
        """Seconds one call of fn takes on the device."""
        if not self.cuda:
            start = time.perf_counter()
            fn()
            return time.perf_counter() - start
        cuda = self.torch.cuda
        start, end = cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3

    def median(self, fn, warmup: int, repeat: int) -> list[float]:
        for _ in range(warmup):
            self.once(fn)
        if self.cuda:
            self.torch.cuda.synchronize(self.device)
        return [self.once(fn) for _ in range(repeat)]


# ---- the modes ----------------------------------------------------------------------------

def matmul_fn(torch, mode: str, n: int, device):
    """A callable that runs one N x N x N matmul in `mode` on `device`, plus what it needs set
    around it (float32 matmul precision: TF32 off for fp32, on for tf32_tc)."""
    cuda = device.type == "cuda"
    if mode.endswith("_tc") and not cuda:
        raise Skipped("a Tensor Core mode: CUDA devices only")
    if cuda and mode in ("bf16", "fp16"):
        raise Skipped(f"on a GPU {mode} matmuls run on Tensor Cores: measured as {mode}_tc")
    floats = {"fp64": torch.float64, "fp32": torch.float32, "tf32_tc": torch.float32,
              "bf16": torch.bfloat16, "fp16": torch.float16, "bf16_tc": torch.bfloat16,
              "fp16_tc": torch.float16}
    if mode == "bf16_tc" and not torch.cuda.is_bf16_supported():
        raise Skipped("this GPU has no bf16 support (before sm_80)")
    if mode in floats:
        a = torch.randn(n, n, device=device, dtype=floats[mode])
        b = torch.randn(n, n, device=device, dtype=floats[mode])
        return lambda: torch.mm(a, b)
    if mode == "fp8_tc":
        if not hasattr(torch, "_scaled_mm") or not hasattr(torch, "float8_e4m3fn"):
            raise Skipped(f"torch {torch.__version__} has no torch._scaled_mm / float8")
        major, minor = torch.cuda.get_device_capability(device)
        if (major, minor) < (8, 9):
            raise Skipped(f"fp8 matmuls need sm_89 or later; this GPU is sm_{major}{minor}")
        a = torch.randn(n, n, device=device).to(torch.float8_e4m3fn)
        b = torch.randn(n, n, device=device).to(torch.float8_e4m3fn).t()  # column-major
        one = torch.tensor(1.0, device=device)
        return lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one,
                                        out_dtype=torch.bfloat16, use_fast_accum=True)
    if mode == "int8_tc":
        if not hasattr(torch, "_int_mm"):
            raise Skipped(f"torch {torch.__version__} has no torch._int_mm")
        a = torch.randint(-8, 8, (n, n), device=device, dtype=torch.int8)
        # Column-major B (both operands K-contiguous, cuBLASLt's "TN" int8 layout): with a
        # row-major B, torch._int_mm ran 7.5x slower on an H100 (130 against 976 TOP/s at
        # N = 8192, docs/gpu-validation.md), which is a layout penalty, not the peak.
        b = torch.randint(-8, 8, (n, n), device=device, dtype=torch.int8).t().contiguous().t()
        return lambda: torch._int_mm(a, b)
    raise Skipped(f"unknown mode {mode}")


def float32_precision(mode: str) -> str:
    """torch.set_float32_matmul_precision for a mode: TF32 only where the mode says so."""
    return "high" if mode == "tf32_tc" else "highest"


def pick_size(timer: Timer, torch, mode: str, device, largest: int) -> int:
    """The largest power-of-two multiple of CALIBRATION_SIZE, up to `largest`, whose run is
    predicted to take MAX_RUN_S or less: N doubles while the run measured at N, times 8 (N^3),
    stays within it. Slow modes (fp16 on a CPU without fp16 units) get a smaller N instead of
    minutes; measuring at each N, not extrapolating from the smallest, keeps small matmuls'
    lower efficiency from stopping the growth early."""
    n = min(CALIBRATION_SIZE, largest)
    while n * 2 <= largest:
        fn = matmul_fn(torch, mode, n, device)
        timer.once(fn)  # warm-up: first-call costs (allocation, kernel selection)
        seconds = min(timer.once(fn) for _ in range(2))
        if seconds * 8 > MAX_RUN_S:
            break
        n *= 2
    return max(n, min(MIN_SIZE, largest))


def measure_matmul(torch, mode: str, device, args) -> dict:
    timer = Timer(torch, device)
    previous = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision(float32_precision(mode))
    try:
        n = args.size or pick_size(timer, torch, mode, device, DEFAULT_SIZE[device.type])
        fn = matmul_fn(torch, mode, n, device)
        times = timer.median(fn, args.warmup, args.repeat)
    finally:
        torch.set_float32_matmul_precision(previous)
    median = statistics.median(times)
    flops = 2 * n ** 3
    return {"mode": mode, "size": n, "runs": len(times), "median_s": median,
            "flops": flops, "rate": flops / median, "best_rate": flops / min(times)}


def measure_copy(torch, device, args) -> dict:
    timer = Timer(torch, device)
    mib = args.copy_mb or DEFAULT_COPY_MB[device.type]
    nbytes = mib << 20
    src = torch.empty(nbytes, dtype=torch.uint8, device=device).random_(0, 255)
    dst = torch.empty_like(src)
    times = timer.median(lambda: dst.copy_(src), args.warmup, args.repeat)
    median = statistics.median(times)
    moved = 2 * nbytes  # each byte read once and written once
    return {"mode": "copy", "size_mib": mib, "runs": len(times), "median_s": median,
            "bytes": moved, "rate": moved / median, "best_rate": moved / min(times)}


# ---- output -------------------------------------------------------------------------------

def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine() or "unknown CPU"


def _rate(value: float, unit: str) -> str:
    for scale, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M")):
        if value >= scale:
            return f"{value / scale:.2f} {prefix}{unit}"
    return f"{value:.0f} {unit}"


def table(results: list[dict], skipped: list[tuple[str, str]], title: str) -> str:
    rows = [("mode", "work", "runs", "median", "rate (median)", "best")]
    for r in results:
        if r["mode"] == "copy":
            work, unit = f"copy {r['size_mib']} MiB (read+write)", "B/s"
        else:
            n = r["size"]
            work, unit = f"mm {n}x{n}x{n}", "OP/s" if r["mode"] == "int8_tc" else "FLOP/s"
        rows.append((r["mode"], work, str(r["runs"]), f"{r['median_s'] * 1e3:.3f} ms",
                     _rate(r["rate"], unit), _rate(r["best_rate"], unit)))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [title]
    for row in rows:
        lines.append("  ".join(cell.rjust(w) if i >= 2 else cell.ljust(w)
                               for i, (cell, w) in enumerate(zip(row, widths))).rstrip())
    for mode, reason in skipped:
        lines.append(f"skipped {mode}: {reason}")
    return "\n".join(lines) + "\n"


def peaks_document(results: list[dict], name: str, source: str) -> dict:
    device = {"name": name, "kind": "measured", "source": source}
    for r in results:
        if r["mode"] == "copy":
            device["memory_bandwidth"] = int(round(r["rate"]))
    device["flops"] = {r["mode"]: int(round(r["rate"])) for r in results if r["mode"] != "copy"}
    return {"pyprof_peaks": 1, "devices": [device]}


def write_atomically(path: str, text: str) -> None:
    """Writes under a hidden temporary name in the same folder, then renames: the file is
    complete or absent."""
    target = os.path.realpath(path)
    folder = os.path.dirname(target) or "."
    fd, staged = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", dir=folder)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        try:
            os.chmod(staged, os.stat(target).st_mode & 0o7777)
        except FileNotFoundError:
            mask = os.umask(0)
            os.umask(mask)
            os.chmod(staged, 0o666 & ~mask)
        os.replace(staged, target)
    except BaseException:
        try:
            os.unlink(staged)
        except FileNotFoundError:
            pass
        raise


# ---- the command --------------------------------------------------------------------------

def main(argv: list[str]) -> int:
    args = parse_args(argv)
    import torch

    from pyprof import __version__

    if args.kind == "cuda":
        if not torch.cuda.is_available():
            print("pyprof peak: error: --device cuda: no CUDA device is visible to torch "
                  f"{torch.__version__} (torch.cuda.is_available() is False)", file=sys.stderr)
            return 1
        if args.index >= torch.cuda.device_count():
            print(f"pyprof peak: error: --device cuda:{args.index}: there are "
                  f"{torch.cuda.device_count()} CUDA devices", file=sys.stderr)
            return 1
        device = torch.device("cuda", args.index)
        torch.cuda.set_device(device)
        name = torch.cuda.get_device_name(device)
        machine = f"{name}, CUDA {torch.version.cuda}"
    else:
        device = torch.device("cpu")
        name = "cpu"
        machine = cpu_model()
    threads = torch.get_num_threads()
    today = datetime.date.today().isoformat()
    source = (f"pyprof peak {__version__}, {today}, {machine}, torch {torch.__version__}, "
              f"{threads} threads")

    results, skipped = [], []
    for mode in args.modes:
        try:
            results.append(measure_matmul(torch, mode, device, args))
        except Skipped as exc:
            skipped.append((mode, str(exc)))
        except (RuntimeError, TypeError, ValueError, AttributeError, NotImplementedError) as exc:
            skipped.append((mode, f"{type(exc).__name__}: {str(exc).splitlines()[0]}"))
        if device.type == "cuda":
            torch.cuda.empty_cache()
    if not args.no_copy:
        try:
            results.append(measure_copy(torch, device, args))
        except (RuntimeError, ValueError) as exc:
            skipped.append(("copy", f"{type(exc).__name__}: {str(exc).splitlines()[0]}"))
    bad = [r["mode"] for r in results if not (math.isfinite(r["rate"]) and r["rate"] > 0)]
    for mode in bad:  # a timer that read 0 (a clock too coarse for a tiny --size)
        skipped.append((mode, "the timed runs took no measurable time: use a larger --size"))
    results = [r for r in results if r["mode"] not in bad]

    print(table(results, skipped, f"pyprof peak: {source}"), end="")
    if args.output:
        document = peaks_document(results, name, source)
        try:
            write_atomically(args.output, json.dumps(document, indent=1) + "\n")
        except OSError as exc:
            print(f"pyprof peak: error: writing {args.output} failed: "
                  f"{exc.strerror or exc}", file=sys.stderr)
            return 1
        print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
