// The lab's DOM side, kept apart from its pure modules: the prediction
// form, the list of grades, a file's download and upload, and "Copy link".
// Every function takes the document (or window) it draws in, and every
// text it shows is set with textContent: a link's or a file's words are
// shown, never parsed as HTML. No globals.

import { notApplicable } from "./grade.js";
import { readModelFile, fileSizeProblem, ModelFileError } from "./model-file.js";

function make(doc, tag, attrs, kids) {
  const e = doc.createElement(tag);
  Object.keys(attrs || {}).forEach((k) => {
    if (k === "text") {
      e.textContent = attrs[k];
    } else {
      e.setAttribute(k, attrs[k]);
    }
  });
  (kids || []).forEach((k) => {
    if (k) {
      e.appendChild(typeof k === "string" ? doc.createTextNode(k) : k);
    }
  });
  return e;
}

// The questions asked at `when` ("before_run" or "before_ablation") for a
// run with `settings`, as a form: one group of radio buttons per question,
// with "skip" ticked unless `chosen` ({id: answer}) says otherwise.
// onChange(predictions) on every choice. Returns {element, values(), lock(on)}.
export function predictionForm(doc, bank, settings, when, chosen, onChange, tag) {
  const name = (id) => (tag || "mha-lab") + "-" + id;
  const qs = bank.questions.filter((q) => q.when === when && !notApplicable(q, settings));
  const box = make(doc, "div", { class: "mha-lab-predict" });
  const inputs = [];
  const values = () => {
    const out = {};
    inputs.forEach((i) => {
      if (i.checked && i.value) {
        out[i.dataset.question] = i.value;
      }
    });
    return out;
  };
  qs.forEach((q) => {
    const set = make(doc, "fieldset", { class: "mha-lab-question" }, [
      make(doc, "legend", { text: q.ask }),
    ]);
    [""].concat(Object.keys(q.answers)).forEach((a) => {
      const input = make(doc, "input", { type: "radio", name: name(q.id), value: a });
      input.dataset.question = q.id;
      input.checked = a === ((chosen && chosen[q.id]) || "");
      input.addEventListener("change", () => {
        if (onChange) {
          onChange(values());
        }
      });
      inputs.push(input);
      set.appendChild(make(doc, "label", {}, [input, " " + (a ? q.answers[a] : "skip")]));
    });
    box.appendChild(set);
  });
  return {
    element: box,
    values: values,
    lock: (on) => {
      inputs.forEach((i) => {
        i.disabled = !!on;
      });
    },
  };
}

const STATUS = {
  right: "✓ right",
  wrong: "✗ not this time",
  waiting: "… waiting",
  not_applicable: "– not for this run",
};

// grade.js's grades as a list: the status, the line, the explanation and
// a link to the section that teaches it (siteRoot: the site's base URL,
// against which the bank's links are relative).
export function gradeList(doc, grades, siteRoot) {
  const list = make(doc, "ul", { class: "mha-lab-grades" });
  grades.forEach((g) => {
    const link = make(doc, "a", {
      href: new URL(g.link, siteRoot).href,
      text: "the section that teaches it",
    });
    list.appendChild(
      make(doc, "li", { class: "mha-lab-" + g.status, "data-question": g.id }, [
        make(doc, "strong", { text: STATUS[g.status] || g.status }),
        " ",
        g.line,
        " ",
        g.status === "right" || g.status === "wrong"
          ? make(doc, "span", { class: "mha-lab-explain", text: g.explain + " " })
          : null,
        g.status === "right" || g.status === "wrong" ? link : null,
      ]),
    );
  });
  return list;
}

// Offer bytes as a file download (a model file, a report).
export function download(doc, bytes, fileName, type) {
  const url = URL.createObjectURL(new Blob([bytes], { type: type || "application/octet-stream" }));
  const a = make(doc, "a", { href: url, download: fileName });
  doc.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

// A File the reader chose, read as a model: {model} or {error: one line}.
// Its size is checked before a byte is read; it never throws.
export async function readModel(file, spec) {
  const name = String((file && file.name) || "the file").slice(0, 60);
  const big = fileSizeProblem(file ? file.size : -1, spec);
  if (big) {
    return { error: name + ": " + big };
  }
  try {
    return { model: await readModelFile(new Uint8Array(await file.arrayBuffer()), spec) };
  } catch (e) {
    return {
      error:
        name +
        ": " +
        (e instanceof ModelFileError
          ? e.message
          : "could not be read (" + String(e && e.message).slice(0, 80) + ")."),
    };
  }
}

// The page's address with the experiment's query string (link.js's
// encodeExperiment) and the anchor of the page's section that holds
// `near` (the trainer: the link opens there, not at the top of the page),
// copied to the clipboard where the browser allows; returns the address.
export async function copyLink(win, search, near) {
  const section = near && near.closest ? near.closest("section[id]") : null;
  const url =
    win.location.origin + win.location.pathname + search + (section ? "#" + section.id : "");
  try {
    await win.navigator.clipboard.writeText(url);
  } catch (e) {
    /* the page shows the address to copy by hand */
  }
  return url;
}

// The downloaded file's name: h4_dk16_seed0_step800.safetensors.
export function modelFileName(e, step) {
  return (
    "h" +
    e.h +
    "_dk" +
    e.d_k +
    "_seed" +
    e.seed +
    (e.layers === 1 ? "_1layer" : "") +
    "_step" +
    step +
    ".safetensors"
  );
}
