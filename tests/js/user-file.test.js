// The pages' user-file rule (static/js/contract.js, generated from contract/userfile.py) gives the same answers as
// the engine's and the web app's.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { isUserFile } from "../../static/js/contract.js";

// The cases: tests/fixtures/user_file_cases.json, the same table tests/engine/test_user_file.py reads.
const CASES = JSON.parse(readFileSync(new URL("../fixtures/user_file_cases.json", import.meta.url), "utf8"));

test("isUserFile agrees with contract/userfile.py", () => {
  for (const [path, filename, expected] of CASES) assert.equal(isUserFile(path, filename), expected, String(path));
});
