"""Where the Python recorder's time goes (docs/PERFORMANCE.md, "Capture"):
the loop of bench/torch_overhead.py (wait + kernel + record on a side
stream) run in ONE process, in interleaved rounds, under each layer of hooks
in turn, and the price of each Python call the recorder makes per tensor.

    python3 bench/torch_breakdown.py ITERATIONS ROUNDS [PACKAGE_DIR]

Layers, each a row (µs an iteration, median over ROUNDS):
  bare          no hooks
  empty-mode    a TorchDispatchMode that only calls the op
  callbacks     the CUDA trace callbacks on (streamcheck_torch's forwarders,
                recording nothing): once on they cannot be turned off, so
                these rows come after the first two
  empty-unwrapped  the same, without the wrapper TorchDispatchMode puts
                around a subclass's __torch_dispatch__
  floor         both: what any recorder built on these hooks pays
  streamcheck   streamcheck_torch.record(recorder="python")
  streamcheck-nosite  the same with sites=False (no call sites)
With PARTS set, three more rows (callbacks on): dispatch modes doing part of
the recorder's work per op (see partial_recorder).
PACKAGE_DIR (default: python/ of this checkout) is where streamcheck_torch
is imported from, to compare two versions of the recorder.
With PROFILE set, one recorded run under cProfile follows (top 25 by own time).
CSAN cannot be turned off either: bench/torch_overhead.py csan measures it
in a process of its own."""

import contextlib
import cProfile
import gc
import inspect
import os
import pstats
import statistics
import sys
import tempfile
import time
import timeit

