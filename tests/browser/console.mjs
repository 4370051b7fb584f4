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
function run(session, ...extra) {
  try {
    execFileSync(env("PLANLOCK_BIN"), ["run", "--root", session, ...extra, "--policy-root", env("POLICY_ROOT"), env("REVIEWED_PLAN")], {
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
  assert.match(page.url(), /\/login\?next=%2Finbox$/);
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
  // One row per pause, each linking to its own page.
  assert.equal(await page.locator("tr[data-row]").count(), 3);
  const links = await page.locator("tr[data-row] td:first-child a").evaluateAll((as) => as.map((a) => a.getAttribute("href")));
  assert.ok(links.every((h) => /^\/inbox\/[^/]+\/1\/remember$/.test(h)), links.join());
  await page.screenshot({ path: `${shots}/console-inbox.png`, fullPage: false });
  // The first row is reachable with three Tab presses (the navigation's two links, then it).
  await page.locator("body").focus();
  for (let i = 0; i < 3; i++) await page.keyboard.press("Tab");
  assert.equal(
    await page.evaluate(() => document.activeElement === document.querySelector("tr[data-row] a")),
    true,
    await page.evaluate(() => document.activeElement.outerHTML),
  );
  ok("a row per pause, each with its own page's link; the first row three Tab presses away");

  // Filters and search, as GET parameters a link carries.
  await page.fill("input[name=q]", "other");
  await page.click("form.filters button");
  assert.match(page.url(), /[?&]q=other/);
  assert.equal(await page.locator("tr[data-row]").count(), 1);
  await page.goto(`${url}/inbox?state=expired`);
  assert.equal(await page.locator("tr[data-row]").count(), 0);
  assert.match(await page.textContent("p.empty"), /No pause matches/);
  await page.goto(`${url}/inbox?stepType=PersistMemory&state=waiting&olderThan=0s&order=newest`);
  assert.equal(await page.locator("tr[data-row]").count(), 3);
  await page.goto(`${url}/inbox?stepType=LLMCall`);
  assert.equal(await page.locator("tr[data-row]").count(), 0);
  await page.goto(`${url}/inbox`);
  await page.selectOption("select[name=validator]", "demo-review");
  await page.click("form.filters button");
  assert.match(page.url(), /validator=demo-review/);
  assert.equal(await page.locator("tr[data-row]").count(), 3);
  await page.goto(`${url}/inbox?validator=someone-else`);
  assert.equal(await page.locator("tr[data-row]").count(), 0);
  ok("filters (validator, state, stepType, olderThan, order) and search narrow the rows");

  // A result is shown only when the server made it: text in the URL is never shown as one.
  await page.goto(`${url}/inbox?flash=Recorded%3A%20approve%20on%20everything`);
  assert.equal(await page.locator("p.flash.ok").count(), 0);
  await page.goto(`${url}/inbox?notice=Recorded%3A%20approve%20on%20everything`);
  assert.equal(await page.locator("p.flash.ok").count(), 0);
  assert.match(await page.textContent("p.flash.error"), /not a filter/);
  // That page's 400 is the one error so far.
  assert.deepEqual(ran, ["console: Failed to load resource: the server responded with a status of 400 (Bad Request)"]);
  ran.length = 0;
  ok("a flash cannot be forged from the URL");

  // What is being approved, shown as text; hovering and clicking around runs nothing.
  await page.goto(`${url}/inbox`);
  await page.locator("tr[data-row]", { hasText: "onerror=alert(3)" }).locator("a").first().click();
  const shown = await page.locator("pre.shown").first().textContent();
  assert.ok(shown.includes("<script>alert(1)</script>"), shown);
  assert.ok(shown.includes('\\"onmouseover=alert(2)'), shown);
  assert.ok(shown.includes("\\u001b[31m") && shown.includes("\\u{202e}evil"), shown);
  assert.equal(await page.locator("pre.shown script, pre.shown img").count(), 0);
  await page.locator("pre.shown").first().hover();
  await page.locator("h1 code").first().hover();
  assert.deepEqual(ran, []);
  ok("a plan string with <script>, \"onmouseover=, ESC and U+202E shows as text and runs nothing");

  // Approving with the keyboard alone: Tab to the reason, type it, Tab to the button, Enter.
  await page.goto(`${url}/inbox`);
  await page.locator("tr[data-row]", { hasText: "review" }).locator("a").first().click();
  await page.screenshot({ path: `${shots}/console-pause.png`, fullPage: false });
  let focused = "";
  for (let i = 0; i < 60 && focused !== "reason"; i++) {
    await page.keyboard.press("Tab");
    focused = await page.evaluate(() => document.activeElement && document.activeElement.id);
  }
  assert.equal(focused, "reason");
  // One form: one reason, and a button for each verdict that may be taken.
  assert.equal(await page.locator("form.decide").count(), 1);
  assert.equal(await page.locator("form.decide textarea").count(), 1);
  assert.deepEqual(await page.locator("form.decide button").allTextContents(), ["Approve", "Reject", "Abandon"]);
  await page.keyboard.type("checked: no personal data");
  await page.keyboard.press("Tab");
  assert.equal(await page.evaluate(() => document.activeElement.textContent), "Approve");
  await page.keyboard.press("Enter");
  await page.waitForURL(/\/inbox\?flash=[0-9a-f]+#p-[0-9a-f]{16}$/);
  assert.match(await page.textContent("p.flash.ok"), /Recorded: approve on review at step remember/);
  assert.match(await page.title(), /^\(2\) Inbox/);
  // Decided, it waits for no one: it left "waiting for me"; every pause shows it on its way, green.
  const anchor = new URL(page.url()).hash.slice(1);
  assert.equal(await page.locator(`tr#${anchor}`).count(), 0);
  await page.goto(`${url}/inbox?show=all`);
  assert.equal(await page.locator(`tr#${anchor} .status.approved`).textContent(), "approved (unverified name) — running");
  const green = await page.locator(`tr#${anchor} .status`).evaluate((e) => getComputedStyle(e).backgroundColor);
  assert.equal(green, "rgb(6, 118, 71)");
  await page.goBack();
  await page.reload();
  assert.equal(await page.locator("p.flash").count(), 0, "shown once");
  ok("approved with the keyboard alone; the inbox returns to the row, the result shown once");

  assert.equal(run("review"), 0);
  await page.goto(`${url}/sessions/review`);
  assert.equal(await page.locator("section.cycle").count(), 1, "the resumed cycle once");
  const cycle = page.locator("section.cycle.completed").first();
  assert.match(await cycle.locator("h3").textContent(), /Cycle 1\s+completed/);
  const timeline = await cycle.locator("ol.timeline").textContent();
  assert.match(timeline, /paused at remember \(PersistMemory\) by demo-review/);
  assert.match(timeline, /approved by ada \(unverified name\): checked: no personal data/);
  assert.match(await cycle.textContent(), /remember \(PersistMemory\)/);
  ok("the session's next run completed it; its page shows the cycle once, its pause and decision inside");
  await page.screenshot({ path: `${shots}/console-session.png`, fullPage: false });

  // Rejecting: the next run abandons the cycle; the pause that comes back says so.
  await page.goto(`${url}/inbox?q=other`);
  await page.locator("tr[data-row] a").first().click();
  await page.fill("form.decide textarea", "not this one");
  await page.click("form.decide button.reject");
  assert.match(await page.textContent("p.flash.ok"), /Recorded: reject on other/);
  assert.equal(run("other"), 1);
  assert.equal(run("other"), 4, "paused again");
  await page.goto(`${url}/inbox?q=other`);
  await page.locator("tr[data-row] a").first().click();
  assert.match(await page.textContent("ul.earlier"), /rejected by ada \(unverified name\): not this one \(an earlier pause\)/);
  await page.goto(`${url}/sessions/other`);
  assert.match(await page.textContent("section.cycle"), /abandoned/);
  ok("rejected: the cycle is abandoned, and the pause that came back names the rejection");

  // An expired pause offers Abandon alone; abandoning it is recorded, and its run ends it.
  assert.equal(run("expiring", "--approval-ttl", "1s"), 4);
  await page.waitForTimeout(2600);
  await page.goto(`${url}/inbox?state=expired`);
  assert.equal(await page.locator("tr[data-row]").count(), 0, "an expired pause waits for no one");
  await page.goto(`${url}/inbox?state=expired&show=all`);
  assert.equal(await page.locator("tr[data-row]").count(), 1);
  await page.locator("tr[data-row] a").first().click();
  assert.deepEqual(await page.locator("form.decide button").allTextContents(), ["Abandon"]);
  await page.fill("form.decide textarea", "too late to judge");
  await page.click("form.decide button.abandon");
  assert.match(await page.textContent("p.flash.ok"), /Recorded: abandon on expiring/);
  assert.equal(run("expiring"), 1, "abandoned at its run");
  ok("an expired pause offers Abandon, and only that");

  // Live: a pause another process makes appears without a reload.
  await page.goto(`${url}/inbox`);
  await page.waitForTimeout(1500);
  const loaded = page.url();
  assert.equal(run("late"), 4);
  await page.locator("tr[data-row]", { hasText: "late" }).waitFor({ timeout: 5000 });
  assert.equal(page.url(), loaded, "no navigation");
  // The count is the rows waiting for this person: what "waiting for me" lists.
  const waiting = await page.locator("tr[data-row]").count();
  assert.equal(await page.textContent("nav [data-pending]"), String(waiting));
  assert.equal(await page.locator("tr[data-row] .status.waiting").count(), waiting);
  ok("a pause made by another process appears live, without a reload");

  // Sessions: paused first, filterable, searchable.
  await page.goto(`${url}/sessions`);
  assert.equal(await page.locator("tbody tr").first().locator("td:nth-child(3)").textContent(), "paused");
  await page.click("a[href='/sessions?status=ready']");
  const ready = await page.locator("tbody tr td:nth-child(3)").allTextContents();
  assert.ok(ready.length >= 2 && ready.every((s) => s === "ready"), ready.join());
  const ids = await page.locator("tbody tr td:nth-child(2)").allTextContents();
  assert.ok(ids.every((id) => /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(id)), ids.join());
  await page.goto(`${url}/sessions?q=CAL`);
  assert.deepEqual(await page.locator("tbody tr td:first-child").allTextContents(), ["calm"]);
  ok("sessions: paused first; the ready filter and the search");
  await page.goto(`${url}/sessions`);
  await page.screenshot({ path: `${shots}/console-sessions.png`, fullPage: false });

  // The first page after 30 s idle is current: a pause another process made a moment before the
  // request is in it (a snapshot older than 2 s is read again before the answer).
  await page.goto("about:blank");
  await page.waitForTimeout(30000);
  execFileSync("cp", ["-a", `${env("SESSIONS_DIR")}/late`, `${env("SESSIONS_DIR")}/made-while-idle`]);
  await page.goto(`${url}/inbox`);
  assert.equal(await page.locator("tr[data-row]", { hasText: "made-while-idle" }).count(), 1);
  ok("the first page after 30 s idle shows a pause made a moment before");

  // At a phone's width nothing scrolls sideways and the buttons are on screen; dark mode.
  await page.setViewportSize({ width: 390, height: 844 });
  for (const path of ["/inbox", "/inbox?show=all", "/sessions", "/sessions/review"]) {
    await page.goto(`${url}${path}`);
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(width <= 390, `${path} is ${width} px wide`);
  }
  // The rows are cards: the tallest is short, and no cell's text is cut or runs past its card.
  for (const path of ["/inbox?show=all", "/sessions"]) {
    await page.goto(`${url}${path}`);
    const measured = await page.evaluate(() => {
      const rows = [...document.querySelectorAll("main tbody tr")];
      const tallest = Math.max(...rows.map((r) => r.getBoundingClientRect().height));
      const overflow = Math.max(...[...document.querySelectorAll("main tbody td")].map((c) => c.scrollWidth - c.clientWidth));
      const widest = Math.max(...rows.map((r) => r.getBoundingClientRect().right));
      return { rows: rows.length, tallest, overflow, widest };
    });
    assert.ok(measured.rows >= 3 && measured.tallest <= 220, `${path}: ${JSON.stringify(measured)}`);
    assert.ok(measured.overflow <= 1 && measured.widest <= 390, `${path}: ${JSON.stringify(measured)}`);
    console.log(`measured at 390 px: ${path} ${JSON.stringify(measured)}`);
  }
  await page.goto(`${url}/inbox?show=all`);
  await page.screenshot({ path: `${shots}/console-inbox-390.png`, fullPage: false });
  await page.goto(`${url}/inbox?q=late`);
  await page.locator("tr[data-row] a").first().click();
  // Measured on the pause's page once it is there (not the inbox the click leaves).
  await page.waitForURL(/\/inbox\/[^/?]+\/\d+\//);
  await page.waitForLoadState();
  assert.ok((await page.evaluate(() => document.documentElement.scrollWidth)) <= 390);
  for (const button of await page.locator("form.decide button").all()) {
    const box = await button.boundingBox();
    assert.ok(box && box.x >= 0 && box.x + box.width <= 390, JSON.stringify(box));
  }
  await page.screenshot({ path: `${shots}/console-pause-390.png`, fullPage: false });
  await page.emulateMedia({ colorScheme: "dark" });
  const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  const [r, g, b] = bg.match(/\d+/g).map(Number);
  assert.ok(r + g + b < 120, bg);
  await page.emulateMedia({ colorScheme: "light" });
  await page.setViewportSize({ width: 1280, height: 900 });
  ok("at 390 px nothing scrolls sideways and the buttons are on screen; dark mode is honoured");

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

  // Live after a decision: the pause's page says "approved — running", then, when the step ran,
  // the cycle's outcome, without a reload.
  await page.goto(`${url}/inbox?q=late`);
  await page.locator("tr[data-row] a").first().click();
  await page.waitForURL(/\/inbox\/late\/\d+\//);
  const pauseUrl = page.url().split("?")[0];
  await page.fill("form.decide textarea", "fine");
  await page.click("form.decide button.approve");
  await page.goto(pauseUrl);
  assert.match(await page.textContent("[data-state]"), /^approved \(unverified name\) — running$/);
  await page.waitForTimeout(1500);
  assert.equal(run("late"), 0);
  await page.locator("[data-outcome]").waitFor({ timeout: 6000 });
  assert.equal(await page.textContent("[data-outcome]"), "completed");
  assert.match(await page.textContent("main"), /approved by `ada` \(unverified name\).*acted on by cycle \d+, which completed/);
  assert.equal(page.url(), pauseUrl, "no navigation");
  // The ended pause's page is a 404 (it waits no more): the one error of this part.
  assert.deepEqual(ran, ["console: Failed to load resource: the server responded with a status of 404 (Not Found)"]);
  ran.length = 0;
  ok("after a decision the pause's page shows it running, then the cycle's outcome, live");
} finally {
  await browser.close();
}
