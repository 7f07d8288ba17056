import { spawn } from 'node:child_process';
import { join } from 'node:path';
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
 * Two stages, the usual ANTLR speed-up: first the fast SLL prediction mode with a bail-out error
 * strategy; a success there is a valid parse. Only if SLL gives up is the text parsed again in
 * full LL mode, whose errors are the verdict (SLL can fail on text that LL accepts, never the
 * other way round).
 */
export function tsqlSyntaxErrors(sql: string): SyntaxIssue[] {
  const cached = parsed.get(sql);
  if (cached) return cached.errors;
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
  const cached = parsed.get(sql);
  if (cached) {
    if (cached.hints === null) throw new Error(`does not parse: ${cached.errors[0]?.message}`);
    return cached.hints;
  }
  const issues: SyntaxIssue[] = [];
  const parser = parserFor(sql, issues);
  parser.interpreter.setPredictionMode(PredictionMode.SLL);
  const tree = parser.tsql_file();
  if (issues.length > 0) throw new Error(`does not parse: ${issues[0].message}`);
  return hintsOf(sql, tree);
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

/** What `preparse` keeps of one text: its syntax errors, and its hints when it parses. */
interface Parsed {
  errors: SyntaxIssue[];
  hints: HintedReference[] | null;
}

/** Texts parsed ahead by {@link preparse}, read by {@link tsqlSyntaxErrors} and {@link tableHints}. */
const parsed = new Map<string, Parsed>();

/**
 * One text's errors and hints from one SLL parse (the worker's half of {@link preparse}); only a
 * text that SLL cannot parse is parsed again, in LL, for its errors.
 */
export function parseForCache(sql: string): Parsed {
  const issues: SyntaxIssue[] = [];
  const parser = parserFor(sql, issues);
  parser.interpreter.setPredictionMode(PredictionMode.SLL);
  const tree = parser.tsql_file();
  if (issues.length === 0) return { errors: [], hints: hintsOf(sql, tree) };
  return { errors: tsqlSyntaxErrors(sql), hints: null };
}

/**
 * Parses `texts` in a child Node process (`tsql-parse-worker.ts`) and keeps the answers, so the
 * suites' checks of many statements read them instead of parsing inside Jest, where the parser
 * runs about four times slower. The answers are the same functions' (`parseForCache`); a text
 * not given here is parsed in-process as before. Call it from `beforeAll`.
 */
export async function preparse(texts: Iterable<string>): Promise<void> {
  const todo = [...new Set(texts)].filter((t) => !parsed.has(t));
  if (todo.length === 0) return;
  const worker = join(__dirname, 'tsql-parse-worker.ts');
  const output = await new Promise<string>((resolve, reject) => {
    const child = spawn(process.execPath, ['-r', '@swc-node/register', worker], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
    child.once('error', reject);
    child.once('close', (code) =>
      code === 0
        ? resolve(out)
        : reject(new Error(`T-SQL parse worker exited with ${code}:\n${err}`)),
    );
    child.stdin.end(JSON.stringify(todo));
  });
  const answers = JSON.parse(output) as Parsed[];
  todo.forEach((text, i) => parsed.set(text, answers[i]));
}
