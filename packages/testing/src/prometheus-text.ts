/**
 * A reader of the Prometheus text exposition format (version 0.0.4), enough for tests to assert
 * on what `GET /metrics` served: `# HELP` / `# TYPE` lines, and samples
 * `name{label="value",...} number`, with the format's escapes (`\\`, `\"`, `\n`) in label values.
 */
export interface PrometheusSample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

export interface PrometheusText {
  readonly samples: readonly PrometheusSample[];
  /** `# TYPE` of each metric family. */
  readonly types: ReadonlyMap<string, string>;
  /**
   * Sum of the samples named `name` whose labels include `labels` (0 when none): a counter
   * across label values, or one series.
   */
  value(name: string, labels?: Record<string, string>): number;
  /** The samples named `name` whose labels include `labels`. */
  series(name: string, labels?: Record<string, string>): PrometheusSample[];
}

/** Parses the exposition; throws on a line that is not a comment, blank or a valid sample. */
export function parsePrometheusText(text: string): PrometheusText {
  const samples: PrometheusSample[] = [];
  const types = new Map<string, string>();
  for (const [index, line] of text.split('\n').entries()) {
    if (line.trim() === '') continue;
    if (line.startsWith('#')) {
      const type = /^# TYPE (\S+) (\w+)$/.exec(line);
      if (type) types.set(type[1]!, type[2]!);
      continue;
    }
    const sample = parseSample(line);
    if (!sample) throw new Error(`line ${index + 1} is not a Prometheus sample: ${line}`);
    samples.push(sample);
  }
  const series = (name: string, labels: Record<string, string> = {}) =>
    samples.filter(
      (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
    );
  return {
    samples,
    types,
    series,
    value: (name, labels) => series(name, labels).reduce((sum, s) => sum + s.value, 0),
  };
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*/;
const LABEL = /^([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?\s*/;

function parseSample(line: string): PrometheusSample | undefined {
  const name = NAME.exec(line)?.[0];
  if (!name) return undefined;
  let rest = line.slice(name.length);
  const labels: Record<string, string> = {};
  if (rest.startsWith('{')) {
    rest = rest.slice(1);
    while (!rest.startsWith('}')) {
      const label = LABEL.exec(rest);
      if (!label) return undefined;
      labels[label[1]!] = label[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
      rest = rest.slice(label[0].length);
    }
    rest = rest.slice(1);
  }
  const fields = rest.trim().split(/\s+/);
  if (fields.length < 1 || fields.length > 2 || fields[0] === '') return undefined;
  // Case-insensitive like Prometheus's own parser (Go's ParseFloat): prom-client writes `Nan`.
  const raw = fields[0]!.toLowerCase();
  const value =
    raw === '+inf' || raw === 'inf'
      ? Infinity
      : raw === '-inf'
        ? -Infinity
        : raw === 'nan'
          ? NaN
          : Number(raw);
  if (Number.isNaN(value) && raw !== 'nan') return undefined;
  return { name, labels, value };
}
