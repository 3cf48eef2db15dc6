"""x is read on a side stream and freed on the default stream without
record_stream: the caching allocator hands its block to z on the default
stream while the side stream's read may still run. Expected: reuse race
(CSAN calls it clean: it sees one run, and in that run z got the block after
the read was enqueued)."""
import torch
from common import recording

with recording():
    x = torch.ones(1 << 20, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        y = x * 2
    del x  # BUG: no x.record_stream(side)
    z = torch.zeros(1 << 20, device="cuda")  # gets x's block
    torch.cuda.current_stream().wait_stream(side)
    total = (y + z).sum()
    torch.cuda.synchronize()
print(float(total))
