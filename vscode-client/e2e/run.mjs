// Runs the end-to-end tests in code-server (VS Code 1.100.3 in the browser, real extension
// host) with headless Chromium driven by playwright-core, against the real `baton serve`:
//
//   1. extension-host tests: e2e/suite (Mocha) loaded as extensionTestsPath with this folder
//      as extensionDevelopmentPath; VS Code reports the exit code via window.codeAutomationExit;
//   2. one UI test on the packaged baton.vsix: open the Baton view, see the inline view
//      (each hunk drawn in the file), click Accept on a code lens, see the file and the tree change; open a hunk's diff from its Diff lens, edit the
//      right side and click Accept Edited Version; with screenshots (see E2E_IMAGES);
//   3. the review UI test, after a real Claude Code run (see reviewTest below).
//
// Usage: node e2e/run.mjs [host|ui|review]...   (default: host and ui; ui runs review too). Needs e2e/install.sh, npm run build,
// build:e2e and package first (`npm run e2e` does all). Env: E2E_IMAGES (where the
// screenshots go), BATON_PYTHON (default:
// ../.venv/bin/python), E2E_TIMEOUT seconds for everything (default 450), E2E_KEEP=1 keeps
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
const TIMEOUT = Number(process.env.E2E_TIMEOUT || 450) * 1000;
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

/** Runs `e2e/agent.py how ws`, whatever it starts marked as this run's (see killAll). */
function agent(how, ws) {
  const env = { ...process.env, BATON_E2E_RUN: tmp };
  const r = spawnSync(PYTHON, [path.join(EXT, 'e2e/agent.py'), how, ws], { encoding: 'utf8', env, timeout: 180_000 });
  if (r.status !== 0) throw new Error(`agent.py ${how} ${ws} failed: ${r.stderr || r.error}`);
  return r.stdout;
}

