// liveforge web UI: one WebSocket to the gateway, the protocol of protocol-v1.json.
"use strict";

const $ = (id) => document.getElementById(id);
const state = { ws: null, next: 1, pending: new Map(), projects: [], project: null, session: null,
                running: null, reply: null, replyText: "", question: null, changes: [] };

function escapeHtml(text) {
  return text.replace(/[&<>"']/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));
}

// Markdown for model answers: fenced code, inline code, bold, italics, headings, lists, links.
function markdown(text) {
  const parts = text.split(/```(\w*)\n?([\s\S]*?)(?:```|$)/);
  let html = "";
  for (let i = 0; i < parts.length; i += 3) {
    html += inline(parts[i]);
    if (i + 2 < parts.length) html += `<pre><code>${escapeHtml(parts[i + 2])}</code></pre>`;
  }
  return html;
}

function inline(text) {
  return escapeHtml(text).split("\n").map((line) => {
    let out = line
      .replace(/`([^`]+)`/g, "<code>$1</code>")
      .replace(/\*\*([^*]+)\*\*/g, "<strong>$1</strong>")
      .replace(/(^|\W)\*([^*]+)\*(?=\W|$)/g, "$1<em>$2</em>")
      .replace(/\[([^\]]+)\]\((https?:[^)\s]+)\)/g, '<a href="$2" rel="noopener">$1</a>');
    const heading = out.match(/^(#{1,4}) (.*)$/);
    if (heading) return `<h${heading[1].length + 2}>${heading[2]}</h${heading[1].length + 2}>`;
    if (/^\s*[-*] /.test(out)) return `<li>${out.replace(/^\s*[-*] /, "")}</li>`;
    return out + "<br>";
  }).join("");
}

function diffHtml(diff) {
  return diff.split("\n").map((line) => {
    const cls = line.startsWith("@@") ? "hunk" : line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : "";
    return `<span class="${cls}">${escapeHtml(line)}</span>`;
  }).join("\n");
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
  const div = document.createElement("div");
  div.className = cls;
  div.innerHTML = html;
  $("log").appendChild(div);
  $("log").scrollTop = $("log").scrollHeight;
  return div;
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
      add("tool", `→ ${escapeHtml(event.name)} ${escapeHtml(JSON.stringify(event.arguments).slice(0, 120))}`);
      break;
    case "tool_finished":
      add("tool" + (event.is_error ? " error" : ""), `← ${escapeHtml(event.summary.split("\n")[0])}`);
      if (event.name === "persist" && !event.is_error) {
        for (const div of state.changes) {
          div.querySelector(".status").textContent = "persisted";
          div.querySelector(".status").className = "status verified";
        }
      }
      break;
    case "patch_applied": {
      const div = add("change", `<h3>${escapeHtml(event.change_id)} ${escapeHtml(event.target)} `
        + `<span class="status">in memory, not checked</span></h3><pre class="diff">${diffHtml(event.diff)}</pre>`);
      state.changes.push(div);
      break;
    }
    case "verification": {
      add("tool check " + (event.ok ? "ok" : "fail"), `${event.ok ? "✓" : "✗"} ${escapeHtml(event.kind)}: ${escapeHtml(event.headline)}`);
      for (const div of state.changes) {
        const badge = div.querySelector(".status");
        badge.textContent = event.ok ? `verified (${event.kind})` : `check failed (${event.kind})`;
        badge.className = "status " + (event.ok ? "verified" : "failed");
      }
      refreshChecks();
      break;
    }
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
  if (!active) refreshSessions();
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
    $("question").textContent = message.question;
    $("approval").hidden = false;
  }
}

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
  state.session = name; state.changes = []; state.reply = null;
  $("current").textContent = name;
  $("log").innerHTML = "";
  $("status").textContent = ""; state.running = null; $("abort").disabled = true;
  await scoped("watch", { session: name });
  try {
    const { messages } = await scoped("sessions.history", { session: name });
    for (const m of messages) {
      if (m.text) add("msg " + m.role, m.role === "assistant" ? markdown(m.text) : escapeHtml(m.text));
      for (const tool of m.tools) add("tool", `→ ${escapeHtml(tool)}`);
    }
  } catch (error) { /* a new session has no history yet */ }
  refreshSessions();
}

async function send() {
  const text = $("input").value.trim();
  if (!text || !state.session) return;
  $("input").value = "";
  add("msg user", escapeHtml(text));
  const key = `${state.session}-${Date.now()}-${Math.random().toString(36).slice(2)}`;
  await scoped("run", { session: state.session, input: text, idempotency_key: key });
}

async function undo() {
  if (!state.session) return;
  try {
    const { undone } = await scoped("changes.undo", { session: state.session });
    for (const u of undone) add("tool", `↶ rolled back ${escapeHtml(u.change)} ${escapeHtml(u.target)}`);
  } catch (error) {
    add("tool error", escapeHtml(error.message));
  }
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
  $("project").textContent = state.projects.find((p) => p.project === name).path;
  refreshProjects();
  await refreshSessions();
  await refreshChecks();
  const first = $("sessions").firstChild;
  await openSession(first ? first.textContent.split(" — ")[0] : "main");
}

async function answer(allow) {
  $("approval").hidden = true;
  await request(allow ? "approve" : "deny", { request: state.question });
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

$("prompt").onsubmit = (e) => { e.preventDefault(); send(); };
$("input").onkeydown = (e) => { if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); send(); } };
$("new-session").onsubmit = (e) => { e.preventDefault(); openSession($("session-name").value); $("session-name").value = ""; };
$("abort").onclick = () => state.running && request("abort", { run: state.running });
$("undo").onclick = () => undo();
$("approve").onclick = () => answer(true);
$("deny").onclick = () => answer(false);
connect();
