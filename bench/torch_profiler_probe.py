"""What a PyTorch recorder built on the profiler's RecordFunction (C++)
instead of a TorchDispatchMode (Python per op) would cost, and what it sees:
the loop of bench/torch_overhead.py in ONE process, interleaved rounds.

    python3 bench/torch_profiler_probe.py ITERATIONS ROUNDS

Rows (µs an iteration, median over ROUNDS):
  bare             no hooks
  profiler         torch.profiler, CPU activity, record_shapes (each op's
                   tensors: storage address, sizes, strides)
  profiler+marks   and a marker (_RecordFunctionFast) at each stream switch
  callbacks        the CUDA trace callbacks on, logging to a flat list, each
                   also dropping a marker so that it can be ordered among the
                   ops (once on, they cannot be turned off: rows after this
                   one have them)
  profiler+all     profiler, stream-switch markers and callbacks: a recorder's
                   floor on these hooks
  dispatch-mode    streamcheck_torch.record as shipped (for the ratio)
  csan             CSAN, last (it cannot be turned off either)
Then the event list of a 2-iteration run, to show what the recorder would
read, and the cost of reading it per iteration."""

import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

import streamcheck_torch  # noqa: E402
from torch_overhead import run, timed as overhead_timed  # noqa: E402

iterations, rounds = int(sys.argv[1]), int(sys.argv[2])
Fast = torch._C._profiler._RecordFunctionFast
log = []
original_set_stream = torch._C._cuda_setStream


def marked_set_stream(*args, **kwargs):
    original_set_stream(*args, **kwargs)
    with Fast("streamcheck::stream"):
        pass
    log.append(("stream", torch._C._cuda_getCurrentRawStream(torch._C._cuda_getDevice())))


def profiler():
    return torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True,
                                  acc_events=True)


class Both:
    def __init__(self, marks):
        self.marks = marks
        self.prof = profiler()

    def __enter__(self):
        if self.marks:
            torch._C._cuda_setStream = marked_set_stream
        self.prof.__enter__()

    def __exit__(self, *exc):
        self.prof.__exit__(*exc)
        torch._C._cuda_setStream = original_set_stream


callbacks_on = [False]


def install_callbacks():
    import torch.cuda._gpu_trace as trace

    def marked(kind):
        def callback(*args):
            with Fast("streamcheck::cb"):
                pass
            log.append((kind,) + args)
        return callback

    trace.register_callback_for_event_record(marked("record"))
    trace.register_callback_for_event_wait(marked("wait"))
    trace.register_callback_for_memory_allocation(marked("alloc"))
    trace.register_callback_for_memory_deallocation(marked("free"))
    trace.register_callback_for_stream_synchronization(marked("sync"))
    torch._C._activate_gpu_trace()
    callbacks_on[0] = True


def timed(context, n=None):
    """µs an iteration of the loop under `context` (torch_overhead's timing:
    a collected heap, the context entered and left around the loop)."""
    del log[:]
    return overhead_timed(n or iterations, context)[0], context


results = {}


def measure(layers):
    for _, make in layers:
        timed(make(), 200)
    for _ in range(rounds):
        for name, make in layers:
            results.setdefault(name, []).append(timed(make())[0])


measure([("bare", lambda: None), ("profiler", lambda: Both(False)), ("profiler+marks", lambda: Both(True))])
install_callbacks()
measure([("callbacks", lambda: None), ("profiler+all", lambda: Both(True)),
         ("dispatch-mode", lambda: streamcheck_torch.record("/tmp/probe.trace", recorder="python"))])

# What the recorder would read: a 2-iteration run with everything on.
_, both = timed(Both(True), 2)
events = both.prof.profiler.kineto_results.events()
print("events of a 2-iteration run (name, start ns, thread, inputs: storage address or value)")
for e in sorted(events, key=lambda e: e.start_ns()):
    if e.device_type() != torch.autograd.DeviceType.CPU:
        continue
    shapes = e.shapes()
    print("  %-32s %d tid=%d shapes=%s" % (e.name(), e.start_ns(), e.start_thread_id(), shapes))
print("callback log:", log)
tree = both.prof.profiler.kineto_results.experimental_event_tree()


def walk(nodes, depth=0):
    for node in nodes:
        extra = node.extra_fields
        inputs = getattr(extra, "inputs", None)
        summary = []
        for value in inputs or ():
            if hasattr(value, "storage_data_ptr"):
                summary.append("T(%#x,%s,%s)" % (value.storage_data_ptr or 0, list(value.sizes), value.dtype))
            else:
                summary.append(repr(value)[:40])
        print("  " * (depth + 1) + "%s [%s] %s" % (node.name, type(extra).__name__, ", ".join(summary)))
        walk(node.children, depth + 1)


walk(tree)

# The cost of reading a full run's events afterwards (analysis, not recording).
_, both = timed(Both(True))
start = time.perf_counter()
count = 0
for node in both.prof.profiler.kineto_results.experimental_event_tree():
    stack = [node]
    while stack:
        n = stack.pop()
        for value in getattr(n.extra_fields, "inputs", None) or ():
            if hasattr(value, "storage_data_ptr"):
                count += 1
        stack.extend(n.children)
read = (time.perf_counter() - start) / iterations * 1e6

import torch.cuda._sanitizer as csan  # noqa: E402

csan.enable_cuda_sanitizer()
timed(None, 200)
for _ in range(rounds):
    results.setdefault("csan", []).append(timed(None)[0])

median = {k: statistics.median(v) for k, v in results.items()}
print("GPU: %s, PyTorch %s; %d iterations x %d rounds, µs an iteration (median; min-max)" % (
    torch.cuda.get_device_name(), torch.__version__, iterations, rounds))
for k, v in results.items():
    print("  %-16s %7.2f  (%.2f-%.2f)" % (k, median[k], min(v), max(v)))
csan_over = median["csan"] - median["callbacks"]
for k in ("profiler", "profiler+marks", "profiler+all", "dispatch-mode"):
    base = median["bare"]
    print("  %-16s overhead %6.2f us = %.3f of CSAN's %.2f" % (k, median[k] - base, (median[k] - base) / csan_over,
                                                            csan_over))
print("reading the events afterwards: %.2f us an iteration (%d tensor inputs)" % (read, count))
