// STOL web app: the pages of the tree of life, drawn from the daemons' own answers.
// Every call is one protocol request in its JSON form (docs/web.md, "The HTTP API"); this
// script renders answers and holds no rule of its own (no ranking, no distance, no sort
// of favourites: the services answer those). Nothing here loads anything from the network.

const main = document.getElementById("main");
const releaseBar = document.getElementById("release");
const LANGUAGE = (navigator.language || "en").split("-")[0];
const RANKS = ["domain", "kingdom", "phylum", "class", "order", "family", "genus", "species"];
const IUCN = { EX: "Extinct", EW: "Extinct in the wild", CR: "Critically endangered", EN: "Endangered",
  VU: "Vulnerable", NT: "Near threatened", LC: "Least concern", DD: "Data deficient" };

// ---- Talking to the service ------------------------------------------------------------

class ServiceError extends Error {
  constructor(message, code, details) { super(message); this.code = code || ""; this.details = details || {}; }
}

/** The release pinned for this browser session (`?release=` on any page pins it). */
function pinnedRelease() { return sessionStorage.getItem("stol.release") || ""; }

async function call(service, body) {
  if (service === "taxonomy" && pinnedRelease()) body.release = pinnedRelease();
  let response;
  try {
    response = await fetch("/api/" + service, { method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body) });
  } catch (e) {
    throw new ServiceError("The web app does not answer: it may have been stopped. Start it again with stol-web.", "APP_DOWN");
  }
  let data;
  try { data = await response.json(); } catch (e) {
    throw new ServiceError("The web app sent an answer this page cannot read (HTTP " + response.status + ").", "BAD_ANSWER");
  }
  if (data.error) throw new ServiceError(data.error.message || "Something went wrong.", data.error.code, data.error.details);
  if (service === "taxonomy" && data.database) showRelease(data.database);
  return data;
}
const taxonomy = (body) => call("taxonomy", body);
const favourites = (body) => call("favorites", body);

/** The main view or NCBI's own ranks, as chosen on the tree page (kept for the session). */
function rankView() { return sessionStorage.getItem("stol.ranks") === "all" ? "RANK_VIEW_ALL" : "RANK_VIEW_MAIN"; }

// ---- Small DOM helpers -------------------------------------------------------------------

function el(tag, attributes, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function svg(tag, attributes, ...children) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [key, value] of Object.entries(attributes || {})) node.setAttribute(key, String(value));
  for (const child of children.flat()) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return node;
}

function page(title, ...children) {
  document.title = title + " — STOL";
  main.replaceChildren(...children.flat().filter(Boolean));
}

function rankName(taxon) {
  if (taxon.sourceRank) return taxon.sourceRank;
  return (taxon.rank || "").replace("RANK_", "").toLowerCase() || "no rank";
}

/** Italic for the Latin names of genera and below (a binomial, a subspecies, a strain's species part). */
function isLatinBelowGenus(taxon) {
  const rank = rankName(taxon);
  return rank === "genus" || rank === "species" || rank === "subspecies" || rank === "varietas" || rank === "forma"
    || rank === "subgenus" || rank === "species group" || rank === "species subgroup";
}

function scientific(taxon, asLink) {
  const name = el("span", { class: isLatinBelowGenus(taxon) ? "sci" : "", lang: "la" }, taxon.scientificName || "(no name)");
  return asLink ? el("a", { href: "/taxon/" + taxon.id }, name) : name;
}

function rankBadge(taxon) { return el("span", { class: "badge", title: "rank" }, rankName(taxon)); }

function iucnBadge(taxon) {
  const code = taxon.conservation;
  if (!code) return null;
  return el("span", { class: "badge iucn " + code.toLowerCase(), title: "IUCN Red List status" },
    code + (IUCN[code] ? " · " + IUCN[code] : ""));
}

function taxonLine(taxon) {
  return el("span", { class: "row" }, rankBadge(taxon), scientific(taxon, true),
    taxon.commonName ? el("span", { class: "common" }, taxon.commonName) : null, iucnBadge(taxon));
}

function messageFor(error) {
  const box = el("div", { class: "message", role: "alert" });
  const code = error.code || "";
  let text = error.message;
  if (code === "ERROR_CODE_TAXON_DELETED") text = "This id was deleted from the taxonomy: " + error.message;
  if (code === "ERROR_CODE_BUSY") text = "The service is busy right now. " + error.message;
  box.append(el("p", {}, text));
  if (code === "ERROR_CODE_UNAVAILABLE" || code === "APP_DOWN" || code === "ERROR_CODE_BUSY") {
    box.append(el("button", { type: "button", onclick: () => render() }, "Try again"));
  }
  return box;
}

function loading(what) { return el("p", { class: "loading", role: "status" }, "Loading " + what + "…"); }

// ---- The release that answers --------------------------------------------------------------

let lastDatabase = null;
function showRelease(database) {
  lastDatabase = database;
  const pinned = pinnedRelease();
  const name = database.release || (database.kind === "DATABASE_KIND_BUNDLED" ? "bundled" : "?");
  releaseBar.replaceChildren(...[
    el("span", {}, "Answers from release ", el("strong", {}, name), pinned ? " (pinned for this session). " : " (the service's default). "),
    pinned ? el("button", { type: "button", onclick: () => { sessionStorage.removeItem("stol.release"); render(); } }, "Use the default") : null,
    el("a", { href: "/about" }, "Releases…")].filter(Boolean));
}

// ---- Routing -------------------------------------------------------------------------------

