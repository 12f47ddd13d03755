"""Every public function of the package, found by walking it, fed hostile
input derived from its signature.

No list of modules or functions: :func:`public_callables` walks every
module of ``mhacourse`` (``pkgutil.walk_packages``), takes each module's
``__all__`` (or, without one, the public functions and classes defined in
it), the classes' constructors and their public methods. A module added
tomorrow is fuzzed the day it lands. Exempt: private names (``_x``), and a
traced core whose docstring says it is one (``no checks``: its checked
public twin is fuzzed instead); :data:`EXEMPT` holds what the walk leaves
out that way, and the test prints it.

Each argument in turn is replaced by hostile values made from its default,
its annotation and its name (:func:`hostile`): wrong types, NaN and inf,
1e200 and 1e-200, huge and negative whole numbers, an extra, a missing or
an empty axis, int32 ids, bools, strings, ``None``, and for a tiny model a
model whose config lies about its weights. Every call ends in exactly one
of two ways:

- the package's own error: an :class:`mhacourse.InputError` raised from a
  frame inside ``mhacourse``, its message one line; or
- a result holding no NaN (and no infinity, unless the function's docstring
  says it returns one, as an additive mask's ``-inf``).

Never a raw exception from torch, NumPy or Python, never a call that runs
past :data:`BOUND_S` seconds, and never a silent accept of a model whose
config disagrees with its weights. The counts (functions found, inputs
tried) are printed at the end of the run and written to
``benchmarks/results/fuzz_public_api.json`` when ``MHA_FUZZ_RESULTS`` is set.
"""
from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import math
import os
import pkgutil
import re
import signal
import traceback
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
import torch._dynamo  # noqa: E402,F401  loaded here, not by a call the alarm may cut short
import torch.func  # noqa: E402,F401  (train_step's gradients)

import mhacourse as mc  # noqa: E402
from mhacourse import real_lm, tasks  # noqa: E402
from mhacourse import tiny_model as tm  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_thread")

#: The most seconds one call may take: a learner waiting longer sees a hang.
BOUND_S = 5.0

#: A core, by its docstring: the unchecked form a checked twin wraps.
CORE_DOC = re.compile(r"\b(no\s+checks|unchecked|no\s+input\s+checks)\b", re.I)

#: A function that checks types and shapes only, by its docstring ("no
#: value checks": it also runs inside a traced core): a NaN it is given may
#: come back, nothing else may go wrong.
VALUE_FREE = re.compile(r"\bno\s+value\s+checks\b", re.I)

#: Filled by the walk: what it left out, and why (printed at the end).
EXEMPT: dict[str, str] = {}

#: Filled by the test: the figures the closing note quotes.
FIGURES: dict = {}

ROOT = Path(__file__).resolve().parents[2]
TRACE = os.environ.get("MHA_FUZZ_TRACE")  # a file: each input's label, as tried


# ------------------------------------------------------------------ the walk

