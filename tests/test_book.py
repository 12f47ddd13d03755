"""The book's sources: chapters paired with outputs-free notebooks, one TOC."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import jupytext
import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import execute_chapters  # noqa: E402  (scripts/execute_chapters.py)

import colab_cell  # noqa: E402  (scripts/colab_cell.py)

CHAPTERS = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.md"))
# a chapter's companion page (11b_*.md, a section of its chapter in _toc.yml)
# is a notebook but not a chapter: no template, deck or handout of its own
COMPANIONS = sorted((ROOT / "chapters").glob("[0-9][0-9][a-z]_*.md"))
NOTEBOOKS = CHAPTERS + COMPANIONS + [ROOT / "chapters" / "explorer.md"]


def toc_files() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]
    for part in toc.get("parts", []):
        for ch in part["chapters"]:
            files.append(ch["file"])
            files += [s["file"] for s in ch.get("sections", [])]
    return files


def test_there_are_chapters():
    assert CHAPTERS, "no chapters/NN_*.md found"


@pytest.mark.parametrize("md", NOTEBOOKS, ids=lambda p: p.stem)
def test_chapter_md_and_ipynb_are_in_sync(md: Path):
    ipynb = md.with_suffix(".ipynb")
    assert ipynb.exists(), f"{ipynb.name} is missing: run `make sync`"
    text_nb, saved_nb = jupytext.read(md), jupytext.read(ipynb)
    # the same cells, but for the Colab cell's repository: the .ipynb has
    # _config.yml's url and branch where the .md has placeholders
    url, branch = colab_cell.repository()
    ours = [(c.cell_type, colab_cell.fill(c.source.strip(), url, branch))
            for c in text_nb.cells]
    theirs = [(c.cell_type, c.source.strip()) for c in saved_nb.cells]
    assert ours == theirs, f"{md.name} and {ipynb.name} differ: run `make sync`"
    raw = json.loads(ipynb.read_text())
    with_outputs = [i for i, c in enumerate(raw["cells"])
                    if c.get("outputs") or c.get("execution_count")]
    assert not with_outputs, \
        f"{ipynb.name} has outputs in cells {with_outputs}: commit it outputs-free"


@pytest.mark.parametrize("md", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_follows_the_template(md: Path):
    text = md.read_text()
    for heading in ["Goals", "The math", "A check", "A picture",
                    "In PyTorch this is", "Summary", "Exercises"]:
        assert heading in text, f"{md.name} lacks the template section '{heading}'"
    assert text.count("{exercise}") >= 3, f"{md.name} needs 3+ exercises"
    assert text.count("{solution}") >= text.count("{exercise}"), \
        f"{md.name}: every exercise needs a solution"
    assert re.search(r"^import mhacourse|^from mhacourse", text, re.M), \
        f"{md.name} must import the shared package"


def test_every_chapter_is_in_the_toc():
    listed = set(toc_files())
    for md in NOTEBOOKS:
        assert f"chapters/{md.stem}" in listed, f"{md.name} is not in _toc.yml"
    for f in listed:
        assert list((ROOT).glob(f + ".*")), f"_toc.yml lists {f}, which does not exist"


def test_split_printouts_are_joined_in_order():
    """A cell's output that the kernel sent in chunks (cut mid-line, by time)
    is one output again, text exact; a picture between two printouts keeps
    them apart, and stderr stays apart from stdout."""
    import nbformat
    v4 = nbformat.v4
    nb = v4.new_notebook(cells=[v4.new_code_cell("x", outputs=[
        v4.new_output("stream", name="stdout",
                      text="a table:\n  row 1\n  (every other key: below 0.05"),
        v4.new_output("stream", name="stdout", text=" in all three heads)\n"),
        v4.new_output("display_data", data={"text/plain": "<Figure>"}),
        v4.new_output("stream", name="stdout", text="after the picture\n"),
        v4.new_output("stream", name="stderr", text="a warning\n"),
        v4.new_output("stream", name="stdout", text="last\n")]), v4.new_markdown_cell("text")])
    assert execute_chapters.join_split_streams(nb) == 1
    outs = nb.cells[0].outputs
    assert [o.output_type for o in outs] == ["stream", "display_data", "stream", "stream", "stream"]
    assert outs[0].text == "a table:\n  row 1\n  (every other key: below 0.05 in all three heads)\n"
    assert [o.get("name") for o in outs] == ["stdout", None, "stdout", "stderr", "stdout"]
    assert execute_chapters.join_split_streams(nb) == 0


def test_the_execution_cache_holds_no_split_printout():
    """Every chapter the build executed is cached with its printouts whole,
    so a page's length does not depend on the machine's load."""
    from jupyter_cache import get_cache
    cache_dir = ROOT / "_build" / ".jupyter_cache"
    if not cache_dir.exists():
        pytest.fail("no execution cache: run `make book` first")
    cache = get_cache(str(cache_dir))
    records = cache.list_cache_records()
    assert len(records) >= 16, len(records)
    for r in records:
        nb = cache.get_cache_bundle(r.pk).nb
        for cell in nb.cells:
            outs = cell.get("outputs", [])
            for a, b in zip(outs, outs[1:]):
                assert not (a.output_type == b.output_type == "stream" and a.name == b.name), \
                    f"{r.uri}: a printout split in two"


TEXTS = sorted((ROOT / "chapters").glob("*.md"))
# a character no prose or formula means: C0 controls (tab included: a Python
# string's "\t" in "\top" once became one), DEL and C1 controls
CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]")
MATH = re.compile(r"\$\$.*?\$\$|\$[^$\n]+\$", re.S)


def control_characters(text: str) -> list[str]:
    """Each control character of ``text`` with its line, math first."""
    found = [f"in math {m.group()!r}" for m in MATH.finditer(text)
             if CONTROL.search(m.group())]
    found += [f"line {text.count(chr(10), 0, m.start()) + 1}: {m.group()!r}"
              for m in CONTROL.finditer(text)]
    return found


def test_the_control_character_check_finds_a_tab_in_math():
    assert control_characters("as $W_Q^i {W_K^i}^\top$ reads") \
        and not control_characters("as $W_Q^i {W_K^i}^\\top$ reads\n")


@pytest.mark.parametrize("md", TEXTS, ids=lambda p: p.stem)
def test_no_control_character_in_a_chapter_or_the_guide(md: Path):
    found = control_characters(md.read_text(encoding="utf-8"))
    assert not found, f"{md.name} holds control characters (a tab for \\t?): {found}"


# A measured value typed into text that no cell prints: a decimal or a
# percentage (allowed only where a code cell of the same page types it too:
# an example's input), a step of a run, or a count of runs ("two of three").
TYPED_NUMBER = re.compile(r"(?<![\w.])\d*\.\d+|\d+(?:\.\d+)?\s*%")
TYPED_OUTCOME = re.compile(
    r"\bsteps? \d+|\b(?:one|two|three|four|five|six|\d+) of (?:the |its )?"
    r"(?:one|two|three|four|five|six|\d+)\b", re.I)
CODE_CELL = re.compile(r"```\{code-cell\}[^\n]*\n(?:---\n.*?\n---\n)?(.*?)```", re.S)
CELL_META = re.compile(r"```\{code-cell\}[^\n]*\n---\n(.*?)\n---\n", re.S)


def typed_values(text: str, code: str = "") -> list[str]:
    """The measured values ``text`` types: step numbers and run counts
    always, decimals and percentages unless ``code`` types them too."""
    def in_code(n: str) -> bool:
        return re.search(rf"(?<![\w.]){re.escape(n.rstrip(' %'))}(?![\w.])", code) is not None
    return TYPED_OUTCOME.findall(text) + [
        n for n in TYPED_NUMBER.findall(text) if not in_code(n)]


def alt_texts(text: str) -> list[str]:
    """Every alt text of a page: a figure cell's ``image: alt``, a Markdown
    image's ``![alt]`` and an ``:alt:`` option."""
    alts = []
    for meta in CELL_META.findall(text):
        image = ((yaml.safe_load(meta) or {}).get("mystnb") or {}).get("image") or {}
        alts += [image["alt"]] if image.get("alt") else []
    alts += re.findall(r"!\[([^\]]+)\]", text) + re.findall(r"^\s*:alt: (.+)$", text, re.M)
    return alts


