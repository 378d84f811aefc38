// Clicks through `agentest view` in headless Chromium, as a user would.
//
//   node view.mjs URL SCREENSHOTS_DIR [--chromium /usr/bin/chromium]
//
// URL serves the store of tests/functional/view.rs's `examples` (the example suites run
// twice, with the random agent's `unreliable` suite: execution 1 on CI run github:77:1,
// branch main; execution 2 on branch feature/refunds, where `steady` fails 6 repeats
// after passing 5). Checks:
// - the executions page: both executions with their trigger, counts by status, flaky
//   count, tokens and cost; the trend chart's points and bars; keyboard focus; the
//   filter by branch text;
// - an execution: its runs grouped by suite, tokens and cost by role, the search;
// - a case (openai-expense::policy): the status strip, pass rate with its Wilson
//   interval, the copy button that puts `agentest runs show ID` on the clipboard;
// - its newest run's transcript (the report, opened on the case): the tool call
//   get_policy with its arguments and result, and the judge's reason;
// - compare 1 → 2 from the executions page's form: `unreliable::steady` flagged as a
//   regression with its Fisher p-value, the whole's line;
// - no script error and no request anywhere but the viewer, on every page.
// Screenshots: executions.png, execution.png, case.png, run.png, compare.png (and
// failure.png when a step threw). Prints one JSON line; exits 0 when every check passed.
// tests/functional/view.rs runs it (view::the_viewer_works_in_headless_chromium).

import { launch, parseArgs, tally, watchErrors } from "./common.mjs";
import { mkdirSync } from "node:fs";
import { join } from "node:path";

const opts = parseArgs(process.argv.slice(2));
const [url, dir] = opts.positional;
if (!url || !dir) {
  console.error("usage: node view.mjs URL SCREENSHOTS_DIR [--chromium PATH]");
  process.exit(2);
}
mkdirSync(dir, { recursive: true });
const base = url.endsWith("/") ? url : url + "/";

const { check, failed, finish } = tally();

const browser = await launch(opts.chromium);
const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: new URL(base).origin });
const page = await context.newPage();
page.setDefaultTimeout(10_000);
const pageErrors = [];
const elsewhere = [];
watchErrors(page, pageErrors);
page.on("request", (r) => {
  if (!r.url().startsWith(base)) elsewhere.push(r.url());
});
const shot = (name) => page.screenshot({ path: join(dir, name), fullPage: true });
const text = async (selector) => (await page.locator(selector).first().innerText()).trim();

