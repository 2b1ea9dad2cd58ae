// The mnem console: a client of the JSON API like any other. It keeps the API key in
// this tab's sessionStorage only and renders every stored text as text (textContent,
// never HTML): evidence is untrusted input.
"use strict";

const KEY = "mnem-key";
const $ = (id) => document.getElementById(id);

/// An element with attributes and children; strings become text nodes.
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value !== undefined && value !== null) node.setAttribute(name, value);
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(typeof child === "string" || typeof child === "number" ? String(child) : child);
  }
  return node;
}

/// A time as the API gives it: RFC 3339 text, shown as is.
function when(t) {
  return t || "";
}

/// Replaces `node`'s children, flattening lists and skipping empty slots.
function fill(node, ...children) {
  node.replaceChildren(...children.flat(2).filter((c) => c !== null && c !== undefined && c !== false));
}

function key() {
  return sessionStorage.getItem(KEY) || "";
}

async function api(operation, body) {
  if (!key()) throw new Error("Enter an API key first (mnem key create, or the one mnem ui printed).");
  const response = await fetch("/v1/" + operation, {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: "Bearer " + key() },
    body: JSON.stringify(body),
  });
  const answer = await response.json().catch(() => ({}));
  if (!response.ok) {
    const message = (answer.error && answer.error.message) || response.statusText;
    throw new Error(operation + ": " + message);
  }
  return answer;
}

function showError(err) {
  const box = $("error");
  box.textContent = err ? String(err.message || err) : "";
  box.hidden = !err;
}

function keyState() {
  const held = Boolean(key());
  $("key-state").textContent = held ? "key set for this tab" : "no key";
  $("key-forget").hidden = !held;
}

// ---- search ----------------------------------------------------------------------

function recallInput() {
  const list = (text) => text.split(",").map((s) => s.trim()).filter(Boolean);
  const input = {
    query: $("q").value,
    limit: Number($("limit").value) || 10,
    window: Number($("window").value) || 0,
  };
  const kinds = list($("kinds").value);
  if (kinds.length) input.kinds = kinds;
  if ($("scope").value.trim()) input.scope = $("scope").value.trim();
  if ($("ancestors").checked) input.include_ancestors = true;
  if ($("since").value.trim()) input.since = $("since").value.trim();
  if ($("until").value.trim()) input.until = $("until").value.trim();
  return input;
}

async function search(event) {
  event.preventDefault();
  showError(null);
  const box = $("results");
  box.replaceChildren(el("p", { class: "empty" }, "Recalling…"));
  try {
    const explain = $("explain").checked;
    const answer = await api(explain ? "explain" : "recall", recallInput());
    fill(box, renderRecall(answer, explain));
  } catch (err) {
    box.replaceChildren();
    showError(err);
  }
}

function renderRecall(answer, explain) {
  const out = [];
  if (!answer.results.length) out.push(el("p", { class: "empty" }, "Nothing recalled."));
  for (const r of answer.results) {
    const neighbours = (items) =>
      (items || []).map((n) => el("p", { class: "neighbour" }, n.context));
    const meta = el(
      "div",
      { class: "meta" },
      when(r.observed_at), " · ", r.kind || "", " · ", r.source || "", " · ",
      el("a", { href: "#/evidence/" + r.evidence_id, class: "evidence-link" }, "history"),
    );
    const score = explain ? el("div", { class: "score" }, explainLine(r)) : null;
    out.push(
      el("article", { class: "result", "data-evidence-id": r.evidence_id },
        neighbours(r.before), el("p", { class: "context" }, r.context), neighbours(r.after),
        meta, score),
    );
  }
  if (answer.discovery_paths && answer.discovery_paths.length) {
    out.push(el("h2", {}, "Discovery paths"));
    for (const path of answer.discovery_paths) out.push(renderPath(path));
  }
  if (answer.guidance) out.push(el("p", { class: "meta" }, answer.guidance));
  return out;
}

function explainLine(r) {
  const c = r.components || {};
  const rank = (n) => (n === null || n === undefined ? "–" : "#" + n);
  return "score " + Number(r.score).toFixed(4) + " · lexical " + rank(c.lexical_rank) +
    " · vector " + rank(c.vector_rank) + " · fused " + Number(c.fused || 0).toFixed(4) +
    (c.phrase ? " · phrase" : "") + (c.temporal ? " · time hint" : "") +
    " · group " + Number(c.group || 0).toFixed(2) + " · recency " + Number(c.recency || 0).toFixed(2);
}

function objectName(object) {
  if (!object) return "";
  if (object.name !== undefined) return object.name;
  if (object.value !== undefined) return JSON.stringify(object.value.value ?? object.value);
  return JSON.stringify(object);
}

function renderPath(path) {
  const edges = (path.relationships || []).map((e) =>
    el("span", {},
      e.subject.name, " —", e.predicate, e.polarity === "-" ? " (not)" : "", "→ ",
      objectName(e.object), " ",
      el("a", { href: "#/relationship/" + e.relationship_id, class: "trace-link" }, "trace"), "  "),
  );
  return el("div", { class: "path" }, edges);
}

