import { z } from 'zod';
import { EnvSchema } from './schema.js';

type EnvName = keyof typeof EnvSchema.shape;

/**
 * What each environment variable means, for people: the `.describe()` text of its field in the
 * schema, where the meaning is written once (empty for a field without one, which
 * {@link renderConfigurationDoc} refuses). `docs/configuration.md` is generated from the schema
 * (`pnpm docs:config`; a test fails when the file is stale).
 */
export const ENV_MEANINGS = Object.fromEntries(
  (Object.keys(EnvSchema.shape) as EnvName[]).map((name) => [
    name,
    EnvSchema.shape[name].description ?? '',
  ]),
) as Readonly<Record<EnvName, string>>;

/** What the schema alone cannot say: defaults computed at start, and comma-separated lists. */
const OVERRIDES: Partial<Record<EnvName, { type?: string; default?: string }>> = {
  INSTANCE_ID: { default: '`<role>-<random>`' },
  SANDBOX_STATE_DIR: { default: '`DATA_DIR/sandboxes`' },
  LARK_API_BASE_URL: { default: 'per channel' },
  LLM_ALLOWED_ORIGINS: { type: 'comma-separated origins', default: 'empty' },
  MCP_STDIO_ALLOWLIST: { type: 'comma-separated commands', default: 'empty' },
  GATEWAY_WEB_ORIGINS: { type: 'comma-separated origins', default: 'empty' },
  CORS_ALLOWED_ORIGINS: { type: 'comma-separated origins', default: 'empty' },
  WEB_SEARCH_PROVIDERS: { type: 'comma-separated, of `tavily` `brave`' },
  AUTH_AUDIENCE: { type: 'comma-separated', default: 'empty' },
  AUTH_ALGORITHMS: { type: 'comma-separated', default: '`RS256,ES256`' },
  TRUST_PROXY: { type: '`false` \\| `true` \\| number of proxies', default: '`false`' },
};

interface JsonSchemaProperty {
  type?: string;
  enum?: string[];
  format?: string;
  minimum?: number;
  maximum?: number;
  default?: unknown;
}

const BOOLEAN_ENUM = ['0', '1', 'true', 'false', ''];

function typeOf(name: string, property: JsonSchemaProperty): string {
  if (property.enum) {
    if (BOOLEAN_ENUM.every((v) => property.enum!.includes(v))) return 'boolean';
    return property.enum.map((v) => `\`${v}\``).join(' \\| ');
  }
  if (property.type === 'integer' || property.type === 'number') {
    const max = property.maximum !== undefined && property.maximum < Number.MAX_SAFE_INTEGER;
    if (property.minimum !== undefined && max) {
      return `${property.type} ${property.minimum}–${property.maximum}`;
    }
    if (property.minimum !== undefined) return `${property.type} ≥ ${property.minimum}`;
    return property.type;
  }
  if (property.format === 'uri' || name.endsWith('_URL')) return 'URL';
  return 'string';
}

function defaultOf(name: EnvName, property: JsonSchemaProperty): string {
  if (property.enum && BOOLEAN_ENUM.every((v) => property.enum!.includes(v))) {
    // What the field itself makes of unset: `false`, or `true` for a default-on switch.
    return `\`${String(EnvSchema.shape[name].parse(undefined))}\``;
  }
  return property.default === undefined ? 'unset' : `\`${String(property.default)}\``;
}

/** `docs/configuration.md`, whole: every variable of every role, its type, default and meaning. */
export function renderConfigurationDoc(): string {
  const schema = z.toJSONSchema(EnvSchema, { io: 'input', unrepresentable: 'any' }) as {
    properties: Record<string, JsonSchemaProperty>;
  };
  // In the schema's order: related variables stay together.
  const rows = (Object.keys(EnvSchema.shape) as EnvName[]).map((name) => {
    if (ENV_MEANINGS[name] === '')
      throw new Error(`${name} has no .describe() in the config schema`);
    const property = schema.properties[name] ?? {};
    const override = OVERRIDES[name] ?? {};
    const type = override.type ?? typeOf(name, property);
    const fallback = override.default ?? defaultOf(name, property);
    return `| \`${name}\` | ${type} | ${fallback} | ${ENV_MEANINGS[name]} |`;
  });
  return [
    HEADER,
    '',
    '| variable | type | default | meaning |',
    '|---|---|---|---|',
    ...rows,
    '',
    TAIL,
    '',
  ].join('\n');
}

const HEADER = `# Configuration

Every role reads its environment once at start, validates it with the schema in
\`packages/config/src/schema.ts\` (assembled from one \`env-<domain>.ts\` module per area), and
exits 1 listing every problem at once. Empty values count as unset. Settings that are valid but
defeat what they set up are logged at start as warnings (\`code: config_warning\`,
\`packages/config/src/config-warnings.ts\`), not refused, so a deployment that started before an
upgrade still starts after it.

This page is generated from that schema (types, defaults, and meanings: each variable's
\`.describe()\` in its \`env-<domain>.ts\` module) by \`pnpm docs:config\`; a test fails when
it is stale. Every role reads the same variables; the roles section below says which each
requires.`;

const TAIL = `
Roles:

- \`all-in-one\` runs with nothing set. With only one of \`REDIS_URL\` / \`DATABASE_URL\` it uses
  that one and the embedded adapter for the other. Without JWT keys it generates a pair into
  \`DATA_DIR\` on first start and reuses it.
- \`api\`, \`gateway\`, \`worker\` refuse to start without \`REDIS_URL\` and \`DATABASE_URL\` (their
  state must be shared with the other replicas). \`api\` also needs both JWT keys, \`gateway\` the
  public key: replicas that generated their own keys would reject each other's tokens.`;
