import { CatalogueEntry, SCHEMA } from './statements';
import { HintedReference, tableHints } from './tsql-grammar';

const DIRTY = /\b(NOLOCK|READUNCOMMITTED)\b|READ\s+UNCOMMITTED/i;
/** The claiming UPDATE: Fetched, or Processing for the first `@start` rows of the batch. */
const CLAIM_UPDATE =
  /\bUPDATE\s+h\s+SET\s+h\.Status\s*=\s*(?:1\b|CASE WHEN k\.Rn <= @\d+ THEN 2 ELSE 1 END)/gi;
/** A `ROW_NUMBER()` and the first source after it (the FROM of its SELECT). */
const RANKED_SOURCE = /\bROW_NUMBER\s*\([^;]*?\bFROM\s+(\S+)/gi;

function refsTo(refs: HintedReference[], table: string): HintedReference[] {
  return refs.filter((r) => r.table.replace(/\s+/g, '') === `[${SCHEMA}].[${table}]`);
}

function hasAll(ref: HintedReference, hints: readonly string[]): boolean {
  return hints.every((h) => ref.hints.includes(h));
}

/** Positions of `needles` in `text` must exist and increase. */
function inOrder(text: string, needles: readonly RegExp[]): string | null {
  let from = 0;
  for (const needle of needles) {
    const match = new RegExp(needle.source, needle.flags.replace('g', '') + 'g');
    match.lastIndex = from;
    const m = match.exec(text);
    if (!m) return `missing ${needle} after position ${from}`;
    from = m.index + m[0].length;
  }
  return null;
}

/**
 * The lock and isolation rules of SPEC §3 for one statement, checked on the parse tree's table
 * hints and on the batch text. Returns every rule it breaks (empty = fine).
 */
export function lockViolations(entry: CatalogueEntry): string[] {
  const sql = entry.statement.sql;
  const out: string[] = [];
  const refs = tableHints(sql);

  for (const ref of refs) {
    const dirty = ref.hints.some((h) => h === 'NOLOCK' || h === 'READUNCOMMITTED');
    if (dirty && (ref.hints.includes('UPDLOCK') || ref.hints.includes('XLOCK'))) {
      out.push(`${ref.table}: UPDLOCK/XLOCK together with NOLOCK on one table reference`);
    }
    if (ref.hints.includes('READPAST') && !ref.hints.includes('ROWLOCK')) {
      out.push(`${ref.table}: READPAST without ROWLOCK (page locks would still block)`);
    }
    // Table hints: under READ_COMMITTED_SNAPSHOT (the Azure SQL default) READPAST at READ COMMITTED
    // needs READCOMMITTEDLOCK. An UPDLOCK read takes its locks anyway; the live suite checks both.
    if (
      ref.hints.includes('READPAST') &&
      !ref.hints.includes('READCOMMITTEDLOCK') &&
      !ref.hints.includes('UPDLOCK')
    ) {
      out.push(
        `${ref.table}: READPAST without READCOMMITTEDLOCK (fails under READ_COMMITTED_SNAPSHOT)`,
      );
    }
  }
  if (entry.kind !== 'telemetry' && DIRTY.test(sql)) {
    out.push('dirty read (NOLOCK / READ UNCOMMITTED) outside a telemetry read');
  }
  const begins = (sql.match(/\bBEGIN\s+TRAN(SACTION)?\b/gi) ?? []).length;
  const commits = (sql.match(/\bCOMMIT(\s+TRAN(SACTION)?)?\s*;/gi) ?? []).length;
  if (begins !== commits) out.push(`BEGIN TRAN ×${begins} but COMMIT ×${commits}`);
  if (begins > 0 && !/SET\s+XACT_ABORT\s+ON/i.test(sql)) {
    out.push('explicit transaction without SET XACT_ABORT ON');
  }

  if (entry.kind === 'claim') {
    const hot = refsTo(refs, 'JobsHot');
    if (!hot.some((r) => hasAll(r, ['UPDLOCK', 'READPAST', 'ROWLOCK']))) {
      out.push('claim: candidates are not read WITH (UPDLOCK, READPAST, ROWLOCK)');
    }
    if (!hot.some((r) => r.hints.includes('READCOMMITTEDLOCK') && !r.hints.includes('READPAST'))) {
      out.push('claim: the active count is not read WITH (READCOMMITTEDLOCK)');
    }
    if (!refsTo(refs, 'Queues').some((r) => r.hints.includes('UPDLOCK'))) {
      out.push('claim: budgeted Queues rows are not locked WITH (UPDLOCK)');
    }
    const order = inOrder(sql, [
      /SET XACT_ABORT ON;/,
      /BEGIN TRAN;/,
      CLAIM_UPDATE,
      /OUTPUT inserted\.\*/,
      /COMMIT;/,
    ]);
    if (order) out.push(`claim: ${order}`);
    if ((sql.match(CLAIM_UPDATE) ?? []).length !== 1) {
      out.push('claim: not exactly one claiming UPDATE');
    }
    // Ranking the bounded candidates (at most `limit` per queue) is O(batch); any other
    // ROW_NUMBER() ranks hot rows, i.e. the backlog.
    const ranked = [...sql.matchAll(RANKED_SOURCE)];
    const rankCount = (sql.match(/\bROW_NUMBER\s*\(/gi) ?? []).length;
    if (rankCount !== ranked.length || ranked.some((m) => m[1] !== 'Candidates')) {
      out.push('claim: ROW_NUMBER() over the backlog (O(backlog))');
    }
    if (!/CROSS APPLY \(\s*SELECT TOP \(/i.test(sql))
      out.push('claim: no CROSS APPLY (SELECT TOP …)');
  }

  if (entry.kind === 'move') {
    const order = inOrder(sql, [
      /SET XACT_ABORT ON;/,
      /BEGIN TRAN;/,
      /OUTPUT deleted\.\* INTO @Moved/,
      /INSERT INTO /,
      /COMMIT;/,
    ]);
    if (order) out.push(`move: ${order}`);
  }
  return out;
}
