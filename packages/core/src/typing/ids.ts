let lastMs = 0;
let seq = 0;

// Random bytes drawn in blocks: one getRandomValues call serves 256 ids.
const pool = new Uint8Array(4096);
let poolOffset = pool.length;
const random = (n: number): Uint8Array => {
  if (poolOffset + n > pool.length) {
    globalThis.crypto.getRandomValues(pool);
    poolOffset = 0;
  }
  poolOffset += n;
  return pool.slice(poolOffset - n, poolOffset);
};
const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

/** A UUIDv7: time-ordered, so ids sort by creation and index well. Monotonic within a process. */
export const uuidv7 = (): string => {
  let ms = Date.now();
  if (ms <= lastMs) {
    ms = lastMs;
    seq = (seq + 1) & 0xfff;
    if (seq === 0) ms = ++lastMs;
  } else {
    lastMs = ms;
    const r = random(2);
    seq = ((r[0]! << 8) | r[1]!) & 0x7ff;
  }
  const bytes = random(16);
  for (let i = 5; i >= 0; i--) {
    bytes[i] = ms % 256;
    ms = Math.floor(ms / 256);
  }
  bytes[6] = 0x70 | ((seq >> 8) & 0x0f);
  bytes[7] = seq & 0xff;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  let hex = '';
  for (const b of bytes) hex += HEX[b];
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
};
