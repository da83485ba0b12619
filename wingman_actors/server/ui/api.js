// Calls to the server: JSON, and server-sent events read with fetch (so the token can be
// sent as the server expects it: `Authorization: Bearer <token>`). Every POST says its body
// is JSON, as the server requires of every request that changes something.
const KEY = "wingman-actors-token";
let asking = null;

function headers(extra = {}) {
  const token = sessionStorage.getItem(KEY);
  return token ? { ...extra, Authorization: `Bearer ${token}` } : extra;
}

// Show the token form once; resolves when the user has given a token.
function askToken(message) {
  if (asking) return asking;
  const form = document.getElementById("token-form");
  document.getElementById("token-error").textContent = message;
  form.hidden = false;
  form.elements.token.focus();
  asking = new Promise((resolve) => {
    form.onsubmit = (e) => {
      e.preventDefault();
      sessionStorage.setItem(KEY, form.elements.token.value.trim());
      form.hidden = true;
      asking = null;
      resolve();
    };
  });
  return asking;
}

export class ApiError extends Error {
  constructor(status, body) {
    super(body?.error || `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

async function call(path, init = {}) {
  for (;;) {
    const response = await fetch(path, { ...init, headers: headers(init.headers) });
    if (response.status !== 401) return response;
    const had = sessionStorage.getItem(KEY);
    await askToken(had ? "That token was refused; try again." : "");
  }
}

async function parsed(response) {
  const body = await response.json().catch(() => null);
  if (!response.ok) throw new ApiError(response.status, body);
  return body;
}

export const getJSON = async (path) => parsed(await call(path));

export const postJSON = async (path, body = {}) =>
  parsed(await call(path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) }));

// Read an SSE response, calling onEvent(name, data) per event; resolves when it ends.
export async function events(path, onEvent, { method = "GET", body, signal } = {}) {
  const init = { method, signal };
  if (method !== "GET") {
    init.headers = { "Content-Type": "application/json" };
    init.body = JSON.stringify(body ?? {});
  }
  const response = await call(path, init);
  if (!response.ok) await parsed(response);
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      let name = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) name = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).trimStart());
      }
      if (data.length) onEvent(name, JSON.parse(data.join("\n")));
    }
  }
}

// Text typed in a field: JSON when it parses, else the text itself.
export function valueOf(text) {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
