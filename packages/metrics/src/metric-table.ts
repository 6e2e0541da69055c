import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

type Kind = 'counter' | 'gauge' | 'histogram';

/** One metric of the service: its kind, name (without the prefix), help text and labels. */
export interface MetricSpec<K extends Kind = Kind, L extends string = string> {
  readonly kind: K;
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly L[];
  /** A histogram's bucket bounds, in seconds. */
  readonly buckets?: number[];
}

/** A counter's declaration; `labelNames` may be left out for one without labels. */
export const counter = <L extends string = string>(
  name: string,
  help: string,
  labelNames: readonly L[] = [],
): MetricSpec<'counter', L> => ({ kind: 'counter', name, help, labelNames });

/** A gauge's declaration. */
export const gauge = <L extends string = string>(
  name: string,
  help: string,
  labelNames: readonly L[] = [],
): MetricSpec<'gauge', L> => ({ kind: 'gauge', name, help, labelNames });

/** A histogram's declaration, with its buckets. */
export const histogram = <L extends string = string>(
  name: string,
  help: string,
  buckets: number[],
  labelNames: readonly L[] = [],
): MetricSpec<'histogram', L> => ({ kind: 'histogram', name, help, labelNames, buckets });

/** The prom-client instrument a spec declares, typed by its labels. */
export type InstrumentOf<S> =
  S extends MetricSpec<'counter', infer L>
    ? Counter<L>
    : S extends MetricSpec<'gauge', infer L>
      ? Gauge<L>
      : S extends MetricSpec<'histogram', infer L>
        ? Histogram<L>
        : never;

/** A gauge's value read at each scrape (prom-client's `collect`), for specs that need one. */
type Collect = (this: Gauge) => Promise<void> | void;

/**
 * Creates every instrument of `specs` on `registers`, in the table's order (the order they are
 * rendered in); `collect` gives gauges read at scrape time their reader.
 */
export function declareMetrics<T extends Record<string, MetricSpec>>(
  specs: T,
  registers: Registry[],
  collect: Partial<Record<keyof T, Collect>> = {},
): { [K in keyof T]: InstrumentOf<T[K]> } {
  const made: Record<string, unknown> = {};
  for (const [key, spec] of Object.entries(specs)) {
    const config = {
      name: spec.name,
      help: spec.help,
      labelNames: spec.labelNames as string[],
      registers,
    };
    const reader = collect[key as keyof T];
    if (spec.kind === 'counter') made[key] = new Counter(config);
    else if (spec.kind === 'gauge')
      made[key] = new Gauge({ ...config, ...(reader ? { collect: reader } : {}) });
    else made[key] = new Histogram({ ...config, buckets: spec.buckets ?? [] });
  }
  return made as { [K in keyof T]: InstrumentOf<T[K]> };
}
