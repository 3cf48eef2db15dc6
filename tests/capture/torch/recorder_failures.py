"""The C++ recorder's refusals, on the GPU (docs/CAPTURE.md, "PyTorch"): it
never writes a trace that misses an op. Prints each check that failed and
exits 1; exits 0 when all hold.

- an op its callback fails on (STREAMCHECK_TORCH_FAIL_OP, a test hook) ends
  the recording with a RuntimeError naming it, and no trace is written;
- the next recording, without the hook, sees the op again;
- recordings do not nest;
- a recording after torch.compile compiled code says its Triton kernels
  are not in the trace (a header line and stderr);
- with either recorder, a copy to pinned host memory given non_blocking by
  position (copy_(dst, src, True)) syncs nothing, as by keyword; without
  it, the copy syncs its stream."""
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "python"))

import streamcheck_torch  # noqa: E402
import torch  # noqa: E402


def main():
    failures = []
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "run.trace")
        os.environ["STREAMCHECK_TORCH_FAIL_OP"] = "aten.mul.Tensor"
        try:
            with streamcheck_torch.record(path, recorder="cpp"):
                x = torch.ones(1024, device="cuda")
                y = x * 2
            failures.append("an op the recorder failed on ended the recording without an error")
        except RuntimeError as e:
            if "could not record 1 ops" not in str(e) or "aten.mul.Tensor" not in str(e):
                failures.append("the error does not say which op was missed: %s" % e)
        if os.path.exists(path):
            failures.append("a trace was written although it misses an op")
        del os.environ["STREAMCHECK_TORCH_FAIL_OP"]

        with streamcheck_torch.record(path, recorder="cpp"):
            x = torch.ones(1024, device="cuda")
            y = x * 2
        with open(path) as f:
            text = f.read()
        if "launch aten.mul.Tensor" not in text or "(the C++ recorder)" not in text.splitlines()[0]:
            failures.append("the recording after a failed one is not the C++ recorder's, with aten.mul.Tensor:\n"
                            + text)

        try:
            with streamcheck_torch.record(path, recorder="cpp"):
                with streamcheck_torch.record(path + ".inner", recorder="cpp"):
                    pass
            failures.append("a recording inside a recording was not refused")
        except RuntimeError as e:
            if "do not nest" not in str(e):
                failures.append("a nested recording failed for another reason: %s" % e)

        compiled = torch.compile(lambda t: (t * 2).sin() + 1)
        x = torch.ones(4096, device="cuda")
        compiled(x)  # compiled before the recording, run during it
        with streamcheck_torch.record(path, recorder="cpp"):
            y = compiled(x)
            torch.cuda.synchronize()
        with open(path) as f:
            text = f.read()
        if "the Triton kernels it launches itself are not in this trace" not in text:
            failures.append("a recording of torch.compile'd code does not say its kernels are missing:\n" + text)
        src = torch.ones(1 << 20, device="cuda")
        pinned = torch.empty(1 << 20, pin_memory=True)
        for recorder in ("cpp", "python"):
            for call, syncs in (("pinned.copy_(src, True)", False), ("pinned.copy_(src, non_blocking=True)", False),
                                ("pinned.copy_(src)", True)):
                with streamcheck_torch.record(path, recorder=recorder):
                    eval(call)
                torch.cuda.synchronize()
                with open(path) as f:
                    lines = f.read().splitlines()
                synced = any(line.split("#")[0].strip().startswith("sync stream") for line in lines)
                if synced != syncs:
                    failures.append("%s recorder: %s %s:\n%s" % (recorder, call, "syncs its stream" if synced
                                                                 else "syncs nothing", "\n".join(lines)))
    del y
    for failure in failures:
        print("FAILED:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
