// What the knobs (the manifest's train.knobs, mhacourse.web_train.KNOBS)
// feed the graphs, for some chosen values: {input: {data, dims}}. A switch
// feeds its on or off value (); a count n feeds (n_layers,) 1 for the first
// n blocks. A knob not chosen feeds its default: the engine runs the
// explorer's models so, the trainer with the reader's choice (Knobs).
import { MAN } from "./data.js";

export function feedsOf(chosen) {
  const out = {},
    N = MAN.train.n_layers;
  MAN.train.knobs.forEach((k) => {
    const v = chosen && k.name in chosen ? chosen[k.name] : k.default;
    if (k.control === "count") {
      const on = [];
      for (let l = 0; l < N; l++) {
        on.push(l < v ? 1 : 0);
      }
      out[k.input] = { data: on, dims: [N] };
    } else {
      out[k.input] = { data: [v ? k.on : k.off], dims: [] };
    }
  });
  return out;
}