function seed(name, how = 'seed') {
  const ws = path.join(tmp, name);
  agent(how, ws);
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
// The review loop after a real Claude Code run (e2e/agent.py claude: Claude Code 2.1.328
// under `baton init claude-code`, its model scripted on loopback; a Read, Edits of cart.py,
// a new file, `sed -i` through Bash, all landed), through the packaged extension: the quick
// diff against the last reviewed state beside git's, then next hunk, keep, undo with a
// comment and Ctrl+Z of it, Ctrl+Z of a saved undo, undo of the new file, typing inside a
// landed hunk; the files on disk after each step; then the next real Claude Code turn
// (--resume), and what its model request carried of the review.

const CART_EDITED = `class Cart:
    def __init__(self):
        self.items = []

    def add(self, name, price):
        if price < 0:
            raise ValueError(f"negative price for {name}")
        self.items.append((name, price))

    def total(self):
        total = 0
        for _, price in self.items:
            total += price
        return round(total, 2)

    def count(self):
        """How many items the cart holds."""
        return len(self.items)
`;

const UNDO_COMMENT = 'keep the one-line total';
const WITHDRAWN = 'X: taken back by Ctrl+Z before the save';
const WITHDRAWN_SAVED = 'Y: taken back by Ctrl+Z after the save';

/** The stored hunks of the workspace's one task (the Claude Code session's). */
function stored(ws) {
  return JSON.parse(agent('state', ws)).hunks;
}

async function until(what, probe, ms = 20_000) {
  const deadline = Date.now() + ms;
  let last;
  for (;;) {
    try {
      last = await probe();
      if (last) return last;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what} (last: ${JSON.stringify(last)})`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Opens `file` of the open folder through Quick Open. */
async function openFile(page, file) {
  await page.keyboard.press('Control+P');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor();
  await input.fill(file);
  // Click the row: Enter may take a recently opened file the list still shows first.
  await page.locator('.quick-input-widget .monaco-list-row', { hasText: file }).first().click();
  await page.locator('.tab.active', { hasText: file }).waitFor();
  await page.locator('.editor-instance .monaco-editor').first().click({ position: { x: 300, y: 5 } });
}

/** Waits for the status bar to put the cursor on 1-based `line`. */
async function cursorOn(page, line) {
  await until(`the cursor on line ${line}`, async () =>
    (await page.locator('.statusbar-item', { hasText: /^Ln \d+, Col/ }).first().innerText()).startsWith(`Ln ${line},`));
}

/** Waits for Baton's status bar message that the cursor arrived on a hunk (its keys set):
 * `what` from "N of M to review · file: kind" on. */
async function arrivedAt(page, what) {
  await until(`Baton's word that the cursor is on ${what}`, async () =>
    (await page.locator('.statusbar-item', { hasText: `Baton: ${what}` }).count()) > 0);
}

/** Focus in the main editor's text, at the top of the file, the peek closed. */
async function toTop(page) {
  await page.keyboard.press('Control+1'); // the first editor group's editor, not the peek
  for (let i = 0; i < 3 && (await page.locator('.dirty-diff').count()) > 0; i++) await page.keyboard.press('Escape');
  await page.keyboard.press('Control+Home');
  await cursorOn(page, 1);
}

async function gutterChanges(page) {
  return page.locator('.editor-instance .margin-view-overlays .dirty-diff-glyph').count();
}

/** The editor area with the quick diff's peek open on cart.py's second change. */
async function peekShot(page, file) {
  await page.keyboard.press('Control+Home');
  await page.keyboard.press('Alt+F3');
  await page.keyboard.press('Alt+F3');
  await page.locator('.dirty-diff').first().waitFor({ timeout: 15_000 });
  await page.mouse.move(5, 5);
  await page.waitForTimeout(500);
  await page.locator('.editor-group-container').first().screenshot({ path: file });
}

async function reviewTest() {
  const vsix = path.join(EXT, 'baton.vsix');
  const d = dirs('review');
  const r = spawnSync(CODE_SERVER, [...codeServerArgs(d), '--install-extension', vsix], { env: d.env, encoding: 'utf8', timeout: 60_000 });
  if (r.status !== 0) throw new Error(`--install-extension failed: ${r.stdout}${r.stderr}`);
  // The same run twice: one folder shown by git's quick diff (Baton's off), one by Baton's.
  const gitWs = seed('git-ws', 'claude');
  fs.mkdirSync(path.join(gitWs, '.vscode'));
  fs.writeFileSync(path.join(gitWs, '.vscode/settings.json'), JSON.stringify({ 'git.enabled': true, 'baton.inlineView': false }));
  const ws = seed('review-ws', 'claude');
  const port = await startCodeServer(d, ws);
  log(`review: code-server on ${port}`);
  fs.mkdirSync(IMAGES, { recursive: true });
  const failed = [];
  const step = async (name, work) => {
    try {
      await work();
      log(`review: ${name}: ok`);
    } catch (e) {
      failed.push(name);
      await page.screenshot({ path: path.join(tmp, `review-${failed.length}.png`) }).catch(() => undefined);
      log(`review: ${name}: FAILED: ${e instanceof Error ? e.message : e}`);
    }
  };
  let page = await newPage('review-git');
  const gitShot = path.join(tmp, 'quickdiff-git.png');
  const batonShot = path.join(tmp, 'quickdiff-baton.png');
  try {
    await step("git's quick diff of the agent's change", async () => {
      await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(gitWs)}`);
      await page.waitForSelector('.monaco-workbench', { timeout: 60_000 });
      await openFile(page, 'cart.py');
      await until("git's gutter marks", async () => (await gutterChanges(page)) >= 2, 30_000);
      await peekShot(page, gitShot);
    });
    await page.context().close();

    page = await newPage('review');
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(ws)}`);
    await page.waitForSelector('.monaco-workbench', { timeout: 60_000 });
    const status = page.locator('.statusbar-item', { hasText: /landed/ }).first();
    await step("the status bar counts the agent's changes as landed", async () => {
      await status.waitFor({ timeout: 30_000 });
      const text = (await status.innerText()).replace(/\s+/g, ' ').trim();
      if (!/5 landed$/.test(text)) throw new Error(`status bar: ${text}`);
    });
    await step('the Tasks view says each hunk in the CLI\'s words', async () => {
      await page.keyboard.press('F1');
      const input = page.locator('.quick-input-widget input');
      await input.waitFor();
      await input.fill('>Baton: Show Tasks');
      await page.locator('.quick-input-widget .monaco-list-row', { hasText: 'Show Tasks' }).first().click();
      const view = page.locator('[id="workbench.view.extension.baton"]');
      const task = view.locator('.monaco-list-row', { hasText: 'Harden the cart' });
      await task.waitFor({ timeout: 15_000 });
      const text = (await task.innerText()).replace(/\s+/g, ' ');
      if (!text.includes('5 landed')) throw new Error(`task row: ${text}`);
      for (const close of await page.locator('.notification-toast .codicon-notifications-clear').all()) await close.click().catch(() => undefined);
    });
    await step("Baton's quick diff of the same change, with Keep | Undo lenses and no squiggles", async () => {
      await openFile(page, 'cart.py');
      await page.locator('.codelens-decoration a', { hasText: 'Keep' }).first().waitFor({ timeout: 20_000 });
      await until("Baton's gutter marks", async () => (await gutterChanges(page)) >= 2, 20_000);
      if ((await page.locator('.editor-instance .squiggly-info').count()) > 0) throw new Error('info squiggles on landed hunks');
      await page.mouse.move(5, 5);
      await page.waitForTimeout(500);
      await page.screenshot({ path: path.join(IMAGES, 'vscode-landed-review.png') });
      await peekShot(page, batonShot);
      await page.screenshot({ path: path.join(IMAGES, 'vscode-landed-peek.png') });
      for (const label of ['Keep (Baton)', 'Undo (Baton)']) {
        if ((await page.locator(`.dirty-diff .action-label[aria-label="${label}"]`).count()) !== 1) throw new Error(`no ${label} in the peek's title`);
      }
      await toTop(page);
    });
    await step('the two quick diffs side by side', async () => {
      const img = (f) => `data:image/png;base64,${fs.readFileSync(f).toString('base64')}`;
      const side = await browser.newPage({ viewport: { width: 1700, height: 800 } });
      await side.setContent(`<body style="margin:0;background:#1e1e1e;color:#ccc;font:14px sans-serif;display:flex;gap:8px">
        <figure style="margin:0"><figcaption style="padding:4px">git (against the last commit)</figcaption><img src="${img(gitShot)}" style="width:840px"></figure>
        <figure style="margin:0"><figcaption style="padding:4px">Baton (against the last reviewed state)</figcaption><img src="${img(batonShot)}" style="width:840px"></figure></body>`);
      await side.screenshot({ path: path.join(IMAGES, 'vscode-quickdiff-git-vs-baton.png'), fullPage: true });
      await side.close();
    });

    const cart = () => fs.readFileSync(path.join(ws, 'cart.py'), 'utf8');
    const hunksOf = (file) => stored(ws).filter((h) => h.path === file);
    await step("Keep in the quick diff's peek (version.py)", async () => {
      await openFile(page, 'version.py');
      await until("the quick diff's gutter mark", async () => (await gutterChanges(page)) >= 1, 20_000);
      await toTop(page);
      await page.keyboard.press('Alt+F3');
      await page.locator('.dirty-diff .action-label[aria-label="Keep (Baton)"]').click();
      await until('the hunk kept', () => hunksOf('version.py')[0]?.status === 'applied');
      if (fs.readFileSync(path.join(ws, 'version.py'), 'utf8') !== "VERSION = '1.1'\n") throw new Error('version.py changed on a keep');
      await until('no change left in the gutter', async () => (await gutterChanges(page)) === 0);
      await openFile(page, 'cart.py');
    });
    await step('next hunk, then Keep: nothing written, the hunk kept', async () => {
      await toTop(page);
      await page.keyboard.press('Alt+F5');
      await cursorOn(page, 6);
      await arrivedAt(page, '1 of 4 to review · cart.py: landed');
      await page.keyboard.press('Control+Shift+Enter');
      await until('the first hunk kept', () => hunksOf('cart.py')[0]?.status === 'applied');
      if (cart() !== CART_EDITED) throw new Error('cart.py changed on a keep');
      await cursorOn(page, 11); // moved on to the next hunk of the file
      await arrivedAt(page, '1 of 3 to review · cart.py: landed');
    });
    await step('undo with a comment (Ctrl+Shift+Alt+Backspace), then Ctrl+Z and save: the agent\'s lines stay, no conflict', async () => {
      await page.keyboard.press('Control+Shift+Alt+Backspace');
      const input = page.locator('.quick-input-widget input');
      await input.waitFor({ timeout: 10_000 });
      await input.fill(WITHDRAWN);
      await page.keyboard.press('Enter');
      await until('the undo in the buffer', async () => !/total \+= price/.test((await page.locator('.editor-instance .view-lines').innerText()).replace(/\u00a0/g, ' ')));
      await page.keyboard.press('Control+z');
      await until('the undo taken back in the buffer', async () => /total \+= price/.test((await page.locator('.editor-instance .view-lines').innerText()).replace(/\u00a0/g, ' ')));
      await page.keyboard.press('Control+s');
      await until('the hunk landed again, not a conflict, its comment withdrawn', () => {
        const h = hunksOf('cart.py')[1];
        return h && h.status === 'pending' && h.comment === '' && h;
      });
      if (cart() !== CART_EDITED) throw new Error('cart.py is not as the developer sees it');
    });
    // The hunk is the one-line total replaced by eight lines (the new body and count()).
    const undoneCart = `${CART_EDITED.split('    def total')[0]}    def total(self):\n        return round(sum(p for _, p in self.items), 2)\n`;
    const undoWithComment = async (comment) => {
      // The word of the last arrival gone first: the same words will say this one.
      await until("the last arrival's word gone", async () => (await page.locator('.statusbar-item', { hasText: 'to review ·' }).count()) === 0);
      await toTop(page);
      await page.keyboard.press('Alt+F5');
      await cursorOn(page, 11);
      await arrivedAt(page, '1 of 3 to review · cart.py: landed');
      await page.keyboard.press('Control+Shift+Alt+Backspace');
      const input = page.locator('.quick-input-widget input');
      await input.waitFor({ timeout: 10_000 });
      await input.fill(comment);
      await page.keyboard.press('Enter');
      await until('the old line back in the buffer', async () => /return round\(sum/.test((await page.locator('.editor-instance .view-lines').innerText()).replace(/\u00a0/g, ' ')));
      await page.keyboard.press('Control+s');
      await until('undone in the store, with the comment', () => {
        const h = hunksOf('cart.py')[1];
        return h && h.status === 'undone' && h.comment === comment;
      });
      if (cart() !== undoneCart) throw new Error(`cart.py on disk:\n${cart()}`);
    };
    await step('undo with a comment and save, then Ctrl+Z and save again: the undo withdrawn, the hunk landed again', async () => {
      await undoWithComment(WITHDRAWN_SAVED);
      await page.keyboard.press('Control+z');
      await until('the undo taken back in the buffer', async () => /total \+= price/.test((await page.locator('.editor-instance .view-lines').innerText()).replace(/\u00a0/g, ' ')));
      await page.keyboard.press('Control+s');
      await until('the hunk landed again, not a conflict, its comment withdrawn', () => {
        const h = hunksOf('cart.py')[1];
        return h && h.status === 'pending' && h.comment === '' && h;
      });
      if (cart() !== CART_EDITED) throw new Error(`cart.py is not as the developer sees it:\n${cart()}`);
      await until("Baton's lenses on the hunk again", async () => (await page.locator('.codelens-decoration a', { hasText: 'Undo' }).count()) > 0);
    });
    await step('undo with a comment and save: the old lines back on disk, the comment recorded', async () => {
      await undoWithComment(UNDO_COMMENT);
    });
    await step('undo of the new file (report.py) and save: the file is gone', async () => {
      await openFile(page, 'report.py');
      await page.locator('.codelens-decoration a', { hasText: 'Undo' }).first().waitFor({ timeout: 20_000 });
      await page.locator('.codelens-decoration a', { hasText: 'Undo' }).first().click();
      // The undo deletes the file, or empties the buffer for the save to delete it.
      const report = path.join(ws, 'report.py');
      await until('the undo in the buffer or on disk', async () => !fs.existsSync(report) || (await page.locator('.tab.active.dirty').count()) > 0);
      if (fs.existsSync(report)) await page.keyboard.press('Control+s');
      await until('report.py deleted', () => !fs.existsSync(report));
      const h = hunksOf('report.py')[0];
      if (h?.status !== 'undone') throw new Error(`report.py's hunk: ${JSON.stringify(h)}`);
    });
    await step('typing inside a landed hunk (config.py) and save: the lines are the developer\'s (superseded)', async () => {
      await openFile(page, 'config.py');
      await page.locator('.codelens-decoration a', { hasText: 'Keep' }).first().waitFor({ timeout: 20_000 });
      await toTop(page);
      await page.keyboard.press('Control+End');
      await page.keyboard.press('ArrowUp');
      await page.keyboard.press('End');
      await page.keyboard.type('  # three places');
      await page.keyboard.press('Control+s');
      await until('config.py saved', () => fs.readFileSync(path.join(ws, 'config.py'), 'utf8') === "CURRENCY = 'EUR'\nROUNDING = 3  # three places\n");
      await until('the hunk superseded: the developer\'s now', () => !hunksOf('config.py').some((h) => h.status === 'pending'));
    });
    await step("the next Claude Code turn's request: the undo's comment, not the withdrawn ones, nothing kept asked again, no conflict", async () => {
      const hunks = stored(ws);
      const kept = hunks.filter((h) => h.status === 'applied').map((h) => h.id);
      if (kept.length !== 2) throw new Error(`kept: ${JSON.stringify(hunks)}`);
      const { received } = JSON.parse(agent('next-turn', ws));
      const text = received.join('\n');
      fs.writeFileSync(path.join(tmp, 'next-turn.txt'), text);
      if (!text.includes('# Handoff:')) throw new Error(`no brief in the next request: ${text}`);
      if (!text.includes(UNDO_COMMENT)) throw new Error(`the undo's comment is not in the next request: ${text}`);
      for (const withdrawn of [WITHDRAWN, WITHDRAWN_SAVED]) {
        if (text.includes(withdrawn)) throw new Error(`a withdrawn comment reached the agent: ${withdrawn}`);
      }
      if (/conflict/i.test(text)) throw new Error(`the next request speaks of a conflict: ${text}`);
      const awaiting = /## Awaiting review[^\n]*\n([\s\S]*?)(\n## |$)/.exec(text)?.[1] ?? '';
      for (const id of kept) {
        if (awaiting.includes(id)) throw new Error(`kept hunk ${id} is asked again: ${awaiting}`);
        if (!new RegExp(`\\(kept\\): \`${id}\``).test(text)) throw new Error(`kept hunk ${id} is not said kept: ${text}`);
      }
      // The files are as the review left them: the next turn wrote nothing.
      if (cart() !== undoneCart) throw new Error(`cart.py on disk:\n${cart()}`);
      if (fs.existsSync(path.join(ws, 'report.py'))) throw new Error('report.py is back');
    });
    if (failed.length) log(`review: failed steps: ${failed.join(' | ')}`);
    return failed.length === 0;
  } catch (e) {
    log(`review: FAILED: ${e instanceof Error ? e.message : e} (log ${d.log})`);
    return false;
  } finally {
    if (failed.length) process.env.E2E_KEEP = '1';
    await page.context().close().catch(() => undefined);
  }
}

// ---------------------------------------------------------------------------------------

async function main() {
  let ok = true;
  if (which.includes('host')) ok = (await hostTests()) && ok;
  if (which.includes('ui')) ok = (await uiTest()) && ok;
  if (which.includes('ui') || which.includes('review')) ok = (await reviewTest()) && ok;
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
