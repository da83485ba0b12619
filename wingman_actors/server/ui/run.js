// One run: its graph with each node's live state, a node's visits and agent steps, a
// timeline of the visits, and the actions (answer, resume, cancel). The node states come
// from the run's events (GET api/runs/ID/stream: those so far, then live); the rest from
// the run's document (GET api/runs/ID), fetched again when the run ends.
import { events, getJSON, postJSON, valueOf } from "./api.js";
import { drawnNodes, GraphView } from "./graph.js";
import { Badge, html, Pre, seconds, tokens, useEffect, useRef, useState, wall } from "./view.js";

// Apply one formation event to the live model; returns [node, status] to draw, if any. A node
// is a drawn one: the formation's own, or one inside a formation node ("outer/inner", as the
// events name it). An event of an inner node whose formation node is drawn without its
// insides yet (its inner run had not begun when the run's document was read) sets
// `live.hollow`: the run's document, read again, brings them. A node's own started/finished
// (`live.times`) follow its events as the server's traces of the run do: each start sets
// started and clears finished (a loop's next visit is at work again), its end sets finished.
function apply(live, name, e) {
  const node = e.node && live.drawn.has(e.node) ? e.node : null;
  if (e.node && !node && live.hollowNodes.has(e.node.slice(0, e.node.lastIndexOf("/")))) live.hollow = true;
  const d = e.data || {};
  const at = Date.parse(e.timestamp) / 1000;
  const open = (n) => live.visits.findLast((v) => v.node === n && v.finished === null);
  const ended = (n) => { live.times[n] = { ...live.times[n], finished_at: e.timestamp }; };
  switch (name) {
    case "node_started": {
      if (!node) return null;
      live.times[node] = { started_at: e.timestamp, finished_at: null };
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
      if (node) ended(node);
      return node && [node, "succeeded"];
    }
    case "node_failed": {
      const v = node && open(node);
      if (v) Object.assign(v, { finished: at, status: "failed", error: d.error });
      if (node) ended(node);
      return node && [node, "failed"];
    }
    case "node_skipped": {
      // cancelled: a join="any" loser, or an inner node of a formation node cut short (its timeout, which a
      // retry may follow with a new visit): the visit it was at ends now
      const v = node && open(node);
      if (v) ended(node);  // a visit it was at ends now (a skip of a node not at work changes no time)
      if (v && d.cancelled) Object.assign(v, { finished: at, status: "cancelled", error: d.reason });
      return node && [node, d.cancelled ? "cancelled" : "skipped"];
    }
    case "agent_text": case "agent_thinking": case "agent_tool_call": case "agent_tool_result": {
      if (!node) return null;
      const steps = (live.steps[node] ||= []);
      const last = steps[steps.length - 1];
      // text, thinking (deltas, joined while they follow each other: a fleet's items' interleave, so while they
      // are of one item), tool_call, tool_result
      const kind = name.slice(6);
      const delta = kind === "text" || kind === "thinking";
      if (delta && last?.kind === kind && last.item === d.item) last.text += d.text;
      else steps.push(delta ? { kind, text: d.text, item: d.item } : { kind, ...d });
      return null;
    }
    case "run_finished": case "run_failed": case "run_cancelled": {
      // visits still open end with the run: suspended at the interrupt, else cut short
      const waiting = name === "run_finished" && d.status === "suspended" ? d.interrupt?.node : null;
      for (const v of live.visits.filter((v) => v.finished === null)) {
        Object.assign(v, { finished: at, status: v.node === waiting ? "suspended" : "cancelled" });
        if (v.node !== waiting) ended(v.node);
      }
      return null;
    }
    default: return null;
  }
}

