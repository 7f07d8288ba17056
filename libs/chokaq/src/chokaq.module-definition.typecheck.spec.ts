/**
 * Compile-time check: the spelled-out `ChokaQForRootOptions` and `ChokaQForRootAsyncOptions` are
 * exactly the types Nest's `ConfigurableModuleBuilder` gives `forRoot` and `forRootAsync`, so
 * `npm run typecheck` fails if either side changes. The Jest part only proves the file loads.
 */
import type {
  CHOKAQ_ASYNC_OPTIONS_TYPE,
  CHOKAQ_OPTIONS_TYPE,
  ChokaQForRootAsyncOptions,
  ChokaQForRootOptions,
} from './chokaq.module-definition';

/** Exact equality (not just mutual assignability, which any two all-optional types have). */
type Same<A, B> =
  (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;

export const forRootOptionsAreTheBuilders: Same<ChokaQForRootOptions, typeof CHOKAQ_OPTIONS_TYPE> =
  true;
export const forRootAsyncOptionsAreTheBuilders: Same<
  ChokaQForRootAsyncOptions,
  typeof CHOKAQ_ASYNC_OPTIONS_TYPE
> = true;
// A type that differs is refused, so the check above can fail.
// @ts-expect-error the async options are not the sync ones
export const differentTypesAreRefused: Same<ChokaQForRootOptions, ChokaQForRootAsyncOptions> = true;

describe('ChokaQForRootOptions and ChokaQForRootAsyncOptions (compile-time)', () => {
  it('loads', () => {
    expect(forRootOptionsAreTheBuilders && forRootAsyncOptionsAreTheBuilders).toBe(true);
  });
});
