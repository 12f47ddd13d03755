"""Hostile values for the browser fuzz of tests/test_untrusted_live.py (issue
48, finding 7), drawn from seeded generators: the trainer's links, model
files and class reports. Pure Python; the test feeds them to one page each."""
from __future__ import annotations

import json
import random
import struct
from pathlib import Path

import torch
from safetensors.torch import save as st_save

from mhacourse.tiny_model.files import _digest

ROOT = Path(__file__).resolve().parents[1]
GOOD = ROOT / "assets" / "models" / "h2_dk8.safetensors"

NASTY = [None, "", "NaN", "Infinity", "-Infinity", "-1", "0", "1e999", "1e308", "0x10", "1.5",
         "99999999999999999999", "2", "4", "16", "65", "<script>window.pwned=1</script>",
         "javascript:window.pwned=2", "%00", "\u202e", "__proto__", "constructor", "[]", "{}",
         "a" * 300, "1;2", " 4", "4 ", "+4", "-0", "true", "on", "off"]
LINK_KEYS = ["v", "h", "dk", "seed", "steps", "budget", "layers", "warmup", "identical",
             "clip", "predict", "p", "__proto__", "constructor", "x"]


def links(n: int, seed: int = 48) -> list[str]:
    """``n`` query strings: random fields, each a hostile or a plain value,
    some repeated, some too long, some not a query at all."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        kind = i % 10
        if kind == 0:  # bytes of no query at all
            n = rng.randrange(60)
            out.append("?" + "".join(chr(rng.randrange(1, 0x3000)) for _ in range(n)))
        elif kind == 1:  # over the length the page reads
            out.append("?h=" + "4" * rng.randrange(1000, 9000))
        else:
            fields = []
            for _ in range(rng.randrange(1, 9)):
                k = rng.choice(LINK_KEYS)
                v = rng.choice(NASTY)
                fields.append(k if v is None else f"{k}={v}")
            out.append("?" + "&".join(fields))
    return out


def _file(meta: dict, tensors: dict, digest: bool) -> bytes:
    meta = dict(meta)
    meta.pop("digest", None)
    if digest:
        meta["digest"] = _digest(meta, tensors)
    return st_save(tensors, metadata=meta)


def _header(raw: bytes, fn) -> bytes:
    n = struct.unpack("<Q", raw[:8])[0]
    head = json.loads(raw[8:8 + n])
    fn(head)
    h = json.dumps(head).encode()
    return struct.pack("<Q", len(h)) + h + raw[8 + n:]


def model_files(n: int, seed: int = 48) -> list[tuple[str, bytes]]:
    """``n`` (name, bytes) files: random bytes, truncations, flipped bytes,
    edited headers (no new digest) and hostile configs, weights and seeds
    under a digest that matches (as a student could recompute it)."""
    from safetensors import safe_open

    rng = random.Random(seed)
    raw = GOOD.read_bytes()
    with safe_open(str(GOOD), "pt") as f:
        meta = dict(f.metadata())
        tensors = {k: f.get_tensor(k) for k in f.keys()}
    cfg = json.loads(meta["config"])
    hostile = [0, -1, 1e308, 4.5, "4", None, [], {}, 2**53, 3, 64, 1000, True]
    out = []
    for i in range(n):
        kind = i % 8
        if kind == 0:
            b = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 600)))
        elif kind == 1:
            b = raw[:rng.randrange(1, len(raw))]
        elif kind == 2:
            at = rng.randrange(8, len(raw))
            b = raw[:at] + bytes([raw[at] ^ (1 << rng.randrange(8))]) + raw[at + 1:]
        elif kind == 3:  # an edited header, its digest left as it was
            def edit(h, r=rng):
                t = r.choice([k for k in h if k != "__metadata__"])
                what = r.randrange(5)
                if what == 0:
                    h[t]["dtype"] = r.choice(["I64", "F64", "BF16", "<b>", ""])
                elif what == 1:
                    h[t]["shape"] = r.choice([[-1], [1e20], ["a"], [], [2, 2, 2, 2]])
                elif what == 2:
                    h[t]["data_offsets"] = r.choice([[0, 10**20], [5, 1], [-1, 3], [0]])
                elif what == 3:
                    h["__metadata__"] = r.choice([[], {"config": 5}, None, "x"])
                else:
                    c = json.loads(h["__metadata__"]["config"])
                    c[r.choice(list(c))] = r.choice(hostile)
                    h["__metadata__"]["config"] = json.dumps(c)
            b = _header(raw, edit)
        elif kind == 4:  # a hostile config under a matching digest
            c = dict(cfg)
            c[rng.choice(["h", "d_k", "n_layers", "vocab_size", "max_len", "ff_mult"])] = \
                rng.choice(hostile)
            b = _file({**meta, "config": json.dumps(c)}, tensors, True)
        elif kind == 5:  # hostile weights under a matching digest
            t = {k: v.clone() for k, v in tensors.items()}
            k = rng.choice(sorted(t))
            t[k].view(-1)[rng.randrange(t[k].numel())] = rng.choice(
                [float("nan"), float("inf"), -float("inf")])
            b = _file(meta, t, True)
        elif kind == 6:  # an untrained model's seed, hostile, with or without weights
            m = {"config": meta["config"], "extra": "{}",
                 "init_seed": rng.choice(["-1", "1e3", "abc", "99999999999", "3", ""]),
                 "fingerprint": "0" * 64}
            b = _file(m, rng.choice([{}, tensors]), rng.random() < 0.5)
        else:  # hostile extra, or a tensor too many, under a matching digest
            if rng.random() < 0.5:
                b = _file({**meta, "extra": rng.choice(["[1]", "{", "null", '"x"', "{}"])},
                          tensors, True)
            else:
                b = _file(meta, {**tensors, "evil": torch.zeros(3)}, True)
        out.append((f"fuzz-{i:03d}.safetensors", b))
    return out


def _leaves(x, path=()):
    if isinstance(x, dict):
        for k, v in x.items():
            yield from _leaves(v, (*path, k))
    elif isinstance(x, list) and x:
        for i in (0, len(x) - 1):
            yield from _leaves(x[i], (*path, i))
    yield path


REPORT_NASTY = [None, "", "x" * 5000, -1, 1e308, "NaN", [], {}, True, 2**60, 0.5, -0.0,
                "<img src=x onerror=window.pwned=1>", "javascript:window.pwned=2",
                "http://evil.example/", [[1, 2]], {"__proto__": {"pwned": 1}}]


def reports(good: list[dict], n: int, seed: int = 48) -> tuple[list[dict], list[str]]:
    """``n`` edited copies of ``good`` reports (one field each set to a
    hostile value, deleted or added); the caller recomputes the checksum of
    some (``resum``), so that they reach the checks after it."""
    rng = random.Random(seed)
    out, raw = [], []
    for i in range(n):
        r = json.loads(json.dumps(rng.choice(good)))
        paths = [p for p in _leaves(r) if p]
        path = rng.choice(paths)
        node = r
        for k in path[:-1]:
            node = node[k]
        what = rng.randrange(4)
        if what == 0 and isinstance(node, dict):
            del node[path[-1]]
        elif what == 1 and isinstance(node, dict):
            key = rng.choice(["extra", "__proto__", "constructor", "x" * 40])
            node[key] = rng.choice(REPORT_NASTY)
        else:
            node[path[-1]] = rng.choice(REPORT_NASTY)
        out.append(r)
    for text in ["", "not json", "[]", "null", "1e999", '{"format": "mhacourse-report"}',
                 "{" * 5000, json.dumps({"format": "mhacourse-report", "version": 1e999})]:
        raw.append(text)
    return out, raw
