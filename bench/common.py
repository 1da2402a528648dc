"""Shared pieces of the benchmarks: where the models and data are, onnxruntime peers, metrics.

The benchmark models and data live in ../shared/bench (never copied into the project).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

SHARED_BENCH = Path(__file__).resolve().parents[1].parent / "shared" / "bench"
IMAGENET_MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32).reshape(1, 3, 1, 1)
IMAGENET_STD = np.array([0.229, 0.224, 0.225], dtype=np.float32).reshape(1, 3, 1, 1)


# only when named: their outputs are a probability map (segnet_like) or softmax probabilities
# kept float for the host (mobilenetv3_like), which the benchmarks of logits do not expect
ON_REQUEST = ("segnet_like", "mobilenetv3_like")


@dataclass(frozen=True)
class BenchModel:
    name: str
    path: Path
    calibration: np.ndarray
    evaluation: np.ndarray
    labels: np.ndarray | None  # None where the logits have no meaning as classes


def require_shared() -> None:
    if not SHARED_BENCH.is_dir():
        raise SystemExit(f"benchmark data not found at {SHARED_BENCH} (expected ../shared/bench)")


def imagenet_images() -> np.ndarray:
    raw = np.load(SHARED_BENCH / "imagenet_like" / "images_u8.npy").astype(np.float32)
    return (raw / 255.0 - IMAGENET_MEAN) / IMAGENET_STD


def bench_models(names: list[str] | None = None, digits_eval: int | None = None) -> list[BenchModel]:
    require_shared()
    digits = SHARED_BENCH / "digits"
    models: list[BenchModel] = []
    calib_x = np.load(digits / "calib_x.npy").astype(np.float32)
    test_x = np.load(digits / "test_x.npy").astype(np.float32)
    test_y = np.load(digits / "test_y.npy")
    if digits_eval is not None:
        test_x, test_y = test_x[:digits_eval], test_y[:digits_eval]
    for name in ("digits_plain", "digits_resnet", "digits_se"):
        models.append(BenchModel(name, digits / f"{name}.onnx", calib_x, test_x, test_y))
    images = None
    for name in ("resnet18_like", "mobilenetv2_like", *ON_REQUEST):
        if (names is None and name in ON_REQUEST) or (names is not None and name not in names):
            continue
        images = imagenet_images() if images is None else images
        models.append(
            BenchModel(name, SHARED_BENCH / "imagenet_like" / f"{name}.onnx", images[:32], images[32:], None)
        )
    return [m for m in models if names is None or m.name in names]


def ort_session(path: Path | str, threads: int = 2, optimize: bool = True):
    """An onnxruntime CPU session; optimize=False runs QDQ models as exact QDQ arithmetic."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.log_severity_level = 3
    if not optimize:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def ort_run_each(session, x: np.ndarray) -> np.ndarray:
    """Run a batch-1 model on every sample of x; returns the stacked first output."""
    name = session.get_inputs()[0].name
    return np.concatenate([session.run(None, {name: x[i : i + 1]})[0] for i in range(len(x))])


class ArrayReader:
    """onnxruntime CalibrationDataReader over the samples of one array (batch 1)."""

    def __init__(self, input_name: str, x: np.ndarray):
        self._iter = iter([{input_name: x[i : i + 1]} for i in range(len(x))])

    def get_next(self):
        return next(self._iter, None)


def cosine_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a.reshape(len(a), -1).astype(np.float64)
    b = b.reshape(len(b), -1).astype(np.float64)
    den = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    return np.where(den > 0, (a * b).sum(axis=1) / np.maximum(den, 1e-300), 1.0)


def agreement(reference: np.ndarray, other: np.ndarray) -> dict[str, float]:
    cos = cosine_rows(reference, other)
    return {
        "top1_agree": float((reference.argmax(1) == other.argmax(1)).mean()),
        "cos_mean": float(cos.mean()),
        "cos_min": float(cos.min()),
    }