sys.path.insert(0, sys.argv[3] if len(sys.argv) > 3 else
                os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

import torch  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

import streamcheck_torch  # noqa: E402
from torch_overhead import run  # noqa: E402  (the same loop)

iterations, rounds = int(sys.argv[1]), int(sys.argv[2])


class Empty(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def plan_of(func):
    """The tensor arguments of an op: [(index, name)]."""
    return [(i, a.name) for i, a in enumerate(func._schema.arguments) if "Tensor" in str(a.type)]


def partial_recorder(work):
    """A dispatch mode doing part of the recorder's work per op, to tell
    where its time goes; like the recorder, it logs numbers on one flat list.
    "op": the op's plan, the current stream; "op+site": and the call site;
    "op+ptr": and each tensor's device, address, size and layout;
    "op+storage": and each tensor's storage (its address and size), as the
    recorder reads them."""
    plans = {}
    log = []
    extend = log.extend
    torch_dir = os.path.dirname(torch.__file__)
    raw_stream, get_device, Tensor = torch._C._cuda_getCurrentRawStream, torch._C._cuda_getDevice, torch.Tensor

    class Partial(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            result = func(*args, **kwargs) if kwargs else func(*args)
            plan = plans.get(func)
            if plan is None:
                plan = plans[func] = plan_of(func)
            extend((1, "op", raw_stream(get_device())))
            if work == "op+site":
                frame = sys._getframe(1)
                while frame is not None and frame.f_code.co_filename.startswith(torch_dir):
                    frame = frame.f_back
                if frame is not None:
                    extend((frame.f_code.co_filename, frame.f_lineno))
            elif work != "op":
                n = len(args)
                for i, name in plan:
                    t = args[i] if i < n else (kwargs.get(name) if kwargs else None)
                    if isinstance(t, Tensor) and t.is_cuda:
                        if work == "op+ptr":
                            extend((t.data_ptr(), t.nbytes, 1, t.is_contiguous()))
                        else:
                            storage = t.untyped_storage()
                            extend((storage.data_ptr(), storage.nbytes(), t.data_ptr(), t.nbytes, 1,
                                    t.is_contiguous()))
            return result

    return Partial()


PARTS = ("op", "op+site", "op+ptr", "op+storage")


class EmptyUnwrapped(TorchDispatchMode):
    pass


def _call_op(self, func, types, args=(), kwargs=None):
    return func(*args, **(kwargs or {}))


# Set after the class is made: TorchDispatchMode wraps a subclass's own
# __torch_dispatch__ when the class is made (so that dynamo does not trace
# into it); this row shows what that wrapper costs.
EmptyUnwrapped.__torch_dispatch__ = _call_op

trace = os.path.join(tempfile.mkdtemp(), "breakdown.trace")


def timed(layer):
    """µs an iteration of the loop under `layer`; for the recorder, the
    writing of the trace when the recording ends is timed apart (into
    results[layer + " (trace written)"]): it happens once, after the program's
    work, and is part of the analysis, not of the run."""
    if layer in ("empty-mode", "floor"):
        context = Empty()
    elif layer == "empty-unwrapped":
        context = EmptyUnwrapped()
    elif layer in PARTS:
        context = partial_recorder(layer)
    elif layer == "streamcheck":
        context = streamcheck_torch.record(trace, recorder="python")
    elif layer == "streamcheck-nosite":
        context = streamcheck_torch.record(trace, sites=False, recorder="python")
    else:
        context = contextlib.nullcontext()
    gc.collect()  # each layer from a collected heap (see bench/torch_overhead.py)
    collected = [generation["collections"] for generation in gc.get_stats()]
    start = time.perf_counter()
    context.__enter__()
    run(iterations)
    ran = time.perf_counter()
    context.__exit__(None, None, None)
    end = time.perf_counter()
    collections[layer] = [after["collections"] - before for after, before in zip(gc.get_stats(), collected)]
    if layer.startswith("streamcheck"):
        results.setdefault(layer + " (trace written)", []).append((end - ran) / iterations * 1e6)
    return (ran - start) / iterations * 1e6


results = {}
collections = {}  # layer -> garbage collections of each generation in its last timed run (trace written included)


def measure(layers):
    for layer in layers:  # warm-up, out of the timing
        timed(layer)
    for key in [k for k in results if k.endswith("(trace written)")]:
        del results[key]
    for _ in range(rounds):
        for layer in layers:
            results.setdefault(layer, []).append(timed(layer))


measure(["bare", "empty-mode", "empty-unwrapped"])
streamcheck_torch._install_callbacks()
measure(["callbacks", "floor"] + (list(PARTS) if os.environ.get("PARTS") else []) + ["streamcheck"]
        + (["streamcheck-nosite"] if "sites" in inspect.signature(streamcheck_torch.record).parameters else []))

print("GPU: %s, PyTorch %s" % (torch.cuda.get_device_name(), torch.__version__))
print("%d iterations x %d rounds, µs an iteration (median; min-max)" % (iterations, rounds))
for layer, values in results.items():
    print("  %-34s %7.2f  (%.2f-%.2f)  %s" % (layer, statistics.median(values), min(values), max(values),
                                              "gc %s" % collections[layer] if layer in collections else ""))

# The calls the recorder makes per tensor and per op, µs a call (best of 5).
t = torch.ones(1 << 16, device="cuda")
rec = streamcheck_torch.Recording(trace)
calls = {
    "t.is_cuda": lambda: t.is_cuda,
    "t.untyped_storage()": lambda: t.untyped_storage(),
    "storage.data_ptr()+nbytes()": (lambda s: lambda: (s.data_ptr(), s.nbytes()))(t.untyped_storage()),
    "t.data_ptr()": lambda: t.data_ptr(),
    "t.nbytes": lambda: t.nbytes,
    "t.is_contiguous()": lambda: t.is_contiguous(),
    "t.storage_offset()": lambda: t.storage_offset(),
    "current raw stream": lambda: torch._C._cuda_getCurrentRawStream(torch._C._cuda_getDevice()),
    "call site (frame walk)": lambda: rec.site(),
    "list append of a tuple": (lambda a: lambda: a.append((1, 2, 3)))([]),
}
print("calls, µs each (best of 5 x 20000)")
for name, call in calls.items():
    best = min(timeit.repeat(call, number=20000, repeat=5)) / 20000 * 1e6
    print("  %-28s %6.3f" % (name, best))

if os.environ.get("PROFILE"):
    profile = cProfile.Profile()
    with streamcheck_torch.record(trace, recorder="python"):
        profile.runcall(run, iterations)
    pstats.Stats(profile).sort_stats("tottime").print_stats(25)

if os.environ.get("GC_TYPES"):
    # Which objects a layer leaves behind for the garbage collector: each
    # surviving container counts towards the next collection.
    import collections

    for layer in ["bare", "empty-mode", "floor", "streamcheck"]:
        gc.collect()
        gc.disable()
        before = collections.Counter(type(o).__name__ for o in gc.get_objects())
        context = Empty() if layer in ("empty-mode", "floor") else (
            streamcheck_torch.record(trace, recorder="python") if layer == "streamcheck" else contextlib.nullcontext())
        with context:
            run(1000)
            after = collections.Counter(type(o).__name__ for o in gc.get_objects())
        gc.enable()
        grown = (after - before).most_common(8)
        print("%-12s objects left for the collector after 1000 iterations: %s" % (layer, grown))
