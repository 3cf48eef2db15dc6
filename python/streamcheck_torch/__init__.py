"""Record what a PyTorch program does with CUDA streams, events and memory as a
streamcheck trace (docs/CAPTURE.md), then check it in every schedule:

    import streamcheck_torch
    with streamcheck_torch.record("run.trace"):
        ...  # the code to check
    # then: streamcheck explore run.trace

PyTorch's own hooks only (stdlib + torch): every aten op with its schema
(which tensors it writes), the CUDA trace callbacks (torch.cuda._gpu_trace)
for streams, events, syncs and the caching allocator's block allocations and
frees, and torch.cuda.memory's snapshot for the segments those blocks are
carved from. Two recorders see the ops (docs/CAPTURE.md, "PyTorch"):

- "cpp" (_recorder.cpp): an at::RecordFunction callback, built on first use
  by torch.utils.cpp_extension (a C++ compiler is all it needs; the build is
  cached), with the trace callbacks calling it directly: about a tenth of
  CSAN's overhead (docs/PERFORMANCE.md, "Capture");
- "python": a TorchDispatchMode, in Python.

``recorder="auto"`` (the default, or STREAMCHECK_TORCH_RECORDER) takes the
C++ one and falls back to Python, saying why on stderr and in the trace.
"""

import os
import sys
import threading

from . import writer as _w

__all__ = ["record", "Recording"]

_HERE = os.path.dirname(os.path.abspath(__file__))

# The C++ recorder's record kinds, in the order of enum Kind in
# _recorder.cpp (tests/capture/test_torch_writer.py checks the two agree).
_CPP_KINDS = (_w.OP, _w.STREAM, _w.EVENT, _w.EVENT_GONE, _w.RECORD, _w.WAIT, _w.SYNC_STREAM, _w.SYNC_EVENT,
              _w.SYNC_DEVICE, _w.ALLOC, _w.FREE, _w.RECORD_STREAM)
_RECORDERS = ("auto", "cpp", "python")

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
        self.cpp = None  # the C++ recorder's module, when it records
        self.writer = _w.TraceWriter()
        self.actions = self.writer.actions
        self.thread = threading.get_ident()
        self.skip_dirs = (_HERE,)
        self.library_files = {}  # file name -> inside torch or this module

    # -- call sites -----------------------------------------------------------

    def site(self):
        """(file, line) of the program's own frame that led here."""
        return _program_site(sys._getframe(2), self.library_files, self.skip_dirs)

    # -- segments -------------------------------------------------------------

    def segments(self):
        """The caching allocator's segments, from its snapshot, once: the
        writer declares them all at the start of the trace."""
        import torch

        for seg in torch.cuda.memory._snapshot()["segments"]:
            self.actions += (_w.SEGMENT, seg["address"], seg["total_size"])

    # -- callbacks (torch.cuda._gpu_trace) that need more than their arguments

    def on_sync_stream(self, stream):
        self.actions += (_w.SYNC_STREAM, stream) + (self.site() or (None, 0))

    def on_alloc(self, address):
        self.actions += (_w.ALLOC, address, _current_stream_handle())

    # -- the end --------------------------------------------------------------

    def compiled_code(self):
        """Says so when torch.compile compiled code in this process: the
        Triton kernels its generated code launches go to the driver
        directly, past the dispatcher and both recorders, so the trace may
        lack them (`streamcheck capture -- python3 ...` sees driver
        launches: docs/CAPTURE.md)."""
        dynamo = sys.modules.get("torch._dynamo")
        try:
            frames = dynamo.utils.counters["frames"]["ok"] if dynamo is not None else 0
        except (AttributeError, KeyError, TypeError):
            return
        if frames:
            what = ("code torch.compile compiled (%d frames in this process) may have run: the Triton kernels it "
                    "launches itself are not in this trace" % frames)
            self.writer.note(what)
            sys.stderr.write("streamcheck_torch: %s (streamcheck capture -- python3 ... sees them)\n" % what)

    def finish(self):
        if self.cpp is not None:
            self.actions += self.cpp.take(_raw_stream_handle)
        self.compiled_code()
        self.segments()
        program = " ".join(sys.argv) if sys.argv and sys.argv[0] else "python"
        text = self.writer.text(program)
        with open(self.path, "w", encoding="utf-8") as f:
            f.write(text)


def _library_file(file, skip_dirs):
    """Whether a frame's file is torch's or this module's, not the
    program's: `skip_dirs` are absolute, the file as it was imported (a
    sys.path entry with ".." in it stays in the name)."""
    return os.path.abspath(file).startswith(skip_dirs)


