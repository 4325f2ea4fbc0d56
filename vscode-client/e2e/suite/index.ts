// Entry point VS Code loads as extensionTestsPath (bundled to dist/test/index.js): runs the
// Mocha suite inside the real extension host. VS Code turns a rejection into exit code 1,
// which the browser reports through window.codeAutomationExit (see e2e/run.mjs).

import * as fs from 'node:fs';
import * as path from 'node:path';
import Mocha from 'mocha';
import * as vscode from 'vscode';

/** The report goes to mocha.log next to the workspace folder, for e2e/run.mjs to print:
 * the extension host's console does not reach the terminal in code-server. */
function reportTo(runner: Mocha.Runner): void {
  const ws = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  const file = ws ? path.join(path.dirname(ws), 'mocha.log') : undefined;
  const out = (line: string) => {
    console.log(line);
    if (file) fs.appendFileSync(file, line + '\n');
  };
  if (file) fs.writeFileSync(file, '');
  const started = new Map<Mocha.Test, number>();
  runner.on('test', (t) => started.set(t, Date.now()));
  const ms = (t: Mocha.Test) => `${Date.now() - (started.get(t) ?? Date.now())} ms`;
  runner.on('suite', (s) => s.title && out(`  ${s.title}`));
  runner.on('pass', (t) => out(`    ✔ ${t.title} (${ms(t)})`));
  runner.on('fail', (t, err: Error) => out(`    ✘ ${t.title} (${ms(t)})\n${indent(err.stack ?? String(err))}`));
  runner.on('end', () => {
    const s = runner.stats;
    out(`  ${s?.passes ?? 0} passing, ${s?.failures ?? 0} failing`);
  });
}

function indent(text: string): string {
  return text.split('\n').map((l) => `        ${l}`).join('\n');
}

export function run(): Promise<void> {
  const mocha = new Mocha({ ui: 'tdd', timeout: 60_000, color: false, reporter: 'dot' });
  mocha.addFile(path.join(__dirname, 'baton.test.js'));
  mocha.addFile(path.join(__dirname, 'inline.test.js')); // goes on in the same workspace
  mocha.addFile(path.join(__dirname, 'pages.test.js')); // and a long task last
  return new Promise((resolve, reject) => {
    try {
      const runner = mocha.run((failures) =>
        failures > 0 ? reject(new Error(`${failures} end-to-end test(s) failed`)) : resolve(),
      );
      reportTo(runner);
    } catch (e) {
      reject(e instanceof Error ? e : new Error(String(e)));
    }
  });
}
