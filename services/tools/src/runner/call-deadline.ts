/**
 * When a call must end, and the budget its deadline error names:
 * - the request carries an absolute `deadline` (epoch ms, > 0): that instant, with the budget
 *   counted from the request's publication (`publishedAt`, epoch ms; never negative);
 * - otherwise the tool's `timeoutMs`, counted from the start of execution.
 */
export function decideDeadline(input: {
  requestDeadline: number;
  publishedAt: number;
  startedAt: number;
  timeoutMs: number;
}): { deadlineAt: number; deadlineMs: number } {
  if (input.requestDeadline > 0) {
    return { deadlineAt: input.requestDeadline, deadlineMs: Math.max(0, input.requestDeadline - input.publishedAt) };
  }
  return { deadlineAt: input.startedAt + input.timeoutMs, deadlineMs: input.timeoutMs };
}
