// One run: its graph with each node's live state, a node's visits and agent steps, a
// timeline of the visits, and the actions (answer, resume, cancel). The node states come
// from the run's events (GET api/runs/ID/stream: those so far, then live); the rest from
// the run's document (GET api/runs/ID), fetched again when the run ends.
import { events, getJSON, postJSON, valueOf } from "./api.js";
import { badge, fill, h, pre, seconds, tokens } from "./dom.js";
import { drawGraph, markSelected, setStatus } from "./graph.js";

// Apply one formation event to the live model; returns [node, status] to draw, if any.
function apply(live, name, e) {
  const node = e.node && !e.node.includes("/") ? e.node : null;  // inner nodes of nested formations: not drawn
  const d = e.data || {};
  const at = Date.parse(e.timestamp) / 1000;
  const open = (n) => live.visits.findLast((v) => v.node === n && v.finished === null);
  switch (name) {
    case "node_started": {
      if (!node) return null;
      const current = open(node);
      if (current && d.attempt > 1) current.attempts = d.attempt;
      else live.visits.push({ node, input: d.input, output: undefined, error: null, attempts: d.attempt || 1,
                              started: at, finished: null, status: "running", usage: null });
      return [node, "running"];
    }
    case "node_retry": if (node) { const v = open(node); if (v) v.error = d.error; } return node && [node, "running"];
    case "node_finished": {
      const v = node && open(node);
      if (v) Object.assign(v, { output: d.output, finished: at, status: "succeeded", usage: d.usage, error: null });
      return node && [node, "succeeded"];
    }
    case "node_failed": {
      const v = node && open(node);
      if (v) Object.assign(v, { finished: at, status: "failed", error: d.error });
      return node && [node, "failed"];
    }
    case "node_skipped": return node && [node, "skipped"];
    case "agent_text": case "agent_tool_call": case "agent_tool_result": {
      if (!node) return null;
      const steps = (live.steps[node] ||= []);
      const last = steps[steps.length - 1];
      if (name === "agent_text" && last?.kind === "text") last.text += d.text;
      else steps.push(name === "agent_text" ? { kind: "text", text: d.text } : { kind: name.slice(6), ...d });
      return null;
    }
    case "run_finished": case "run_failed": case "run_cancelled": {
      // visits still open end with the run: suspended at the interrupt, else cut short
      const waiting = name === "run_finished" && d.status === "suspended" ? d.interrupt?.node : null;
      for (const v of live.visits.filter((v) => v.finished === null)) {
        Object.assign(v, { finished: at, status: v.node === waiting ? "suspended" : "cancelled" });
      }
      return null;
    }
    default: return null;
  }
}

