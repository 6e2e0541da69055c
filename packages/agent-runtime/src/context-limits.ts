/**
 * How much of a request's context reaches the model. The spec sets no sizes; these keep one
 * request well inside a 128k-token window (about 4 characters a token) whatever the client
 * sends, and every cut is marked in the text so the model knows something is missing.
 */
export interface ContextLimits {
  /** Characters of stored conversation sent back to the model; older turns are dropped whole. @default 200_000 */
  readonly historyChars: number;
  /** Characters of one resource file or attachment. @default 20_000 */
  readonly fileChars: number;
  /** Characters of all resource files together, and of all attachments together. @default 60_000 */
  readonly filesTotalChars: number;
  /** Sandbox files listed (metadata only). @default 100 */
  readonly sandboxFiles: number;
  /** Characters of one tool result. @default 20_000 */
  readonly toolResultChars: number;
  /** Characters of the user's message. @default 100_000 */
  readonly messageChars: number;
}

/** The documented limits (docs/agent.md, "Context and limits"). */
export const DEFAULT_CONTEXT_LIMITS: ContextLimits = Object.freeze({
  historyChars: 200_000,
  fileChars: 20_000,
  filesTotalChars: 60_000,
  sandboxFiles: 100,
  toolResultChars: 20_000,
  messageChars: 100_000,
});

/** Cuts `text` to `max` characters, saying how much was left out. */
export function truncate(text: string, max: number): string {
  if (text.length <= max) return text;
  const omitted = text.length - max;
  return `${text.slice(0, max)}\n[… truncated: ${omitted} of ${text.length} characters omitted]`;
}