const routes = [
  [/^\/$/, () => treePage(null)],
  [/^\/tree\/(-?\d+)$/, (m) => treePage(m[1])],
  [/^\/search$/, () => searchPage()],
  [/^\/taxon\/([^/]+)$/, (m) => taxonPage(m[1])],
  [/^\/compare(?:\/([^/]+))?(?:\/([^/]+))?$/, (m) => comparePage(m[1], m[2])],
  [/^\/relatives\/([^/]+)$/, (m) => relativesPage(m[1])],
  [/^\/history\/([^/]+)$/, (m) => historyPage(m[1])],
  [/^\/favourites$/, () => favouritesPage()],
  [/^\/cladogram$/, () => cladogramPage()],
  [/^\/about$/, () => aboutPage()],
  [/^\/changes$/, () => changesPage()],
];

async function render() {
  const url = new URL(location.href);
  const release = url.searchParams.get("release");
  if (release !== null) {
    if (release) sessionStorage.setItem("stol.release", release); else sessionStorage.removeItem("stol.release");
  }
  for (const link of document.querySelectorAll("nav a")) {
    const here = link.getAttribute("href") === "/" ? url.pathname === "/" || url.pathname.startsWith("/tree")
      : url.pathname.startsWith(link.getAttribute("href"));
    if (here) link.setAttribute("aria-current", "page"); else link.removeAttribute("aria-current");
  }
  for (const [pattern, show] of routes) {
    const match = url.pathname.match(pattern);
    if (match) {
      try { await show(match); } catch (error) { page("Error", el("h1", {}, "Something went wrong"), messageFor(error)); }
      return;
    }
  }
  page("Not found", el("h1", {}, "No such page"), el("p", {}, "This address is not a page of the app. ", el("a", { href: "/" }, "Start at the root of the tree.")));
}

function go(path) { history.pushState(null, "", path); render().then(() => main.focus()); }

document.addEventListener("click", (event) => {
  const link = event.target.closest("a");
  if (!link || event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey) return;
  const href = link.getAttribute("href");
  if (!href || !href.startsWith("/") || href.startsWith("//") || link.hasAttribute("download")) return;
  event.preventDefault();
  go(href);
});
window.addEventListener("popstate", () => render());

/** An id from the address: digits, or a name to resolve (`/taxon/Panthera%20leo`). */
async function resolveId(text) {
  const decoded = decodeURIComponent(text);
  if (/^\d+$/.test(decoded)) return decoded;
  const answer = await taxonomy({ resolveName: { text: decoded, language: LANGUAGE } });
  const found = answer.resolveName || {};
  if (found.resolution === "NAME_RESOLUTION_ONE" && found.taxonId) return String(found.taxonId);
  const candidates = (found.candidates || []).map((t) => t.scientificName).slice(0, 5).join(", ");
  throw new ServiceError(candidates ? "“" + decoded + "” names more than one taxon (" + candidates + "): pick one by its id or full name."
    : "No taxon is called “" + decoded + "”.", "ERROR_CODE_NOT_FOUND");
}

function notesFor(answer) {
  return (answer.merged || []).map((m) => el("p", { class: "note", role: "note" },
    "Id " + m.oldId + " was merged into " + m.newId + " in this release: showing " + m.newId + "."));
}

// ---- Tree browser (§11.2) ----------------------------------------------------------------------

const PAGE = 50;

function childList(parentId) {
  const list = el("ul", {});
  let offset = 0;
  const more = el("li", {}, el("button", { type: "button", onclick: () => load() }, "Show more"));
  async function load() {
    more.remove();
    const body = parentId === null ? { roots: { language: LANGUAGE } }
      : { children: { taxonId: parentId, offset, limit: PAGE, language: LANGUAGE, ranks: rankView() } };
    let answer;
    try { answer = await taxonomy(body); } catch (error) { list.append(el("li", {}, messageFor(error))); return; }
    const taxonPage = answer.roots || answer.children || {};
    const taxa = taxonPage.taxa || [];
    for (const taxon of taxa) list.append(treeRow(taxon));
    offset += taxa.length;
    const total = taxonPage.total || 0;
    if (parentId !== null && offset < total) {
      more.firstChild.textContent = "Show more (" + (total - offset) + " more of " + total + ")";
      list.append(more);
    }
    if (taxa.length === 0 && offset === 0) list.append(el("li", { class: "common" }, "No children in this view."));
    applyFilters();
  }
  return { list, load };
}

function treeRow(taxon) {
  const count = rankView() === "RANK_VIEW_ALL" ? (taxon.sourceChildCount ?? taxon.childCount ?? 0) : (taxon.childCount || 0);
  const item = el("li", { "data-rank": rankName(taxon), "data-iucn": taxon.conservation || "" });
  let children = null;
  const toggle = el("button", { type: "button", class: "toggle", "aria-expanded": "false", disabled: count === 0,
    "aria-label": (count === 0 ? "No children: " : "Show the children of ") + taxon.scientificName }, "+");
  toggle.addEventListener("click", async () => {
    const open = toggle.getAttribute("aria-expanded") === "true";
    if (open) { toggle.setAttribute("aria-expanded", "false"); toggle.textContent = "+"; children.list.classList.add("hidden"); return; }
    toggle.setAttribute("aria-expanded", "true"); toggle.textContent = "−";
    if (!children) { children = childList(taxon.id); item.append(children.list); await children.load(); }
    else children.list.classList.remove("hidden");
  });
  item.append(el("div", { class: "row" }, toggle, el("a", { href: "/tree/" + taxon.id, "aria-label": "Browse from " + taxon.scientificName }, "⤓"),
    taxonLine(taxon), count ? el("span", { class: "common" }, "(" + count + ")") : null));
  return item;
}

