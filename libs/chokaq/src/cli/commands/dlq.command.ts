import type { ChokaQAdmin } from '../../admin/chokaq-admin.service';
import type { BulkDlqAction, DlqActionPreview } from '../../interfaces/audit.interface';
import type { DlqFilter, ListOrder } from '../../interfaces/job-view.interface';
import { CLI_UNCONFIRMED_ROWS } from '../../validation/limits';
import type { CliIo } from '../cli-io';
import {
  CommandGroup,
  CommandResult,
  OptionTable,
  ParsedCommandLine,
  defineCommand,
} from '../args/command-definition';
import { failureReasonName, readChoice, readFraction, readInteger } from '../args/option-values';
import {
  ACTOR_OPTIONS,
  DLQ_FILTER_OPTIONS,
  PAGE_OPTIONS,
  flag,
  readActor,
  readDlqFilter,
  readPage,
  stringValue,
} from '../args/shared-options';
import { CliConfirmationRequiredError } from '../errors/cli-confirmation-required.error';
import { CliNothingMatchedError } from '../errors/cli-nothing-matched.error';
import { CliUsageError } from '../errors/cli-usage.error';
import { View, fields, table, text } from '../format/view';

/** Which DLQ jobs a preview or a bulk action takes: ids named by hand, or a filter. */
type Selection =
  | { readonly kind: 'ids'; readonly ids: readonly string[] }
  | { readonly kind: 'filter'; readonly filter: DlqFilter };

/** How a preview or a bulk action selects its jobs, beside the filter options. */
const SELECTION_OPTIONS = {
  ...DLQ_FILTER_OPTIONS,
  all: { type: 'boolean', description: 'every DLQ job (instead of ids or a filter)' },
  max: {
    type: 'string',
    value: 'N',
    description: 'act on at most N jobs, oldest failure first (0-10000; default 1000)',
  },
} as const satisfies OptionTable;

/**
 * Ids, a filter, or `--all`: exactly one of them, so an empty filter never selects the whole DLQ
 * by accident.
 */
function readSelection(line: ParsedCommandLine, io: CliIo, command: string): Selection {
  const filter = readDlqFilter(line, io);
  const hasFilter = Object.keys(filter).length > 0;
  const ids = [...new Set(line.positionals)];
  const all = flag(line, 'all');
  const given = [ids.length > 0, hasFilter, all].filter(Boolean).length;
  if (given !== 1) {
    throw new CliUsageError(
      given === 0
        ? 'name the jobs: ids, a filter (--queue, --type, --reason, --since, --until, --search, --tag) or --all'
        : 'name the jobs one way only: ids, a filter, or --all',
      command,
    );
  }
  return ids.length > 0 ? { kind: 'ids', ids } : { kind: 'filter', filter };
}

/** The filter a selection previews with: a selection by ids is the filter `{ ids }`. */
function filterOf(selection: Selection): DlqFilter {
  return selection.kind === 'ids' ? { ids: selection.ids } : selection.filter;
}

/** `--max`, which bounds an action by filter; ids name exactly the jobs to act on. */
function readMax(
  line: ParsedCommandLine,
  selection: Selection,
  command: string,
): number | undefined {
  const max = stringValue(line, 'max');
  if (max === undefined) return undefined;
  if (selection.kind === 'ids')
    throw new CliUsageError('--max applies to a filter, not to ids', command);
  return readInteger('--max', max);
}

function previewView(preview: DlqActionPreview, headline: string): View {
  return [
    text(headline),
    fields(undefined, [
      ['matched', preview.matched],
      ['would affect', preview.willAffect],
      ['token', preview.token],
      ['token expires', preview.expiresAt],
    ]),
    text('Sample (oldest failure first):', ...preview.sampleIds.map((id) => `  ${id}`)),
  ];
}