// ---- evidence ----------------------------------------------------------------------

async function showEvidence(id) {
  const view = $("view-evidence");
  view.replaceChildren(el("p", { class: "empty" }, "Loading…"));
  const { evidence: e, history, writes, profiles } = await api("show", { evidence_id: id });
  const who = (id) => (profiles && profiles[id]) || id;
  const row = (name, value) => el("tr", {}, el("th", {}, name), el("td", {}, value));
  fill(view,
    el("h2", {}, "Evidence"),
    el("div", { class: "card" }, el("p", { class: "context" }, e.content)),
    el("table", {},
      row("id", e.id), row("state", e.state), row("kind", e.kind), row("owner", who(e.owner)),
      row("source", e.source + " (" + e.source_type + ", " + e.authority + ")"),
      row("source key", e.source_key || "–"), row("scope", "/" + (e.scope || "")),
      row("observed", when(e.observed_at)), row("recorded", when(e.recorded_at)),
      row("labels", (e.labels || []).join(", ") || "–"),
      row("refs", (e.refs || []).map((r) => r.kind + ":" + r.id).join(", ") || "–")),
    el("h2", {}, "Lifecycle"),
    el("ul", { class: "timeline lifecycle" },
      history.map((h) =>
        el("li", {}, el("span", { class: "kind" }, h.state), " ",
          el("span", { class: "when" }, when(h.at) + " · " + who(h.actor)),
          h.reason ? el("div", {}, h.reason) : null))),
    el("h2", {}, "Writes"),
    el("table", {}, writes.map((w) =>
      el("tr", {}, el("td", {}, when(w.recorded_at)), el("td", {}, w.source || "–"),
        el("td", {}, w.source_key || ""), el("td", {}, w.state)))),
  );
}

// ---- relationship ------------------------------------------------------------------

/// `content` with the code points [start, end) marked.
function highlighted(content, start, end) {
  const points = Array.from(content);
  return el("p", { class: "context" },
    points.slice(0, start).join(""), el("mark", {}, points.slice(start, end).join("")),
    points.slice(end).join(""));
}

async function showRelationship(id) {
  const view = $("view-relationship");
  view.replaceChildren(el("p", { class: "empty" }, "Loading…"));
  const trace = await api("trace", { relationship_id: id });
  const r = trace.relationship;
  const supports = await Promise.all(
    trace.supports.slice(0, 10).map(async (s) => {
      try {
        const shown = await api("show", { evidence_id: s.evidence_id });
        return el("div", { class: "card support" },
          highlighted(shown.evidence.content, s.start, s.end),
          el("div", { class: "meta" }, s.evidence_state, s.effective ? " · counts" : " · does not count", " · ",
            el("a", { href: "#/evidence/" + s.evidence_id }, "history")));
      } catch (_) {
        return el("div", { class: "card support" }, el("p", { class: "context" }, "“", el("mark", {}, s.quote), "”"));
      }
    }),
  );
  const events = [
    ...trace.verification_events.map((v) => ({ at: v.at, kind: "verified: " + v.verdict,
      text: v.verifier + " (confidence " + v.confidence + ")" + (v.rationale ? ": " + v.rationale : "") })),
    ...trace.transitions.map((t) => ({ at: t.at, kind: "→ " + t.to_status + " / " + t.to_tier,
      text: (t.from_status ? "from " + t.from_status + " / " + t.from_tier + ". " : "") + (t.reason || "") })),
  ].sort((a, b) => (when(a.at) < when(b.at) ? -1 : 1));
  fill(view,
    el("h2", { class: "statement" }, r.subject.name, " ", r.polarity === "-" ? "not " : "",
      r.predicate_surface || r.predicate, " ", objectName(r.object)),
    el("div", { class: "meta" }, r.tier, " · ", r.status, " · version ", r.version, " · by ",
      (trace.profiles && trace.profiles[r.owner_profile_id]) || r.owner_profile_id,
      " · recorded ", when(r.recorded_at)),
    el("h2", {}, "Supporting evidence"),
    supports.length ? supports : el("p", { class: "empty" }, "None."),
    el("h2", {}, "Timeline"),
    el("ul", { class: "timeline" }, events.map((e) =>
      el("li", {}, el("span", { class: "kind" }, e.kind), " ", el("span", { class: "when" }, when(e.at)),
        el("div", {}, e.text)))),
    trace.conflicts.length ? el("h2", {}, "Conflicts") : null,
    trace.conflicts.map((c) => el("div", { class: "card" }, JSON.stringify(c))),
    el("h2", {}, "Neighbourhood of " + r.subject.name),
    el("div", { id: "neighbourhood" }, el("p", { class: "empty" }, "Loading…")),
  );
  const around = await api("recall", {
    query: "", expand_from_entity_ids: [r.subject.entity_id], path_limit: 20, limit: 1,
  });
  $("neighbourhood").replaceChildren(graph(around.discovery_paths, r.subject.entity_id));
}

