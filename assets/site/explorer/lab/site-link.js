// A report's link, checked before it becomes a link (the class page and a
// printed report show it): only an http(s) address of this site's own
// trainer pages is one. Anything else (a javascript: or data: address,
// another site, another page of this one, a broken address) is shown as
// plain text, with one line saying why. A report is a file a student
// hands in: its link is never trusted.

const STATIC = new URL("../../", import.meta.url); // .../_static/ (this is _static/explorer/lab/)
// The pages that hold a trainer, whose "Copy link" and "Export report"
// write a report's link (chapters/explorer.md, chapters/08_how_many_heads.md).
export const TRAINER_PAGES = ["explorer.html", "08_how_many_heads.html"].map(
  (p) => new URL("../chapters/" + p, STATIC).href,
);
const SHOWN = 200; // characters of a refused link shown as text

// {href} for a link to one of `pages` (absolute addresses; this site's
// trainer pages by default), or {why: one line} for anything else.
export function checkLink(link, pages = TRAINER_PAGES) {
  if (typeof link !== "string" || !link.trim()) {
    return { why: "the report has no link" };
  }
  let url;
  try {
    url = new URL(link);
  } catch (e) {
    return { why: "it is not a complete web address" };
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return {
      why: "it is a " + url.protocol.slice(0, 20) + " address, not a web page's (http or https)",
    };
  }
  const home = pages.map((p) => new URL(p));
  if (url.username || url.password) {
    return { why: "it carries a user name or password" };
  }
  if (!home.some((p) => p.origin === url.origin)) {
    return {
      why:
        "it points to another site (" +
        url.host.slice(0, 60) +
        "), not this one (" +
        home[0].host +
        ")",
    };
  }
  if (!home.some((p) => p.pathname === url.pathname)) {
    return {
      why: "it is not this site's trainer page (" + home.map((p) => p.pathname).join(" or ") + ")",
    };
  }
  return { href: url.href };
}

// The link as the page shows it: its text, cut to SHOWN characters.
export function shownText(link) {
  const s = String(link);
  return s.length > SHOWN ? s.slice(0, SHOWN - 1) + "…" : s;
}
