/**
 * Schemas are any Standard Schema validator (zod 4, valibot, arktype, …). The interface is
 * copied from https://standardschema.dev as its authors recommend, so steplog needs none of them.
 */

export interface StandardSchemaV1<Input = unknown, Output = Input> {
  readonly "~standard": {
    readonly version: 1;
    readonly vendor: string;
    readonly validate: (value: unknown) => StandardResult<Output> | Promise<StandardResult<Output>>;
    readonly types?: { readonly input: Input; readonly output: Output } | undefined;
  };
}

type StandardResult<Output> =
  | { readonly value: Output; readonly issues?: undefined }
  | { readonly issues: ReadonlyArray<{ readonly message: string; readonly path?: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }> | undefined }> };

export type InferOutput<S> = S extends StandardSchemaV1<unknown, infer O> ? O : never;
export type InferInput<S> = S extends StandardSchemaV1<infer I, unknown> ? I : never;

export type Validation<T> = { ok: true; value: T } | { ok: false; issues: string[] };

/** Run a schema and flatten its issues into readable lines ("items.0.name: Required"). */
export async function validate<T>(schema: StandardSchemaV1<unknown, T>, value: unknown): Promise<Validation<T>> {
  const result = await schema["~standard"].validate(value);
  if (result.issues === undefined) return { ok: true, value: (result as { value: T }).value };
  return { ok: false, issues: issueLines(result.issues) };
}

/** A schema's issues as readable lines ("items.0.name: Required"). */
export function issueLines(issues: Exclude<StandardResult<unknown>["issues"], undefined>): string[] {
  return issues.map((issue) => {
    const path = (issue.path ?? []).map((p) => String(typeof p === "object" && p !== null && "key" in p ? p.key : p)).join(".");
    return path === "" ? issue.message : `${path}: ${issue.message}`;
  });
}

export function isSchema(value: unknown): value is StandardSchemaV1 {
  return typeof value === "object" && value !== null && "~standard" in value;
}
