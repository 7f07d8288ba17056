import { CatalogueEntry, SCHEMA } from './statements';
import { HintedReference, tableHints } from './tsql-grammar';

const DIRTY = /\b(NOLOCK|READUNCOMMITTED)\b|READ\s+UNCOMMITTED/i;
/**
 * The claiming UPDATE: Fetched, or Processing for the first `@start` rows of the batch (less what
 * the grouped queues started, when they went first).
 */
const CLAIM_UPDATE =
  /\bUPDATE\s+h\s+SET\s+h\.Status\s*=\s*(?:1\b|CASE WHEN k\.Rn <= @\d+(?: - @GroupTaken)? THEN 2 ELSE 1 END)/gi;
/** The grouped claim's UPDATE (schema version 17): every row it takes starts. */
const GROUPED_UPDATE =
  /\bUPDATE h SET h\.Status = 2, h\.AttemptCount = h\.AttemptCount \+ 1, h\.StartedAtUtc = @now, h\.HeartbeatUtc = @now,/g;
/** A `ROW_NUMBER()` and the first source after it (the FROM of its SELECT). */
const RANKED_SOURCE = /\bROW_NUMBER\s*\([^;]*?\bFROM\s+(\S+)/gi;
/** The table variables a claim may rank: picked rows, at most its limit per queue or group. */
const RANKED_PICKS = ['@Picked', '@GroupPicked'];
/** A pick by key of rows chosen before: the ordinary claim's, and the grouped claim's. */
const PICK_BY_KEY =
  /FROM @(?:Group)?Candidates AS c\s+INNER LOOP JOIN \S+ AS h WITH \(UPDLOCK, READPAST, ROWLOCK, FORCESEEK\) ON h\.Id = c\.Id\b/g;

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
 * `OUTPUT … INTO @T` clauses that do not name their columns on both sides, or name different
 * ones: with `inserted.*` / `deleted.*` or without `(columns)`, one column added to a table (an
 * audit column, a later migration) breaks the statement. A source column with an alias
 * (`deleted.Fired AS FiredBefore`: the value before an UPDATE beside the one after it) is named by
 * its alias.
 */
function unnamedOutputs(sql: string): string[] {
  const out: string[] = [];
  for (const m of sql.matchAll(/\bOUTPUT\s+([^;]+?)\s+INTO\s+(@\w+)(\s*\(([^)]*)\))?/g)) {
    const source = m[1].split(',').map((c) =>
      c
        .trim()
        .replace(/^(inserted|deleted)\.\w+\s+AS\s+(\w+)$/i, '$2')
        .replace(/^(inserted|deleted)\./i, ''),
    );
    const target = m[4]?.split(',').map((c) => c.trim());
    if (source.some((c) => c.includes('*')) || !target || source.join() !== target.join()) {
      out.push(`OUTPUT … INTO ${m[2]} does not name the same columns on both sides`);
    }
  }
  return out;
}

/**
 * The grouped part of a claim that starts rows (schema version 17; `sql/claim.ts`,
 * `groupedClaim`), or its absence from one that starts none.
 */
