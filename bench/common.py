"""Shared pieces of the benchmarks: where the models and data are, onnxruntime peers, metrics.

The benchmark models and data live in ../shared/bench (never copied into the project).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

SHARED_BENCH = Path(__file__).resolve().parents[1].parent / "shared" / "bench"
IMAGENET_MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32).reshape(1, 3, 1, 1)
IMAGENET_STD = np.array([0.229, 0.224, 0.225], dtype=np.float32).reshape(1, 3, 1, 1)


@dataclass(frozen=True)
class BenchModel:
    name: str
    path: Path
    calibration: np.ndarray
    evaluation: np.ndarray
    labels: np.ndarray | None  # None where the logits have no meaning as classes
    output: str = "classes"  # "classes": scores per class (N x C); "map": a probability map (N x 1 x H x W)


# imagenet_like models: what their one output is (images 0-31 calibrate, 32-63 evaluate)
IMAGENET_LIKE = {"resnet18_like": "classes", "mobilenetv2_like": "classes", "mobilenetv3_like": "classes",
                 "segnet_like": "map"}
MASK_THRESHOLD = 0.5  # a probability map's mask is prob > 0.5 (../shared/bench/README.md)


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
    for name, output in IMAGENET_LIKE.items():
        if names is not None and name not in names:
            continue
        images = imagenet_images() if images is None else images
        models.append(
            BenchModel(name, SHARED_BENCH / "imagenet_like" / f"{name}.onnx", images[:32], images[32:], None, output)
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


def agreement(reference: np.ndarray, other: np.ndarray, output: str = "classes") -> dict[str, float]:
    """Cosine per sample (mean, min) and, for class scores, top-1 agreement; for a probability
    map, the IoU of the masks `prob > 0.5` instead (mask_iou)."""
    cos = cosine_rows(reference, other)
    metrics = {"cos_mean": float(cos.mean()), "cos_min": float(cos.min())}
    if output == "map":
        return {**metrics, **mask_iou(reference, other)}
    return {"top1_agree": float((reference.argmax(1) == other.argmax(1)).mean()), **metrics}


def mask_iou(reference: np.ndarray, other: np.ndarray, threshold: float = MASK_THRESHOLD) -> dict[str, float]:
    """IoU of the masks `map > threshold`: iou_mean averages each sample's IoU (a sample whose
    masks are both empty counts 1), iou_pooled divides the intersections summed over all
    samples by the unions summed (large masks weigh more)."""
    a = reference.reshape(len(reference), -1) > threshold
    b = other.reshape(len(other), -1) > threshold
    inter = (a & b).sum(axis=1)
    union = (a | b).sum(axis=1)
    per_sample = np.where(union > 0, inter / np.maximum(union, 1), 1.0)
    return {"iou_mean": float(per_sample.mean()),
            "iou_pooled": float(inter.sum() / union.sum()) if union.sum() else 1.0}


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


def run_conditions(started: float) -> str:
    """For a results file's header: the run's wall time since `started` (perf_counter) and the
    machine's load, which other work on its 2 cores keeps high: figures are of a busy machine."""
    import os

    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return (f"run took {time.perf_counter() - started:.0f} s on {os.cpu_count()} cores shared with other work, "
            f"load average {load} (1, 5, 15 min) at the end: absolute times are a busy machine's, compare ratios")


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
    import onnxruntime.quantization  # noqa: F401  (before the clock)

    model_path = static_batch(model_path, Path(out).parent)
    start = time.perf_counter()
    ort_quantize_static(model_path, calibration, out, per_channel, input_name)
    return time.perf_counter() - start


def ort_quantize_static(model_path: Path | str, calibration: np.ndarray, out: Path | str, per_channel: bool = True,
                        input_name: str = "input") -> None:
    """quantize_static (QDQ, MinMax, symmetric int8) of a model whose batch is static."""
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static

    quantize_static(
        str(model_path), str(out), ArrayReader(input_name, calibration), quant_format=QuantFormat.QDQ,
        per_channel=per_channel, activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
        calibrate_method=CalibrationMethod.MinMax,
        extra_options={"ActivationSymmetric": True, "WeightSymmetric": True},
    )


def static_batch(model_path: Path | str, workdir: Path | str, batch: int = 1) -> Path:
    """The model itself, or where its inputs or outputs have a named (dynamic) batch dimension a
    copy in `workdir` with that dimension fixed to `batch`: onnxruntime's quantize_static
    calibrates batch-1 samples, and its shape inference needs the batch fixed."""
    import onnx

    model = onnx.load(str(model_path))
    dynamic = [value for value in (*model.graph.input, *model.graph.output)
               if value.type.tensor_type.shape.dim and value.type.tensor_type.shape.dim[0].dim_param]
    if not dynamic:
        return Path(model_path)
    for value in dynamic:
        value.type.tensor_type.shape.dim[0].dim_value = batch  # clears dim_param (a oneof)
    copy = Path(workdir) / f"{Path(model_path).stem}.batch{batch}.onnx"
    onnx.save(model, str(copy))
    return copy


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


def run_process(argv: list[str], env: dict[str, str] | None = None) -> Measured:
    """Run a command as a process of its own (what a user runs): its wall time, its peak RSS
    and, as the result, its CPU seconds (user + sys of all its threads). Raises with the
    command's last stderr line when it fails."""
    import os
    import subprocess

    with tempfile.TemporaryFile() as errors:
        start = time.perf_counter()
        process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=errors, env={**os.environ, **(env or {})})
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode != 0:
            errors.seek(0)
            last = (errors.read().decode(errors="replace").strip().splitlines() or ["(no message)"])[-1]
            raise RuntimeError(f"{' '.join(argv)} failed ({process.returncode}): {last}")
    return Measured(seconds, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime)