let filters = { rank: "", iucn: "" };
function applyFilters() {
  for (const item of main.querySelectorAll(".tree li[data-rank]")) {
    const hide = (filters.rank && item.dataset.rank !== filters.rank) || (filters.iucn && item.dataset.iucn !== filters.iucn);
    item.querySelector(":scope > .row").classList.toggle("hidden", Boolean(hide));
  }
}

async function treePage(id) {
  const view = el("select", { id: "ranks", onchange: (e) => { sessionStorage.setItem("stol.ranks", e.target.value); render(); } },
    el("option", { value: "main", selected: rankView() === "RANK_VIEW_MAIN" }, "The eight main ranks"),
    el("option", { value: "all", selected: rankView() === "RANK_VIEW_ALL" }, "NCBI's own ranks (strains, no rank, clades)"));
  const rank = el("select", { id: "rank-filter", onchange: (e) => { filters.rank = e.target.value; applyFilters(); } },
    el("option", { value: "" }, "Any rank"), RANKS.map((r) => el("option", { value: r, selected: filters.rank === r }, r)));
  const iucn = el("select", { id: "iucn-filter", onchange: (e) => { filters.iucn = e.target.value; applyFilters(); } },
    el("option", { value: "" }, "Any status"), Object.entries(IUCN).map(([c, t]) => el("option", { value: c, selected: filters.iucn === c }, c + " · " + t)));
  const controls = el("div", { class: "filters" },
    el("label", { for: "ranks" }, "View ", view), el("label", { for: "rank-filter" }, "Show rank ", rank),
    el("label", { for: "iucn-filter" }, "IUCN status ", iucn), el("a", { href: "/search" }, "Jump to a name…"));
  if (id === null) {
    const roots = childList(null);
    roots.list.className = "tree";
    roots.list.setAttribute("aria-label", "The roots of the tree");
    page("Tree", el("h1", {}, "The tree of life"), controls, roots.list);
    await roots.load();
    return;
  }
  const answer = await taxonomy({ detail: { taxonId: id, language: LANGUAGE, ranks: rankView() } });
  const detail = answer.detail;
  const taxon = detail.taxon;
  const crumbs = el("nav", { class: "crumbs", "aria-label": "Path from the root" },
    el("ol", {}, el("li", {}, el("a", { href: "/" }, "Root")),
      (detail.lineage || []).map((t) => el("li", {}, el("a", { href: "/tree/" + t.id }, t.scientificName))),
      el("li", { "aria-current": "location" }, taxon.scientificName)));
  const here = childList(taxon.id);
  here.list.className = "tree";
  here.list.setAttribute("aria-label", "Children of " + taxon.scientificName);
  page(taxon.scientificName, notesFor(answer), crumbs, el("h1", {}, taxonLine(taxon)), controls, here.list);
  await here.load();
}

// ---- Search (§11.3) ------------------------------------------------------------------------------

/** A text field with suggestions as you type (a WAI-ARIA combobox); `onPick(taxon)` when one is chosen. */
function picker(id, label, onPick, initial) {
  const input = el("input", { type: "text", id, role: "combobox", "aria-autocomplete": "list", "aria-expanded": "false",
    "aria-controls": id + "-list", autocomplete: "off", spellcheck: "false", value: initial || "" });
  const list = el("ul", { id: id + "-list", role: "listbox", class: "hidden", "aria-label": label + ": suggestions" });
  let options = [], active = -1, timer = null, asked = 0;
  function close() { list.classList.add("hidden"); input.setAttribute("aria-expanded", "false"); input.removeAttribute("aria-activedescendant"); active = -1; }
  function mark(index) {
    options.forEach((o, i) => o.setAttribute("aria-selected", i === index ? "true" : "false"));
    active = index;
    if (index >= 0) { input.setAttribute("aria-activedescendant", options[index].id); options[index].scrollIntoView({ block: "nearest" }); }
  }
  async function suggest() {
    const query = input.value.trim();
    const ticket = ++asked;
    if (!query) { close(); return; }
    let answer;
    try { answer = await taxonomy({ search: { query, limit: 8, prefix: true, language: LANGUAGE } }); } catch (e) { close(); return; }
    if (ticket !== asked) return;
    const hits = (answer.search && answer.search.hits) || [];
    options = hits.map((hit, i) => {
      const option = el("li", { role: "option", id: id + "-option-" + i, "aria-selected": "false" },
        rankBadge(hit.taxon), scientific(hit.taxon, false),
        hit.matchedName && hit.matchedName !== hit.taxon.scientificName ? el("span", { class: "common" }, " — " + hit.matchedName) : null);
      option.addEventListener("mousedown", (e) => { e.preventDefault(); choose(hit.taxon); });
      return option;
    });
    list.replaceChildren(...options);
    if (options.length) { list.classList.remove("hidden"); input.setAttribute("aria-expanded", "true"); } else close();
  }
  function choose(taxon) { input.value = taxon.scientificName; close(); onPick(taxon); }
  input.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(suggest, 60); });
  input.addEventListener("keydown", (e) => {
    if (e.key === "ArrowDown" && options.length) { e.preventDefault(); list.classList.remove("hidden"); input.setAttribute("aria-expanded", "true"); mark(Math.min(active + 1, options.length - 1)); }
    else if (e.key === "ArrowUp" && options.length) { e.preventDefault(); mark(Math.max(active - 1, 0)); }
    else if (e.key === "Escape") close();
    else if (e.key === "Enter" && active >= 0) { e.preventDefault(); options[active].dispatchEvent(new MouseEvent("mousedown")); }
  });
  input.addEventListener("blur", () => setTimeout(close, 150));
  return { input, element: el("div", { class: "combo" }, el("label", { for: id }, label), input, list) };
}

