"""A linear layer's forward and backward on a side stream, its results read
back with .item() and .cpu(): composite ops (linear, item, cpu) whose own
ops are what a recorder sees, autograd's backward ops on the engine's
thread, and copies to the host that return once done. The side stream
waits for the tensors made on the default stream, and the default stream
for the side stream before anything is freed. Expected: clean."""
import torch
from common import recording

with recording():
    side = torch.cuda.Stream()
    w = torch.randn(64, 64, device="cuda", requires_grad=True)
    x = torch.randn(32, 64, device="cuda")
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        loss = torch.nn.functional.linear(x, w).relu().sum()
        loss.backward()
        value = loss.item()
        grad = w.grad.cpu()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
print(value, float(grad.sum()))
