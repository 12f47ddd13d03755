// ESLint for the course's own JavaScript (`make lint`; the rules of
// ESLint's recommended set, and lines of at most 100 characters). Prettier
// (.prettierrc.json) formats the same files; this file does not repeat its
// rules.
import js from "@eslint/js";
import globals from "globals";

export default [
  { ignores: ["node_modules/", "_build/", "_vendor/", "_generated/", ".venv/"] },
  js.configs.recommended,
  {
    files: ["assets/site/**/*.js"],
    languageOptions: {
      ecmaVersion: 2023,
      sourceType: "module",
      globals: { ...globals.browser, ...globals.worker },
    },
  },
  {
    // the page opened from disk (file://) runs one classic script
    files: ["assets/site/explorer/fallback.js"],
    languageOptions: { sourceType: "script" },
  },
  {
    files: ["tests/js/**/*.{js,mjs}", "scripts/*.mjs", "benchmarks/*.mjs"],
    languageOptions: {
      ecmaVersion: 2023,
      sourceType: "module",
      globals: { ...globals.node, ...globals.browser },
    },
  },
  {
    files: ["**/*.{js,mjs}"],
    rules: {
      "max-len": ["error", { code: 100, ignoreUrls: true }],
      "no-unused-vars": ["error", { args: "none", caughtErrors: "none" }],
    },
  },
];
