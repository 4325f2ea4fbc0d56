// protocol.ts mirrors server/baton/lsp/protocol.py: the same names with the same values, and
// the same payload fields on the wire. Both files are read as text here (a regex each), so a
// rename on either side fails this test until the other side follows.
// Also: package.json and the commands the extension registers keep the rules that make
// vscode-languageclient happy.

import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, it } from 'node:test';
import { cursorKeys } from '../src/navigation/cursor';
import * as p from '../src/protocol';

// out/test/ → vscode-client/
const CLIENT = resolve(__dirname, '..', '..');
const SERVER = resolve(CLIENT, '..', 'server', 'baton', 'lsp');
const PY = readFileSync(resolve(SERVER, 'protocol.py'), 'utf8');
/** The pages' bounds, which protocol.py imports from the core (one definition for every face). */
const PAGING = readFileSync(resolve(SERVER, '..', 'core', 'paging.py'), 'utf8');
const TS = readFileSync(resolve(CLIENT, 'src', 'protocol.ts'), 'utf8');

/** `NAME = "value"` and `NAME = 1` at the top level of protocol.py, and the constants it
 * re-exports from core/paging.py (`from baton.core.paging import NAME as NAME`). */
function pyConstants(): Map<string, string | number> {
  const out = new Map<string, string | number>();
  const paging = new Map<string, string | number>();
  for (const [text, into] of [[PY, out], [PAGING, paging]] as const) {
    for (const m of text.matchAll(/^([A-Z][A-Z0-9_]*) = (?:"([^"]*)"|(\d+))$/gm)) {
      into.set(m[1]!, m[2] ?? Number(m[3]));
    }
  }
  for (const m of PY.matchAll(/^from baton\.core\.paging import ([A-Z][A-Z0-9_]*) as \1\b/gm)) {
    const value = paging.get(m[1]!);
    if (value !== undefined) out.set(m[1]!, value);
  }
  return out;
}

interface PyField {
  wire: string;
  required: boolean;
}

/** pydantic classes: own fields (wire name = alias, else the name) plus their bases'. */
function pyModels(): Map<string, PyField[]> {
  const classes = new Map<string, { base: string; fields: PyField[] }>();
  const blocks = PY.split(/^(?=class )/m).slice(1);
  for (const block of blocks) {
    const head = /^class (\w+)\((\w+)\):/.exec(block);
    assert.ok(head, `cannot read ${block.slice(0, 40)}`);
    const fields: PyField[] = [];
    for (const m of block.matchAll(/^ {4}(\w+): ([^=\n]+?)(?: = (.*))?$/gm)) {
      const [, name, , value] = m;
      if (name === 'model_config') continue;
      const alias = value ? /alias="(\w+)"/.exec(value) : null;
      const required = value === undefined || (value.startsWith('Field(') && !value.includes('default='));
      fields.push({ wire: alias ? alias[1]! : name!, required });
    }
    classes.set(head[1]!, { base: head[2]!, fields });
  }
  const all = (name: string): PyField[] => {
    const c = classes.get(name);
    if (!c) return [];
    return [...all(c.base), ...c.fields];
  };
  return new Map([...classes.keys()].map((name) => [name, all(name)]));
}

/** `export interface X extends Y { a: …; b?: …; }` in protocol.ts, bases included. */
function tsInterfaces(): Map<string, Array<{ wire: string; required: boolean }>> {
  const raw = new Map<string, { base?: string; fields: Array<{ wire: string; required: boolean }> }>();
  for (const m of TS.matchAll(/^export interface (\w+)(?: extends (\w+))? \{\n([\s\S]*?)^\}/gm)) {
    const fields = [...m[3]!.matchAll(/^ {2}(\w+)(\??): /gm)].map((f) => ({ wire: f[1]!, required: f[2] !== '?' }));
    raw.set(m[1]!, { base: m[2], fields });
  }
  const all = (name: string): Array<{ wire: string; required: boolean }> => {
    const c = raw.get(name);
    if (!c) return [];
    return [...(c.base ? all(c.base) : []), ...c.fields];
  };
  return new Map([...raw.keys()].map((name) => [name, all(name)]));
}

/** What the extension asked of the server and reads when it is there (docs/protocol.md,
 * the restore's writes): protocol.ts has it already, protocol.py may not yet. Once
 * protocol.py has one, it must match like the rest. */
const COMING_CONSTANTS = new Set<string>();
const COMING_MODELS = new Set(['WrittenHunk']);
const COMING_FIELDS = new Set(['RestoredTask.written']);

