// The run viewer: formations (their graphs, and a run started from one), the runs (filtered
// by status and formation), and one run (run.js). Views live in the URL's hash:
//   #/                    the newest formation      #/formations/ID   that formation
//   #/runs?status=&formation=   the runs            #/runs/ID         one run
import { events, getJSON, valueOf } from "./api.js";
import { badge, fill, h, seconds } from "./dom.js";
import { drawGraph } from "./graph.js";
import { showRun } from "./run.js";

const view = document.getElementById("view");
export const app = { info: null, leave: null };

function route() {
  const [path, query = ""] = location.hash.replace(/^#/, "").split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  return { parts, params: new URLSearchParams(query) };
}

async function render() {
  if (app.leave) app.leave();
  app.leave = null;
  const { parts, params } = route();
  try {
    if (!app.info) {
      app.info = await getJSON("api/info");
      document.getElementById("mode").textContent =
        app.info.mode === "store" ? `run store ${app.info.store} (read-only)` : "server";
    }
    if (parts[0] === "runs" && parts[1]) app.leave = await showRun(view, parts[1], app.info);
    else if (parts[0] === "runs") await showRuns(params);
    else await showFormation(parts[0] === "formations" ? parts[1] : null);
  } catch (error) {
    fill(view, h("p", { class: "error" }, error.message));
  }
}

function runTable(runs) {
  if (!runs.length) return h("p", { class: "muted" }, "No runs yet.");
  return h("table", { class: "runs" },
    h("thead", {}, h("tr", {}, ["run", "formation", "status", "started", "duration"].map((c) => h("th", {}, c)))),
    h("tbody", {}, runs.map((r) => h("tr", { "data-run-id": r.run_id,
      onclick: () => { location.hash = `#/runs/${encodeURIComponent(r.run_id)}`; } },
      h("td", {}, h("a", { href: `#/runs/${encodeURIComponent(r.run_id)}` }, r.run_id)),
      h("td", {}, r.formation_name || r.formation_id || ""),
      h("td", {}, badge(r.status)),
      h("td", {}, r.created_at || ""),
      h("td", {}, seconds(r.duration_s))))));
}

async function showRuns(params) {
  const status = params.get("status") || "";
  const formation = params.get("formation") || "";
  const query = new URLSearchParams();
  if (status) query.set("status", status);
  if (formation) query.set("formation_id", formation);
  const [runs, formations] = await Promise.all([getJSON(`api/runs?${query}`), getJSON("api/formations")]);
  const filter = (key, value) => {
    const next = new URLSearchParams(params);
    if (value) next.set(key, value); else next.delete(key);
    location.hash = `#/runs?${next}`;
  };
  fill(view,
    h("h1", {}, "Runs"),
    h("div", { class: "filters" },
      h("label", {}, "Status ", h("select", { name: "status", onchange: (e) => filter("status", e.target.value) },
        h("option", { value: "" }, "any"),
        app.info.statuses.map((s) => h("option", { value: s, selected: s === status }, s)))),
      h("label", {}, "Formation ", h("select", { name: "formation", onchange: (e) => filter("formation", e.target.value) },
        h("option", { value: "" }, "any"),
        formations.map((f) => h("option", { value: f.id, selected: f.id === formation }, f.name))))),
    runTable(runs));
}

async function showFormation(id) {
  const formations = await getJSON("api/formations");
  if (!formations.length) {
    fill(view, h("h1", {}, "Formations"), h("p", { class: "muted" }, app.info.mode === "store"
      ? "No runs in this store yet: run a formation with `wingman-actors run FILE --store PATH`."
      : "No formations yet: create one with POST /formations (see /docs)."));
    return;
  }
  const formation = formations.find((f) => f.id === id) || formations[0];
  const graph = h("div", { class: "graph-box" });
  const runs = h("div", {}, h("p", { class: "muted" }, "Loading runs…"));
  fill(view,
    h("div", { class: "columns" },
      h("aside", {}, h("h2", {}, "Formations"), h("ul", { class: "formations" }, formations.map((f) =>
        h("li", { class: f.id === formation.id ? "current" : null, "data-formation-id": f.id },
          h("a", { href: `#/formations/${encodeURIComponent(f.id)}` }, f.name))))),
      h("section", {},
        h("h1", {}, formation.name, " ", h("small", { class: "muted" }, formation.id)),
        graph,
        app.info.actions ? startForm(formation) : null,
        h("h2", {}, "Runs ", h("a", { class: "small", href: `#/runs?formation=${encodeURIComponent(formation.id)}` },
          "filter…")),
        runs)));
  drawGraph(graph, formation.graph);
  fill(runs, runTable(await getJSON(`api/runs?formation_id=${encodeURIComponent(formation.id)}&limit=20`)));
}

// Start a run: the streamed run route carries its events; the run's page opens on the first.
function startForm(formation) {
  const error = h("p", { class: "error" });
  const input = h("textarea", { name: "input", rows: 3, placeholder: "the run's input: JSON, or text" });
  const button = h("button", { type: "submit", "data-action": "start" }, "Start a run");
  const form = h("form", { class: "start" }, h("label", {}, "Input (JSON, else text)", input), button, error);
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    error.textContent = "";
    button.disabled = true;
    let opened = false;
    // The stream stays open in the background while the run goes on: closing it would cancel the run.
    events(`/formations/${encodeURIComponent(formation.id)}/run/stream`, (name, data) => {
      if (!opened && data.run_id) {
        opened = true;
        location.hash = `#/runs/${encodeURIComponent(data.run_id)}`;
      }
      if (name === "error" && !opened) error.textContent = data.error;
    }, { method: "POST", body: { input: valueOf(input.value) } })
      .catch((err) => { error.textContent = err.message; })
      .finally(() => { button.disabled = false; });
  });
  return form;
}

window.addEventListener("hashchange", render);
render();
