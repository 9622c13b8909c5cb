// Module resolve hook: adds the `@fleet/source` condition, so `@fleet/*` imports resolve to src/*.ts.
export async function resolve(specifier, context, nextResolve) {
  const conditions = context.conditions.includes("@fleet/source")
    ? context.conditions
    : [...context.conditions, "@fleet/source"];
  return nextResolve(specifier, { ...context, conditions });
}
