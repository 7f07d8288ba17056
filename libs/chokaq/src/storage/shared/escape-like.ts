/**
 * Escapes `%`, `_`, `[` and the escape character itself for a `LIKE … ESCAPE '\'` pattern, so a
 * search term is matched literally (`[` matters on SQL Server, where it opens a character class).
 */
export function escapeLike(term: string): string {
  return term.replace(/[\\%_[]/g, (c) => `\\${c}`);
}
