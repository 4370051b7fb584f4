// Edit and approve (CONTRACT §22) in Debian's headless Chromium: ada edits the summary a paused
// step will store (a first try the validator refuses, its problems beside the text kept), bob
// sees the diff and approves the edit, and the running worker runs the cycle. tests/it/people.rs
// starts `planlock serve --access …` and `planlock worker`, and runs this with CONSOLE_URL,
// CHROMIUM, SESSION (the paused session), ADA_TOKEN and BOB_TOKEN; it then checks the memory
// stored is ada's text. One line per check; a non-zero exit at the first that fails.
import assert from "node:assert/strict";
import { env, launch, ok, url as origin } from "./people.mjs";

const url = origin();
const browser = await launch();
try {
  const page = await (await browser.newContext({ viewport: { width: 1024, height: 900 } })).newPage();
  const ran = [];
  page.on("pageerror", (e) => ran.push(`error: ${e.message}`));

  async function signIn(token) {
    await page.goto(`${url}/login`);
    await page.fill("input[name=token]", token);
    await page.click("form.login button[type=submit]");
    assert.match(page.url(), /\/inbox$/);
  }
  async function openPause() {
    // A page over a directory is at most 2 s behind it: the session was paused a moment ago.
    for (let tries = 0; tries < 10; tries++) {
      await page.goto(`${url}/inbox?show=all&q=${encodeURIComponent(env("SESSION"))}`);
      if ((await page.locator("tr[data-row]").count()) > 0) break;
      await page.waitForTimeout(500);
    }
    await page.locator("tr[data-row] a").first().click();
    await page.waitForURL(/\/inbox\/[^/?]+\/\d+\//);
  }

  // ada opens "Edit and approve": the payload is there as pretty JSON.
  await signIn(env("ADA_TOKEN"));
  await openPause();
  await page.click("details.edit summary");
  const shown = JSON.parse(await page.inputValue("#payload"));
  assert.equal(shown.summary, "key rotation");
  // A first try the validator refuses: its problems beside the text, which is kept as typed.
  const wrong = JSON.stringify({ ...shown, keywords: "not a list" }, null, 2);
  await page.fill("#payload", wrong);
  await page.fill("#edit-reason", "the names must not be stored");
  await page.click("form.edit button");
  assert.match(await page.textContent("ul.problems"), /\/steps\/\d+\/payload\/keywords/);
  assert.equal(await page.inputValue("#payload"), wrong);
  assert.equal(await page.inputValue("#edit-reason"), "the names must not be stored");
  ok("an edit the validator refuses shows its problems beside the text, kept as typed");
  // Fixed: recorded as ada's approval of her edit, one of two.
  await page.fill("#payload", JSON.stringify({ ...shown, summary: "key rotation (names removed by ada)" }, null, 2));
  await page.click("form.edit button");
  assert.match(await page.textContent("p.flash.ok"), /approval 1 of 2/);
  await openPause();
  assert.match(await page.textContent("main"), /Edited by ada/);
  assert.match(await page.textContent("p.you-approved"), /You approved; waiting for bob/);
  ok("ada's edit is her approval of it: one of two, waiting for bob");
  await page.click("footer form.signout button");

  // bob sees what changed and approves the edit; the running worker runs the cycle.
  await signIn(env("BOB_TOKEN"));
  await openPause();
  const pauseUrl = page.url().split("?")[0];
  const diff = await page.textContent("pre.diff");
  assert.match(diff, /- +"summary": "key rotation"\n/);
  assert.match(diff, /\+ +"summary": "key rotation \(names removed by ada\)"\n/);
  assert.equal(await page.locator("pre.diff .add").count(), 1);
  await page.fill("form.decide textarea[name=reason]", "the edit is right");
  await page.click("form.decide button.approve");
  assert.match(await page.textContent("p.flash.ok"), /Recorded: approve/);
  ok("bob sees the diff against what was shown and approves the edit");
  await page.goto(pauseUrl);
  await page.locator("[data-outcome]").waitFor({ timeout: 20000 });
  assert.equal(await page.textContent("[data-outcome]"), "completed");
  ok("the worker ran the cycle with the edit");
  assert.deepEqual(ran, []);
} finally {
  await browser.close();
}