async function previewOrNothing(
  admin: ChokaQAdmin,
  selection: Selection,
  action: BulkDlqAction,
  max: number | undefined,
): Promise<DlqActionPreview> {
  const preview = await admin.previewDlq(filterOf(selection), {
    action,
    max: max ?? (selection.kind === 'ids' ? selection.ids.length : undefined),
  });
  if (preview.matched === 0) {
    throw new CliNothingMatchedError(
      selection.kind === 'ids' ? 'None of these ids is in the DLQ.' : 'No DLQ job matches.',
    );
  }
  return preview;
}

const list = defineCommand({
  name: 'dlq list',
  summary: 'A page of the DLQ, newest failure first',
  synopsis: '',
  details: [
    "Prints the next page's --cursor when there is one. --search and --tag read at most 10,000",
    'rows per call; the page says so when it stopped there.',
  ],
  options: {
    ...DLQ_FILTER_OPTIONS,
    ...PAGE_OPTIONS,
    order: { type: 'string', value: 'ORDER', description: 'newest (default) or oldest first' },
  },
  positionals: { min: 0, max: 0 },
  database: 'current',
  parse(line, io) {
    const order = stringValue(line, 'order');
    return {
      filter: readDlqFilter(line, io),
      ...readPage(line),
      ...(order === undefined
        ? {}
        : { order: readChoice<ListOrder>('--order', order, ['newest', 'oldest']) }),
    };
  },
  async run(query, { admin }) {
    const page = await admin.listDlq(query);
    const view: View = [
      table(
        [
          { header: 'ID' },
          { header: 'QUEUE' },
          { header: 'TYPE' },
          { header: 'REASON' },
          { header: 'ATTEMPTS', align: 'right' },
          { header: 'FAILED' },
          { header: 'ERROR', maxWidth: 60 },
        ],
        page.items.map((job) => [
          job.id,
          job.queue,
          job.type,
          job.failureReason === null ? null : failureReasonName(job.failureReason),
          job.attemptCount,
          job.failedAtUtc,
          job.errorPrefix,
        ]),
      ),
      ...(page.scanLimited ? [text('The search stopped at its scan bound; more may follow.')] : []),
      ...(page.nextCursor ? [text(`Next page: --cursor ${page.nextCursor}`)] : []),
    ];
    return {
      data: page,
      view,
      nothingMatched:
        page.items.length === 0 && page.nextCursor === null ? 'No DLQ job matches.' : undefined,
    };
  },
});

const preview = defineCommand({
  name: 'dlq preview',
  summary: 'What a resurrect or purge would touch, and the token that confirms it',
  synopsis: '--action <resurrect|purge> [<id>...] [filter | --all]',
  details: [
    'The token (valid 5 minutes, any process) is what ChokaQAdmin.resurrectByFilter and',
    "purgeDlqByFilter take, and what 'chokaq dlq resurrect|purge --token' acts with.",
  ],
  options: {
    action: { type: 'string', value: 'ACTION', description: 'resurrect or purge' },
    ...SELECTION_OPTIONS,
  },
  positionals: { min: 0, max: Number.MAX_SAFE_INTEGER },
  database: 'current',
  parse(line, io) {
    const action = stringValue(line, 'action');
    if (action === undefined) throw new CliUsageError('--action is required', 'dlq preview');
    const selection = readSelection(line, io, 'dlq preview');
    return {
      action: readChoice<BulkDlqAction>('--action', action, ['resurrect', 'purge']),
      selection,
      max: readMax(line, selection, 'dlq preview'),
    };
  },
  async run({ action, selection, max }, { admin }) {
    const result = await previewOrNothing(admin, selection, action, max);
    return {
      data: { ...result, filter: filterOf(selection) },
      view: previewView(result, `Preview of ${action}:`),
    };
  },
});

