import type { SealedContent } from './envelope.js';

type Sealed = Extract<SealedContent, { v: 1 }>;

interface Entry {
  sealed: Sealed;
  context: string;
  key: Buffer;
  plaintext: string;
  size: number;
}

/** How many plaintexts, of what total and single size (UTF-16 units), are kept by default. */
const MAX_ENTRIES = 1_024;
const MAX_UNITS = 4 * 1024 * 1024;
const MAX_ENTRY_UNITS = 64 * 1024;

/**
 * The plaintexts of the sealed contents a process opened last, so that the same content opened
 * again is not decrypted again: each of a process's consumers is delivered every event of its
 * category (the agent has six on a conversation's), and a feed reads from the log the events it
 * has just opened from the bus's watch.
 *
 * Invariant: an entry answers only for the very ciphertext (iv, tag and data), context (additional
 * data) and key it was opened with — the inputs of the decryption, so a hit returns what a
 * decryption would. The caller asks with the key its keyring holds now, after finding it there:
 * once a key is destroyed and the keyring has heard of it, its contents are never answered from
 * here (the entries themselves only age out). A content that failed to open is never kept.
 */
export class OpenedContents {
  readonly #entries = new Map<string, Entry>();
  #units = 0;

  constructor(
    private readonly maxEntries = MAX_ENTRIES,
    private readonly maxUnits = MAX_UNITS,
  ) {}

  /** The plaintext of `sealed` under `key` and `context`: remembered, else `decrypt()`'s (then remembered). */
  open(key: Buffer, sealed: Sealed, context: string, decrypt: () => string): string {
    const id = `${sealed.iv}|${sealed.tag}`;
    const known = this.#entries.get(id);
    if (
      known !== undefined &&
      known.sealed.data === sealed.data &&
      known.context === context &&
      (known.key === key || known.key.equals(key))
    ) {
      return known.plaintext;
    }
    const plaintext = decrypt();
    this.#remember(id, { sealed, context, key, plaintext, size: sealed.data.length + plaintext.length });
    return plaintext;
  }

  /** How many plaintexts are kept. */
  get size(): number {
    return this.#entries.size;
  }

  #remember(id: string, entry: Entry): void {
    if (entry.size > MAX_ENTRY_UNITS) return;
    const replaced = this.#entries.get(id);
    if (replaced !== undefined) {
      this.#entries.delete(id);
      this.#units -= replaced.size;
    }
    this.#entries.set(id, entry);
    this.#units += entry.size;
    for (const [oldest, dropped] of this.#entries) {
      if (this.#entries.size <= this.maxEntries && this.#units <= this.maxUnits) break;
      this.#entries.delete(oldest);
      this.#units -= dropped.size;
    }
  }
}
