"""The package's shape: one core per concept, layers that point one way.

Read from the source (AST), not by running it: each test names the files it
counts in, so a new copy of a formula, or an import that closes a circle,
fails here with its place named.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "mhacourse"

#: Where a formula is computed on purpose a second time: the exercise
#: checkers compute their own answers, and the NumPy twin is the framework-free
#: copy the tests compare against.
OWN_ANSWERS = ("checks/", "reference_np.py")

SPLIT = {"split_heads", "split_heads_core", "head_slice"}
ATTEND = {"attention_core", "scaled_dot_product_attention"}
LAYER_NORM = {"layer_norm", "layer_norm_core", "ln", "ln1", "ln2"}
MULTI_HEAD = {"mha_core", "multi_head_attention", "multi_head_attention_fast",
              "grouped_query_attention", "attention_step", "cross_attention",
              "attn"}
FFN = {"feed_forward", "feed_forward_core", "ffn"}


def modules():
    """``{dotted name: path}`` of every module of the package."""
    out = {}
    for path in sorted(PKG.rglob("*.py")):
        parts = path.relative_to(PKG.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def functions():
    """``(place, set of names called)`` for every function and method outside
    :data:`OWN_ANSWERS`; a nested function's calls count for it and for the
    function around it."""
    for name, path in modules().items():
        rel = path.relative_to(PKG).as_posix()
        if rel.startswith(OWN_ANSWERS):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                calls = set()
                for c in ast.walk(node):
                    if isinstance(c, ast.Call):
                        f = c.func
                        calls.add(f.attr if isinstance(f, ast.Attribute)
                                  else getattr(f, "id", None))
                yield f"{rel}:{node.name}", calls


def test_one_multi_head_forward_besides_the_loop_and_the_fast_path():
    """A multi-head forward splits projections into heads and attends: the
    core, the loop form the course teaches and the fused path it is measured
    against; every other form calls :func:`mha_core`."""
    found = sorted(place for place, calls in functions()
                   if calls & SPLIT and calls & (ATTEND | {"F"}))
    fused = sorted(place for place, calls in functions()
                   if calls & SPLIT and "scaled_dot_product_attention" in calls)
    assert len(found) <= 3, found
    assert "multihead.py:mha_core" in found, found
    assert fused, "the fast path (F.scaled_dot_product_attention) is counted"


def test_block_forward_written_out_at_most_twice():
    """Layer norm + multi-head attention + feed-forward in one function: the
    block core, and at most one other (the decoder layer, which has a
    cross-attention sub-layer between)."""
    found = sorted(place for place, calls in functions()
                   if calls & LAYER_NORM and calls & MULTI_HEAD and calls & FFN)
    assert len(found) <= 2, found
    assert "block.py:block_core" in found, found


def imports(path: Path, name: str) -> set[str]:
    """The package modules that module ``name`` (file ``path``) imports when
    it runs, anywhere in the file: at the top **and inside functions** (an
    import in a function runs on the first call, so it can close a circle
    just as well). No module is exempt.

    Counted: ``from .x import y`` gives ``x.y`` if that is a module, else
    ``x``; importing ``a.b.c`` also runs the packages ``a.b`` and ``a``
    (their ``__init__``), so those count too, except the packages that hold
    ``name`` itself (they are already running when ``name`` runs: a
    submodule cannot load without its package, which is not a choice a
    module makes).

    Not counted: imports under ``if TYPE_CHECKING:``. They never run (the
    ``TYPE_CHECKING`` constant is False at run time); they exist for type
    checkers only. The package has none today; should one appear, it can
    name a type without creating an import-time dependency, which is why it
    is left out. (``from __future__ import annotations`` is not a package
    module and never counts.) Imports made by name at run time
    (``importlib.import_module``, as ``mhacourse.__getattr__`` does for the
    lazily loaded model) are not seen by the parser.
    """
    tree = ast.parse(path.read_text())
    skip = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
            and "TYPE_CHECKING" in ast.unparse(node.test)
            for n in ast.walk(node)}
    known = modules()
    is_pkg = path.name == "__init__.py"
    out = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom) and node.level:
            base = name.split(".")
            base = base[:len(base) - node.level + (1 if is_pkg else 0)]
            target = ".".join(base + ([node.module] if node.module else []))
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                out.add(sub if sub in known else target)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "mhacourse"):
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                out.add(sub if sub in known else node.module)
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("mhacourse")}
    own = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1 + is_pkg)}
    parents = {".".join(m.split(".")[:i]) for m in out for i in range(1, m.count(".") + 1)}
    return {m for m in out | parents if m in known and m != name and m not in own}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Circles of ``graph`` (module -> modules it imports), each as the path
    from a module back to itself."""
    found, state = [], {}

    def visit(m, stack):
        state[m] = "open"
        for t in sorted(graph.get(m, ())):
            if state.get(t) == "open":
                found.append(stack[stack.index(t):] + [t])
            elif t not in state:
                visit(t, stack + [t])
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    return found


def test_no_import_circle():
    """The modules of the package import one way: no module reaches itself
    through its imports, counted as :func:`imports` counts them (inside
    functions too, packages' ``__init__`` included, no exemption)."""
    known = modules()
    found = circles({m: imports(p, m) for m, p in known.items()})
    assert not found, found