function highlighted(text, query) {
  const at = text.toLowerCase().indexOf(query.toLowerCase());
  if (!query || at < 0) return text;
  return el("span", {}, text.slice(0, at), el("mark", {}, text.slice(at, at + query.length)), text.slice(at + query.length));
}

async function searchPage() {
  const url = new URL(location.href);
  const query = url.searchParams.get("q") || "";
  const rank = url.searchParams.get("rank") || "";
  const results = el("div", { "aria-live": "polite" });
  const field = picker("search-field", "Name (scientific or common)", (taxon) => go("/taxon/" + taxon.id), query);
  const form = el("form", { role: "search", onsubmit: (e) => { e.preventDefault(); const q = field.input.value.trim(); go("/search?q=" + encodeURIComponent(q) + (rank ? "&rank=" + rank : "")); } },
    field.element, el("button", { type: "submit", class: "primary" }, "Search"));
  const chips = el("ul", { class: "chips", "aria-label": "Only this rank" },
    ["", ...RANKS].map((r) => el("li", {}, el("button", { type: "button", "aria-pressed": String(r === rank),
      onclick: () => go("/search?q=" + encodeURIComponent(query) + (r ? "&rank=" + r : "")) }, r || "any rank"))));
  page(query ? "Search: " + query : "Search", el("h1", {}, "Search"), form, chips, results);
  if (!query) { results.append(el("p", { class: "empty" }, "No query yet: type a scientific or common name above (suggestions appear as you type).")); field.input.focus(); return; }
  results.append(loading("results"));
  const body = { search: { query, limit: 50, language: LANGUAGE } };
  if (rank) body.search.rank = "RANK_" + rank.toUpperCase();
  let answer;
  try { answer = await taxonomy(body); } catch (error) { results.replaceChildren(messageFor(error)); return; }
  const hits = (answer.search && answer.search.hits) || [];
  if (!hits.length) { results.replaceChildren(el("p", { class: "empty" }, "No results for “" + query + "”" + (rank ? " at rank " + rank : "") + ". Check the spelling, or try another rank.")); return; }
  results.replaceChildren(el("p", {}, hits.length + " results" + (answer.search.partial ? " (the search stopped early: refine it)" : "")),
    el("ul", { class: "results" }, hits.map((hit) => el("li", {}, taxonLine(hit.taxon),
      el("div", { class: "common" }, "matched: ", highlighted(hit.matchedName || hit.taxon.scientificName, query),
        hit.fuzzy ? " (approximate)" : "")))));
}

// ---- Species page (§11.4) ------------------------------------------------------------------------

async function heartButton(taxon) {
  const button = el("button", { type: "button", class: "heart", "aria-pressed": "false", "aria-label": "Favourite " + taxon.scientificName }, "♡");
  function show(on) { button.setAttribute("aria-pressed", String(on)); button.textContent = on ? "♥" : "♡"; button.title = on ? "In your favourites: remove" : "Add to your favourites"; }
  try { const state = await favourites({ isFavorite: { taxonId: taxon.id } }); show(Boolean(state.state && state.state.isFavorite)); }
  catch (error) { button.disabled = true; button.title = error.message; }
  button.addEventListener("click", async () => {
    try { const state = await favourites({ toggle: { taxonId: taxon.id } }); show(Boolean(state.state && state.state.isFavorite)); }
    catch (error) { button.after(messageFor(error)); }
  });
  return button;
}

async function taxonPage(text) {
  page("Taxon", loading("the taxon"));
  const id = await resolveId(text);
  const answer = await taxonomy({ detail: { taxonId: id, language: LANGUAGE, ranks: rankView() } });
  const detail = answer.detail;
  const taxon = detail.taxon;
  if (String(taxon.id) !== String(text)) history.replaceState(null, "", "/taxon/" + taxon.id);
  const header = el("div", { class: "header" },
    el("div", {}, el("h1", {}, scientific(taxon, false)), taxon.commonName ? el("p", { class: "common" }, taxon.commonName) : null,
      el("p", {}, rankBadge(taxon), iucnBadge(taxon), taxon.author ? el("span", { class: "common" }, " " + taxon.author + (taxon.year ? ", " + taxon.year : "")) : null)),
    await heartButton(taxon));
  const crumbs = el("nav", { class: "crumbs", "aria-label": "Path from the root" },
    el("ol", {}, (detail.lineage || []).map((t) => el("li", {}, el("a", { href: "/taxon/" + t.id }, t.scientificName))),
      el("li", { "aria-current": "page" }, taxon.scientificName)));
  const sections = [];
  if ((detail.traits || []).length) sections.push(el("details", { open: true }, el("summary", {}, "Traits"),
    el("dl", { class: "grid" }, detail.traits.flatMap((t) => [el("dt", {}, t.key), el("dd", {}, t.value + (t.unit ? " " + t.unit : ""))]))));
  if ((detail.names || []).length) sections.push(el("h2", {}, "Names"),
    el("dl", { class: "grid" }, detail.names.flatMap((group) => [el("dt", {}, group.language || "—"),
      el("dd", { lang: group.language || undefined }, group.names.map((n) => n.name + (n.preferred ? " (preferred)" : "")).join("; "))])));
  if ((detail.synonyms || []).length) sections.push(el("h2", {}, "Synonyms"), el("ul", {}, detail.synonyms.map((s) => el("li", { class: "sci" }, s))));
  if ((detail.references || []).length) sections.push(el("details", {}, el("summary", {}, "References (" + detail.references.length + ")"),
    el("ul", { class: "plain" }, detail.references.map((r) => el("li", {}, r.citation, r.url ? el("span", {}, " ", el("code", {}, r.url), " ",
      el("button", { type: "button", onclick: (e) => copyText(r.url, e.target) }, "Copy link")) : null)))));
  if (!sections.length) sections.push(el("p", { class: "common" }, "This database has no traits, names in other languages, synonyms or references for this taxon."));
  const actions = el("div", { class: "actions" },
    el("a", { href: "/compare/" + taxon.id }, "Compare with…"), el("a", { href: "/relatives/" + taxon.id }, "Closest relatives"),
    el("a", { href: "/tree/" + taxon.id }, "Browse from here"), el("a", { href: "/history/" + taxon.id }, "History across releases"));
  page(taxon.scientificName, notesFor(answer), crumbs, header, actions, sections);
}

