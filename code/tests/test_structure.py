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

SPLIT = {"split_heads", "_split_heads_core", "head_slice"}
ATTEND = {"_attention_core", "scaled_dot_product_attention"}
LAYER_NORM = {"layer_norm", "_layer_norm_core", "ln", "ln1", "ln2"}
MULTI_HEAD = {"_mha_core", "multi_head_attention", "multi_head_attention_fast",
              "grouped_query_attention", "attention_step", "cross_attention",
              "attn"}
FFN = {"feed_forward", "_feed_forward_core", "ffn"}


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
    against; every other form calls :func:`_mha_core`."""
    found = sorted(place for place, calls in functions()
                   if calls & SPLIT and calls & (ATTEND | {"F"}))
    fused = sorted(place for place, calls in functions()
                   if calls & SPLIT and "scaled_dot_product_attention" in calls)
    assert len(found) <= 3, found
    assert "multihead.py:_mha_core" in found, found
    assert fused, "the fast path (F.scaled_dot_product_attention) is counted"


def test_block_forward_written_out_at_most_twice():
    """Layer norm + multi-head attention + feed-forward in one function: the
    block core, and at most one other (the decoder layer, which has a
    cross-attention sub-layer between)."""
    found = sorted(place for place, calls in functions()
                   if calls & LAYER_NORM and calls & MULTI_HEAD and calls & FFN)
    assert len(found) <= 2, found
    assert "block.py:_block_core" in found, found


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
    import runs (``tiny_model`` for ``tiny_model.step``), and leaves out a
    module's own packages; and :func:`circles` finds a circle."""
    known = modules()
    positions = imports(known["mhacourse.positions"], "mhacourse.positions")
    assert {"mhacourse.bert", "mhacourse.bert_weights"} <= positions
    scores = imports(known["mhacourse.circuits.scores"], "mhacourse.circuits.scores")
    assert {"mhacourse.tiny_model.step", "mhacourse.tiny_model"} <= scores
    own = imports(known["mhacourse.tiny_model.model"], "mhacourse.tiny_model.model")
    assert "mhacourse.tiny_model" not in own and "mhacourse" not in own
    assert "mhacourse.tasks" in own
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_the_cache_knows_no_model_built_on_it():
    """:mod:`mhacourse.kv_cache` is a layer: the tiny model decodes with it
    (``tiny_model.from_tiny_model``), so the cache imports no tiny model."""
    known = modules()
    kv = imports(known["mhacourse.kv_cache"], "mhacourse.kv_cache")
    assert not {m for m in kv if m.startswith("mhacourse.tiny_model")}, kv
    decoding = imports(known["mhacourse.tiny_model.decoding"],
                       "mhacourse.tiny_model.decoding")
    assert "mhacourse.kv_cache" in decoding


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
    "01_one_head": ("attention.py", "_attention_core",
                    ["scores = _scores_core(Q, K)", "weights = _softmax_core(scores)"]),
    "03_parallel_heads": ("multihead.py", "_mha_core",
                          ["_split_heads_core(_project(query, w.W_Q, w.b_Q), h)",
                           "_attention_core(Q, K, V, mask)"]),
    "06_output_projection": ("multihead.py", "_output_projection_core",
                             ["concat @ W_O"]),
    "10_transformer_block": ("block.py", "_block_core",
                             ["_layer_norm_core(x + a, w.gamma_1, w.beta_1, eps)",
                              "x = x + ffn(_layer_norm_core("]),
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


#: A check, by name: ``check_*`` or ``_check_*``.
CHECK = re.compile(r"_?check_\w+$")

#: The ground floor: the general rules every module may use.
GROUND_FLOOR = {"mhacourse._validate", "mhacourse._errors"}


def first_call(fn: ast.FunctionDef) -> ast.Call | None:
    """The first call ``fn`` makes: in its first statement after the
    docstring (and any import), the call that comes first in the source."""
    body = [s for s in fn.body if not isinstance(s, (ast.Import, ast.ImportFrom))]
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    calls = [n for n in ast.walk(body[0]) if isinstance(n, ast.Call)] if body else []
    return min(calls, key=lambda c: (c.lineno, c.col_offset), default=None)


def own_concept(module: str, source: str) -> bool:
    """Whether ``source`` is ``module``'s own concept: the module itself, a
    sibling named after it (``<module>_checks``), or a module of the same
    subpackage (``tiny_model/_checks`` for ``tiny_model/training``)."""
    package = module.rpartition(".")[0]
    return (source == module or source == f"{module}_checks"
            or (package != "mhacourse" and source.startswith(package + ".")))


def check_sources(path: Path, module: str) -> dict[str, str]:
    """``{local name: module it comes from}`` for the checks ``module``
    defines and imports (``from ._validate import check_bool``;
    ``from . import _checks as _v`` gives ``_v``)."""
    tree = ast.parse(path.read_text())
    known = modules()
    out = {n.name: module for n in tree.body if isinstance(n, ast.FunctionDef)}
    is_pkg = path.name == "__init__.py"
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level:
            base = module.split(".")
            base = base[:len(base) - node.level + (1 if is_pkg else 0)]
            source = ".".join(base + ([node.module] if node.module else []))
            for a in node.names:
                sub = f"{source}.{a.name}"
                out[a.asname or a.name] = sub if sub in known else source
    return out


