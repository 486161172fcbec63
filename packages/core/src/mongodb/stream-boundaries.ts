/**
 * Versions known to end a commit, per stream. A commit boundary is an immutable fact of the log,
 * so an append whose expected version is a known boundary can insert without reading the head:
 * if anything was committed after that boundary, it starts right after it and the unique index
 * on (tenant, stream, fromVersion) refuses the insert.
 */
export class StreamBoundaries {
  private readonly streams = new Map<string, { head: number; known: Set<number> }>();

  constructor(private readonly maxStreams = 10_000) {}

  has(tenantId: string, streamName: string, version: number): boolean {
    return version === 0 || (this.streams.get(`${tenantId}\u0000${streamName}`)?.known.has(version) ?? false);
  }

  /** The highest boundary seen: the stream's head or an older version of it. */
  head(tenantId: string, streamName: string): number | undefined {
    return this.streams.get(`${tenantId}\u0000${streamName}`)?.head;
  }

  add(tenantId: string, streamName: string, version: number): void {
    const key = `${tenantId}\u0000${streamName}`;
    let entry = this.streams.get(key);
    if (entry) {
      this.streams.delete(key);
    } else {
      entry = { head: 0, known: new Set() };
      if (this.streams.size >= this.maxStreams) this.streams.delete(this.streams.keys().next().value!);
    }
    this.streams.set(key, entry);
    entry.head = Math.max(entry.head, version);
    entry.known.add(version);
    if (entry.known.size > 64) entry.known.delete(entry.known.values().next().value!);
  }
}
