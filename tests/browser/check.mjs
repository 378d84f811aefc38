// Opens an agentest HTML report in headless Chromium and checks that it works.
//
//   node check.mjs REPORT.html SCREENSHOT.png --failing TRIAL --passing TRIAL
//                  [--expect-text TEXT]... [--waterfall TRIAL] [--chromium /usr/bin/chromium]
//
// Checks: the page loads without script errors or network requests; the title and the
// counts are there and agree with the table; filtering by status "failed" hides the
// passing case and shows the failing one (and so do the "Not passed", suite and tag
// filters); the failing case's conversation (user and agent bubbles, failed verdicts)
// and its error text are visible after expanding its row, with every --expect-text.
// With --waterfall, that case's first traced turn's span waterfall is collapsed at
// first and opens on a click, with one row per span it counts, each row's bar inside its
// track where its start and duration put it on the turn's time line, children indented
// past the root, a tool row whose attribute table opens on a
// click, and a failed span's bar red. Then it takes a full-page screenshot with the
// failing cases listed and the failing case open (and its waterfall). Prints one JSON line; exits 0 when every check passed, 1 otherwise.
// tests/functional/reports.rs runs it (reports::html_report_works_in_headless_chromium).

import { chromium } from "playwright-core";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";

function usage(msg) {
  console.error(`check.mjs: ${msg}`);
  console.error(
    "usage: node check.mjs REPORT.html SCREENSHOT.png --failing TRIAL --passing TRIAL [--expect-text TEXT]... [--waterfall TRIAL] [--chromium PATH]",
  );
  process.exit(2);
}

const opts = { expect: [], chromium: "/usr/bin/chromium", positional: [] };
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  const next = () => (i + 1 < argv.length ? argv[++i] : usage(`${a} needs a value`));
  if (a === "--failing") opts.failing = next();
  else if (a === "--passing") opts.passing = next();
  else if (a === "--expect-text") opts.expect.push(next());
  else if (a === "--chromium") opts.chromium = next();
  else if (a === "--waterfall") opts.waterfall = next();
  else if (a.startsWith("--")) usage(`unknown option ${a}`);
  else opts.positional.push(a);
}
const [report, screenshot] = opts.positional;
if (!report || !screenshot || !opts.failing || !opts.passing) usage("missing arguments");

const passed = [];
const failed = [];
function check(ok, what) {
  (ok ? passed : failed).push(what);
}

// `15ms`, `1.2s` (the report's durations) in milliseconds; NaN for anything else.
function ms(text) {
  const m = String(text).trim().match(/^(\d+(?:\.\d+)?)(ms|s)$/);
  return m ? Number(m[1]) * (m[2] === "s" ? 1000 : 1) : NaN;
}

const sel = (trial) => `tbody.case[data-trial=${JSON.stringify(trial)}]`;

