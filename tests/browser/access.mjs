// The console with an access file (CONTRACT §18), in Debian's headless Chromium: people sign in
// with their own tokens, see decide forms only where the file allows them, approve one of two,
// and sign out. tests/it/people.rs starts `planlock serve --access …` and runs this with
//   CONSOLE_URL, CHROMIUM, and ADA_TOKEN, BOB_TOKEN, EVE_TOKEN (eve is no approver).
// It prints one line per check and exits non-zero at the first that fails.
import assert from "node:assert/strict";
import { env, launch, ok, url as origin } from "./people.mjs";

const url = origin();
const browser = await launch();
try {
  const page = await (await browser.newContext({ viewport: { width: 390, height: 844 } })).newPage();
  const ran = [];
  page.on("pageerror", (e) => ran.push(`error: ${e.message}`));

  async function signIn(token) {
    await page.goto(`${url}/login`);
    assert.equal(await page.locator("input[name=name]").count(), 0, "nothing typed but the token");
    await page.fill("input[name=token]", token);
    await page.click("form.login button[type=submit]");
  }
  async function signOut() {
    await page.click("footer form.signout button");
    assert.match(page.url(), /\/login$/);
    await page.goto(`${url}/inbox`);
    assert.match(page.url(), /\/login\?next=%2Finbox$/, "signed out: the inbox sends to the sign-in");
  }

  await signIn("a guess at someone's token");
  assert.match(await page.textContent("p.error"), /no one's/);
  ok("a wrong token signs no one in");

  // eve may decide nothing: nothing waits for her, her count is 0 (grey), and every pause's page
  // offers her no form.
  await signIn(env("EVE_TOKEN"));
  assert.match(page.url(), /\/inbox$/);
  assert.match(await page.textContent("header .viewer"), /eve/);
  assert.equal(await page.textContent("nav [data-pending]"), "0");
  assert.match(await page.locator("nav [data-pending]").getAttribute("class"), /\bnone\b/);
  assert.match(await page.textContent("p.empty"), /Nothing waits for you/);
  assert.equal(await page.locator("tr[data-row]").count(), 0);
  await page.click("p.empty a");
  assert.match(page.url(), /show=all/);
  await page.locator("tr[data-row] a").first().click();
  const pauseUrl = page.url().split("?")[0];
  assert.equal(await page.locator("form.decide").count(), 0, "eve sees no decide form");
  assert.ok((await page.locator("p.not-yours").count()) > 0);
  ok("eve: nothing waits for her (0), and she sees no form where she may not decide");
  await signOut();
  ok("eve signed out");

  // A link to the pause, followed signed out, lands on the pause after ada signs in.
  await page.goto(pauseUrl);
  assert.match(page.url(), /\/login\?next=/);
  await page.fill("input[name=token]", env("ADA_TOKEN"));
  await page.click("form.login button[type=submit]");
  assert.equal(page.url(), pauseUrl);
  ok("a deep link survives the sign-in");

  // ada: it waits for her (1); one form, one reason; her approval is one of two, and then she is
  // not offered Approve again: it waits for bob.
  assert.equal(await page.textContent("nav [data-pending]"), "1");
  assert.equal(await page.locator("form.decide").count(), 1);
  await page.locator("form.decide textarea[name=reason]").fill("checked");
  await page.locator("form.decide button.approve").click();
  assert.match(await page.textContent("p.flash.ok"), /approval 1 of 2/);
  assert.equal(await page.textContent("nav [data-pending]"), "0");
  await page.goto(pauseUrl);
  assert.match(await page.textContent("p.you-approved"), /You approved; waiting for bob\./);
  assert.deepEqual(await page.locator("form.decide button").allTextContents(), ["Reject", "Abandon"]);
  assert.equal(await page.textContent("[data-state]"), "1 of 2: ada approved; bob may approve");
  ok("ada's approval is one of two; she is not offered Approve again: it waits for bob");
  await signOut();

  // bob: it waits for him; his first row is three Tab presses away; at 390 px it is a card.
  await signIn(env("BOB_TOKEN"));
  assert.equal(await page.textContent("nav [data-pending]"), "1");
  assert.equal(await page.title(), "(1) Inbox · planlock");
  const row = page.locator("tr[data-row]").first();
  assert.match(await row.textContent(), /1 of 2: ada approved; bob may approve/);
  const card = await row.evaluate((r) => {
    const box = r.getBoundingClientRect();
    const cut = Math.max(...[...r.querySelectorAll("td")].map((c) => c.scrollWidth - c.clientWidth));
    return { height: box.height, right: box.right, cut, page: document.documentElement.scrollWidth };
  });
  assert.ok(card.height <= 220 && card.right <= 390 && card.cut <= 1 && card.page <= 390, JSON.stringify(card));
  await page.locator("body").focus();
  for (let i = 0; i < 3; i++) await page.keyboard.press("Tab");
  assert.equal(await page.evaluate(() => document.activeElement === document.querySelector("tr[data-row] a")), true);
  await page.keyboard.press("Enter");
  await page.waitForURL(/\/inbox\/s1\//);
  await page.locator("form.decide textarea[name=reason]").fill("checked too");
  await page.locator("form.decide button.approve").click();
  assert.match(await page.textContent("p.flash.ok"), /Recorded: approve/);
  assert.equal(await page.textContent("nav [data-pending]"), "0");
  await page.goto(pauseUrl);
  assert.match(await page.textContent("[data-state]"), /^approved — running$/);
  ok("bob: it waits for him, a card at 390 px three Tabs away; his approval makes two: it runs");
  await signOut();
  assert.deepEqual(ran, []);
  ok("nothing ran but the console's own script");
} finally {
  await browser.close();
}
