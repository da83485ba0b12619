// A formation's graph as SVG. The server sends the nodes and edges; dagre (vendored) lays
// them out left to right, here in the page. Back edges (a loop's way back) are left out of
// the layout and drawn looping under the nodes. Each node is a
// <g data-node="name" data-status="...">; the status is its CSS class too.
import { Graph, layout } from "./vendor/dagre.mjs";
import { Component, html, useMemo } from "./view.js";

const W = 160, H = 44, GAP_Y = 26;
const looping = (e) => e.back || e.source === e.target;

// Boxes' top-left corners, edges' paths and the drawing's size for {nodes, edges}.
export function place(graph) {
  const g = new Graph();
  g.setGraph({ rankdir: "LR", nodesep: GAP_Y, ranksep: 70, marginx: 16, marginy: 16 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const n of graph.nodes) g.setNode(n.name, { width: W, height: H });
  for (const e of graph.edges) {
    if (!looping(e) && g.hasNode(e.source) && g.hasNode(e.target)) g.setEdge(e.source, e.target);
  }
  layout(g);
  const at = Object.fromEntries(graph.nodes.map((n) => {
    const { x, y } = g.node(n.name);
    return [n.name, { ...n, x: x - W / 2, y: y - H / 2 }];
  }));
  const edges = [];
  for (const e of graph.edges) {
    const a = at[e.source], b = at[e.target];
    if (!a || !b) continue;
    const cls = ["edge", e.back ? "back" : "", e.conditional ? "conditional" : ""].join(" ").trim();
    const d = looping(e) ? loop(a, b) : curve(g.edge(e.source, e.target).points);
    edges.push({ key: `${e.source}->${e.target}`, cls, d });
  }
  const { width = 0, height = 0 } = g.graph();
  return { nodes: Object.values(at), edges, width, height: height + (edges.some((e) => /back/.test(e.cls)) ? 2 * GAP_Y : 0) };
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
      <g data-node=${n.name} data-status=${status} class=${`node ${status}${selected ? " selected" : ""}`}
         transform=${`translate(${n.x},${n.y})`} tabindex="0" role="button"
         onClick=${onSelect && (() => onSelect(n.name))}
         onKeyDown=${onSelect && ((e) => { if (e.key === "Enter") onSelect(n.name); })}>
        <rect width=${W} height=${H} rx="8" />
        <text x="10" y="19" class="name">${n.name.length > 20 ? `${n.name.slice(0, 19)}…` : n.name}</text>
        <text x="10" y="35" class="kind">${`${n.kind} · ${status}`}</text>
        <title>${`${n.name} (${n.kind})`}</title>
      </g>`;
  }
}

// `graph` ({nodes, edges}) drawn, with each node's status by name; `onSelect(name)` on a click.
export function GraphView({ graph, statuses = {}, selected = null, onSelect = null }) {
  const key = JSON.stringify([graph.nodes, graph.edges]);
  const drawn = useMemo(() => placedOnce(key, graph), [key]);
  return html`<div class="graph-box">
    <svg viewBox=${`0 0 ${drawn.width} ${drawn.height}`} width=${drawn.width} height=${drawn.height}
         class="graph" role="img" aria-label="formation graph">
      <defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7"
        orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" class="arrow" /></marker></defs>
      ${drawn.edges.map((e) => html`<path key=${e.key} d=${e.d} class=${e.cls} marker-end="url(#arrow)"
        data-edge=${e.key} />`)}
      ${drawn.nodes.map((n) => html`<${Node} key=${n.name} n=${n} status=${statuses[n.name] || "pending"}
        selected=${n.name === selected} onSelect=${onSelect} />`)}
    </svg></div>`;
}
