// liveforge web UI: one WebSocket to the gateway, the protocol of protocol-v1.json.
"use strict";

const $ = (id) => document.getElementById(id);
const state = { ws: null, next: 1, pending: new Map(), projects: [], project: null, session: null,
                running: null, reply: null, replyText: "", question: null, cards: new Map(),
                refreshing: null, again: false };
const CHECK_TOOLS = new Set(["verify", "run_tests"]);
const LIVE_TOOLS = new Set(["persist", "rollback", "reload", "patch", "patch_module", "apply_patch"]);
const OUTPUT_TOOLS = new Set(["exec", "execute", "process"]);  // their output is the point
const ARG_WIDTH = 48;

function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));
}

// Markdown for model answers: fenced code, inline code, bold, italics, headings, lists, links.
function markdown(text) {
  const parts = text.split(/```(\w*)\n?([\s\S]*?)(?:```|$)/);
  let html = "";
  for (let i = 0; i < parts.length; i += 3) {
    html += inline(parts[i]);
    if (i + 2 < parts.length) html += `<pre><code>${escapeHtml(parts[i + 2].replace(/\n$/, ""))}</code></pre>`;
  }
  return html;
}

// Lines of prose: paragraphs, headings and list items; no empty line at either end.
function inline(text) {
  const lines = escapeHtml(text.replace(/^\n+|\n+$/g, "")).split("\n");
  const out = [];
  let para = [];
  let list = [];
  const flush = () => {
    if (para.length) out.push(`<p>${para.join("<br>")}</p>`);
    if (list.length) out.push(`<ul>${list.map((l) => `<li>${l}</li>`).join("")}</ul>`);
    para = []; list = [];
  };
  for (const line of lines) {
    const out1 = line
      .replace(/`([^`]+)`/g, "<code>$1</code>")
      .replace(/\*\*([^*]+)\*\*/g, "<strong>$1</strong>")
      .replace(/(^|\W)\*([^*\s][^*]*)\*(?=\W|$)/g, "$1<em>$2</em>")
      .replace(/\[([^\]]+)\]\((https?:[^)\s]+)\)/g, '<a href="$2" rel="noopener">$1</a>');
    const heading = out1.match(/^(#{1,4}) (.*)$/);
    if (!line.trim()) { flush(); continue; }
    if (heading) { flush(); out.push(`<h${heading[1].length + 2}>${heading[2]}</h${heading[1].length + 2}>`); continue; }
    if (/^\s*[-*] /.test(out1)) { if (para.length) { out.push(`<p>${para.join("<br>")}</p>`); para = []; } list.push(out1.replace(/^\s*[-*] /, "")); continue; }
    if (list.length) flush();
    para.push(out1);
  }
  flush();
  return out.join("");
}

function diffHtml(diff) {
  return diff.replace(/\n$/, "").split("\n").map((line) => {
    const cls = line.startsWith("+++") || line.startsWith("---") ? "file"
      : line.startsWith("@@") ? "hunk" : line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : "";
    return `<span class="${cls}">${escapeHtml(line)}</span>`;
  }).join("\n");
}

// Tool arguments on one short line, as the terminal chat shows them: multi-line values as
// their line count, long values cut with an ellipsis.
function shortArguments(args) {
  return Object.entries(args || {}).map(([key, value]) => {
    let shown;
    if (typeof value === "string" && value.includes("\n")) shown = `<${value.split("\n").length} lines>`;
    else {
      shown = typeof value === "string" ? `'${value}'` : JSON.stringify(value);
      if (shown.length > ARG_WIDTH) shown = shown.slice(0, ARG_WIDTH - 1) + "…";
    }
    return `${key}=${shown}`;
  }).join(", ");
}

function request(type, fields = {}) {
  const id = String(state.next++);
  state.ws.send(JSON.stringify({ type, id, ...fields }));
  return new Promise((resolve, reject) => state.pending.set(id, { resolve, reject }));
}

// A request about the chosen project (a gateway may serve several).
function scoped(type, fields = {}) {
  return request(type, { project: state.project, ...fields });
}

function add(cls, html) {
  const greeting = $("log").querySelector(".greeting");
  if (greeting) greeting.remove();
  const div = document.createElement("div");
  div.className = cls;
  div.innerHTML = html;
  $("log").appendChild(div);
  $("log").scrollTop = $("log").scrollHeight;
  return div;
}

function greet() {
  const project = state.projects.find((p) => p.project === state.project) || {};
  const model = project.model ? ` with <code>${escapeHtml(project.model)}</code>` : "";
  const div = document.createElement("div");
  div.className = "greeting";
  div.innerHTML = `<h2>Hello — this is session <code>${escapeHtml(state.session)}</code> of `
    + `${escapeHtml(state.project)}${model}.</h2>`
    + "<p>Ask for a change to the running program. Each patch applies in memory at once and "
    + "shows here as a diff; checks run in a sandbox; files change only when the agent "
    + "persists (the gateway's permission mode says whether you are asked first). The live "
    + "program panel on the right shows every change of this session and its state.</p>";
  $("log").appendChild(div);
}

function checkLine(check) {
  const value = check.value !== null && check.value !== undefined ? ` · value ${check.value}` : "";
  return `${check.ok ? "✓" : "✗"} ${check.headline}${value}`;
}

function onEvent(event) {
  switch (event.type) {
    case "turn_started":
      state.reply = null; state.replyText = "";
      break;
    case "text_delta":
      if (!state.reply) state.reply = add("msg assistant", "");
      state.replyText += event.text;
      state.reply.innerHTML = markdown(state.replyText);
      break;
    case "tool_started":
      state.reply = null; state.replyText = "";
      add("tool", `→ ${escapeHtml(event.name)}<span class="args">(${escapeHtml(shortArguments(event.arguments))})</span>`);
      break;
    case "tool_finished": {
      const time = ` <span class="muted">${event.duration.toFixed(2)}s</span>`;
      let lines = event.summary.replace(/\n+$/, "").split("\n");
      if (OUTPUT_TOOLS.has(event.name) && lines[0].startsWith("$ ")) lines = lines.slice(1);  // shown in its call
      // a passing check's own line (with its value) follows as a verification event
      const said = CHECK_TOOLS.has(event.name) && !event.is_error ? "" : escapeHtml(lines[0]);
      const more = lines.length > 1 && OUTPUT_TOOLS.has(event.name)
        ? `<span class="output">${escapeHtml(lines.slice(1).join("\n"))}</span>` : "";
      add("tool" + (event.is_error ? " error" : ""), `← ${escapeHtml(event.name)}${time} ${said}${more}`);
      if (LIVE_TOOLS.has(event.name)) refreshProgram();
      break;
    }
    case "patch_applied": {
      const div = add("change", `<h3>${escapeHtml(event.change_id)} ${escapeHtml(event.target)} `
        + `<span class="status applied">in memory, not checked</span></h3><pre class="diff">${diffHtml(event.diff)}</pre>`);
      state.cards.set(event.change_id, div);
      refreshProgram();
      break;
    }
    case "verification":
      add("tool check " + (event.ok ? "ok" : "fail"), escapeHtml(checkLine(event)));
      refreshChecks();
      refreshProgram();
      break;
    case "error":
      add("error-line", `error: ${escapeHtml(event.message || "")}`);
      break;
    case "notice":
      add("tool", escapeHtml(event.text));
      break;
  }
}

function onStatus(message) {
  const active = message.status === "running" || message.status === "queued";
  state.running = active ? message.run : null;
  $("abort").disabled = !active;
  const where = message.status === "queued" && message.position ? ` (#${message.position} in line)` : "";
  $("status").textContent = message.status + where + (message.reason ? `: ${message.reason}` : "");
  if (!active) {
    // what the run did not do, one line per refused call (its reason on hover)
    for (const call of message.refused || []) {
      add("tool error refused", `not run: ${escapeHtml(call.tool)} — refused by ${escapeHtml(call.by)}`)
        .title = call.reason;
    }
    $("approval").hidden = true; state.question = null;
    refreshSessions();
    refreshProgram();
  }
}

function onMessage(raw) {
  const message = JSON.parse(raw.data);
  if (message.type === "result") {
    const waiter = state.pending.get(message.id);
    state.pending.delete(message.id);
    if (waiter) message.ok ? waiter.resolve(message.result) : waiter.reject(new Error(message.error.message));
    return;
  }
  if (message.project && message.project !== state.project) return;
  if (message.session && message.session !== state.session) return;
  if (message.type === "event") onEvent(message.event);
  else if (message.type === "run_status") onStatus(message);
  else if (message.type === "approval") {
    state.question = message.request;
    $("question").innerHTML = diffHtml(message.question);
    $("approval").hidden = false;
  }
}

// -- the live program panel ------------------------------------------------------------------

const LABELS = { applied: "in memory, not checked", verified: "verified", divergent: "divergent",
                 persisted: "persisted", rolled_back: "rolled back" };

function label(change) {
  if (change.state === "verified" && change.check) return `verified (${change.check.kind})`;
  if (change.state === "applied" && change.check && !change.check.ok) return `check failed (${change.check.kind})`;
  return LABELS[change.state] || change.state;
}

function badge(change) {
  const failed = change.state === "applied" && change.check && !change.check.ok;
  return `<span class="status ${failed ? "failed" : change.state}">${escapeHtml(label(change))}</span>`;
}

// Ask for the session's changes; a refresh asked for while one is under way runs after it.
async function refreshProgram() {
  if (state.refreshing) { state.again = true; return state.refreshing; }
  state.refreshing = (async () => {
    do {
      state.again = false;
      const session = state.session;
      try {
        const { modules } = await scoped("changes.list", { session });
        if (session === state.session) drawProgram(modules);
      } catch (error) {
        $("program-note").textContent = `could not read the live program: ${error.message}`;
      }
    } while (state.again);
    state.refreshing = null;
  })();
  return state.refreshing;
}

function drawProgram(modules) {
  const live = modules.flatMap((m) => m.changes).filter((c) => c.state !== "rolled_back");
  $("undo").disabled = live.length === 0;
  $("undo").title = live.length ? `roll back ${live[0].change} (${live[0].target})` : "nothing of this session to undo";
  $("program-note").textContent = modules.length
    ? `${live.length} change${live.length === 1 ? "" : "s"} in effect in ${modules.filter((m) => m.state !== "rolled_back").length} module(s)`
    : "Nothing changed yet: this session's patches show here, by module, as they happen.";
  $("modules").innerHTML = modules.map((m) => `<div class="module" data-module="${escapeHtml(m.module)}">`
    + `<h3><code>${escapeHtml(m.module)}</code>${badge(m.changes.find((c) => c.state !== "rolled_back") || { state: "rolled_back" })}</h3>`
    + `<p class="file">${escapeHtml(m.file || "(no file: a module made in memory)")}</p>`
    + (m.diff ? `<details><summary>memory vs file on disk</summary><pre class="diff">${diffHtml(m.diff)}</pre></details>`
      : `<p class="muted">memory and file agree</p>`)
    + `<ul>${m.changes.map((c) => changeItem(m.module, c)).join("")}</ul></div>`).join("");
  for (const button of $("modules").querySelectorAll("button[data-change]")) {
    button.onclick = () => undo(button.dataset.change);
  }
  for (const change of modules.flatMap((m) => m.changes)) {
    const card = state.cards.get(change.change);
    if (card) card.querySelector(".status").outerHTML = badge(change);
  }
}

function changeItem(module, change) {
  const target = change.target.startsWith(module + ".") ? change.target.slice(module.length + 1) : change.target;
  const check = change.check
    ? `<div class="last ${change.check.ok ? "ok" : "fail"}">last check: ${escapeHtml(checkLine(change.check))}</div>`
    : `<div class="last">no check has carried it yet</div>`;
  const undoable = change.state !== "rolled_back";
  return `<li data-change="${escapeHtml(change.change)}" data-state="${escapeHtml(change.state)}">`
    + `<div class="line"><b>${escapeHtml(change.change)}</b><span class="target" title="${escapeHtml(change.target)}">${escapeHtml(target)}</span>${badge(change)}`
    + (undoable ? `<button data-change="${escapeHtml(change.change)}" title="roll back this change and the later ones of its module">undo</button>` : "")
    + `</div>${check}<details><summary>diff of this change</summary><pre class="diff">${diffHtml(change.diff)}</pre></details></li>`;
}

// -- sessions and projects -------------------------------------------------------------------

async function refreshSessions() {
  const { sessions } = await scoped("sessions.list");
  const list = $("sessions");
  list.innerHTML = "";
  for (const s of sessions) {
    const li = document.createElement("li");
    li.textContent = `${s.session} — ${s.title}`;
    li.className = s.session === state.session ? "active" : "";
    li.onclick = () => openSession(s.session);
    list.appendChild(li);
  }
}

async function refreshChecks() {
  const { checks = [] } = await scoped("runs.list");
  $("checks").innerHTML = checks.slice(0, 20).map((c) =>
    `<li class="check ${c.ok ? "ok" : "fail"}" title="${escapeHtml(c.headline)}">${c.ok ? "✓" : "✗"} ${escapeHtml(c.kind)} ${escapeHtml(c.run_id.slice(-6))}</li>`).join("");
}

async function openSession(name) {
  state.session = name; state.cards = new Map(); state.reply = null; state.question = null;
  $("current").textContent = name;
  $("log").innerHTML = "";
  $("approval").hidden = true;
  $("status").textContent = ""; state.running = null; $("abort").disabled = true;
  await scoped("watch", { session: name });  // a run in progress says so, with its open questions
  try {
    const { messages } = await scoped("sessions.history", { session: name });
    for (const m of messages) {
      if (m.text) add("msg " + m.role, m.role === "assistant" ? markdown(m.text) : escapeHtml(m.text));
      for (const tool of m.tools) add("tool", `→ ${escapeHtml(tool)}`);
    }
  } catch (error) { /* a new session has no history yet */ }
  if (!$("log").children.length) greet();
  refreshSessions();
  await refreshProgram();
}

async function send() {
  const text = $("input").value.trim();
  if (!text || !state.session) return;
  $("input").value = "";
  add("msg user", escapeHtml(text));
  const key = `${state.session}-${Date.now()}-${Math.random().toString(36).slice(2)}`;
  await scoped("run", { session: state.session, input: text, idempotency_key: key });
}

async function undo(change = "") {
  if (!state.session) return;
  try {
    const { undone } = await scoped("changes.undo", { session: state.session, change });
    for (const u of undone) {
      add("tool", `↶ rolled back ${escapeHtml(u.change)} ${escapeHtml(u.target)}`);
      for (const note of u.notes || []) add("tool", `note: ${escapeHtml(note)}`);
    }
  } catch (error) {
    add("tool error", escapeHtml(error.message));
  }
  await refreshProgram();
}

function refreshProjects() {
  const list = $("projects");
  list.innerHTML = "";
  for (const p of state.projects) {
    const li = document.createElement("li");
    li.textContent = p.project;
    li.title = p.path;
    li.className = p.project === state.project ? "active" : "";
    li.onclick = () => openProject(p.project);
    list.appendChild(li);
  }
}

async function openProject(name) {
  state.project = name;
  const project = state.projects.find((p) => p.project === name);
  $("project").textContent = project.path;
  $("model").textContent = project.model ? `model ${project.model}` : "";
  refreshProjects();
  await refreshSessions();
  await refreshChecks();
  const first = $("sessions").firstChild;
  await openSession(first ? first.textContent.split(" — ")[0] : "main");
}

async function answer(allow) {
  $("approval").hidden = true;
  try {
    await request(allow ? "approve" : "deny", { request: state.question });
  } catch (error) {
    add("tool error", escapeHtml(error.message));
  }
}

function connect() {
  const token = new URLSearchParams(location.hash.slice(1)).get("token") || "";
  state.ws = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws`);
  state.ws.onmessage = onMessage;
  state.ws.onclose = () => { $("status").textContent = "disconnected — reload to reconnect"; };
  state.ws.onopen = async () => {
    const hello = await request("connect", { token, client: "web" });
    state.projects = hello.projects;
    await openProject(hello.projects[0].project);
    document.body.dataset.ready = "yes";
  };
}

function newline(textarea) {
  textarea.setRangeText("\n", textarea.selectionStart, textarea.selectionEnd, "end");
}

$("prompt").onsubmit = (e) => { e.preventDefault(); send(); };
// Enter sends; Alt-Enter (as in the terminal chat) or Shift-Enter adds a line.
$("input").onkeydown = (e) => {
  if (e.key !== "Enter") return;
  if (e.altKey) { e.preventDefault(); newline(e.target); }
  else if (!e.shiftKey) { e.preventDefault(); send(); }
};
$("new-session").onsubmit = (e) => { e.preventDefault(); openSession($("session-name").value); $("session-name").value = ""; };
$("abort").onclick = () => state.running && request("abort", { run: state.running });
$("undo").onclick = () => undo();
$("approve").onclick = () => answer(true);
$("deny").onclick = () => answer(false);
connect();
