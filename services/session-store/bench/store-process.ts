// A session-store process for the benches, run as deployed.
import { type ChildProcess, spawn } from "node:child_process";
import { resolve } from "node:path";
import { cpuSecondsOf } from "@fleet/testkit";

const NODE_FLAGS = (process.env.BENCH_NODE_FLAGS ?? "--max-semi-space-size=64").split(" ").filter(Boolean);
const SRC = resolve(import.meta.dirname, "../src");

/** Runs `src/<script>.ts` in its own node process; resolves once `ready` matches its output (or it exits). */
export function runStoreProcess(script: "main" | "cli", args: string[], env: Record<string, string>, ready: RegExp) {
  const child: ChildProcess = spawn(
    process.execPath,
    [...NODE_FLAGS, "--import", "tsx", "--conditions=@fleet/source", resolve(SRC, `${script}.ts`), ...args],
    { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...env } },
  );
  let output = "";
  const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
  const started = new Promise<void>((resolveReady, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (ready.test(output)) resolveReady();
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    void exited.then((code) =>
      ready.test(output) ? resolveReady() : reject(new Error(`${script} exited ${code}: ${output}`)),
    );
  });
  return {
    started,
    exited,
    output: () => output,
    cpuSeconds: () => cpuSecondsOf(child.pid),
    stop: async () => {
      if (child.exitCode === null) child.kill("SIGTERM");
      await exited;
    },
  };
}
