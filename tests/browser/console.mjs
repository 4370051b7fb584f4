// The console as a person uses it, in Debian's headless Chromium (no browser download):
// tests/console_browser.rs makes the sessions, starts `planlock serve` and runs this with
//   CONSOLE_URL, CONSOLE_TOKEN, PLANLOCK_BIN, SESSIONS_DIR, POLICY_ROOT, REVIEWED_PLAN,
//   SCREENSHOTS (a directory for the three pages' screenshots), CHROMIUM (its path).
// It prints one line per check and exits non-zero at the first that fails.
import { execFileSync } from "node:child_process";
import assert from "node:assert/strict";
import { chromium } from "playwright-core";

const env = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};
const url = env("CONSOLE_URL").replace(/\/$/, "");
const shots = env("SCREENSHOTS");

/** `planlock run` on one session root: its exit code. */
function run(session) {
  try {
    execFileSync(env("PLANLOCK_BIN"), ["run", "--root", session, "--policy-root", env("POLICY_ROOT"), env("REVIEWED_PLAN")], {
      cwd: env("SESSIONS_DIR"),
      stdio: "ignore",
    });
    return 0;
  } catch (e) {
    return e.status;
  }
}

const ok = (what) => console.log(`ok: ${what}`);

const browser = await chromium.launch({
  executablePath: env("CHROMIUM"),
  args: [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    // Looks nothing up but the console.
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
  ],
});
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  // Anything a plan string could make run would show up here: an alert, a console error from
  // a blocked inline script, an exception.
  const ran = [];
  page.on("dialog", (d) => {
    ran.push(`dialog: ${d.message()}`);
    d.dismiss();
  });
  page.on("pageerror", (e) => ran.push(`error: ${e.message}`));
  page.on("console", (m) => m.type() === "error" && ran.push(`console: ${m.text()}`));

  // Signing in.
  await page.goto(`${url}/inbox`);
  assert.match(page.url(), /\/login$/);
  await page.fill("input[name=token]", "not the token at all");
  await page.fill("input[name=name]", "ada");
  await page.click("button[type=submit]");
  assert.match(await page.textContent("p.error"), /not the console's token/);
  await page.fill("input[name=token]", env("CONSOLE_TOKEN"));
  await page.fill("input[name=name]", "ada");
  await page.click("button[type=submit]");
  assert.match(page.url(), /\/inbox$/);
  assert.match(await page.title(), /^\(3\) Inbox/);
  // The refused sign-in's 401 is the one error so far.
  assert.deepEqual(ran, ["console: Failed to load resource: the server responded with a status of 401 (Unauthorized)"]);
  ran.length = 0;
  ok("signed in; the inbox's title counts 3 pending");
  await page.screenshot({ path: `${shots}/console-inbox.png`, fullPage: false });

  // What is being approved, shown as text; hovering and clicking around runs nothing.
  const hostile = page.locator(".pause", { hasText: "onerror=alert(3)" });
  const shown = await hostile.locator("pre.shown").textContent();
  assert.ok(shown.includes("<script>alert(1)</script>"), shown);
  assert.ok(shown.includes('\\"onmouseover=alert(2)'), shown);
  assert.ok(shown.includes("\\u001b[31m") && shown.includes("\\u{202e}evil"), shown);
  assert.equal(await page.locator("pre.shown script, pre.shown img").count(), 0);
  await hostile.locator("pre.shown").hover();
  await hostile.locator("code").first().hover();
  await hostile.locator("a").first().hover();
  assert.deepEqual(ran, []);
  ok("a plan string with <script>, \"onmouseover=, ESC and U+202E shows as text and runs nothing");

  // Approving with a reason records the decision; the session's next run completes.
  const review = page.locator(".pause", { has: page.locator('a[href="/sessions/review"]') });
  await review.locator("form.approve input[name=reason]").fill("checked: no personal data");
  await review.locator("form.approve button").click();
  assert.match(await page.textContent("p.notice"), /Recorded: approve on review/);
  assert.match(await page.title(), /^\(2\) Inbox/);
  ok("approved from the inbox; 2 pending");
  assert.equal(run("review"), 0);
  await page.goto(`${url}/sessions/review`);
  const cycle = page.locator("section.cycle.completed").first();
  assert.match(await cycle.locator("h3").textContent(), /Cycle 1\s+completed/);
  assert.match(await cycle.textContent(), /Approved at remember by ada: checked: no personal data/);
  const statuses = await cycle.locator("tbody tr td:nth-child(3)").allTextContents();
  assert.ok(statuses.length >= 2 && statuses.every((s) => s === "completed"), statuses.join());
  const paused = page.locator("section.cycle.paused").first();
  const steps = await paused.locator("tbody tr").count();
  assert.ok(steps >= 8, `the paused cycle lists its ${steps} steps`);
  assert.match(await page.textContent("main"), /decided\s*1/);
  ok(`the session's next run completed it; its page shows the cycle with every step (${steps} before the pause)`);
  await page.screenshot({ path: `${shots}/console-session.png`, fullPage: false });

  // Rejecting: the next run abandons the cycle.
  await page.goto(`${url}/inbox`);
  const other = page.locator(".pause", { has: page.locator('a[href="/sessions/other"]') });
  await other.locator("form.reject input[name=reason]").fill("not this one");
  await other.locator("form.reject button").click();
  assert.match(await page.textContent("p.notice"), /Recorded: reject on other/);
  assert.equal(run("other"), 1);
  await page.goto(`${url}/sessions/other`);
  assert.match(await page.textContent("main"), /abandoned/);
  ok("rejected from the inbox; the next run abandoned the cycle");

  // Sessions: paused first, filterable. Over a directory the page is read from a snapshot at
  // most a few seconds old: the runs above were another process's, so it is read until it
  // shows them (10 s at most).
  let ready = [];
  for (const started = Date.now(); Date.now() - started < 10000; await page.waitForTimeout(200)) {
    await page.goto(`${url}/sessions`);
    const first = await page.locator("tbody tr").first().locator("td:nth-child(3)").textContent();
    assert.equal(first, "paused");
    await page.click("a[href='/sessions?status=ready']");
    ready = await page.locator("tbody tr td:nth-child(3)").allTextContents();
    if (ready.length === 3) break;
  }
  assert.ok(ready.length === 3 && ready.every((s) => s === "ready"), ready.join());
  // Each session's id beside its name: what its traces carry as session.id.
  const ids = await page.locator("tbody tr td:nth-child(2)").allTextContents();
  assert.ok(ids.every((id) => /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(id)), ids.join());
  ok("sessions: paused first; the ready filter lists the 3 ready ones");
  await page.goto(`${url}/sessions`);
  await page.screenshot({ path: `${shots}/console-sessions.png`, fullPage: false });

  // A POST without the form's token, or from another origin, is refused (with the login's cookie).
  const csrf = await page.request.post(`${url}/inbox/review/approve`, {
    headers: { Origin: url },
    form: { reason: "no token", digest: "0".repeat(64) },
    maxRedirects: 0,
  });
  assert.equal(csrf.status(), 403);
  const inbox = await page.goto(`${url}/inbox`);
  const token = await page.locator("input[name=csrf]").first().getAttribute("value");
  const foreign = await page.request.post(`${url}/inbox/${encodeURIComponent("x")}/approve`, {
    headers: { Origin: "http://evil.example" },
    form: { csrf: token, reason: "from elsewhere" },
    maxRedirects: 0,
  });
  assert.equal(foreign.status(), 403);
  assert.equal(inbox.headers()["content-security-policy"].startsWith("default-src 'none'"), true);
  ok("a POST without the CSRF token or from another origin is refused");
  assert.deepEqual(ran, []);
  ok("nothing ran in the page");
} finally {
  await browser.close();
}
