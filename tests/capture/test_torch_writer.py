"""The PyTorch recorder's writer, without torch (docs/CAPTURE.md): recorded
actions as the recorder appends them for three small programs, turned into
traces that `streamcheck explore --strategy dfs` must judge as the programs
deserve.  Usage: test_torch_writer.py STREAMCHECK PYTHON_DIR"""

import os
import re
import subprocess
import sys
import tempfile
import unittest

STREAMCHECK = sys.argv[1]
sys.path.insert(0, sys.argv[2])
del sys.argv[1:3]

import streamcheck_torch  # noqa: E402  (imports no torch until a recording starts)
from streamcheck_torch import writer as w  # noqa: E402

SEG, X, Y, Z = 0x7F0000000000, 0x7F0000000000, 0x7F0000001000, 0x7F0000002000
SIDE, EV = 0x55AA00, 0x66BB00
N = 4096


def side_stream_program(record_stream, wait_stream):
    """x made on the default stream, read on a side stream, freed, and its
    bytes handed out again on the default stream."""
    tw = w.TraceWriter()
    a = tw
    a.add((w.ALLOC, X, 0))
    a.add((w.OP, "aten.fill_.Scalar", 0, [X, N, X, N, w.READ | w.WRITE, True], ("/home/u/prog.py", 3)))
    a.add((w.STREAM, SIDE))
    a.add((w.STREAM, SIDE + 1))  # the rest of PyTorch's stream pool: never used, never declared
    if wait_stream:
        a.add((w.EVENT, EV))
        a.add((w.RECORD, EV, 0))
        a.add((w.WAIT, EV, SIDE))
    a.add((w.ALLOC, Y, SIDE))
    a.add((w.SEGMENT, SEG, 2 << 20))  # listed again when the recording ends
    a.add((w.OP, "aten.mul.Tensor", SIDE, [X, N, X, N, w.READ, True, Y, N, Y, N, w.WRITE, True], ("prog.py", 7)))
    if record_stream:
        a.add((w.RECORD_STREAM, X, SIDE, ("prog.py", 8)))
    a.add((w.FREE, X))
    a.add((w.ALLOC, X, 0))
    a.add((w.OP, "aten.fill_.Scalar", 0, [X, N, X, N, w.READ | w.WRITE, True], ("prog.py", 10)))
    a.add((w.SYNC_DEVICE,))
    a.add((w.SEGMENT, SEG, 2 << 20))  # the recorder lists the segments when the recording ends
    return tw


def explore(text):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "run.trace")
        with open(path, "w") as f:
            f.write(text)
        r = subprocess.run([STREAMCHECK, "explore", path, "--strategy", "dfs", "--schedules", "10000"],
                           capture_output=True, text=True)
        return r.returncode, r.stdout + r.stderr


