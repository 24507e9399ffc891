// ESLint (flat config) for every JavaScript file of the project: `make lint-js`. The pages' scripts are ES modules
// in the browser (static/js, static/src), the layout worker is a module worker, tests/js runs under node's test
// runner. Bundles in static/vendor/ are built, not written here.
import js from "@eslint/js";
import globals from "globals";

export default [
  { ignores: ["static/vendor/**", "node_modules/**", ".venv/**"] },
  js.configs.recommended,
  {
    languageOptions: { ecmaVersion: 2024, sourceType: "module" },
    rules: {
      eqeqeq: ["error", "always", { null: "ignore" }],
      "no-var": "error",
      "prefer-const": ["error", { destructuring: "all" }],
      "no-unused-vars": ["error", { args: "after-used", caughtErrors: "none" }],
      "no-shadow": ["error", { builtinGlobals: false }],
      "object-shorthand": ["error", "properties"],
    },
  },
  { files: ["static/**/*.js"], languageOptions: { globals: globals.browser } },
  { files: ["static/js/graph-worker.js"], languageOptions: { globals: globals.worker } },
  { files: ["tests/js/**/*.js", "eslint.config.js"], languageOptions: { globals: globals.node } },
];