def test_the_typed_value_check_finds_what_it_must():
    assert typed_values("lookup sits near 0.29 until about step 180")
    assert typed_values("two of three seeds never leave the plateau")
    assert typed_values("the curve passes 90 % late")
    assert not typed_values("a table of 0.2 and 0.5", code="x = [0.2, 0.5]")
    assert typed_values("about 0.19", code="y = 0.195")
    assert not typed_values("three curves over 800 steps, 64 singular values, h = 4")
    assert len(alt_texts("```{code-cell} python\n---\nmystnb:\n  image:\n    alt: A b"
                         "\n---\nx\n```\n![C d](e.png)\n")) == 2


@pytest.mark.parametrize("md", TEXTS, ids=lambda p: p.stem)
def test_alt_texts_give_settings_not_measured_values(md: Path):
    """The guide's rule: an alt text cannot take an inserted value, so it
    describes the picture in words and gives only the run's settings."""
    text = md.read_text(encoding="utf-8")
    code = "\n".join(CODE_CELL.findall(text))
    typed = {alt[:50]: typed_values(alt, code) for alt in alt_texts(text)}
    assert not any(typed.values()), f"{md.name}: alt texts type measured values: {typed}"


def test_the_guides_table_rows_type_no_measured_value():
    """The guide has no cells: its tables point at the chapter that prints
    a value, and quote numbers only in the claim they refute (the first two
    columns of the misconceptions table)."""
    guide = (ROOT / "chapters" / "instructor_guide.md").read_text(encoding="utf-8")
    typed, quoting = [], False
    for line in guide.splitlines():
        if not line.startswith("|"):
            quoting = False
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        quoting = quoting or cells[0] == "the misconception"
        own = cells[2:] if quoting else cells
        words = re.sub(r"§[\d.]+|\(\w[^()]*\d{4}[a-z]?\)", "", " | ".join(own))
        typed += [(cells[0][:40], v) for v in typed_values(words)]
    assert not typed, f"the guide's tables type measured values: {typed}"


