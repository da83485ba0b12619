// The page's view layer: Preact (a reactive view, 12 KiB) with htm (tagged templates in
// place of JSX, so there is no build step), both vendored in vendor/ (see vendor/README.md).
// htm builds Preact elements; text is always set as text (never parsed as HTML).
import { Component, h, render } from "./vendor/preact.mjs";
import { useEffect, useMemo, useRef, useState } from "./vendor/hooks.mjs";
import htm from "./vendor/htm.mjs";

export const html = htm.bind(h);
export { Component, render, useEffect, useMemo, useRef, useState };

// A value as readable text: strings as they are, anything else as indented JSON.
export function show(value) {
  if (value === undefined) return "";
  return typeof value === "string" ? value : JSON.stringify(value, null, 2);
}

export const Pre = ({ value }) => html`<pre class="value">${show(value)}</pre>`;

export function seconds(s) {
  if (s === null || s === undefined) return "";
  if (s > 0 && s < 0.0005) return "< 1 ms"; // a visit that took time, not none
  return s < 1 ? `${Math.round(s * 1000)} ms` : `${s.toFixed(2)} s`;
}

// A visit's wall time: from its first attempt's start to its end (seconds; null when either is
// unknown). Times are read to the millisecond (Date.parse): a visit that ended within the
// millisecond it began took under one, not none, and shows "< 1 ms".
const UNDER_A_MS = 0.0001;
export const wall = (v) => (v.started != null && v.finished != null ? Math.max(v.finished - v.started, UNDER_A_MS)
  : null);

export function tokens(usage) {
  if (!usage || usage.input_tokens == null) return "";
  const reasoning = usage.reasoning_tokens ? ` (${usage.reasoning_tokens} reasoning)` : "";
  return `${usage.input_tokens} in / ${usage.output_tokens} out${reasoning}`;
}

export const Badge = ({ status }) => html`<span class=${`badge ${status}`} data-run-status=${status}>${status}</span>`;
