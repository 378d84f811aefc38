// What the viewer's browser scripts share: options, Chromium, and the checks' tally.

import { chromium } from "playwright-core";

/// The positional arguments and `--chromium PATH` (default Debian's /usr/bin/chromium).
export function parseArgs(argv) {
  const opts = { chromium: "/usr/bin/chromium", positional: [] };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--chromium") opts.chromium = argv[++i];
    else opts.positional.push(argv[i]);
  }
  return opts;
}

/// Headless Chromium, with nothing in the background that reaches the network.
export function launch(executablePath) {
  return chromium.launch({
    executablePath,
    headless: true,
    timeout: 60_000,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
}

/// Collects a page's script errors, and the requests its policy blocked (console
/// errors, not page errors), into `errors`.
export function watchErrors(page, errors) {
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("console", (m) => {
    if (m.type() === "error") errors.push(m.text());
  });
}

/// The checks' tally: `check(ok, what)`, and `finish(extra)` printing one JSON line and
/// exiting 0 when every check passed, 1 otherwise.
export function tally() {
  const passed = [];
  const failed = [];
  return {
    failed,
    check(ok, what) {
      (ok ? passed : failed).push(what);
    },
    finish(extra = {}) {
      console.log(JSON.stringify({ ok: failed.length === 0, passed: passed.length, failed, ...extra }));
      process.exit(failed.length === 0 ? 0 : 1);
    },
  };
}
