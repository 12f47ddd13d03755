// A head by its place (l, i counted from 0), written once for the whole
// site: "L1H2" in titles, tables, lists, the report and the class page,
// "Layer 1, head 2" read aloud.
export function headName(l, i) {
  return "L" + (l + 1) + "H" + (i + 1);
}

export function headWords(l, i) {
  return "Layer " + (l + 1) + ", head " + (i + 1);
}
