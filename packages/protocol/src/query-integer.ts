import { z } from 'zod';

/** A query parameter holding an integer: strings of digits only, as a query string carries numbers. */
export const queryInteger = (min: number, max: number) =>
  z.preprocess(
    (value) => (typeof value === 'string' && /^\d{1,9}$/.test(value) ? Number(value) : value),
    z
      .number({ error: `must be an integer from ${min} to ${max}` })
      .int()
      .min(min)
      .max(max),
  );
