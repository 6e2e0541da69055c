/** More zones than any deployment names; past it, formatters are made per call, not kept. */
const CACHE_LIMIT = 10_000;

/** A YYYY-MM-DD formatter per known zone: making one costs far more than using it. */
const dateFormats = new Map<string, Intl.DateTimeFormat>();

/** The date formatter of `tz`, or undefined when this Node.js knows no such IANA zone. */
function dateFormatIn(tz: string): Intl.DateTimeFormat | undefined {
  let format = dateFormats.get(tz);
  if (format) return format;
  try {
    format = new Intl.DateTimeFormat('en-CA', {
      timeZone: tz,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
    });
  } catch {
    // Unknown zones are not remembered: they come from requests, and would fill the cache.
    return undefined;
  }
  if (dateFormats.size < CACHE_LIMIT) dateFormats.set(tz, format);
  return format;
}

/** Whether `tz` names an IANA time zone this Node.js knows. */
export function isValidTimeZone(tz: string): boolean {
  return dateFormatIn(tz) !== undefined;
}

/** The calendar date of `instant` in `tz`, as YYYY-MM-DD. Throws for an unknown zone. */
export function dateIn(instant: number, tz: string): string {
  const format = dateFormatIn(tz);
  if (!format) throw new Error(`unknown time zone: ${tz}`);
  return format.format(instant);
}