async function copyText(text, button) {
  try { await navigator.clipboard.writeText(text); button.textContent = "Copied"; }
  catch (e) { button.textContent = "Select and copy the link by hand"; }
}

// ---- Compare (§11.5) ------------------------------------------------------------------------------

async function comparePage(a, b) {
  const ids = [a ? await resolveId(a) : null, b ? await resolveId(b) : null];
  if (ids[0] && ids[1] && (ids[0] !== a || ids[1] !== b)) history.replaceState(null, "", "/compare/" + ids[0] + "/" + ids[1]);
  const names = await Promise.all(ids.map(async (id) => id ? (await taxonomy({ getTaxon: { taxonId: id, language: LANGUAGE } })).taxon : null));
  const pick = (index) => (taxon) => { const next = [...ids]; next[index] = taxon.id; go("/compare/" + (next[0] || "") + (next[1] ? "/" + next[1] : "")); };
  const first = picker("compare-a", "First taxon", pick(0), names[0] ? names[0].scientificName : "");
  const second = picker("compare-b", "Second taxon", pick(1), names[1] ? names[1].scientificName : "");
  const out = el("div", { "aria-live": "polite" });
  page("Compare", el("h1", {}, "Compare two taxa"), el("div", { class: "pair" }, first.element, second.element), out);
  if (!ids[0] || !ids[1]) { out.append(el("p", { class: "empty" }, "Pick two taxa: type a name in each field.")); return; }
  out.append(loading("the comparison"));
  const answer = await taxonomy({ compare: { taxonA: ids[0], taxonB: ids[1], language: LANGUAGE, ranks: rankView() } });
  const c = answer.compare;
  const parts = [];
  if (!c.lca) parts.push(el("p", { class: "empty" }, "These two taxa have no common ancestor in this database."));
  else {
    parts.push(el("dl", { class: "grid" },
      el("dt", {}, "Common ancestor"), el("dd", {}, taxonLine(c.lca)),
      el("dt", {}, "Distance"), el("dd", {}, (c.distance ?? "?") + " steps apart (" + ((c.pathA || []).length - 1) + " from the first, " + ((c.pathB || []).length - 1) + " from the second)"),
      el("dt", {}, "Shared clade"), el("dd", {}, c.sharedClade || "—"),
      el("dt", {}, "Trait similarity"), el("dd", {}, c.traitSimilarity === undefined ? "not available (traits are missing on one side)" : Math.round(c.traitSimilarity * 100) + " %")));
    parts.push(el("h2", {}, "Paths to the common ancestor"), el("div", { class: "pair" },
      el("div", {}, el("h3", {}, c.taxonA.scientificName), el("ol", {}, (c.pathA || []).map((t) => el("li", {}, taxonLine(t))))),
      el("div", {}, el("h3", {}, c.taxonB.scientificName), el("ol", {}, (c.pathB || []).map((t) => el("li", {}, taxonLine(t)))))));
    parts.push(el("h2", {}, "Picture"), comparePicture(c));
  }
  const relatives = el("section", { "aria-label": "Closest relatives of the first" }, el("h2", {}, "Closest relatives of " + c.taxonA.scientificName), loading("relatives"));
  parts.push(relatives);
  out.replaceChildren(...notesFor(answer), ...parts);
  relatives.replaceChildren(relatives.firstChild, await relativesList(ids[0]));
}

