/**
 * The brand of an argument that passed the validating edge of the storage
 * (`storage/validated-job-storage.ts`). A dialect method that takes `Checked<T>` states in its
 * signature that it runs no input rule of its own: the edge applied the one limits table before
 * any SQL, so one input is accepted or refused the same way on every dialect. Only the edge
 * applies the brand; the symbol exists in types only and costs nothing at run time.
 */
declare const checked: unique symbol;

/** `T` after the validating edge checked and normalised it. @internal */
export type Checked<T> = T & { readonly [checked]: true };
