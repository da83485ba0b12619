// A formation's graph as SVG: the server lays it out (networkx), the page only draws it.
// Each node is a <g data-node="name" data-status="...">; the status is its CSS class too.
const SVG = "http://www.w3.org/2000/svg";
const W = 160, H = 44;

function el(name, attrs = {}, parent = null) {
  const node = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (parent) parent.appendChild(node);
  return node;
}

function edgePath(a, b, back) {
  if (back) {  // loops back under the nodes
    const y = Math.max(a.y, b.y) + H + 26;
    return `M${a.x + W / 2},${a.y + H} C${a.x + W / 2},${y} ${b.x + W / 2},${y} ${b.x + W / 2},${b.y + H}`;
  }
  const x1 = a.x + W, y1 = a.y + H / 2, x2 = b.x, y2 = b.y + H / 2, mid = (x1 + x2) / 2;
  return `M${x1},${y1} C${mid},${y1} ${mid},${y2} ${x2},${y2}`;
}

// Draw `graph` ({nodes, edges, width, height}) into `container`; statuses by node name.
export function drawGraph(container, graph, statuses = {}, onSelect = null) {
  const svg = el("svg", { viewBox: `0 0 ${graph.width} ${graph.height}`, width: graph.width, height: graph.height,
                          class: "graph", role: "img", "aria-label": "formation graph" });
  const defs = el("defs", {}, svg);
  const marker = el("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 7,
                                markerHeight: 7, orient: "auto-start-reverse" }, defs);
  el("path", { d: "M0,0 L10,5 L0,10 z", class: "arrow" }, marker);
  const at = Object.fromEntries(graph.nodes.map((n) => [n.name, n]));
  for (const e of graph.edges) {
    const a = at[e.source], b = at[e.target];
    if (!a || !b) continue;
    const cls = ["edge", e.back ? "back" : "", e.conditional ? "conditional" : ""].join(" ").trim();
    el("path", { d: edgePath(a, b, e.back), class: cls, "marker-end": "url(#arrow)",
                 "data-edge": `${e.source}->${e.target}` }, svg);
  }
  for (const n of graph.nodes) {
    const status = statuses[n.name] || "pending";
    const g = el("g", { "data-node": n.name, "data-status": status, class: `node ${status}`,
                        transform: `translate(${n.x},${n.y})`, tabindex: 0, role: "button" }, svg);
    el("rect", { width: W, height: H, rx: 8 }, g);
    const name = el("text", { x: 10, y: 19, class: "name" }, g);
    name.textContent = n.name.length > 20 ? `${n.name.slice(0, 19)}…` : n.name;
    const kind = el("text", { x: 10, y: 35, class: "kind" }, g);
    kind.textContent = `${n.kind} · ${status}`;
    el("title", {}, g).textContent = `${n.name} (${n.kind})`;
    if (onSelect) {
      g.addEventListener("click", () => onSelect(n.name));
      g.addEventListener("keydown", (e) => { if (e.key === "Enter") onSelect(n.name); });
    }
  }
  container.replaceChildren(svg);
  return svg;
}

// Change one drawn node's status (live, as events arrive).
export function setStatus(svg, name, status) {
  const g = svg.querySelector(`g[data-node="${CSS.escape(name)}"]`);
  if (!g || g.dataset.status === status) return;
  g.dataset.status = status;
  g.setAttribute("class", `node ${status}`);
  const kind = g.querySelector("text.kind");
  kind.textContent = `${kind.textContent.split(" · ")[0]} · ${status}`;
}

export function markSelected(svg, name) {
  for (const g of svg.querySelectorAll("g[data-node]")) g.classList.toggle("selected", g.dataset.node === name);
}
