// Building the page: elements from data, text always set as text (never parsed as HTML).
export function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : v);
  }
  return fill(node, ...children);
}

// Replace `node`'s children: nested lists flattened; null, undefined and false left out.
export function fill(node, ...children) {
  node.replaceChildren();
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

// A value as readable text: strings as they are, anything else as indented JSON.
export function show(value) {
  if (value === undefined) return "";
  return typeof value === "string" ? value : JSON.stringify(value, null, 2);
}

export const pre = (value, cls = "value") => h("pre", { class: cls }, show(value));

export function seconds(s) {
  if (s === null || s === undefined) return "";
  return s < 1 ? `${Math.round(s * 1000)} ms` : `${s.toFixed(2)} s`;
}

export function tokens(usage) {
  if (!usage || usage.input_tokens == null) return "";
  return `${usage.input_tokens} in / ${usage.output_tokens} out`;
}

export const badge = (status) => h("span", { class: `badge ${status}`, "data-run-status": status }, status);
