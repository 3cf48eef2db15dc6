"""The side stream reads x without waiting for the default stream that
writes it. Expected: data race."""
import torch
from common import recording

with recording():
    x = torch.empty(1 << 20, device="cuda")
    x.fill_(1.0)
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):  # BUG: no side.wait_stream(torch.cuda.current_stream())
        y = x * 2
    x.record_stream(side)
    torch.cuda.current_stream().wait_stream(side)
    total = y.sum()
    torch.cuda.synchronize()
print(float(total))
