"""The package's shape: no module over 600 lines, layers that point one way
(math <- plotting <- widgets), and ``import mhacourse`` loading neither the
real model nor any plotting."""
import ast
import os
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "mhacourse"
MAX_LINES = 600  # "no module over about 600 lines" (issue 14)

# Pictures and controls; every other module is mathematics (or loads models).
PLOTTING = ("mhacourse.plotting", "mhacourse.plotting_html")
WIDGETS = ("mhacourse.widgets",)
PLOTTING_LIBS = ("matplotlib", "PIL")
WIDGET_LIBS = ("ipywidgets", "IPython")


def _modules() -> dict[str, Path]:
    """``{"mhacourse.plotting.heatmaps": path, ...}`` for every file."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _imports(name: str, path: Path) -> set[str]:
    """Every module ``path`` imports, anywhere in the file, as absolute names
    (``from .colours import X`` in mhacourse.plotting.heatmaps gives
    ``mhacourse.plotting.colours`` and ``mhacourse.plotting.colours.X``)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module
            found.add(module)
            found.update(f"{module}.{a.name}" for a in node.names)
    return found


def _under(module: str, prefixes) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def test_every_module_is_at_most_600_lines():
    modules = _modules()
    # the walk reaches the subpackages (plotting, tiny_model, checks)
    assert {"mhacourse.plotting.heatmaps", "mhacourse.tiny_model.training",
            "mhacourse.checks._verdict", "mhacourse.bert"} <= set(modules)
    lines = {name: len(path.read_text().splitlines()) for name, path in modules.items()}
    too_long = {name: n for name, n in lines.items() if n > MAX_LINES}
    assert not too_long, f"modules over {MAX_LINES} lines: {too_long}"


def test_layers_point_one_way():
    """Math imports no plotting and no widgets; plotting imports no widgets."""
    wrong = []
    for name, path in _modules().items():
        imported = _imports(name, path)
        if _under(name, WIDGETS):
            continue
        banned = WIDGETS + WIDGET_LIBS
        if not _under(name, PLOTTING):
            banned += PLOTTING + PLOTTING_LIBS
        wrong += [f"{name} imports {m}" for m in sorted(imported) if _under(m, banned)]
    assert not wrong, wrong


def test_the_import_check_sees_imports():
    """The two tests above would pass on a parser that sees nothing."""
    mods = _modules()
    widgets = _imports("mhacourse.widgets", mods["mhacourse.widgets"])
    assert "ipywidgets" in widgets and "mhacourse.plotting_html" in widgets
    heatmaps = _imports("mhacourse.plotting.heatmaps", mods["mhacourse.plotting.heatmaps"])
    assert {"matplotlib.pyplot", "mhacourse._arrays.to_numpy",
            "mhacourse.plotting.colours.CMAP"} <= heatmaps
    init = _imports("mhacourse.tiny_model", mods["mhacourse.tiny_model"])
    assert {"mhacourse.cost", "mhacourse.tiny_model.training"} <= init


def test_import_mhacourse_loads_no_model_and_no_plotting():
    """``import mhacourse`` stays light: the real model's loader and the
    plotting libraries load on first use, not on import."""
    code = ("import sys, mhacourse; print(' '.join(sorted(m for m in sys.modules "
            "if m.startswith(('mhacourse', 'matplotlib', 'ipywidgets', 'safetensors', "
            "'tokenizers')))))")
    env = {**os.environ, "PYTHONPATH": str(PACKAGE.parent)}
    loaded = subprocess.run([sys.executable, "-c", code], env=env, check=True,
                            capture_output=True, text=True).stdout.split()
    assert "mhacourse.multihead" in loaded  # the check sees what was imported
    for module in ("mhacourse.bert", "mhacourse.bert_weights", "mhacourse.plotting",
                   "mhacourse.widgets", "matplotlib", "ipywidgets", "safetensors",
                   "tokenizers"):
        assert module not in loaded, f"import mhacourse loaded {module}"
