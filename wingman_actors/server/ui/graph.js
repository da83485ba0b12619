// A formation's graph as SVG. The server sends the nodes and edges; dagre (vendored) lays
// them out left to right, here in the page. Back edges (a loop's way back) are left out of
// the layout and drawn looping under the nodes. Each node is a
// <g data-node="name" data-status="...">; the status is its CSS class too. A formation node
// whose inner graph is known is drawn as a frame (a dagre cluster) around its inner nodes,
// each a <g data-node="outer/inner"> as the run's events name it.
import { Graph, layout } from "./vendor/dagre.mjs";
import { Component, html, useMemo } from "./view.js";

const W = 160, H = 44, GAP_Y = 26, PAD = 6, LABEL = 18;
const looping = (e) => e.back || e.source === e.target;

// Every drawn node's id, and in a formation node's cluster its inner nodes' ids, by path
// ("outer/inner", as the run's events name them): `leaves` are drawn as boxes, `clusters`
// (formation nodes drawn with their insides) as frames around them.
function flatten(graph, prefix = "", parent = null, out = { leaves: [], clusters: [], edges: [] }) {
  for (const n of graph.nodes) {
    const id = prefix + n.name;
    if (n.graph && n.graph.nodes.length) {
      out.clusters.push({ ...n, id, parent, inner: n.graph, prefix: `${id}/` });
      flatten(n.graph, `${id}/`, id, out);
    } else out.leaves.push({ ...n, id, parent });
  }
  for (const e of graph.edges) out.edges.push({ ...e, source: prefix + e.source, target: prefix + e.target });
  return out;
}

// The ids drawn for {nodes, edges}: `drawn` (every node, inner ones by path) and `hollow`
// (formation nodes drawn without their insides: their inner graph is not known yet).
export function drawnNodes(graph) {
  const { leaves, clusters } = flatten(graph);
  return { drawn: new Set([...leaves, ...clusters].map((n) => n.id)),
           hollow: new Set(leaves.filter((n) => n.kind === "formation").map((n) => n.id)) };
}

// Where an edge into (or out of) a cluster lands: its inner sources (or sinks), recursively.
function ends(id, clusters, out) {
  const c = clusters.get(id);
  if (!c) return [id];
  const forward = c.inner.edges.filter((e) => !looping(e));
  const picked = c.inner.nodes.filter((n) => !forward.some((e) => (out ? e.source : e.target) === n.name));
  return (picked.length ? picked : c.inner.nodes).flatMap((n) => ends(c.prefix + n.name, clusters, out));
}

// Boxes' top-left corners, frames, edges' paths and the drawing's size for {nodes, edges}.
export function place(graph) {
  const { leaves, clusters: framed, edges: all } = flatten(graph);
  const clusters = new Map(framed.map((c) => [c.id, c]));
  const g = new Graph({ compound: clusters.size > 0 });
  g.setGraph({ rankdir: "LR", nodesep: GAP_Y, ranksep: 70, marginx: 16, marginy: 16 + (clusters.size ? LABEL : 0) });
  g.setDefaultEdgeLabel(() => ({}));
  for (const c of framed) g.setNode(c.id, {});
  for (const n of leaves) g.setNode(n.id, { width: W, height: H });
  for (const n of [...framed, ...leaves]) if (n.parent) g.setParent(n.id, n.parent);
  const pairs = [];
  for (const e of all) {
    const from = ends(e.source, clusters, true), to = ends(e.target, clusters, false);
    for (const a of from) for (const b of to) pairs.push({ ...e, a, b });
  }
  for (const p of pairs) if (!looping(p) && p.a !== p.b) g.setEdge(p.a, p.b);
  layout(g);
  const at = Object.fromEntries(leaves.map((n) => {
    const { x, y } = g.node(n.id);
    return [n.id, { ...n, x: x - W / 2, y: y - H / 2 }];
  }));
  const frames = framed.map((c) => {
    const { x, y, width, height } = g.node(c.id);
    return { ...c, x: x - width / 2 - PAD, y: y - height / 2 - PAD - LABEL, w: width + 2 * PAD, h: height + 2 * PAD + LABEL };
  });
  const edges = [];
  for (const p of pairs) {
    const a = at[p.a], b = at[p.b];
    if (!a || !b) continue;
    const cls = ["edge", p.back ? "back" : "", p.conditional ? "conditional" : ""].join(" ").trim();
    const d = looping(p) || p.a === p.b ? loop(a, b) : curve(g.edge(p.a, p.b).points);
    edges.push({ key: `${p.a}->${p.b}`, cls, d });
  }
  const { width = 0, height = 0 } = g.graph();
  return { nodes: Object.values(at), frames, edges, width,
           height: height + (edges.some((e) => /back/.test(e.cls)) ? 2 * GAP_Y : 0) };
}

