// The small pieces every page uses: a loading line, an error as a message, a status badge.
import { describeError } from '../api/problem';

/** What shows while a page's data is on its way. */
export const Loading = ({ what }: { what: string }) => (
  <p className="loading" role="status">
    <span className="spinner" aria-hidden="true" /> Loading {what}…
  </p>
);

/** An error as a sentence (role alert), never as a blank page. */
export const ErrorNote = ({ error, prefix }: { error: unknown; prefix?: string }) => (
  <p className="error" role="alert">
    {prefix ? `${prefix}: ` : ''}
    {describeError(error)}
  </p>
);

/** A done or signed-out message (role status). */
export const Notice = ({ children }: { children: React.ReactNode }) => (
  <p className="notice" role="status">
    {children}
  </p>
);

/** A conversation's or a turn's status as a coloured word. */
export const StatusBadge = ({ status }: { status: string }) => (
  <span className={`badge badge-${status.replace(/[^a-z]+/g, '-')}`}>{status.replace(/_/g, ' ')}</span>
);
