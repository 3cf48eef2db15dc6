"""Per-iteration cost of recording a PyTorch program, streamcheck_torch
against PyTorch's CUDA sanitizer (CSAN), on the same loop in ONE process
(docs/PERFORMANCE.md, "Capture"): ITERATIONS rounds of wait + kernel +
record on a side stream.

    python3 bench/torch_overhead.py ITERATIONS ROUNDS [TRACE [STREAMCHECK [LONG]]]

In this order (what cannot be turned off comes later):
  bare           ROUNDS runs with no hooks;
  cpp            ROUNDS runs under streamcheck_torch.record(recorder="cpp")
                 (the writing of the trace when the recording ends timed
                 apart: it happens once, after the program's work), each
                 followed by
  idle cpp       a run with the C++ recorder's CUDA trace callbacks left
                 registered and idle (they cannot be removed);
  cpp, no sites  the same with sites=False;
  python         ROUNDS runs under recorder="python", each followed by
  idle both      a run with both recorders' callbacks idle;
  csan           ROUNDS runs under CSAN, turned on last (it cannot be turned off).
Each run starts from a collected heap: importing torch leaves a million
objects pending, and the first full collection (0.2 s on the GPU machine)
would otherwise land in whichever run first allocates enough objects.

Prints the median µs an iteration of each, the overheads - each recorder
against bare, CSAN against "idle both" (so that CSAN is not charged for the
recorders' idle callbacks) - and their ratios. The traces are left in TRACE
(default torch_overhead.trace: the C++ recorder's, with sites),
TRACE.nosites and TRACE.python. With STREAMCHECK (the binary), the analysis
is timed too: `streamcheck check TRACE` and `streamcheck check --stream
TRACE`, process start and parse included, best of five, µs an iteration,
beside CSAN's overhead (whose analysis runs inside the program); and, since
at a few thousand iterations the process start is most of that, one more
recording of LONG iterations (default 100000; before CSAN is turned on) is
checked too, and the cost an iteration is also told as the slope between
the two traces (start and fixed cost out). Exits 77 (CTest: Skipped)
without torch or a GPU."""

import gc
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

try:
    import torch  # noqa: E402
except ImportError:
    print("torch_overhead.py: no torch in this python3: skipped")
    sys.exit(77)


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


def analysis(streamcheck, trace, iterations, *options):
    """µs an iteration of `streamcheck check TRACE [OPTIONS]` (best of five runs)."""
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        done = subprocess.run([streamcheck, "check", trace, *options], capture_output=True, text=True)
        best = min(best, time.perf_counter() - start)
        if done.returncode != 0:
            sys.exit("torch_overhead.py: streamcheck check %s exited %d (the bench loop is correct: clean "
                     "expected):\n%s" % (trace, done.returncode, done.stdout + done.stderr))
    return best / iterations * 1e6


def main():
    import streamcheck_torch

    if not torch.cuda.is_available():
        print("torch_overhead.py: torch.cuda.is_available() is False: skipped")
        sys.exit(77)
    iterations, rounds = int(sys.argv[1]), int(sys.argv[2])
    trace = sys.argv[3] if len(sys.argv) > 3 else "torch_overhead.trace"
    streamcheck = sys.argv[4] if len(sys.argv) > 4 else None
    long_iterations = int(sys.argv[5]) if len(sys.argv) > 5 else 100000
    names = ("bare", "cpp", "cpp written", "idle cpp", "cpp, no sites", "python", "python written", "idle both",
             "csan")
    times = {name: [] for name in names}

    # Warm-ups, out of the timing: kernels loaded, the allocator primed, the
    # C++ recorder built or loaded, and what a dispatch mode imports on its
    # first op (torch._dynamo: seconds).
    timed(100)
    for _ in range(rounds):
        times["bare"].append(timed(iterations)[0])

    def recorder_rounds(recorder, trace, idle, also=lambda: None):
        """ROUNDS recordings with `recorder`, each followed by a round with
        its callbacks idle (named `idle`) and by `also`."""
        timed(100, streamcheck_torch.record(trace, recorder=recorder))
        for _ in range(rounds):
            ran, written = timed(iterations, streamcheck_torch.record(trace, recorder=recorder))
            times[recorder].append(ran)
            times[recorder + " written"].append(written)
            times[idle].append(timed(iterations)[0])
            also()

    recorder_rounds("cpp", trace, "idle cpp", also=lambda: times["cpp, no sites"].append(
        timed(iterations, streamcheck_torch.record(trace + ".nosites", recorder="cpp", sites=False))[0]))
    recorder_rounds("python", trace + ".python", "idle both")
    if streamcheck:  # the long recording for the analysis' slope, while CSAN is still off
        timed(long_iterations, streamcheck_torch.record(trace + ".long", recorder="cpp"))

    import torch.cuda._sanitizer as csan

    csan.enable_cuda_sanitizer()
    timed(100)
    for _ in range(rounds):
        times["csan"].append(timed(iterations)[0])

    median = {name: statistics.median(values) for name, values in times.items()}
    print("GPU: %s, driver-visible CUDA %s, PyTorch %s; %d iterations x %d rounds" % (
        torch.cuda.get_device_name(), torch.version.cuda, torch.__version__, iterations, rounds))
    for name, values in times.items():
        print("  %-15s %7.2f us/iteration (median; %.2f-%.2f)" % (name, median[name], min(values), max(values)))
    theirs = median["csan"] - median["idle both"]
    print("overhead: CSAN %.2f us/iteration" % theirs)
    # The rounds of the C++ recorder and of its idle callbacks alternate, so
    # their difference round by round is spared the machine's drift; the
    # idle callbacks' own cost (registered for good after the first
    # recording) is told against bare, which cannot alternate with them.
    paired = statistics.median(c - i for c, i in zip(times["cpp"], times["idle cpp"]))
    idle = median["idle cpp"] - median["bare"]
    print("paired: cpp - idle cpp %.2f us/iteration (median of rounds), idle cpp - bare %.2f: overhead %.2f,"
          " ratio to CSAN's %.3f" % (paired, idle, paired + idle, (paired + idle) / theirs))
    for name in ("cpp", "cpp, no sites", "python"):
        ours = median[name] - median["bare"]
        written = median.get(name + " written", 0.0)
        print("overhead: %-13s %6.2f us/iteration (+ %.2f writing the trace at the end); ratio to CSAN's %.3f"
              " (with the writing %.3f)" % (name, ours, written, ours / theirs, (ours + written) / theirs))
    if streamcheck:
        for options, what in (((), "check"), (("--stream",), "check --stream")):
            short = analysis(streamcheck, trace, iterations, *options)
            long = analysis(streamcheck, trace + ".long", long_iterations, *options)
            slope = (long * long_iterations - short * iterations) / (long_iterations - iterations)
            print("analysis: streamcheck %-14s %.2f us/iteration at %d iterations, %.2f at %d (process start and"
                  " parse included, best of 5); slope %.3f us/iteration: CSAN's overhead is %.0fx the %d-iteration"
                  " figure, %.0fx the slope" % (what, short, iterations, long, long_iterations, slope,
                                                theirs / long, long_iterations, theirs / slope))


if __name__ == "__main__":
    main()
