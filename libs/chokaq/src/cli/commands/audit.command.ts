import type { AuditLogQuery } from '../../interfaces/audit.interface';
import { defineCommand } from '../args/command-definition';
import { readAuditAction, readTime } from '../args/option-values';
import { PAGE_OPTIONS, readPage, stringValue } from '../args/shared-options';
import { table, text } from '../format/view';

/** `chokaq audit`: a page of the audit log, newest first, filtered as `getAuditLog` filters. */
export const auditCommand = defineCommand({
  name: 'audit',
  summary: 'A page of the audit log, newest first: who did what, to what, how many rows',
  synopsis: '',
  details: ["Prints the next page's --cursor when there is one."],
  options: {
    actor: { type: 'string', value: 'NAME', description: 'entries of this actor (cli:alice)' },
    action: { type: 'string', value: 'ACTION', description: 'entries of this action (dlq.purge)' },
    since: {
      type: 'string',
      value: 'TIME',
      description: 'at or after: an ISO time, or a duration ago (2h, 7d)',
    },
    until: { type: 'string', value: 'TIME', description: 'before: as --since' },
    ...PAGE_OPTIONS,
  },
  positionals: { min: 0, max: 0 },
  database: 'current',
  parse(line, io): AuditLogQuery {
    const actor = stringValue(line, 'actor');
    const action = stringValue(line, 'action');
    const since = stringValue(line, 'since');
    const until = stringValue(line, 'until');
    return {
      ...(actor !== undefined ? { actor } : {}),
      ...(action !== undefined ? { action: readAuditAction('--action', action) } : {}),
      ...(since !== undefined ? { from: readTime('--since', since, io.now()) } : {}),
      ...(until !== undefined ? { to: readTime('--until', until, io.now()) } : {}),
      ...readPage(line),
    };
  },
  async run(query, { admin }) {
    const page = await admin.getAuditLog(query);
    return {
      data: page,
      view: [
        table(
          [
            { header: 'AT' },
            { header: 'ACTOR' },
            { header: 'ACTION' },
            { header: 'TARGET', maxWidth: 50 },
            { header: 'ROWS', align: 'right' },
          ],
          page.items.map((e) => [e.atUtc, e.actor, e.action, e.target, e.rowsAffected]),
        ),
        ...(page.nextCursor ? [text(`Next page: --cursor ${page.nextCursor}`)] : []),
      ],
      nothingMatched: page.items.length === 0 ? 'No audit log entry matches.' : undefined,
    };
  },
});