describe('protocol.ts mirrors protocol.py', () => {
  const constants = pyConstants();
  const exported = p as unknown as Record<string, unknown>;

  it('finds the Python constants', () => {
    assert.ok(constants.size >= 15, `only ${constants.size} constants read from protocol.py`);
  });

  it('has every Python constant with the same value', () => {
    for (const [name, value] of constants) {
      assert.equal(exported[name], value, `${name} in protocol.ts`);
    }
  });

  it('has no name the server does not know', () => {
    for (const [name, value] of Object.entries(exported)) {
      if (typeof value === 'string' || typeof value === 'number') {
        if (COMING_CONSTANTS.has(name) && !constants.has(name)) continue;
        assert.ok(constants.has(name), `${name} = ${JSON.stringify(value)} is not in protocol.py`);
      }
    }
  });

  it('lists the commands in the same order', () => {
    const tuple = /^COMMANDS = \(([^)]*)\)$/m.exec(PY);
    assert.ok(tuple, 'COMMANDS tuple not found in protocol.py');
    const names = tuple[1]!.split(',').map((s) => s.trim()).filter(Boolean);
    assert.deepEqual([...p.COMMANDS], names.map((n) => constants.get(n)));
  });

  it('never uses the reserved $/ prefix, and names follow baton/x and baton.x', () => {
    for (const [name, value] of constants) {
      // A diagnostic's source and codes are values of its fields, not method names.
      if (typeof value !== 'string' || name === 'SOURCE' || name.endsWith('_CODE')) continue;
      assert.ok(!value.startsWith('$/'), value);
      assert.match(value, /^baton[/.][a-z][A-Za-z]*$/, name);
    }
  });

  it('has the same payload fields as the pydantic models', () => {
    const py = pyModels();
    const ts = tsInterfaces();
    const mirrored = ['HunkArgs', 'RejectArgs', 'AcceptEditedArgs', 'ScopeArgs', 'CommitArgs', 'TaskArgs', 'HunkView',
      'TaskView', 'HunkContent', 'StateChange', 'RestoredTask', 'Restore', 'Proposal', 'WrittenHunk'];
    for (const name of py.keys()) {
      if (name === 'Args') continue;
      assert.ok(mirrored.includes(name), `protocol.py has a new model ${name}: mirror it in protocol.ts`);
    }
    for (const name of mirrored) {
      const want = py.get(name);
      const have = ts.get(name);
      if (!want && COMING_MODELS.has(name)) continue;
      assert.ok(want, `${name} not in protocol.py`);
      assert.ok(have, `${name} not in protocol.ts`);
      const wanted = new Set(want.map((f) => f.wire));
      const fields = have.filter((f) => wanted.has(f.wire) || !COMING_FIELDS.has(`${name}.${f.wire}`));
      assert.deepEqual(fields.map((f) => f.wire).sort(), want.map((f) => f.wire).sort(), name);
      if (name.endsWith('Args')) {
        // Arguments: optional exactly where the server has a default.
        for (const f of want) {
          assert.equal(have.find((h) => h.wire === f.wire)!.required, f.required, `${name}.${f.wire}`);
        }
      }
    }
  });

});

describe('the extension and vscode-languageclient', () => {
  const pkg = JSON.parse(readFileSync(resolve(CLIENT, 'package.json'), 'utf8')) as {
    contributes: {
      commands: Array<{ command: string }>;
      menus: Record<string, Array<{ command: string }>>;
      viewsWelcome: Array<{ contents: string }>;
    };
  };
  const declared = new Set(pkg.contributes.commands.map((c) => c.command));
  const registered = (() => {
    const src = resolve(CLIENT, 'src');
    const sources = readdirSync(src, { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.ts'))
      .map((f) => readFileSync(resolve(src, f), 'utf8'));
    return sources.flatMap((s) => [...s.matchAll(/registerCommand\(\s*'([^']+)'/g)].map((m) => m[1]!));
  })();

  const serverCommands: readonly string[] = p.COMMANDS;

  it('never registers a command the server advertises (the client does)', () => {
    assert.ok(registered.length >= 6, `found only ${registered.join(', ')}`);
    for (const id of registered) {
      assert.ok(!serverCommands.includes(id), `${id} is registered by vscode-languageclient`);
    }
  });

  it('declares every command it registers', () => {
    for (const id of registered) assert.ok(declared.has(id), `${id} not in contributes.commands`);
  });

  it('declares every command its menus use (VS Code drops menu items that are not declared)', () => {
    for (const [menu, items] of Object.entries(pkg.contributes.menus)) {
      for (const item of items) assert.ok(declared.has(item.command), `${menu}: ${item.command}`);
    }
  });

  it('declares only its own and the server commands', () => {
    for (const id of declared) {
      assert.ok(registered.includes(id) || serverCommands.includes(id), id);
    }
  });

  it('binds keys and editor menus only to context keys the extension sets', () => {
    const contributes = (pkg as unknown as {
      contributes: { keybindings: Array<{ command: string; when: string }>; menus: Record<string, Array<{ when?: string }>> };
    }).contributes;
    const set = new Set([
      ...Object.keys(cursorKeys(undefined, new Set())),
      'baton.serverState', 'baton.hasTasks', 'baton.editorHasHunks',
      'baton.server.canKeep', 'baton.server.canUndo', 'baton.server.canReopen',
    ]);
    const whens = [
      ...contributes.keybindings.map((k) => k.when),
      ...(contributes.menus['editor/context'] ?? []).map((m) => m.when ?? ''),
      ...(contributes.menus.commandPalette ?? []).map((m) => m.when ?? ''),
    ];
    for (const when of whens) {
      for (const m of when.matchAll(/\bbaton\.[\w.]+/g)) assert.ok(set.has(m[0]), `${m[0]} in "${when}"`);
    }
    for (const k of contributes.keybindings) assert.ok(declared.has(k.command), k.command);
  });

  it('links only commands that exist from the welcome view', () => {
    for (const view of pkg.contributes.viewsWelcome) {
      for (const m of view.contents.matchAll(/\(command:([\w.]+)/g)) {
        const id = m[1]!;
        assert.ok(declared.has(id) || id.startsWith('workbench.'), id);
      }
    }
  });
});
