// Bad arguments and unreachable servers: one clear line on stderr, a non-zero exit, no stack trace.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { getFreePort } from "@fleet/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CliResult, runCli } from "./support/run-cli.js";

let dir: string;
let closedPort: number;
const env = () => ({ FLEET_HOME: join(dir, ".fleet") });
const run = (args: string[], extra: NodeJS.ProcessEnv = {}) => runCli(args, { cwd: dir, env: { ...env(), ...extra } });

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "fleet-cli-errors-"));
  closedPort = await getFreePort();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function expectOneLine(result: CliResult, line: string, code: number) {
  expect({ code: result.code, stdout: result.stdout, stderr: result.stderr }).toEqual({
    code,
    stdout: "",
    stderr: `${line}\n`,
  });
}

describe("fleet CLI / bad arguments", () => {
  it("reports a missing argument", async () => {
    expectOneLine(await run(["watch"]), "fleet: missing required argument 'sessionId'", 2);
  });

  it("reports an invalid session id", async () => {
    expectOneLine(
      await run(["tree", "not.a.token"]),
      "fleet: command-argument value 'not.a.token' is invalid for argument 'sessionId'. a session id is 1-128 characters of A-Z a-z 0-9 _ -",
      2,
    );
  });

  it("reports an invalid option value", async () => {
    expectOneLine(
      await run(["replay", "s-1", "--to", "soon"]),
      "fleet: option '--to <seq>' argument 'soon' is invalid. must be a non-negative integer",
      2,
    );
  });

  it("reports an unknown command", async () => {
    expectOneLine(await run(["frobnicate"]), "fleet: unknown command 'frobnicate'", 2);
  });

  it("reports an empty prompt", async () => {
    expectOneLine(await run(["prompt", " "]), "fleet: the text is empty", 2);
  });

  it("reports an unreadable import file", async () => {
    expectOneLine(
      await run(["import", join(dir, "missing.jsonl")]),
      `fleet: cannot read ${join(dir, "missing.jsonl")}: ENOENT`,
      1,
    );
  });

  it("reports an import file that is not a pi session", async () => {
    const file = join(dir, "bad.jsonl");
    writeFileSync(file, '{"type":"nonsense"}\n');
    const result = await run(["import", file]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      new RegExp(
        `^fleet: ${file.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} is not a pi v3 session file: line 1: invalid session header: .+\\n$`,
      ),
    );
  });
});

describe("fleet CLI / unreachable servers", () => {
  it("names the URL and where it came from (NATS_URL)", async () => {
    const url = `nats://127.0.0.1:${closedPort}`;
    expectOneLine(await run(["sessions"], { NATS_URL: url }), `fleet: cannot reach NATS at ${url} (from NATS_URL)`, 1);
  });

  it("names the URL and where it came from (--nats)", async () => {
    const url = `nats://127.0.0.1:${closedPort}`;
    expectOneLine(
      await run(["--nats", url, "prompt", "-s", "s-1", "hello"]),
      `fleet: cannot reach NATS at ${url} (from --nats)`,
      1,
    );
  });

  it("doctor reports the unreachable server as a failed check", async () => {
    const url = `nats://127.0.0.1:${closedPort}`;
    const result = await run(["doctor"], { NATS_URL: url, REDIS_URL: `redis://127.0.0.1:${closedPort}` });
    expect(result.code).toBe(1);
    expect(result.stdout.split("\n")).toEqual([
      `✗ NATS ${url}: unreachable (connection refused)`,
      `✗ Redis redis://127.0.0.1:${closedPort}: ECONNREFUSED`,
      "not ready",
      "",
    ]);
    expect(result.stderr).toBe("");
  });
});
