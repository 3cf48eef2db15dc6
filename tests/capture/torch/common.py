"""Shared by the PyTorch capture corpus: run the program's body under
streamcheck_torch.record when STREAMCHECK_TORCH_TRACE names a file, plain
otherwise (so CSAN, TORCH_CUDA_SANITIZER=1, can run the same script)."""

import contextlib
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "python"))


def recording():
    path = os.environ.get("STREAMCHECK_TORCH_TRACE")
    if not path:
        return contextlib.nullcontext()
    import streamcheck_torch

    return streamcheck_torch.record(path)
