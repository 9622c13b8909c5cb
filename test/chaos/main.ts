// `npm run chaos`: the randomized fault suite of issue 13. Prints the schedule, progress and the
// report; the last line is `chaos: <F> faults, <S> sessions, <P> prompts done, <V> violations`.
// Exits 1 on any violation, 2 on bad options or a run that could not be carried out.
import { parseOptions, USAGE } from "./options.js";
import { runChaos } from "./run-chaos.js";
import type { System } from "./system.js";

const started = Date.now();
const log = (line: string) => process.stdout.write(`[${((Date.now() - started) / 1000).toFixed(1)}s] ${line}\n`);

let running: System | undefined;
let interrupted = false;
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    if (interrupted) return;
    interrupted = true;
    process.stdout.write(`chaos: ${signal}, stopping every process\n`);
    void (running?.abort() ?? Promise.resolve()).finally(() => process.exit(130));
  });
}

const args = process.argv.slice(2).filter((a) => a !== "--");
if (args.includes("--help") || args.includes("-h")) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}
const options = parseOptions(args, Math.floor(Math.random() * 2 ** 31));
if ("error" in options) {
  process.stderr.write(`chaos: ${options.error}\n${USAGE}\n`);
  process.exit(2);
}

try {
  const result = await runChaos(options, log, (s) => {
    running = s;
  });
  for (const line of result.lines) process.stdout.write(`${line}\n`);
  process.exit(result.violations === 0 ? 0 : 1);
} catch (err) {
  process.stderr.write(`chaos: the run could not be carried out: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(2);
}