// The last few layouts, by graph: a formation's page and its runs' pages draw the same graph.
const placed = new Map();
function placedOnce(key, graph) {
  if (!placed.has(key)) {
    placed.set(key, place(graph));
    if (placed.size > 8) placed.delete(placed.keys().next().value);
  }
  return placed.get(key);
}

function loop(a, b) {  // under the nodes, from a's bottom to b's
  const y = Math.max(a.y, b.y) + H + GAP_Y;
  return `M${a.x + W / 2},${a.y + H} C${a.x + W / 2},${y} ${b.x + W / 2},${y} ${b.x + W / 2},${b.y + H}`;
}

function curve(points) {  // through dagre's points, rounded at each bend
  const [first, ...rest] = points;
  let d = `M${first.x},${first.y}`;
  rest.forEach((p, i) => {
    const next = rest[i + 1];
    d += next ? ` Q${p.x},${p.y} ${(p.x + next.x) / 2},${(p.y + next.y) / 2}` : ` L${p.x},${p.y}`;
  });
  return d;
}

// One drawn node; drawn again only when its status or selection changes (a long run's
// events change a node or two at a time, among hundreds).
class Node extends Component {
  shouldComponentUpdate(next) {
    const now = this.props;
    return next.n !== now.n || next.status !== now.status || next.selected !== now.selected
      || next.onSelect !== now.onSelect;
  }

  render({ n, status, selected, onSelect }) {
    return html`
      <g data-node=${n.id} data-status=${status} class=${`node ${status}${selected ? " selected" : ""}`}
         transform=${`translate(${n.x},${n.y})`} tabindex="0" role="button"
         onClick=${onSelect && (() => onSelect(n.id))}
         onKeyDown=${onSelect && ((e) => { if (e.key === "Enter") onSelect(n.id); })}>
        <rect width=${W} height=${H} rx="8" />
        <text x="10" y="19" class="name">${n.name.length > 20 ? `${n.name.slice(0, 19)}…` : n.name}</text>
        <text x="10" y="35" class="kind">${`${n.kind} · ${status}`}</text>
        <title>${`${n.id} (${n.kind})`}</title>
      </g>`;
  }
}

// A formation node drawn with its insides: a frame, its name and state on top.
function Frame({ c, status, selected, onSelect }) {
  return html`<g data-node=${c.id} data-status=${status} class=${`cluster ${status}${selected ? " selected" : ""}`}
      tabindex="0" role="button" onClick=${onSelect && (() => onSelect(c.id))}
      onKeyDown=${onSelect && ((e) => { if (e.key === "Enter") onSelect(c.id); })}>
    <rect x=${c.x} y=${c.y} width=${c.w} height=${c.h} rx="10" />
    <text x=${c.x + 10} y=${c.y + 14} class="name">${`${c.name} · formation · ${status}`}</text>
    <title>${`${c.id} (formation node: its inner formation's nodes inside)`}</title></g>`;
}

// `graph` ({nodes, edges}) drawn, with each node's status by id; `onSelect(id)` on a click.
export function GraphView({ graph, statuses = {}, selected = null, onSelect = null }) {
  const key = JSON.stringify(graph);
  const drawn = useMemo(() => placedOnce(key, graph), [key]);
  return html`<div class="graph-box">
    <svg viewBox=${`0 0 ${drawn.width} ${drawn.height}`} width=${drawn.width} height=${drawn.height}
         class="graph" role="img" aria-label="formation graph">
      <defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7"
        orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" class="arrow" /></marker></defs>
      ${drawn.frames.map((c) => html`<${Frame} key=${c.id} c=${c} status=${statuses[c.id] || "pending"}
        selected=${c.id === selected} onSelect=${onSelect} />`)}
      ${drawn.edges.map((e) => html`<path key=${e.key} d=${e.d} class=${e.cls} marker-end="url(#arrow)"
        data-edge=${e.key} />`)}
      ${drawn.nodes.map((n) => html`<${Node} key=${n.id} n=${n} status=${statuses[n.id] || "pending"}
        selected=${n.id === selected} onSelect=${onSelect} />`)}
    </svg></div>`;
}