def modules():
    """Every public module of the package, the package itself first."""
    yield mc
    for info in pkgutil.walk_packages(mc.__path__, "mhacourse."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            yield importlib.import_module(info.name)


def exported(module) -> list[str]:
    """``module.__all__``, or its public names defined in it."""
    if hasattr(module, "__all__"):
        return list(module.__all__)
    return [n for n, v in vars(module).items() if not n.startswith("_")
            and (inspect.isfunction(v) or inspect.isclass(v))
            and getattr(v, "__module__", None) == module.__name__]


def is_core(fn) -> bool:
    """A traced core: named ``*_core`` or saying so in its docstring."""
    return fn.__name__.endswith("_core") or bool(CORE_DOC.search(inspect.getdoc(fn) or ""))


def is_check(fn) -> bool:
    """A check (``check_*``): a rule its callers run after theirs, fuzzed
    through them (as code/tests/test_structure.py counts checks)."""
    return fn.__name__.startswith("check_")


def is_record(cls) -> bool:
    """A dataclass that checks nothing when made (no ``__post_init__``):
    an instance built here from guessed values would hold nonsense, so its
    methods are reached through the functions that build it."""
    return dataclasses.is_dataclass(cls) and not hasattr(cls, "__post_init__")


def public_callables() -> dict[str, tuple]:
    """``{place: (callable, class or None)}``: every public function and
    class of the package (once, under its home module), and each class's
    public methods, less the cores (:data:`EXEMPT`)."""
    found: dict[str, tuple] = {}
    seen: set[int] = set()
    for module in modules():
        for name in exported(module):
            obj = getattr(module, name, None)
            if not callable(obj) or id(obj) in seen:
                continue
            seen.add(id(obj))
            home = getattr(obj, "__module__", module.__name__) or module.__name__
            if not home.startswith("mhacourse"):
                continue
            place = f"{home}.{getattr(obj, '__qualname__', name)}"
            if inspect.isclass(obj):
                if issubclass(obj, BaseException):
                    continue
                found[place] = (obj, None)
                if is_record(obj):  # its fields are whatever it was given
                    EXEMPT[f"{place}.*"] = ("methods of a plain record (its "
                                            "constructor checks nothing)")
                    continue
                for mname, member in vars(obj).items():
                    if mname.startswith("_") or not inspect.isfunction(member):
                        continue
                    if is_core(member):
                        EXEMPT[f"{place}.{mname}"] = "a core"
                    else:
                        found[f"{place}.{mname}"] = (member, obj)
            elif is_core(obj):
                EXEMPT[place] = "a core"
            elif is_check(obj):
                EXEMPT[place] = "a check, run by the functions fuzzed here"
            else:
                found[place] = (obj, None)
    return found


# ------------------------------------------------------------- valid bases

def tiny(h=2, d_k=4, n_layers=2) -> tm.TinyTransformer:
    return tm.TinyTransformer(tm.TinyConfig(h=h, d_k=d_k, n_layers=n_layers))


def tiny_params():
    return tuple(p.detach().clone() for p in tiny().parameters())


def ids(B=2, L=6):
    return tasks.sample(B, seed=0)[0][:, :L]


def lying_models() -> dict:
    """Models whose ``cfg`` disagrees with their weights (and one whose
    weights are fine but whose heads write nothing)."""
    out = {}
    for label, cfg in [("relabelled h4 d_k8 as h8 d_k4", dict(h=8, d_k=4)),
                       ("h 5", dict(h=5)), ("n_layers 3", dict(n_layers=3)),
                       ("n_layers 1 over 2 blocks", dict(n_layers=1))]:
        m = tiny(4, 8)
        m.cfg = dataclasses.replace(m.cfg, **cfg)
        out[label] = m
    one = tiny(4, 8, n_layers=1)
    one.cfg = dataclasses.replace(one.cfg, n_layers=2)
    out["1 block, cfg says 2"] = one
    return out


def zero_wo_model():
    m = tiny(4, 8)
    with torch.no_grad():
        m.blocks[0].attn.W_O[:8].zero_()  # head 0 of block 0 writes nothing
        m.blocks[1].attn.W_O[:8].zero_()
    return m


#: A valid value for an argument, by its name (what the package calls it
#: everywhere); a name not here gets one from its annotation.
BASES = {
    "h": lambda: 2, "h_kv": lambda: 1, "d_model": lambda: 8, "d_k": lambda: 4,
    "layer": lambda: 0, "head": lambda: 0, "L": lambda: 4, "S": lambda: 4,
    "B": lambda: 2, "n": lambda: 2, "steps": lambda: 2, "seed": lambda: 0,
    "n_layers": lambda: 2, "max_len": lambda: 8, "vocab": lambda: 10,
    "model": tiny, "cfg": lambda: tm.TinyConfig(h=2, d_k=4), "params": tiny_params,
    "m": lambda: tuple(torch.zeros_like(p) for p in tiny_params()),
    "v": lambda: tuple(torch.zeros_like(p) for p in tiny_params()),
    "s": lambda: 0, "heads": lambda: torch.zeros(2), "noise": lambda: tm.model.noise_pool(),
    "ids": ids, "input_ids": ids, "x": lambda: torch.randn(2, 3, 8),
    "query": lambda: torch.randn(2, 3, 8), "key": lambda: torch.randn(2, 3, 8),
    "value": lambda: torch.randn(2, 3, 8), "memory": lambda: torch.randn(2, 3, 8),
    "Q": lambda: torch.randn(2, 3, 4), "K": lambda: torch.randn(2, 3, 4),
    "V": lambda: torch.randn(2, 3, 4), "scores": lambda: torch.randn(3, 3),
    "w": lambda: mc.random_weights(8, 2),
    "weights": lambda: torch.softmax(torch.randn(2, 3, 3), -1),
    "W_A": lambda: torch.randn(4, 3), "W_B": lambda: torch.randn(3, 4),
    "M": lambda: torch.randn(4, 4), "sv": lambda: torch.tensor([3.0, 1.0]),
    "kind": lambda: "q", "texts": lambda: ["the cat sat"], "text": lambda: "the cat",
    "sentence": lambda: "the cat sat", "tokens": lambda: ["the", "cat"],
    "words": lambda: ["the", "cat"], "lengths": lambda: [3, 2], "p": lambda: 0.1,
    "dtype": lambda: torch.float32, "trained": lambda: False,
    "fn": lambda: (lambda *a, **k: torch.zeros(1)),
}


#: Where a name means something else: in the tiny model's packages ``x`` is
#: a batch of word ids.
BASES_IN = {"tiny_model": {"x": lambda: tasks.sample(2, seed=0)[0]},
            "web_train": {"x": lambda: tasks.sample(2, seed=0)[0]},
            "interventions": {
                "heads": lambda: [(0, 1), (1, 0)], "method": lambda: "mean",
                "direction": lambda: "denoise", "unit": lambda: "layer",
                "name": lambda: "successor", "n": lambda: 3,
                "pairs": lambda: tuple(mc.corrupt("successor", 3, seed=0)),
                "clean_ids": lambda: mc.corrupt("successor", 3, seed=0).clean,
                "corrupted_ids": lambda: mc.corrupt("successor", 3, seed=0).corrupted,
                "ids": lambda: mc.corrupt("successor", 3, seed=0).clean,
                "logits": lambda: torch.randn(3, 16, 288),
                "answer": lambda: mc.corrupt("successor", 3, seed=0).answer,
                "rival": lambda: mc.corrupt("successor", 3, seed=0).rival,
                "positions": lambda: mc.corrupt("successor", 3, seed=0).positions,
                "patched": lambda: 0.5, "clean": lambda: 2.0,
                "corrupted": lambda: -1.0},
            # the real causal LM: a small random model of its architecture
            # (SmolLM2 itself takes ~0.5 s a call), ids that repeat (the
            # induction read-outs need a second copy)
            "real_lm": {
                "model": real_lm.random_lm, "cfg": lambda: real_lm.LMConfig(2, 16, 4, 2, 32, 64),
                "w": lambda: real_lm.random_lm().w, "ids": lambda: REPEATED_IDS.clone(),
                "scores": lambda: torch.rand(2, 4), "k": lambda: 2, "head": lambda: 1,
                "heads": lambda: [(0, 1), (1, 3)], "half": lambda: 3, "n": lambda: 2,
                "text": lambda: "the cat", "exclude": lambda: [(0, 0)]}}

REPEATED_IDS = torch.tensor([[5, 6, 7, 5, 6, 7], [9, 10, 11, 9, 10, 11]])  # (2, 6)

#: Hostile values that mean something for one module's names (a valid type,
#: a wrong value): added to :func:`hostile`'s.
HOSTILE_IN = {"interventions": {
    "heads": {"layer out of range": [(2, 0)], "head out of range": [(0, 2)],
              "negative layer": [(-1, 0)], "a triple": [(0, 0, 0)],
              "float head": [(0, 0.5)], "a tensor": torch.zeros(2, 2)},
    "method": {"misspelled": "zeros", "capitalised": "Mean"},
    "direction": {"misspelled": "denoising", "other name": "clean"},
    "unit": {"plural": "heads"},
    "name": {"unknown corruption": "swap"},
    "corrupted_ids": {"fewer positions": tasks.sample(3, seed=1)[0][:, :8],
                      "fewer sequences": tasks.sample(2, seed=1)[0]},
    "reference": {"other length": tasks.sample(3, seed=1)[0][:, :8],
                  "one sequence": tasks.sample(1, seed=1)[0]},
    "rival": {"rival = answer": mc.corrupt("successor", 3, seed=0).answer},
    "positions": {"past L": torch.tensor([16, 3, 2])},
    "corrupted": {"near clean": 2.0 + 1e-5, "equal to clean": 2.0},
    "pairs": {"unchanged": mc.Pairs(*(lambda p: (p.clean, p.clean, *p[2:]))(
        mc.corrupt("successor", 3, seed=0))), "four items": (1, 2, 3, 4)}},
    "real_lm": {
        "ids": {"not repeated": torch.arange(6)[None], "odd length": REPEATED_IDS[:, :5],
                "over 512 tokens": torch.zeros(1, 514, dtype=torch.long),
                "past the vocabulary": REPEATED_IDS + 60},
        "heads": {"layer out of range": [(2, 0)], "head out of range": [(0, 4)],
                  "twice": [(0, 1), (0, 1)], "a triple": [(0, 0, 0)], "bool": [(True, 0)]},
        "exclude": {"out of range": [(5, 5)]},
        "head_mask": {"NaN": torch.full((2, 4), float("nan")), "above 1": torch.full((2, 4), 2.0),
                      "wrong shape": torch.ones(2, 3)},
        "head_values": {"NaN": torch.full((2, 1, 4, 6, 4), float("nan")),
                        "wrong d_k": torch.zeros(2, 1, 4, 6, 3)},
        "half": {"2 (too short)": 2, "past the limit": 257},
        "k": {"more than the heads": 9},
        "scores": {"NaN": torch.full((2, 4), float("nan")),
                   "int": torch.ones(2, 4, dtype=torch.long)},
        "cfg": {"h_kv not dividing h": real_lm.LMConfig(2, 16, 4, 3, 32, 64),
                "odd d_k": real_lm.LMConfig(2, 12, 4, 2, 32, 64)},
        "text": {"empty": "   ", "over the limit": "word " * 3000}}}


def base_for(name: str, param, path: Path, module: str = ""):
    for part, bases in BASES_IN.items():
        if part in module and name in bases:
            return bases[name]()
    if name in BASES:
        return BASES[name]()
    if name in PATH_NAMES:
        return path / ("out" if name in ("out", "folder") else "f.safetensors")
    if param.default is not inspect.Parameter.empty:
        return param.default
    ann = str(param.annotation)
    if "Tensor" in ann:
        return torch.randn(2, 3, 8)
    if "bool" in ann:
        return False
    if "int" in ann:
        return 2
    if "float" in ann:
        return 0.5
    if "str" in ann:
        return "q"
    return torch.randn(2, 3, 8)


# ---------------------------------------------------------- hostile values

#: Arguments that name a file or a folder.
PATH_NAMES = ("path", "file", "out", "folder")

GENERIC = [None, "Q", True, float("nan"), float("inf"), 1e200, 1e-200, -1, 2**70,
           [], object()]


def tensor_variants(t: torch.Tensor) -> dict:
    """Hostile copies of a valid tensor: a NaN, an inf, 1e200, an extra, a
    missing and an empty axis, int32, bool, a NumPy array, a list."""
    out = {"extra axis": t[None], "int32": t.to(torch.int32), "bool": t != 0,
           "numpy": t.numpy(), "list": t.tolist()}
    if t.ndim:
        out["missing axis"] = t[0]
        out["empty axis"] = t[..., :0]
    if t.is_floating_point() and t.numel():
        for label, x in (("nan", float("nan")), ("inf", float("inf"))):
            bad = t.clone()
            bad.view(-1)[0] = x
            out[label] = bad
        out["1e200"] = t.double() * 1e200
        out["1e-200"] = t.double() * 1e-200
    elif t.numel():  # ids: past the table, negative, int32
        out["ids too large"] = t + 10**6
        out["negative ids"] = t - 10**6
        out["float ids"] = t.float()
    return out


def hostile(name: str, base, default) -> dict:
    """``{label: value}``: hostile values for one argument. A string is a
    valid path (``"Q"`` is a folder in the working directory), not a hostile
    one: for a path argument it would start the real work (a whole export)."""
    out = {f"generic {v!r}"[:40]: v for v in GENERIC
           if not (isinstance(v, str) and name in PATH_NAMES)}
    if isinstance(base, torch.Tensor):
        out.update(tensor_variants(base))
    elif isinstance(base, bool):
        out.update({"int 1": 1, "str yes": "yes"})
    elif isinstance(base, int):
        out.update({"zero": 0, "huge 10**6": 10**6, "float 2.5": 2.5,
                    "str": str(base)})
    elif isinstance(base, float):
        out.update({"-inf": -math.inf, "negative": -base or -1.0, "zero": 0.0})
    elif isinstance(base, str):
        out.update({"empty": "", "int": 3, "bytes": base.encode()})
    elif isinstance(base, tm.TinyTransformer):
        out.update({f"lying model: {k}": m for k, m in lying_models().items()})
        out["zero W_O rows"] = zero_wo_model()
    elif isinstance(base, (list, tuple)) and base:
        out.update({"empty": type(base)(), "one None": type(base)([None]),
                    "nested": [list(base)]})
    if default is not inspect.Parameter.empty:  # a value equal to the default is valid
        out = {k: v for k, v in out.items()
               if not (type(v) is type(default) and _same(v, default))}
    return out


def _same(a, b) -> bool:
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 (tensors, arrays)
        return False


# ---------------------------------------------------------------- outcomes

class Hang(BaseException):
    """Raised by the alarm: not an Exception, so no ``except`` in the
    package swallows it."""


def _alarm(signum, frame):
    raise Hang


def nonfinite(result, depth=0) -> bool:
    """Whether ``result`` holds a NaN or an infinity (looked for in
    tensors, arrays, numbers, and the containers and dataclasses holding
    them)."""
    if depth > 4:
        return False
    if isinstance(result, torch.Tensor):
        if result.is_floating_point() or result.is_complex():
            return not bool(torch.isfinite(result.detach()).all())
        return False
    if isinstance(result, np.ndarray):
        return result.dtype.kind in "fc" and not bool(np.isfinite(result).all())
    if isinstance(result, (float, np.floating)):
        return not math.isfinite(result)
    if isinstance(result, dict):
        return any(nonfinite(v, depth + 1) for v in list(result.values())[:200])
    if isinstance(result, (list, tuple)):
        return any(nonfinite(v, depth + 1) for v in list(result)[:200])
    if dataclasses.is_dataclass(result) and not isinstance(result, type):
        return any(nonfinite(getattr(result, f.name), depth + 1)
                   for f in dataclasses.fields(result))
    return False


def has_nan(result, depth=0) -> bool:
    if isinstance(result, torch.Tensor):
        return (result.is_floating_point() or result.is_complex()) and bool(
            torch.isnan(result.detach()).any())
    if isinstance(result, np.ndarray):
        return result.dtype.kind in "fc" and bool(np.isnan(result).any())
    if isinstance(result, (float, np.floating)):
        return math.isnan(result)
    if depth < 4 and isinstance(result, dict):
        return any(has_nan(v, depth + 1) for v in list(result.values())[:200])
    if depth < 4 and isinstance(result, (list, tuple)):
        return any(has_nan(v, depth + 1) for v in list(result)[:200])
    return False


def outcome(fn, args, kwargs, doc: str, must_refuse: bool):
    """``None`` if the call ended as the house rules say, else what went
    wrong, in one line."""
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, BOUND_S)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = fn(*args, **kwargs)
    except Hang:
        return f"ran past {BOUND_S:g} s"
    except mc.InputError as e:
        frame = traceback.extract_tb(e.__traceback__)[-1]
        if "/mhacourse/" not in frame.filename:
            return f"InputError raised outside the package ({frame.filename})"
        if "\n" in str(e):
            return f"InputError of several lines: {str(e)[:80]!r}"
        return None
    except Exception as e:  # noqa: BLE001
        frame = traceback.extract_tb(e.__traceback__)[-1]
        return (f"raw {type(e).__name__}: {' '.join(str(e).split())[:120]} "
                f"(at {Path(frame.filename).name}:{frame.lineno})")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        plt.close("all")
    if must_refuse:
        return "accepted a model whose config disagrees with its weights"
    if VALUE_FREE.search(doc):
        return None
    if has_nan(result) and "(a constructor)" not in doc:
        return "returned NaN"
    if nonfinite(result) and "inf" not in doc:
        return "returned an infinity"
    return None


