import { parseOrigin } from '@agent-backend/url-guard';
import { z } from 'zod';

/**
 * Field kinds the environment modules (`env-*.ts`) share. Empty strings count as unset, so
 * `FOO=` in a compose file does not become a value.
 */

/** A string; unset, empty or only white space: `undefined`. */
export const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v));

/** `true`/`1` or `false`/`0`; unset (or empty) means false. */
export const booleanString = z
  .enum(['true', 'false', '1', '0', ''])
  .optional()
  .transform((v) => v === 'true' || v === '1');

/** An optional URL whose scheme is one of `protocols` (`'redis:'`, `'https:'`, ...). */
export const url = (protocols: string[]) =>
  optionalString.refine(
    (v) => {
      if (v === undefined) return true;
      try {
        return protocols.includes(new URL(v).protocol);
      } catch {
        return false;
      }
    },
    {
      message: `must be a URL with scheme ${protocols.map((p) => p.replace(':', '')).join(' or ')}`,
    },
  );

/** Like {@link booleanString}, but unset (or empty) means true. */
export const booleanStringDefaultTrue = z
  .enum(['true', 'false', '1', '0', ''])
  .optional()
  .transform((v) => v === undefined || v === '' || v === 'true' || v === '1');

/**
 * An operator credential: long enough not to be guessed, no whitespace (it travels in a header).
 */
export const operatorToken = optionalString.refine((v) => v === undefined || /^\S{16,}$/.test(v), {
  message: 'must be at least 16 characters without spaces',
});

/** Comma-separated entries, trimmed; empty ones (`a,,b`, a trailing comma) are dropped. */
export const commaList = optionalString.transform((v) =>
  (v ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean),
);

/** Comma-separated `host:port` entries (an IPv6 host in brackets). */
export const hostPortList = commaList.refine(
  (list) => list.every((entry) => /^(\[[0-9a-fA-F:.]+\]|[^\s:[\]]+):\d{1,5}$/.test(entry)),
  { message: 'must be comma-separated host:port entries' },
);

/** Comma-separated origins (`http://127.0.0.1:11434`), each reported by name when it is not one. */
export const originList = commaList
  .superRefine((entries, ctx) => {
    for (const entry of entries) {
      const parsed = parseOrigin(entry);
      if ('problem' in parsed)
        ctx.addIssue({ code: 'custom', message: `"${entry}" ${parsed.problem}` });
    }
  })
  .transform((entries) =>
    entries.map((entry) => {
      const parsed = parseOrigin(entry);
      return 'origin' in parsed ? parsed.origin : entry;
    }),
  );

/** Rows one statement or transaction of a batched deletion handles at most (1-10,000). */
export const batchSize = (rows: number) => z.coerce.number().int().min(1).max(10_000).default(rows);
