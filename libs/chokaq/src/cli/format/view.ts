/*
 * What a command shows a person, as data: the commands build it, `render.ts` lays it out. A
 * command never pads or aligns text itself, so every table of the CLI looks alike.
 */

/** One value of a table or field list; `null` and `undefined` print as `-`. */
export type Cell = string | number | boolean | Date | null | undefined;

/** A column of a table. */
export interface Column {
  readonly header: string;
  /** Numbers read best right-aligned. Default left. */
  readonly align?: 'left' | 'right';
  /** Longer values are cut to this many characters, ending in `…`. */
  readonly maxWidth?: number;
}

/** One part of what a command prints. */
export type Block =
  | {
      readonly kind: 'table';
      readonly columns: readonly Column[];
      readonly rows: readonly (readonly Cell[])[];
    }
  | { readonly kind: 'fields'; readonly title?: string; readonly fields: readonly Field[] }
  | { readonly kind: 'text'; readonly text: string };

/** A label and its value. */
export type Field = readonly [label: string, value: Cell];

/** What a command prints without `--json`: blocks, separated by a blank line. */
export type View = readonly Block[];

/** A table block. */
export function table(columns: readonly Column[], rows: readonly (readonly Cell[])[]): Block {
  return { kind: 'table', columns, rows };
}

/** A field list, optionally under a title. */
export function fields(title: string | undefined, list: readonly Field[]): Block {
  return { kind: 'fields', title, fields: list };
}

/** Lines of text, as they are. */
export function text(...lines: string[]): Block {
  return { kind: 'text', text: lines.join('\n') };
}
