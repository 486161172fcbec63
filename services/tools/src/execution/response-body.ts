/** How much of an error response's body the model gets to read. */
const ERROR_SNIPPET_CHARS = 500;
const ERROR_SNIPPET_BYTES = 4096;

/** Reads at most `limit` bytes of the body; `truncated` when there was more (the rest is discarded). */
export const readBody = async (
  response: Response,
  limit: number,
): Promise<{ bytes: Buffer; truncated: boolean }> => {
  if (!response.body) return { bytes: Buffer.alloc(0), truncated: false };
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = response.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return { bytes: Buffer.concat(chunks), truncated: false };
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => undefined);
      return { bytes: Buffer.concat(chunks), truncated: true };
    }
    chunks.push(value);
  }
};

/** The start of an error response's body, on one line, for the model to read. */
export const readSnippet = async (response: Response): Promise<string> => {
  const { bytes } = await readBody(response, ERROR_SNIPPET_BYTES).catch(() => ({ bytes: Buffer.alloc(0) }));
  return snippetOf(bytes.toString('utf8'));
};

/** `text` on one line, cut at a length a model reads comfortably. */
export const snippetOf = (text: string): string => {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > ERROR_SNIPPET_CHARS ? `${line.slice(0, ERROR_SNIPPET_CHARS)}…` : line;
};