def type_checks(module: str) -> set[str]:
    """The checks of ``module`` that test an argument against a class
    defined there (``isinstance(model, TinyTransformer)``), directly or
    through another check of the module: a class's own check, which any
    function taking that class may call first."""
    tree = ast.parse(modules()[module].read_text())
    classes = {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
    checks = {n.name: n for n in tree.body
              if isinstance(n, ast.FunctionDef) and CHECK.match(n.name)}

    def calls(fn):
        return {c.func.id for c in ast.walk(fn) if isinstance(c, ast.Call)
                and isinstance(c.func, ast.Name)}

    direct = {name for name, fn in checks.items()
              if any(isinstance(c.func, ast.Name) and c.func.id == "isinstance"
                     and len(c.args) == 2 and classes & {
                         n.id for n in ast.walk(c.args[1]) if isinstance(n, ast.Name)}
                     for c in ast.walk(fn) if isinstance(c, ast.Call))}
    return direct | {name for name, fn in checks.items() if calls(fn) & direct}


def public_functions():
    """``(place, module, path, function)`` for every public function: a
    module-level function whose name and module path have no leading
    underscore. Left out by rule: a ``check_*`` (it is a check); a function
    that takes no argument (nothing to check). A core (``_mha_core``) and
    the functions cores call (``_project``) are unchecked, by the house
    rule (checks wrap a core, never sit in it, so it traces once for every
    size), and so private: their names start with an underscore, and their
    checked forms are the public ones."""
    for module, path in modules().items():
        rel = path.relative_to(PKG).as_posix()
        if any(part.startswith("_") and part != "__init__.py"
               for part in rel.split("/")):
            continue
        for fn in ast.parse(path.read_text()).body:
            if not isinstance(fn, ast.FunctionDef) or fn.name.startswith("_") or (
                    CHECK.match(fn.name)):
                continue
            a = fn.args
            if a.posonlyargs or a.args or a.kwonlyargs or a.vararg or a.kwarg:
                yield f"{rel}:{fn.name}", module, path, fn


def first_check(module: str, path: Path, fn: ast.FunctionDef):
    """``(name, module it comes from)`` of ``fn``'s first call, if that is
    a check (by name); else ``(None, None)``."""
    call = first_call(fn)
    f = call.func if call else None
    name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
    if not (name and CHECK.match(name)):
        return None, None
    owner = f.value.id if isinstance(f, ast.Attribute) and isinstance(
        f.value, ast.Name) else name
    return name, check_sources(path, module).get(owner)


def test_a_function_checks_with_its_own_rules_or_the_ground_floor():
    """Where a public function's first call is a check, the check is its
    module's own, its concept's (a sibling ``_checks``, the same
    subpackage), the ground floor's (:mod:`mhacourse._validate`,
    :mod:`mhacourse._errors`), or the check of a class the function takes,
    defined beside that class (``check_tiny_model`` in
    ``tiny_model/model.py``). Never one borrowed from an unrelated module;
    no exception."""
    wrong, n = [], 0
    for place, module, path, fn in public_functions():
        name, source = first_check(module, path, fn)
        if name is None:
            continue
        n += 1
        if not (source in GROUND_FLOOR or (source and own_concept(module, source))
                or (source in modules() and name in type_checks(source))):
            wrong.append(f"{place} first calls {name} from {source}")
    assert not wrong, "\n".join(wrong)
    assert n > 90, n  # the walk reaches the package's checked functions
    assert "check_tiny_model" in type_checks("mhacourse.tiny_model.model")
    assert "check_bert" in type_checks("mhacourse.bert_weights")  # via check_bert_model
    assert "check_positive_int" not in type_checks("mhacourse._validate")


#: Public functions whose first statement is not a check call, each with the
#: reason: their decorator checks the input before the body runs. (The
#: traced graph bodies, ``_forward_with`` and the cores, are private.)
NO_CHECK_FIRST = {
    "reference_np.py:multi_head_attention_loop": "checked by its decorator "
        "(_mha_forms runs _check_mha before the body)",
    "reference_np.py:multi_head_attention": "checked by its decorator "
        "(_mha_forms runs _check_mha before the body)",
}

#: Public functions that do not start with a check yet: gaps to close, not
#: exceptions. Empty since issue 39 (it listed 38): a function added without
#: its check fails the test above, and code/tests/test_fuzz_public_api.py
#: feeds it hostile input. The test fails when a listed one gains its check
#: and stays listed, so the list can only shrink.
NOT_CHECKED_YET = ()


def test_every_public_function_checks_its_input_first():
    """The house rule: a public function's first call is its input check
    (from where the test above allows), unless :data:`NO_CHECK_FIRST`
    lists it with a reason or :data:`NOT_CHECKED_YET` as a known gap."""
    wrong, seen, checked = [], set(), set()
    for place, module, path, fn in public_functions():
        seen.add(place)
        name, _ = first_check(module, path, fn)
        if name is not None:
            checked.add(place)
        elif place not in NO_CHECK_FIRST and place not in NOT_CHECKED_YET:
            wrong.append(place)
    assert not wrong, wrong
    listed = set(NO_CHECK_FIRST) | set(NOT_CHECKED_YET)
    assert not listed - seen, listed - seen  # gone or renamed: unlist it
    assert not listed & checked, listed & checked  # checked now: unlist it
    assert {"kv_cache.py:attention_step", "positions.py:rotary",
            "tiny_model/training.py:train"} <= checked


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
