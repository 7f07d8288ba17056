import { join } from 'node:path';
import { MessageChannel, MessagePort, Worker, receiveMessageOnPort } from 'node:worker_threads';
import { ANTLRErrorListener, BailErrorStrategy, CharStreams, CommonTokenStream } from 'antlr4ts';
import { PredictionMode } from 'antlr4ts/atn/PredictionMode';
import { ParseCancellationException } from 'antlr4ts/misc/ParseCancellationException';
// Imported file by file: the package's top-level index pulls in every dialect and breaks under the
// pinned antlr4ts 0.5.0-alpha.4, so only the T-SQL grammar and the case-changing stream are loaded.
import { TSqlLexer } from 'antlr4ts-sql/dist/src/grammar-output/tsql/TSqlLexer';
import {
  Ddl_objectContext,
  Full_table_nameContext,
  TSqlParser,
  Table_hintContext,
  Table_nameContext,
  With_table_hintsContext,
} from 'antlr4ts-sql/dist/src/grammar-output/tsql/TSqlParser';
import { ParseTree } from 'antlr4ts/tree/ParseTree';
import { ParserRuleContext } from 'antlr4ts';
import { CaseChangingStream } from 'antlr4ts-sql/dist/src/models/CaseChangingStream';
import { TS_LOADER } from '../../support/env';

/** One syntax error reported by the lexer or the parser. */
export interface SyntaxIssue {
  line: number;
  column: number;
  message: string;
}

/** Collects every error the lexer and the parser report (instead of printing them). */
function collector(issues: SyntaxIssue[]): ANTLRErrorListener<unknown> {
  return {
    syntaxError: (_recognizer, _offending, line, column, message) => {
      issues.push({ line, column, message });
    },
  };
}

function parserFor(sql: string, issues: SyntaxIssue[]): TSqlParser {
  const chars = new CaseChangingStream(CharStreams.fromString(sql), true);
  const lexer = new TSqlLexer(chars as never);
  lexer.removeErrorListeners();
  lexer.addErrorListener(collector(issues) as never);
  const parser = new TSqlParser(new CommonTokenStream(lexer));
  parser.removeErrorListeners();
  parser.addErrorListener(collector(issues) as never);
  return parser;
}

/**
 * Parses T-SQL with the ANTLR TSql grammar (upper-cased through `CaseChangingStream`, because the
 * lexer only knows upper-case keywords) and returns every syntax error; an empty list means the
 * text is one or more valid batches.
 *
 * The parse runs in the parse thread ({@link parseInThread}), whose parser stays warm across the
 * suite; answers are kept per text.
 */
export function tsqlSyntaxErrors(sql: string): SyntaxIssue[] {
  return parsedOnce(sql).errors;
}

/**
 * The syntax check itself, in this thread. Two stages, the usual ANTLR speed-up: first the fast
 * SLL prediction mode with a bail-out error strategy; a success there is a valid parse. Only if
 * SLL gives up is the text parsed again in full LL mode, whose errors are the verdict (SLL can fail
 * on text that LL accepts, never the other way round).
 */
function syntaxErrorsHere(sql: string): SyntaxIssue[] {
  const fastIssues: SyntaxIssue[] = [];
  const fast = parserFor(sql, fastIssues);
  fast.interpreter.setPredictionMode(PredictionMode.SLL);
  fast.errorHandler = new BailErrorStrategy();
  try {
    fast.tsql_file();
    if (fastIssues.length === 0) return [];
  } catch (error) {
    if (!(error instanceof ParseCancellationException)) throw error;
  }
  const issues: SyntaxIssue[] = [];
  const full = parserFor(sql, issues);
  full.interpreter.setPredictionMode(PredictionMode.LL);
  full.tsql_file();
  return issues;
}

/** One table reference that carries a `WITH (…)` hint list. */
export interface HintedReference {
  /** The table as written, e.g. `[chokaq].[JobsHot]`. */
  table: string;
  /** Upper-cased hints, e.g. `['UPDLOCK', 'READPAST', 'ROWLOCK']`. */
  hints: string[];
}

/**
 * The source text of a rule, sliced from the input by token offsets. (`ctx.text` is empty here:
 * the package's `CaseChangingStream.getText` passes two numbers where antlr4ts expects an
 * `Interval`, so token texts cannot be read back through it.)
 */
function sourceText(sql: string, ctx: ParserRuleContext): string {
  const stop = ctx.stop ?? ctx.start;
  return sql.slice(ctx.start.startIndex, stop.stopIndex + 1);
}

function descendants(tree: ParseTree, out: ParseTree[] = []): ParseTree[] {
  for (let i = 0; i < tree.childCount; i++) {
    const child = tree.getChild(i);
    out.push(child);
    descendants(child, out);
  }
  return out;
}

/**
 * Every `WITH (…)` table-hint list in the parse tree, with the table it is attached to (the first
 * table name under the hint list's parent: a FROM/JOIN item, or the target of UPDATE/DELETE).
 * Throws when the text does not parse, so a hint check never runs on a misread statement.
 */
export function tableHints(sql: string): HintedReference[] {
  const { errors, hints } = parsedOnce(sql);
  if (hints === null) throw new Error(`does not parse: ${errors[0]?.message}`);
  return hints;
}

