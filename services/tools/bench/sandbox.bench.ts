// `npm run bench:sandbox`: what the bubblewrap sandbox costs one `bash` call, against the same
// call with FLEET_SANDBOX=off in the same run (interleaved rounds, so both see the same load), and
// what the workspace quota adds to a sandboxed call (`quota`: FLEET_WORKSPACE_QUOTA_MB's default).
import { createBashTool } from "../src/builtin/bash.js";
import { sandboxSettings } from "../src/sandbox/sandbox-settings.js";
import { createHarness, type Harness } from "../src/testing/tool-harness.js";

const CALLS = Number(process.env.BENCH_SANDBOX_CALLS ?? 200);
const ROUNDS = 4;
const bash = createBashTool();

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;

async function round(h: Harness, calls: number, into: number[]) {
  for (let i = 0; i < calls; i++) {
    const t0 = performance.now();
    await h.run(bash, { command: "true" });
    into.push(performance.now() - t0);
  }
}

const off = await createHarness({ sandbox: sandboxSettings({ mode: "off" }) });
const sandboxed = await createHarness();
const quota = await createHarness({ quotaBytes: 4096 * 1024 * 1024 });
if (sandboxed.ctx.sandbox.status.mode !== "bwrap") {
  throw new Error(`sandbox unavailable: ${JSON.stringify(sandboxed.ctx.sandbox.status)}`);
}
const times = { off: [] as number[], bwrap: [] as number[], quota: [] as number[] };
await round(off, 10, []);
await round(sandboxed, 10, []);
await round(quota, 10, []);
for (let r = 0; r < ROUNDS; r++) {
  await round(off, CALLS / ROUNDS, times.off);
  await round(sandboxed, CALLS / ROUNDS, times.bwrap);
  await round(quota, CALLS / ROUNDS, times.quota);
}
await off.cleanup();
await sandboxed.cleanup();
await quota.cleanup();

console.log(`bash {command: "true"}, ${CALLS} calls each (${JSON.stringify(sandboxed.ctx.sandbox.status)})`);
for (const [name, list] of Object.entries(times)) {
  const sorted = [...list].sort((a, b) => a - b);
  console.log(
    `  ${name.padEnd(6)} p50 ${quantile(sorted, 0.5).toFixed(1)} ms  p99 ${quantile(sorted, 0.99).toFixed(1)} ms`,
  );
}
const p50 = (l: number[]) =>
  quantile(
    [...l].sort((a, b) => a - b),
    0.5,
  );
console.log(`  sandbox overhead at p50: ${(p50(times.bwrap) - p50(times.off)).toFixed(1)} ms per call`);
console.log(`  quota overhead at p50: ${(p50(times.quota) - p50(times.bwrap)).toFixed(1)} ms per call`);
