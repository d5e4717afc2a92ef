// @ts-check
import js from '@eslint/js';
import { defineConfig, globalIgnores } from 'eslint/config';
import tseslint from 'typescript-eslint';

/** Node globals for the few plain .js/.mjs files (TS files get no-undef turned off). */
const nodeGlobals = {
  process: 'readonly',
  console: 'readonly',
  URL: 'readonly',
  Buffer: 'readonly',
  setTimeout: 'readonly',
  clearTimeout: 'readonly',
};

export default defineConfig(
  globalIgnores(['dist/', 'node_modules/', 'coverage/', '.tmp/']),
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: 'module',
      globals: nodeGlobals,
    },
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
    },
  },
  {
    // No source file over 300 lines (docs/development.md; Lua files: scripts/embed-lua.mjs).
    files: ['**/*.{ts,cts,mts,js,cjs,mjs}'],
    ignores: ['**/*.generated.ts'],
    rules: { 'max-lines': ['error', { max: 300 }] },
  },
  {
    // CommonJS config files (dependency-cruiser's config and the layer table it reads).
    files: ['**/*.cjs'],
    languageOptions: {
      sourceType: 'commonjs',
      globals: { ...nodeGlobals, module: 'writable', require: 'readonly' },
    },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
