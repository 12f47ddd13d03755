// For tests/test_lab.py: node link_cli.mjs LIMITS.json LINK... -> the Python
// line of each decoded link, as JSON on stdout.
import { readFileSync } from "node:fs";
import { decodeExperiment, pythonLine } from "../../assets/site/explorer/lab/link.js";

const limits = JSON.parse(readFileSync(process.argv[2], "utf8"));
const out = process.argv.slice(3).map((link) => {
  const { experiment: e } = decodeExperiment(link, limits);
  return { experiment: e, line: pythonLine(e, limits.knobs) };
});
process.stdout.write(JSON.stringify(out));