function groupedClaimViolations(sql: string, groupedPart: boolean): string[] {
  const out: string[] = [];
  const starts = (sql.match(GROUPED_UPDATE) ?? []).length;
  if (!groupedPart) {
    // A claim that starts nothing leaves the grouped queues out of its unlocked read.
    if (starts > 0) out.push('claim: a claim that starts nothing claims grouped queues');
    if (!/AND q\.GroupConcurrency IS NULL AND q\.GroupRateMax IS NULL\b/.test(sql)) {
      out.push('claim: a claim that starts nothing reads the grouped queues');
    }
    return out;
  }
  if (
    starts !== 1 ||
    !/\bUPDATE h SET h\.Status = 2,[^;]*OUTPUT inserted\.Id, [^;]* INTO @Claimed \(Id, /.test(sql)
  ) {
    out.push('claim: the grouped rows are not started by one UPDATE into @Claimed');
  }
  // The groups' rate windows: the rows that exist by key from @GroupSpent, in its key order; the
  // missing ones inserted under a key-range lock.
  const groups = '\\S+\\[JobGroups\\]';
  if (
    !new RegExp(
      `FROM @GroupSpent AS s\\s+INNER LOOP JOIN ${groups} AS g WITH \\(UPDLOCK, ROWLOCK, FORCESEEK\\) ON g\\.Queue = @gQueue AND g\\.GroupKey = s\\.GroupKey;`,
    ).test(sql) ||
    !new RegExp(
      `FROM ${groups} AS x WITH \\(UPDLOCK, HOLDLOCK\\) WHERE x\\.Queue = @gQueue AND x\\.GroupKey = s\\.GroupKey\\)`,
    ).test(sql)
  ) {
    out.push(
      "claim: the groups' rate windows are not written by key (update, then a range-locked insert)",
    );
  }
  // No Queues row is written (X) before the last JobGroups write: retention holds JobGroups rows
  // while it reads Queues rows. The JobGroups writes are in the loop over the grouped queues, which
  // runs them queue after queue: every Queues write comes after the loop's end (its `END;` at the
  // start of a line; the loop's own blocks are indented).
  const loop = sql.indexOf('WHILE @gLeft > 0');
  const loopEnd = sql.indexOf('\nEND;', loop);
  const groupWrites = [
    ...sql.matchAll(new RegExp(`UPDATE g SET|INSERT INTO \\[${SCHEMA}\\]\\.\\[JobGroups\\]`, 'g')),
  ].map((m) => m.index!);
  const queueWrites = [...sql.matchAll(/\bUPDATE q SET\b/g)].map((m) => m.index!);
  if (
    loop < 0 ||
    groupWrites.length === 0 ||
    groupWrites.some((at) => at < loop || at > loopEnd) ||
    queueWrites.some((at) => at < loopEnd)
  ) {
    out.push('claim: a Queues row is written before the last JobGroups write');
  }
  if (
    !/UPDATE q SET q\.GroupCursor = c\.GroupCursor\s+FROM @Cursors AS c\s+INNER LOOP JOIN \S+ AS q WITH \(UPDLOCK, ROWLOCK, FORCESEEK\) ON q\.Name = c\.Queue;/.test(
      sql,
    )
  ) {
    out.push("claim: the grouped queues' cursors are not written by key from @Cursors");
  }
  return out;
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
    // A pick (UPDLOCK, READPAST) holds its U locks to COMMIT on every row it reads, rejected or
    // not: it must be a seek by key on rows chosen before (FORCESEEK), never a predicate scan.
    if (hasAll(ref, ['UPDLOCK', 'READPAST']) && !ref.hints.includes('FORCESEEK')) {
      out.push(
        `${ref.table}: UPDLOCK pick without FORCESEEK (rows a later predicate rejects stay locked)`,
      );
    }
  }
  out.push(...unnamedOutputs(sql));
  // Counter and bucket rows: locked in key order, from a keyed delta that drives a loop join.
  if (
    /\bUPDATE st SET\b/.test(sql) &&
    !/FROM @StatsDelta AS d\s+INNER LOOP JOIN \S+ AS st ON st\.Queue = d\.Queue;/.test(sql)
  ) {
    out.push('StatsSummary rows are not updated in queue order (from @StatsDelta, loop join)');
  }
  // Batch rows (schema version 18): locked in id order, from a delta keyed by the batch id.
  if (
    /\bUPDATE b SET b\.(Succeeded|Failed)\b/.test(sql) &&
    !/FROM @Batch(Delta|Reopened) AS d\s+INNER LOOP JOIN \S+\[Batches\] AS b ON b\.Id = d\.BatchId;/.test(
      sql,
    )
  ) {
    out.push('Batches rows are not updated in id order (from a keyed delta, loop join)');
  }
  if ((sql.match(/DECLARE @StatsDelta\b/g) ?? []).length > 1) {
    out.push('StatsSummary rows are updated by more than one statement (two passes, two orders)');
  }
  if (
    /\bUPDATE x SET x\.CompletedCount\b/.test(sql) &&
    !/FROM @BucketDelta AS d\s+INNER LOOP JOIN \S+ AS x ON /.test(sql)
  ) {
    out.push('MetricBuckets rows are not updated in key order (from @BucketDelta, loop join)');
  }
  // Idempotency keys locked by a join (a chunk of keys): one seek per key, in key order.
  const keyJoins = sql.match(/\bJOIN \S+ AS h WITH \(UPDLOCK, HOLDLOCK\)/g) ?? [];
  const orderedKeyJoins =
    sql.match(
      /\bFROM @Keys AS k INNER LOOP JOIN \S+ AS h WITH \(UPDLOCK, HOLDLOCK\) ON h\.IdempotencyKey = k\.IdempotencyKey\b/g,
    ) ?? [];
  if (keyJoins.length !== orderedKeyJoins.length) {
    out.push('idempotency keys are range-locked in plan order, not from @Keys in key order');
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
    // Only the budgeted queues' rows, by key: a loop from @Budgeted into a seek on the key. A
    // join the optimiser may run as a merge or hash join U-locks every Queues row it scans.
    const queueLocks = refsTo(refs, 'Queues').filter((r) => r.hints.includes('UPDLOCK'));
    if (
      queueLocks.some((r) => !hasAll(r, ['ROWLOCK', 'FORCESEEK'])) ||
      !/FROM @Budgeted AS b\s+INNER LOOP JOIN \S+ AS q WITH \(UPDLOCK, ROWLOCK, FORCESEEK\) ON q\.Name = b\.Queue\b/.test(
        sql,
      )
    ) {
      out.push('claim: Queues rows are not update-locked by key from @Budgeted');
    }
    // The budget and the rate limit re-read under the lock, and a queue budgeted or limited since
    // the unlocked read held back.
    if (
      !/UPDATE r SET r\.Budget = q\.MaxWorkers, r\.RateMax = q\.RateLimitMax, r\.Grouped = CASE WHEN \(q\.GroupConcurrency IS NOT NULL OR q\.GroupRateMax IS NOT NULL\) THEN 1 ELSE 0 END\s+FROM @Budgeted AS b\b/.test(
        sql,
      )
    ) {
      out.push('claim: MaxWorkers and the group limits are not re-read under the Queues lock');
    }
    if (
      !/UPDATE r SET r\.Budget = 0, r\.RateMax = NULL\s+FROM @Runnable AS r INNER LOOP JOIN \S+ AS q WITH \(READCOMMITTEDLOCK, FORCESEEK\) ON q\.Name = r\.Queue\s+WHERE \(q\.MaxWorkers IS NOT NULL OR q\.RateLimitMax IS NOT NULL OR q\.GroupConcurrency IS NOT NULL OR q\.GroupRateMax IS NOT NULL\) AND NOT EXISTS \(SELECT 1 FROM @Budgeted\b/.test(
        sql,
      )
    ) {
      out.push(
        'claim: a queue budgeted or grouped after the unlocked read is claimed without its limits',
      );
    }
    // A grouped queue's rows are never taken by the ordinary claim (which may leave them Fetched).
    if (!/UPDATE r SET [^;]*r\.Slots = 0\s+FROM @Runnable AS r WHERE r\.Grouped = 1;/.test(sql)) {
      out.push('claim: the ordinary claim does not leave the grouped queues out');
    }
    // The rate allowance is computed after the locks, at a clock read after them, and spent on
    // the rows this transaction locked.
    const locked = sql.indexOf('WITH (UPDLOCK, ROWLOCK, FORCESEEK) ON q.Name = b.Queue');
    const clock = sql.indexOf('SET @now = SYSUTCDATETIME();');
    const allowance = sql.indexOf('UPDATE r SET r.RateAllow =');
    if (locked < 0 || clock < locked || allowance < clock) {
      out.push('claim: the rate allowance is not computed at a clock read after the Queues locks');
    }
    if (
      !/FROM Spent AS x\s+INNER LOOP JOIN \S+ AS q WITH \(UPDLOCK, ROWLOCK, FORCESEEK\) ON q\.Name = x\.Queue/.test(
        sql,
      )
    ) {
      out.push('claim: the started rows are not spent on the rate-limited Queues rows by key');
    }
    // Rows are update-locked only by key, from the candidates read without update locks (the
    // ordinary claim's, and with a grouped part the grouped claim's too).
    const hotLocks = hot.filter((r) => r.hints.includes('UPDLOCK'));
    const picks = sql.match(PICK_BY_KEY) ?? [];
    const groupedPart = sql.includes('@gQueue');
    if (
      hotLocks.length !== picks.length ||
      hotLocks.length !== (groupedPart ? 2 : 1) ||
      !/FROM @Candidates AS c\s+INNER LOOP JOIN /.test(sql)
    ) {
      out.push('claim: JobsHot rows are update-locked other than by key from the candidates');
    }
    // Exact (queue, type) pairs: the seek carries the type, so other types are never read.
    if (!/WHERE h\.Queue = y\.Queue AND h\.Type = y\.Type AND h\.Status = 0\b/.test(sql)) {
      out.push('claim: exact (queue, type) pairs are not sought by type');
    }
    // Their rows are taken only in the payload versions the pair's handler runs.
    if (
      !/AND h\.DueAtUtc <= @now AND h\.PayloadVersion BETWEEN y\.MinVersion AND y\.MaxVersion\b/.test(
        sql,
      )
    ) {
      out.push("claim: exact pairs do not filter on their handler's payload versions");
    }
    const order = inOrder(sql, [
      /SET XACT_ABORT ON;/,
      /BEGIN TRAN;/,
      CLAIM_UPDATE,
      /OUTPUT inserted\.Id, [^;]* INTO @Claimed \(Id, /,
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
    if (rankCount !== ranked.length || ranked.some((m) => !RANKED_PICKS.includes(m[1]))) {
      out.push('claim: ROW_NUMBER() over the backlog (O(backlog))');
    }
    if (!/CROSS APPLY \(\s*SELECT TOP \(/i.test(sql))
      out.push('claim: no CROSS APPLY (SELECT TOP …)');
    out.push(...groupedClaimViolations(sql, groupedPart));
  }

  // The sweep's index seek is bounded by the shortest zombie timeout of any queue, so rows with a
  // live heartbeat are never read.
  if (
    entry.operation === 'archiveZombies' &&
    !/\bz\.Status = 2 AND z\.HeartbeatUtc < @cutoff\b/.test(sql)
  ) {
    out.push('archiveZombies: the heartbeat seek is not bounded by the shortest timeout');
  }

  if (entry.kind === 'move') {
    const order = inOrder(sql, [
      /SET XACT_ABORT ON;/,
      /BEGIN TRAN;/,
      /OUTPUT deleted\.Id, [^;]* INTO @Moved \(Id, /,
      /INSERT INTO /,
      /COMMIT;/,
    ]);
    if (order) out.push(`move: ${order}`);
  }
  return out;
}
