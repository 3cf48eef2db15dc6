"""Record what a PyTorch program does with CUDA streams, events and memory as a
streamcheck trace (docs/CAPTURE.md), then check it in every schedule:

    import streamcheck_torch
    with streamcheck_torch.record("run.trace"):
        ...  # the code to check
    # then: streamcheck explore run.trace

PyTorch's own hooks only (stdlib + torch): a TorchDispatchMode sees every
aten op with its schema (which tensors it writes), the CUDA trace callbacks
(torch.cuda._gpu_trace) see streams, events, syncs and the caching
allocator's block allocations and frees, and torch.cuda.memory's snapshot
names the segments those blocks are carved from.
"""

import os
import sys
import threading

from . import writer as _w

__all__ = ["record", "Recording"]

_HERE = os.path.dirname(os.path.abspath(__file__))

# Ops that make a tensor without running a kernel on it.
_NO_KERNEL_PREFIXES = ("aten.empty", "aten.new_empty", "aten.empty_strided", "aten._unsafe_view", "aten.lift_fresh")
# Copies between host and device memory that return once done (.cpu(),
# .item(), .to("cuda")), unless non_blocking=True.
_HOST_COPY_PREFIXES = ("aten._to_copy", "aten.copy_", "aten._copy_from", "aten._local_scalar_dense")


def _torch_dir():
    import torch

    return os.path.dirname(os.path.abspath(torch.__file__))


class Recording:
    """One recording: the actions it saw and, at the end, the trace."""

    def __init__(self, path):
        self.path = path
        self.writer = _w.TraceWriter()
        self.actions = self.writer.actions
        self.thread = threading.get_ident()
        self.skip_dirs = (_HERE,)
        self.library_code = {}  # code object -> inside torch or this module

    # -- call sites -----------------------------------------------------------

    def site(self):
        """(file, line) of the program's own frame that led here."""
        frame = sys._getframe(2)
        library = self.library_code
        while frame is not None:
            code = frame.f_code
            inside = library.get(code)
            if inside is None:
                inside = library[code] = code.co_filename.startswith(self.skip_dirs)
            if not inside:
                return (code.co_filename, frame.f_lineno)
            frame = frame.f_back
        return None

    # -- segments -------------------------------------------------------------

    def segments(self):
        """The caching allocator's segments, from its snapshot, once: the
        writer declares them all at the start of the trace."""
        import torch

        for seg in torch.cuda.memory._snapshot()["segments"]:
            self.actions.append((_w.SEGMENT, seg["address"], seg["total_size"]))

    # -- callbacks (torch.cuda._gpu_trace) that need more than their arguments

    def on_sync_stream(self, stream):
        self.actions.append((_w.SYNC_STREAM, stream, self.site()))

    def on_alloc(self, address):
        self.actions.append((_w.ALLOC, address, _current_stream_handle()))

    # -- the end --------------------------------------------------------------

    def finish(self):
        self.segments()
        program = " ".join(sys.argv) if sys.argv and sys.argv[0] else "python"
        text = self.writer.text(program)
        with open(self.path, "w", encoding="utf-8") as f:
            f.write(text)


def _current_stream_handle():
    """The current CUDA stream's handle (0: the legacy default stream), read
    without making a torch.cuda.Stream object."""
    import torch

    return torch._C._cuda_getCurrentRawStream(torch._C._cuda_getDevice())


_callbacks_installed = False
_current = [None]  # the recording the callbacks feed (one at a time)


def _install_callbacks():
    """The CUDA trace callbacks cannot be removed once registered: register
    forwarders once, feeding whichever recording is active."""
    global _callbacks_installed
    if _callbacks_installed:
        return
    import torch
    import torch.cuda._gpu_trace as trace

    # Each callback is one list append: they run on every event record and
    # wait of the program.
    def appender(kind):
        def callback(*args):
            rec = _current[0]
            if rec is not None:
                rec.actions.append((kind,) + args)

        return callback

    def forward(method):
        def callback(*args):
            rec = _current[0]
            if rec is not None:
                getattr(rec, method)(*args)

        return callback

    trace.register_callback_for_stream_creation(appender(_w.STREAM))
    trace.register_callback_for_event_creation(appender(_w.EVENT))
    trace.register_callback_for_event_deletion(appender(_w.EVENT_GONE))
    trace.register_callback_for_event_record(appender(_w.RECORD))
    trace.register_callback_for_event_wait(appender(_w.WAIT))
    trace.register_callback_for_stream_synchronization(forward("on_sync_stream"))
    trace.register_callback_for_event_synchronization(appender(_w.SYNC_EVENT))
    trace.register_callback_for_device_synchronization(appender(_w.SYNC_DEVICE))
    trace.register_callback_for_memory_allocation(forward("on_alloc"))
    trace.register_callback_for_memory_deallocation(appender(_w.FREE))
    torch._C._activate_gpu_trace()
    _callbacks_installed = True


