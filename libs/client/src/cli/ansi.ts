// Terminal styling; everything is plain text when colour is off (not a TTY, NO_COLOR, FORCE_COLOR=0).

export interface Style {
  readonly enabled: boolean;
  dim(text: string): string;
  bold(text: string): string;
  red(text: string): string;
  green(text: string): string;
  yellow(text: string): string;
  cyan(text: string): string;
  magenta(text: string): string;
}

const wrap = (enabled: boolean, open: number, close: number) => (text: string) =>
  enabled ? `\u001b[${open}m${text}\u001b[${close}m` : text;

export function createStyle(enabled: boolean): Style {
  return {
    enabled,
    dim: wrap(enabled, 2, 22),
    bold: wrap(enabled, 1, 22),
    red: wrap(enabled, 31, 39),
    green: wrap(enabled, 32, 39),
    yellow: wrap(enabled, 33, 39),
    cyan: wrap(enabled, 36, 39),
    magenta: wrap(enabled, 35, 39),
  };
}

/** Colour for a stream: on for a TTY unless NO_COLOR is set; FORCE_COLOR=1 forces it on, 0 off. */
export function colorFor(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.FORCE_COLOR === "0") return false;
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== "") return true;
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== "") return false;
  return stream.isTTY === true;
}

/** Clears the current terminal line and returns the cursor to its start. */
export const CLEAR_LINE = "\r\u001b[K";
