// For tests/test_lab.py: node compare_cli.mjs TABLE.json MINE.json ->
// compareRun's {line, faint names, ref name, sweep size} as JSON.
import { readFileSync } from "node:fs";
import { compareRun } from "../../assets/site/explorer/lab/compare.js";
import { KNOBS } from "./knobs.mjs";

const table = JSON.parse(readFileSync(process.argv[2], "utf8"));
const out = JSON.parse(readFileSync(process.argv[3], "utf8")).map((mine) => {
  const r = compareRun(table, mine, KNOBS);
  return {
    line: r.line,
    faint: r.faint.map((x) => x.name),
    ref: r.ref && r.ref.name,
    sweep: r.sweep && [r.sweep.h, r.sweep.d_k],
  };
});
process.stdout.write(JSON.stringify(out));
