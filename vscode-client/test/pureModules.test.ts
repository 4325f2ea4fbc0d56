// The split between the pure modules and VS Code's side, as a rule on names: under src/,
// extension.ts and every `*.vscode.ts` module talk to VS Code; every other module is pure
// (plain data and functions, run here under `node --test`). A pure module that imported
// `vscode`, a package built on it or a `*.vscode` module would fail to load outside the
// editor; a `*.vscode.ts` module that no longer imports `vscode` is pure and misnamed.

import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, it } from 'node:test';
import * as ts from 'typescript';

// out/test/ → vscode-client/src/
const SRC = resolve(__dirname, '..', '..', 'src');

const modules = readdirSync(SRC, { recursive: true, encoding: 'utf8' })
  .filter((f) => f.endsWith('.ts'))
  .map((f) => f.split('\\').join('/'))
  .sort();

function isVscodeSide(file: string): boolean {
  return file === 'extension.ts' || file.endsWith('.vscode.ts');
}

/** Every module specifier the file imports or re-exports (static, dynamic, `require`). */
function importsOf(file: string): string[] {
  const info = ts.preProcessFile(readFileSync(resolve(SRC, file), 'utf8'), true, true);
  return info.importedFiles.map((f) => f.fileName);
}

describe('the pure modules', () => {
  const pure = modules.filter((f) => !isVscodeSide(f));

  it('are found (every module under src/ but extension.ts and *.vscode.ts)', () => {
    assert.ok(pure.length >= 15, `found only ${pure.join(', ')}`);
    assert.ok(pure.includes('protocol.ts') && pure.includes('tasks/tree.ts'), pure.join(', '));
  });

  it('import only other pure modules and Node built-ins', () => {
    for (const file of pure) {
      for (const spec of importsOf(file)) {
        const relative = spec.startsWith('./') || spec.startsWith('../');
        const ok = relative ? !spec.endsWith('.vscode') : spec.startsWith('node:');
        assert.ok(ok, `${file} imports '${spec}': only its *.vscode.ts side may`);
      }
    }
  });
});

describe("VS Code's side", () => {
  it('imports vscode in each module named for it', () => {
    for (const file of modules.filter(isVscodeSide)) {
      assert.ok(importsOf(file).includes('vscode'), `${file} does not import vscode: name it without .vscode and test it`);
    }
  });
});
