// Watches an execution's page in headless Chromium while its runs are worked.
//
//   node live.mjs URL SCREENSHOT.png [--chromium /usr/bin/chromium]
//
// URL is the page of an execution whose runs are all queued. Checks that the page says
// so and names its API (data-live), prints `ready` on a line of its own (the caller
// then starts a worker), and, without any reload by this script, sees every run end
// (the page's script asked the API, saw a change and reloaded) within 60 s; then that
// the page stopped following (no run left going). Prints one JSON line; exits 0 when
// every check passed. tests/functional/view.rs runs it
// (view::the_viewer_follows_a_run_in_headless_chromium).

import { chromium } from "playwright-core";

const opts = { chromium: "/usr/bin/chromium", positional: [] };
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  if (argv[i] === "--chromium") opts.chromium = argv[++i];
  else opts.positional.push(argv[i]);
}
const [url, screenshot] = opts.positional;
if (!url || !screenshot) {
  console.error("usage: node live.mjs URL SCREENSHOT.png [--chromium PATH]");
  process.exit(2);
}
const passed = [];
const failed = [];
function check(ok, what) {
  (ok ? passed : failed).push(what);
}

const browser = await chromium.launch({
  executablePath: opts.chromium,
  headless: true,
  timeout: 60_000,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
const pageErrors = [];
page.on("pageerror", (e) => pageErrors.push(String(e)));
// A request the page's policy blocks is a console error, not a page error.
page.on("console", (m) => {
  if (m.type() === "error") pageErrors.push(m.text());
});
let loads = 0;
page.on("load", () => loads++);
try {
  await page.goto(url);
  const queued = await page.locator('#runs td.queued').count();
  check(queued > 0, `runs queued at first: ${queued}`);
  const live = await page.evaluate(() => document.body.dataset.live);
  check(/^\/api\/executions\/\d+$/.test(live || ""), `the page names its API: ${live}`);
  check((await page.locator('[role="status"]').innerText()).includes("still going"), "the page says runs are going");
  console.log("ready");
  await page.waitForFunction(
    () => document.querySelectorAll("#runs td.queued, #runs td.running, #runs td.pending").length === 0 &&
      document.querySelectorAll("#runs tr[data-trial]").length > 0,
    null,
    { timeout: 60_000, polling: 500 },
  );
  check(loads >= 2, `the page reloaded itself (${loads} loads)`);
  const ended = await page.locator("#runs td.passed").count();
  check(ended === queued, `every run ended on the page: ${ended} of ${queued}`);
  const still = await page.evaluate(() => document.body.dataset.live);
  check(still === undefined, "an ended execution's page no longer follows it");
  await page.screenshot({ path: screenshot, fullPage: true });
} catch (e) {
  failed.push(`threw: ${e && e.stack ? e.stack : e}`);
  await page.screenshot({ path: screenshot, fullPage: true }).catch(() => {});
}
check(pageErrors.length === 0, `no script errors: ${pageErrors.join("; ")}`);
await browser.close();
console.log(JSON.stringify({ ok: failed.length === 0, passed: passed.length, failed }));
process.exit(failed.length === 0 ? 0 : 1);
