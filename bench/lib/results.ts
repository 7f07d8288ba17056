import { loadavg } from 'node:os';
import type { BenchDialect } from './args';
import { summarize, type Summary } from './stats';

/** One scenario on one dialect: every system's run values. */
export interface ScenarioResult {
  dialect: BenchDialect;
  scenario: string;
  unit: string;
  higherIsBetter: boolean;
  /** Run values by system id, in run order. */
  values: Map<string, number[]>;
  /** Failed runs by system id (message of the last failure). */
  failures: Map<string, string>;
  /** 1-minute load averages seen while the scenario ran. */
  loads: number[];
}

/** Every measurement of one bench invocation, in the order scenarios were first recorded. */
export class ResultSet {
  readonly rows: ScenarioResult[] = [];

  private row(dialect: BenchDialect, scenario: string, unit: string, higherIsBetter: boolean) {
    let row = this.rows.find((r) => r.dialect === dialect && r.scenario === scenario);
    if (!row) {
      row = {
        dialect,
        scenario,
        unit,
        higherIsBetter,
        values: new Map(),
        failures: new Map(),
        loads: [],
      };
      this.rows.push(row);
    }
    return row;
  }

  add(
    dialect: BenchDialect,
    scenario: string,
    unit: string,
    higherIsBetter: boolean,
    system: string,
    value: number,
  ): void {
    const row = this.row(dialect, scenario, unit, higherIsBetter);
    row.values.set(system, [...(row.values.get(system) ?? []), value]);
    row.loads.push(loadavg()[0]);
  }

  fail(
    dialect: BenchDialect,
    scenario: string,
    unit: string,
    higherIsBetter: boolean,
    system: string,
    message: string,
  ): void {
    this.row(dialect, scenario, unit, higherIsBetter).failures.set(system, message);
  }

  /** Summary of one system's runs, or undefined when it has none. */
  static summary(row: ScenarioResult, system: string): Summary | undefined {
    const values = row.values.get(system);
    return values && values.length > 0 ? summarize(values) : undefined;
  }
}
