// planlock console: relative times kept fresh. Served from /static (the CSP allows no inline
// script); the pages work without it.
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
document.addEventListener("DOMContentLoaded", () => { refresh(); setInterval(refresh, 30000); });
