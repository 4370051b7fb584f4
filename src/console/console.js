// planlock console: relative times kept fresh, and the pages live (CONTRACT §15). Served from
// /static (the CSP allows no inline script); every page works without it.
"use strict";
function ago(seconds) {
  if (seconds < 60) return Math.max(0, Math.floor(seconds)) + " s ago";
  if (seconds < 3600) return Math.floor(seconds / 60) + " min ago";
  if (seconds < 86400) return Math.floor(seconds / 3600) + " h ago";
  return Math.floor(seconds / 86400) + " d ago";
}
function refresh() {
  for (const t of document.querySelectorAll("time[datetime]")) {
    if (!t.textContent.endsWith(" ago")) continue;
    const at = Date.parse(t.getAttribute("datetime"));
    if (!Number.isNaN(at)) t.textContent = ago((Date.now() - at) / 1000);
  }
}
// Whether the person is writing: a reason typed, or a field in use. Their page is then not
// replaced; a note says it changed.
function writing() {
  const active = document.activeElement;
  if (active && active.matches("textarea, input:not([type=hidden]), select")) return true;
  // A reason written (or kept from a refusal), or a text changed (an edit's payload comes filled
  // in: only a change counts).
  return [...document.querySelectorAll("textarea")].some(
    (t) => t.value !== t.defaultValue || (t.name === "reason" && t.value.trim() !== ""),
  );
}
// The page read again and its main part put in place of this one's (the server escaped it).
async function reload() {
  if (writing()) {
    if (!document.querySelector(".live-note")) {
      const note = document.createElement("p");
      note.className = "live-note";
      note.append("This page changed since it was shown: ");
      const link = document.createElement("a");
      link.href = location.href;
      link.textContent = "reload";
      note.append(link);
      document.querySelector("main").append(note);
    }
    return;
  }
  const answer = await fetch(location.href, { credentials: "same-origin", headers: { Accept: "text/html" } });
  // A pause's page answers 404 once the pause ended: its page then says what became of it (the
  // approved step ran, and the cycle's outcome).
  if (answer.redirected || !(answer.ok || answer.status === 404)) return;
  const page = new DOMParser().parseFromString(await answer.text(), "text/html");
  const main = page.querySelector("main");
  if (!main) return;
  document.querySelector("main").replaceWith(document.adoptNode(main));
  document.title = page.title;
  refresh();
}
function live() {
  if (!document.body.hasAttribute("data-live") || !window.EventSource) return;
  let version = null;
  const events = new EventSource("/events");
  events.addEventListener("pulse", (e) => {
    const pulse = JSON.parse(e.data);
    for (const count of document.querySelectorAll("[data-pending]")) {
      count.textContent = String(pulse.pending);
      count.classList.toggle("none", pulse.pending === 0);
    }
    if (version !== null && version !== pulse.version) reload();
    version = pulse.version;
  });
}
document.addEventListener("DOMContentLoaded", () => { refresh(); setInterval(refresh, 30000); live(); });
