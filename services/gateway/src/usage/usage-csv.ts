import type { UsageAnswer } from './usage-reader.js';

/** The header row of `GET /v1/usage?format=csv` (API.md "Usage and audit"). */
export const USAGE_CSV_HEADER = 'key,promptTokens,completionTokens,costUsd,turns';

/** A field as RFC 4180 writes it: quoted when it holds a comma, quote or line break. */
const field = (value: string): string =>
  /[",\r\n]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value;

/** The rows of a usage answer as CSV, header first, CRLF line ends (RFC 4180); the same rows as the JSON. */
export const usageCsv = (answer: UsageAnswer): string =>
  [
    USAGE_CSV_HEADER,
    ...answer.rows.map((row) =>
      [field(row.key), row.promptTokens, row.completionTokens, row.costUsd, row.turns].join(','),
    ),
  ].join('\r\n') + '\r\n';