/** Two paths drawn joining at their common ancestor (SVG, drawn here from the paths the service gave). */
function comparePicture(c) {
  const a = [...(c.pathA || [])].reverse(), b = [...(c.pathB || [])].reverse(); // ancestor first
  const rows = Math.max(a.length, b.length);
  const width = 640, step = 46, height = 40 + rows * step;
  const drawing = svg("svg", { class: "drawing", viewBox: "0 0 " + width + " " + height, role: "img",
    "aria-label": "The paths of " + c.taxonA.scientificName + " and " + c.taxonB.scientificName + " meet at " + c.lca.scientificName });
  const x0 = width / 2, top = 24;
  function branch(path, side, cls) {
    let px = x0, py = top;
    path.forEach((t, i) => {
      if (i === 0) return;
      const x = x0 + side * Math.min(200, 60 + i * 22), y = top + i * step;
      drawing.append(svg("path", { class: "edge " + cls, d: "M" + px + " " + py + " L" + x + " " + y }));
      drawing.append(svg("circle", { class: "node", cx: x, cy: y, r: 6 }));
      drawing.append(svg("text", { x: x + side * 10, y: y + 4, "text-anchor": side < 0 ? "end" : "start", class: isLatinBelowGenus(t) ? "sci" : "" }, t.scientificName));
      px = x; py = y;
    });
  }
  branch(a, -1, "a");
  branch(b, 1, "b");
  drawing.append(svg("circle", { class: "node lca", cx: x0, cy: top, r: 8 }));
  drawing.append(svg("text", { x: x0, y: top - 10, "text-anchor": "middle" }, c.lca.scientificName + " (" + rankName(c.lca) + ")"));
  return drawing;
}

async function relativesList(id) {
  let answer;
  try { answer = await taxonomy({ relatives: { taxonId: id, n: 10, language: LANGUAGE } }); }
  catch (error) { return error.code === "ERROR_CODE_INVALID_REQUEST" ? el("p", { class: "empty" }, "Closest relatives are listed for species: " + error.message) : messageFor(error); }
  const relatives = answer.relatives.relatives || [];
  if (!relatives.length) return el("p", { class: "empty" }, "No relatives in this database.");
  return el("ol", {}, relatives.map((r) => el("li", {}, taxonLine(r.taxon), el("span", { class: "common" },
    " — distance " + r.distance + ", same " + rankName(r.lca) + " ", el("a", { href: "/compare/" + id + "/" + r.taxon.id }, "compare")))));
}

async function relativesPage(text) {
  const id = await resolveId(text);
  const taxon = (await taxonomy({ getTaxon: { taxonId: id, language: LANGUAGE } })).taxon;
  page("Relatives of " + taxon.scientificName, el("h1", {}, "Closest relatives of ", scientific(taxon, true)), await relativesList(id));
}

// ---- History across releases --------------------------------------------------------------------------

async function historyPage(text) {
  const id = await resolveId(text);
  const answer = await taxonomy({ history: { taxonId: id } });
  const rows = (answer.history.releases || []).map((r) => el("tr", {}, el("th", { scope: "row" }, r.release),
    el("td", {}, r.present ? el("a", { href: "/taxon/" + id + "?release=" + encodeURIComponent(r.release) }, r.name) :
      r.mergedInto && r.mergedInto !== "0" ? el("span", {}, "merged into ", el("a", { href: "/taxon/" + r.mergedInto }, r.mergedInto)) :
      r.deleted ? "deleted" : "absent"),
    el("td", {}, r.rank || ""), el("td", {}, r.parentId && r.parentId !== "0" ? el("a", { href: "/taxon/" + r.parentId }, r.parentId) : "")));
  page("History of " + id, el("h1", {}, "Id " + id + " across the installed releases"),
    el("table", {}, el("thead", {}, el("tr", {}, ["Release", "Name", "Rank", "Parent"].map((h) => el("th", { scope: "col" }, h)))), el("tbody", {}, rows)));
}

// ---- Favourites (§11.6) --------------------------------------------------------------------------------

async function favouritesPage() {
  page("Favourites", el("h1", {}, "♥ Favourites"), loading("your favourites"));
  const sort = sessionStorage.getItem("stol.favsort") || "recent";
  // The listing and its order come from the service's one definition (as `stol-client fav list`).
  const query = "?sort=" + encodeURIComponent(sort) + "&lang=" + encodeURIComponent(LANGUAGE);
  let listing;
  try {
    const response = await fetch("/api/favourites/listing" + query);
    listing = await response.json();
  } catch (e) { throw new ServiceError("The web app does not answer: it may have been stopped.", "APP_DOWN"); }
  if (listing.error) throw new ServiceError(listing.error.message, listing.error.code);
  const entries = listing.entries || [];
  if (!entries.length) { page("Favourites", el("h1", {}, "♥ Favourites"), el("p", { class: "empty" }, "No favourites yet. Tap ♥ on any species to save it here.")); return; }
  const select = el("select", { id: "fav-sort", onchange: (e) => { sessionStorage.setItem("stol.favsort", e.target.value); favouritesPage(); } },
    [["recent", "Most recently added"], ["scientific", "A–Z by scientific name"], ["common", "A–Z by common name"]].map(([v, t]) => el("option", { value: v, selected: v === sort }, t)));
  const items = entries.map((entry) => {
    const id = String(entry.taxon_id);
    const name = entry.scientific_name || "Taxon " + id;
    const taxon = { id, scientificName: entry.scientific_name, commonName: entry.common_name, sourceRank: entry.rank, conservation: "" };
    const box = el("input", { type: "checkbox", id: "fav-" + id, value: id, "aria-label": "Select " + name });
    return el("li", {}, el("div", { class: "row" }, box,
      entry.found ? taxonLine(taxon) : el("span", {}, "Taxon " + id + " (not in the release that answers; kept)"),
      el("button", { type: "button", onclick: async () => { await favourites({ remove: { taxonId: id } }); favouritesPage(); },
        "aria-label": "Remove " + name + " from your favourites" }, "Remove")));
  });
  const removeSelected = el("button", { type: "button", class: "danger", onclick: async () => {
    const chosen = [...main.querySelectorAll(".results input:checked")].map((b) => b.value);
    for (const id of chosen) await favourites({ remove: { taxonId: id } });
    favouritesPage();
  } }, "Remove selected");
  const exportLink = el("a", { href: "/api/favourites/export" + query, download: "favourites.txt" }, "Export the names (a plain list: no ids, no times)");
  page("Favourites", el("h1", {}, "♥ Favourites"),
    el("div", { class: "controls" }, el("label", { for: "fav-sort" }, "Sort ", select), removeSelected, exportLink,
      el("a", { href: "/changes" }, "What a release changed for them")),
    el("ul", { class: "results", "aria-label": "Your favourites" }, items),
    el("p", {}, entries.length + " favourites"));
}

