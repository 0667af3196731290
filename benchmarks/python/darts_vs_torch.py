"""DARTS search step time: kubetune's C++ engine vs the same supernet in PyTorch (eager), side by side.

A step is what DARTS' train_search.py does per batch (first order): the architecture gradient on a
validation batch + Adam on alpha, then the weight gradient on a training batch + clipping + SGD.
PyTorch computes the alpha gradient with torch.autograd.grad (no weight-gradient accumulation), which is the
cheaper variant for PyTorch. torch is optional: without it only kubetune is timed.

    PYTHONPATH=python .venv/bin/python benchmarks/python/darts_vs_torch.py            # CPU, reduced supernet
    PYTHONPATH=python .venv/bin/python benchmarks/python/darts_vs_torch.py --device cuda --paper
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

try:
    import kubetune as kt
except ImportError:  # --torch-only runs without the extension (e.g. on a GPU machine it could not be built on)
    kt = None

PRIMITIVES = ["none", "max_pool_3x3", "avg_pool_3x3", "skip_connect", "sep_conv_3x3", "sep_conv_5x5",
              "dil_conv_3x3", "dil_conv_5x5"]


def build_torch_supernet(torch, C, layers, nodes, in_ch, classes, stem_mult=3):
    """The DARTS search network (model_search.py's structure), written for this comparison."""
    nn = torch.nn
    F = torch.nn.functional

    def relu_conv_bn(cin, cout):
        return nn.Sequential(nn.ReLU(), nn.Conv2d(cin, cout, 1, bias=False), nn.BatchNorm2d(cout, affine=False))

    class FactReduce(nn.Module):
        def __init__(self, cin, cout):
            super().__init__()
            self.a = nn.Conv2d(cin, cout // 2, 1, stride=2, bias=False)
            self.b = nn.Conv2d(cin, cout // 2, 1, stride=2, bias=False)
            self.bn = nn.BatchNorm2d(cout, affine=False)

        def forward(self, x):
            x = F.relu(x)
            return self.bn(torch.cat([self.a(x), self.b(x[:, :, 1:, 1:])], dim=1))

    def dw_pw_bn(c, k, stride, dil):
        pad = dil * (k - 1) // 2
        return [nn.Conv2d(c, c, k, stride, pad, dilation=dil, groups=c, bias=False), nn.Conv2d(c, c, 1, bias=False),
                nn.BatchNorm2d(c, affine=False)]

    def make_op(name, c, stride):
        if name == "none":
            return None
        if name == "max_pool_3x3":
            return nn.Sequential(nn.MaxPool2d(3, stride, 1), nn.BatchNorm2d(c, affine=False))
        if name == "avg_pool_3x3":
            return nn.Sequential(nn.AvgPool2d(3, stride, 1, count_include_pad=False), nn.BatchNorm2d(c, affine=False))
        if name == "skip_connect":
            return nn.Identity() if stride == 1 else FactReduce(c, c)
        k = 3 if name.endswith("3x3") else 5
        if name.startswith("sep"):
            return nn.Sequential(nn.ReLU(), *dw_pw_bn(c, k, stride, 1), nn.ReLU(), *dw_pw_bn(c, k, 1, 1))
        return nn.Sequential(nn.ReLU(), *dw_pw_bn(c, k, stride, 2))

    class Mixed(nn.Module):
        def __init__(self, c, stride):
            super().__init__()
            self.ops = nn.ModuleList([make_op(p, c, stride) or nn.Identity() for p in PRIMITIVES])
            self.active = [p != "none" for p in PRIMITIVES]

        def forward(self, x, w):
            return sum(w[i] * op(x) for i, op in enumerate(self.ops) if self.active[i])

    class Cell(nn.Module):
        def __init__(self, cpp, cp, c, reduction, reduction_prev):
            super().__init__()
            self.reduction = reduction
            self.pre0 = FactReduce(cpp, c) if reduction_prev else relu_conv_bn(cpp, c)
            self.pre1 = relu_conv_bn(cp, c)
            self.edges = nn.ModuleList([Mixed(c, 2 if reduction and j < 2 else 1)
                                        for i in range(nodes) for j in range(2 + i)])

        def forward(self, s0, s1, weights):
            states = [self.pre0(s0), self.pre1(s1)]
            off = 0
            for i in range(nodes):
                states.append(sum(self.edges[off + j](h, weights[off + j]) for j, h in enumerate(states)))
                off += len(states) - 1
            return torch.cat(states[-nodes:], dim=1)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            cs = stem_mult * C
            self.stem = nn.Sequential(nn.Conv2d(in_ch, cs, 3, padding=1, bias=False), nn.BatchNorm2d(cs))
            cpp, cp, cc = cs, cs, C
            self.cells = nn.ModuleList()
            red_prev = False
            for i in range(layers):
                red = i in (layers // 3, 2 * layers // 3)
                if red:
                    cc *= 2
                self.cells.append(Cell(cpp, cp, cc, red, red_prev))
                red_prev = red
                cpp, cp = cp, nodes * cc
            self.fc = nn.Linear(cp, classes)
            E = nodes * (nodes + 3) // 2
            self.alpha_normal = nn.Parameter(1e-3 * torch.randn(E, len(PRIMITIVES)))
            self.alpha_reduce = nn.Parameter(1e-3 * torch.randn(E, len(PRIMITIVES)))

        def weights(self):
            return [p for n, p in self.named_parameters() if not n.startswith("alpha")]

        def forward(self, x):
            s0 = s1 = self.stem(x)
            wn, wr = F.softmax(self.alpha_normal, dim=-1), F.softmax(self.alpha_reduce, dim=-1)
            for cell in self.cells:
                s0, s1 = s1, cell(s0, s1, wr if cell.reduction else wn)
            return self.fc(s1.mean(dim=(2, 3)))

    return Net()


def time_steps(fn, steps, sync=lambda: None):
    for _ in range(2):  # warm-up (memory pools, cuDNN autotuning)
        fn()
    sync()
    walls, cpus = [], []
    for _ in range(steps):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        sync()
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--paper", action="store_true", help="paper-size supernet: 8 cells, C=16, batch 64, 32x32, RGB")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--torch-only", action="store_true", help="time only PyTorch (compare with bench_nas)")
    args = ap.parse_args()
    if kt is None and not args.torch_only:
        ap.error("kubetune is not importable; build it or pass --torch-only")
    cells, C, batch, hw, in_ch = (8, 16, 64, 32, 3) if args.paper else (5, 8, 32, 28, 1)
    rng = np.random.default_rng(0)
    Xt = rng.standard_normal((batch, in_ch, hw, hw)).astype(np.float32)
    Xv = rng.standard_normal((batch, in_ch, hw, hw)).astype(np.float32)
    yt = (np.arange(batch) % 10).astype(np.int32)
    yv = yt[::-1].copy()
    print(f"DARTS step ({cells} cells, C={C}, batch {batch}, {hw}x{hw}x{in_ch}, device {args.device}, "
          f"threads {args.threads}); median of {args.steps} steps")
    rows = []
    if not args.torch_only:
        kt.nas.set_n_threads(args.threads)
        eng = kt.nas.DartsEngine(args.device, in_channels=in_ch, num_classes=10, channels=C, layers=cells,
                                 batch_size=batch, threads=args.threads)
        if args.device == "cuda":
            kt.nas.pool_reset_peak("cuda")
        wall, cpu = time_steps(lambda: eng.step(Xt, yt, Xv, yv, 0.025), args.steps)
        mem = kt.nas.pool_stats(args.device)["peak"] / 2**20
        rows.append(("kubetune (C++)", wall, cpu, mem))
    try:
        import torch
    except ImportError:
        torch = None
        print("torch not importable: PyTorch column skipped")
    if torch is not None:
        torch.manual_seed(0)
        torch.set_num_threads(args.threads)
        dev = torch.device(args.device)
        if args.device == "cuda":
            torch.backends.cudnn.benchmark = True  # as DARTS' train_search.py sets it
        net = build_torch_supernet(torch, C, cells, 4, in_ch, 10).to(dev)
        alphas = [net.alpha_normal, net.alpha_reduce]
        w_opt = torch.optim.SGD(net.weights(), lr=0.025, momentum=0.9, weight_decay=3e-4)
        a_opt = torch.optim.Adam(alphas, lr=3e-4, betas=(0.5, 0.999), weight_decay=1e-3)
        tXt, tXv = torch.from_numpy(Xt).to(dev), torch.from_numpy(Xv).to(dev)
        tyt, tyv = torch.from_numpy(yt).long().to(dev), torch.from_numpy(yv).long().to(dev)
        lossf = torch.nn.CrossEntropyLoss()

        def torch_step():
            ga = torch.autograd.grad(lossf(net(tXv), tyv), alphas)
            for a, g in zip(alphas, ga):
                a.grad = g
            a_opt.step()
            w_opt.zero_grad(set_to_none=True)
            net.alpha_normal.requires_grad_(False)
            net.alpha_reduce.requires_grad_(False)
            loss = lossf(net(tXt), tyt)
            loss.backward()
            net.alpha_normal.requires_grad_(True)
            net.alpha_reduce.requires_grad_(True)
            torch.nn.utils.clip_grad_norm_(net.weights(), 5.0)
            w_opt.step()

        # Device-independent lower bound of PyTorch's activation memory: the unique storages autograd saves in
        # one forward (the weight step's pass). kubetune's pool peak (any device) counts everything it holds.
        saved = {}

        def pack(t):
            saved[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
            return t

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            lossf(net(tXt), tyt)
        saved_mib = sum(saved.values()) / 2**20
        del saved
        sync = (lambda: torch.cuda.synchronize()) if args.device == "cuda" else (lambda: None)
        if args.device == "cuda":
            torch.cuda.reset_peak_memory_stats()
        wall, cpu = time_steps(torch_step, args.steps, sync)
        tmem = torch.cuda.max_memory_allocated() / 2**20 if args.device == "cuda" else float("nan")
        print(f"PyTorch autograd saves {saved_mib:.1f} MiB of activations per forward (unique storages)"
              + ("" if args.torch_only else f"; kubetune pool peak / that = {rows[0][3] / saved_mib:.2f}"))
        rows.append((f"PyTorch {torch.__version__} eager", wall, cpu, tmem))
        nw = sum(p.numel() for p in net.weights())
        if args.torch_only:
            print(f"weights: PyTorch {nw}")
        else:
            print(f"weights: kubetune {eng.num_weights} (incl. 64-byte alignment padding), PyTorch {nw}")
    print(f"{'engine':<28} {'wall ms/step':>12} {'cpu ms/step':>11} {'peak MiB':>9}")
    for name, w, c, m in rows:
        print(f"{name:<28} {1e3 * w:>12.2f} {1e3 * c:>11.2f} {m:>9.1f}")
    if len(rows) == 2:
        print(f"speed-up (PyTorch / kubetune): wall {rows[1][1] / rows[0][1]:.2f}x, cpu {rows[1][2] / rows[0][2]:.2f}x"
              + (f"; memory kubetune / PyTorch {rows[0][3] / rows[1][3]:.2f}x" if args.device == "cuda" else ""))


if __name__ == "__main__":
    main()
