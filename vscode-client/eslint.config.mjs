// ESLint (flat config) for the extension, its unit tests and the end-to-end suite.
//
// typescript-eslint's type-checked rules are the point: they catch what `tsc --strict` lets
// through in an extension, above all promises and VS Code Thenables that nobody awaits or
// handles (a rejection that vanishes), and promises passed where a plain callback is
// expected. Each file is checked against the tsconfig.json nearest to it (projectService):
// src/ and test/ against ./tsconfig.json, e2e/suite/ against e2e/tsconfig.json.

import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default defineConfig(
  { ignores: ['dist/**', 'out/**', 'node_modules/**', '.e2e/**'] },
  js.configs.recommended,
  {
    files: ['**/*.ts'],
    extends: [tseslint.configs.strictTypeChecked, tseslint.configs.stylisticTypeChecked],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // A `switch` over a union must name every member (or say `default` on purpose).
      '@typescript-eslint/switch-exhaustiveness-check': [
        'error',
        { considerDefaultExhaustiveForUnions: true },
      ],
      // VS Code's API returns Thenables, not Promises: check those too. `void promise` is how
      // this code says "fire and forget, errors handled inside".
      '@typescript-eslint/no-floating-promises': ['error', { ignoreVoid: true, checkThenables: true }],
      '@typescript-eslint/no-confusing-void-expression': ['error', { ignoreArrowShorthand: true }],
      // Numbers and booleans in messages are fine; objects (`[object Object]`) are not.
      '@typescript-eslint/restrict-template-expressions': [
        'error',
        { allowNumber: true, allowBoolean: true },
      ],
      '@typescript-eslint/consistent-type-imports': [
        'error',
        { prefer: 'type-imports', fixStyle: 'inline-type-imports' },
      ],
      // `T[]` for simple types, `Array<A | B>` where brackets would need parentheses.
      '@typescript-eslint/array-type': ['error', { default: 'array-simple' }],
      eqeqeq: ['error', 'always'],
    },
  },
  {
    // Tests: node:test's `describe`/`it` return promises the runner awaits; a `!` on a
    // fixture the test just built (or a regex group it just matched) is an assertion that
    // fails loudly, which is what a test wants.
    files: ['test/**/*.ts', 'e2e/suite/**/*.ts'],
    rules: {
      '@typescript-eslint/no-non-null-assertion': 'off',
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          ignoreVoid: true,
          checkThenables: true,
          allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['describe', 'it'] }],
        },
      ],
    },
  },
  {
    // Plain JavaScript run by Node: this file and e2e/run.mjs.
    files: ['**/*.mjs'],
    languageOptions: { globals: { ...globals.node }, sourceType: 'module' },
  },
);