def _dispatch_mode(rec):
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    record_stream_op = torch.ops.aten.record_stream.default
    raw_stream = torch._C._cuda_getCurrentRawStream
    get_device = torch._C._cuda_getDevice
    actions = rec.actions
    Tensor = torch.Tensor

    def access(value, mode, out):
        """Appends what the op does to `value` (a tensor, or a list of them);
        False when a tensor is in host memory. Kept to attribute reads: the
        segment of each block is looked up once, when the recording ends."""
        if isinstance(value, Tensor):
            if not value.is_cuda:
                return False
            storage = value.untyped_storage()
            out.append((storage.data_ptr(), storage.nbytes(), value.data_ptr(), value.nbytes, mode,
                        value.is_contiguous()))
            return True
        on_device = True
        if isinstance(value, (list, tuple)):
            for v in value:
                if isinstance(v, Tensor):
                    on_device &= access(v, mode, out)
        return on_device

    plans = {}  # func -> (name, argument plan, return plan), worked out once per op

    def plan_of(func):
        schema = func._schema
        arguments = []
        for i, arg in enumerate(schema.arguments):
            alias = arg.alias_info
            if alias is not None and alias.is_write:
                mode = _w.WRITE if arg.name == "out" else _w.READ | _w.WRITE
            elif alias is not None:
                continue  # a view of its input: no kernel touches it
            else:
                mode = _w.READ
            arguments.append((i, arg.name, mode))
        name = str(func)
        returns = []
        if not name.startswith(_NO_KERNEL_PREFIXES):
            # A return with alias_info is a view, or the written input again.
            returns = [r.alias_info is None for r in schema.returns]
        plans[func] = (name, arguments, returns, name.startswith(_HOST_COPY_PREFIXES))
        return plans[func]

    class Mode(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            result = func(*args, **kwargs)
            if func is record_stream_op:
                t, stream = args[0], args[1]
                handle = getattr(stream, "cuda_stream", None)
                if handle is None:  # a torch.Stream: its CUDA stream by id
                    handle = torch.cuda.Stream(stream_id=stream.stream_id, device_index=stream.device_index,
                                               device_type=stream.device_type).cuda_stream
                actions.append((_w.RECORD_STREAM, t.untyped_storage().data_ptr(), handle, rec.site()))
                return result
            plan = plans.get(func) or plan_of(func)
            accesses = []
            cpu = False
            n = len(args)
            for i, arg_name, mode in plan[1]:
                value = args[i] if i < n else kwargs.get(arg_name)
                if value is not None:
                    cpu |= not access(value, mode, accesses)
            if plan[2]:
                for written, value in zip(plan[2], result if isinstance(result, tuple) else (result,)):
                    if written:
                        cpu |= not access(value, _w.WRITE, accesses)
            if not accesses:
                return result
            stream = raw_stream(get_device())
            actions.append((_w.OP, plan[0], stream, accesses, rec.site()))
            if plan[3] and (cpu or plan[0].startswith("aten._local_scalar_dense")) and not kwargs.get(
                "non_blocking", False
            ):
                # A copy to or from host memory (.cpu(), .item(), .to("cuda")):
                # it returns once the copy is done.
                actions.append((_w.SYNC_STREAM, stream, rec.site()))
            return result

    return Mode()


class record:
    """``with streamcheck_torch.record("run.trace"):`` writes the trace of
    the block's CUDA work when the block ends (also when it raises)."""

    def __init__(self, path="streamcheck-torch.trace"):
        self.path = path
        self.recording = None
        self.mode = None

    def __enter__(self):
        import torch

        if not torch.cuda.is_available():
            raise RuntimeError("streamcheck_torch.record needs a CUDA device: torch.cuda.is_available() is False")
        if _current[0] is not None:
            raise RuntimeError("streamcheck_torch.record is already recording; recordings do not nest")
        torch.cuda.init()
        rec = Recording(self.path)
        rec.skip_dirs = (_HERE, _torch_dir())
        _install_callbacks()
        self.recording = rec
        self.mode = _dispatch_mode(rec)
        _current[0] = rec
        self.mode.__enter__()
        return rec

    def __exit__(self, *exc):
        try:
            self.mode.__exit__(*exc)
        finally:
            _current[0] = None
            if exc and exc[0] is not None:
                self.recording.writer.note("the recorded block raised %s: the trace stops where it did" % exc[0].__name__)
            self.recording.finish()
        return False
