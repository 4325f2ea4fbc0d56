// Runs the end-to-end tests in code-server (VS Code 1.100.3 in the browser, real extension
// host) with headless Chromium driven by playwright-core, against the real `baton serve`:
//
//   1. extension-host tests: e2e/suite (Mocha) loaded as extensionTestsPath with this folder
//      as extensionDevelopmentPath; VS Code reports the exit code via window.codeAutomationExit;
//   2. one UI test on the packaged baton.vsix: open the Baton view, see the inline view
//      (each hunk drawn in the file), click Accept on a code lens, see the file and the tree change; open a hunk's diff from its Diff lens, edit the
//      right side and click Accept Edited Version; with screenshots (see E2E_IMAGES).
//
// Usage: node e2e/run.mjs [host|ui]...   (default: both). Needs e2e/install.sh, npm run build,
// build:e2e and package first (`npm run e2e` does all). Env: E2E_IMAGES (where the
// screenshots go), BATON_PYTHON (default:
// ../.venv/bin/python), E2E_TIMEOUT seconds for everything (default 300), E2E_KEEP=1 keeps
// the temp dir. Every code-server runs in its own process group, killed at the end.

// The functions given to page.waitForFunction run in the browser page, where `document` is.
/* global document */

import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const EXT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const REPO = path.resolve(EXT, '..');
const CODE_SERVER = path.join(EXT, '.e2e/code-server/node_modules/.bin/code-server');
const PYTHON = process.env.BATON_PYTHON || path.join(REPO, '.venv/bin/python');
const TIMEOUT = Number(process.env.E2E_TIMEOUT || 300) * 1000;
const which = process.argv.slice(2).length ? process.argv.slice(2) : ['host', 'ui'];

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-e2e-'));
// The UI test's screenshots: docs/images/ with E2E_IMAGES=../docs/images (make
// vscode-screenshots), else the temp dir, so that `make test` leaves the tree clean.
const IMAGES = process.env.E2E_IMAGES ? path.resolve(process.env.E2E_IMAGES) : path.join(tmp, 'images');
const servers = new Set();
let browser;

function log(...args) {
  console.log(`[e2e ${((Date.now() - t0) / 1000).toFixed(1)}s]`, ...args);
}
const t0 = Date.now();

const SETTINGS = {
  'files.autoSave': 'off',
  'workbench.startupEditor': 'none',
  'security.workspace.trust.enabled': false,
  'telemetry.telemetryLevel': 'off',
  'extensions.autoUpdate': false,
  'extensions.autoCheckUpdates': false,
  'git.enabled': false,
  'files.hotExit': 'off',
  'workbench.tips.enabled': false,
  'chat.commandCenter.enabled': false,
  'workbench.colorTheme': 'Default Dark Modern',
  'baton.python': PYTHON,
};

function seed(name) {
  const ws = path.join(tmp, name);
  const r = spawnSync(PYTHON, [path.join(EXT, 'e2e/agent.py'), 'seed', ws], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`seeding ${ws} failed: ${r.stderr || r.error}`);
  return ws;
}

function dirs(name) {
  const d = path.join(tmp, `${name}-vscode`);
  for (const sub of ['user/User', 'extensions', 'xdg']) fs.mkdirSync(path.join(d, sub), { recursive: true });
  fs.writeFileSync(path.join(d, 'user/User/settings.json'), JSON.stringify(SETTINGS, null, 2));
  const env = { ...process.env, BATON_E2E_RUN: tmp, XDG_DATA_HOME: path.join(d, 'xdg'), XDG_CONFIG_HOME: path.join(d, 'xdg'), XDG_CACHE_HOME: path.join(d, 'xdg') };
  return { user: path.join(d, 'user'), extensions: path.join(d, 'extensions'), env, log: path.join(d, 'code-server.log') };
}

function codeServerArgs(d) {
  return ['--config', '/dev/null', '--user-data-dir', d.user, '--extensions-dir', d.extensions];
}

