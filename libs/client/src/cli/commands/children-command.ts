// `fleet tree <id> --children`: the session's child sessions (sub-agents, change 57), as a tree with
// each child's status and spend.
import { formatSpend } from "@fleet/protocol";
import type { SessionChild } from "../../session-children.js";
import type { Style } from "../ansi.js";
import { CliError } from "../cli-error.js";
import { withClient } from "../connect.js";
import { type CliIo, outStyle } from "../io.js";

export async function childrenTreeCommand(
  io: CliIo,
  sessionId: string,
  opts: { json?: boolean; depth?: number },
): Promise<number> {
  const depth = opts.depth ?? 3;
  if (!Number.isInteger(depth) || depth < 1) throw new CliError("--depth must be a whole number of at least 1");
  return withClient(io, async (client) => {
    const children = await client.children(sessionId, { depth });
    if (opts.json) {
      io.stdout.write(`${JSON.stringify({ sessionId, children })}\n`);
      return 0;
    }
    const style = outStyle(io);
    io.stdout.write(
      `${style.bold(`session ${sessionId}`)}${children.length === 0 ? style.dim(" (no children)") : ""}\n`,
    );
    for (const line of drawChildren(children, "", style)) io.stdout.write(`${line}\n`);
    return 0;
  });
}

/** One line per child, indented under its parent like `drawTree`. */
export function drawChildren(children: readonly SessionChild[], indent: string, style: Style): string[] {
  const lines: string[] = [];
  children.forEach((child, i) => {
    const last = i === children.length - 1;
    const status =
      child.status === "running"
        ? style.yellow("running")
        : child.status === "idle"
          ? style.green("idle")
          : style.dim("pending");
    const label = [child.agent, child.description].filter(Boolean).join(": ");
    lines.push(
      `${indent}${last ? "└─" : "├─"} ${child.sessionId} ${status}${label ? ` ${label}` : ""} ${style.dim(formatSpend(child.spend))}`,
    );
    if (child.children) lines.push(...drawChildren(child.children, `${indent}${last ? "   " : "│  "}`, style));
  });
  return lines;
}
