/**
 * Whether a JSON-like value nests objects and arrays deeper than `maxDepth` (the value itself is
 * depth 1), checked without recursion: a value a model or a client made 10,000 levels deep would
 * overflow the stack of JSON.stringify, schema validators and every other recursive reader.
 */
export const exceedsJsonDepth = (value: unknown, maxDepth: number): boolean => {
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [item, depth] = stack.pop()!;
    if (typeof item !== 'object' || item === null) continue;
    if (depth > maxDepth) return true;
    for (const child of Array.isArray(item) ? item : Object.values(item)) stack.push([child, depth + 1]);
  }
  return false;
};
