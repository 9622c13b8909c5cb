// An error the CLI reports as one line (`fleet: <message>`) with a given exit code.
export class CliError extends Error {
  readonly exitCode: number;
  constructor(message: string, exitCode = 1) {
    super(message);
    this.name = "CliError";
    this.exitCode = exitCode;
  }
}

/** Exit codes: 1 = the operation failed, 2 = bad usage. */
export const EXIT = { failed: 1, usage: 2 } as const;
