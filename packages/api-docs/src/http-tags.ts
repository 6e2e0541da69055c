/** The tags, in the order the documents list them, with what each groups. */
export const HTTP_TAGS = {
  agent:
    'Agent runs: invoke with an SSE stream of events, resume, human-in-the-loop decisions, ' +
    'run status and cancel.',
  sessions: "The caller's conversations: list, read, rename, delete.",
  usage: "The caller's token usage.",
  auth: 'Access tokens.',
  knowledge: 'Knowledge bases, their documents, search, and the chunking preview.',
  memories: "The caller's long-term memories.",
  skills: "The caller's skills catalog.",
  'user data': 'Everything the caller owns: exported as one archive, or erased.',
  mcp: 'MCP server validation.',
  nodes: "The caller's devices (browser extensions, desktop apps) and their tools.",
  'scheduled tasks': 'Scheduled tasks: the internal sync from the web layer, and confirmations.',
  'chat platform': 'The Lark/Feishu event callback.',
  health: 'Liveness and readiness, on every role.',
  documents: 'These API documents and the page that shows them.',
  playground: 'The web playground (docs/playground.md), a client of this API like any other.',
  operations: "Operators' tools (docs/operations.md).",
} as const;
