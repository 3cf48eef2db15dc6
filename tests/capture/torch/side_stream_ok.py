"""A correct side-stream overlap: the side stream waits for x, x is handed to
the side stream with record_stream, and the default stream waits for the side
stream before using y. Expected: clean."""
import torch
from common import recording

with recording():
    x = torch.ones(1 << 20, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        y = x * 2
    x.record_stream(side)
    del x
    z = torch.zeros(1 << 20, device="cuda")  # may get x's block: the allocator waits for side first
    torch.cuda.current_stream().wait_stream(side)
    total = (y + z).sum()
    torch.cuda.synchronize()
print(float(total))
