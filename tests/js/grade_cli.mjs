// Grade cases with the page's grade.js, for tests/test_lab.py's parity
// test: node grade_cli.mjs IN.json -> JSON on stdout. IN.json holds
// {bank, knobs (the manifest's train.knobs), cases: [{predictions, record}]}; each case gives its
// grades, or
// {error: line} when grade.js refuses it.
import { readFileSync } from "node:fs";
import { grade } from "../../assets/site/explorer/lab/grade.js";

const input = JSON.parse(readFileSync(process.argv[2], "utf8"));
const out = input.cases.map((c) => {
  try {
    return grade(input.bank, c.predictions, c.record, input.knobs);
  } catch (e) {
    return { error: e.message };
  }
});
process.stdout.write(JSON.stringify(out));
