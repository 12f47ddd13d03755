"""Copy the site's third-party JavaScript from node_modules/ into _vendor/.

`npm ci` fetches pinned versions (package.json / package-lock.json) from the
npm registry at build time; nothing third-party is committed. Sphinx copies
_vendor/ into the site's _static/, so the site needs no CDN:

- _static/mathjax/   MathJax 3 (tex-mml-chtml.js and its fonts)
- _static/widgets/   require.js + @jupyter-widgets/html-manager (embed-amd.js);
                     myst-nb adds these only to pages that hold widget state
- _static/reveal/    reveal.js, for the slide decks
- _static/axe/       axe-core, for the accessibility test only
- _static/ort/       onnxruntime-web: the single-threaded WebAssembly build
                     only (the ES module, its loader and one .wasm), which the
                     explorer page loads to run the course's exported models
- _static/tokenizers/ @huggingface/tokenizers, which reads the models' own
                     tokenizer.json in the explorer page
- _static/noble-hashes/ @noble/hashes' SHA-256 (sha2.js and the three
                     modules it imports): the lab's and the class page's
                     checksums where the browser has no crypto.subtle (a page
                     over plain http from an address that is not this
                     machine's, as on a school's network)
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NODE = ROOT / "node_modules"
OUT = ROOT / "_vendor"

# (source under node_modules, destination under _vendor)
FILES = [
    ("mathjax/es5/tex-mml-chtml.js", "mathjax/tex-mml-chtml.js"),
    ("mathjax/es5/output/chtml/fonts/woff-v2", "mathjax/output/chtml/fonts/woff-v2"),
    ("requirejs/require.js", "widgets/require.js"),
    ("@jupyter-widgets/html-manager/dist/embed-amd.js", "widgets/embed-amd.js"),
    ("reveal.js/dist", "reveal/dist"),
    ("reveal.js/plugin", "reveal/plugin"),
    ("axe-core/axe.min.js", "axe/axe.min.js"),
    # numThreads = 1 runs this build without SharedArrayBuffer, so no
    # COOP/COEP headers are needed (static hosts cannot send them)
    ("onnxruntime-web/dist/ort.wasm.min.mjs", "ort/ort.wasm.min.mjs"),
    ("onnxruntime-web/dist/ort-wasm-simd-threaded.mjs", "ort/ort-wasm-simd-threaded.mjs"),
    ("onnxruntime-web/dist/ort-wasm-simd-threaded.wasm", "ort/ort-wasm-simd-threaded.wasm"),
    ("@huggingface/tokenizers/dist/tokenizers.min.mjs", "tokenizers/tokenizers.min.mjs"),
    ("@huggingface/tokenizers/LICENSE", "tokenizers/LICENSE"),
    ("@noble/hashes/sha2.js", "noble-hashes/sha2.js"),
    ("@noble/hashes/_md.js", "noble-hashes/_md.js"),
    ("@noble/hashes/_u64.js", "noble-hashes/_u64.js"),
    ("@noble/hashes/utils.js", "noble-hashes/utils.js"),
    ("@noble/hashes/LICENSE", "noble-hashes/LICENSE"),
]
# fonts that embed-amd.js loads relative to itself
WIDGET_FONT_SUFFIXES = (".woff2", ".woff", ".ttf", ".eot", ".svg")


def main() -> int:
    if not NODE.is_dir():
        print("node_modules/ is missing: run `npm ci` first.", file=sys.stderr)
        return 1
    if OUT.exists():
        shutil.rmtree(OUT)
    for src, dst in FILES:
        s, d = NODE / src, OUT / dst
        if not s.exists():
            print(f"missing {s}: run `npm ci`.", file=sys.stderr)
            return 1
        d.parent.mkdir(parents=True, exist_ok=True)
        if s.is_dir():
            shutil.copytree(s, d)
        else:
            shutil.copy2(s, d)
    dist = NODE / "@jupyter-widgets/html-manager/dist"
    for f in dist.iterdir():
        if f.suffix in WIDGET_FONT_SUFFIXES:
            # embed-amd.js asks for them at {data-jupyter-widgets-cdn}/
            # @jupyter-widgets/html-manager/dist/; _config.yml points that
            # attribute at the site's own _static/
            fonts = OUT / "@jupyter-widgets" / "html-manager" / "dist"
            fonts.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, fonts / f.name)
    size = sum(f.stat().st_size for f in OUT.rglob("*") if f.is_file())
    print(f"_vendor/: {size / 1e6:.1f} MB of third-party assets copied")
    return 0


if __name__ == "__main__":
    sys.exit(main())
