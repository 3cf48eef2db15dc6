"""Per-iteration cost of recording a PyTorch program (docs/PERFORMANCE.md):
ITERATIONS rounds of wait + kernel + record on a side stream, run bare, under
streamcheck_torch.record, or under PyTorch's CUDA sanitizer (CSAN).
One mode per process (CSAN cannot be turned off once on):

    python3 bench/torch_overhead.py bare|dispatch|callbacks|floor|streamcheck|csan ITERATIONS [TRACE]

`dispatch` runs under an empty TorchDispatchMode (it only calls the op);
`callbacks` with PyTorch's CUDA trace callbacks on, each an empty function;
`floor` with both: what any recorder built on these hooks pays before doing
anything, CSAN and streamcheck_torch alike.

Prints one line: mode, iterations, microseconds per iteration."""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

import torch  # noqa: E402

mode, iterations = sys.argv[1], int(sys.argv[2])
trace = sys.argv[3] if len(sys.argv) > 3 else "torch_overhead.trace"
if mode == "csan":
    import torch.cuda._sanitizer as csan

    csan.enable_cuda_sanitizer()


def run(n):
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


# Warm-up, out of the timing: kernels loaded, the allocator primed, and what
# a mode imports on its first op (a dispatch mode pulls in torch._dynamo: 3 s
# on the GPU machine) already imported.
if mode in ("callbacks", "floor"):
    import torch.cuda._gpu_trace as gpu_trace

    def nothing(*args):
        pass

    for register in (gpu_trace.register_callback_for_event_creation, gpu_trace.register_callback_for_event_record,
                     gpu_trace.register_callback_for_event_wait, gpu_trace.register_callback_for_memory_allocation,
                     gpu_trace.register_callback_for_memory_deallocation):
        register(nothing)
    torch._C._activate_gpu_trace()

if mode in ("dispatch", "floor"):
    from torch.utils._python_dispatch import TorchDispatchMode

    class Empty(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

if mode == "streamcheck":
    import streamcheck_torch

    with streamcheck_torch.record(trace):
        run(100)
elif mode in ("dispatch", "floor"):
    with Empty():
        run(100)
else:
    run(100)
start = time.perf_counter()
if mode == "streamcheck":
    with streamcheck_torch.record(trace):
        run(iterations)
elif mode in ("dispatch", "floor"):
    with Empty():
        run(iterations)
else:
    run(iterations)
seconds = time.perf_counter() - start
print("%s %d %.2f us/iteration" % (mode, iterations, seconds / iterations * 1e6))
