// The console with an access file (CONTRACT §18), in Debian's headless Chromium: people sign in
// with their own tokens, see decide forms only where the file allows them, approve one of two,
// and sign out. tests/it/people.rs starts `planlock serve --access …` and runs this with
//   CONSOLE_URL, CHROMIUM, and ADA_TOKEN, BOB_TOKEN, EVE_TOKEN (eve is no approver).
// It prints one line per check and exits non-zero at the first that fails.
import assert from "node:assert/strict";
import { chromium } from "playwright-core";

const env = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};
const url = env("CONSOLE_URL").replace(/\/$/, "");
const ok = (what) => console.log(`ok: ${what}`);

const browser = await chromium.launch({
  executablePath: env("CHROMIUM"),
  args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"],
});
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
    await page.click("form.signout button");
    assert.match(page.url(), /\/login$/);
    await page.goto(`${url}/inbox`);
    assert.match(page.url(), /\/login$/, "signed out: the inbox sends to the sign-in");
  }

  await signIn("a guess at someone's token");
  assert.match(await page.textContent("p.error"), /no one's/);
  ok("a wrong token signs no one in");

  await signIn(env("EVE_TOKEN"));
  assert.match(page.url(), /\/inbox$/);
  assert.match(await page.textContent("header .viewer"), /eve/);
  await page.locator("tr[data-row] a").first().click();
  assert.equal(await page.locator("form.decide").count(), 0, "eve sees no decide form");
  assert.ok((await page.locator("p.not-yours").count()) > 0);
  ok("eve is signed in by her token and sees no form where she may not decide");
  await signOut();
  ok("eve signed out");

  await signIn(env("ADA_TOKEN"));
  await page.locator("tr[data-row] a").first().click();
  await page.locator("form.approve textarea[name=reason]").fill("checked");
  await page.locator("form.approve button").click();
  assert.match(await page.textContent("p.flash.ok"), /approval 1 of 2/);
  assert.match(await page.textContent("main"), /1 of 2 \(ada\)/);
  ok("ada's approval is one of two");
  await signOut();

  await signIn(env("BOB_TOKEN"));
  await page.locator("tr[data-row]", { hasText: "1 of 2 (ada)" }).locator("a").first().click();
  await page.locator("form.approve textarea[name=reason]").fill("checked too");
  await page.locator("form.approve button").click();
  assert.match(await page.textContent("p.flash.ok"), /Recorded: approve/);
  ok("bob's approval makes two: the pause is approved");
  await signOut();
  assert.deepEqual(ran, []);
  ok("nothing ran but the console's own script");
} finally {
  await browser.close();
}
