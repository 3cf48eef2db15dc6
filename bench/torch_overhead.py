"""Per-iteration cost of recording a PyTorch program, streamcheck_torch
against PyTorch's CUDA sanitizer (CSAN), on the same loop in ONE process
(docs/PERFORMANCE.md, "Capture"): ITERATIONS rounds of wait + kernel +
record on a side stream.

    python3 bench/torch_overhead.py ITERATIONS ROUNDS [TRACE]

In this order (what cannot be turned off comes later):
  bare         ROUNDS runs with no hooks;
  streamcheck  ROUNDS runs under streamcheck_torch.record (the writing of
               the trace when the recording ends timed apart: it happens
               once, after the program's work), each followed by
  callbacks    a run with the recorder's CUDA trace callbacks left
               registered and idle (they cannot be removed);
  csan         ROUNDS runs under CSAN, turned on last (it cannot be turned off).
Each run starts from a collected heap: importing torch leaves a million
objects pending, and the first full collection (0.2 s on the GPU machine)
would otherwise land in whichever run first allocates enough objects.

Prints the median µs an iteration of each, the two overheads - streamcheck
against bare, CSAN against callbacks (so that CSAN is not charged for the
recorder's idle callbacks) - and their ratio. The last recording's trace
is left in TRACE (default torch_overhead.trace)."""

import gc
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

import torch  # noqa: E402


def run(n):
    """The measured loop: a side stream waits for the main stream, runs one
    kernel, records an event the main stream waits on at the end."""
    main = torch.cuda.current_stream()
    side = torch.cuda.Stream()
    x = torch.ones(1 << 16, device="cuda")
    y = torch.empty_like(x)
    produced = torch.cuda.Event()
    consumed = torch.cuda.Event()
    produced.record(main)
    for _ in range(n):
        side.wait_event(produced)
        with torch.cuda.stream(side):
            torch.mul(x, 2, out=y)
        consumed.record(side)
    main.wait_event(consumed)
    torch.cuda.synchronize()


def timed(n, context=None):
    """(µs an iteration of the loop, µs an iteration of leaving `context`)."""
    gc.collect()
    start = time.perf_counter()
    if context is not None:
        context.__enter__()
    run(n)
    ran = time.perf_counter()
    if context is not None:
        context.__exit__(None, None, None)
    return (ran - start) / n * 1e6, (time.perf_counter() - ran) / n * 1e6


def main():
    import streamcheck_torch

    iterations, rounds = int(sys.argv[1]), int(sys.argv[2])
    trace = sys.argv[3] if len(sys.argv) > 3 else "torch_overhead.trace"
    times = {"bare": [], "streamcheck": [], "trace written": [], "callbacks": [], "csan": []}

    # Warm-ups, out of the timing: kernels loaded, the allocator primed, and
    # what a dispatch mode imports on its first op (torch._dynamo: seconds).
    timed(100)
    for _ in range(rounds):
        times["bare"].append(timed(iterations)[0])
    timed(100, streamcheck_torch.record(trace))
    for _ in range(rounds):
        ran, written = timed(iterations, streamcheck_torch.record(trace))
        times["streamcheck"].append(ran)
        times["trace written"].append(written)
        times["callbacks"].append(timed(iterations)[0])
    import torch.cuda._sanitizer as csan

    csan.enable_cuda_sanitizer()
    timed(100)
    for _ in range(rounds):
        times["csan"].append(timed(iterations)[0])

    median = {name: statistics.median(values) for name, values in times.items()}
    print("GPU: %s, driver-visible CUDA %s, PyTorch %s; %d iterations x %d rounds" % (
        torch.cuda.get_device_name(), torch.version.cuda, torch.__version__, iterations, rounds))
    for name, values in times.items():
        print("  %-14s %7.2f us/iteration (median; %.2f-%.2f)" % (name, median[name], min(values), max(values)))
    ours = median["streamcheck"] - median["bare"]
    theirs = median["csan"] - median["callbacks"]
    print("overhead: streamcheck_torch %.2f us/iteration (+ %.2f writing the trace at the end), CSAN %.2f;"
          " ratio %.3f (with the writing %.3f)" % (ours, median["trace written"], theirs, ours / theirs,
                                                  (ours + median["trace written"]) / theirs))


if __name__ == "__main__":
    main()
