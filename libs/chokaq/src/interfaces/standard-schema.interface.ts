/*
 * What ChokaQ needs of a payload validator, written against Standard Schema v1
 * (https://standardschema.dev): a `~standard` property with `version: 1`, a `validate` function
 * that returns (or resolves to) either the accepted value or a list of issues, and, for type
 * inference, the phantom `types`. The types below are structural: zod (≥ 3.24), valibot (≥ 1.0),
 * arktype (≥ 2.0) and any other v1 implementation satisfy them without ChokaQ depending on one of
 * them, or on `@standard-schema/spec`, so the published declarations need no other package.
 * `decorators/job-definition-schema.typecheck.spec.ts` checks zod and valibot schemas against them.
 */

/** One segment of an issue's path: a key, or an object that carries one. */
export type StandardSchemaPathSegment = PropertyKey | { readonly key: PropertyKey };

/** Something a validator found wrong, and where. @publicApi */
export interface StandardSchemaIssue {
  readonly message: string;
  /** From the validated value's root to the offending part; absent for the root itself. */
  readonly path?: ReadonlyArray<StandardSchemaPathSegment> | undefined;
}

/**
 * What `validate` returns: the value it accepted (maybe transformed, with defaults applied), or
 * its issues. Only a falsy `issues` means success, so an empty list is still a failure.
 * @publicApi
 */
export type StandardSchemaResult<Output> =
  | { readonly value: Output; readonly issues?: undefined }
  | { readonly issues: ReadonlyArray<StandardSchemaIssue> };

/**
 * A payload validator that implements Standard Schema v1. `Input` is what a producer may pass,
 * `Output` what the handler receives after validation.
 * @publicApi
 */
export interface StandardSchemaV1<Input = unknown, Output = Input> {
  readonly '~standard': {
    readonly version: 1;
    /** Which library made the schema (`zod`, `valibot`, …). */
    readonly vendor: string;
    readonly validate: (
      value: unknown,
      options?: { readonly libraryOptions?: Record<string, unknown> | undefined } | undefined,
    ) => StandardSchemaResult<Output> | Promise<StandardSchemaResult<Output>>;
    /** Carries the two types for inference only; never read at run time. */
    readonly types?: { readonly input: Input; readonly output: Output } | undefined;
  };
}

/** The payload type a producer passes for schema `S`. @publicApi */
export type StandardSchemaInput<S extends StandardSchemaV1> = NonNullable<
  S['~standard']['types']
>['input'];

/** The payload type a handler receives for schema `S`. @publicApi */
export type StandardSchemaOutput<S extends StandardSchemaV1> = NonNullable<
  S['~standard']['types']
>['output'];
