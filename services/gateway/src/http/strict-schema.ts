// Request bodies are strict all the way down: an unknown key anywhere is a 400, never silently
// dropped (a misspelt `systemPromt` must not leave the session without its prompt).
import { z } from "zod";

type Def = z.core.$ZodTypeDef & Record<string, unknown>;
type Schema = z.ZodType;

/** `def` with `patch`'s fields in place (getters, such as an object's lazy `shape`, copied as they are). */
const withDef = (def: Def, patch: Record<string, unknown>): Def =>
  Object.defineProperties({} as Def, {
    ...Object.getOwnPropertyDescriptors(def),
    ...Object.getOwnPropertyDescriptors(patch),
  });

/**
 * The same schema with every object that strips unknown keys (zod's default) made strict, at any
 * depth: inside arrays, unions, records' values, optionals, defaults, pipes and lazy schemas.
 * Objects that accept unknown keys on purpose (`looseObject`, a `catchall`) keep doing so, and the
 * two sides of an intersection are left as they are (each would refuse the other's keys).
 * Refinements and other checks are kept. Built once, at start-up.
 */
export function strictSchema<S extends Schema>(schema: S): S {
  return strictOf(schema, new Map()) as S;
}

function strictOf(schema: Schema, done: Map<Schema, Schema>): Schema {
  const known = done.get(schema);
  if (known) return known;
  // A schema reached again while it is being built (a recursive shape) gets its result lazily.
  done.set(
    schema,
    z.lazy(() => done.get(schema) as Schema),
  );
  const result = rebuilt(schema, (child) => strictOf(child, done));
  done.set(schema, result);
  return result;
}

function rebuilt(schema: Schema, strict: (child: Schema) => Schema): Schema {
  const def = schema._zod.def as Def;
  const clone = (patch: Record<string, unknown>) => schema.clone(withDef(def, patch) as never) as Schema;
  switch (def.type) {
    case "object": {
      const shape = def.shape as Record<string, Schema>;
      const catchall = def.catchall as Schema | undefined;
      return clone({
        shape: Object.fromEntries(Object.entries(shape).map(([key, value]) => [key, strict(value)])),
        catchall: catchall === undefined ? z.never() : strict(catchall),
      });
    }
    case "array":
      return clone({ element: strict(def.element as Schema) });
    case "tuple":
      return clone({
        items: (def.items as Schema[]).map(strict),
        rest: def.rest === null || def.rest === undefined ? def.rest : strict(def.rest as Schema),
      });
    case "union":
      return clone({ options: (def.options as Schema[]).map(strict) });
    case "record":
      return clone({ valueType: strict(def.valueType as Schema) });
    case "pipe":
      return clone({ in: strict(def.in as Schema), out: strict(def.out as Schema) });
    case "lazy": {
      const getter = def.getter as () => Schema;
      let inner: Schema | undefined;
      return clone({
        getter: () => {
          inner ??= strict(getter());
          return inner;
        },
      });
    }
    case "optional":
    case "nullable":
    case "default":
    case "prefault":
    case "nonoptional":
    case "readonly":
    case "catch":
    case "success":
    case "promise":
      return clone({ innerType: strict(def.innerType as Schema) });
    default:
      return schema;
  }
}
