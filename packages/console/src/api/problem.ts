// What the console says when the API refuses: the problem+json the gateway answers (API.md
// "Conventions") as one readable sentence, with a plain note for a route this gateway lacks.

/** A refused API call: the HTTP status and the problem's code and detail. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly detail: string,
    readonly route: string,
  ) {
    super(detail);
    this.name = 'ApiError';
  }
}

/** Input the console refuses before sending it: the message says which field and why. */
export class InputError extends Error {
  override name = 'InputError';
}

/** The problem+json fields the console reads. */
interface ProblemBody {
  title?: string;
  detail?: string;
  code?: string;
}

/** An ApiError from a response that is not 2xx. */
export const apiErrorOf = async (response: Response, route: string): Promise<ApiError> => {
  let body: ProblemBody = {};
  try {
    body = (await response.json()) as ProblemBody;
  } catch {
    // Not JSON (a proxy's page, an empty body): the status says enough.
  }
  const detail = body.detail ?? body.title ?? response.statusText ?? 'request failed';
  return new ApiError(response.status, body.code ?? 'error', detail, route);
};

/** A route the gateway does not serve answers 404 "Cannot GET /v1/…" (no resource of that id). */
const isMissingRoute = (error: ApiError): boolean =>
  error.status === 404 && /^Cannot [A-Z]+ /.test(error.detail);

/** One sentence for a person: what went wrong and, where it helps, what to do. */
export const describeError = (error: unknown): string => {
  if (error instanceof InputError) return error.message;
  if (!(error instanceof ApiError)) {
    return error instanceof Error ? `Could not reach the gateway: ${error.message}` : String(error);
  }
  if (isMissingRoute(error)) return `This gateway does not serve ${error.route} yet (404).`;
  switch (error.status) {
    case 401:
      return 'That key was not accepted (401): check it, or ask for a new one.';
    case 403:
      return `Your key may not do this (403): ${error.detail}`;
    case 404:
      return `Not found (404): ${error.detail}`;
    case 400:
      return `Not accepted: ${error.detail}`;
    case 409:
      return `Already done or changed meanwhile (409): ${error.detail}`;
    default:
      return `${error.detail} (${error.status})`;
  }
};