/** Starts code-server detached (its own process group) and resolves with its port. */
function startCodeServer(d, ws) {
  const args = [...codeServerArgs(d), '--auth', 'none', '--bind-addr', '127.0.0.1:0', '--disable-telemetry',
    '--disable-update-check', '--disable-workspace-trust', '--disable-getting-started-override',
    '--ignore-last-opened', ws];
  const proc = spawn(CODE_SERVER, args, { env: d.env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  servers.add(proc);
  const out = fs.createWriteStream(d.log);
  let text = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`code-server did not listen in 60 s; see ${d.log}`)), 60_000);
    const on = (chunk) => {
      out.write(chunk);
      text += chunk;
      const m = /HTTP server listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(text);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    };
    proc.stdout.on('data', on);
    proc.stderr.on('data', on);
    proc.on('exit', (code) => reject(new Error(`code-server exited (${code}); see ${d.log}`)));
  });
}

function killAll() {
  for (const proc of servers) {
    try {
      process.kill(-proc.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  servers.clear();
  let swept = 0;
  // The extension host and `baton serve` may sit in other process groups: end every process
  // that inherited this run's marker (and only those).
  for (const pid of fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      if (fs.readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0').includes(`BATON_E2E_RUN=${tmp}`)) {
        process.kill(Number(pid), 'SIGKILL');
        swept += 1;
      }
    } catch {
      // gone, or not ours to read
    }
  }
  if (swept) log(`killed ${swept} leftover process(es) of this run`);
}

async function newPage(name) {
  browser ??= await chromium.launch({
    executablePath: process.env.E2E_CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
  });
  const context = await browser.newContext({ viewport: { width: 1280, height: 760 } });
  const page = await context.newPage();
  page.on('pageerror', (e) => log(`${name} page error: ${e.message}`));
  return page;
}

// ---------------------------------------------------------------------------------------

async function hostTests() {
  const ws = seed('host-ws');
  const d = dirs('host');
  const port = await startCodeServer(d, ws);
  log(`host: code-server on ${port}`);
  const page = await newPage('host');
  const remote = (p) => `vscode-remote://127.0.0.1:${port}${p}`;
  const payload = [
    ['extensionDevelopmentPath', remote(EXT)],
    ['extensionTestsPath', remote(path.join(EXT, 'dist/test/index.js'))],
  ];
  let exit;
  const exited = new Promise((resolve) => (exit = resolve));
  await page.exposeFunction('codeAutomationExit', (code) => exit(code));
  await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(ws)}&payload=${encodeURIComponent(JSON.stringify(payload))}`);
  const code = await exited;
  const report = path.join(tmp, 'mocha.log');
  if (fs.existsSync(report)) process.stdout.write(fs.readFileSync(report, 'utf8'));
  log(`host: extension tests exited with ${code}`);
  await page.context().close();
  return code === 0;
}

// ---------------------------------------------------------------------------------------

async function uiTest() {
  const vsix = path.join(EXT, 'baton.vsix');
  if (!fs.existsSync(vsix)) throw new Error(`${vsix} is missing: npm run package`);
  const d = dirs('ui');
  const r = spawnSync(CODE_SERVER, [...codeServerArgs(d), '--install-extension', vsix], { env: d.env, encoding: 'utf8', timeout: 60_000 });
  if (r.status !== 0) throw new Error(`--install-extension failed: ${r.stdout}${r.stderr}`);
  const ws = seed('ui-ws');
  const port = await startCodeServer(d, ws);
  log(`ui: code-server on ${port}`);
  const page = await newPage('ui');
  const norm = (s) => s.replace(/\u00a0/g, ' ').replace(/\s+/g, ' ').trim();
  try {
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(ws)}`);
    await page.waitForSelector('.monaco-workbench', { timeout: 60_000 });

    // The restore notification, with its Show button, opens the Tasks view.
    const toast = page.locator('.notification-toast', { hasText: "Baton restored task 'Tidy calc'" });
    await toast.waitFor({ timeout: 30_000 });
    const toastText = norm(await toast.innerText());
    if (!toastText.includes("Baton restored task 'Tidy calc': 0 accepted, 3 pending review")) throw new Error(`toast: ${toastText}`);
    await toast.locator('.monaco-button', { hasText: 'Show' }).click();
    const view = page.locator('[id="workbench.view.extension.baton"]');
    const rows = view.locator('.monaco-list-row');
    await view.locator('.monaco-list-row', { hasText: 'Tidy calc' }).waitFor({ timeout: 15_000 });
    await view.locator('.monaco-list-row', { hasText: 'calc.py' }).first().waitFor();
    const status = page.locator('.statusbar-item', { hasText: /pending/ }).first();
    await status.waitFor();
    if (!/3 pending/.test(norm(await status.innerText()))) throw new Error(`status bar: ${await status.innerText()}`);

    // Click the first hunk: the file opens at it, with its lenses and squiggles.
    const hunkRows = () => view.locator('.monaco-list-row[aria-level="3"]');
    await hunkRows().first().waitFor();
    const hunksBefore = await hunkRows().count();
    await hunkRows().first().click();
    const editor = page.locator('.editor-instance .monaco-editor').first();
    await editor.waitFor();
    await page.locator('.codelens-decoration a', { hasText: 'Accept' }).first().waitFor({ timeout: 20_000 });
    await page.locator('.squiggly-warning, .squiggly-info, .squiggly-hint, .squiggly-error').first().waitFor({ timeout: 20_000 });
    // The inline view: each hunk's old lines painted, the new lines as ghost text after them
    // (extension decorations: classes named after their TextEditorDecorationType).
    await page.waitForFunction(
      () => document.querySelectorAll('.editor-instance .view-overlays [class*="TextEditorDecorationType"]').length >= 3 &&
        document.querySelectorAll('.editor-instance .view-lines [class*="TextEditorDecorationType"]').length >= 3,
      null, { timeout: 20_000 },
    );
    await page.mouse.move(5, 5);
    await page.waitForTimeout(500);
    fs.mkdirSync(IMAGES, { recursive: true });
    await page.screenshot({ path: path.join(IMAGES, 'vscode-inline-review.png') });
    await page.locator('.sidebar').screenshot({ path: path.join(IMAGES, 'vscode-sidebar.png') });
    log(`ui: ${await rows.count()} rows, ${hunksBefore} hunks; screenshots saved`);

    // Accept on the first lens: the buffer changes, the tree and the status bar follow.
    await page.locator('.codelens-decoration a', { hasText: 'Accept' }).first().click();
    await page.waitForFunction(() => /return\s20/.test(document.querySelector('.editor-instance .view-lines')?.textContent?.replace(/\u00a0/g, ' ') ?? ''), null, { timeout: 15_000 });
    await page.locator('.tab.active.dirty').waitFor({ timeout: 10_000 });
    await page.waitForFunction(
      () => [...document.querySelectorAll('.statusbar-item')].some((e) => /2 pending · 1 accepted/.test(e.textContent ?? '')),
      null, { timeout: 15_000 },
    );
    // In the buffer, not saved: its lines drawn green, the line they replaced as ghost text.
    await page.waitForFunction(
      () => [...document.querySelectorAll('.editor-instance .view-line')].some((l) => /#\stwenty/.test(l.textContent?.replace(/\u00a0/g, ' ') ?? '')),
      null, { timeout: 15_000 },
    );
    await page.mouse.move(5, 5);
    await page.waitForTimeout(300);
    await page.screenshot({ path: path.join(IMAGES, 'vscode-inline-accepted.png') });
    await page.keyboard.press('Control+S');
    await page.waitForFunction(
      () => [...document.querySelectorAll('.statusbar-item')].some((e) => /(^|\s)2 pending\s*$/.test((e.textContent ?? '').trim())),
      null, { timeout: 15_000 },
    );
    const onDisk = fs.readFileSync(path.join(ws, 'calc.py'), 'utf8');
    if (!onDisk.includes('return 20\n    # twenty\n')) throw new Error('calc.py on disk does not have the accepted hunk');
    await page.waitForFunction((n) => document.querySelectorAll('[id="workbench.view.extension.baton"] .monaco-list-row[aria-level="3"]').length === n - 1, hunksBefore, { timeout: 15_000 });
    await page.mouse.move(5, 5);
    await page.waitForTimeout(500);
    await page.screenshot({ path: path.join(IMAGES, 'vscode-after-accept.png') });
    log('ui: accepted through the code lens, saved, tree updated');

    // Edit-then-accept: the Diff lens opens the diff with an editable right side; type in it,
    // then the editor title's Accept Edited Version puts that version in the buffer.
    await page.locator('.codelens-decoration a', { hasText: 'Diff' }).first().click();
    const modified = page.locator('.monaco-diff-editor .editor.modified');
    const line = modified.locator('.view-line', { hasText: /return\s50/ });
    await line.waitFor({ timeout: 15_000 });
    const accept = page.locator('.editor-actions .action-label[aria-label^="Accept Edited Version"]');
    await accept.waitFor({ timeout: 10_000 });
    await line.click();
    await page.keyboard.press('End');
    await page.keyboard.type('0  # edited in the diff');
    await page.locator('.tab.active.dirty').waitFor({ timeout: 10_000 });
    await page.mouse.move(5, 5);
    await page.waitForTimeout(300);
    await page.screenshot({ path: path.join(IMAGES, 'vscode-edit-then-accept.png') });
    await accept.click();
    await page.locator('.notification-toast', { hasText: 'accepted your edited version' }).waitFor({ timeout: 15_000 });
    await page.waitForFunction(
      () => /return\s500\s+#\sedited\sin\sthe\sdiff/.test(document.querySelector('.editor-instance .view-lines')?.textContent?.replace(/\u00a0/g, ' ') ?? ''),
      null, { timeout: 15_000 },
    );
    if ((await page.locator('.monaco-diff-editor').count()) > 0) throw new Error('the diff is still open after accepting');
    log('ui: edited in the diff, accepted from the editor title');
    return true;
  } catch (e) {
    const shot = path.join(tmp, 'ui-failure.png');
    await page.screenshot({ path: shot }).catch(() => undefined);
    log(`ui: FAILED: ${e instanceof Error ? e.message : e} (screenshot ${shot}, log ${d.log})`);
    process.env.E2E_KEEP = '1';
    return false;
  } finally {
    await page.context().close();
  }
}

// ---------------------------------------------------------------------------------------

async function main() {
  let ok = true;
  if (which.includes('host')) ok = (await hostTests()) && ok;
  if (which.includes('ui')) ok = (await uiTest()) && ok;
  return ok;
}

/** Out, now: the browser (briefly), every code-server and whatever they started. */
async function abort(why, code) {
  log(`${why}: killing code-server`);
  killAll();
  await Promise.race([browser?.close(), new Promise((r) => setTimeout(r, 2000))]).catch(() => undefined);
  killAll();
  log(`kept ${tmp}`);
  process.exit(code);
}

for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => void abort(signal, 130));
const timer = setTimeout(() => void abort(`global timeout (${TIMEOUT / 1000} s)`, 2), TIMEOUT);

let ok = false;
try {
  ok = await main();
} catch (e) {
  log(`error: ${e instanceof Error ? e.stack : e}`);
  process.env.E2E_KEEP = '1';
} finally {
  clearTimeout(timer);
  await browser?.close().catch(() => undefined);
  killAll();
  if (process.env.E2E_KEEP) log(`kept ${tmp}`);
  else fs.rmSync(tmp, { recursive: true, force: true });
}
log(ok ? 'all passed' : 'FAILED');
process.exit(ok ? 0 : 1);
