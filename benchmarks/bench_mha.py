"""Multi-head attention forward on CPU: every path of the course, timed
against PyTorch's fused one. Prints markdown tables; asserts nothing.

From the repository root::

    python benchmarks/bench_mha.py           # --full (~7 min)
    python benchmarks/bench_mha.py --quick   # ~1 min

``--full`` writes ``benchmarks/results/mha_cpu.md``, ``--quick`` writes
``benchmarks/results/mha_cpu_quick.md``; ``--out FILE`` overrides. Every
run also writes the same tables as JSON beside the markdown (``.json``),
which chapter 9 reads; ``--from-markdown FILE`` only converts an existing
report to JSON.
``--threads 1,2`` picks the thread counts (default: 1 and all CPUs). See
``benchmarks/README.md`` for what each table means.

The reference (ratio 1.00) is :func:`torch_fused`: PyTorch's packed input
projection (``F.linear`` with ``in_proj_weight``), ``F.scaled_dot_product_
attention`` and ``F.linear`` for the output, with no Python overhead or
copies. It is what ``nn.MultiheadAttention(need_weights=False)`` computes
on its Python path, and it is faster on CPU than that module's native
"fast path" (eval mode), which materialises the (B, h, L, L) weights.
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import resource
import sys
import time
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common as C  # noqa: E402  (benchmarks/common.py)
import mhacourse as mc  # noqa: E402
from mhacourse import reference_np as rnp  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))

# name: (row label in the tables, what it runs)
METHODS = {
    "ref": ("**PyTorch fused (reference)**",
            "`F.linear` (packed W_QKV) + `F.scaled_dot_product_attention` "
            "+ `F.linear` (`torch_fused` in `bench_mha.py`)"),
    "fast": ("course fast path", "`mhacourse.multi_head_attention_fast`"),
    "explicit": ("course batched explicit",
                 "`mhacourse.multi_head_attention` (returns the weights)"),
    "loop": ("course per-head loop",
             "`mhacourse.multi_head_attention_loop` (returns the weights)"),
    "mha_nw": ("nn.MHA need_weights=False",
               "`nn.MultiheadAttention` in eval mode: PyTorch's native "
               "fast path (`_native_multi_head_attention`)"),
    "mha_w": ("nn.MHA need_weights=True",
              "`nn.MultiheadAttention` in eval mode, averaged weights "
              "returned"),
    "mha_nw_train": ("nn.MHA need_weights=False, train mode",
                     "the same module in train mode (dropout 0): its Python "
                     "path, which calls `F.scaled_dot_product_attention`"),
    "numpy": ("NumPy", "`mhacourse.reference_np.multi_head_attention`, "
              "float32"),
}
MIN_REPS = {"ref": 5, "fast": 5}  # the headline comparison; others >= 1


def flops(B: int, L: int, d: int) -> float:
    """Model FLOPs of one forward: 4 projections (2*B*L*d*d each) plus
    Q K^T and A V (2*B*L*L*d each). Softmax and bias are not counted."""
    return 8 * B * L * d * d + 4 * B * L * L * d


def predict(prev: tuple, B: int, L: int, d: int) -> float:
    """Seconds one call at (B, L) should take, from ``prev = (B0, L0, t0)``.

    Scaled by the larger of the FLOP ratio and the B*L*L ratio: the forms
    that store (B, h, L, L) tensors are limited by memory traffic, which
    grows with L*L even where the FLOPs do not yet."""
    B0, L0, t0 = prev
    by_flops = flops(B, L, d) / flops(B0, L0, d)
    by_memory = B * L * L / (B0 * L0 * L0)
    return t0 * max(by_flops, by_memory)


# ---------------------------------------------------------------- methods

def torch_fused(x, in_w, in_b, out_w, out_b, h):
    """The reference, in PyTorch's own weight layout (``y = x @ W.T + b``).

    Shapes: ``x`` (B, L, d), ``in_w`` (3d, d), ``out_w`` (d, d).
    """
    B, L, d = x.shape
    qkv = F.linear(x, in_w, in_b)  # (B, L, 3d): one packed GEMM
    q, k, v = qkv.view(B, L, 3, h, d // h).permute(2, 0, 3, 1, 4)  # (B,h,L,d_k)
    o = F.scaled_dot_product_attention(q, k, v)  # (B, h, L, d_k)
    return F.linear(o.transpose(1, 2).reshape(B, L, d), out_w, out_b)


@functools.lru_cache(maxsize=None)
def layer(d: int, h: int):
    """One set of weights (seed 0) in every form the methods need."""
    w = mc.random_weights(d, h, seed=0)
    mha_eval = mc.to_torch(w, h).eval()
    mha_train = mc.to_torch(w, h).train()  # dropout is 0: same numbers
    wn = rnp.MHAWeights(**{k: (None if t is None else t.numpy().copy())
                           for k, t in vars(w).items()})
    return w, mha_eval, mha_train, wn


def make_x(B: int, L: int, d: int) -> torch.Tensor:
    return torch.randn(B, L, d, generator=torch.Generator().manual_seed(1))


def methods(x: torch.Tensor, h: int, names=tuple(METHODS)) -> dict:
    """Zero-argument callables, one per method, all on the same ``x`` and
    weights; each returns the (B, L, d) output (weights are dropped)."""
    d = x.shape[-1]
    w, mha, mha_tr, wn = layer(d, h)
    xn = x.numpy()
    Wi, bi = mha.in_proj_weight, mha.in_proj_bias
    Wo, bo = mha.out_proj.weight, mha.out_proj.bias
    table = {
        "ref": lambda: torch_fused(x, Wi, bi, Wo, bo, h),
        "fast": lambda: mc.multi_head_attention_fast(x, x, x, w, h)[0],
        "explicit": lambda: mc.multi_head_attention(x, x, x, w, h)[0],
        "loop": lambda: mc.multi_head_attention_loop(x, x, x, w, h)[0],
        "mha_nw": lambda: mha(x, x, x, need_weights=False)[0],
        "mha_w": lambda: mha(x, x, x, need_weights=True)[0],
        "mha_nw_train": lambda: mha_tr(x, x, x, need_weights=False)[0],
        "numpy": lambda: rnp.multi_head_attention(xn, xn, xn, wn, h)[0],
    }
    return {n: table[n] for n in names}


# ------------------------------------------------- fast-path variants

def fast_before(x, w, h):
    """``multi_head_attention_fast`` as it was before this benchmark:
    ``x @ W`` then ``+ b`` (a second pass and a second buffer)."""
    Q = mc.split_heads(mc.multihead.project(x, w.W_Q, w.b_Q), h)
    K = mc.split_heads(mc.multihead.project(x, w.W_K, w.b_K), h)
    V = mc.split_heads(mc.multihead.project(x, w.W_V, w.b_V), h)
    heads = F.scaled_dot_product_attention(Q, K, V)
    return mc.output_projection(mc.merge_heads(heads), w.W_O, w.b_O)


def fast_packed(x, w, h, W_qkv=None, b_qkv=None):
    """Self-attention with one packed Q|K|V GEMM. Without ``W_qkv`` the three
    weights are concatenated on every call, as a function given separate
    W_Q, W_K, W_V must do."""
    if W_qkv is None:
        W_qkv = torch.cat([w.W_Q, w.W_K, w.W_V], dim=1)  # (d, 3d)
        b_qkv = torch.cat([w.b_Q, w.b_K, w.b_V])  # (3d,)
    B, L, d = x.shape
    qkv = torch.addmm(b_qkv, x.reshape(B * L, d), W_qkv)  # (B*L, 3d)
    q, k, v = qkv.view(B, L, 3, h, d // h).permute(2, 0, 3, 1, 4)  # (B,h,L,d_k)
    o = F.scaled_dot_product_attention(q, k, v)  # (B, h, L, d_k)
    concat = o.transpose(1, 2).reshape(B * L, d)  # (B*L, d)
    return torch.addmm(w.b_O, concat, w.W_O).view(B, L, d)


# ---------------------------------------------------------------- config

@dataclass
class Config:
    shapes: list  # (B, L) of the main table, cheapest first
    d: int = 768  # d_model of the main table (BERT-base / GPT-2 small)
    h: int = 12  # heads of the main table
    cell_budget_s: float = 4.0  # time per method and shape, after warm-up
    max_reps: int = 7
    cap_s: float = 10.0  # skip a cell whose single call is predicted longer
    mem_Ls: tuple = (512, 2048)  # memory table: B = 1 and these L
    h_sweep: tuple = (1, 2, 4, 8, 12, 24, 48, 96)
    h_sweep_L: int = 512
    L_sweep: tuple = (256, 512, 1024, 2048, 4096)
    big_small_Ls: tuple = (16, 64, 256, 1024, 4096)  # d_model 512, h 8
    ablation: tuple = ((1, 512), (8, 512), (1, 2048))
    gemm_n: int = 2048  # the plain square matmul for peak GFLOP/s


FULL = Config(shapes=[(1, 128), (1, 512), (1, 1024), (1, 2048),
                      (8, 128), (8, 512), (8, 1024), (8, 2048)])
QUICK = Config(shapes=[(1, 64), (1, 256), (2, 64), (2, 256)],
               cell_budget_s=0.3, max_reps=5, cap_s=3.0, mem_Ls=(256,),
               h_sweep=(1, 4, 12, 48), h_sweep_L=128, L_sweep=(128, 256, 512),
               big_small_Ls=(16, 256, 1024), ablation=((1, 256),),
               gemm_n=1024)


def shape_name(B: int, L: int) -> str:
    return f"B={B} L={L}"


# ---------------------------------------------------------------- tables

def run_shapes(cfg: Config, shapes, names, threads: int):
    """Time ``names`` at each (B, L); return timings and max |out - ref|."""
    timings, errors, last = {}, {}, {}
    for B, L in shapes:
        x = make_x(B, L, cfg.d)
        fns = methods(x, cfg.h, names)
        skip = {}
        for n in names:  # predict from the last shape this method ran at
            if n in last:
                pred = predict(last[n], B, L, cfg.d)
                if pred > cfg.cap_s:
                    skip[n] = f"{METHODS[n][0]} at {shape_name(B, L)}: " \
                              f"est. {pred:.0f} s"
        errs, ref_out = {}, []

        def warm(name, fn):  # the warm-up call also checks the output
            out = torch.as_tensor(fn())
            if not ref_out:
                ref_out.append(out)  # "ref" runs first
            errs[name] = float((out - ref_out[0]).abs().max())

        tm = C.time_interleaved(fns, cell_budget_s=cfg.cell_budget_s,
                                min_reps=MIN_REPS, max_reps=cfg.max_reps,
                                skip=skip, warmup=warm)
        for n, t in tm.items():
            if t.n:
                last[n] = (B, L, t.median)
        timings[(B, L)], errors[(B, L)] = tm, errs
        print(f"  [{threads} thr] {shape_name(B, L)}: " + ", ".join(
            f"{n} {C.fmt_ms(t.median)} ms" for n, t in tm.items()), flush=True)
    return timings, errors


def report_shapes(rep: C.Report, cfg, shapes, names, threads, timings, errors,
                  load0, detail: bool) -> None:
    cols = [shape_name(B, L) for B, L in shapes]
    rep.add(f"### Time relative to PyTorch fused, d_model={cfg.d}, "
            f"h={cfg.h}, {threads} thread(s)\n\n"
            + C.load_line(threads, load0) + "\n\n"
            "Each method's time divided by the reference's in the same "
            "round, median over rounds (lower is faster; 2.00 = twice as "
            "slow). "
            "The reference row gives its own median time in ms. "
            "Last column: largest |output − reference output| over the "
            "shapes (float32).")
    rows = []
    for n in names:
        cells = []
        for s in shapes:
            t = timings[s][n]
            if t.skipped:
                cells.append("skip")
            elif n == "ref":
                cells.append(f"{C.fmt_ms(t.median)} ms")
            else:
                cells.append(f"{C.paired_ratio(t, timings[s]['ref'])[0]:.2f}")
        err = max(errors[s].get(n, 0.0) for s in shapes)
        rows.append([METHODS[n][0], *cells, f"{err:.1e}"])
    rep.add(C.md_table(["method", *cols, "max abs diff"], rows))
    notes = sorted({t.skipped for s in shapes for t in timings[s].values()
                    if t.skipped})
    if notes:
        rep.add("`skip`: one call was predicted (from the previous shape, "
                "scaled by the FLOPs or by B·L², whichever grows more) to "
                f"take over {cfg.cap_s:.0f} s: " + "; ".join(notes) + ".")
    if not detail:
        return

    walls = [w / t for s in shapes for t in timings[s].values()
             for w, t in zip(t.wall, t.times) if t > 0]
    rep.add("### Median time (ms) of each cell above\n\n"
            "With the number of timed runs after the warm-up in brackets. "
            "Wall-clock / timed clock over all these runs: median "
            f"{np.median(walls):.2f}, max {max(walls):.2f} (above 1: the "
            "time other jobs on the machine took).")
    rows = [[METHODS[n][0], *[
        "–" if timings[s][n].skipped else
        f"{C.fmt_ms(timings[s][n].median)} ({timings[s][n].n})"
        for s in shapes]] for n in names]
    rep.add(C.md_table(["method", *cols], rows))

    rep.add("### Achieved GFLOP/s\n\n"
            "Model FLOPs of one forward, 8·B·L·d² (four projections) + "
            "4·B·L²·d (QKᵀ and AV), divided by the median time. Every "
            "method does the same arithmetic, so this is the same ranking "
            "as the time, on an absolute scale to compare with the plain "
            "matmul below.")
    rows = [["model GFLOP per call", *[f"{flops(B, L, cfg.d) / 1e9:.1f}"
                                       for B, L in shapes]]]
    rows += [[METHODS[n][0], *[
        "–" if timings[s][n].skipped else
        f"{flops(*s, cfg.d) / timings[s][n].median / 1e9:.1f}"
        for s in shapes]] for n in names]
    rep.add(C.md_table(["method", *cols], rows))


def report_fast_vs_ref(rep, cfg, shapes, timings, errors, threads,
                       load0) -> list:
    rep.add(f"### Course fast path vs PyTorch fused, {threads} thread(s)\n\n"
            + C.load_line(threads, load0) + "\n\n"
            "`multi_head_attention_fast` timed in the same rounds as the "
            "reference, right after it; *ratio* is the median over rounds "
            "of fast / reference (min–max in brackets), and the ratio of "
            "the fastest runs of each. The target is ≤ 1.05 (median). "
            "Also shown: the same for `nn.MultiheadAttention"
            "(need_weights=False)`, and the largest output difference.")
    rows, ratios = [], []
    for s in shapes:
        tm = timings[s]
        r, lo, hi = C.paired_ratio(tm["fast"], tm["ref"])
        m = (C.paired_ratio(tm["mha_nw"], tm["ref"])[0]
             if "mha_nw" in tm and not tm["mha_nw"].skipped else float("nan"))
        ratios.append((s, r))
        rmin = min(tm["fast"].times) / min(tm["ref"].times)
        rows.append([shape_name(*s), C.fmt_ms(tm["ref"].median),
                     C.fmt_ms(tm["fast"].median),
                     f"{r:.3f} ({lo:.2f}–{hi:.2f})", f"{rmin:.3f}",
                     tm["fast"].n,
                     "yes" if r <= 1.05 else "**no**", f"{m:.2f}",
                     f"{errors[s]['fast']:.1e}"])
    rep.add(C.md_table(["shape", "reference ms", "fast ms",
                        "fast / reference", "best fast / best reference",
                        "rounds", "≤ 1.05",
                        "nn.MHA (nw=False) / reference",
                        "fast: max abs diff"], rows))
    return ratios


def section_memory(rep: C.Report, cfg: Config) -> dict:
    load0 = C.load_avg()
    names = list(METHODS)
    res = {}
    for L in cfg.mem_Ls:
        for n in names:
            arg = json.dumps({"method": n, "B": 1, "L": L, "d": cfg.d,
                              "h": cfg.h})
            res[(n, L)] = C.peak_extra_rss(
                [os.path.abspath(__file__), "--mem-worker", arg])
            r = res[(n, L)]
            print(f"  memory {n} L={L}: "
                  + (C.fmt_bytes(r["extra_bytes"]) if "extra_bytes" in r
                     else r["error"]), flush=True)
    how = sorted({r.get("how", "?") for r in res.values() if "how" in r})
    rep.add(f"### Peak extra memory of one forward, B=1, d_model={cfg.d}, "
            f"h={cfg.h}\n\n" + C.load_line(1, load0, "none") + "\n\n"
            "Resident memory the call adds at its peak, over what the "
            "process held just before (inputs, weights, libraries), "
            "including the returned tensors. One fresh subprocess per cell, "
            "one warm-up call at the same shape first (so one-time library "
            f"buffers are not counted); measured as {', '.join(how)}. "
            "For scale: one (B, h, L, L) float32 tensor of attention "
            "weights, and the (B, L, d_model) output.")
    cols = [f"L={L}" for L in cfg.mem_Ls]
    rows = [["one (1, h, L, L) float32 tensor",
             *[C.fmt_bytes(4 * cfg.h * L * L) for L in cfg.mem_Ls]],
            ["the (1, L, d_model) output",
             *[C.fmt_bytes(4 * L * cfg.d) for L in cfg.mem_Ls]]]
    for n in names:
        rows.append([METHODS[n][0], *[
            C.fmt_bytes(res[(n, L)]["extra_bytes"])
            if "extra_bytes" in res[(n, L)] else res[(n, L)]["error"]
            for L in cfg.mem_Ls]])
    rep.add(C.md_table(["method", *cols], rows))
    return res


def mem_worker(arg: str) -> None:
    spec = json.loads(arg)
    C.set_threads(1)
    with torch.no_grad():
        x = make_x(spec["B"], spec["L"], spec["d"])
        fn = methods(x, spec["h"], [spec["method"]])[spec["method"]]
        fn()  # warm-up at the same shape: library buffers, first-touch
        print(json.dumps(C.measure_call_rss(fn)), flush=True)


def section_h_sweep(rep, cfg: Config, th: int) -> None:
    load0 = C.load_avg()
    names = ["ref", "fast", "explicit", "loop", "mha_nw"]
    rows = []
    for h in cfg.h_sweep:
        x = make_x(1, cfg.h_sweep_L, cfg.d)
        tm = C.time_interleaved(methods(x, h, names),
                                cell_budget_s=cfg.cell_budget_s / 3,
                                min_reps={"ref": 3, "fast": 3},
                                max_reps=cfg.max_reps)
        ref = tm["ref"].median
        rows.append([h, cfg.d // h, C.fmt_ms(ref), *[
            f"{tm[n].median / ref:.2f}" for n in names[1:]]])
        print(f"  h={h}: ref {C.fmt_ms(ref)} ms", flush=True)
    rep.add(f"### Number of heads: d_model={cfg.d}, B=1, "
            f"L={cfg.h_sweep_L}, {th} thread(s)\n\n" + C.load_line(th, load0)
            + "\n\nSame arithmetic for every h (d_k = d_model / h shrinks as "
            "h grows). Reference time in ms, the others as ratios to it.")
    rep.add(C.md_table(["h", "d_k", "reference ms",
                        *[METHODS[n][0] for n in names[1:]]], rows))


def section_L_sweep(rep, cfg: Config, th: int) -> None:
    load0 = C.load_avg()
    names = ["ref", "fast", "explicit"]
    rows, prev, last = [], {}, {}
    for L in cfg.L_sweep:
        x = make_x(1, L, cfg.d)
        skip = {n: "skip" for n in names
                if n in last and predict(last[n], 1, L, cfg.d) > cfg.cap_s}
        tm = C.time_interleaved(methods(x, cfg.h, names),
                                cell_budget_s=cfg.cell_budget_s / 2,
                                min_reps={"ref": 3, "fast": 3},
                                max_reps=cfg.max_reps, skip=skip)
        attn = 4 * L * L * cfg.d / flops(1, L, cfg.d)
        row = [L, f"{100 * attn:.0f} %"]
        for n in names:
            t = tm[n]
            if t.skipped:
                row += ["skip", "–"]
                continue
            last[n] = (1, L, t.median)
            grow = f"×{t.median / prev[n]:.1f}" if n in prev else ""
            prev[n] = t.median
            row += [C.fmt_ms(t.median), grow]
        rows.append(row)
        print(f"  L={L}: " + ", ".join(f"{n} {C.fmt_ms(t.median)}"
                                       for n, t in tm.items()), flush=True)
    rep.add(f"### Sequence length: d_model={cfg.d}, h={cfg.h}, B=1, "
            f"{th} thread(s)\n\n" + C.load_line(th, load0) + "\n\n"
            "Median ms, and the factor over the previous (half as long) L. "
            "Projections cost ∝ L and the attention step ∝ L², so the "
            "factor climbs from 2 towards 4 as the attention share of the "
            "FLOPs (4·L²·d of 8·L·d² + 4·L²·d) grows.")
    head = ["L", "attention share of FLOPs"]
    for n in names:
        head += [f"{METHODS[n][0]} ms", "×"]
    rep.add(C.md_table(head, rows))


def section_big_vs_small(rep, cfg: Config, threads: int) -> dict:
    """The seed documents' claim: one (L, 512) @ (512, 512) matmul vs
    8 (L, 512) @ (512, 64) ones."""
    load0 = C.load_avg()
    d, h = 512, 8
    d_k = d // h
    rows, out = [], {}
    for L in cfg.big_small_Ls:
        g = torch.Generator().manual_seed(2)
        X = torch.randn(L, d, generator=g)
        W = torch.randn(d, d, generator=g) / d**0.5
        views = [W[:, i * d_k:(i + 1) * d_k] for i in range(h)]  # head_slice
        parts = [v.contiguous() for v in views]
        W_heads = torch.stack(parts)  # (h, d, d_k)
        Xn, Wn = X.numpy(), W.numpy()
        np_views = [Wn[:, i * d_k:(i + 1) * d_k] for i in range(h)]
        fns = {
            "big": lambda: X @ W,  # (L, d)
            "small_views": lambda: [X @ v for v in views],  # h x (L, d_k)
            "small_contig": lambda: [X @ p for p in parts],
            "batched": lambda: X @ W_heads,  # (h, L, d_k): one bmm
            "np_big": lambda: Xn @ Wn,
            "np_small": lambda: [Xn @ v for v in np_views],
        }
        budget = max(0.2, cfg.cell_budget_s / 8)
        tm = C.time_interleaved(fns, cell_budget_s=budget, min_reps=5,
                                max_reps=31)
        big = tm["big"].median
        gf = 2 * L * d * d / 1e9
        out[L] = {k: t.median for k, t in tm.items()}
        rows.append([L, f"{C.fmt_ms(big)}", f"{gf / big:.1f}",
                     f"{tm['small_views'].median / big:.2f}",
                     f"{tm['small_contig'].median / big:.2f}",
                     f"{tm['batched'].median / big:.2f}",
                     f"{C.fmt_ms(tm['np_big'].median)}",
                     f"{tm['np_small'].median / tm['np_big'].median:.2f}"])
    rep.add(f"### One big matmul vs h small ones: d_model={d}, h={h}, "
            f"{threads} thread(s)\n\n" + C.load_line(threads, load0) + "\n\n"
            "`X @ W_Q` with X (L, 512) and W_Q (512, 512), against the 8 "
            "per-head products `X @ W_Q^i` with W_Q^i (512, 64): the same "
            "FLOPs. *views*: W_Q^i as column slices of W_Q (what "
            "`head_slice` returns); *contiguous*: pre-copied blocks; "
            "*batched*: all 8 heads as one `(L,512) @ (8,512,64)` call. "
            "Ratios > 1: the 8 small ones are slower.")
    rep.add(C.md_table(
        ["L", "one big ms", "big GFLOP/s", "8 small (views) / big",
         "8 small (contiguous) / big", "batched (8,512,64) / big",
         "NumPy big ms", "NumPy 8 small / big"], rows))
    return out


def section_gemm(rep, cfg: Config, threads: int) -> dict:
    load0 = C.load_avg()
    n = cfg.gemm_n
    g = torch.Generator().manual_seed(3)
    A, Bm = torch.randn(n, n, generator=g), torch.randn(n, n, generator=g)
    P = torch.randn(4096, 768, generator=g)
    Wp = torch.randn(768, 768, generator=g)
    An, Bn = A.numpy(), Bm.numpy()
    fns = {"torch": lambda: A @ Bm, "numpy": lambda: An @ Bn,
           "proj": lambda: P @ Wp}
    tm = C.time_interleaved(fns, cell_budget_s=max(0.5, cfg.cell_budget_s / 2),
                            min_reps=3, max_reps=9)
    res = {"torch": 2 * n**3 / tm["torch"].median / 1e9,
           "numpy": 2 * n**3 / tm["numpy"].median / 1e9,
           "proj": 2 * 4096 * 768 * 768 / tm["proj"].median / 1e9}
    rep.add(f"### Plain matmul, {threads} thread(s)\n\n"
            + C.load_line(threads, load0) + "\n\n"
            "What the BLAS reaches on this machine: the ceiling for the "
            "GFLOP/s above.")
    rep.add(C.md_table(["matmul", "median ms", "GFLOP/s"], [
        [f"PyTorch ({n}×{n}) @ ({n}×{n}) float32",
         C.fmt_ms(tm["torch"].median), f"{res['torch']:.1f}"],
        [f"NumPy ({n}×{n}) @ ({n}×{n}) float32",
         C.fmt_ms(tm["numpy"].median), f"{res['numpy']:.1f}"],
        ["PyTorch (4096×768) @ (768×768): one projection at B·L = 4096",
         C.fmt_ms(tm["proj"].median), f"{res['proj']:.1f}"]]))
    return res


def section_ablation(rep, cfg: Config, th: int) -> None:
    load0 = C.load_avg()
    rows = []
    for B, L in cfg.ablation:
        x = make_x(B, L, cfg.d)
        w = layer(cfg.d, cfg.h)[0]
        W_qkv = torch.cat([w.W_Q, w.W_K, w.W_V], dim=1)
        b_qkv = torch.cat([w.b_Q, w.b_K, w.b_V])
        fns = methods(x, cfg.h, ["ref", "fast"])
        fns["before"] = lambda: fast_before(x, w, cfg.h)
        fns["packed"] = lambda: fast_packed(x, w, cfg.h)
        fns["prepacked"] = lambda: fast_packed(x, w, cfg.h, W_qkv, b_qkv)
        ref_out = fns["ref"]()
        errs = {k: float((f() - ref_out).abs().max()) for k, f in fns.items()}
        tm = C.time_interleaved(fns, cell_budget_s=cfg.cell_budget_s,
                                min_reps=5, max_reps=max(cfg.max_reps, 9))
        rows.append([shape_name(B, L), C.fmt_ms(tm["ref"].median), *[
            f"{C.paired_ratio(tm[k], tm['ref'])[0]:.3f}"
            for k in ("before", "fast", "packed", "prepacked")],
            f"{max(errs.values()):.1e}"])
        print(f"  ablation {shape_name(B, L)} done", flush=True)
    rep.add(f"### What made the fast path fast: variants, d_model={cfg.d}, "
            f"h={cfg.h}, {th} thread(s)\n\n" + C.load_line(th, load0)
            + "\n\nMedian over rounds of variant / reference. *before*: the "
            "previous `multi_head_attention_fast` (`x @ W` then `+ b`); "
            "*now*: the current one (bias inside the GEMM with "
            "`torch.addmm`); *packed*: one Q|K|V GEMM, weights concatenated "
            "on each call; *pre-packed*: the same with weights concatenated "
            "once beforehand (what storing them packed would give).")
    rep.add(C.md_table(["shape", "reference ms", "before", "now", "packed",
                        "pre-packed", "max abs diff"], rows))


# ---------------------------------------------------------------- main

def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    size = p.add_mutually_exclusive_group()
    size.add_argument("--full", action="store_true",
                      help="every table at the course's sizes (default)")
    size.add_argument("--quick", action="store_true",
                      help="small sizes, about a minute")
    p.add_argument("--threads", default=None,
                   help="comma-separated thread counts, e.g. 1,2 "
                        "(default: 1 and the number of CPUs)")
    p.add_argument("--out", default=None, help="markdown file to write")
    p.add_argument("--no-memory", action="store_true",
                   help="skip the memory table (one subprocess per cell)")
    p.add_argument("--from-markdown", metavar="FILE",
                   help="only convert an existing markdown report to JSON, then stop")
    p.add_argument("--mem-worker", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.mem_worker:
        return mem_worker(a.mem_worker)
    if a.from_markdown:
        print("wrote", os.path.relpath(C.write_json_from_markdown(a.from_markdown)))
        return None

    cfg = QUICK if a.quick else FULL
    ncpu = os.cpu_count() or 1
    threads = ([int(t) for t in a.threads.split(",")] if a.threads
               else [1] + ([ncpu] if ncpu > 1 else []))
    auto_threads = a.threads is None
    out = a.out or os.path.join(
        HERE, "results", "mha_cpu_quick.md" if a.quick else "mha_cpu.md")
    t_start = time.perf_counter()
    rep = C.Report()
    cmd = "benchmarks/bench_mha.py" + (" --quick" if a.quick else "")
    rep.add("# Multi-head attention on CPU: measured\n\n"
            f"Generated by `python {cmd}` (see `benchmarks/README.md`). "
            "Forward pass only, float32, under `torch.no_grad()`, "
            "self-attention (query = key = value), no mask, the same "
            "inputs and weights for every method.")
    rep.add(C.md_table(["machine", ""], C.machine_info(),
                       right=[False, False]))
    rep.add("Methods:\n\n" + "\n".join(
        f"- **{lab.strip('*')}**: {what}" for lab, what in METHODS.values()))
    summary_at = len(rep.parts)
    names = list(METHODS)
    summary = {}
    with torch.no_grad():
        for i, th in enumerate(threads):
            others = max(0.0, os.getloadavg()[0] - 1)  # load minus this run
            if i > 0 and auto_threads and others + th > ncpu + 0.5:
                rep.add(f"## {th} threads: not run\n\nThe machine was busy "
                        f"(load average {C.load_avg()}, about {others:.1f} "
                        f"of it from other jobs, on {ncpu} CPUs): {th} "
                        "threads would compete with those jobs and time the "
                        "contention, not the code. Run `--threads "
                        f"1,{th}` on an idle machine to get these tables.")
                continue
            C.set_threads(th)
            shapes = cfg.shapes if i == 0 else [
                s for s in cfg.shapes if s[0] == 1]
            rep.add(f"## {th} thread(s)" + ("" if i == 0 else
                    "\n\nOnly B = 1 here, to keep the run short."))
            load0 = C.load_avg()
            timings, errors = run_shapes(cfg, shapes, names, th)
            report_shapes(rep, cfg, shapes, names, th, timings, errors,
                          load0, detail=True)
            summary[("ratios", th)] = report_fast_vs_ref(
                rep, cfg, shapes, timings, errors, th, load0)
            summary[("timings", th)] = (shapes, timings)
            summary[("gemm", th)] = section_gemm(rep, cfg, th)
            summary[("bigsmall", th)] = section_big_vs_small(rep, cfg, th)
            if i == 0:
                section_ablation(rep, cfg, th)
                section_h_sweep(rep, cfg, th)
                section_L_sweep(rep, cfg, th)
                if not a.no_memory:
                    summary["memory"] = section_memory(rep, cfg)
    elapsed = time.perf_counter() - t_start
    rep.parts.insert(summary_at, make_summary(cfg, threads, summary, elapsed))
    print(rep.parts[summary_at])
    rep.write(out)
    print(f"wrote {os.path.relpath(out)} and "
          f"{os.path.relpath(C.write_json_from_markdown(out))} in {elapsed:.0f} s")


def make_summary(cfg, threads, s, elapsed) -> str:
    """The key figures, placed at the top of the markdown file."""
    th = threads[0]
    cpu = sum(r.ru_utime + r.ru_stime for r in (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN)))
    lines = ["## Summary\n",
             f"Whole run: {elapsed / 60:.1f} min wall clock, {cpu / 60:.1f} "
             "min CPU time (more wall than CPU: other jobs had the CPUs). "
             f"Figures at {th} thread(s) unless stated."]
    rs = [r for _, r in s[("ratios", th)]]
    lines.append(f"- Course fast path / PyTorch fused: "
                 f"{min(rs):.2f}–{max(rs):.2f} over the {len(rs)} shapes "
                 f"(target ≤ 1.05).")
    shapes, tm = s[("timings", th)]
    for n in ("explicit", "loop", "mha_nw", "mha_w", "numpy"):
        vals = [C.paired_ratio(tm[x][n], tm[x]["ref"])[0] for x in shapes
                if not tm[x][n].skipped]
        if vals:
            lines.append(f"- {METHODS[n][0]} / fused: "
                         f"{min(vals):.2f}–{max(vals):.2f}.")
    bs = s[("bigsmall", th)]
    lines.append("- One (L,512)@(512,512) vs 8 (L,512)@(512,64), views: " +
                 ", ".join(f"L={L}: 8 small take "
                           f"{v['small_views'] / v['big']:.2f}× one big"
                           for L, v in bs.items()) + ".")
    g = s[("gemm", th)]
    lines.append(f"- Plain {cfg.gemm_n}² matmul: {g['torch']:.0f} GFLOP/s "
                 f"(PyTorch), {g['numpy']:.0f} GFLOP/s (NumPy).")
    if "memory" in s:
        L = max(cfg.mem_Ls)
        m = s["memory"]
        parts = [f"{METHODS[n][0].strip('*')} "
                 f"{C.fmt_bytes(m[(n, L)]['extra_bytes'])}"
                 for n in METHODS if "extra_bytes" in m[(n, L)]]
        lines.append(f"- Peak extra memory at B=1, L={L}: "
                     + ", ".join(parts) + ".")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