/** `dlq resurrect` and `dlq purge`: the confirmed bulk actions of the operator API. */
function bulkCommand(action: BulkDlqAction) {
  const name = `dlq ${action}`;
  return defineCommand({
    name,
    summary:
      action === 'resurrect'
        ? 'Move DLQ jobs back to pending (attempts start over) (audited)'
        : 'Delete DLQ jobs (lifetime counters stay) (audited)',
    synopsis: '[<id>...] [filter | --all]',
    details: [
      "Previews first (ChokaQAdmin.previewDlq), then acts with the preview's confirmation token",
      `(${action === 'resurrect' ? 'resurrectByFilter' : 'purgeDlqByFilter'}), or by id (${action === 'resurrect' ? 'resurrectMany' : 'purgeDlq'}) when ids are named.`,
      `More than ${CLI_UNCONFIRMED_ROWS} jobs need --yes; --dry-run shows the count and a sample and changes nothing.`,
    ],
    options: {
      ...SELECTION_OPTIONS,
      'dry-run': { type: 'boolean', description: 'show what would be affected; change nothing' },
      yes: { type: 'boolean', description: `confirm more than ${CLI_UNCONFIRMED_ROWS} jobs` },
      token: {
        type: 'string',
        value: 'TOKEN',
        description: "act with the token of an earlier 'chokaq dlq preview' of the same filter",
      },
      tolerance: {
        type: 'string',
        value: 'FRACTION',
        description: 'how far the count may move since the preview, 0-0.1 (default 0)',
      },
      ...ACTOR_OPTIONS,
    },
    positionals: { min: 0, max: Number.MAX_SAFE_INTEGER },
    database: 'current',
    parse(line, io) {
      const selection = readSelection(line, io, name);
      const token = stringValue(line, 'token');
      const tolerance = stringValue(line, 'tolerance');
      if (selection.kind === 'ids' && (token !== undefined || tolerance !== undefined)) {
        throw new CliUsageError('--token and --tolerance apply to a filter, not to ids', name);
      }
      return {
        selection,
        max: readMax(line, selection, name),
        dryRun: flag(line, 'dry-run'),
        yes: flag(line, 'yes'),
        token,
        tolerance: tolerance === undefined ? undefined : readFraction('--tolerance', tolerance),
        actor: readActor(line, io),
      };
    },
    async run(args, { admin }): Promise<CommandResult> {
      const { selection, actor } = args;
      const filter = filterOf(selection);
      const previewed = await previewOrNothing(admin, selection, action, args.max);
      if (args.dryRun) {
        return {
          data: { ...previewed, filter, dryRun: true },
          view: [
            ...previewView(
              previewed,
              `Dry run: ${action} would affect ${previewed.willAffect} of ${previewed.matched} matching DLQ job(s). Nothing was changed.`,
            ),
          ],
        };
      }
      if (previewed.willAffect > CLI_UNCONFIRMED_ROWS && !args.yes) {
        throw new CliConfirmationRequiredError(action, previewed.willAffect, CLI_UNCONFIRMED_ROWS);
      }
      const confirm = { token: args.token ?? previewed.token, tolerance: args.tolerance };
      let ids: string[] | undefined;
      let affected: number;
      if (action === 'resurrect') {
        ids =
          selection.kind === 'ids'
            ? await admin.resurrectMany(selection.ids, actor)
            : await admin.resurrectByFilter(filter, confirm, actor);
        affected = ids.length;
      } else {
        affected =
          selection.kind === 'ids'
            ? await admin.purgeDlq(selection.ids, actor)
            : await admin.purgeDlqByFilter(filter, confirm, actor);
      }
      const done = action === 'resurrect' ? 'Resurrected' : 'Purged';
      return {
        data: { action, filter, matched: previewed.matched, affected, ...(ids ? { ids } : {}) },
        view: [
          text(`${done} ${affected} DLQ job(s) of ${previewed.matched} matching.`),
          ...(ids && ids.length > 0 ? [text(...ids.map((id) => `  ${id}`))] : []),
        ],
        nothingMatched: affected === 0 ? 'No DLQ job was affected.' : undefined,
      };
    },
  });
}

/** `chokaq dlq list|preview|resurrect|purge`. */
export const dlqCommands: CommandGroup = {
  name: 'dlq',
  summary: 'List the DLQ, preview and run confirmed bulk resurrects and purges',
  commands: [list, preview, bulkCommand('resurrect'), bulkCommand('purge')],
};
