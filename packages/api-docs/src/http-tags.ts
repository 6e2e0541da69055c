/** The tags, in the order the documents list them, with what each groups. */
export const HTTP_TAGS = {
  agent:
    'Agent runs: invoke with an SSE stream of events, resume, human-in-the-loop decisions, ' +
    'run status and cancel.',
  sessions: "The caller's conversations: list, read, rename, delete.",
  usage: "The caller's token usage.",
  account: "The caller's account: the security events of its audit log.",
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
  operator:
    'The operator API (docs/operations.md): look up a user, disconnect their sockets, cancel ' +
    "their runs, revoke their tokens, read the audit log. `ADMIN_TOKEN` only, never a user's " +
    'token; 404 when `ADMIN_TOKEN` is unset.',
} as const;
