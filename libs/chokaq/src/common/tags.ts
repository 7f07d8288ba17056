/**
 * Tags are stored as one comma-joined string with leading and trailing commas (`,a,b,`), so one tag
 * matches exactly with `LIKE '%,a,%'` (SPEC §2). No tags is stored as NULL.
 */
export function encodeTags(tags: readonly string[] | undefined | null): string | null {
  if (!tags || tags.length === 0) return null;
  return `,${tags.join(',')},`;
}

/** Inverse of {@link encodeTags}. */
export function decodeTags(stored: string | null | undefined): string[] {
  if (!stored) return [];
  return stored.split(',').filter((t) => t.length > 0);
}
