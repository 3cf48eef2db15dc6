"""The trace writer of the PyTorch recorder (docs/CAPTURE.md), standard library only.

The recorder (``streamcheck_torch.record``) appends what the program did, as
numbers and strings on one flat list, while it runs; ``TraceWriter.text`` turns them into a
trace-language program (docs/TRACES.md) once the recording ends. Keeping the
run-time part to list appends is what makes the recorder cheap per op.

Caching-allocator memory is written as the allocator has it: each segment
(one cudaMalloc) is a ``buffer``, each block handed to a tensor a
``suballoc`` of it on the stream it was allocated for (R10a), a freed block a
``subfree`` on that stream (R10b), and ``Tensor.record_stream`` as
``record_stream`` (R10c).
"""

import bisect
import heapq
import os

# The recorded actions: one flat list of numbers and strings, each action
# its kind and then its fields, so that recording makes no object that
# outlives the call (a tuple an action made Python's garbage collector run
# over the whole torch heap again and again: docs/PERFORMANCE.md, "Capture").
# A site (where in the program) is two fields, file and line (None, 0: none).
STREAM = "stream"          # STREAM, handle: declared where first used, not here
EVENT = "event"            # EVENT, handle
EVENT_GONE = "event_gone"  # EVENT_GONE, handle
RECORD = "record"          # RECORD, event, stream
WAIT = "wait"              # WAIT, event, stream
SYNC_STREAM = "sync_stream"  # SYNC_STREAM, stream, site
SYNC_EVENT = "sync_event"  # SYNC_EVENT, event
SYNC_DEVICE = "sync_device"  # SYNC_DEVICE
SEGMENT = "segment"        # SEGMENT, address, size: declared at the start, wherever it is listed
ALLOC = "alloc"            # ALLOC, address, stream
FREE = "free"              # FREE, address
RECORD_STREAM = "record_stream"  # RECORD_STREAM, storage address, stream, site
OP = "op"                  # OP, name, stream, site, count, then count accesses of
ACCESS_FIELDS = 6          # storage address, storage size, data address, bytes, mode, contiguous

# Fields after the kind, for all kinds but OP.
_FIELDS = {STREAM: 1, EVENT: 1, EVENT_GONE: 1, RECORD: 2, WAIT: 2, SYNC_STREAM: 3, SYNC_EVENT: 1,
           SYNC_DEVICE: 0, SEGMENT: 2, ALLOC: 2, FREE: 1, RECORD_STREAM: 4}
OP_HEADER_FIELDS = 5  # name, stream, file, line, count


