// Links for the class (the class page): a class run is a sweep only if no
// two students run the same run, and the same link gives the same run to
// the bit. From a row's link (the trainer's "Copy link"), the row's names
// and the number in the class of its first student, each student gets the
// row's link with her own seed: her number in the class. Numbered 1 to 30
// row after row, no two students of the class share a run. The teacher's
// own predictions and switches (predict=, off=) are taken out: the link
// says what to run, not what to answer.
import { el } from "../explorer/dom.js";
import { checkLink } from "../explorer/lab/site-link.js";

export const SEED_MAX = 999; // the trainer's seed box's range (lab/link.js)
const MAX_NAMES = 200;

// {links: [{name, seed, href}]} or {problem: one line}. link: the row's
// link; names: one a line (blank lines skipped; a line that is only a
// number n stands for "Student n"); first: the first name's number.
export function classLinks(link, names, first, pages) {
  const got = checkLink(String(link || "").trim(), pages);
  if (!got.href) {
    return {
      problem:
        "The row's link is not one this site's trainer wrote: " +
        got.why +
        ". Copy it with the trainer's Copy link.",
    };
  }
  const list = String(names || "")
    .split(/\r?\n/)
    .map((s) => s.trim().replace(/\s+/g, " "))
    .filter((s) => s);
  if (!list.length) {
    return { problem: "No name: write the row's names, one a line (or their numbers)." };
  }
  if (list.length > MAX_NAMES) {
    return { problem: list.length + " names: a row has at most " + MAX_NAMES + "." };
  }
  const n0 = Number(first);
  if (!Number.isInteger(n0) || n0 < 0 || n0 + list.length - 1 > SEED_MAX) {
    return {
      problem:
        "The first student's number must be a whole number from 0 to " +
        (SEED_MAX + 1 - list.length) +
        " (each student's seed is her number, at most " +
        SEED_MAX +
        ").",
    };
  }
  const seen = new Set(),
    twice = list.find((s) => {
      const k = s.toLowerCase();
      const t = seen.has(k);
      seen.add(k);
      return t;
    });
  if (twice) {
    return { problem: '"' + twice.slice(0, 40) + '" is written twice: each line is one student.' };
  }
  return {
    links: list.map((name, i) => {
      const url = new URL(got.href);
      ["predict", "off"].forEach((k) => url.searchParams.delete(k));
      url.searchParams.set("seed", String(n0 + i));
      return { name: /^\d+$/.test(name) ? "Student " + name : name, seed: n0 + i, href: url.href };
    }),
  };
}

// The page's piece: the row's link, its names, the first number, and the
// links made (one line a student, to copy into a message).
export function linksForm() {
  const link = el("input", {
    type: "url",
    id: "mha-class-rowlink",
    size: "60",
    placeholder: "the row's link (Copy link in the trainer)",
  });
  const names = el("textarea", {
    id: "mha-class-names",
    rows: "4",
    cols: "30",
    placeholder: "one name a line",
  });
  const first = el("input", {
    type: "number",
    id: "mha-class-first",
    min: "0",
    max: String(SEED_MAX),
    value: "1",
    size: "4",
  });
  const make = el("button", {
    type: "button",
    class: "mha-class-makelinks",
    text: "Make the links",
  });
  const line = el("p", { class: "mha-class-links-status", role: "status" });
  const out = el("textarea", {
    class: "mha-class-links-out",
    readonly: "",
    rows: "4",
    cols: "60",
    "aria-label": "The row's links, one a student",
    hidden: "",
  });
  make.addEventListener("click", () => {
    const got = classLinks(link.value, names.value, first.value);
    out.hidden = !got.links;
    out.value = got.links
      ? got.links.map((x) => x.name + " (seed " + x.seed + "): " + x.href).join("\n")
      : "";
    line.textContent =
      got.problem ||
      got.links.length +
        " links, seeds " +
        got.links[0].seed +
        " to " +
        got.links[got.links.length - 1].seed +
        ": send each student her line. Number the next row from " +
        (got.links[got.links.length - 1].seed + 1) +
        ".";
  });
  return el("details", { class: "mha-class-links" }, [
    el("summary", { text: "Links for the class: one seed a student" }),
    el("p", {
      text:
        "The same link gives the same run, to the bit: thirty students on one row's link make " +
        "one run thirty times. " +
        "Number the class 1, 2, 3 … row after row; each student's link is her row's with her " +
        "number as its seed.",
    }),
    el("p", {}, [el("label", { for: link.id, text: "Row's link " }), link]),
    el("p", {}, [
      el("label", { for: names.id, text: "Names " }),
      names,
      " ",
      el("label", { for: first.id, text: "first student's number " }),
      first,
      " ",
      make,
    ]),
    line,
    out,
  ]);
}
