"""The trace writer of the PyTorch recorder (docs/CAPTURE.md), standard library only.

The recorder (``streamcheck_torch.record``) appends what the program did, as
plain tuples, while it runs; ``TraceWriter.text`` turns them into a
trace-language program (docs/TRACES.md) once the recording ends. Keeping the
run-time part to list appends is what makes the recorder cheap per op.

Caching-allocator memory is written as the allocator has it: each segment
(one cudaMalloc) is a ``buffer``, each block handed to a tensor a
``suballoc`` of it on the stream it was allocated for (R10a), a freed block a
``subfree`` on that stream (R10b), and ``Tensor.record_stream`` as
``record_stream`` (R10c).
"""

import bisect
import os

# Kinds of recorded actions (the first item of each tuple).
STREAM = "stream"          # (STREAM, handle): declared where first used, not here
EVENT = "event"            # (EVENT, handle)
EVENT_GONE = "event_gone"  # (EVENT_GONE, handle)
RECORD = "record"          # (RECORD, event, stream)
WAIT = "wait"              # (WAIT, event, stream)
SYNC_STREAM = "sync_stream"  # (SYNC_STREAM, stream, site); a site: (file, line), a string, or None
SYNC_EVENT = "sync_event"  # (SYNC_EVENT, event)
SYNC_DEVICE = "sync_device"  # (SYNC_DEVICE,)
SEGMENT = "segment"        # (SEGMENT, address, size): declared at the start, wherever it is listed
ALLOC = "alloc"            # (ALLOC, address, stream)
FREE = "free"              # (FREE, address)
RECORD_STREAM = "record_stream"  # (RECORD_STREAM, storage address, stream, site)
OP = "op"                  # (OP, name, stream, accesses, site)
# an access: (storage address, storage size, data address, bytes, mode, contiguous)

# An access's mode: a bit set of these.
READ = 1
WRITE = 2
_ACCESS_WORDS = {READ: "reads", WRITE: "writes", READ | WRITE: "readwrites"}


def trace_name(op_name):
    """The trace-language name of an op: aten.add.Tensor -> aten.add.Tensor."""
    out = []
    for ch in op_name:
        out.append(ch if ch.isalnum() or ch in "_.-" else "_")
    name = "".join(out)[:64] or "op"
    if not (name[0].isalpha() or name[0] == "_"):
        name = "op_" + name
    return name