def _program_site(frame, library, skip_dirs):
    """(file, line) of the first frame from `frame` outwards that is the
    program's own, not torch's or this module's; `library` remembers the
    answer for each file (by name: a str keeps its hash, a code object
    computes it anew each time)."""
    while frame is not None:
        file = frame.f_code.co_filename
        inside = library.get(file)
        if inside is None:
            inside = library[file] = _library_file(file, skip_dirs)
        if not inside:
            return (file, frame.f_lineno)
        frame = frame.f_back
    return None


def _current_stream_handle():
    """The current CUDA stream's handle (0: the legacy default stream), read
    without making a torch.cuda.Stream object."""
    import torch

    return torch._C._cuda_getCurrentRawStream(torch._C._cuda_getDevice())


def _raw_stream_handle(stream_id, device_index, device_type):
    """The CUDA stream handle of a c10 stream (the C++ recorder's ops name
    their stream so: the trace callbacks name it by handle)."""
    import torch

    return torch.cuda.Stream(stream_id=stream_id, device_index=device_index, device_type=device_type).cuda_stream


_cpp = {}  # "module": the built C++ recorder, or "why": why it cannot be used


def _cpp_recorder():
    """(the C++ recorder's module, None), or (None, why it cannot be used).
    torch.utils.cpp_extension builds _recorder.cpp once per machine and
    source (seconds to a minute) and loads it from its cache afterwards."""
    if not _cpp:
        try:
            from torch.utils import cpp_extension

            import torch

            # The headers' debug-only members must be as libtorch was built:
            # at::RecordFunction has one more field without NDEBUG.
            flags = ["-O2", "-Wall", "-Wextra"] + ([] if torch.version.debug else ["-DNDEBUG"])
            _cpp["module"] = cpp_extension.load(name="streamcheck_torch_recorder",
                                                sources=[os.path.join(_HERE, "_recorder.cpp")],
                                                extra_cflags=flags, verbose=False)
        except Exception as e:  # no compiler, no headers, no ninja: what the build said last
            lines = [line for line in str(e).splitlines() if line.strip()]
            _cpp["why"] = "it could not be built (%s: %s)" % (type(e).__name__, lines[-1] if lines else "(no message)")
    return _cpp.get("module"), _cpp.get("why")


_cpp_callbacks_installed = False


def _install_cpp_callbacks(cpp):
    """The C++ recorder's functions as the CUDA trace callbacks themselves
    (no Python frame between); they do nothing while it does not record.
    Registered once: they cannot be removed."""
    global _cpp_callbacks_installed
    if _cpp_callbacks_installed:
        return
    import torch
    import torch.cuda._gpu_trace as trace

    trace.register_callback_for_stream_creation(cpp.on_stream)
    trace.register_callback_for_event_creation(cpp.on_event)
    trace.register_callback_for_event_deletion(cpp.on_event_gone)
    trace.register_callback_for_event_record(cpp.on_record)
    trace.register_callback_for_event_wait(cpp.on_wait)
    trace.register_callback_for_stream_synchronization(cpp.on_sync_stream)
    trace.register_callback_for_event_synchronization(cpp.on_sync_event)
    trace.register_callback_for_device_synchronization(cpp.on_sync_device)
    trace.register_callback_for_memory_allocation(cpp.on_alloc)
    trace.register_callback_for_memory_deallocation(cpp.on_free)
    torch._C._activate_gpu_trace()
    _cpp_callbacks_installed = True


_callbacks_installed = False
_current = [None]  # the recording the Python recorder's callbacks feed
_active = [None]  # the recording under way, by either recorder (one at a time)


def _install_callbacks():
    """The CUDA trace callbacks cannot be removed once registered: register
    forwarders once, feeding whichever recording is active."""
    global _callbacks_installed
    if _callbacks_installed:
        return
    import torch
    import torch.cuda._gpu_trace as trace

    # Each callback is one list extend: they run on every event record and
    # wait of the program.
    def appender(kind):
        def callback(*args):
            rec = _current[0]
            if rec is not None:
                rec.actions += (kind,) + args

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


def _tensor_argument(type_):
    """How a schema argument of this type holds tensors: None (it holds
    none), "one" (Tensor, Tensor?) or "many" (Tensor[], Tensor?[])."""
    text = str(type_)
    if "Tensor" not in text:
        return None
    return "many" if ("[]" in text or text.startswith("List")) else "one"