try {
  // The executions.
  await page.goto(base);
  check((await page.title()) === "Executions · agentest", `title: ${await page.title()}`);
  await page.keyboard.press("Tab");
  const focused = await page.evaluate(() => document.activeElement && document.activeElement.textContent);
  check(focused === "Executions", `the first Tab reaches the first link: ${focused}`);
  const rows = page.locator("#executions tbody tr");
  check((await rows.count()) === 2, "two executions listed");
  const e1 = page.locator('tr[data-execution="1"]');
  const e2 = page.locator('tr[data-execution="2"]');
  const e1text = await e1.innerText();
  const e2text = await e2.innerText();
  check(e1text.includes("github:77:1") && e1text.includes("branch main"), `execution 1's trigger: ${e1text}`);
  check(e2text.includes("feature/refunds") && e2text.includes("0123456789ab"), `execution 2's trigger: ${e2text}`);
  const cell = async (row, n) => (await row.locator(`td:nth-child(${n})`).innerText()).trim();
  // Columns: execution, started, time, trigger, passed, failed, error, timeout,
  // inconclusive, skipped, total, pass rate, flaky, tokens, cost.
  check((await cell(e2, 6)) === "2", `execution 2 failed: ${await cell(e2, 6)}`);
  check((await cell(e2, 7)) === "1", `execution 2 errors: ${await cell(e2, 7)}`);
  check((await cell(e2, 10)) === "1", `execution 2 skipped: ${await cell(e2, 10)}`);
  check((await cell(e1, 6)) === "1", `execution 1 failed: ${await cell(e1, 6)}`);
  check((await cell(e2, 13)) === "1" && (await cell(e1, 13)) === "1", "one flaky case in each");
  const tokens = await cell(e2, 14);
  check(/replayed/.test(tokens), `tokens spent and replayed: ${tokens}`);
  await e2.locator("td:nth-child(14) summary").click();
  const byRole = await cell(e2, 14);
  check(/judge 0 \(\+[\d,]+ replayed\)/.test(byRole), `tokens by role, opened: ${byRole}`);
  const cost = await cell(e2, 15);
  check(/\$\d+\.\d{4} replayed/.test(cost), `cost replayed: ${cost}`);
  check((await page.locator("#trend circle.rate").count()) === 2, "the trend has a pass rate per execution");
  check((await page.locator("#trend rect.replayed").count()) === 2, "the trend has a bar per execution of the cost replayed");
  check((await page.locator("#trend desc").textContent()).includes("Pass rate"), "the trend is described in words");
  await shot("executions.png");
  await page.fill('input[name="q"]', "feature/refunds");
  await page.press('input[name="q"]', "Enter");
  await page.waitForURL(/q=feature/);
  check((await rows.count()) === 1 && (await e2.count()) === 1, "filtering by branch keeps execution 2 only");

  // An execution.
  await page.goto(base);
  await page.click('a[href="/executions/2"]');
  check((await text("h1")) === "Execution 2", "execution 2's page");
  const suites = await page.locator("#runs tbody[data-suite]").count();
  check(suites >= 8, `runs grouped by suite: ${suites}`);
  const unreliable = await text('#runs tbody[data-suite="unreliable"] tr.suite');
  check(unreliable.includes("1 error") && unreliable.includes("2 failed") && unreliable.includes("1 passed"), `the unreliable suite's counts: ${unreliable}`);
  const roles = await text("#roles");
  check(roles.includes("judge") && roles.includes("simulator") && roles.includes("agent"), `tokens and cost by role: ${roles}`);
  const crash = await text('#runs tr[data-trial="unreliable::crash"]');
  check(crash.includes("error") && crash.includes("agent"), `the crash's row, blamed on the agent: ${crash}`);
  await shot("execution.png");
  await page.fill('form[aria-label="filter runs"] input[name="q"]', "steady");
  await page.press('form[aria-label="filter runs"] input[name="q"]', "Enter");
  await page.waitForURL(/q=steady/);
  check((await page.locator("#runs tr[data-trial]").count()) === 1, "the search keeps one run");

  // A case.
  await page.goto(base + "executions/2");
  await page.click('#runs tr[data-trial="openai-expense::policy"] a[href^="/cases/"]');
  check((await text("h1")) === "Case openai-expense::policy", "the case's page");
  check((await page.locator(".strip a").count()) === 2, "a status per execution in the strip");
  const history = await text("#history");
  check(history.includes("Pass rate 100.0% (2 of 2), 95% Wilson interval [0.342, 1.000]"), `the pass rate: ${history}`);
  const copy = page.locator("button[data-copy]").first();
  check(await copy.isVisible(), "the copy button shows (the script ran)");
  const command = (await page.locator(".commands code").first().innerText()).trim();
  await copy.click();
  const clip = await page.evaluate(() => navigator.clipboard.readText());
  check(/^agentest runs show \d+$/.test(command) && clip === command, `copied: ${clip}`);
  await shot("case.png");

  // Its newest run's transcript.
  await page.click("#case-runs tbody tr:first-child td:nth-child(2) a");
  await page.waitForSelector("tbody.case.open");
  const transcript = await page.locator("tbody.case.open").innerText();
  check(transcript.includes("get_policy"), "the tool call is shown");
  check(transcript.includes('"topic": "meals"'), `its arguments are shown`);
  check(transcript.includes("meal_limit_per_day"), "its result is shown");
  check(transcript.includes("the reply answers the request"), "the judge's reason is shown");
  check((await text("nav.banner")).includes("openai-expense::policy"), "the banner names the case");
  await shot("run.png");

  // Compare two executions.
  await page.goto(base);
  await page.fill('input[name="before"]', "1");
  await page.fill('input[name="after"]', "2");
  await page.click('form[aria-label="compare two executions"] button');
  await page.waitForURL(/compare/);
  const steady = await text('#changes tr[data-trial="unreliable::steady"]');
  check(steady.includes("regression"), `steady flagged: ${steady}`);
  check(steady.includes("passed (5/5)") && steady.includes("failed (0/6)") && steady.includes("0.0022"), `steady's repeats and p: ${steady}`);
  const verdict = await text("#verdict");
  check(verdict.includes("Fisher p ="), `the whole's line: ${verdict}`);
  const flaky = page.locator('#changes tr[data-trial="unreliable::flaky"]');
  check((await flaky.count()) === 0 || !(await flaky.innerText()).includes("regression"), "the flaky case is no regression");
  await shot("compare.png");
} catch (e) {
  failed.push(`threw: ${e && e.stack ? e.stack : e}`);
  await shot("failure.png").catch(() => {});
}
check(pageErrors.length === 0, `no script errors: ${pageErrors.join("; ")}`);
check(elsewhere.length === 0, `no request elsewhere: ${elsewhere.join(" ")}`);
await browser.close();
finish({ screenshots: dir });
