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

import { launch, parseArgs, tally, watchErrors } from "./common.mjs";

const opts = parseArgs(process.argv.slice(2));
const [url, screenshot] = opts.positional;
if (!url || !screenshot) {
  console.error("usage: node live.mjs URL SCREENSHOT.png [--chromium PATH]");
  process.exit(2);
}
const { check, failed, finish } = tally();

const browser = await launch(opts.chromium);
const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
const pageErrors = [];
watchErrors(page, pageErrors);
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
finish();