// ---- Cladogram: the smallest tree joining a list of taxa -------------------------------------------------

async function cladogramPage() {
  const url = new URL(location.href);
  const asked = url.searchParams.get("taxa") || "";
  const area = el("textarea", { id: "clado-taxa", "aria-describedby": "clado-help" }, asked.split(",").join("\n"));
  const form = el("form", { onsubmit: (e) => { e.preventDefault(); go("/cladogram?taxa=" + encodeURIComponent(area.value.split(/[\n,]/).map((s) => s.trim()).filter(Boolean).join(","))); } },
    el("label", { for: "clado-taxa" }, "Taxa (ids or exact names, one per line)"), area,
    el("p", { id: "clado-help", class: "common" }, "For example 9606, 9598, Panthera leo. The tree joins them at their common ancestors."),
    el("button", { type: "submit", class: "primary" }, "Draw the tree"));
  const out = el("div", { "aria-live": "polite" });
  page("Cladogram", el("h1", {}, "Cladogram"), form, out);
  const items = asked.split(",").map((s) => s.trim()).filter(Boolean);
  if (!items.length) return;
  const answer = await taxonomy({ inducedTree: { taxonIds: items.filter((s) => /^\d+$/.test(s)), names: items.filter((s) => !/^\d+$/.test(s)), ranks: rankView() } });
  const tree = answer.inducedTree;
  const ids = tree.ids || [];
  const parts = [];
  if ((tree.notFound || []).length) parts.push(el("p", { class: "message" }, "Not found: " + tree.notFound.join(", ")));
  if (ids.length) {
    const width = 720, rowH = 22, height = 20 + ids.length * rowH;
    const drawing = svg("svg", { class: "drawing", viewBox: "0 0 " + width + " " + height, role: "img", "aria-label": "Cladogram of " + ids.length + " taxa" });
    const stack = [];
    ids.forEach((id, i) => {
      const depth = tree.depths[i], x = 16 + depth * 26, y = 16 + i * rowH;
      while (stack.length && stack[stack.length - 1].depth >= depth) stack.pop();
      const parent = stack[stack.length - 1];
      if (parent) drawing.append(svg("path", { class: "edge", d: "M" + parent.x + " " + parent.y + " V" + y + " H" + x }));
      drawing.append(svg("circle", { class: tree.requested[i] ? "node asked" : "node", cx: x, cy: y, r: 4 }));
      const label = svg("text", { x: x + 8, y: y + 4 }, tree.names[i] + " (" + tree.ranks[i] + ")");
      drawing.append(label);
      stack.push({ depth, x, y });
    });
    parts.push(drawing);
    parts.push(el("p", {}, el("a", { href: "/api/newick?taxa=" + encodeURIComponent(items.join(",")) + "&ranks=" + (rankView() === "RANK_VIEW_ALL" ? "all" : "main") + "&release=" + encodeURIComponent(pinnedRelease()),
      download: "tree.nwk" }, "Download as Newick")));
  }
  out.replaceChildren(...parts);
}

// ---- What a release changed for the user's favourites (as `stol-client fav check`) ---------------------

async function changesPage() {
  const url = new URL(location.href);
  const status = (await taxonomy({ status: {} })).status;
  const releases = (status.releases || []).map((r) => r.release);
  const to = url.searchParams.get("to") || pinnedRelease() || status.defaultRelease || "bundled";
  const from = url.searchParams.get("from") || releases.filter((r) => r !== to).slice(-1)[0] || "";
  const pick = (id, label, value) => el("label", { for: id }, label + " ", el("select", { id, name: id.replace("changes-", "") },
    releases.map((r) => el("option", { value: r, selected: r === value }, r))));
  const form = el("form", { class: "controls", onsubmit: (e) => { e.preventDefault();
    go("/changes?from=" + encodeURIComponent(form.elements.from.value) + "&to=" + encodeURIComponent(form.elements.to.value)); } },
    pick("changes-from", "From release", from), pick("changes-to", "to release", to), el("button", { type: "submit", class: "primary" }, "Show the changes"));
  const out = el("div", { "aria-live": "polite" });
  page("Changes for your favourites", el("h1", {}, "What a release changed for your favourites"), form, out);
  if (releases.length < 2) { out.append(el("p", { class: "empty" }, "Only one release is installed: there is nothing to compare it with.")); return; }
  if (!from || from === to) { out.append(el("p", { class: "empty" }, "Pick two different releases.")); return; }
  const list = await favourites({ list: {} });
  const ids = ((list.list && list.list.entries) || []).map((e) => e.taxonId);
  if (!ids.length) { out.append(el("p", { class: "empty" }, "No favourites yet: nothing to check.")); return; }
  const changes = [];
  for (let i = 0; i < ids.length; i += 1000) {
    const body = { diff: { fromRelease: from, toRelease: to, taxonIds: ids.slice(i, i + 1000) } };
    const answer = await taxonomy(body);
    changes.push(...((answer.diff && answer.diff.changes) || []));
  }
  if (!changes.length) { out.append(el("p", { class: "empty" }, "None of your " + ids.length + " favourites changed from " + from + " to " + to + ".")); return; }
  const kind = (k) => (k || "").replace("CHANGE_KIND_", "").toLowerCase().replace("_", " ");
  out.append(el("table", {}, el("thead", {}, el("tr", {}, ["Change", "Id", "Name", "Now"].map((h) => el("th", { scope: "col" }, h)))),
    el("tbody", {}, changes.map((c) => el("tr", {}, el("td", {}, kind(c.kind)), el("td", {}, el("a", { href: "/history/" + c.id }, c.id)),
      el("td", {}, c.kind === "CHANGE_KIND_RENAMED" ? c.oldValue : c.name),
      el("td", {}, c.kind === "CHANGE_KIND_MERGED" ? el("a", { href: "/taxon/" + c.newId }, c.newId + " " + (c.newName || ""))
        : c.kind === "CHANGE_KIND_DELETED" ? "no taxon in " + to + " (kept in your favourites)"
        : c.kind === "CHANGE_KIND_MOVED" ? "now under " + c.newValue + " (was " + c.oldValue + ")"
        : c.kind === "CHANGE_KIND_RANK_CHANGED" ? "now " + c.newValue + " (was " + c.oldValue + ")"
        : "now named " + c.newValue))))));
}

