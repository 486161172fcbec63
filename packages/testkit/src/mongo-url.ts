/**
 * A MongoDB connection string with its database path replaced by `dbName`, query kept.
 * Works on multi-host and `mongodb+srv` strings, which `new URL` cannot parse.
 */
export function withDatabase(baseUrl: string, dbName: string): string {
  if (dbName === '' || /[/\\. "$\0]/.test(dbName)) {
    throw new Error(`invalid MongoDB database name ${JSON.stringify(dbName)}`);
  }
  const schemeEnd = baseUrl.indexOf('://');
  if (schemeEnd < 0) throw new Error(`not a MongoDB connection string: ${baseUrl}`);
  const rest = baseUrl.slice(schemeEnd + 3);
  const authorityEnd = rest.search(/[/?]/);
  const authority = authorityEnd < 0 ? rest : rest.slice(0, authorityEnd);
  const tail = authorityEnd < 0 ? '' : rest.slice(authorityEnd);
  const queryStart = tail.indexOf('?');
  const query = queryStart < 0 ? '' : tail.slice(queryStart);
  return `${baseUrl.slice(0, schemeEnd)}://${authority}/${encodeURIComponent(dbName)}${query}`;
}