def accuracy(logits: np.ndarray, labels: np.ndarray | None) -> float | None:
    return None if labels is None else float((logits.argmax(1) == labels).mean())


def best_time(fn: Callable[[], object], repeat: int = 5) -> float:
    """Best wall time of `repeat` runs, in seconds (the least disturbed by the machine)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def table(rows: list[dict], columns: list[str]) -> str:
    def fmt(v):
        if v is None:
            return "-"
        if isinstance(v, float):
            return f"{v:.5f}" if abs(v) < 10 else f"{v:.1f}"
        return str(v)

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        lines.append("| " + " | ".join(fmt(row.get(c)) for c in columns) + " |")
    return "\n".join(lines)


def ort_quantize(model_path: Path | str, calibration: np.ndarray, out: Path | str, per_channel: bool = True,
                 input_name: str = "input") -> float:
    """onnxruntime quantize_static (QDQ, MinMax, symmetric int8): its seconds, libraries loaded first."""
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static

    start = time.perf_counter()
    quantize_static(
        str(model_path), str(out), ArrayReader(input_name, calibration), quant_format=QuantFormat.QDQ,
        per_channel=per_channel, activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
        calibrate_method=CalibrationMethod.MinMax,
        extra_options={"ActivationSymmetric": True, "WeightSymmetric": True},
    )
    return time.perf_counter() - start


# --------------------------------------------------------------------------------------
# Steps measured in a fresh process: wall time and the process's peak RSS
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Measured:
    seconds: float  # best of the calls
    peak_rss_mb: float  # the whole process's high-water mark (Python, libraries, the step)
    result: object


def peak_rss_mb() -> float:
    """This process's peak resident set (VmHWM), in MB."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _child(connection, function, args, repeat: int) -> None:
    try:
        best, result = float("inf"), None
        for _ in range(repeat):
            start = time.perf_counter()
            result = function(*args)
            best = min(best, time.perf_counter() - start)
        connection.send((best, peak_rss_mb(), result, None))
    except BaseException as error:  # reported by the parent
        connection.send((None, None, None, f"{type(error).__name__}: {error}"))


def import_packages(*names: str) -> None:
    """Import every module of these packages: a timed step then measures its work, not imports."""
    import importlib
    import pkgutil

    for name in names:
        package = importlib.import_module(name)
        for module in pkgutil.walk_packages(package.__path__, f"{name}."):
            importlib.import_module(module.name)


def measure_in_child(function: Callable, *args, repeat: int = 1, env: dict[str, str] | None = None) -> Measured:
    """Call `function(*args)` `repeat` times in a fresh (spawned) process: the best time, the
    process's peak RSS and the last result. Imports happen before the clock starts only as
    far as `function` does them itself; each engine pays its own the same way. `env` adds
    environment variables for the child (e.g. OPENBLAS_NUM_THREADS, read when numpy loads)."""
    import multiprocessing
    import os

    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe(duplex=False)
    process = context.Process(target=_child, args=(child, function, args, repeat))
    saved = dict(os.environ)
    os.environ.update(env or {})
    try:
        process.start()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    child.close()
    seconds, rss, result, error = parent.recv()
    process.join()
    if error is not None:
        raise RuntimeError(f"{getattr(function, '__name__', function)} failed in the child process: {error}")
    return Measured(seconds, rss, result)


def interleaved_best(steps: dict[str, Callable[[], Measured]], rounds: int) -> dict[str, Measured]:
    """Run every step once per round, alternating, and keep each step's fastest round (with the
    largest peak RSS seen): a busy machine slows both sides of a comparison alike."""
    best: dict[str, Measured] = {}
    for _ in range(rounds):
        for name, step in steps.items():
            measured = step()
            kept = best.get(name)
            if kept is None or measured.seconds < kept.seconds:
                rss = max(measured.peak_rss_mb, kept.peak_rss_mb) if kept else measured.peak_rss_mb
                best[name] = Measured(measured.seconds, rss, measured.result)
    return best
