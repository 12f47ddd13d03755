"""The house's Python imports point one way: nothing climbs back up.

Read from the source (AST) of every .py under scripts/, benchmarks/, tests/
and code/. Each absolute import is resolved the way Python would find it
when the file runs: its own folder first, then the folders it puts on
``sys.path`` (worked out from ``Path(__file__)...`` expressions), then, for
the tests, pytest.ini's ``pythonpath``. Then three rules:

- no file outside the tests puts a tests folder on ``sys.path``;
- no script, benchmark or package module imports a module of a tests folder;
- no module imports a module that lies in a folder above its own (a part in
  ``scripts/classroom/`` importing ``scripts/classroom_check.py``): what two
  places share lives where both import it downward.

A package's own relative imports (``from .. import x``) are the package's
business (code/tests/test_structure.py checks its layers).
"""
from __future__ import annotations

import ast
import configparser
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TREES = ("scripts", "benchmarks", "tests", "code")
SKIP = {".venv", "node_modules", "__pycache__", "_build", ".git"}


def python_files(root: Path):
    for tree in TREES:
        for path in sorted((root / tree).rglob("*.py")):
            if not SKIP.intersection(path.relative_to(root).parts):
                yield path


def is_tests_folder(folder: Path, root: Path) -> bool:
    """``tests/``, ``code/tests/`` or a folder inside either."""
    rel = folder.resolve().relative_to(root.resolve()) if folder.is_absolute() else folder
    return "tests" in rel.parts


class PathValue:
    """Works out the folder a ``sys.path`` expression names, when it is made
    of ``__file__``, ``Path``, ``.resolve()``, ``.parent``, ``.parents[n]``,
    ``/``, ``str``, ``os.path.dirname/abspath/join`` and names the module
    assigns from these or imports from a module beside it; None when it is
    anything else."""

    def __init__(self, path: Path, tree: ast.Module):
        self.file = path.resolve()
        self.names, self.imported = {}, {}
        for node in tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                    and isinstance(node.targets[0], ast.Name):
                self.names[node.targets[0].id] = node.value
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                beside = self.file.parent / f"{node.module}.py"
                for alias in node.names:
                    if beside.is_file():
                        self.imported[alias.asname or alias.name] = (beside, alias.name)

    def lookup(self, name: str, depth: int):
        if name in self.names:
            return self(self.names[name], depth + 1)
        if name in self.imported:
            path, original = self.imported[name]
            return PathValue(path, ast.parse(path.read_text()))(ast.Name(original), depth + 1)
        return None

    def __call__(self, node, depth: int = 0):
        if depth > 20:
            return None
        ev = lambda n: self(n, depth + 1)  # noqa: E731
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.Name):
            return self.file if node.id == "__file__" else self.lookup(node.id, depth)
        if isinstance(node, ast.Attribute) and node.attr == "parent":
            base = ev(node.value)
            return Path(base).parent if base is not None else None
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) \
                and node.value.attr == "parents" and isinstance(node.slice, ast.Constant):
            base = ev(node.value.value)
            return Path(base).parents[node.slice.value] if base is not None else None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            left, right = ev(node.left), ev(node.right)
            return Path(left) / right if None not in (left, right) else None
        if isinstance(node, ast.Call):
            return self.call(node, ev)
        return None

    def call(self, node: ast.Call, ev):
        f = node.func
        name = ast.unparse(f)
        args = [ev(a) for a in node.args]
        if None in args:
            return None
        if isinstance(f, ast.Attribute) and f.attr == "resolve" and not node.args:
            base = ev(f.value)
            return Path(base).resolve() if base is not None else None
        if name in ("Path", "str", "os.fspath", "os.path.abspath", "os.path.realpath") \
                and len(args) == 1:
            return Path(args[0])
        if name == "os.path.dirname" and len(args) == 1:
            return Path(args[0]).parent
        if name == "os.path.join" and args:
            return Path(os.path.join(*map(str, args)))
        return None


def sys_path_inserts(path: Path, tree: ast.Module) -> list[tuple[int, Path | None]]:
    """``(line, folder or None when unknown)`` of each ``sys.path.insert``,
    ``sys.path.append`` call in the file."""
    value = PathValue(path, tree)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in ("insert", "append") \
                and ast.unparse(node.func.value) == "sys.path" and node.args:
            folder = value(node.args[-1])
            out.append((node.lineno, Path(folder).resolve() if folder is not None else None))
    return out


