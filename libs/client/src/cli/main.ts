// Entry of the `fleet` command: every failure becomes one line on stderr and a non-zero exit.
import { CommanderError } from "commander";
import { isFleetError } from "../index.js";
import { CliError, EXIT } from "./cli-error.js";
import { errStyle, processIo } from "./io.js";
import { buildProgram } from "./program.js";

export async function main(argv: string[]): Promise<number> {
  let exitCode = 0;
  const program = buildProgram(
    (natsUrl, authFlags) => processIo(natsUrl, authFlags),
    (code) => {
      exitCode = code;
    },
  );
  try {
    await program.parseAsync(argv, { from: "user" });
    return exitCode;
  } catch (err) {
    if (err instanceof CommanderError) {
      // Help and version are exits with code 0; usage errors were already printed as one line.
      return err.exitCode === 0 ? 0 : EXIT.usage;
    }
    process.stderr.write(`${errStyle(processIo()).red(`fleet: ${describe(err)}`)}\n`);
    return err instanceof CliError ? err.exitCode : EXIT.failed;
  }
}

function describe(err: unknown): string {
  if (err instanceof CliError || isFleetError(err)) return err.message;
  if (err instanceof Error) return err.message.split("\n")[0] || err.name;
  return String(err);
}

// A closed pipe (`fleet watch s | head`) ends the command quietly instead of with a stack trace.
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (err: NodeJS.ErrnoException) => {
    if (err.code === "EPIPE") process.exit(0);
    throw err;
  });
}

for (const event of ["unhandledRejection", "uncaughtException"] as const) {
  process.on(event, (reason: unknown) => {
    process.stderr.write(`fleet: ${describe(reason)}\n`);
    process.exit(EXIT.failed);
  });
}

const code = await main(process.argv.slice(2));
process.exitCode = code;
// Streams and timers of a finished command must not keep the process alive.
setTimeout(() => process.exit(code), 200).unref();
