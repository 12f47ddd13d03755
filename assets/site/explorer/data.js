// The build's data, as the page's modules read it: the manifest (the
// build's explorer-data/manifest script; its format: the schema beside this
// file), the example
// sentences' views computed at build time (precomputed.js) and the viridis
// colour map. scripts/export_explorer.py writes them as classic scripts,
// because the static fallback (fallback.js) reads them too on a page
// opened from disk, where browsers refuse modules; this module is the one
// place the modules read them. STATIC is the site's _static/ folder.

export const MAN = globalThis.mhaExplorerManifest || null;
export const PRE = globalThis.mhaExplorerPrecomputed || null;
export const CMAP = globalThis.mhaExplorerColormap || null; // 256 x [r, g, b]
// SmolLM2's manifest and example views (explorer-data/smollm2/precomputed.js)
export const SMOL = globalThis.mhaSmolLM2 || null;
// The lab's question bank and the book's runs (explorer-data/lab/lab.js:
// mhacourse.book_runs.write_lab_data), {questions, book_runs}
export const LAB = globalThis.mhaLabData || null;
export const STATIC = new URL("../", import.meta.url).href;