// The run's header: its id and status, formation, error, pending interrupt and output.
const Head = ({ doc }) => html`<div class="run-head">
  <h1>Run <code data-current-run=${doc.run_id}>${doc.run_id}</code> <${Badge} status=${doc.status} /></h1>
  <p>Formation <a href=${`#/formations/${encodeURIComponent(doc.formation_id || "")}`}>${doc.formation_name
    || doc.formation_id}</a>${doc.duration_s != null ? ` · ${seconds(doc.duration_s)}` : ""}${doc.created_at
    ? ` · started ${doc.created_at}` : ""}</p>
  ${doc.error ? html`<p class="error">${doc.error}</p>` : null}
  ${doc.interrupt ? html`<div class="interrupt"><strong>${`Waiting at ${doc.interrupt.node}: `}</strong>
    <${Pre} value=${doc.interrupt.payload} /></div>` : null}
  ${doc.status === "succeeded" ? html`<details open><summary>Output</summary>
    <${Pre} value=${doc.output ?? doc.outputs} /></details>` : null}</div>`;

// A run stopped at a breakpoint (break_before/break_after) takes no answer: it is resumed.
const atBreakpoint = (i) => {
  const p = i && i.payload;
  return !!p && typeof p === "object" && !Array.isArray(p) && Object.keys(p).length === 2
    && (p.breakpoint === "before" || p.breakpoint === "after");
};

// Answer, resume, cancel. On the server they are the API's routes; under `ui --store` the
// viewer's own (api/runs/ID/...), for the runs whose formation it can build (`doc.can_resume`),
// and the command that continues the others. Cancel of a run another process runs asks that
// process to stop it (`doc.cancel_requested` until it does); it is shown disabled, saying why
// (`doc.cancel_blocked`), for an inner run of a nested formation.
function Actions({ doc, info, act }) {
  const answer = useRef(null);
  const [error, setError] = useState("");
  const run = (call) => async (e) => {
    e.preventDefault();
    setError("");
    const err = await act(call);
    if (err) setError(err.message);
  };
  const runPath = `${info.mode === "store" ? "api" : ""}/runs/${encodeURIComponent(doc.run_id)}`;
  const resumable = info.actions && (doc.can_resume ?? doc.resumable);
  const controls = [];
  if (doc.resume) {
    const here = info.mode === "store" && doc.resume.startsWith("wingman-actors")
      ? " (or start this viewer with --formation FILE to continue it here)" : "";
    controls.push(html`<p>Continue it with: <code>${doc.resume}${doc.status === "suspended" && !atBreakpoint(doc.interrupt)
      ? " --answer JSON" : ""}</code>
      <span class="muted small">${here}</span></p>`);
  }
  if (resumable && doc.status === "suspended" && !atBreakpoint(doc.interrupt)) {
    controls.push(html`<form class="answer"><label>Answer (JSON, else text)<textarea ref=${answer} name="answer"
      rows="2" placeholder="the answer: JSON, or text"></textarea></label>
      <button type="submit" data-action="answer" onClick=${run(() => postJSON(`${runPath}/resume`,
        { answer: valueOf(answer.current.value) }))}>Answer and resume</button></form>`);
  } else if (resumable) {
    controls.push(html`<button type="button" data-action="resume"
      onClick=${run(() => postJSON(`${runPath}/resume`))}>Resume</button>`);
  }
  if (info.actions && ["running", "suspended", "interrupted"].includes(doc.status)) {
    const blocked = doc.cancel_blocked || null;
    controls.push(html`<button type="button" data-action="cancel" class="danger" disabled=${!!blocked}
      title=${blocked || "cancel the run"} onClick=${run(() => postJSON(`${runPath}/cancel`))}>Cancel</button>`);
    if (blocked) controls.push(html`<p class="muted small" data-cancel-blocked>${`${blocked}.`}</p>`);
    if (doc.cancel_requested && doc.status === "running") {
      controls.push(html`<p class="muted small" data-cancel-requested>${`Cancel requested at ${doc.cancel_requested} (UTC): `
        + "waiting for the process that runs it to stop it."}</p>`);
    }
  }
  return html`<div class="actions">${controls}<p class="error">${error}</p></div>`;
}

// A model's reasoning, collapsed until opened.
const Thinking = ({ text }) => html`<details class="thinking"><summary>thinking</summary><${Pre} value=${text} />
  </details>`;

const reasoning = (b) => b.type === "thinking" || b.type === "redacted_thinking";

// One agent step: live, a text or thinking delta run, a tool call or result; from the
// journal, a model response (its reasoning collapsed, then the rest of it).
function Step({ s }) {
  const item = s.item ?? null;  // a fleet item's step (its index in the node's input list)
  if (s.kind === "thinking") {
    return html`<li class="thinking" data-item=${item}>${item === null ? null : html`<strong>${`item ${item}`}</strong>`}<${Thinking}
      text=${s.text} /></li>`;
  }
  const thoughts = s.kind === "response" && Array.isArray(s.content) ? s.content.filter(reasoning) : [];
  if (thoughts.length) {
    const rest = { ...s, content: s.content.filter((b) => !reasoning(b)) };
    return html`<li class="response"><strong>response</strong>${thoughts.map((b) => html`<${Thinking}
      text=${b.type === "thinking" ? b.text : "[redacted]"} />`)}<${Pre} value=${rest} /></li>`;
  }
  const what = s.kind === "tool_call" ? `tool call ${s.name}`
    : s.kind === "tool_result" ? `tool result${s.is_error ? " (error)" : ""}` : s.kind;
  const title = item === null ? what : `item ${item} · ${what}`;
  const value = s.kind === "text" ? s.text : s.kind === "tool_call" ? s.input : s.kind === "tool_result" ? s.output : s;
  return html`<li class=${s.kind} data-item=${item}><strong>${title}</strong><${Pre} value=${value} /></li>`;
}

// A visit's wall time (view.js's wall): from its first attempt's start to its end (retries and
// their backoff included), from its events' timestamps, or from the journal's times of a node
// visited once.
const at = (text) => (text ? Date.parse(text) / 1000 : null);

// A node's journalled visits, timed as the journal times them (seconds); a node visited once
// as its trace does, from its first attempt's start.
function storedVisits(doc, node) {
  const n = doc.nodes[node] || {};
  const stored = doc.visits.filter((v) => v.node === node)
    .map((v) => ({ ...v, started: at(v.started), finished: at(v.finished) }));
  return stored.length === 1 && n.started_at && n.finished_at
    ? [{ ...stored[0], started: at(n.started_at), finished: at(n.finished_at) }] : stored;
}

// The selected node: its figures, its visits (input, output, error) and an agent's steps.
// Its time is the sum of the wall times of the visits it lists, so the two always agree.
function Details({ doc, live, selected }) {
  if (!selected) return html`<p class="muted">Select a node in the graph.</p>`;
  const n = { ...doc.nodes[selected], ...live.times[selected] };
  const status = live.statuses[selected] || n.status || "pending";
  const visits = live.visits.filter((v) => v.node === selected);
  const stored = storedVisits(doc, selected);
  const steps = live.steps[selected] || (doc.steps[selected] || []).map((s) => ({ kind: "response", ...s }));
  const shown = visits.length ? visits : stored;
  const times = shown.map(wall).filter((t) => t !== null);
  const total = times.length ? times.reduce((a, b) => a + b, 0) : null;
  const timeNote = !times.length ? "" : times.length < shown.length ? ` (${times.length} of ${shown.length} visits timed)`
    : shown.length > 1 ? ` (${shown.length} visits)` : "";
  return html`<h3 data-selected-node=${selected}>${selected} <${Badge} status=${status} /></h3>
    <dl><dt>visits</dt><dd>${n.visits ?? visits.length}</dd><dt>attempts</dt><dd>${n.attempts ?? ""}</dd>
      <dt title="from each visit's first attempt's start to its end, retries and backoff included; summed over the visits listed below">wall time</dt>
      <dd data-node-wall-time>${total === null ? "not recorded" : `${seconds(total)}${timeNote}`}</dd>
      <dt>tokens</dt><dd>${tokens(n.usage)}</dd>
      <dt>started</dt><dd data-node-started>${n.started_at || ""}</dd><dt>finished</dt><dd data-node-finished>${
        n.finished_at || ""}</dd></dl>
    ${n.error ? html`<p class="error">${n.error}</p>` : null}
    <h4>Visits</h4>
    ${shown.map((v, i) => html`<details class="visit" open=${i === 0}>
      <summary>${`visit ${v.visit ?? i + 1}`} <${Badge} status=${v.status} />${v.attempts > 1
        ? ` · ${v.attempts} attempts` : ""}${wall(v) !== null ? html` · <span data-visit-wall-time
        title="wall time: first attempt's start to the visit's end">${seconds(wall(v))} wall</span>`
        : ""}${v.usage ? ` · ${tokens(v.usage)}` : ""}</summary>
      <h5>input</h5>${v.input !== undefined ? html`<${Pre} value=${v.input} />`
        : html`<p class="muted small" data-input-unknown>not recorded (the journal keeps outputs; this one is not
          told by them)</p>`}
      ${v.output !== undefined ? html`<h5>output</h5><${Pre} value=${v.output} />` : null}
      ${v.error ? html`<p class="error">${v.error}</p>` : null}</details>`)}
    ${shown.length ? null : html`<p class="muted">No visit recorded.</p>`}
    ${steps.length ? html`<h4>Agent steps</h4><ol class="steps">${steps.map((s) => html`<${Step} s=${s} />`)}</ol>`
      : null}`;
}

function Timeline({ doc, live }) {
  // the visits seen live; a node without one (it ran before the page followed the run, or
  // in another process) as the journal times its visits, else as its trace times it
  const bars = live.visits.map((v) => ({ node: v.node, start: v.started, end: v.finished, status: v.status }));
  const seen = new Set(bars.map((b) => b.node));
  for (const [node, n] of Object.entries(doc.nodes)) {
    if (seen.has(node)) continue;
    const timed = storedVisits(doc, node).filter((v) => v.started !== null && v.finished !== null);
    if (timed.length) for (const v of timed) bars.push({ node, start: v.started, end: v.finished, status: v.status });
    else if (n.started_at) bars.push({ node, start: at(n.started_at), end: at(n.finished_at), status: n.status });
  }
  if (!bars.length) return html`<p class="muted">No timings recorded for this run.</p>`;
  const now = Date.now() / 1000;
  const t0 = Math.min(...bars.map((b) => b.start));
  const span = Math.max(...bars.map((b) => b.end ?? now)) - t0 || 1;
  return bars.sort((a, b) => a.start - b.start).map((b) => html`<div class="lane" data-timeline-node=${b.node}
      title=${`${b.node}: ${seconds((b.end ?? now) - b.start)} wall time`}><span class="label">${b.node}</span>
    <span class="track"><span class=${`bar ${b.status}`} style=${{ left: `${((b.start - t0) / span) * 100}%`,
      width: `${Math.max(((b.end ?? now) - b.start) / span * 100, 0.5)}%` }}></span></span></div>`);
}

// One run's page. `doc` is the run's document; `live` the model its events build (kept in a
// ref, changed in place as events arrive, drawn at most once a frame however fast they come).
export function RunView({ runId, info }) {
  const path = `api/runs/${encodeURIComponent(runId)}`;
  const [doc, setDoc] = useState(null);
  const [failure, setFailure] = useState(null);
  const [selected, setSelected] = useState(null);
  const [, setFrame] = useState(0);
  const live = useRef({ visits: [], steps: {}, statuses: {}, times: {}, drawn: new Set(), hollowNodes: new Set(),
    hollow: false }).current;
  const run = useRef({ closed: false, controller: null, pending: 0, following: false, queued: false, reading: false })
    .current;

  useEffect(() => {
    const redraw = () => {
      if (run.queued) return;
      run.queued = true;
      requestAnimationFrame(() => { run.queued = false; if (!run.closed) setFrame((f) => f + 1); });
    };

    const show = (next) => {
      const { drawn, hollow } = drawnNodes(next.graph);
      Object.assign(live, { drawn, hollowNodes: hollow });
      setDoc(next);
    };

    // The run's document, read again; `keep`: the live node states stay (a formation
    // node's insides arrived while the run goes on).
    async function refresh(keep = false) {
      if (run.closed) return null;
      let next;
      try { next = await getJSON(path); } catch { return null; }
      if (run.closed) return null;
      if (!keep) Object.assign(live, { statuses: {}, times: {} });
      show(next);
      return next;
    }

    function insides() {  // at most one read at a time, however many inner events arrive
      if (run.reading) return;
      run.reading = true;
      setTimeout(() => refresh(true).finally(() => { run.reading = false; }), 100);
    }

    // Follow the run's events; while an action is pending, look again (a resumed run
    // registers its events a moment after the request arrives). A run another process
    // runs (under `ui --store`) sends `refresh` when its journal changes.
    async function follow() {
      if (run.following || run.closed) return;
      run.following = true;
      do {
        run.controller = new AbortController();
        let seen = 0;
        try {
          await events(`${path}/stream`, (name, e) => {
            seen += 1;
            if (name === "refresh" || name === "end") { refresh(); return; }  // end: once the run's record is written
            const change = apply(live, name, e);
            if (change) live.statuses[change[0]] = change[1];
            if (live.hollow) { live.hollow = false; insides(); }
            if (name === "run_cancelled") {
              for (const [n, s] of Object.entries(live.statuses)) if (s === "running") live.statuses[n] = "cancelled";
            }
            if (change || name.startsWith("agent_") || name === "run_cancelled") redraw();
          }, { signal: run.controller.signal });
        } catch { /* aborted, or the server went away */ }
        if (run.pending && !run.closed) await new Promise((r) => setTimeout(r, seen ? 50 : 150));
      } while (run.pending && !run.closed);
      run.following = false;
      await refresh();
    }

    // An action: followed by the run's document, fetched again; returns the action's error, if any.
    // On the server a resume answers once the run is over (its events are followed meanwhile);
    // under `ui --store` it answers once the run goes on in the viewer, which is then followed.
    run.act = async (call) => {
      const store = info.mode === "store";
      if (!store) {
        run.pending += 1;
        follow();
      }
      let error = null;
      try { await call(); } catch (err) { error = err; }
      if (!store) run.pending -= 1;
      await refresh();
      if (store) follow();
      return error;
    };

    getJSON(path).then((first) => {
      if (run.closed) return;
      show(first);
      follow();
    }, (err) => { if (!run.closed) setFailure(err); });
    return () => { run.closed = true; run.controller?.abort(); };
  }, [path]);

  if (failure) return html`<p class="error">${failure.message}</p>`;
  if (!doc) return html`<p class="muted">Loading…</p>`;
  const statuses = { ...Object.fromEntries(Object.entries(doc.nodes).map(([n, v]) => [n, v.status])), ...live.statuses };
  return html`<${Head} doc=${doc} />
    <${Actions} doc=${doc} info=${info} act=${(call) => run.act(call)} />
    <${GraphView} graph=${doc.graph} statuses=${statuses} selected=${selected} onSelect=${setSelected} />
    <div class="columns">
      <section><h2>Node</h2><div class="details"><${Details} doc=${doc} live=${live} selected=${selected} /></div></section>
      <section><h2>Timeline</h2><div class="timeline"><${Timeline} doc=${doc} live=${live} /></div></section>
    </div>`;
}