class TraceWriter:
    """Turns recorded actions into trace text. Not thread-safe: one writer
    per recording, fed in the order the actions happened."""

    def __init__(self):
        self.actions = []
        self.notes = {}

    def note(self, what):
        self.notes[what] = self.notes.get(what, 0) + 1

    # -- the conversion ---------------------------------------------------

    def text(self, program="python"):
        out = []
        streams = {}        # handle -> name
        events = {}         # handle -> name
        segments = []       # sorted [(address, end, name)]
        blocks = {}         # storage address -> (name, size, stream name)
        pending = {}        # storage address -> stream handle (allocated, size not yet seen)
        counters = {"s": 0, "e": 0, "seg": 0, "b": 0}

        def stream_name(handle):
            if handle == 0:
                return "legacy"
            if handle not in streams:
                counters["s"] += 1
                streams[handle] = "s%d" % counters["s"]
                # PyTorch's stream pools make streams with cudaStreamNonBlocking.
                out.append("stream %s nonblocking" % streams[handle])
            return streams[handle]

        def event_name(handle, declare):
            if handle not in events and declare:
                counters["e"] += 1
                events[handle] = "e%d" % counters["e"]
                out.append("event %s" % events[handle])
            return events.get(handle)

        def segment_of(address):
            i = bisect.bisect_right(segments, (address, float("inf"), "")) - 1
            if i >= 0 and segments[i][0] <= address < segments[i][1]:
                return segments[i]
            return None

        def block_of(storage, size, stream_handle):
            """The live block at `storage`, made now if it was just allocated
            (or predates the recording)."""
            block = blocks.get(storage)
            if block is not None:
                return block
            segment = segment_of(storage)
            if segment is None or storage + size > segment[1]:
                self.note("a tensor in memory of no recorded segment: left out")
                return None
            stream = stream_name(pending.pop(storage, stream_handle))
            counters["b"] += 1
            name = "b%d" % counters["b"]
            lo = storage - segment[0]
            out.append("suballoc %s %d from %s[%d:%d] on %s" % (name, size, segment[2], lo, lo + size, stream))
            blocks[storage] = (name, size, stream)
            return blocks[storage]

        def site_comment(site):
            if not site:
                return ""
            if isinstance(site, tuple):
                return "  # %s:%d" % (os.path.basename(site[0]), site[1])
            return "  # " + site

        # The segments first, whenever the recording learnt of them: a run
        # that found the allocator without a free segment called cudaMalloc
        # (which synchronizes the device) in the middle of its work; a warm
        # run does not, and a program must not rely on that sync.
        for action in self.actions:
            if action[0] == SEGMENT and segment_of(action[1]) is None:
                counters["seg"] += 1
                name = "seg%d" % counters["seg"]
                bisect.insort(segments, (action[1], action[1] + action[2], name))
                out.append("buffer %s %d  # a caching-allocator segment (cudaMalloc)" % (name, action[2]))

        for action in self.actions:
            kind = action[0]
            if kind in (STREAM, SEGMENT):
                continue  # a stream is declared where first used; segments came first
            elif kind == EVENT:
                event_name(action[1], True)
            elif kind == EVENT_GONE:
                name = events.pop(action[1], None)
                if name is not None:
                    out.append("destroy event %s" % name)
            elif kind == RECORD:
                out.append("record %s on %s" % (event_name(action[1], True), stream_name(action[2])))
            elif kind == WAIT:
                name = event_name(action[1], False)
                if name is None:
                    self.note("a wait on an event never recorded: orders nothing, left out")
                else:
                    out.append("wait %s on %s" % (name, stream_name(action[2])))
            elif kind == SYNC_STREAM:
                out.append("sync stream %s%s" % (stream_name(action[1]), site_comment(action[2])))
            elif kind == SYNC_EVENT:
                name = event_name(action[1], False)
                if name is not None:
                    out.append("sync event %s" % name)
            elif kind == SYNC_DEVICE:
                out.append("sync device")
            elif kind == ALLOC:
                pending[action[1]] = action[2]
            elif kind == FREE:
                pending.pop(action[1], None)
                block = blocks.pop(action[1], None)
                if block is not None:
                    out.append("subfree %s on %s" % (block[0], block[2]))
            elif kind == RECORD_STREAM:
                _, storage, stream, site = action
                block = blocks.get(storage)
                if block is None:
                    self.note("record_stream of a tensor the recording never saw used: left out")
                else:
                    out.append("record_stream %s on %s%s" % (block[0], stream_name(stream), site_comment(site)))
            elif kind == OP:
                _, op, stream, accesses, site = action
                touched = {}  # block name -> [lo, hi, mode, block size]
                for storage, size, data, nbytes, mode, contiguous in accesses:
                    if contiguous:
                        lo = data - storage
                        hi = min(size, lo + nbytes)
                    else:
                        lo, hi = 0, size
                    if size == 0 or hi <= lo:
                        continue
                    block = block_of(storage, size, stream)
                    if block is None:
                        continue
                    t = touched.get(block[0])
                    if t is None:
                        touched[block[0]] = [lo, hi, mode, block[1]]
                    else:
                        t[0], t[1], t[2] = min(t[0], lo), max(t[1], hi), t[2] | mode
                words = {mode: [] for mode in _ACCESS_WORDS}
                for name, (lo, hi, mode, size) in touched.items():
                    ref = name if (lo, hi) == (0, size) else "%s[%d:%d]" % (name, lo, hi)
                    words[mode].append(ref)
                line = "launch %s on %s" % (trace_name(op), stream_name(stream))
                for mode in (READ, WRITE, READ | WRITE):
                    if words[mode]:
                        line += " %s %s" % (_ACCESS_WORDS[mode], ", ".join(words[mode]))
                out.append(line + site_comment(site))
            else:
                raise ValueError("unknown recorded action %r" % (kind,))

        if blocks or segments:
            # The recording ends while the caching allocator still holds its
            # segments and tensors live on: that is no leak. Let them go once
            # the device is idle, which orders them after every recorded op.
            out.append("sync device  # the recording ends: what is still allocated is let go below")
            for block in blocks.values():
                out.append("subfree %s on %s" % (block[0], block[2]))
            for segment in segments:
                out.append("free %s" % segment[2])

        header = ["# recorded by streamcheck_torch from: %s" % program,
                  "# %d statements" % len(out)]
        for what, count in sorted(self.notes.items()):
            header.append("# assumed: %s x%d" % (what, count))
        return "\n".join(header + out) + "\n# end of capture\n"
