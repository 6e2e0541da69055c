/**
 * Splits a stdio `base_url` (a command line) into an argument array, without a shell.
 *
 * Rules, a small subset of POSIX shell quoting so that what users paste from MCP server READMEs
 * mostly works, and nothing is ever interpreted:
 * - arguments are separated by unquoted whitespace;
 * - `'...'` is taken literally; `"..."` is taken literally except `\"` and `\\`;
 * - outside quotes, `\` makes the next character literal;
 * - no variables (`$HOME`), globs (`*`), `~`, redirections or pipes: the unquoted shell operators
 *   `| & ; < > ( ) $ \`` are refused with an error, so a user who expected a shell finds out at
 *   once instead of getting them passed through as odd arguments. Quoted, they are literal text.
 *
 * Throws {@link CommandLineError} for an empty line, an unterminated quote or a shell operator.
 */
export function parseCommandLine(line: string): string[] {
  const args: string[] = [];
  let current = '';
  let inArg = false;
  let quote: "'" | '"' | undefined;

  for (let i = 0; i < line.length; i++) {
    const ch = line[i]!;
    if (quote === "'") {
      if (ch === "'") quote = undefined;
      else current += ch;
    } else if (quote === '"') {
      if (ch === '"') quote = undefined;
      else if (ch === '\\' && (line[i + 1] === '"' || line[i + 1] === '\\')) current += line[++i];
      else current += ch;
    } else if (/\s/.test(ch)) {
      if (inArg) args.push(current);
      current = '';
      inArg = false;
    } else if (ch === "'" || ch === '"') {
      quote = ch;
      inArg = true;
    } else if (ch === '\\') {
      if (i + 1 >= line.length) throw new CommandLineError('the command line ends with "\\"');
      current += line[++i];
      inArg = true;
    } else if (SHELL_OPERATORS.has(ch)) {
      throw new CommandLineError(
        `"${ch}" is shell syntax; the command runs without a shell (quote it to pass it literally)`,
      );
    } else {
      current += ch;
      inArg = true;
    }
  }
  if (quote) throw new CommandLineError(`unterminated ${quote} quote`);
  if (inArg) args.push(current);
  if (args.length === 0) throw new CommandLineError('the command line is empty');
  return args;
}

const SHELL_OPERATORS = new Set(['|', '&', ';', '<', '>', '(', ')', '$', '`']);

/** A stdio command line that cannot be split into arguments; the message says why. */
export class CommandLineError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CommandLineError';
  }
}