export async function showRun(view, runId, info) {
  const path = `api/runs/${encodeURIComponent(runId)}`;
  const live = { visits: [], steps: {}, statuses: {} };
  let doc = await getJSON(path);
  let selected = null;
  let svg = null;
  let closed = false;
  let controller = null;
  let pending = 0;  // actions waiting for the server (a resume runs until the run ends)

  const header = h("div", { class: "run-head" });
  const actions = h("div", { class: "actions" });
  const graph = h("div", { class: "graph-box" });
  const details = h("div", { class: "details" });
  const timeline = h("div", { class: "timeline" });
  fill(view, header, actions, graph, h("div", { class: "columns" },
    h("section", {}, h("h2", {}, "Node"), details), h("section", {}, h("h2", {}, "Timeline"), timeline)));

  const select = (name) => { selected = name; markSelected(svg, name); renderDetails(); };

  function renderAll() {
    fill(header,
      h("h1", {}, "Run ", h("code", { "data-current-run": doc.run_id }, doc.run_id), " ", badge(doc.status)),
      h("p", {}, "Formation ", h("a", { href: `#/formations/${encodeURIComponent(doc.formation_id || "")}` },
        doc.formation_name || doc.formation_id), doc.duration_s != null ? ` · ${seconds(doc.duration_s)}` : "",
        doc.created_at ? ` · started ${doc.created_at}` : ""),
      doc.error ? h("p", { class: "error" }, doc.error) : null,
      doc.interrupt ? h("div", { class: "interrupt" }, h("strong", {}, `Waiting at ${doc.interrupt.node}: `),
        pre(doc.interrupt.payload)) : null,
      doc.status === "succeeded" ? h("details", { open: true }, h("summary", {}, "Output"),
        pre(doc.output ?? doc.outputs)) : null);
    renderActions();
    const statuses = Object.fromEntries(Object.entries(doc.nodes).map(([n, v]) => [n, v.status]));
    svg = drawGraph(graph, doc.graph, { ...statuses, ...live.statuses }, select);
    if (selected) markSelected(svg, selected);
    renderDetails();
    renderTimeline();
  }

  function renderActions() {
    const error = h("p", { class: "error" });
    const act = (fn) => async (e) => {
      e.preventDefault();
      error.textContent = "";
      pending += 1;
      follow();
      try { doc = await fn(); } catch (err) { error.textContent = err.message; }
      pending -= 1;
      await refresh();
    };
    const out = [];
    if (!info.actions) {
      if (doc.resume) out.push(h("p", {}, "Continue it with: ", h("code", {}, doc.resume),
        doc.status === "suspended" ? " --answer JSON" : ""));
    } else {
      if (doc.status === "suspended") {
        const answer = h("textarea", { name: "answer", rows: 2, placeholder: "the answer: JSON, or text" });
        out.push(h("form", { class: "answer" }, h("label", {}, "Answer (JSON, else text)", answer),
          h("button", { type: "submit", "data-action": "answer",
            onclick: act(() => postJSON(`/runs/${encodeURIComponent(doc.run_id)}/resume`, { answer: valueOf(answer.value) })) },
          "Answer and resume")));
      } else if (doc.resumable) {
        out.push(h("button", { type: "button", "data-action": "resume",
          onclick: act(() => postJSON(`/runs/${encodeURIComponent(doc.run_id)}/resume`)) }, "Resume"));
      }
      if (["running", "suspended", "interrupted"].includes(doc.status)) {
        out.push(h("button", { type: "button", "data-action": "cancel", class: "danger",
          onclick: act(() => postJSON(`/runs/${encodeURIComponent(doc.run_id)}/cancel`)) }, "Cancel"));
      }
    }
    fill(actions, ...out, error);
  }

  function renderDetails() {
    if (!selected) {
      fill(details, h("p", { class: "muted" }, "Select a node in the graph."));
      return;
    }
    const n = doc.nodes[selected] || {};
    const status = live.statuses[selected] || n.status || "pending";
    const visits = live.visits.filter((v) => v.node === selected);
    const stored = doc.visits.filter((v) => v.node === selected);
    const steps = live.steps[selected] || (doc.steps[selected] || []).map((s) => ({ kind: "response", ...s }));
    fill(details,
      h("h3", { "data-selected-node": selected }, selected, " ", badge(status)),
      h("dl", {},
        h("dt", {}, "visits"), h("dd", {}, n.visits ?? visits.length),
        h("dt", {}, "attempts"), h("dd", {}, n.attempts ?? ""),
        h("dt", {}, "duration"), h("dd", {}, seconds(n.duration_s)),
        h("dt", {}, "tokens"), h("dd", {}, tokens(n.usage)),
        h("dt", {}, "started"), h("dd", {}, n.started_at || ""),
        h("dt", {}, "finished"), h("dd", {}, n.finished_at || "")),
      n.error ? h("p", { class: "error" }, n.error) : null,
      h("h4", {}, "Visits"),
      (visits.length ? visits : stored).map((v, i) => h("details", { class: "visit", open: i === 0 },
        h("summary", {}, `visit ${v.visit ?? i + 1}`, " ", badge(v.status),
          v.attempts > 1 ? ` · ${v.attempts} attempts` : "",
          v.finished && v.started ? ` · ${seconds(v.finished - v.started)}` : "", v.usage ? ` · ${tokens(v.usage)}` : ""),
        h("h5", {}, "input"), pre(v.input),
        v.output !== undefined ? [h("h5", {}, "output"), pre(v.output)] : null,
        v.error ? h("p", { class: "error" }, v.error) : null)),
      !visits.length && !stored.length ? h("p", { class: "muted" }, "No visit recorded.") : null,
      steps.length ? [h("h4", {}, "Agent steps"), h("ol", { class: "steps" }, steps.map((s) => h("li", { class: s.kind },
        h("strong", {}, s.kind === "tool_call" ? `tool call ${s.name}` : s.kind === "tool_result"
          ? `tool result${s.is_error ? " (error)" : ""}` : s.kind),
        pre(s.kind === "text" ? s.text : s.kind === "tool_call" ? s.input : s.kind === "tool_result" ? s.output
          : s))))] : null);
  }

  function renderTimeline() {
    let bars = live.visits.map((v) => ({ node: v.node, start: v.started, end: v.finished, status: v.status }));
    if (!bars.length) {
      bars = Object.entries(doc.nodes).filter(([, n]) => n.started_at).map(([node, n]) => ({
        node, start: Date.parse(n.started_at) / 1000,
        end: n.finished_at ? Date.parse(n.finished_at) / 1000 : null, status: n.status }));
    }
    if (!bars.length) {
      fill(timeline, h("p", { class: "muted" }, "No timings recorded for this run."));
      return;
    }
    const now = Date.now() / 1000;
    const t0 = Math.min(...bars.map((b) => b.start));
    const span = Math.max(...bars.map((b) => b.end ?? now)) - t0 || 1;
    fill(timeline, ...bars.sort((a, b) => a.start - b.start).map((b) => {
      const bar = h("span", { class: `bar ${b.status}` });
      bar.style.left = `${((b.start - t0) / span) * 100}%`;
      bar.style.width = `${Math.max(((b.end ?? now) - b.start) / span * 100, 0.5)}%`;
      return h("div", { class: "lane", "data-timeline-node": b.node,
        title: `${b.node}: ${seconds((b.end ?? now) - b.start)}` }, h("span", { class: "label" }, b.node),
        h("span", { class: "track" }, bar));
    }));
  }

  // Draw at most once a frame, however fast events come (a long run sends hundreds a second).
  const queued = new Set();
  function later(draw) {
    if (queued.has(draw)) return;
    queued.add(draw);
    requestAnimationFrame(() => { queued.delete(draw); if (!closed) draw(); });
  }

  async function refresh() {
    if (closed) return;
    try { doc = await getJSON(path); } catch { return; }
    live.statuses = {};
    renderAll();
  }

  // Follow the run's events; while an action is pending, look again (a resumed run
  // registers its events a moment after the request arrives).
  let following = false;
  async function follow() {
    if (following || closed) return;
    following = true;
    do {
      controller = new AbortController();
      let seen = 0;
      try {
        await events(`${path}/stream`, (name, e) => {
          seen += 1;
          if (info.mode === "store") { if (name === "refresh") refresh(); return; }
          if (name === "end") { refresh(); return; }  // sent once the run's record is written
          const change = apply(live, name, e);
          if (change) {
            live.statuses[change[0]] = change[1];
            setStatus(svg, change[0], change[1]);
            if (change[0] === selected) renderDetails();
            later(renderTimeline);
          } else if (name.startsWith("agent_") && e.node === selected) renderDetails();
          if (name === "run_cancelled") {
            for (const [n, s] of Object.entries(live.statuses)) if (s === "running") setStatus(svg, n, live.statuses[n] = "cancelled");
          }
        }, { signal: controller.signal });
      } catch { /* aborted, or the server went away */ }
      if (pending && !closed) await new Promise((r) => setTimeout(r, seen ? 50 : 150));
    } while (pending && !closed);
    following = false;
    await refresh();
  }

  renderAll();
  follow();
  return () => { closed = true; controller?.abort(); };
}
