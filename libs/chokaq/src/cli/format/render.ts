import type { Block, Cell, Column, View } from './view';

/** A cell as text: dates in UTC to the second, `-` for nothing, yes / no. */
export function cellText(value: Cell): string {
  if (value === null || value === undefined || value === '') return '-';
  if (value instanceof Date) {
    return Number.isNaN(value.getTime())
      ? '-'
      : `${value.toISOString().slice(0, 19).replace('T', ' ')}Z`;
  }
  if (typeof value === 'boolean') return value ? 'yes' : 'no';
  // One line per cell: an error text's newlines would break the table.
  return String(value).replace(/\s*[\r\n]+\s*/g, ' ');
}

function cut(textValue: string, max: number | undefined): string {
  if (max === undefined || textValue.length <= max) return textValue;
  return `${textValue.slice(0, Math.max(0, max - 1)).trimEnd()}…`;
}

function renderTable(columns: readonly Column[], rows: readonly (readonly Cell[])[]): string {
  if (rows.length === 0) return '(none)';
  const cells = rows.map((row) => columns.map((c, i) => cut(cellText(row[i]), c.maxWidth)));
  const widths = columns.map((c, i) =>
    Math.max(c.header.length, ...cells.map((row) => row[i].length)),
  );
  const line = (values: readonly string[]) =>
    values
      .map((v, i) => (columns[i].align === 'right' ? v.padStart(widths[i]) : v.padEnd(widths[i])))
      .join('  ')
      .trimEnd();
  return [line(columns.map((c) => c.header)), ...cells.map(line)].join('\n');
}

function renderBlock(block: Block): string {
  switch (block.kind) {
    case 'table':
      return renderTable(block.columns, block.rows);
    case 'fields': {
      const width = Math.max(0, ...block.fields.map(([label]) => label.length));
      const lines = block.fields.map(([label, value]) =>
        `${label.padEnd(width)}  ${cellText(value)}`.trimEnd(),
      );
      return block.title === undefined
        ? lines.join('\n')
        : [block.title, ...lines.map((l) => `  ${l}`)].join('\n');
    }
    case 'text':
      return block.text;
  }
}

/** What a person reads: the blocks, a blank line between them, a newline at the end. */
export function renderView(view: View): string {
  return view.length === 0 ? '' : `${view.map(renderBlock).join('\n\n')}\n`;
}

/** What `--json` prints: one document (dates as ISO 8601 strings), indented, on its own. */
export function renderJson(data: unknown): string {
  return `${JSON.stringify(data, null, 2)}\n`;
}