function hintsOf(sql: string, tree: ParseTree): HintedReference[] {
  const out: HintedReference[] = [];
  for (const node of descendants(tree)) {
    if (!(node instanceof With_table_hintsContext)) continue;
    // The grammar hangs `WITH (…)` on the alias (`table_alias: id with_table_hints?`) in FROM
    // items and on the statement in UPDATE/DELETE targets: climb to the nearest ancestor that
    // holds a table name.
    let name: ParseTree | undefined;
    for (let up: ParseTree | undefined = node.parent; up && !name; up = up.parent) {
      name = descendants(up).find(
        (d) =>
          d instanceof Full_table_nameContext ||
          d instanceof Table_nameContext ||
          d instanceof Ddl_objectContext,
      );
    }
    const hints = descendants(node)
      .filter((d): d is Table_hintContext => d instanceof Table_hintContext)
      .map((h) => sourceText(sql, h).toUpperCase());
    out.push({ table: name ? sourceText(sql, name as ParserRuleContext) : '?', hints });
  }
  return out;
}

/** What the parse thread answers for one text: its syntax errors, and its hints when it parses. */
export interface Parsed {
  errors: SyntaxIssue[];
  hints: HintedReference[] | null;
}

/**
 * One text's errors and hints from one SLL parse, in this thread (the parse thread's work); only a
 * text that SLL cannot parse is parsed again, in LL, for its errors.
 */
export function parseForCache(sql: string): Parsed {
  const issues: SyntaxIssue[] = [];
  const parser = parserFor(sql, issues);
  parser.interpreter.setPredictionMode(PredictionMode.SLL);
  const tree = parser.tsql_file();
  if (issues.length === 0) return { errors: [], hints: hintsOf(sql, tree) };
  return { errors: syntaxErrorsHere(sql), hints: null };
}

/** Every text parsed so far in this test file, with its answer. */
const parsed = new Map<string, Parsed>();

function parsedOnce(sql: string): Parsed {
  let answer = parsed.get(sql);
  if (!answer) {
    answer = parseInThread(sql);
    parsed.set(sql, answer);
  }
  return answer;
}

/** The parse thread of this test file, started on first use. */
let thread: { worker: Worker; port: MessagePort; signal: Int32Array; sent: number } | undefined;

/** How long one parse may take in the parse thread (a cold parser's first claim takes seconds). */
const PARSE_TIMEOUT_MS = 120_000;

/**
 * Parses `sql` in a worker thread and waits for the answer synchronously, so the checks stay plain
 * functions. The thread loads the grammar with Node's own module loader: the ANTLR parser runs
 * about four times slower inside Jest's module sandbox, and one thread keeps the parser's
 * prediction cache (its DFA, built while parsing) warm for every statement of the file, where a
 * fresh parser pays that warm-up again. Each request carries a sequence number, which its answer
 * repeats; the thread counts its answers in a shared counter, and the call blocks on that counter
 * (`Atomics.wait`) until it moves, then takes messages off the port until its own answer is there
 * (an answer from an earlier request is dropped). It looks at the port again at least every
 * {@link PARSE_POLL_MS}, so an answer that reaches the port after the counter moved is still taken.
 */
function parseInThread(sql: string): Parsed {
  thread ??= startParseThread();
  const seq = ++thread.sent;
  const answered = Atomics.load(thread.signal, 0);
  thread.port.postMessage({ seq, sql });
  const deadline = Date.now() + PARSE_TIMEOUT_MS;
  for (;;) {
    for (let message = receiveMessageOnPort(thread.port); message;) {
      const answer = message.message as { seq: number } & (Parsed | { failed: string });
      if (answer.seq === seq) {
        if ('failed' in answer) throw new Error(`the T-SQL parse thread failed: ${answer.failed}`);
        return { errors: answer.errors, hints: answer.hints };
      }
      message = receiveMessageOnPort(thread.port);
    }
    const left = deadline - Date.now();
    if (left <= 0) {
      throw new Error(`the T-SQL parse thread gave no answer within ${PARSE_TIMEOUT_MS} ms`);
    }
    if (Atomics.load(thread.signal, 0) === answered) {
      Atomics.wait(thread.signal, 0, answered, Math.min(left, PARSE_POLL_MS));
    }
  }
}

/** How often a wait for the parse thread looks at its port even if the counter did not move. */
const PARSE_POLL_MS = 50;

function startParseThread(): {
  worker: Worker;
  port: MessagePort;
  signal: Int32Array;
  sent: number;
} {
  const { port1, port2 } = new MessageChannel();
  const signal = new Int32Array(new SharedArrayBuffer(4));
  const script = [
    `require(${JSON.stringify(TS_LOADER)});`,
    `require(${JSON.stringify(join(__dirname, 'tsql-parse-thread.ts'))});`,
  ].join('\n');
  const worker = new Worker(script, {
    eval: true,
    workerData: { port: port2, signal },
    transferList: [port2],
  });
  // The thread never keeps the test process alive; it ends with it.
  worker.unref();
  port1.unref();
  return { worker, port: port1, signal, sent: 0 };
}

/**
 * Kept for the suites' `beforeAll`: parses `texts` now (in the parse thread), so the first test
 * that reads one does not carry the parser's warm-up in its own time.
 */
export function preparse(texts: Iterable<string>): void {
  for (const text of texts) parsedOnce(text);
}
