/**
 * A node of PostgreSQL's `EXPLAIN (FORMAT JSON)` output, with the fields the plan tests read.
 * https://www.postgresql.org/docs/15/sql-explain.html
 */
export interface PlanNode {
  'Node Type': string;
  'Parent Relationship'?: string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Index Cond'?: string;
  'Scan Direction'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  'Heap Fetches'?: number;
  'Shared Hit Blocks'?: number;
  'Shared Read Blocks'?: number;
  'Group Key'?: string[];
  Plans?: PlanNode[];
}

/** `plan` and every node below it, depth first. */
export function planNodes(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(planNodes)];
}

/** The root of the plan in the first row of an `EXPLAIN (FORMAT JSON)` result. */
export function planOf(rows: ReadonlyArray<Record<string, unknown>>): PlanNode {
  return (rows[0]['QUERY PLAN'] as Array<{ Plan: PlanNode }>)[0].Plan;
}
