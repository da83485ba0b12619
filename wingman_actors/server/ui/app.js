// The run viewer: formations (their graphs, and a run started from one), the runs (filtered
// by status and formation), and one run (run.js). Views live in the URL's hash:
//   #/                    the newest formation      #/formations/ID   that formation
//   #/runs?status=&formation=   the runs            #/runs/ID         one run
import { events, getJSON, postJSON, valueOf } from "./api.js";
import { GraphView } from "./graph.js";
import { RunView } from "./run.js";
import { Badge, html, render, seconds, useEffect, useRef, useState } from "./view.js";

const runLink = (id) => `#/runs/${encodeURIComponent(id)}`;

function route() {
  const [path, query = ""] = location.hash.replace(/^#/, "").split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  return { parts, params: new URLSearchParams(query), hash: location.hash };
}

// Data loaded for a view: `[value, error]`; the value is null until it first arrives, and
// stays the last one while new data loads (a filter changed), so the view does not blink.
function useLoad(load, deps) {
  const [state, setState] = useState([null, null]);
  useEffect(() => {
    let live = true;
    load().then((value) => live && setState([value, null]), (error) => live && setState([null, error]));
    return () => { live = false; };
  }, deps);
  return state;
}

const Failed = ({ error }) => html`<p class="error">${error.message}</p>`;

function RunTable({ runs }) {
  if (!runs.length) return html`<p class="muted">No runs yet.</p>`;
  return html`<table class="runs">
    <thead><tr>${["run", "formation", "status", "started", "duration"].map((c) => html`<th>${c}</th>`)}</tr></thead>
    <tbody>${runs.map((r) => html`<tr key=${r.run_id} data-run-id=${r.run_id}
        onClick=${() => { location.hash = runLink(r.run_id); }}>
      <td><a href=${runLink(r.run_id)}>${r.run_id}</a></td>
      <td>${r.formation_name || r.formation_id || ""}</td>
      <td><${Badge} status=${r.status} /></td>
      <td>${r.created_at || ""}</td>
      <td>${seconds(r.duration_s)}</td></tr>`)}</tbody></table>`;
}

function Runs({ info, params }) {
  const status = params.get("status") || "";
  const formation = params.get("formation") || "";
  const [data, error] = useLoad(() => {
    const query = new URLSearchParams();
    if (status) query.set("status", status);
    if (formation) query.set("formation_id", formation);
    return Promise.all([getJSON(`api/runs?${query}`), getJSON("api/formations")]);
  }, [status, formation]);
  if (error) return html`<${Failed} error=${error} />`;
  if (!data) return html`<p class="muted">Loading…</p>`;
  const [runs, formations] = data;
  const filter = (key) => (e) => {
    const next = new URLSearchParams(params);
    if (e.target.value) next.set(key, e.target.value); else next.delete(key);
    location.hash = `#/runs?${next}`;
  };
  return html`<h1>Runs</h1>
    <div class="filters">
      <label>Status <select name="status" value=${status} onChange=${filter("status")}>
        <option value="">any</option>${info.statuses.map((s) => html`<option value=${s}>${s}</option>`)}</select></label>
      <label>Formation <select name="formation" value=${formation} onChange=${filter("formation")}>
        <option value="">any</option>${formations.map((f) => html`<option value=${f.id}>${f.name}</option>`)}</select></label>
    </div>
    <${RunTable} runs=${runs} />`;
}

// Start a run. On the server the streamed run route carries its events, and the run's page
// opens on the first; under `ui --store` the viewer starts it in its own process, and the
// run's page follows it.
function StartForm({ formation, info }) {
  const input = useRef(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState("");
  const submit = (e) => {
    e.preventDefault();
    setError("");
    setBusy(true);
    if (info.mode === "store") {
      const text = input.current.value;  // empty: the file's default input, as `wingman-actors run` without --input
      postJSON(`api/formations/${encodeURIComponent(formation.id)}/runs`, text.trim() ? { input: valueOf(text) } : {})
        .then((run) => { location.hash = runLink(run.run_id); }, (err) => setError(err.message))
        .finally(() => setBusy(false));
      return;
    }
    let opened = false;
    // The stream stays open in the background while the run goes on: closing it would cancel the run.
    events(`/formations/${encodeURIComponent(formation.id)}/run/stream`, (name, data) => {
      if (!opened && data.run_id) {
        opened = true;
        location.hash = runLink(data.run_id);
      }
      if (name === "error" && !opened) setError(data.error);
    }, { method: "POST", body: { input: valueOf(input.current.value) } })
      .catch((err) => setError(err.message))
      .finally(() => setBusy(false));
  };
  return html`<form class="start" onSubmit=${submit}>
    <label>Input (JSON, else text)<textarea ref=${input} name="input" rows="3"
      placeholder=${info.mode === "store" ? "the run's input: JSON, or text (empty: the file's default input)"
        : "the run's input: JSON, or text"}></textarea></label>
    <button type="submit" data-action="start" disabled=${busy}>Start a run</button>
    <p class="error">${error}</p></form>`;
}

function Formation({ info, id }) {
  const [formations, error] = useLoad(() => getJSON("api/formations"), [id]);
  const chosen = formations && (formations.find((f) => f.id === id) || formations[0]);
  const [runs] = useLoad(() => chosen ? getJSON(`api/runs?formation_id=${encodeURIComponent(chosen.id)}&limit=20`)
    : Promise.resolve([]), [chosen?.id]);
  if (error) return html`<${Failed} error=${error} />`;
  if (!formations) return html`<p class="muted">Loading…</p>`;
  if (!chosen) {
    return html`<h1>Formations</h1><p class="muted">${info.mode === "store"
      ? "No runs in this store yet: run a formation with `wingman-actors run FILE --store PATH`."
      : "No formations yet: create one with POST /formations (see /docs)."}</p>`;
  }
  return html`<div class="columns">
    <aside><h2>Formations</h2><ul class="formations">${formations.map((f) => html`<li key=${f.id}
      class=${f.id === chosen.id ? "current" : null} data-formation-id=${f.id}>
      <a href=${`#/formations/${encodeURIComponent(f.id)}`}>${f.name}</a></li>`)}</ul></aside>
    <section>
      <h1>${chosen.name} <small class="muted">${chosen.id}</small></h1>
      <${GraphView} graph=${chosen.graph} />
      ${!info.actions ? null : info.mode === "store" && !chosen.file
        ? html`<p class="muted" data-no-start=${chosen.id}>Runs of ${chosen.name} record no formation file (they were
          started from Python): start the viewer with <code>--formation FILE</code> to start runs of it here.</p>`
        : html`<${StartForm} key=${chosen.id} formation=${chosen} info=${info} />`}
      ${info.mode === "store" && chosen.file ? html`<p class="muted small">Runs start in this viewer's process, from
        <code>${chosen.file}</code>, journalled in the run store.</p>` : null}
      <h2>Runs <a class="small" href=${`#/runs?formation=${encodeURIComponent(chosen.id)}`}>filter…</a></h2>
      ${runs ? html`<${RunTable} runs=${runs} />` : html`<p class="muted">Loading runs…</p>`}
    </section></div>`;
}

function App() {
  const [where, setWhere] = useState(route);
  const [info, error] = useLoad(() => getJSON("api/info"), []);
  useEffect(() => {
    const moved = () => setWhere(route());
    window.addEventListener("hashchange", moved);
    return () => window.removeEventListener("hashchange", moved);
  }, []);
  useEffect(() => {
    if (info) document.getElementById("mode").textContent =
      info.mode === "store" ? `run store ${info.store}` : "server";
  }, [info]);
  if (error) return html`<${Failed} error=${error} />`;
  if (!info) return html`<p class="muted">Loading…</p>`;
  const { parts, params } = where;
  if (parts[0] === "runs" && parts[1]) return html`<${RunView} key=${parts[1]} runId=${parts[1]} info=${info} />`;
  if (parts[0] === "runs") return html`<${Runs} info=${info} params=${params} />`;
  return html`<${Formation} info=${info} id=${parts[0] === "formations" ? parts[1] : null} />`;
}

const view = document.getElementById("view");
view.replaceChildren();  // the static "Loading…"
render(html`<${App} />`, view);