const browser = await chromium.launch({
  executablePath: opts.chromium,
  headless: true,
  timeout: 60_000,
  args: [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
  ],
});
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  page.setDefaultTimeout(10_000);
  const pageErrors = [];
  page.on("pageerror", (e) => pageErrors.push(String(e)));
  page.on("console", (m) => {
    if (m.type() === "error") pageErrors.push(m.text());
  });
  const external = [];
  await page.route("**/*", (route) => {
    const url = route.request().url();
    if (url.startsWith("file:") || url.startsWith("data:")) return route.continue();
    external.push(url);
    return route.abort();
  });

  await page.goto(pathToFileURL(resolve(report)).href, { waitUntil: "load" });

  // Renders: title, heading, counts that agree with the table.
  const title = await page.title();
  check(/^agentest report: (PASSED|FAILED), \d+ of \d+ passed$/.test(title), `title: ${title}`);
  check(await page.locator("h1").isVisible(), "heading visible");
  const num = async (id) => Number((await page.locator(`#count-${id}`).innerText()).trim());
  const counts = {};
  for (const k of ["total", "passed", "failed", "error", "skipped"]) counts[k] = await num(k);
  check(await page.locator("#count-total").isVisible(), "counts visible");
  const rows = await page.$$eval("tbody.case", (els) =>
    els.map((e) => ({ trial: e.dataset.trial, status: e.dataset.status, suite: e.dataset.suite, tags: e.dataset.tags })),
  );
  const by = (pred) => rows.filter(pred).length;
  check(rows.length === counts.total, `rows ${rows.length} = total ${counts.total}`);
  check(by((r) => r.status === "passed") === counts.passed, "passed count matches the table");
  check(
    by((r) => r.status === "failed" || r.status === "timeout") === counts.failed,
    "failed count (timeouts included) matches the table",
  );
  check(by((r) => r.status === "error") === counts.error, "error count matches the table");
  check(by((r) => r.status === "skipped") === counts.skipped, "skipped count matches the table");
  check(await page.locator(`${sel(opts.passing)} tr.row`).isVisible(), "passing case listed");
  check(await page.locator(`${sel(opts.failing)} tr.row`).isVisible(), "failing case listed");

  const visibleTrials = () =>
    page.$$eval("tbody.case", (els) =>
      els.filter((e) => e.getClientRects().length > 0).map((e) => ({ trial: e.dataset.trial, status: e.dataset.status, suite: e.dataset.suite, tags: e.dataset.tags })),
    );

  // Filter by status.
  await page.click('[data-filter-status="failed"]');
  let vis = await visibleTrials();
  check(vis.length > 0 && vis.every((r) => r.status === "failed"), "status filter: only failed cases");
  check(vis.some((r) => r.trial === opts.failing), "status filter: failing case shown");
  check(!(await page.locator(`${sel(opts.passing)} tr.row`).isVisible()), "status filter: passing case hidden");
  check(
    (await page.locator("#shown").innerText()).includes(`Showing ${vis.length} of ${rows.length}`),
    "status filter: count line",
  );
  await page.click('[data-filter-status="failing"]');
  vis = await visibleTrials();
  check(
    vis.length === by((r) => ["failed", "timeout", "error"].includes(r.status)) &&
      !vis.some((r) => r.trial === opts.passing),
    "not-passed filter",
  );

  // Filter by suite and by tag, then back to everything.
  await page.click('[data-filter-status="all"]');
  const failingRow = rows.find((r) => r.trial === opts.failing);
  check(!!failingRow, "failing case is in the table");
  await page.selectOption("#f-suite", failingRow.suite);
  vis = await visibleTrials();
  check(vis.length > 0 && vis.every((r) => r.suite === failingRow.suite), "suite filter");
  await page.selectOption("#f-suite", "");
  const tag = (rows.find((r) => r.tags) || {}).tags?.split("\n")[0];
  if (tag) {
    await page.selectOption("#f-tag", tag);
    vis = await visibleTrials();
    check(vis.length > 0 && vis.every((r) => r.tags.split("\n").includes(tag)), `tag filter (${tag})`);
    await page.selectOption("#f-tag", "");
  }
  vis = await visibleTrials();
  check(vis.length === rows.length, "all cases shown again");

  // Expand the failing case: its transcript and error become visible.
  await page.click('[data-filter-status="failed"]');
  const detail = page.locator(`${sel(opts.failing)} tr.detail`);
  check(!(await detail.isVisible()), "transcript collapsed at first");
  await page.locator(`${sel(opts.failing)} tr.row`).click();
  check(await detail.isVisible(), "transcript visible after expanding");
  check(await detail.locator(".msg.user .bubble").first().isVisible(), "user bubble visible");
  check(await detail.locator(".msg.agent .bubble").first().isVisible(), "agent bubble visible");
  check(await detail.locator(".v.fail").first().isVisible(), "failed assertion visible");
  const problem = detail.locator(".problem pre.error-text").first();
  check(await problem.isVisible(), "error text visible");
  check((await problem.innerText()).trim().length > 0, "error text not empty");
  const text = await detail.innerText();
  for (const t of opts.expect) check(text.includes(t), `visible text: ${t}`);
  const userBox = await detail.locator(".msg.user").first().boundingBox();
  const agentBox = await detail.locator(".msg.agent").first().boundingBox();
  check(
    userBox && agentBox && userBox.x + userBox.width > agentBox.x + agentBox.width,
    "user bubbles on the right, agent bubbles on the left",
  );

  // A traced turn's waterfall: collapsed, then open, its bars on the time line.
  if (opts.waterfall) {
    const c = page.locator(sel(opts.waterfall));
    if (!(await c.locator("tr.detail").isVisible())) await c.locator("tr.row").click();
    const spans = c.locator("details.spans").first();
    check((await c.locator("details.spans").count()) > 0, "waterfall: a traced turn has one");
    check(!(await spans.evaluate((d) => d.open)), "waterfall: collapsed at first");
    const rows = spans.locator(".wf > .wf-row:not(.wf-head), .wf > details.wf-span > summary.wf-row");
    check(!(await rows.first().isVisible()), "waterfall: rows hidden while collapsed");
    await spans.locator(":scope > summary").click();
    check(await spans.evaluate((d) => d.open), "waterfall: opens on a click");
    check(await rows.first().isVisible(), "waterfall: rows visible once open");
    const counted = (await spans.locator(":scope > summary .muted").innerText()).match(/^(\d+) spans?/);
    const n = counted ? Number(counted[1]) : -1;
    check((await rows.count()) === n && n > 0, `waterfall: ${await rows.count()} rows for ${n} spans`);
    const total = ms((await spans.locator(":scope > summary .muted").innerText()).split(" · ").pop());
    const geo = await rows.evaluateAll((els) =>
      els.map((r) => {
        const box = (el) => {
          const b = el.getBoundingClientRect();
          return { left: b.left, right: b.right, width: b.width, height: b.height };
        };
        const bar = r.querySelector(".wf-bar");
        return {
          cls: r.className,
          title: r.getAttribute("title"),
          track: box(r.querySelector(".wf-track")),
          bar: box(bar),
          color: getComputedStyle(bar).backgroundColor,
          indent: parseFloat(getComputedStyle(r.querySelector(".wf-name")).paddingLeft),
        };
      }),
    );
    check(
      geo.every((g) => g.bar.width >= 1 && g.bar.height > 0 && g.bar.left >= g.track.left - 0.5 && g.bar.right <= g.track.right + 0.5),
      "waterfall: every bar drawn inside its track",
    );
    // Each bar where its span's title says: start and duration over the turn's total.
    const misplaced = geo.filter((g) => {
      const m = (g.title || "").match(/\((\S+) at \+(\S+)\)$/);
      if (!m || !(total > 0)) return true;
      const [dur, start] = [ms(m[1]), ms(m[2])];
      const left = (g.bar.left - g.track.left) / g.track.width;
      const width = g.bar.width / g.track.width;
      return Math.abs(left - start / total) > 0.02 || (g.bar.width > 3 && Math.abs(width - dur / total) > 0.02);
    });
    check(total > 0 && misplaced.length === 0, `waterfall: bars placed by start and duration${misplaced.length ? ": " + JSON.stringify(misplaced) : ""}`);
    check(geo.some((g) => g.bar.left - g.track.left > g.track.width / 4), "waterfall: a later span's bar starts further right");
    check(geo.length > 0 && Math.abs(geo[0].bar.left - geo[0].track.left) < 1, "waterfall: the root starts the time line");
    check(geo.slice(1).some((g) => g.indent > geo[0].indent), "waterfall: children indented past the root");
    const rgb = (c) => (c.match(/\d+(\.\d+)?/g) || []).map(Number);
    const err = geo.find((g) => / err\b/.test(g.cls));
    check(!!err && rgb(err.color)[0] > rgb(err.color)[1] + 60, `waterfall: a failed span's bar is red (${err && err.color})`);
    const tool = spans.locator("details.wf-span > summary.wf-row.tool").first();
    check((await tool.count()) === 1, "waterfall: a tool row");
    const table = spans.locator("details.wf-span:has(> summary.wf-row.tool) table.wf-attrs").first();
    check(!(await table.isVisible()), "waterfall: attributes hidden at first");
    await tool.click();
    check(await table.isVisible(), "waterfall: a tool span's attributes open on a click");
    check((await table.innerText()).includes("gen_ai.tool.name"), "waterfall: the tool's attributes listed");
  }

  // Screenshot: the failing cases, the failing one open.
  await page.click('[data-filter-status="failing"]');
  check(await detail.isVisible(), "still open after changing the filter");
  await page.screenshot({ path: screenshot, fullPage: true });

  check(pageErrors.length === 0, `no script errors${pageErrors.length ? ": " + pageErrors.join("; ") : ""}`);
  check(external.length === 0, `no network requests${external.length ? ": " + external.join(", ") : ""}`);
} catch (e) {
  failed.push(`exception: ${e && e.stack ? e.stack : e}`);
} finally {
  await browser.close();
}

console.log(JSON.stringify({ ok: failed.length === 0, passed: passed.length, failed }));
process.exit(failed.length === 0 ? 0 : 1);