// ---- About and data (§11.7) ------------------------------------------------------------------------------

async function aboutPage() {
  page("About", el("h1", {}, "About and data"), loading("the service's status"));
  const [app, status, count, storage, imports] = await Promise.all([
    fetch("/api/app").then((r) => r.json()).catch(() => ({})),
    taxonomy({ status: {} }).catch((e) => ({ failed: e })),
    favourites({ count: {} }).catch((e) => ({ failed: e })),
    favourites({ storage: {} }).catch((e) => ({ failed: e })),
    fetch("/api/import-status").then((r) => r.json()).catch(() => ({ error: { message: "unavailable" } }))]);
  const parts = [el("h2", {}, "Privacy"), el("p", {}, "We collect no data. This app runs as you, on this machine, and only you can reach it: the kernel tells it who connects, and it refuses everyone else. It answers from the databases installed here; your favourites are two columns (an id and the time you added it) in a file only you and the service can read. Nothing is sent anywhere.")];
  parts.push(el("h2", {}, "Version"), el("p", {}, "Web app " + (app.version || "?") + (status.status ? ", taxonomy service " + status.status.serverVersion : "")));
  if (status.status) {
    const s = status.status;
    parts.push(el("h2", {}, "Releases"), el("p", {}, "The release that answers: ", el("strong", {}, pinnedRelease() || s.defaultRelease || "bundled"),
      pinnedRelease() ? " (pinned for this session)" : " (the service's default)"));
    parts.push(el("table", {}, el("thead", {}, el("tr", {}, ["Release", "Source and citation", "Size", "Built", ""].map((h) => el("th", { scope: "col" }, h)))),
      el("tbody", {}, (s.releases || []).map((r) => el("tr", {}, el("th", { scope: "row" }, r.release + (r.isDefault ? " (default)" : "")),
        el("td", {}, r.provenance ? [r.provenance.source + " " + (r.provenance.release || ""), el("br"), r.provenance.citation || r.provenance.attribution || "", r.provenance.licence ? " · " + r.provenance.licence : ""] : "—"),
        el("td", {}, megabytes(r.sizeBytes)), el("td", {}, r.buildTime || ""),
        el("td", {}, el("a", { href: "/about?release=" + encodeURIComponent(r.release) }, "Answer from this")))))));
  } else parts.push(messageFor(status.failed));
  parts.push(el("h2", {}, "Favourites"));
  if (count.count) {
    parts.push(el("p", {}, (count.count.count || 0) + " species saved" + (storage.storage ? ", " + kilobytes(storage.storage.bytes) + " on disk" : "") + "."),
      el("p", {}, el("a", { href: "/favourites" }, "See and export them")),
      el("button", { type: "button", class: "danger", onclick: async () => {
        if (!confirm("Remove all your favourites? This cannot be undone.")) return;
        await favourites({ clear: {} }); aboutPage();
      } }, "Clear all favourites…"));
  } else parts.push(messageFor(count.failed));
  parts.push(el("h2", {}, "Importing releases"));
  if (imports.status) {
    const i = imports.status;
    parts.push(el("p", {}, i.importRunning ? "An import is running now." : "No import is running.",
      " Administrators import and activate releases with ", el("code", {}, "stol-client db"), "."));
  } else parts.push(el("p", {}, "Import status: " + ((imports.error && imports.error.message) || "unavailable") + " Administrators import with ", el("code", {}, "stol-client db"), "."));
  page("About", el("h1", {}, "About and data"), parts);
}

function megabytes(bytes) { return bytes ? (Number(bytes) / 1e6).toFixed(1) + " MB" : ""; }
function kilobytes(bytes) { return (Number(bytes || 0) / 1e3).toFixed(1) + " kB"; }

// When the first page is drawn (its data in place): what `make bench-web` reads in the browser.
render().then(() => { document.documentElement.dataset.readyMs = String(Math.round(performance.now())); });