/// The discovery paths as a small circular graph (SVG; names as text nodes).
function graph(paths, centre) {
  const svgNs = "http://www.w3.org/2000/svg";
  const node = (tag, attrs) => {
    const n = document.createElementNS(svgNs, tag);
    for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, v);
    return n;
  };
  const names = new Map();
  const edges = new Map();
  for (const path of paths || []) {
    for (const e of path.relationships || []) {
      names.set(e.subject.entity_id, e.subject.name);
      if (e.object && e.object.entity_id) names.set(e.object.entity_id, e.object.name);
      if (e.object && e.object.entity_id) edges.set(e.relationship_id, [e.subject.entity_id, e.object.entity_id, e.predicate]);
    }
  }
  if (!names.size) return el("p", { class: "empty" }, "No verified relationships around it.");
  const width = 640, height = 360, cx = width / 2, cy = height / 2;
  const ids = [centre, ...[...names.keys()].filter((id) => id !== centre)];
  const at = new Map(ids.map((id, i) => {
    if (i === 0) return [id, [cx, cy]];
    const angle = (2 * Math.PI * (i - 1)) / (ids.length - 1);
    return [id, [cx + 240 * Math.cos(angle), cy + 140 * Math.sin(angle)]];
  }));
  const svg = node("svg", { width, height, viewBox: `0 0 ${width} ${height}`, class: "graph" });
  for (const [from, to, predicate] of edges.values()) {
    const [x1, y1] = at.get(from), [x2, y2] = at.get(to);
    svg.append(node("line", { x1, y1, x2, y2, stroke: "#9aa7b4" }));
    const label = node("text", { x: (x1 + x2) / 2, y: (y1 + y2) / 2 - 4, "text-anchor": "middle", fill: "#5d6b78" });
    label.textContent = predicate;
    svg.append(label);
  }
  for (const [id, [x, y]] of at) {
    svg.append(node("circle", { cx: x, cy: y, r: id === centre ? 9 : 6, fill: id === centre ? "#1f6feb" : "#fff", stroke: "#1f6feb" }));
    const label = node("text", { x, y: y + 22, "text-anchor": "middle" });
    label.textContent = names.get(id) || "";
    svg.append(label);
  }
  return svg;
}

// ---- status ------------------------------------------------------------------------

async function showStatus() {
  const view = $("view-status");
  view.replaceChildren(el("p", { class: "empty" }, "Loading…"));
  const s = await api("status", {});
  const contract = (c) => (c ? c.provider + " " + c.model + " (" + c.dims + " dims)" : "none (lexical-only)");
  const row = (name, value) => el("tr", {}, el("th", {}, name), el("td", {}, value));
  const degraded = s.last_degradation
    ? s.last_degradation.branch + " branch at " + s.last_degradation.at
    : "never";
  fill(view,
    el("h2", {}, "Status"),
    el("table", { id: "status-table" },
      row("ranking profile", s.ranking_profile_version),
      row("active embedder", contract(s.active_contract)),
      row("store's vectors", contract(s.recorded_contract)),
      row("waiting for vectors", String(s.team_pending_documents) + (s.team_pending_at_least ? "+" : "")),
      row("last degraded branch", degraded)),
  );
}

// ---- routing -----------------------------------------------------------------------

async function route() {
  showError(null);
  const [, page, id] = (location.hash || "#/search").split("/");
  const views = { search: "view-search", evidence: "view-evidence", relationship: "view-relationship", status: "view-status" };
  const current = views[page] ? page : "search";
  for (const [name, section] of Object.entries(views)) $(section).hidden = name !== current;
  $("nav-search").classList.toggle("active", current === "search");
  $("nav-status").classList.toggle("active", current === "status");
  try {
    if (current === "evidence") await showEvidence(decodeURIComponent(id));
    if (current === "relationship") await showRelationship(decodeURIComponent(id));
    if (current === "status") await showStatus();
  } catch (err) {
    showError(err);
  }
}

function start() {
  // `mnem ui` opens the console with a key in the fragment (never sent to the server):
  // keep it for this tab and take it out of the address bar.
  if (location.hash.startsWith("#key=")) {
    sessionStorage.setItem(KEY, decodeURIComponent(location.hash.slice(5)));
    history.replaceState(null, "", location.pathname + "#/search");
  }
  $("key-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const value = $("key").value.trim();
    if (value) sessionStorage.setItem(KEY, value);
    $("key").value = "";
    keyState();
    route();
  });
  $("key-forget").addEventListener("click", () => {
    sessionStorage.removeItem(KEY);
    keyState();
  });
  $("search-form").addEventListener("submit", search);
  window.addEventListener("hashchange", route);
  keyState();
  route();
}

start();
