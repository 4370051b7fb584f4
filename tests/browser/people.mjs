// What the browser tests of people with their own tokens share (access.mjs, edit.mjs): the
// environment they are run with, a line per check, and Debian's headless Chromium that looks
// nothing up but the console.
import { chromium } from "playwright-core";

/** The variable `name` of the environment; throws when it is not set. */
export const env = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};

/** The console's origin, without a trailing slash. */
export const url = () => env("CONSOLE_URL").replace(/\/$/, "");

/** Says that a check held: `ok: what`, one line (the Rust side counts them). */
export const ok = (what) => console.log(`ok: ${what}`);

/** Chromium, as the tests drive it. */
export const launch = () =>
  chromium.launch({
    executablePath: env("CHROMIUM"),
    args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"],
  });