class TorchWriter(unittest.TestCase):
    def test_a_side_stream_with_its_wait_and_record_stream_is_clean(self):
        text = side_stream_program(record_stream=True, wait_stream=True).text("prog.py")
        self.assertIn("buffer seg1 2097152", text)
        body = [line for line in text.splitlines() if not line.startswith("#")]
        self.assertTrue(body[0].startswith("buffer seg1 2097152"), text)  # segments come first
        self.assertEqual(text.count("stream s"), 1, text)  # only the stream used is declared
        self.assertIn("launch aten.fill_.Scalar on legacy readwrites b1  # prog.py:3", text)
        self.assertIn("suballoc b1 4096 from seg1[0:4096] on legacy", text)
        self.assertIn("stream s1 nonblocking", text)
        self.assertIn("launch aten.mul.Tensor on s1 reads b1 writes b2  # prog.py:7", text)
        self.assertIn("record_stream b1 on s1  # prog.py:8", text)
        self.assertIn("subfree b1 on legacy", text)
        # b1's name, given back, is the next block's: one name a live block.
        self.assertIn("suballoc b1 4096 from seg1[0:4096] on legacy", text)
        self.assertNotIn("b3", text)
        self.assertIn("sync device  # the recording ends", text)
        self.assertIn("free seg1", text)
        rc, out = explore(text)
        self.assertEqual(rc, 0, text + out)
        self.assertIn("coverage: exhaustive", out)
        self.assertNotIn("leak", out)  # what the allocator still holds at the end is let go

    def test_a_missing_record_stream_is_a_reuse_race(self):
        text = side_stream_program(record_stream=False, wait_stream=True).text("prog.py")
        rc, out = explore(text)
        self.assertEqual(rc, 1, text + out)
        self.assertIn("reuse race", out)

    def test_a_missing_wait_stream_is_a_data_race(self):
        text = side_stream_program(record_stream=True, wait_stream=False).text("prog.py")
        rc, out = explore(text)
        self.assertEqual(rc, 1, text + out)
        self.assertIn("data race", out)

    def test_a_block_is_allocated_where_the_allocator_handed_it_out(self):
        # y = torch.empty_like(x) on the default stream, then an event
        # recorded there, which the side stream waits for before writing y:
        # clean, though y is first used after the record.
        tw = w.TraceWriter()
        for action in [(w.SEGMENT, SEG, 1 << 20), (w.ALLOC, X, 0),
                       (w.OP, "aten.fill_.Scalar", 0, [X, N, X, N, w.READ | w.WRITE, True], None),
                       (w.ALLOC, Y, 0), (w.ALLOC, Z, 0),  # Z: never used, left out
                       (w.EVENT, EV), (w.RECORD, EV, 0), (w.WAIT, EV, SIDE),
                       (w.OP, "aten.mul.out", SIDE, [X, N, X, N, w.READ, True, Y, N, Y, N, w.WRITE, True], None),
                       (w.EVENT, EV + 1), (w.RECORD, EV + 1, SIDE), (w.WAIT, EV + 1, 0),
                       (w.FREE, Z), (w.FREE, Y), (w.FREE, X)]:
            tw.add(action)
        text = tw.text()
        self.assertLess(text.index("suballoc b2 4096 from seg1[4096:8192] on legacy"), text.index("record e1 on legacy"))
        self.assertEqual(text.count("suballoc"), 2, text)
        rc, out = explore(text)
        self.assertEqual(rc, 0, text + out)

    def test_views_name_their_bytes_and_unknown_memory_is_noted(self):
        tw = w.TraceWriter()
        for action in [(w.ALLOC, X, 0),
                       (w.OP, "aten.zero_.default", 0, [X, N, X + 1024, 1024, w.READ | w.WRITE, True], None),
                       (w.OP, "aten.t_.default", 0, [X, N, X + 1024, 1024, w.READ | w.WRITE, False], None),
                       (w.OP, "aten.add_.Tensor", 0, [0x1234, 64, 0x1234, 64, w.WRITE, True], None),
                       (w.SEGMENT, SEG, 1 << 20)]:
            tw.add(action)
        text = tw.text()
        self.assertIn("launch aten.zero_.default on legacy readwrites b1[1024:2048]", text)
        self.assertIn("launch aten.t_.default on legacy readwrites b1\n", text)  # not contiguous: all of it
        self.assertIn("launch aten.add_.Tensor on legacy\n", text)
        self.assertIn("# assumed: a tensor in memory of no recorded segment: left out x1", text)
        self.assertTrue(text.endswith("# end of capture\n"))

    def test_the_flat_form_round_trips_and_refuses_what_it_does_not_know(self):
        actions = [(w.OP, "aten.mul.Tensor", SIDE, [X, N, X, N, w.READ, True, Y, N, Y, N, w.WRITE, True], ("p.py", 7)),
                   (w.SYNC_STREAM, SIDE, None), (w.RECORD_STREAM, X, SIDE, ("p.py", 8)), (w.SYNC_DEVICE,),
                   (w.OP, "aten.zero_.default", 0, [], None), (w.WAIT, EV, SIDE)]
        flat = [atom for action in actions for atom in w.encode(action)]
        self.assertTrue(all(not isinstance(atom, (tuple, list)) for atom in flat))  # nothing for the GC
        self.assertEqual(list(w.decode(flat)), actions)
        with self.assertRaises(ValueError):
            w.encode((w.WAIT, EV))
        with self.assertRaises(ValueError):
            list(w.decode(["no such kind", 1]))

    def test_trace_names(self):
        self.assertEqual(w.trace_name("aten.add.Tensor"), "aten.add.Tensor")
        self.assertEqual(w.trace_name("aten::foo<bar>"), "aten__foo_bar_")
        self.assertEqual(w.trace_name("1x"), "op_1x")

    def test_the_cpp_recorder_names_its_kinds_in_the_order_of_its_enum(self):
        """_recorder.cpp's buffer kinds index the names start() is given:
        the enum's names before kWriterKinds, as snake case, must be
        _CPP_KINDS in order (a swap would write waits as records)."""
        source = os.path.join(os.path.dirname(streamcheck_torch.__file__), "_recorder.cpp")
        with open(source) as f:
            text = f.read()
        enum = text[text.index("enum Kind"):text.index("kWriterKinds")]
        names = re.findall(r"^\s*k([A-Za-z]+),", enum, re.M)
        snake = tuple(re.sub(r"(?<!^)([A-Z])", r"_\1", n).lower() for n in names)
        self.assertEqual(snake, streamcheck_torch._CPP_KINDS)
        self.assertEqual(len(set(snake)), len(snake))

    def test_a_frame_of_the_recorder_imported_by_a_roundabout_path_is_no_site(self):
        """A sys.path entry with ".." in it (tests/capture/torch/common.py has
        one) names the module's files so: they are still not the program's."""
        here = os.path.dirname(os.path.abspath(streamcheck_torch.__file__))
        parent = os.path.dirname(here)  # .../python: the entry common.py puts on sys.path, as .../x/../python
        roundabout = os.path.join(os.path.dirname(parent), "x", "..", os.path.basename(parent),
                                  os.path.basename(here), "__init__.py")
        self.assertTrue(streamcheck_torch._library_file(roundabout, (here,)))
        self.assertFalse(streamcheck_torch._library_file("/home/u/prog.py", (here,)))
        frame = eval(compile("sys._getframe(0)", roundabout, "eval"), {"sys": sys})
        site = streamcheck_torch._program_site(frame, {}, (here,))
        self.assertEqual(site[0], sys._getframe(0).f_code.co_filename)  # this test's frame: the caller

    def test_a_recording_after_torch_compile_says_its_kernels_may_be_missing(self):
        """torch.compile's Triton kernels launch past the dispatcher: the
        header says so when the process compiled anything (a stand-in for
        torch._dynamo's counters here: no torch on this machine)."""
        import types

        rec = streamcheck_torch.Recording(os.devnull)
        rec.compiled_code()
        self.assertEqual(rec.writer.notes, {})  # no torch._dynamo: nothing compiled
        dynamo = types.SimpleNamespace(utils=types.SimpleNamespace(counters={"frames": {"ok": 0}}))
        sys.modules["torch._dynamo"] = dynamo
        try:
            rec.compiled_code()
            self.assertEqual(rec.writer.notes, {})  # imported, nothing compiled
            dynamo.utils.counters["frames"]["ok"] = 2
            rec.compiled_code()
        finally:
            del sys.modules["torch._dynamo"]
        self.assertEqual(list(rec.writer.notes), [
            "code torch.compile compiled (2 frames in this process) may have run: the Triton kernels it launches "
            "itself are not in this trace"])

    def test_a_recorder_it_does_not_have_is_refused(self):
        with self.assertRaises(ValueError) as raised:
            streamcheck_torch.record("x.trace", recorder="c++")
        self.assertIn("auto, cpp, python", str(raised.exception))
        self.assertEqual(streamcheck_torch.record("x.trace", recorder="python").recorder, "python")

    def test_the_header_names_the_recorder(self):
        tw = side_stream_program(record_stream=True, wait_stream=True)
        self.assertTrue(tw.text("prog.py").startswith("# recorded by streamcheck_torch (the Python recorder) from: prog.py\n"))
        tw.recorder = "the C++ recorder"
        self.assertTrue(tw.text("prog.py").startswith("# recorded by streamcheck_torch (the C++ recorder) from: prog.py\n"))


if __name__ == "__main__":
    unittest.main()