def test_the_import_count_sees_every_import():
    """:func:`imports` sees an import inside a function (positions' check
    loads the real model's modules on first use), the package a submodule
    import runs (``tiny_model`` for ``tiny_model.model``), and leaves out a
    module's own packages; and :func:`circles` finds a circle."""
    known = modules()
    positions = imports(known["mhacourse.positions"], "mhacourse.positions")
    assert {"mhacourse.bert", "mhacourse.bert_weights"} <= positions
    kv = imports(known["mhacourse.kv_cache"], "mhacourse.kv_cache")
    assert {"mhacourse.tiny_model.model", "mhacourse.tiny_model"} <= kv
    own = imports(known["mhacourse.tiny_model.model"], "mhacourse.tiny_model.model")
    assert "mhacourse.tiny_model" not in own and "mhacourse" not in own
    assert "mhacourse.tasks" in own
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_numpy_twin_imports_no_torch():
    """:mod:`mhacourse.reference_np` is the framework-free copy: neither it
    nor any package module it imports imports torch."""
    known = modules()
    seen, todo = set(), ["mhacourse.reference_np"]
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        tree = ast.parse(known[m].read_text())
        torch_imports = [ast.unparse(n) for n in ast.walk(tree)
                         if isinstance(n, (ast.Import, ast.ImportFrom))
                         and "torch" in ast.unparse(n).split()[1].split(".")]
        assert not torch_imports, (m, torch_imports)
        todo += [t for t in imports(known[m], m) if t != "mhacourse"]


#: The core each chapter derives, shown in the chapter by ``literalinclude``:
#: chapter -> (module file, function, lines of the formula it must show).
CHAPTER_CORES = {
    "01_one_head": ("attention.py", "attention_core",
                    ["scores = scores_core(Q, K)", "weights = softmax_core(scores)"]),
    "03_parallel_heads": ("multihead.py", "mha_core",
                          ["split_heads_core(project(query, w.W_Q, w.b_Q), h)",
                           "attention_core(Q, K, V, mask)"]),
    "06_output_projection": ("multihead.py", "output_projection_core",
                             ["concat @ W_O"]),
    "10_transformer_block": ("block.py", "block_core",
                             ["layer_norm_core(x + a, w.gamma_1, w.beta_1, eps)",
                              "x = x + ffn(layer_norm_core("]),
}


def listings(chapter: str) -> set[tuple[str, str]]:
    """``(file, pyobject)`` of every package listing in a chapter's source."""
    text = (PKG.parents[1] / "chapters" / f"{chapter}.md").read_text()
    return set(re.findall(r"```\{literalinclude\} \.\./code/mhacourse/(\S+)\n"
                          r"(?::\w[\w-]*:.*\n)*?:pyobject: (\S+)", text))


def chapters_named(doc: str) -> set[int]:
    """The chapters a docstring names: ``chapter 6``, ``chapters 3 to 6``."""
    named = {int(n) for n in re.findall(r"\bchapter (\d+)", doc)}
    for a, b in re.findall(r"\bchapters (\d+) to (\d+)", doc):
        named |= set(range(int(a), int(b) + 1))
    return named


def test_chapters_show_the_core_that_computes_their_formula():
    """Chapters 1, 3, 6 and 10 list, with ``:pyobject:``, the core whose
    lines compute the formula they derive; each core's docstring names its
    chapter, and the lines the chapter explains are in it."""
    for chapter, (file, core, lines) in CHAPTER_CORES.items():
        assert (file, core) in listings(chapter), (chapter, core)
        tree = ast.parse((PKG / file).read_text())
        fn = next(n for n in tree.body
                  if isinstance(n, ast.FunctionDef) and n.name == core)
        doc = " ".join(ast.get_docstring(fn).split())
        assert int(chapter[:2]) in chapters_named(doc), (core, doc)
        source = ast.get_source_segment((PKG / file).read_text(), fn)
        for line in lines:
            assert line in source, (core, line)


#: A name that dates a module (when it was written, which chapter it came
#: with) instead of naming what it holds.
WHEN_WRITTEN = re.compile(r"(^|_)(new|newer|newest|new_topics|old|older|legacy|v\d+|ch\d+)(_|$)")


def test_no_module_name_says_when_it_was_written():
    """Modules are named for what they hold (``kv_cache``, ``tiny_model/
    _checks``), never for when they were written (``_validate_newer``,
    ``checks_new_topics``, ``checks/ch01_one_head``): in the package, its
    tests, the browser tests, the scripts and the benchmarks."""
    assert all(WHEN_WRITTEN.search(n) for n in (
        "_validate_newer", "checks_new_topics", "ch01_one_head", "test_checks_ch04"))
    assert not any(WHEN_WRITTEN.search(n) for n in (
        "kv_cache", "_validate", "head_patterns", "newline_text", "checks"))
    root = PKG.parents[1]
    dated = []
    for folder in (PKG, PKG.parent / "tests", root / "tests", root / "scripts",
                   root / "benchmarks"):
        for path in folder.rglob("*.py"):
            parts = path.relative_to(folder).with_suffix("").parts
            if any(WHEN_WRITTEN.search(part) for part in parts):
                dated.append(path.relative_to(root).as_posix())
    assert not dated, dated


def test_the_explorer_models_are_listed_once():
    """The grid of explorer models is written in :mod:`mhacourse.catalogue`
    only: the explorer, the browser export and the training script assign
    those names from it, never from a literal."""
    grid_names = {"GRID_H", "GRID_DK", "GRID_D_K", "BUDGET_H", "BUDGET_D_MODEL",
                  "WIDE_H", "WIDE_DK", "BUDGET_CELLS"}
    files = [PKG / "explorer.py", PKG / "web_export.py",
             PKG.parents[1] / "scripts" / "train_tiny_models.py"]
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Assign):
                names = {t.id for t in ast.walk(node) if isinstance(t, ast.Name)
                         and isinstance(t.ctx, ast.Store)}
                literal = any(isinstance(n, ast.Constant) and isinstance(n.value, int)
                              for n in ast.walk(node.value))
                assert not (names & grid_names and literal), (
                    path.name, ast.unparse(node))