# -------------------------------------------------------------- the test

def calls(place, fn, owner, path: Path):
    """``(label, callable, args, kwargs, must_refuse)`` for every hostile
    input of ``fn``: each argument in turn replaced, the others valid."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return
    params = [p for p in sig.parameters.values()
              if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    target = fn
    if owner is not None:  # a method: bind it to an instance made from a valid base
        params = params[1:]
        try:
            instance = make_instance(owner, path)
        except Exception:  # noqa: BLE001 (no valid instance: the constructor is fuzzed)
            return
        target = getattr(instance, fn.__name__)
    module = getattr(fn, "__module__", "") or ""
    bases = {p.name: base_for(p.name, p, path, module) for p in params}
    semantic = next((v for k, v in HOSTILE_IN.items() if k in module), {})
    for p in params:
        for label, value in {**hostile(p.name, bases[p.name], p.default),
                             **semantic.get(p.name, {})}.items():
            args = {**bases, p.name: value}
            pos = [args[q.name] for q in params if q.kind == q.POSITIONAL_ONLY]
            kw = {q.name: args[q.name] for q in params if q.kind != q.POSITIONAL_ONLY}
            yield (f"{place}({p.name}={label})", target, pos, kw,
                   label.startswith("lying model"))


def make_instance(cls, path):
    made = {p.name: base_for(p.name, p, path, cls.__module__)
            for p in list(inspect.signature(cls).parameters.values())
            if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
    return cls(**made)


def test_every_public_function_refuses_hostile_input_in_one_line(tmp_path, monkeypatch):
    """The walk finds the package's functions; each hostile input ends in
    the package's one-line error or a finite result, in time."""
    monkeypatch.chdir(tmp_path)  # a function that writes, writes here
    found = public_callables()
    failures, tried, reached = [], 0, set()
    if True:
        for place, (fn, owner) in found.items():
            doc = inspect.getdoc(fn) or ""
            if inspect.isclass(fn):  # an object holds what it was given
                doc += " inf (a constructor)"
            for label, target, args, kwargs, must_refuse in calls(place, fn, owner, tmp_path):
                if TRACE:
                    with open(TRACE, "a") as f:
                        f.write(label + "\n")
                tried += 1
                reached.add(place)
                wrong = outcome(target, args, kwargs, doc, must_refuse)
                if wrong:
                    failures.append(f"{label}: {wrong}")
                    if TRACE:
                        with open(TRACE, "a") as f:
                            f.write(f"FAIL {label}: {wrong}\n")
    FIGURES.update(functions_found=len(found), functions_fuzzed=len(reached),
                   # no arguments, or a method with no instance to call it on
                   functions_with_nothing_to_fuzz=len(found) - len(reached),
                   inputs_tried=tried, failures=len(failures),
                   exempt=len(EXEMPT))
    write_figures()
    assert len(found) > 200, len(found)  # the walk reaches the whole package
    assert "mhacourse.circuits.scores.read_circuits" in reached
    assert {f"mhacourse.real_lm.{f}" for f in (
        "model.CausalLM.forward", "model.CausalLM.forward_heads", "induction.head_scores",
        "induction.copy_losses", "model.random_lm")} <= reached
    assert {f"mhacourse.interventions.{f}" for f in (
        "ablate", "patch_heads", "logit_diff", "fraction_recovered",
        "patching_map", "ablation_map", "corrupt")} <= reached
    assert not failures, f"{len(failures)} of {tried} inputs:\n" + "\n".join(failures)