def encode(action):
    """The flat form of one action given as a tuple - (OP, name, stream,
    [flat accesses], site), (SYNC_STREAM, stream, site), ... with a site a
    (file, line) pair or None - for code that is not on the recorder's
    fast path, and for tests."""
    kind = action[0]
    if kind == OP:
        _, name, stream, accesses, site = action
        file, line = site or (None, 0)
        return [OP, name, stream, file, line, len(accesses) // ACCESS_FIELDS] + list(accesses)
    if kind in (SYNC_STREAM, RECORD_STREAM):
        return list(action[:-1]) + list(action[-1] or (None, 0))
    if len(action) != 1 + _FIELDS[kind]:
        raise ValueError("a %s action has %d fields, not %d" % (kind, _FIELDS[kind], len(action) - 1))
    return list(action)


def decode(actions):
    """The actions of a flat list, one tuple each, sites as (file, line)
    pairs or None."""
    i, n = 0, len(actions)
    while i < n:
        kind = actions[i]
        if kind == OP:
            name, stream, file, line, count = actions[i + 1:i + 1 + OP_HEADER_FIELDS]
            end = i + 1 + OP_HEADER_FIELDS + count * ACCESS_FIELDS
            yield (OP, name, stream, actions[i + 1 + OP_HEADER_FIELDS:end], (file, line) if file else None)
            i = end
            continue
        fields = _FIELDS.get(kind)
        if fields is None:
            raise ValueError("unknown recorded action %r at %d" % (kind, i))
        action = tuple(actions[i:i + 1 + fields])
        if kind in (SYNC_STREAM, RECORD_STREAM):
            file, line = action[-2:]
            action = action[:-2] + ((file, line) if file else None,)
        yield action
        i += 1 + fields


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
        self.actions = []  # flat (see encode)
        self.notes = {}
        self.recorder = "the Python recorder"  # which one saw the ops (said in the header)

    def add(self, action):
        """Appends one action given as a tuple (see encode)."""
        self.actions += encode(action)

    def note(self, what):
        self.notes[what] = self.notes.get(what, 0) + 1

    # -- the conversion ---------------------------------------------------

    def text(self, program="python"):
        out = []
        streams = {}        # handle -> name
        events = {}         # handle -> name
        segments = []       # sorted [(address, end, name)]
        blocks = {}         # storage address -> (name, size, stream name)
        # The names of blocks given back, for the next blocks: a name is
        # bound to one live block at a time, and a program's allocations
        # then need as many names as it has live blocks, not one each. A
        # check of a long recording keeps what every name a trace ever
        # bound needs (a later statement may use a freed block's name), so
        # fresh names grew it by each allocation (docs/PERFORMANCE.md).
        # The lowest name first: the same program gives the same names.
        free_names = []
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
            """The live block at `storage`, made now (R10a: on the stream it
            was allocated for) if the allocator hands it out here, or if it
            predates the recording (then on the stream that first uses it)."""
            block = blocks.get(storage)
            if block is not None:
                return block
            segment = segment_of(storage)
            if segment is None or storage + size > segment[1]:
                self.note("a tensor in memory of no recorded segment: left out")
                return None
            stream = stream_name(stream_handle)
            if free_names:
                name = "b%d" % heapq.heappop(free_names)
            else:
                counters["b"] += 1
                name = "b%d" % counters["b"]
            lo = storage - segment[0]
            out.append("suballoc %s %d from %s[%d:%d] on %s" % (name, size, segment[2], lo, lo + size, stream))
            blocks[storage] = (name, size, stream)
            return blocks[storage]

        def site_comment(site):
            if not site:
                return ""
            return "  # %s:%d" % (os.path.basename(site[0]), site[1])

        # The segments first, whenever the recording learnt of them: a run
        # that found the allocator without a free segment called cudaMalloc
        # (which synchronizes the device) in the middle of its work; a warm
        # run does not, and a program must not rely on that sync.
        actions = list(decode(self.actions))
        for action in actions:
            if action[0] == SEGMENT and segment_of(action[1]) is None:
                counters["seg"] += 1
                name = "seg%d" % counters["seg"]
                bisect.insort(segments, (action[1], action[1] + action[2], name))
                out.append("buffer %s %d  # a caching-allocator segment (cudaMalloc)" % (name, action[2]))

        # A block is declared where the allocator handed it out, as big as
        # its storage (which the first op that touches it tells): declared
        # there and not at that first use, since the program may order the
        # allocation before a record that another stream's use waits for.
        sizes = {}  # index of an ALLOC -> the storage size its first use shows
        allocated = {}  # address -> index of its ALLOC, until first used or freed
        for index, action in enumerate(actions):
            if action[0] == ALLOC:
                allocated[action[1]] = index
            elif action[0] == FREE:
                allocated.pop(action[1], None)
            elif action[0] == OP and allocated:
                accesses = action[3]
                for i in range(0, len(accesses), ACCESS_FIELDS):
                    alloc = allocated.pop(accesses[i], None)
                    if alloc is not None:
                        sizes[alloc] = accesses[i + 1]

        for index, action in enumerate(actions):
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
                if index in sizes:  # a block no op touches is left out
                    block_of(action[1], sizes[index], action[2])
            elif kind == FREE:
                block = blocks.pop(action[1], None)
                if block is not None:
                    out.append("subfree %s on %s" % (block[0], block[2]))
                    heapq.heappush(free_names, int(block[0][1:]))
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
                for i in range(0, len(accesses), ACCESS_FIELDS):
                    storage, size, data, nbytes, mode, contiguous = accesses[i:i + ACCESS_FIELDS]
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

        header = ["# recorded by streamcheck_torch (%s) from: %s" % (self.recorder, program),
                  "# %d statements" % len(out)]
        for what, count in sorted(self.notes.items()):
            header.append("# assumed: %s x%d" % (what, count))
        return "\n".join(header + out) + "\n# end of capture\n"