def _dispatch_mode(rec, sites):
    """The TorchDispatchMode that records each op. It runs on every aten op
    of the program, so it is written for speed (docs/PERFORMANCE.md,
    "Capture"): each op's schema is read once into a plan, the work per op
    is plain loops appending numbers and strings to the recording's one flat
    list (no object per op for the garbage collector to visit), and nothing
    here keeps a tensor alive (the caching allocator must free and reuse blocks
    as it would without the recorder)."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    record_stream_op = torch.ops.aten.record_stream.default
    raw_stream = torch._C._cuda_getCurrentRawStream
    get_device = torch._C._cuda_getDevice
    get_frame = sys._getframe
    Tensor = torch.Tensor
    actions = rec.actions
    extend = actions.extend
    library = rec.library_files
    skip_dirs = rec.skip_dirs
    OP, SYNC_STREAM, RECORD_STREAM, READ, WRITE = _w.OP, _w.SYNC_STREAM, _w.RECORD_STREAM, _w.READ, _w.WRITE
    ACCESS_FIELDS = _w.ACCESS_FIELDS
    OP_FIELDS = 1 + _w.OP_HEADER_FIELDS

    plans = {}  # func -> (name, tensor arguments, returns written, host copy, scalar read, non_blocking position)

    def plan_of(func):
        if func is record_stream_op:
            plans[func] = None
            return None
        schema = func._schema
        arguments = []  # (index, name, mode, many)
        for i, arg in enumerate(schema.arguments):
            holds = _tensor_argument(arg.type)
            if holds is None:
                continue
            alias = arg.alias_info
            if alias is not None and alias.is_write:
                mode = WRITE if arg.name == "out" else READ | WRITE
            elif alias is not None:
                continue  # a view of its input: no kernel touches it
            else:
                mode = READ
            arguments.append((i, arg.name, mode, holds == "many"))
        name = str(func)
        returns = ()
        if name.startswith(_NO_KERNEL_PREFIXES):
            arguments = []  # no kernel reads its arguments either
        else:
            # A return with alias_info is a view, or the written input again.
            returns = tuple(r.alias_info is None and _tensor_argument(r.type) is not None for r in schema.returns)
            if not any(returns):
                returns = ()
        # Where non_blocking is, by the schema: copy_(dst, src, True) passes
        # it by position, _to_copy by keyword.
        non_blocking = next((i for i, arg in enumerate(schema.arguments) if arg.name == "non_blocking"), -1)
        plans[func] = (name, tuple(arguments), returns,
                       name.startswith(_HOST_COPY_PREFIXES) and not name.startswith("aten._local_scalar_dense"),
                       name.startswith("aten._local_scalar_dense"), non_blocking)
        return plans[func]

    def site():
        """(file, line) of the program's own frame that led here: frame 2 is
        the caller of __torch_dispatch__."""
        return _program_site(get_frame(2), library, skip_dirs)

    def record_stream(args):
        t, stream = args[0], args[1]
        handle = getattr(stream, "cuda_stream", None)
        if handle is None:  # a torch.Stream: its CUDA stream by id
            handle = torch.cuda.Stream(stream_id=stream.stream_id, device_index=stream.device_index,
                                       device_type=stream.device_type).cuda_stream
        extend((RECORD_STREAM, t.untyped_storage().data_ptr(), handle) + ((sites and site()) or (None, 0)))

    class Mode(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            result = func(*args, **kwargs) if kwargs else func(*args)
            plan = plans.get(func, False)
            if plan is False:
                plan = plan_of(func)
            if plan is None:
                record_stream(args)
                return result
            if not plan[1] and not plan[2]:
                return result  # a view, or an op that runs no kernel
            # The op's header, then its accesses (writer.py: OP), straight
            # onto the flat list: the stream, site and count are filled in
            # once known, and the header taken back if no CUDA tensor is touched.
            base = len(actions)
            extend((OP, plan[0], 0, None, 0, 0))
            on_host = False
            n = len(args)
            for i, arg_name, mode, many in plan[1]:
                value = args[i] if i < n else (kwargs.get(arg_name) if kwargs else None)
                if value is None:
                    continue
                for t in value if many else (value,):
                    if not isinstance(t, Tensor):
                        continue  # None, or a Python number in a Tensor argument
                    if t.is_cuda:
                        storage = t.untyped_storage()
                        extend((storage.data_ptr(), storage.nbytes(), t.data_ptr(), t.nbytes, mode, t.is_contiguous()))
                    else:
                        on_host = True
            if plan[2]:
                for written, t in zip(plan[2], result if isinstance(result, (tuple, list)) else (result,)):
                    if written and isinstance(t, Tensor):
                        if t.is_cuda:
                            storage = t.untyped_storage()
                            extend((storage.data_ptr(), storage.nbytes(), t.data_ptr(), t.nbytes, WRITE,
                                    t.is_contiguous()))
                        else:
                            on_host = True
            count = (len(actions) - base - OP_FIELDS) // ACCESS_FIELDS
            if not count:
                del actions[base:]
                return result
            stream = raw_stream(get_device())
            where = (sites and site()) or (None, 0)
            actions[base + 2:base + OP_FIELDS] = (stream, where[0], where[1], count)
            if (plan[3] and on_host) or plan[4]:
                # A copy to or from host memory (.cpu(), .item(), .to("cuda")):
                # it returns once the copy is done, unless non_blocking, which
                # may come by position: taken for False there, the copy's
                # sync would order what the program leaves unordered.
                i = plan[5]
                if i < 0:
                    non_blocking = False
                elif i < n:
                    non_blocking = args[i]
                else:
                    non_blocking = kwargs.get("non_blocking", False) if kwargs else False
                if not non_blocking:
                    extend((SYNC_STREAM, stream) + where)
            return result

    return Mode()


class record:
    """``with streamcheck_torch.record("run.trace"):`` writes the trace of
    the block's CUDA work when the block ends (also when it raises).
    ``sites=False`` leaves out each op's call site (the program's file:line):
    a walk up the Python frames per op (docs/PERFORMANCE.md, "Capture").
    ``recorder`` is "auto" (the C++ recorder, else the Python one with the
    reason said), "cpp" (an error if it cannot be built) or "python"; the
    default is STREAMCHECK_TORCH_RECORDER, else "auto"."""

    def __init__(self, path="streamcheck-torch.trace", sites=True, recorder=None):
        self.path = path
        self.sites = sites
        self.recorder = recorder or os.environ.get("STREAMCHECK_TORCH_RECORDER") or "auto"
        if self.recorder not in _RECORDERS:
            raise ValueError("streamcheck_torch.record: recorder must be one of %s, not %r"
                             % (", ".join(_RECORDERS), self.recorder))
        self.recording = None
        self.mode = None

    def __enter__(self):
        import torch

        if not torch.cuda.is_available():
            raise RuntimeError("streamcheck_torch.record needs a CUDA device: torch.cuda.is_available() is False")
        if _active[0] is not None:
            raise RuntimeError("streamcheck_torch.record is already recording; recordings do not nest")
        torch.cuda.init()
        rec = Recording(self.path)
        rec.skip_dirs = (_HERE, _torch_dir())
        cpp, why = _cpp_recorder() if self.recorder != "python" else (None, None)
        if cpp is None and self.recorder == "cpp":
            raise RuntimeError("streamcheck_torch.record: the C++ recorder cannot be used: %s; "
                               "recorder=\"python\" records without it" % why)
        self.recording = rec
        if cpp is not None:
            _install_cpp_callbacks(cpp)
            rec.cpp = cpp
            rec.writer.recorder = "the C++ recorder"
            skip_dirs = rec.skip_dirs
            # STREAMCHECK_TORCH_FAIL_OP (a test hook: tests/capture/torch/recorder_failures.py)
            # names an op whose recording fails.
            cpp.start(_CPP_KINDS, lambda file: _library_file(file, skip_dirs), self.sites,
                      os.environ.get("STREAMCHECK_TORCH_FAIL_OP", ""))
            # An op on the CPU (recorded as nothing: it touches no CUDA
            # memory) proves the hook live: a recorder that saw no op would
            # write a trace without kernels, and call the program clean.
            torch.zeros(1).add_(1)
            if cpp.ops_seen() == 0:
                cpp.stop()
                cpp = rec.cpp = None
                why = "its at::RecordFunction callback did not run (RecordFunction off in this build or thread?)"
                if self.recorder == "cpp":
                    raise RuntimeError("streamcheck_torch.record: the C++ recorder cannot be used: %s; "
                                       "recorder=\"python\" records without it" % why)
        if cpp is not None:
            _active[0] = rec
            return rec
        if why is not None:
            rec.writer.recorder = "the Python recorder; the C++ one is not used: %s" % why
            sys.stderr.write("streamcheck_torch: the C++ recorder is not used: %s; recording with the Python recorder\n"
                             % why)
        _install_callbacks()
        self.mode = _dispatch_mode(rec, self.sites)
        _current[0] = _active[0] = rec
        self.mode.__enter__()
        return rec

    def __exit__(self, *exc):
        try:
            if self.mode is not None:
                self.mode.__exit__(*exc)
            else:
                self.recording.cpp.stop()
        finally:
            _current[0] = _active[0] = None
            if exc and exc[0] is not None:
                self.recording.writer.note("the recorded block raised %s: the trace stops where it did" % exc[0].__name__)
            self.recording.finish()
        return False