#: Where to write the figures (the test runs in a temporary folder).
RESULTS = os.environ.get("MHA_FUZZ_RESULTS") and Path(os.environ["MHA_FUZZ_RESULTS"]).resolve()


def write_figures() -> None:
    target = RESULTS
    if target:
        out = {**FIGURES, "exempt_names": dict(sorted(EXEMPT.items()))}
        Path(target).write_text(json.dumps(out, indent=1) + "\n")


def test_the_walk_finds_a_new_module_with_no_one_adding_it(tmp_path, monkeypatch):
    """A module placed in the package is walked and its functions fuzzed:
    nothing lists modules. (Written to a copy of the package's path.)"""
    pkg = tmp_path / "mhacourse_probe"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "fresh.py").write_text(
        "def half(x):\n    return x / 2\n\n"
        "def _private(x):\n    return x\n\n"
        "def double_core(x):\n    \"\"\"A core: no checks.\"\"\"\n    return 2 * x\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(mc, "__path__", [*mc.__path__, str(pkg)])
    names = {info.name for info in pkgutil.walk_packages([str(pkg)], "mhacourse_probe.")}
    assert "mhacourse_probe.fresh" in names
    fresh = importlib.import_module("mhacourse_probe.fresh")
    assert exported(fresh) == ["half", "double_core"]
    assert is_core(fresh.double_core) and not is_core(fresh.half)
    wrong = [outcome(fn, a, k, "", r)
             for _, fn, a, k, r in calls("fresh.half", fresh.half, None, tmp_path)]
    assert any(w and w.startswith("raw TypeError") for w in wrong), wrong