def pytest_pythonpath(root: Path) -> list[Path]:
    ini = configparser.ConfigParser()
    ini.read(root / "pytest.ini")
    return [root / p for p in ini.get("pytest", "pythonpath", fallback="").split()]


def find_module(dotted: str, search: list[Path]) -> Path | None:
    """The file Python would load for ``dotted`` from these folders (the
    first that holds its top-level name; a trailing name that is no module
    is an attribute of the last one), or None: not the house's."""
    for folder in search:
        found = None
        for part in dotted.split("."):
            base = folder if found is None else found
            if not base.is_dir():
                break
            if (base / f"{part}.py").is_file():
                found = base / f"{part}.py"
            elif (base / part).is_dir():
                found = base / part
            else:
                break
        if found is not None:
            if found.is_dir() and (found / "__init__.py").is_file():
                found = found / "__init__.py"
            return found.resolve()
    return None


def imports(tree: ast.Module):
    """``(line, dotted name)`` of each absolute import, and for ``from a
    import b`` also ``a.b`` (b may be a module)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module
            for alias in node.names:
                yield node.lineno, f"{node.module}.{alias.name}"


def violations(root: Path) -> list[str]:
    """Every import or ``sys.path`` entry under ``root`` that breaks a rule."""
    root = root.resolve()
    extra = pytest_pythonpath(root)
    out = []
    for path in python_files(root):
        rel = path.relative_to(root)
        tree = ast.parse(path.read_text(), str(path))
        in_tests = is_tests_folder(rel.parent, root)
        inserts = sys_path_inserts(path, tree)
        search = [path.parent.resolve()]
        for line, folder in inserts:
            if folder is None:
                continue
            search.append(folder)
            if not in_tests and root in folder.parents and is_tests_folder(folder, root):
                out.append(f"{rel}:{line} puts {folder.relative_to(root)} on sys.path")
        if in_tests:
            search += [p.resolve() for p in extra]
        for line, dotted in imports(tree):
            found = find_module(dotted, search)
            if found is None or root not in found.parents:
                continue
            where = found.relative_to(root)
            if not in_tests and is_tests_folder(where.parent, root):
                out.append(f"{rel}:{line} imports {dotted} from {where}")
            elif found.parent != path.parent.resolve() and found.parent in path.parents \
                    and found.name != "__init__.py":
                out.append(f"{rel}:{line} climbs up to {dotted} ({where})")
    return sorted(set(out))


def test_no_import_climbs_back_up():
    """No benchmark or script reaches into tests/, and no module imports one
    in a folder above its own."""
    found = violations(ROOT)
    assert not found, "imports that climb back up:\n  " + "\n  ".join(found)


def test_every_sys_path_entry_is_understood():
    """Each ``sys.path`` entry of the house is worked out by the check above
    (an expression it cannot read would hide an import from it)."""
    unknown = [f"{p.relative_to(ROOT)}:{line}" for p in python_files(ROOT)
               for line, folder in sys_path_inserts(p, ast.parse(p.read_text()))
               if folder is None]
    assert not unknown, f"sys.path entries the import check cannot work out: {unknown}"


def test_the_check_sees_each_way_of_climbing(tmp_path):
    """A small house with each fault once: the check names all three, and
    none of the imports that point downward."""
    files = {
        "pytest.ini": "[pytest]\npythonpath = scripts\n",
        "tests/helper.py": "X = 1\n",
        "tests/test_a.py": "import helper\nimport shared\n",
        "scripts/shared.py": "Y = 2\n",
        "scripts/top.py": "from sub import part\n",
        "scripts/sub/__init__.py": "",
        "scripts/sub/part.py": "import sys\nfrom pathlib import Path\n"
                               "sys.path.insert(0, str(Path(__file__).resolve().parent.parent))\n"
                               "import top\nfrom sub import other\n",
        "scripts/sub/other.py": "",
        "benchmarks/bench_x.py": "import sys\nfrom pathlib import Path\n"
                                 "ROOT = Path(__file__).resolve().parents[1]\n"
                                 "sys.path.insert(0, str(ROOT / 'tests'))\n"
                                 "import helper\n",
        "code/pkg/__init__.py": "",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert violations(tmp_path) == [
        "benchmarks/bench_x.py:4 puts tests on sys.path",
        "benchmarks/bench_x.py:5 imports helper from tests/helper.py",
        "scripts/sub/part.py:4 climbs up to top (scripts/top.py)",
    ]