def test_chapter_11_numbers_heads_from_1_as_the_page_does():
    """The explorer page names heads L1H1..: chapter 11 (and the slides and
    handout made from it) says so once and uses no 0-based head label."""
    text = (ROOT / "chapters" / "11_how_heads_form.md").read_text(encoding="utf-8")
    zero_based = re.findall(r"\bL\dH0\b|\bhead 0\b|H\{i\}|H\{j\}|head \{[ij]\}", text)
    assert not zero_based, f"0-based head labels in chapter 11: {zero_based}"
    assert "L1H1 is block 1's first head" in text


@pytest.mark.parametrize("stem", ["04_what_heads_learn", "14_positions"])
def test_minilm_chapters_name_heads_from_1_with_head_name(stem):
    """Chapter 4 (and chapter 14, which quotes its previous-token head) name
    MiniLM's heads as the rest of the course does, L1H1 = the first layer's
    first head: through ``mc.head_name``, no name built from 0-based indices
    (``f"L{l}H{i}"``) and no "layer 0" or "head 0" said to the reader."""
    text = (ROOT / "chapters" / f"{stem}.md").read_text(encoding="utf-8")
    zero_based = re.findall(r"\bL\{[^}]*\}H\{|\bL0H|\bL\dH0\b|\blayers? 0\b|\bheads? 0\b"
                            r"|head \{[ij]\}|[Ll]ayer-0", text)
    assert not zero_based, f"0-based head or layer names in {stem}: {zero_based}"
    assert "mc.head_name(" in text
    if stem.startswith("04"):
        assert "both counted from 1, as everywhere in the course" in " ".join(text.split())


def test_shared_execution_cache_keys_on_cells_and_inputs(tmp_path, monkeypatch):
    """scripts/execute_chapters.py keeps an executed chapter outside the
    clone under its code cells and the key of what chapters read: a chapter
    with other code, or the same chapter once an input changed, is not taken
    from it; the same cells under the same key are, outputs and all; and
    only the latest KEEP keys stay."""
    import nbformat
    v4 = nbformat.v4
    monkeypatch.setenv("MHACOURSE_CACHE", str(tmp_path))
    source = v4.new_notebook(cells=[v4.new_markdown_cell("# ch"), v4.new_code_cell("print(1)")])
    executed = nbformat.from_dict(source)
    executed.cells[1].outputs = [v4.new_output("stream", name="stdout", text="1\n")]
    key = execute_chapters.inputs_key()
    assert key == execute_chapters.inputs_key(), "the key of unchanged inputs moved"
    folder = execute_chapters.shared_dir() / key
    assert execute_chapters.from_shared(folder, source) is None
    execute_chapters.to_shared(folder, source, executed)
    got = execute_chapters.from_shared(folder, source)
    assert got is not None and got.cells[1].outputs[0].text == "1\n"
    other = nbformat.from_dict(source)
    other.cells[1].source = "print(2)"
    assert execute_chapters.from_shared(folder, other) is None, "other code, same entry"
    prose = nbformat.from_dict(source)
    prose.cells[0].source = "# the chapter, reworded"
    assert execute_chapters.from_shared(folder, prose) is not None, "prose is not executed"
    # an input changed (a file under assets/): another key, nothing there
    monkeypatch.setattr(execute_chapters, "ROOT", tmp_path / "clone")
    for name in execute_chapters.INPUTS:
        (tmp_path / "clone" / name).mkdir(parents=True, exist_ok=True)
    first = execute_chapters.inputs_key()
    (tmp_path / "clone" / "assets" / "runs.json").write_text("{}")
    second = execute_chapters.inputs_key()
    assert first != second, "a changed input kept the key"
    assert execute_chapters.from_shared(execute_chapters.shared_dir() / second, source) is None
    for k in ("k1", "k2", "k3"):
        execute_chapters.to_shared(execute_chapters.shared_dir() / k, source, executed)
    left = sorted(p.name for p in execute_chapters.shared_dir().iterdir())
    assert len(left) == execute_chapters.KEEP and "k3" in left, left
