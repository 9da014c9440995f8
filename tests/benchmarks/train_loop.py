"""A small training loop to profile (issue 27): an MLP whose activation is a Triton kernel (forward and
backward), trained with AdamW, each step inside the repeating range `train/step` (memlens.range: a
push/pop and a start/end range, so the backward kernels PyTorch launches from its autograd thread are
inside it too). About 55 kernel launches a step with the defaults: 2,750 in 50 steps.

    python tests/benchmarks/train_loop.py [--steps 50] [--layers 6] [--width 1024] [--batch 512]
        [--last-batch N] [--count-launches] [--ranges memlens|push-pop]

--ranges push-pop puts a plain push/pop range around each step instead (torch.cuda.nvtx.range_push /
range_pop, as most PyTorch scripts do; issue 34): no start/end range, nothing counted. PyTorch runs backward
on its autograd thread, so only `memlens profile`'s --nvtx-push-pop-scope process (its default) covers the
backward kernels with it.

--last-batch N runs the last step on N rows instead of --batch: its kernels get new grids, which
`--launches first` profiles once more (each shape once). --count-launches runs the loop under
torch.profiler instead and prints, as JSON, the kernel launches of each step and in all (what one
profiled launch of each kernel stands for). Needs torch and triton (the GPU machine has both).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

STEP_RANGE = "train/step"
SLOPE = 1.702  # x * sigmoid(1.702 x): the sigmoid approximation of GELU


@triton.jit
def act_forward(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(y_ptr + offsets, x * tl.sigmoid(1.702 * x), mask=mask)


@triton.jit
def act_backward(x_ptr, grad_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    grad = tl.load(grad_ptr + offsets, mask=mask)
    s = tl.sigmoid(1.702 * x)
    tl.store(out_ptr + offsets, grad * (s + 1.702 * x * s * (1 - s)), mask=mask)


BLOCK = 1024


class TritonAct(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):  # type: ignore[no-untyped-def]
        x = x.contiguous()
        y = torch.empty_like(x)
        act_forward[(triton.cdiv(x.numel(), BLOCK),)](x, y, x.numel(), BLOCK=BLOCK)
        ctx.save_for_backward(x)
        return y

    @staticmethod
    def backward(ctx, grad):  # type: ignore[no-untyped-def]
        (x,) = ctx.saved_tensors
        grad = grad.contiguous()
        out = torch.empty_like(x)
        act_backward[(triton.cdiv(x.numel(), BLOCK),)](x, grad, out, x.numel(), BLOCK=BLOCK)
        return out


class Mlp(torch.nn.Module):
    def __init__(self, width: int, layers: int) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(width, width) for _ in range(layers))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for index, layer in enumerate(self.layers):
            x = layer(x)
            if index < len(self.layers) - 1:
                x = TritonAct.apply(x)
        return x


def step_range(name: str):  # type: ignore[no-untyped-def]
    """memlens.range where the nvtx package is installed; else the same two ranges through
    torch.cuda.nvtx, counted the same way (the GPU machine may lack the nvtx package)."""
    from memlens.errors import ConfigError

    try:
        from memlens.api import range as memlens_range

        return memlens_range(name)
    except ConfigError:
        return _TorchRange(name)


class _TorchRange:
    def __init__(self, name: str) -> None:
        self.name = name
        self.started = 0

    def __enter__(self) -> None:
        from memlens.api import _COUNTS

        self.started = torch.cuda.nvtx.range_start(self.name)
        torch.cuda.nvtx.range_push(self.name)
        _COUNTS.add(self.name)

    def __exit__(self, *exc_info: object) -> None:
        torch.cuda.nvtx.range_pop()
        torch.cuda.nvtx.range_end(self.started)


def train(args: argparse.Namespace) -> float:
    torch.manual_seed(0)
    device = torch.device("cuda")
    model = Mlp(args.width, args.layers).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    inputs = torch.randn(args.batch, args.width, device=device)
    targets = torch.randn(args.batch, args.width, device=device)
    loss = torch.zeros((), device=device)
    for step in range(args.steps):
        rows = args.last_batch if args.last_batch and step == args.steps - 1 else args.batch
        with step_range(STEP_RANGE) if args.ranges == "memlens" else _PushPop(STEP_RANGE):
            loss = torch.nn.functional.mse_loss(model(inputs[:rows]), targets[:rows])
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)  # backward() returns once its thread launched every kernel
    return float(loss)


class _PushPop:
    """A plain push/pop range of NVTX's default domain, as a PyTorch script opens one."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __enter__(self) -> None:
        torch.cuda.nvtx.range_push(self.name)

    def __exit__(self, *exc_info: object) -> None:
        torch.cuda.nvtx.range_pop()


def count_launches(args: argparse.Namespace) -> dict[str, object]:
    """The kernel launches of each step, from torch.profiler (CUPTI), outside ncu."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        train(args)
    kernels = [
        e
        for e in prof.events()
        if e.device_type == torch.autograd.DeviceType.CUDA
        and "memcpy" not in e.name.lower()
        and "memset" not in e.name.lower()
    ]
    per_step = round(len(kernels) / max(args.steps, 1), 1)
    return {
        "steps": args.steps,
        "launches": len(kernels),
        "launches_per_step": per_step,
        "distinct_kernel_names": len({e.name for e in kernels}),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--last-batch", type=int, default=0, help="rows of the last step (default: --batch)")
    parser.add_argument("--count-launches", action="store_true", help="print the launches (torch.profiler)")
    parser.add_argument(
        "--ranges",
        choices=("memlens", "push-pop"),
        default="memlens",
        help="the range around each step: memlens.range (push/pop and start/end, counted) or a "
        "plain push/pop range (torch.cuda.nvtx.range_push)",
    )
    args = parser.parse_args()
    if args.count_launches:
        print(json.dumps(count_launches(args)))
        return 0
    loss = train(args)
    print(f"train_loop: {args.steps} steps, loss {loss:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
